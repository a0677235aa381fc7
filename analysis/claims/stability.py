"""Judging a recorded claim again from its stored fields: its verdict function and the stability of its verdict.

:func:`verdict_function` rebuilds, from a claim's band, bound or range as recorded, the verdict it would reach had it
measured another value; :func:`claim_stability` resamples the measurement with it
(:func:`analysis.claims.evidence.stability`), at the scale of :func:`reference_scale` and the band's half-width
(:func:`band_width`). Built from the stored fields only, so a committed ledger can be judged again
(:meth:`analysis.claims.ledger.Ledger.rejudged`, ``tests/test_rejudge.py``).
"""

from __future__ import annotations

import math
from typing import Any

from analysis.claims import evidence
from analysis.claims.findings import _status
from analysis.claims.records import _RELATION_OPS, FAR, Claim
from analysis.claims.values import _dof_from_json, _finite, _float_from_json


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
