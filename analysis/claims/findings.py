"""How a comparison's outcome becomes a claim's status, and how a miss is diagnosed and triaged.

:func:`_status` decides steps 3 and 4 of the status order (:mod:`analysis.claims.ledger`): ``pass``, ``fail``,
``inconclusive`` (a prediction consistent with its alternative) or ``loose`` (a bound far from tight). A miss the
claim names a diagnosis for (:func:`_diagnosis`) becomes a ``deviation`` when the ledger finds the diagnosing claims
as required; every ``fail`` then carries a finding (:func:`finding_of`), from the triage the claim declares
(:func:`_triage`: the hypothesis claims it depends on, how the paper's setting is larger).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from analysis.claims.records import EVALUATED, LOOSE_BELOW, Claim
from analysis.claims.values import _check_name
from analysis.core.validation import check_choice


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
