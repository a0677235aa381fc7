"""The claims ledger: every comparison between a measurement and what theory (or a paper) predicts.

A probe records each check it makes in a :class:`Ledger`; the ledger is saved beside the result and
gathered into ``figures/claims.json``. Notebooks never make claims: they plot a probe's result and
save the probe's ledger (:func:`collect`).

**Roles.** Every claim says what kind of evidence it is:

* ``identity`` -- exact algebra or a software equality (a closed form against its recursion, the zoo
  against its Hugging Face copy). Tolerance is float precision with the reason. It shows the code is
  right, not that a theory holds; a failing identity is a bug (``make figures`` and ``make test`` fail).
* ``prediction`` -- a number we derive compared with a measurement. The tolerance is the
  measurement's own uncertainty under the one band policy of :mod:`analysis.claims.evidence` (a 95% Student-t
  band over independent replicates, a within-run SE only where the quantity is deterministic given the
  model, or a 95% CI), and the claim names an **alternative**: the value a competing hypothesis
  predicts. The measurement is also judged against the alternative with the same uncertainty; when it
  is consistent with both, the claim is ``inconclusive``: neither pass nor fail.
* ``bound`` -- a measured value against a proven or derived bound. ``tightness`` is measured / bound
  for an upper bound and bound / measured for a lower one (when both are positive); a bound that holds
  with tightness below :data:`LOOSE_BELOW` is ``loose``: true, but not evidence.
* ``paper`` -- a number a paper measured in another setting (a published range).

**Kinds of comparison** (float64, inclusive boundaries): ``close`` (``|m - e| <= atol + rtol |e|``),
``bound`` (``m <relation> b``), ``within`` (``lo <= m <= hi``) and ``manual`` (a qualitative verdict
the caller decided; identities and paper claims only).

**Status**, decided in this order:

1. ``requires_full=True`` under preset ``"smoke"`` -> ``not_evaluated``; so is a claim recorded with
   :meth:`Ledger.not_evaluated`.
2. A non-finite or missing measurement -> ``fail``.
3. The comparison holds -> ``pass``, except a prediction whose measurement is also consistent with
   its alternative (or whose alternative lies inside the band) -> ``inconclusive``, and a bound with
   tightness below 0.1 -> ``loose``. A predicted sign (:meth:`Ledger.direction`) whose uncertainty
   straddles the alternative is ``inconclusive`` too.
4. The comparison fails -> ``deviation`` only when the claim names, in ``diagnosed_by``, claims of
   the same ledger that measure its cause, each evaluated and with the status the diagnosis
   requires (a theorem's condition measured to fail; the same quantity passing where the paper
   measured it). Otherwise ``fail``. A reason written before the run cannot make a claim unfailable:
   if a diagnosing claim is missing, unevaluated, or comes out otherwise, the miss is a ``fail``.
5. **Stability** (every evaluated comparison but identities and manual verdicts): the fraction of
   resamples of the measurement that reach the same verdict, 0 when a perturbation at the float rounding
   scale flips it (:func:`analysis.claims.evidence.stability`). Below :data:`analysis.claims.evidence.STABLE_AT` the
   claim
   is ``unstable``: neither pass nor fail (its verdict is kept in ``stability["verdict"]``).

Every ``fail`` carries a **finding** (:func:`finding_of`): ``regime`` when a claim it names in ``regime``
(a measured hypothesis of the theorem, same ledger) fails, ``scale`` when it says how the paper's setting
is larger (``scale``), ``scope`` for a failing scope check, ``refuted`` otherwise; a failing identity is a ``bug``.

**Declarations and verdicts.** In a probe that declares its claims (:mod:`analysis.claims.specs`), every claim is
recorded as declared: its ``tests`` (paper, derivation, toy_model, software) and ``paper`` are stamped on the
record, a declared scope check is recorded with role ``scope``, and an undeclared claim is refused. Every record
then carries a **verdict** (:func:`verdict_of`): ``agrees``, ``disagrees`` (saying what it contradicts),
``undecided`` (saying what would decide it) or ``out_of_scope`` (a scope check of its run fails: exploration,
never counted against the paper). The verdict is the comparison at the one error rate (a 95% band: an
``unstable`` status is still inside or outside its band) and comes from evaluated evidence only, never from a
default. The headline (:func:`headline`) counts verdicts and states how many disagreements the 95% band alone
gives among the predictions it judged (:func:`chance_text`).

A claim is identified by ``(context, name)``: recording the same name again in the same context
replaces the earlier claim in place. Counts (:meth:`Ledger.summary`, :func:`headline`) count each
measurement once: claims of one name with the same measured and expected values under several tags
of one context are one claim.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from analysis.claims import evidence
from analysis.claims.evidence import COVERAGE, ROUNDING_RTOL, STABLE_AT
from analysis.claims.specs import RECORDED_AS, TESTS, declarations, spec_for
from analysis.core.io import atomic_write_json
from analysis.core.validation import check_choice, check_float

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
_UNSET = object()  # Ledger.bound's measured when a population gives it
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


class Ledger:
    """An ordered collection of :class:`Claim` s made by one probe (or gathered for one notebook).

    ``context`` names the probe; ``preset`` (``"smoke"`` or ``"full"``) decides whether claims marked
    ``requires_full`` are evaluated.
    """

    def __init__(self, context: str, preset: str = "full", claims: Iterable[Claim] = ()):
        _check_name("context", context)
        check_choice("preset", preset, PRESETS)
        self.context = context
        self.preset = preset
        self._claims: dict[tuple[str, str], Claim] = {}
        self.extend(claims)

    # ------------------------------------------------------------------ the four roles

    def identity(
        self,
        name: str,
        *,
        measured: Any,
        expected: Any = 0.0,
        atol: float = 0.0,
        rtol: float = 0.0,
        source: str,
        why: str,
        seed: str | None = None,
        requires_full: bool = False,
        statement: str | None = None,
        figure: str | None = None,
    ) -> Claim:
        """Exact algebra or a software equality: ``|measured - expected| <= atol + rtol |expected|``,
        the tolerance being float precision (``why`` says which roundings it covers)."""
        return self.close(
            name,
            role="identity",
            measured=measured,
            expected=expected,
            atol=atol,
            rtol=rtol,
            source=source,
            why=why,
            seed=seed,
            requires_full=requires_full,
            statement=statement,
            figure=figure,
        )

    def predict(
        self,
        name: str,
        *,
        expected: Any,
        alternative: Any,
        hypothesis: str,
        measured: Any = None,
        replicates: Any = None,
        se: Any = None,
        dof: Any = None,
        ci: Any = None,
        coverage: float | None = None,
        within_run: str | None = None,
        family: int | None = None,
        atol: float | None = None,
        rtol: float = 0.0,
        source: str,
        why: str,
        seed: str | None = None,
        requires_full: bool = False,
        diagnosed_by: Mapping[str, str] | None = None,
        diagnosis: str = "",
        regime: Iterable[str] | None = None,
        scale: str | None = None,
        statement: str | None = None,
        figure: str | None = None,
    ) -> Claim:
        """A derived number against a measurement, with the measurement's own uncertainty under the one band
        policy (:mod:`analysis.claims.evidence`: 95% coverage, Student-t multiples).

        The uncertainty is given as exactly one of:

        * ``replicates``: the values of independent replicates (seeds); the measurement is their mean, the
          band ``t(95%, n - 1) x SE``;
        * ``se`` with ``dof``: a standard error over replicates (``dof = n - 1``), or a within-run SE with
          ``within_run`` saying why the quantity is deterministic given the model (``dof``: its degrees of
          freedom, ``math.inf`` for many draws); the band is ``t(95%, dof) x se``;
        * ``ci`` with ``coverage=0.95``: a 95% confidence interval ``(lo, hi)`` of the measurement (pass
          iff it contains ``expected``), over replicates or ``within_run``;
        * ``atol``/``rtol``: a criterion band (a stated tolerance that is not a measurement's uncertainty,
          e.g. "within 5%"); ``why`` says where it comes from.

        ``family``: the claim is a law over ``family`` cases recorded at the one nearest to failing; its
        band is then at the Sidak per-case coverage (:func:`analysis.claims.evidence.family_coverage`) so that the
        family keeps 95% (an SE band only: a given CI cannot be widened).

        ``alternative`` is the value the competing ``hypothesis`` predicts; the measurement is judged
        against it with the same uncertainty, and a claim consistent with both is ``inconclusive``.
        ``regime`` (claims of this ledger that measure the theorem's hypotheses) and ``scale`` (how the
        paper's setting is larger, and which knob reaches it) triage a fail (:class:`Claim` ``finding``).
        """
        given = sum(x is not None for x in (replicates, se, ci, atol))
        if given != 1:
            raise ValueError(
                "predict needs exactly one of replicates, se (with dof), ci (with coverage) or atol (a criterion)"
            )
        if family is not None and (ci is not None or atol is not None):
            raise ValueError("family needs an SE band (replicates, or se with dof): a CI or a criterion cannot widen")
        why = _family_why(why, family)
        alt = _alternative(alternative, hypothesis)
        e = _as_finite_float("expected", expected)
        triage = _triage(name, regime, scale)
        common = dict(
            source=source,
            why=why,
            seed=seed,
            requires_full=requires_full,
            diagnosed_by=diagnosed_by,
            diagnosis=diagnosis,
            triage=triage,
            figure=figure,
        )
        if ci is not None:
            self._no_looks(name, "a CI")
            return self._predict_ci(name, measured, e, ci, coverage, within_run, alt, statement, common)
        if atol is not None:
            if within_run is not None or dof is not None or coverage is not None:
                raise ValueError("a criterion band (atol/rtol) takes no within_run, dof or coverage")
            self._no_looks(name, "a criterion band")
            extra = {"policy": "criterion"}
            m = _as_measured(measured)
        else:
            looks = self._looks(name, within_run)
            m, atol, extra = _t95_band(measured, replicates, se, dof, within_run, coverage, family, looks)
            why = _looks_why(why, looks, family)
            rtol = 0.0
        return self.close(
            name,
            role="prediction",
            measured=m,
            expected=e,
            atol=atol,
            rtol=rtol,
            alternative=alt,
            statement=statement,
            _extra_tolerance=extra,
            **common,
        )

    def _predict_ci(self, name, measured, e, ci, coverage, within_run, alt, statement, common) -> Claim:
        """:meth:`predict` from a 95% CI ``(lo, hi)`` of the measurement: pass iff it contains ``e``."""
        m = _as_measured(measured)
        lo, hi = _ci(ci)
        _check_coverage(coverage)
        ok = _finite(m) and math.isfinite(lo) and math.isfinite(hi)
        band = [e - (hi - m), e + (m - lo)] if ok else [e, e]
        outcome = (lo <= e <= hi) if ok else None
        alt["consistent"] = (lo <= alt["value"] <= hi) if ok else None
        tol = {"policy": "ci95", "coverage": COVERAGE, "center": e, "ci": [_float_to_json(lo), _float_to_json(hi)]}
        tol["within_run"] = _within_run(within_run)
        return self._record(
            name,
            role="prediction",
            kind="within",
            expected=band,
            measured=m,
            tolerance=tol,
            outcome=outcome,
            alternative=alt,
            statement=statement or f"{name}: {_fmt(e)} inside the measurement's 95% CI",
            **common,
        )

    def direction(
        self,
        name: str,
        *,
        sign: int,
        hypothesis: str,
        measured: Any = None,
        alternative: float = 0.0,
        replicates: Any = None,
        se: Any = None,
        dof: Any = None,
        ci: Any = None,
        coverage: float | None = None,
        within_run: str | None = None,
        family: int | None = None,
        source: str,
        why: str,
        seed: str | None = None,
        requires_full: bool = False,
        diagnosed_by: Mapping[str, str] | None = None,
        diagnosis: str = "",
        regime: Iterable[str] | None = None,
        scale: str | None = None,
        statement: str | None = None,
        figure: str | None = None,
    ) -> Claim:
        """A predicted sign: the measurement lies on the ``sign`` side (+1 above, -1 below) of the
        alternative (default 0, "no effect"), its 95% uncertainty excluding it. The uncertainty is given as
        in :meth:`predict` (``replicates``, ``se`` with ``dof``, or ``ci`` with ``coverage``), and ``family``
        as there (a sign in every one of ``family`` cases, recorded at the worst).

        Use it where theory fixes a direction but not a number (a slope's sign, a ratio above 1 with
        ``alternative=1``); where it fixes a number, use :meth:`predict`.
        """
        if sign not in (1, -1):
            raise ValueError(f"sign must be 1 or -1, got {sign!r}")
        if sum(x is not None for x in (replicates, se, ci)) != 1:
            raise ValueError("direction needs exactly one of replicates, se (with dof) or ci (with coverage)")
        alt = _alternative(alternative, hypothesis)
        a = alt["value"]
        triage = _triage(name, regime, scale)
        why = _family_why(why, family)
        if ci is not None:
            if family is not None:
                raise ValueError("family needs an SE band (replicates, or se with dof): a CI cannot widen")
            self._no_looks(name, "a CI")
            m = _as_measured(measured)
            lo, hi = _ci(ci)
            _check_coverage(coverage)
            near = (m - lo) if sign > 0 else (hi - m)  # distance from the estimate to the CI's end facing a
            tol: dict[str, Any] = {
                "policy": "ci95",
                "coverage": COVERAGE,
                "ci": [_float_to_json(lo), _float_to_json(hi)],
            }
            consistent = lo <= a <= hi
        else:
            looks = self._looks(name, within_run)
            m, near, tol = _t95_band(measured, replicates, se, dof, within_run, coverage, family, looks)
            why = _looks_why(why, looks, family)
            consistent = _finite(m) and abs(m - a) <= near
        tol["within_run"] = _within_run(within_run)
        ok = _finite(m) and math.isfinite(near) and near >= 0
        edge = a + sign * near if ok else a
        band = [edge, FAR] if sign > 0 else [-FAR, edge]
        outcome = (band[0] <= m <= band[1]) if ok else None
        alt["consistent"] = bool(consistent) if ok else None
        alt["one_sided"] = True  # a measurement whose uncertainty straddles the alternative is inconclusive
        statement = statement or f"{name} {'>' if sign > 0 else '<'} {_fmt(a)} beyond its uncertainty"
        return self._record(
            name,
            role="prediction",
            kind="within",
            expected=band,
            measured=m,
            tolerance={**tol, "sign": sign},
            outcome=outcome,
            alternative=alt,
            source=source,
            why=why,
            seed=seed,
            requires_full=requires_full,
            diagnosed_by=diagnosed_by,
            diagnosis=diagnosis,
            triage=triage,
            statement=statement,
            figure=figure,
        )

    def paper(
        self,
        name: str,
        *,
        measured: Any,
        lo: Any,
        hi: Any,
        source: str,
        why: str = "",
        seed: str | None = None,
        requires_full: bool = False,
        diagnosed_by: Mapping[str, str] | None = None,
        diagnosis: str = "",
        regime: Iterable[str] | None = None,
        scale: str | None = None,
        statement: str | None = None,
        figure: str | None = None,
    ) -> Claim:
        """A measurement against a range a paper measured in another setting."""
        return self.within(
            name,
            role="paper",
            measured=measured,
            lo=lo,
            hi=hi,
            source=source,
            why=why,
            seed=seed,
            requires_full=requires_full,
            diagnosed_by=diagnosed_by,
            diagnosis=diagnosis,
            regime=regime,
            scale=scale,
            statement=statement,
            figure=figure,
        )

    # ------------------------------------------------------------------ the comparisons

    def close(
        self,
        name: str,
        *,
        role: str,
        measured: Any,
        expected: Any,
        rtol: float = 0.0,
        atol: float = 0.0,
        alternative: Any = None,
        hypothesis: str | None = None,
        source: str,
        why: str = "",
        seed: str | None = None,
        requires_full: bool = False,
        diagnosed_by: Mapping[str, str] | None = None,
        diagnosis: str = "",
        statement: str | None = None,
        figure: str | None = None,
        triage: dict | None = None,
        _extra_tolerance: dict | None = None,
    ) -> Claim:
        """Check ``|measured - expected| <= atol + rtol * |expected|`` (float64, inclusive)."""
        check_choice("role", role, ROLES)
        expected_f = _as_finite_float("expected", expected)
        m = _as_measured(measured)
        atol_f = _to_float("atol", atol)
        if math.isfinite(atol_f) or role != "prediction":  # a prediction's NaN se is a failed measurement
            check_float("atol", atol_f, minimum=0.0)
        check_float("rtol", rtol, minimum=0.0)
        width = atol_f + rtol * abs(expected_f)
        ok = _finite(m) and math.isfinite(width)
        outcome = abs(m - expected_f) <= width if ok else None
        alt = None
        if isinstance(alternative, dict):
            alt = dict(alternative)
        elif alternative is not None or hypothesis is not None:
            alt = _alternative(alternative, hypothesis)
        if alt is not None:
            alt["consistent"] = bool(abs(m - alt["value"]) <= width) if ok else None
            if ok and abs(alt["value"] - expected_f) <= width:  # the band cannot tell the two apart
                alt["consistent"] = True
        if statement is None:
            statement = f"{name} = {_fmt(expected_f)} (rtol {_fmt(rtol)}, atol {_fmt(atol_f)})"
        return self._record(
            name,
            role=role,
            kind="close",
            expected=expected_f,
            measured=m,
            tolerance={"rtol": float(rtol), "atol": _float_to_json(atol_f), **(_extra_tolerance or {})},
            outcome=outcome,
            alternative=alt,
            triage=triage,
            source=source,
            why=why,
            seed=seed,
            requires_full=requires_full,
            diagnosed_by=diagnosed_by,
            diagnosis=diagnosis,
            statement=statement,
            figure=figure,
        )

    def bound(
        self,
        name: str,
        *,
        measured: Any = _UNSET,
        bound: Any,
        relation: str = "<=",
        role: str = "bound",
        tightness: float | None = None,
        population: Any = None,
        source: str,
        why: str = "",
        seed: str | None = None,
        requires_full: bool = False,
        diagnosed_by: Mapping[str, str] | None = None,
        diagnosis: str = "",
        regime: Iterable[str] | None = None,
        scale: str | None = None,
        statement: str | None = None,
        figure: str | None = None,
    ) -> Claim:
        """Check ``measured <relation> bound`` (float64). For role ``bound`` the tightness is
        measured / bound (``<=``, ``<``) or bound / measured (``>=``, ``>``) when both are positive;
        pass ``tightness`` where another ratio is the meaningful one (``why`` says which).

        ``population`` (instead of ``measured``): the values of every case the bound is checked on (each row, layer,
        update or seed), as a theorist reads a bound: the measurement is their worst case, and the record keeps how
        many cases there are, the fraction that hold and the tightness of the median case beside the worst's
        (``tolerance["population"]``; a non-finite case makes the worst case unmeasured, never holding)."""
        check_choice("role", role, ROLES)
        if role == "prediction":
            raise ValueError("role 'prediction' needs an alternative: use Ledger.predict or Ledger.direction")
        bound_f = _as_finite_float("bound", bound)
        check_choice("relation", relation, RELATIONS)
        summary = None
        if population is not None:
            if measured is not _UNSET:
                raise ValueError("give measured or population, not both: a population's measurement is its worst case")
            measured, summary = _population(population, bound_f, relation)
        elif measured is _UNSET:
            raise ValueError("bound needs measured (a value) or population (the values of every case)")
        m = _as_measured(measured)
        outcome = None if not _finite(m) else _RELATION_OPS[relation](m, bound_f)
        given_tightness = tightness is not None
        if role == "bound" and tightness is None and _finite(m) and m > 0 and bound_f > 0:
            tightness = m / bound_f if relation in ("<=", "<") else bound_f / m
        if statement is None:
            statement = f"{name} {relation} {_fmt(bound_f)}"
        return self._record(
            name,
            role=role,
            kind="bound",
            expected=bound_f,
            measured=m,
            tolerance={
                "relation": relation,
                "tightness_given": given_tightness,
                **({"population": summary} if summary is not None else {}),
            },
            outcome=outcome,
            tightness=None if tightness is None else float(tightness),
            triage=_triage(name, regime, scale),
            source=source,
            why=why,
            seed=seed,
            requires_full=requires_full,
            diagnosed_by=diagnosed_by,
            diagnosis=diagnosis,
            statement=statement,
            figure=figure,
        )

    def within(
        self,
        name: str,
        *,
        role: str,
        measured: Any,
        lo: Any,
        hi: Any,
        source: str,
        why: str = "",
        seed: str | None = None,
        requires_full: bool = False,
        diagnosed_by: Mapping[str, str] | None = None,
        diagnosis: str = "",
        regime: Iterable[str] | None = None,
        scale: str | None = None,
        statement: str | None = None,
        figure: str | None = None,
    ) -> Claim:
        """Check ``lo <= measured <= hi`` (float64, both ends included)."""
        check_choice("role", role, ROLES)
        if role == "prediction":
            raise ValueError("role 'prediction' needs an alternative: use Ledger.predict or Ledger.direction")
        lo_f = _as_finite_float("lo", lo)
        hi_f = _as_finite_float("hi", hi)
        if lo_f > hi_f:
            raise ValueError(f"lo must be <= hi, got lo={lo_f!r}, hi={hi_f!r}")
        m = _as_measured(measured)
        outcome = None if not _finite(m) else lo_f <= m <= hi_f
        if statement is None:
            statement = f"{name} in [{_fmt(lo_f)}, {_fmt(hi_f)}]"
        return self._record(
            name,
            role=role,
            kind="within",
            expected=[lo_f, hi_f],
            measured=m,
            tolerance={},
            outcome=outcome,
            triage=_triage(name, regime, scale),
            source=source,
            why=why,
            seed=seed,
            requires_full=requires_full,
            diagnosed_by=diagnosed_by,
            diagnosis=diagnosis,
            statement=statement,
            figure=figure,
        )

    def manual(
        self,
        name: str,
        *,
        role: str,
        passed: bool,
        source: str,
        statement: str,
        measured: Any = None,
        why: str = "",
        seed: str | None = None,
        requires_full: bool = False,
        figure: str | None = None,
    ) -> Claim:
        """A qualitative verdict the caller decided: identities (a structural equality) and paper
        claims only; a prediction or bound must be a number compared with a number."""
        check_choice("role", role, ("identity", "paper"))
        if not isinstance(passed, bool):
            raise ValueError(f"passed must be true or false, got {passed!r}")
        m = None if measured is None else _as_measured(measured)
        outcome = None if (m is not None and not _finite(m)) else passed
        return self._record(
            name,
            role=role,
            kind="manual",
            expected=None,
            measured=m,
            tolerance={},
            outcome=outcome,
            source=source,
            why=why,
            seed=seed,
            requires_full=requires_full,
            diagnosed_by=None,
            diagnosis="",
            statement=statement,
            figure=figure,
        )

    def not_evaluated(
        self,
        name: str,
        *,
        role: str,
        source: str,
        reason: str,
        seed: str | None = None,
        statement: str | None = None,
        figure: str | None = None,
    ) -> Claim:
        """Record a claim this run does not check (``reason`` says why); status ``not_evaluated``."""
        check_choice("role", role, ROLES)
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError(f"reason must be a non-empty string, got {reason!r}")
        role, _, declared = self._declared(name, role, None)
        claim = self._make(
            name,
            role=role,
            **declared,
            kind="manual",
            expected=None,
            measured=None,
            tolerance={},
            status="not_evaluated",
            outcome=None,
            source=source,
            why=reason,
            seed=seed,
            statement=statement or f"not evaluated: {reason}",
            figure=figure,
        )
        return self.add(claim)

    # ------------------------------------------------------------------ the one call of a declared claim

    def judge(self, name: str, **evidence: Any) -> Claim:
        """Record the declared claim ``name`` from this run's ``evidence``: the one claim call.

        The declaration (:class:`analysis.claims.specs.ClaimSpec`, looked up by this ledger's probe) supplies what does
        not
        change from run to run: the paper (recorded as ``seed`` when it is a seed paper; a claim whose experiment
        comes from another seed than its statement's paper passes ``seed``), ``figure``, ``full`` (``requires_full``),
        ``source``, ``hypothesis``, ``within_run``, a sign claim's ``sign`` and a bound's ``relation``; the call gives
        the evidence (:data:`JUDGE_EVIDENCE`: the measurement and its band, the theory value, the alternative's value,
        ``why``, optionally ``statement``; ``band=`` a mapping of such evidence, as a helper returns a measurement with
        its standard error) and may override ``source``, ``hypothesis``, ``seed``, ``figure``, ``requires_full`` or
        ``sign`` where this run decides them. The comparison is the declaration's, measured as
        the evidence says (:func:`judged_as`): an identity, a bound (``bound=`` with ``measured`` or ``population``),
        a range (``lo``, ``hi``), a sign (``sign`` declared), a prediction (``expected`` with ``alternative``), a
        qualitative verdict (``passed``), or a claim this run does not evaluate (``reason``). One engine judges every
        record (the methods below, then :func:`verdict_of`)."""
        spec = spec_for(self.context, name)
        if spec is None:
            raise ValueError(
                f"judge takes a declared claim: {name!r} has no ClaimSpec in {self.context.split('[', 1)[0]!r} "
                "(declare it in the probe's declarations, or call the comparison's own method)"
            )
        if "band" in evidence:  # a measurement with its band, as a helper returns it ({"measured", "se", "dof"}...)
            band = evidence.pop("band")
            if not isinstance(band, Mapping) or "band" in band or set(band) & set(evidence):
                raise ValueError(
                    f"judge {name!r}: band must be a mapping of evidence that the call does not also give, got {band!r}"
                )
            evidence = {**evidence, **band}
        unknown = sorted(set(evidence) - JUDGE_EVIDENCE)
        if unknown:
            raise ValueError(f"judge {name!r}: {', '.join(unknown)} is not evidence; allowed: {sorted(JUDGE_EVIDENCE)}")
        method, fixed = judged_as(spec, evidence)
        constants = {
            "seed": spec.paper if spec.paper and "#" in spec.paper else None,  # a seed paper's key
            "figure": spec.figure or None,
            "requires_full": spec.full,
            "source": spec.source or None,
            "hypothesis": spec.hypothesis or None,
            "diagnosed_by": dict(spec.diagnosed_by) or None,
            "diagnosis": spec.diagnosis or None,
            # a within-run SE's reason, where the evidence is a within-run SE or CI (not replicates)
            "within_run": spec.within_run if ("se" in evidence or "ci" in evidence) and spec.within_run else None,
        }
        takes = _claim_keywords(method)
        kw = {k: v for k, v in constants.items() if k in takes and v is not None}
        kw.update({k: v for k, v in evidence.items() if k in takes})
        kw.update(fixed)
        missing = [k for k in ("source", "hypothesis") if k in takes and k not in kw and k in _REQUIRED[method]]
        if missing:
            raise ValueError(f"judge {name!r}: declare {' and '.join(missing)} in its ClaimSpec (or pass it)")
        return getattr(self, method)(name, **kw)

    # ------------------------------------------------------------------ collection

    def given(self, **defaults: Any) -> Given:
        """A view of this ledger whose claim methods take ``defaults`` (``seed``, ``figure``, ``requires_full``,
        ``source``, ...) for the keywords a call leaves out, each where the method takes it: a claim function opens
        with ``led = led.given(seed=SEED, figure=FIGURE)`` instead of repeating them in every call. Claims go
        into this ledger; ``ValueError`` for a keyword no claim method takes."""
        return Given(self, defaults)

    def add(self, claim: Claim) -> Claim:
        """Insert ``claim``; one with the same ``(context, name)`` is replaced in place. Deviations are
        re-resolved against the claims now present (a diagnosis may be recorded after its claim)."""
        if not isinstance(claim, Claim):
            raise ValueError(f"claim must be a Claim, got {type(claim).__name__}")
        self._claims[(claim.context, claim.name)] = claim
        self._resolve()
        return self._claims[(claim.context, claim.name)]

    def extend(self, other: Ledger | Iterable[Claim], *, tag: str | None = None) -> Ledger:
        """Add every claim of another ledger (or an iterable of claims), keeping their contexts.

        A notebook that shows several runs of a probe passes a ``tag`` per run: the claims' contexts
        become ``"<context>[<tag>]"``, so runs recording claims of the same name do not replace one
        another (and counts still count a repeated measurement once).
        """
        if tag is not None:
            _check_name("tag", tag)
        claims = other.claims if isinstance(other, Ledger) else list(other)
        for claim in claims:
            if tag is not None:
                claim = replace(claim, context=f"{claim.context}[{tag}]")
            self._claims[(claim.context, claim.name)] = claim
        self._resolve()
        return self

    @property
    def claims(self) -> list[Claim]:
        return list(self._claims.values())

    @property
    def failed(self) -> list[Claim]:
        """Every claim with status ``fail`` (findings and bugs alike)."""
        return [c for c in self._claims.values() if c.status == "fail"]

    @property
    def broken(self) -> list[Claim]:
        """Failing identities: bugs, which fail ``make figures`` and ``make test``."""
        return [c for c in self.failed if c.role == "identity"]

    @property
    def ok(self) -> bool:
        """True when no identity fails (a failing prediction or bound is a finding, not a bug)."""
        return not self.broken

    def get(self, name: str, context: str | None = None) -> Claim:
        key = (context or self.context, name)
        if key not in self._claims:
            names = [f"{c}/{n}" for c, n in self._claims]
            raise KeyError(f"no claim {key[0]}/{key[1]}; recorded: {names}")
        return self._claims[key]

    def __getitem__(self, name: str) -> Claim:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return (self.context, name) in self._claims

    def __iter__(self) -> Iterator[Claim]:
        return iter(self.claims)

    def __len__(self) -> int:
        return len(self._claims)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Ledger):
            return NotImplemented
        return (self.context, self.preset, self.claims) == (other.context, other.preset, other.claims)

    def __repr__(self) -> str:
        counts = ", ".join(f"{k}={v}" for k, v in self.summary().items())
        return f"Ledger(context={self.context!r}, preset={self.preset!r}, {counts})"

    def unique(self) -> list[Claim]:
        """The claims with repeated measurements (same name, values and untagged context) counted once."""
        return unique_claims(self.claims)

    def summary(self) -> dict[str, int]:
        """Number of unique claims per status (every status present, zeros included)."""
        counts = dict.fromkeys(STATUSES, 0)
        for claim in self.unique():
            counts[claim.status] += 1
        return counts

    def by_role(self) -> dict[str, dict[str, int]]:
        """Unique claims counted by role, then status."""
        return count_by_role(self.claims)

    def headline(self) -> str:
        return headline(self.claims)

    def against_alternatives(self) -> Ledger:
        """A copy in which every evaluated prediction is judged against its alternative."""
        return Ledger(self.context, self.preset, [c.against_alternative() for c in self.claims])

    def rejudged(self) -> Ledger:
        """A copy whose verdicts' stability (and so their ``unstable`` status), deviations and findings are decided
        again from the stored bands by today's rules: a cached result read back reports what the ledger's
        rules say now, without recomputing its measurements."""
        claims = []
        for c in self.claims:
            if c.stability is not None:
                record = claim_stability(c)
                status = "unstable" if record["value"] < STABLE_AT else record["verdict"]
                c = replace(c, stability=record, status=status, finding=None)
            claims.append(c)
        return Ledger(self.context, self.preset, claims)

    def report(self) -> str:
        """Multi-line text: the headline, then one line per claim."""
        lines = [f"{self.context} ({self.preset}): {len(self.unique())} claims: {self.headline()}"]
        lines += ["  " + c.line() for c in self.claims]
        return "\n".join(lines)

    # ------------------------------------------------------------------ persistence

    def to_dict(self) -> dict[str, Any]:
        return {
            "context": self.context,
            "preset": self.preset,
            "summary": self.summary(),
            "by_role": self.by_role(),
            "claims": [c.to_dict() for c in self.claims],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Ledger:
        for key in ("context", "preset", "claims"):
            if key not in d:
                raise ValueError(f"ledger dict is missing {key!r}; needs context, preset, claims")
        return cls(d["context"], d["preset"], [Claim.from_dict(c) for c in d["claims"]])

    def save(self, path: str | os.PathLike) -> Path:
        """Write the ledger as JSON, atomically."""
        return atomic_write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike) -> Ledger:
        with open(path, encoding="utf-8") as f:
            return cls.from_dict(json.load(f))

    # ------------------------------------------------------------------ internals

    def _record(
        self,
        name,
        *,
        role: str,
        outcome: bool | None,
        requires_full: bool,
        diagnosed_by: Mapping[str, str] | None,
        diagnosis: str,
        alternative=None,
        tightness=None,
        triage: dict | None = None,
        **kw,
    ) -> Claim:
        """Decide the status (module docstring), the stability of the verdict, and store the claim."""
        if not isinstance(requires_full, bool):
            raise ValueError(f"requires_full must be true or false, got {requires_full!r}")
        if role == "prediction" and not alternative:
            raise ValueError(f"prediction {name!r} must name an alternative (value and hypothesis)")
        role, triage, declared = self._declared(name, role, triage)
        diag = _diagnosis(name, role, diagnosed_by, diagnosis)
        skipped = requires_full and self.preset == "smoke"
        status = "not_evaluated" if skipped else _status(role, outcome, alternative, tightness)
        claim = self._make(
            name,
            role=role,
            status=status,
            outcome=None if skipped else outcome,
            alternative=alternative,
            tightness=tightness,
            triage=triage,
            **declared,
            **diag,
            **kw,
        )
        if not skipped and role != "identity" and claim.kind != "manual":
            record = claim_stability(claim)
            claim = replace(claim, stability=record, status="unstable" if record["value"] < STABLE_AT else status)
        return self.add(claim)

    def _make(
        self,
        name,
        *,
        role,
        kind,
        expected,
        measured,
        tolerance,
        status,
        outcome,
        source,
        why,
        seed,
        statement,
        figure,
        alternative=None,
        tightness=None,
        diagnosed_by=(),
        diagnosis_requires=None,
        diagnosis="",
        triage=None,
        tests=None,
        paper=None,
    ) -> Claim:
        _check_name("name", name)
        if not isinstance(source, str) or not source.strip():
            raise ValueError(f"source must be a non-empty string (a derivation, paper or seed), got {source!r}")
        for fname, value in (("why", why), ("statement", statement)):
            if not isinstance(value, str):
                raise ValueError(f"{fname} must be a string, got {value!r}")
        if seed is not None and (not isinstance(seed, str) or "#" not in seed):
            raise ValueError(f"seed must be a seed paper key like '000#1', got {seed!r}")
        if figure is not None and not isinstance(figure, str):
            raise ValueError(f"figure must be a string or None, got {figure!r}")
        return Claim(
            name=name,
            context=self.context,
            role=role,
            source=source,
            statement=statement,
            kind=kind,
            expected=expected,
            measured=measured,
            tolerance=tolerance,
            why=why,
            status=status,
            seed=seed,
            alternative=alternative,
            tightness=tightness,
            diagnosed_by=list(diagnosed_by),
            diagnosis_requires=dict(diagnosis_requires or {}),
            diagnosis=diagnosis,
            outcome=outcome,
            figure=figure,
            triage=dict(triage or {}),
            tests=tests,
            paper=paper,
        )

    def _looks(self, name: str, within_run: str | None) -> tuple[int, ...]:
        """The declared looks of claim ``name`` (:class:`analysis.claims.specs.ClaimSpec`), () without a sequential
        design;
        a within-run SE is not a band over seeds, so a declared design refuses it."""
        spec = spec_for(self.context, name)
        looks = spec.looks if spec is not None else ()
        if looks and within_run is not None:
            raise ValueError(
                f"claim {name!r} declares looks over seeds: its band must come from replicates, not a within-run SE"
            )
        return looks

    def _no_looks(self, name: str, what: str) -> None:
        if self._looks(name, None):
            raise ValueError(
                f"claim {name!r} declares looks over seeds: {what} cannot take the per-look coverage; pass replicates"
            )

    def _declared(self, name: str, role: str, triage: dict | None) -> tuple[str, dict | None, dict[str, Any]]:
        """The role, triage and declared fields of claim ``name`` as its probe declares it
        (:mod:`analysis.claims.specs`): a scope check is recorded with role ``"scope"``, its declared scope checks join
        the triage's ``regime``. A context without declarations (a user's own ledger, a test's) is unchanged; in a
        probe that declares its claims an undeclared claim, or one recorded against its declaration, is refused."""
        probe = self.context.split("[", 1)[0]
        decl = declarations(probe)
        if decl is None:
            return role, triage, {}
        spec = decl.lookup(name)
        if spec is None:
            raise ValueError(
                f"claim {name!r} of {probe!r} is not declared: add a ClaimSpec for it to the probe's declarations"
            )
        allowed = RECORDED_AS[spec.comparison] + (("scope",) if spec.comparison == "scope" else ())
        if role not in allowed:
            raise ValueError(
                f"claim {name!r} of {probe!r} is declared a {spec.comparison!r} comparison (recorded as "
                f"{' or '.join(allowed)}), but recorded as {role!r}"
            )
        if spec.comparison == "scope":
            role = "scope"
        refs = list((triage or {}).get("regime", []))
        refs += [r for r in spec.scope_checks if r not in refs]
        if refs:
            triage = {**(triage or {}), "regime": refs}
        if spec.outside:
            triage = {**(triage or {}), "outside": spec.scope}
        return role, triage, {"tests": spec.tests, "paper": spec.paper}

    def _resolve(self) -> None:
        """Decide every failed, diagnosed claim: ``deviation`` when each diagnosing claim of its
        context is present, evaluated and has the required status, else ``fail`` (to a fixed point:
        a diagnosing claim may itself be a deviation). Then triage every fail (:func:`finding_of`)."""
        for _ in range(len(self._claims) + 1):
            changed = False
            for key, c in self._claims.items():
                if (
                    c.outcome is not False
                    or not c.diagnosed_by
                    or c.status in ("not_evaluated", "inconclusive", "unstable")
                ):
                    continue
                ok = all(
                    (c.context, ref) in self._claims and self._claims[(c.context, ref)].status == need
                    for ref, need in c.diagnosis_requires.items()
                )
                status = "deviation" if ok else "fail"
                if status != c.status:
                    self._claims[key] = replace(c, status=status)
                    changed = True
            if not changed:
                break
        for key, c in self._claims.items():
            found = finding_of(c, lambda ref, c=c: self._claims.get((c.context, ref)))
            if found != c.finding:
                self._claims[key] = replace(c, finding=found)
        for key, c in self._claims.items():
            verdict, reason = verdict_of(c, lambda ref, c=c: self._claims.get((c.context, ref)))
            if (verdict, reason) != (c.verdict, c.verdict_reason):
                self._claims[key] = replace(c, verdict=verdict, verdict_reason=reason)


# the ledger methods that make a claim (the ones Ledger.given fills in defaults for)
CLAIM_METHODS = ("identity", "predict", "direction", "paper", "close", "bound", "within", "manual", "not_evaluated")
# what a call of Ledger.judge may give: this run's evidence (and a source or hypothesis worded by the run)
JUDGE_EVIDENCE = frozenset(
    {
        "measured", "expected", "alternative", "replicates", "se", "dof", "ci", "coverage", "within_run", "family",
        "atol", "rtol", "population", "bound", "tightness", "lo", "hi", "passed", "reason", "why", "statement",
        "diagnosed_by", "diagnosis", "regime", "scale", "source", "hypothesis", "seed", "figure", "requires_full",
        "sign", "band",
    }
)  # fmt: skip
# the keywords each claim method cannot do without (judge names the declaration field that supplies them)
_REQUIRED = {
    "identity": {"source"},
    "predict": {"source", "hypothesis"},
    "direction": {"source", "hypothesis"},
    "paper": {"source"},
    "bound": {"source"},
    "manual": {"source"},
    "not_evaluated": {"source"},
}


def judged_as(spec: Any, evidence: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """``(ledger method, keywords it takes from the declaration)`` by which :meth:`Ledger.judge` records a claim of
    ``spec`` with ``evidence`` (the comparison is the declaration's; the evidence says how it was measured)."""
    if "reason" in evidence:
        return "not_evaluated", {"role": RECORDED_AS[spec.comparison][0]}
    if "passed" in evidence:
        return "manual", {"role": "identity" if spec.comparison == "identity" else "paper"}
    if spec.comparison == "identity":
        return "identity", {}
    if "bound" in evidence:
        return "bound", {"relation": spec.relation}
    if "lo" in evidence or "hi" in evidence:
        return "paper", {}
    if evidence.get("sign") or spec.sign:
        return "direction", {"sign": evidence.get("sign") or spec.sign}
    if spec.comparison == "sign":
        raise ValueError(f"claim {spec.name!r}: a sign claim declares its sign (+1 or -1) for judge")
    return "predict", {}


@functools.cache
def _claim_keywords(method: str) -> frozenset[str]:
    return frozenset(inspect.signature(getattr(Ledger, method)).parameters) - {"self", "name"}


class Given:
    """:meth:`Ledger.given`: the ledger's claim methods with default keywords; everything else is the ledger's."""

    def __init__(self, ledger: Ledger, defaults: Mapping[str, Any]):
        unknown = sorted(set(defaults) - set().union(*map(_claim_keywords, CLAIM_METHODS)))
        if unknown:
            raise ValueError(f"given: {', '.join(unknown)} is not a keyword of any claim method {CLAIM_METHODS}")
        self.ledger = ledger.ledger if isinstance(ledger, Given) else ledger
        self.defaults = {**(ledger.defaults if isinstance(ledger, Given) else {}), **defaults}

    def given(self, **defaults: Any) -> Given:
        return Given(self, defaults)

    def __getattr__(self, attr: str) -> Any:
        target = getattr(self.ledger, attr)
        if attr not in CLAIM_METHODS:
            return target
        takes = _claim_keywords(attr)
        fill = {k: v for k, v in self.defaults.items() if k in takes}
        return functools.wraps(target)(lambda *args, **kw: target(*args, **{**fill, **kw}))

    def __getitem__(self, name: str) -> Claim:
        return self.ledger[name]

    def __contains__(self, name: object) -> bool:
        return name in self.ledger

    def __iter__(self) -> Iterator[Claim]:
        return iter(self.ledger)

    def __len__(self) -> int:
        return len(self.ledger)


def finding_of(claim: Claim, lookup) -> dict[str, Any] | None:
    """The triage of a fail (None for any other status): ``bug`` for an identity; ``regime`` when a claim
    named in ``triage["regime"]`` (a measured hypothesis of the theorem, same context) fails, naming it;
    ``scale`` when the claim says how the paper's setting is larger (``triage["scale"]``); otherwise
    ``refuted``: in the theorem's regime as far as it was measured, at the scale it was run."""
    if claim.status != "fail":
        return None
    if claim.role == "identity":
        return {"kind": "bug"}
    if claim.role == "scope":
        return {"kind": "scope"}  # a hypothesis of the theorem that this run does not meet
    failing = [
        ref
        for ref in claim.triage.get("regime", [])
        if (h := lookup(ref)) is not None and h.status in ("fail", "deviation")
    ]
    if failing:
        return {"kind": "regime", "claims": failing}
    if claim.triage.get("scale"):
        return {"kind": "scale", "note": claim.triage["scale"]}
    return {"kind": "refuted"}


# ---------------------------------------------------------------------- judging again


def claim_uncertainty(claim: Claim) -> tuple[float, float] | None:
    """``(se, dof)`` of the measurement behind a prediction's band (a 95% CI as its normal-limit SE),
    None for a claim judged without one (bounds, paper ranges, criterion bands)."""
    tol = claim.tolerance
    if tol.get("policy") == "t95":
        se, dof = _float_from_json(tol.get("se")), _dof_from_json(tol.get("dof"))
        ok = se is not None and math.isfinite(se) and dof is not None and dof >= 1
        return (se, dof) if ok else None
    if tol.get("policy") == "ci95":
        lo, hi = (_float_from_json(x) for x in tol["ci"])
        if math.isfinite(lo) and math.isfinite(hi):
            return (hi - lo) / (2 * evidence.t_multiple(math.inf)), math.inf
    return None


def verdict_function(claim: Claim):
    """``f(m)``: the verdict (``pass`` | ``fail`` | ``inconclusive`` | ``loose``) ``claim`` would reach had it
    measured ``m``, its band, bound or range as recorded (a CI moves with the estimate). Built from the
    stored fields only, so a committed ledger can be judged again (``tests/test_rejudge.py``)."""
    role, kind, tol, e = claim.role, claim.kind, claim.tolerance, claim.expected
    alt = dict(claim.alternative) if claim.alternative else None
    m0 = claim.measured

    def judged(outcome, consistent=None, tightness=None):
        if alt is not None:
            alt["consistent"] = consistent
        return _status(role, outcome, alt, tightness)

    if kind == "close":
        width = (_float_from_json(tol.get("atol")) or 0.0) + float(tol.get("rtol", 0.0)) * abs(e)

        def f(m):
            if not (_finite(m) and math.isfinite(width)):
                return judged(None)
            consistent = None
            if alt is not None:
                consistent = abs(m - alt["value"]) <= width or abs(alt["value"] - e) <= width
            return judged(abs(m - e) <= width, consistent)

        return f
    if kind == "within" and "sign" in tol:
        sign, a = tol["sign"], alt["value"]
        if "ci" in tol:
            lo, hi = (_float_from_json(x) for x in tol["ci"])
            near = (m0 - lo) if sign > 0 else (hi - m0)
        else:
            lo = hi = None
            near = _float_from_json(tol["k"]) * _float_from_json(tol["se"])

        def f(m):
            if not (_finite(m) and _finite(m0) and math.isfinite(near) and near >= 0):
                return judged(None)
            if lo is not None:
                d = m - m0
                consistent = lo + d <= a <= hi + d
            else:
                consistent = abs(m - a) <= near
            return judged(sign * (m - a) >= near, bool(consistent))

        return f
    if kind == "within" and "ci" in tol:
        lo, hi = (_float_from_json(x) for x in tol["ci"])
        center = float(tol["center"])

        def f(m):
            if not (_finite(m) and _finite(m0) and math.isfinite(lo) and math.isfinite(hi)):
                return judged(None)
            d = m - m0
            return judged(lo + d <= center <= hi + d, lo + d <= alt["value"] <= hi + d)

        return f
    if kind == "within":
        lo, hi = e

        def f(m):
            return judged(lo <= m <= hi if _finite(m) else None)

        return f
    if kind == "bound":
        relation, b = tol["relation"], float(e)
        fixed = tol.get("tightness_given", True)

        def f(m):
            if not _finite(m):
                return judged(None)
            t = claim.tightness
            if role == "bound" and not fixed:
                t = (m / b if relation in ("<=", "<") else b / m) if m > 0 and b > 0 else None
            return judged(_RELATION_OPS[relation](m, b), tightness=t)

        return f
    raise ValueError(f"claim {claim.context}/{claim.name}: kind {kind!r} has no verdict function")


def claim_stability(claim: Claim) -> dict[str, Any]:
    """The stability record (:func:`analysis.claims.evidence.stability`) of an evaluated comparison."""
    f = verdict_function(claim)
    if not _finite(claim.measured):
        return {"verdict": f(claim.measured), "rounding": True, "method": "rounding", "value": 1.0}
    unc = claim_uncertainty(claim)
    se, dof = unc if unc else (None, math.inf)
    return evidence.stability(f, claim.measured, se=se, dof=dof, scale=reference_scale(claim), width=band_width(claim))


def band_width(claim: Claim) -> float | None:
    """The half-width of a prediction's band (its k SE, its CI's half-width, its criterion); None for a bound,
    a paper range or a claim without a finite band."""
    tol = claim.tolerance
    if claim.kind == "close":
        w = (_float_from_json(tol.get("atol")) or 0.0) + float(tol.get("rtol", 0.0)) * abs(claim.expected)
    elif tol.get("policy") == "ci95":
        lo, hi = (_float_from_json(x) for x in tol["ci"])
        w = (hi - lo) / 2
    elif tol.get("policy") == "t95" and "sign" in tol:
        w = _float_from_json(tol.get("k")) * _float_from_json(tol.get("se"))
    else:
        return None
    return w if math.isfinite(w) and w >= 0 else None


def reference_scale(claim: Claim) -> float:
    """The size of the numbers a claim compares its measurement with (expected value, alternative, or the
    range's finite ends): with the measurement's own size it sets the rounding perturbation."""
    if isinstance(claim.expected, int | float):
        return abs(float(claim.expected))
    if claim.alternative:
        return abs(float(claim.alternative["value"]))
    if isinstance(claim.expected, list):
        return max((abs(x) for x in claim.expected if abs(x) < FAR), default=0.0)
    return 0.0


# ---------------------------------------------------------------------- verdicts

TESTED = {
    "paper": "the paper's own result",
    "derivation": "our derivation for the paper's setting",
    "toy_model": "the paper's toy model",
    "software": "our software (a bug)",
    None: "its statement",
}


def comparison_outcome(claim: Claim) -> str:
    """What the comparison alone says at the one error rate (:data:`analysis.claims.evidence.COVERAGE`, the band as
    recorded): ``"agrees"``, ``"disagrees"``, ``"undecided"`` (the band holds both the prediction and the
    alternative, or the measurement is not finite) or ``"not_evaluated"``. An ``unstable`` claim is judged by its
    band like any other (near the band's edge is still inside or outside it); a bound attained to float rounding
    holds (:func:`attained`)."""
    status = claim.status
    if status == "not_evaluated":
        return "not_evaluated"
    if status == "unstable":
        status = claim.stability["verdict"]
    if status in ("pass", "loose"):
        return "agrees"
    if status == "inconclusive":
        return "undecided"
    if attained(claim):
        return "agrees"
    if claim.outcome is None and claim.role != "identity":
        return "undecided"  # a non-finite measurement: a numerical failure of the run, not evidence
    return "disagrees"


def attained(claim: Claim) -> bool:
    """True for a bound whose measurement equals it to float rounding (:data:`analysis.claims.evidence.ROUNDING_RTOL`
    relative): a bound attained exactly holds."""
    if claim.kind != "bound" or not _finite(claim.measured) or not isinstance(claim.expected, int | float):
        return False
    m, b = float(claim.measured), float(claim.expected)
    return abs(m - b) <= ROUNDING_RTOL * max(abs(m), abs(b))


def verdict_of(claim: Claim, lookup) -> tuple[str, str]:
    """``(verdict, reason)``: what the evidence says about the statement ``claim`` tests, from its stored fields
    and the scope checks of its run (``lookup(name)``: the claim of that name in the same context, or None).

    * a scope check (role ``"scope"``): ``agrees`` when the run meets the hypothesis, ``out_of_scope`` when it does
      not (never a disagreement), ``undecided`` when its band cannot say;
    * any other claim: ``out_of_scope`` when its declaration puts the run outside the statement's hypotheses by
      construction (``triage["outside"]``) or a scope check it names (``triage["regime"]``) fails in its run (the
      measurement is exploration, not evidence about the paper); otherwise its comparison's outcome:
      ``agrees``; ``disagrees``, saying what it contradicts (``tests``), unless a scope check it needs is itself
      undecided or absent (then ``undecided``); ``undecided``, saying what would decide it.
    """
    if claim.status == "not_evaluated":
        if claim.kind == "manual" and claim.measured is None:
            return "undecided", f"not evaluated: {claim.why}" if claim.why else "not evaluated by this run"
        return "undecided", "not evaluated at the smoke preset: the full preset evaluates it"
    outcome = comparison_outcome(claim)
    if claim.role == "scope":
        if outcome == "agrees":
            return "agrees", f"the run meets this hypothesis of the theorem: {_agree_text(claim)}"
        if outcome == "disagrees":
            return "out_of_scope", (
                f"the run is outside this hypothesis of the theorem (measured {_fmt(claim.measured)}, "
                f"needs {_against_text(claim)}): the claims that need it are out of scope"
            )
        return "undecided", what_would_decide(claim)
    if claim.triage.get("outside"):
        return "out_of_scope", (
            f"outside the statement's hypotheses by construction ({claim.triage['outside']}); measured "
            f"{_fmt(claim.measured)} ({outcome} with {_against_text(claim)}), shown as exploration"
        )
    refs = list(claim.triage.get("regime", []))
    checks = {ref: lookup(ref) for ref in refs}
    failing = [r for r, h in checks.items() if h is not None and comparison_outcome(h) == "disagrees"]
    if failing:
        return "out_of_scope", (
            f"outside the theorem's hypotheses: {', '.join(failing)} fails in this run; the measurement is "
            "exploration, not evidence about the paper"
        )
    if outcome == "agrees":
        return "agrees", _agree_text(claim)
    if outcome == "undecided":
        return "undecided", what_would_decide(claim)
    if claim.role == "identity":
        return "disagrees", f"a bug: the identity fails (measured {_fmt(claim.measured)}, {_against_text(claim)})"
    unsettled = [r for r, h in checks.items() if h is None or comparison_outcome(h) != "agrees"]
    if unsettled:
        return "undecided", (
            f"misses {_against_text(claim)} (measured {_fmt(claim.measured)}), but its scope check(s) "
            f"{', '.join(unsettled)} are not decided in this run: deciding them decides whether the miss counts"
        )
    text = f"contradicts {TESTED.get(claim.tests, TESTED[None])}: measured {_fmt(claim.measured)}"
    text += f", {_against_text(claim)}"
    alt = claim.alternative
    if alt and claim.role == "prediction":
        text += (
            f"; the alternative ({alt['hypothesis']}) is consistent"
            if alt.get("consistent")
            else "; the alternative is excluded too"
        )
    if claim.status == "deviation":
        text += f"; diagnosed: {claim.diagnosis}"
    if claim.triage.get("scale"):
        text += f"; at this scale only: {claim.triage['scale']}"
    return "disagrees", text


def what_would_decide(claim: Claim) -> str:
    """For an undecided claim: why its evidence cannot decide, and how many times the replicates or draws would
    (the band narrows as one over the square root of their number), where the band says; for a claim with a
    sequential design, whether its next look runs or its budget is spent."""
    if not _finite(claim.measured):
        return f"the measurement is not finite ({_fmt(claim.measured)}): a numerical failure of the run, not evidence"
    factor = samples_to_decide(claim)
    alt = claim.alternative or {}
    n = claim.tolerance.get("n")  # the replicates behind a t band (None for a within-run SE or a CI)
    if claim.tolerance.get("policy") == "criterion":  # a stated tolerance: more data does not narrow it
        return (
            f"its criterion band ({_against_text(claim)}) holds both the statement and the alternative "
            f"({alt.get('hypothesis', 'its alternative')}, {_fmt(alt.get('value'))}): more data does not narrow a "
            "criterion; a direct comparison of the two (a band over the difference) would decide it"
        )
    if factor is None:
        if alt and isinstance(claim.expected, int | float) and alt.get("value") == claim.expected:
            return "prediction and alternative coincide: no amount of data separates them"
        text = "its band holds both the statement and its alternative; a narrower band would decide it"
    else:
        unit = "independent seeds" if isinstance(n, int) else "samples (draws or inputs)"
        now = f" ({n} now, about {math.ceil(n * factor)} needed)" if isinstance(n, int) else ""
        text = (
            f"the band holds both the statement and the alternative ({alt.get('hypothesis', 'its alternative')}): "
            f"about {factor:.2g}x as many {unit}{now} would separate them"
        )
    looks = claim.tolerance.get("looks")
    if looks and n == looks[-1]:
        text += f"; its sequential design's budget ({n} seeds, looks {', '.join(map(str, looks))}) is spent"
    elif looks and n in looks:
        text += f"; its sequential design runs it again at {looks[looks.index(n) + 1]} seeds (probes.decided_run)"
    return text


def samples_to_decide(claim: Claim) -> float | None:
    """How many times the replicates or draws would narrow the band of an undecided prediction enough to exclude
    one of prediction and alternative (None when the band or the separation is not a number)."""
    w, alt = band_width(claim), claim.alternative
    if w is None or not alt or not w > 0 or claim.tolerance.get("policy") == "criterion":
        return None
    a, tol = float(alt["value"]), claim.tolerance
    if "sign" in tol:  # a predicted sign: the band must leave the alternative at the measured effect
        sep = abs(float(claim.measured) - a)
    elif isinstance(claim.expected, int | float):
        sep = abs(float(claim.expected) - a) / 2
    elif tol.get("center") is not None:
        sep = abs(float(tol["center"]) - a) / 2
    else:
        return None
    if not sep > 0:
        return None
    return max((w / sep) ** 2, 1.0)


def _agree_text(claim: Claim) -> str:
    if claim.kind == "bound":
        pop = claim.tolerance.get("population")
        cases = f" in all {pop['n']} cases" if pop else ""
        if attained(claim) and claim.status != "pass":
            rounding = f"float rounding (relative {ROUNDING_RTOL:g})"
            text = (
                f"holds in all {pop['n']} cases, attained to {rounding} at the worst ({_against_text(claim)})"
                if pop
                else f"the bound is attained to {rounding} ({_against_text(claim)})"
            )
        else:
            text = f"holds{cases} ({_against_text(claim)})"
            t = claim.tightness
            if t is not None and math.isfinite(t):
                text += f", tightness {t:.3g}" + (" at the worst case" if pop else "")
                if t < LOOSE_BELOW:
                    text += f": loose (below {LOOSE_BELOW}), true but weak evidence"
        if pop and pop.get("tightness_median") is not None:
            text += f", {pop['tightness_median']:.3g} at the median case"
        return text
    if claim.role == "identity":
        return "exact to float rounding"
    if claim.role == "paper":
        return f"inside the paper's range ({_against_text(claim)})"
    alt = claim.alternative
    if alt:
        return f"inside its band ({_against_text(claim)}); the alternative ({alt['hypothesis']}) excluded"
    return f"inside its band ({_against_text(claim)})"


def _against_text(claim: Claim) -> str:
    tol, e = claim.tolerance, claim.expected
    if claim.kind == "bound" and isinstance(e, int | float):
        return f"bound {tol.get('relation', '')} {_fmt(e)}"
    if claim.kind == "close" and isinstance(e, int | float):
        w = (_float_from_json(tol.get("atol")) or 0.0) + float(tol.get("rtol", 0.0)) * abs(e)
        return f"expected {_fmt(e)} +- {_fmt(w)}"
    if "sign" in tol and claim.alternative:
        return f"sign {'+' if tol['sign'] > 0 else '-'} against {_fmt(claim.alternative['value'])}"
    if tol.get("policy") == "ci95" and "center" in tol:
        lo, hi = (_float_from_json(x) for x in tol["ci"])
        return f"{_fmt(float(tol['center']))} in the 95% interval [{_fmt(lo)}, {_fmt(hi)}]"
    if isinstance(e, list) and len(e) == 2:
        lo, hi = (_fmt(x) if abs(x) < FAR else ("-inf" if x < 0 else "inf") for x in e)
        return f"range [{lo}, {hi}]"
    return "its criterion"


# ---------------------------------------------------------------------- counting


def unique_claims(claims: Iterable[Claim]) -> list[Claim]:
    """``claims`` with repeated measurements (same :meth:`Claim.key`) kept once, first seen."""
    seen: dict[tuple, Claim] = {}
    for c in claims:
        seen.setdefault(c.key(), c)
    return list(seen.values())


def count_by_role(claims: Iterable[Claim]) -> dict[str, dict[str, int]]:
    """Unique claims counted by role, then status (every role and status present)."""
    counts = {role: dict.fromkeys(STATUSES, 0) for role in ROLES}
    for c in unique_claims(claims):
        counts[c.role][c.status] += 1
    return counts


def headline(claims: Iterable[Claim]) -> str:
    """The tally a reader should see first: unique claims by verdict (scope checks apart), the disagreements by
    what they contradict, and how many of them chance alone gives at the rule applied, e.g. "412 agree,
    23 disagree (12 with our derivations, 4 with toy models, 7 with papers' results; 1.9 expected by chance among
    38 predictions judged by a 95% band), 40 undecided (9 not evaluated), 21 out of scope; scope checks: 30 met,
    19 not met, 2 undecided"."""
    unique = unique_claims(claims)
    statements = [c for c in unique if c.role != "scope"]
    verdicts = {v: sum(c.verdict == v for c in statements) for v in VERDICTS}
    parts = [f"{verdicts['agrees']} agree", f"{verdicts['disagrees']} disagree"]
    against = {t: sum(c.verdict == "disagrees" and c.tests == t for c in statements) for t in (*TESTS, None)}
    detail = [f"{n} with {DISAGREES_WITH[t]}" for t, n in against.items() if n]
    chance = chance_text(statements)
    if chance:
        detail.append(chance)
    if detail:
        parts[-1] += f" ({', '.join(detail[:-1]) + '; ' + detail[-1] if len(detail) > 1 else detail[0]})"
    n_e = sum(c.status == "not_evaluated" for c in statements)
    parts.append(f"{verdicts['undecided']} undecided" + (f" ({n_e} not evaluated)" if n_e else ""))
    parts.append(f"{verdicts['out_of_scope']} out of scope")
    text = ", ".join(parts)
    scope = [c for c in unique if c.role == "scope"]
    if scope:
        met = sum(c.verdict == "agrees" for c in scope)
        out = sum(c.verdict == "out_of_scope" for c in scope)
        text += f"; scope checks: {met} met, {out} not met, {len(scope) - met - out} undecided"
    return text


DISAGREES_WITH = {
    "paper": "papers' results",
    "derivation": "our derivations",
    "toy_model": "toy models",
    "software": "our software (bugs)",
    None: "undeclared statements",
}


def chance_text(claims: Iterable[Claim]) -> str:
    """How many disagreements the one error rate gives by chance alone among the predictions judged by a
    measurement's band (two-sided or a sign, :func:`analysis.claims.evidence.chance_fails`), in words ("" when none).
    A true prediction disagrees exactly when its measurement leaves its 95% band, so this is the rate of the rule
    applied; out-of-scope predictions are not judged and not counted."""
    two = one = 0
    for c in unique_claims(claims):
        if c.role != "prediction" or c.verdict not in ("agrees", "disagrees", "undecided"):
            continue
        if c.status == "not_evaluated" or c.tolerance.get("policy") not in ("t95", "ci95"):
            continue
        if "sign" in c.tolerance:
            one += 1
        else:
            two += 1
    if not two + one:
        return ""
    expected = evidence.chance_fails(two, one)
    return f"{expected:.2g} expected by chance among {two + one} predictions judged by a {COVERAGE:.0%} band"


def count_by_verdict(claims: Iterable[Claim]) -> dict[str, dict[str, int]]:
    """Unique claims counted by what they test (``tests``; scope checks as ``"scope"``), then verdict."""
    counts = {t: dict.fromkeys(VERDICTS, 0) for t in (*TESTS, "scope")}
    for c in unique_claims(claims):
        row = "scope" if c.role == "scope" else c.tests
        if row is None or c.verdict is None:
            continue
        counts[row][c.verdict] += 1
    return counts


def finding_counts(claims: Iterable[Claim]) -> dict[str, int]:
    """Unique fails counted by their finding's kind (every kind present)."""
    counts = dict.fromkeys(FINDINGS, 0)
    for c in unique_claims(claims):
        if c.status == "fail" and c.finding:
            counts[c.finding["kind"]] += 1
    return counts


def collect(context: str, preset: str, parts: Mapping[str | None, Ledger | Iterable[Claim]]) -> Ledger:
    """One ledger gathering probe ledgers for a notebook: ``parts`` maps a tag (``None`` for untagged)
    to a probe's ledger (or its result's ``.ledger``). Notebooks save this; they make no claims."""
    led = Ledger(context, preset=preset)
    for tag, part in parts.items():
        part = getattr(part, "ledger", part)
        led.extend(part, tag=tag)
    return led


# ---------------------------------------------------------------------- helpers


def _status(role: str, outcome: bool | None, alternative: dict | None, tightness: float | None) -> str:
    if outcome is None:
        return "fail"
    predicts = role in ("prediction", "scope")
    if not outcome:
        if predicts and alternative and alternative.get("one_sided") and alternative.get("consistent"):
            return "inconclusive"  # a predicted sign whose uncertainty straddles the alternative
        return "fail"  # made a deviation by _resolve when its diagnosis holds
    if predicts and alternative and alternative.get("consistent"):
        return "inconclusive"
    if role == "bound" and tightness is not None and math.isfinite(tightness) and tightness < LOOSE_BELOW:
        return "loose"
    return "pass"


def _diagnosis(name: str, role: str, diagnosed_by: Mapping[str, str] | None, diagnosis: str) -> dict[str, Any]:
    if not diagnosed_by:
        if diagnosis:
            raise ValueError(f"{name}: a diagnosis text needs diagnosed_by (the claims that measure the cause)")
        return {"diagnosed_by": [], "diagnosis_requires": {}, "diagnosis": ""}
    if role == "identity":
        raise ValueError(f"{name}: an identity cannot deviate (a failing identity is a bug); drop diagnosed_by")
    if not isinstance(diagnosed_by, Mapping):
        raise ValueError(f"diagnosed_by must map claim names to the status the diagnosis needs, got {diagnosed_by!r}")
    for ref, need in diagnosed_by.items():
        _check_name("diagnosed_by", ref)
        check_choice(f"diagnosed_by[{ref!r}]", need, EVALUATED)
        if ref == name:
            raise ValueError(f"{name}: a claim cannot diagnose itself")
    if not isinstance(diagnosis, str) or not diagnosis.strip():
        raise ValueError(f"{name}: diagnosed_by needs a diagnosis text (what the diagnosing claims show)")
    return {"diagnosed_by": list(diagnosed_by), "diagnosis_requires": dict(diagnosed_by), "diagnosis": diagnosis}


def _alternative(value: Any, hypothesis: Any) -> dict[str, Any]:
    v = _as_finite_float("alternative", value)
    if not isinstance(hypothesis, str) or not hypothesis.strip():
        raise ValueError(f"hypothesis must name the competing hypothesis behind the alternative, got {hypothesis!r}")
    return {"value": v, "hypothesis": hypothesis, "consistent": None}


def _triage(name: str, regime: Iterable[str] | None, scale: str | None) -> dict[str, Any]:
    """A claim's declared triage of a fail: hypothesis claims it depends on, and how it is out of scale."""
    out: dict[str, Any] = {}
    if regime is not None:
        if isinstance(regime, str):
            regime = [regime]
        refs = list(regime)
        for ref in refs:
            _check_name("regime", ref)
            if ref == name:
                raise ValueError(f"{name}: a claim cannot be its own hypothesis (regime)")
        if refs:
            out["regime"] = refs
    if scale is not None:
        if not isinstance(scale, str) or not scale.strip():
            raise ValueError(f"{name}: scale must say how the paper's setting is larger and which knob reaches it")
        out["scale"] = scale
    return out


def _check_coverage(coverage: Any) -> None:
    if coverage != COVERAGE:
        raise ValueError(
            f"coverage must be {COVERAGE} (the one band policy, analysis.claims.evidence), got {coverage!r}"
        )


def _within_run(reason: Any) -> str | None:
    if reason is None:
        return None
    if not isinstance(reason, str) or not reason.strip():
        raise ValueError(f"within_run must say why the quantity is deterministic given the model, got {reason!r}")
    return reason


def _band_inputs(measured, replicates, se, dof, within_run, coverage) -> tuple:
    """``(measured, se, dof, n)`` of an SE band from replicate values or a given SE (:meth:`Ledger.predict`)."""
    if coverage is not None:
        raise ValueError("coverage goes with ci; an SE band is always at the policy's 95%")
    if replicates is not None:
        if within_run is not None or dof is not None or se is not None:
            raise ValueError("replicates take no se, dof or within_run: their spread is the uncertainty")
        try:
            stats_ = evidence.mean_se(replicates)
        except (TypeError, ValueError):
            raise ValueError(f"replicates must be a sequence of numbers, got {replicates!r}") from None
        m = _as_measured(measured)
        if (
            m is not None
            and math.isfinite(stats_.mean)
            and not math.isclose(m, stats_.mean, rel_tol=1e-9, abs_tol=1e-300)
        ):
            raise ValueError(f"measured {m!r} is not the mean {stats_.mean!r} of its replicates")
        return stats_.mean, stats_.se, stats_.dof, stats_.n
    if dof is None:
        raise ValueError("se needs dof: n - 1 over n replicates, or a within-run SE's degrees of freedom (math.inf)")
    dof_f = _to_float("dof", dof)
    if math.isnan(dof_f) or dof_f < 0:
        raise ValueError(f"dof must be >= 0 (or math.inf), got {dof!r}")
    if within_run is None and math.isinf(dof_f):
        raise ValueError("an SE over replicates has finite dof (n - 1); a within-run SE says why (within_run=...)")
    n = int(dof_f) + 1 if within_run is None else None
    return _as_measured(measured), _to_float("se", se), dof_f, n


def _population(population: Any, bound: float, relation: str) -> tuple[float, dict[str, Any]]:
    """``(worst case, summary)`` of the values a bound is checked on (:meth:`Ledger.bound` ``population``): the worst
    case (NaN when any case is not finite: an unmeasured case fails the bound), and ``{"n", "holding", "worst",
    "tightness_median"}`` (the median tightness where every case and the bound are positive, else None)."""
    try:
        x = np.asarray(population, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise ValueError(f"population must be an array of numbers, got {type(population).__name__}") from None
    if x.size == 0:
        raise ValueError("population must hold at least one case")
    upper = relation in ("<=", "<")
    finite = np.isfinite(x)
    worst = float(x.max() if upper else x.min()) if finite.all() else math.nan
    rounding = ROUNDING_RTOL * np.maximum(np.abs(x), abs(bound))
    holds = _RELATION_OPS[relation](x, bound) | (np.abs(x - bound) <= rounding)
    tight = None
    if finite.all() and bound > 0 and np.all(x > 0):
        tight = float(np.median(x / bound if upper else bound / x))
    summary = {"n": int(x.size), "holding": float(np.mean(holds & finite)), "worst": _float_to_json(worst)}
    summary["tightness_median"] = tight
    return worst, summary


def _t95_band(
    measured, replicates, se, dof, within_run, coverage, family=None, looks=()
) -> tuple[float | None, float, dict[str, Any]]:
    """``(measured, half-width, tolerance record)`` of the policy's t band (nan half-width when unmeasured);
    with ``family`` at the Sidak per-case coverage, with ``looks`` (a sequential design) at the per-look coverage
    that keeps it (:func:`analysis.claims.evidence.sequential_coverage`)."""
    m, se_f, dof_f, n = _band_inputs(measured, replicates, se, dof, within_run, coverage)
    per_case = COVERAGE if family is None else evidence.family_coverage(family)
    per_look = evidence.sequential_coverage(looks, per_case) if looks else per_case
    k = _t_or_nan(dof_f, per_look)
    half = k * se_f if math.isfinite(se_f) and se_f >= 0 and math.isfinite(k) else math.nan
    tol = {"policy": "t95", "coverage": COVERAGE, "k": _float_to_json(k), "se": _float_to_json(se_f)}
    tol.update(dof=_dof_json(dof_f), n=n, within_run=_within_run(within_run))
    if family is not None:
        tol.update(family=int(family), coverage_per_case=per_case)
    if looks:
        tol.update(looks=list(looks), coverage_per_look=per_look)
    return m, half, tol


def _looks_why(why: str, looks: tuple[int, ...], family: Any) -> str:
    """``why`` with the note of a sequential design's per-look band."""
    if not looks:
        return why
    per_case = COVERAGE if family is None else evidence.family_coverage(family)
    per_look = evidence.sequential_coverage(looks, per_case)
    return (
        f"{why}; a sequential design judged at {', '.join(map(str, looks))} seeds (run again at the next while "
        f"undecided): each look at coverage {per_look:.4f}, so that a true value is excluded at any look with "
        f"probability {1 - per_case:.2g}"
    )


def _family_why(why: str, family: Any) -> str:
    """``why`` with the Sidak note of a worst-of-``family`` band (``family`` validated here)."""
    if family is None:
        return why
    per_case = evidence.family_coverage(family)
    return f"{why}; recorded at the worst of {int(family)} cases: Sidak per-case coverage {per_case:.4f}, 95% for all"


def _t_or_nan(dof: float, coverage: float = COVERAGE) -> float:
    """The policy's t multiple; nan below one degree of freedom (one replicate: the claim is unmeasured)."""
    return evidence.t_multiple(dof, coverage) if dof >= 1 else math.nan


def _dof_json(dof: float) -> float | str:
    return "inf" if math.isinf(dof) else float(dof)


def _dof_from_json(x: Any) -> float | None:
    if x is None:
        return None
    return math.inf if x == "inf" else float(x)


def _ci(ci: Any) -> tuple[float, float]:
    try:
        lo, hi = ci
    except (TypeError, ValueError):
        raise ValueError(f"ci must be a pair (lo, hi), got {ci!r}") from None
    lo_f, hi_f = _to_float("ci lo", lo), _to_float("ci hi", hi)
    if math.isfinite(lo_f) and math.isfinite(hi_f) and lo_f > hi_f:
        raise ValueError(f"ci must have lo <= hi, got {ci!r}")
    return lo_f, hi_f


def _check_name(field_name: str, value: Any) -> None:
    if not isinstance(value, str) or not value or value != value.strip():
        raise ValueError(f"{field_name} must be a non-empty string without surrounding spaces, got {value!r}")


def _to_float(field_name: str, value: Any) -> float:
    """float64 value of a Python/numpy/torch scalar; bools and strings are rejected."""
    if isinstance(value, bool | str | bytes) or value is None:
        raise ValueError(f"{field_name} must be a real number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{field_name} must be a real number (a scalar), got {value!r}") from None


def _as_finite_float(field_name: str, value: Any) -> float:
    x = _to_float(field_name, value)
    if not math.isfinite(x):
        raise ValueError(f"{field_name} must be finite, got {x!r}")
    return x


def _as_measured(value: Any) -> float | None:
    """A measurement may be None or non-finite (the claim then fails); anything else must be a number."""
    return None if value is None else _to_float("measured", value)


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def _fmt(x: float | None) -> str:
    return "None" if x is None else f"{x:.6g}"


def _float_to_json(x: float | None) -> float | str | None:
    if x is None or math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def _float_from_json(x: Any) -> float | None:
    if x is None:
        return None
    if isinstance(x, str):
        check_choice("measured", x, ("nan", "inf", "-inf"))
    return float(x)
