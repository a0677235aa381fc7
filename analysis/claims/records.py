"""The claim record: the ledger's vocabulary (roles, statuses, kinds, findings, verdicts) and :class:`Claim`.

A :class:`Claim` is one recorded check, plain values only (:mod:`analysis.claims.values`), so it converts to JSON and
back without loss; :meth:`Claim.from_dict` refuses a record whose stability or finding is missing or malformed. The
rules that decide a claim's status and verdict are described in :mod:`analysis.claims.ledger`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from analysis.claims.evidence import STABLE_AT
from analysis.claims.specs import TESTS
from analysis.claims.values import _float_from_json, _float_to_json, _fmt
from analysis.core.validation import check_choice

ROLES = ("identity", "prediction", "bound", "paper", "scope")
STATUSES = ("pass", "fail", "deviation", "inconclusive", "loose", "unstable", "not_evaluated")
EVALUATED = ("pass", "fail", "deviation", "inconclusive", "loose", "unstable")
COMPARISON_OUTCOMES = ("pass", "fail", "inconclusive", "loose")  # what a comparison alone decides (before diagnosis)
FINDINGS = ("regime", "scale", "refuted", "bug", "scope")  # a fail's triage; "bug": a failing identity
# what a claim's evidence says about the statement it tests (verdict_of): the one label a reader counts
VERDICTS = ("agrees", "disagrees", "undecided", "out_of_scope")
STABILITY_METHODS = ("resample", "rounding")
KINDS = ("close", "bound", "within", "manual")
PRESETS = ("smoke", "full")
RELATIONS = ("<=", "<", ">=", ">")
LOOSE_BELOW = 0.1  # a bound holding with tightness below this is "loose": true, but not evidence
FAR = 1e300  # the open end of a one-sided prediction's band (JSON has no infinity)

_RELATION_OPS = {
    "<=": lambda a, b: a <= b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
    ">": lambda a, b: a > b,
}


@dataclass(frozen=True)
class Claim:
    """One recorded check. Plain values only, so it converts to JSON and back without loss."""

    name: str  # unique within `context`, e.g. "eta_star_mc"
    context: str  # the probe that made the check, e.g. "icl_gd" ("icl_gd[tag]" for a tagged run)
    role: str  # "identity" | "prediction" | "bound" | "paper" | "scope" (a theorem's hypothesis, measured)
    source: str  # where the expected value comes from: a derivation, a paper, a seed
    statement: str  # the claim in words
    kind: str  # "close" | "bound" | "within" | "manual"
    expected: float | list[float] | None  # the theory value; [lo, hi] for "within"; None for "manual"
    measured: float | None  # what the run measured (float64); None when nothing was measured
    tolerance: dict[str, Any] = field(default_factory=dict)  # {"rtol","atol"[,"k","se"]} | {"relation"} | {"ci"}
    why: str = ""  # why this tolerance / bound / range is the right one
    status: str = "not_evaluated"
    seed: str | None = None  # the seed paper's key, e.g. "000#1" (see REFERENCES.md)
    alternative: dict[str, Any] | None = None  # predictions: {"value", "hypothesis", "consistent"}
    tightness: float | None = None  # bounds: measured / bound (upper) or bound / measured (lower)
    diagnosed_by: list[str] = field(default_factory=list)  # claims of the same ledger measuring a miss's cause
    diagnosis_requires: dict[str, str] = field(default_factory=dict)  # their statuses the diagnosis needs
    diagnosis: str = ""  # what the diagnosing claims show, in words
    outcome: bool | None = None  # the comparison itself (None: not evaluated or non-finite)
    figure: str | None = None  # the figure that shows this claim, if any
    stability: dict[str, Any] | None = (
        None  # evaluated non-identity claims: analysis.claims.evidence.stability's record
    )
    triage: dict[str, Any] = field(default_factory=dict)  # {"regime": [claim names], "scale": "how, which knob"}
    finding: dict[str, Any] | None = None  # a fail's triage: {"kind": regime|scale|refuted|bug|scope, ...}
    tests: str | None = None  # what a disagreement contradicts: paper | derivation | toy_model | software (declared)
    paper: str | None = None  # the key of the paper whose statement it tests (analysis.claims.papers; declared)
    verdict: str | None = None  # agrees | disagrees | undecided | out_of_scope (verdict_of, from the evidence)
    verdict_reason: str = ""  # the verdict in words: what it contradicts, what would decide it, which scope fails

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def base_context(self) -> str:
        """The context without a run tag: ``"probe[tag]"`` -> ``"probe"``."""
        return self.context.split("[", 1)[0]

    def key(self) -> tuple:
        """What makes two records one measurement (tags that rerun a computation share it). A claim
        without a measurement is told apart by its full context: nothing shows the runs agree."""
        context = self.context if self.measured is None else self.base_context
        return (context, self.name, _float_to_json(self.measured), json.dumps(self.expected))

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict; a non-finite measurement is written as the string "nan", "inf" or "-inf"."""
        d = asdict(self)
        d["measured"] = _float_to_json(self.measured)
        d["tightness"] = _float_to_json(self.tightness)
        d["tolerance"] = dict(self.tolerance)
        d["expected"] = list(self.expected) if isinstance(self.expected, list | tuple) else self.expected
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Claim:
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"claim has unknown field(s) {sorted(unknown)}; allowed: {sorted(known)}")
        d = dict(d)
        d["measured"] = _float_from_json(d.get("measured"))
        d["tightness"] = _float_from_json(d.get("tightness"))
        expected = d.get("expected")
        if isinstance(expected, list | tuple):
            d["expected"] = [float(v) for v in expected]
        elif expected is not None:
            d["expected"] = float(expected)
        d["tolerance"] = dict(d.get("tolerance") or {})
        d["diagnosed_by"] = list(d.get("diagnosed_by") or [])
        d["diagnosis_requires"] = dict(d.get("diagnosis_requires") or {})
        d["triage"] = dict(d.get("triage") or {})
        check_choice("status", d.get("status"), STATUSES)
        check_choice("kind", d.get("kind"), KINDS)
        check_choice("role", d.get("role"), ROLES)
        if d.get("tests") is not None:
            check_choice("tests", d["tests"], TESTS)
        if d.get("verdict") is not None:
            check_choice("verdict", d["verdict"], VERDICTS)
        claim = cls(**d)
        claim.check_evidence()
        return claim

    def check_evidence(self) -> None:
        """Refuse a claim whose ``stability`` or ``finding`` is missing or malformed (one line naming it)."""
        where = f"claim {self.context}/{self.name}"
        evaluated = self.status not in ("not_evaluated",) and self.role != "identity" and self.kind != "manual"
        st = self.stability
        if evaluated:
            if not isinstance(st, dict) or st.get("method") not in STABILITY_METHODS:
                raise ValueError(f"{where}: stability must be a record with method in {STABILITY_METHODS}, got {st!r}")
            v = st.get("value")
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0.0 <= v <= 1.0:
                raise ValueError(f"{where}: stability value must be a fraction in [0, 1], got {v!r}")
            if st.get("verdict") not in COMPARISON_OUTCOMES or not isinstance(st.get("rounding"), bool):
                raise ValueError(
                    f"{where}: stability needs a verdict in {COMPARISON_OUTCOMES} and a rounding flag, got {st!r}"
                )
            if (self.status == "unstable") != (v < STABLE_AT):
                raise ValueError(
                    f"{where}: status {self.status!r} disagrees with stability {v!r} (unstable below {STABLE_AT})"
                )
        elif st is not None and self.status == "not_evaluated":
            raise ValueError(f"{where}: an unevaluated claim has no stability, got {st!r}")
        f = self.finding
        if self.status == "fail":
            if not isinstance(f, dict) or f.get("kind") not in FINDINGS:
                raise ValueError(f"{where}: a fail needs a finding with kind in {FINDINGS}, got {f!r}")
            if f["kind"] == "regime" and (not isinstance(f.get("claims"), list) or not f["claims"]):
                raise ValueError(f"{where}: a regime finding must name the failing hypothesis claims, got {f!r}")
            if f["kind"] == "scale" and (not isinstance(f.get("note"), str) or not f["note"].strip()):
                raise ValueError(f"{where}: a scale finding must say how the paper's setting is larger, got {f!r}")
            if (f["kind"] == "bug") != (self.role == "identity"):
                raise ValueError(f"{where}: only a failing identity is a bug, got {f!r} for role {self.role!r}")
        elif f is not None:
            raise ValueError(f"{where}: only a fail carries a finding, got {f!r} with status {self.status!r}")

    def against_alternative(self) -> Claim:
        """This claim re-judged against its alternative instead of its expected value.

        An evaluated prediction becomes ``pass`` when the measurement is consistent with the
        alternative (within the same uncertainty) and ``fail`` otherwise; every other claim is
        returned unchanged. The ledger's own mutation test: a prediction that passes against its
        expected value must fail here.
        """
        if self.role != "prediction" or self.status == "not_evaluated" or not self.alternative:
            return self
        consistent = self.alternative.get("consistent")
        status = "pass" if consistent else "fail"
        return replace(
            self,
            status=status,
            statement=f"[against alternative {_fmt(self.alternative['value'])}: "
            f"{self.alternative['hypothesis']}] {self.statement}",
        )

    def line(self) -> str:
        """One human-readable line: status, role, context/name and the numbers behind the verdict."""
        mark = {
            "pass": "PASS",
            "fail": "FAIL",
            "deviation": "DEVN",
            "inconclusive": "INCL",
            "loose": "LOOS",
            "unstable": "UNST",
            "not_evaluated": "N/E ",
        }[self.status]
        text = f"[{mark}] {self.role}: {self.context}/{self.name}: {self.statement}"
        if self.measured is not None:
            text += f"; measured {_fmt(self.measured)}"
        if self.alternative:
            text += f"; alternative {_fmt(self.alternative['value'])} ({self.alternative['hypothesis']})"
        if self.tightness is not None:
            text += f"; tightness {_fmt(self.tightness)}"
        if self.status == "deviation":
            text += f" (deviation, diagnosed by {', '.join(self.diagnosed_by)}: {self.diagnosis})"
        if self.status == "unstable":
            st = self.stability
            why = "a rounding step flips it" if not st["rounding"] else f"{st['value']:.2f} of resamples agree"
            text += f" (unstable: verdict {st['verdict']}, {why})"
        if self.finding and self.finding["kind"] != "refuted":
            detail = ", ".join(self.finding.get("claims", [])) or self.finding.get("note", "")
            text += f" [finding: {self.finding['kind']}{': ' + detail if detail else ''}]"
        if self.verdict:
            text += f" => {self.verdict}" + (f" ({self.tests})" if self.tests else "") + f": {self.verdict_reason}"
        return text
