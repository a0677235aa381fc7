"""The one call of a declared claim: :meth:`_Judging.judge` records it from this run's evidence, by the comparison
its declaration names (:func:`judged_as`), filling in what the declaration fixes.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping
from typing import Any

from analysis.claims.predictions import _Predictions
from analysis.claims.records import Claim
from analysis.claims.specs import RECORDED_AS, spec_for

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
    """``(ledger method, keywords it takes from the declaration)`` by which :meth:`_Judging.judge` records a claim of
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
    return frozenset(inspect.signature(getattr(_Predictions, method)).parameters) - {"self", "name"}


class _Judging(_Predictions):
    """:meth:`judge`, the one claim call of :class:`analysis.claims.ledger.Ledger`."""

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
        record (the methods below, then :func:`analysis.claims.verdicts.verdict_of`)."""
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
