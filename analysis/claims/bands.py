"""The bands a prediction is judged by, as the ledger records them: the one band policy of
:mod:`analysis.claims.evidence` applied to the uncertainty a call gives.

* an SE band (:func:`_t95_band`): from replicate values or a given SE with its degrees of freedom
  (:func:`_band_inputs`), ``t(95%, dof) x se``, at the Sidak per-case coverage for a worst-of-``family`` claim and
  at the per-look coverage of a sequential design (the notes :func:`_family_why`, :func:`_looks_why` go in ``why``);
* a 95% CI (:func:`_ci`, :func:`_check_coverage`), over replicates or within a run (:func:`_within_run`);
* a bound's population (:func:`_population`): the worst of every case, with how many hold;
* the alternative a prediction names (:func:`_alternative`): the value a competing hypothesis predicts.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from analysis.claims import evidence
from analysis.claims.evidence import COVERAGE, ROUNDING_RTOL
from analysis.claims.records import _RELATION_OPS
from analysis.claims.values import _as_finite_float, _as_measured, _dof_json, _float_to_json, _to_float


def _alternative(value: Any, hypothesis: Any) -> dict[str, Any]:
    v = _as_finite_float("alternative", value)
    if not isinstance(hypothesis, str) or not hypothesis.strip():
        raise ValueError(f"hypothesis must name the competing hypothesis behind the alternative, got {hypothesis!r}")
    return {"value": v, "hypothesis": hypothesis, "consistent": None}


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
    """``(measured, se, dof, n)`` of an SE band from replicate values or a given SE
    (:meth:`analysis.claims.ledger.Ledger.predict`)."""
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
    """``(worst case, summary)`` of the values a bound is checked on (:meth:`analysis.claims.ledger.Ledger.bound`
    ``population``): the worst case (NaN when any case is not finite: an unmeasured case fails the bound), and
    ``{"n", "holding", "worst", "tightness_median"}`` (the median tightness where every case and the bound are
    positive, else None)."""
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


def _ci(ci: Any) -> tuple[float, float]:
    try:
        lo, hi = ci
    except (TypeError, ValueError):
        raise ValueError(f"ci must be a pair (lo, hi), got {ci!r}") from None
    lo_f, hi_f = _to_float("ci lo", lo), _to_float("ci hi", hi)
    if math.isfinite(lo_f) and math.isfinite(hi_f) and lo_f > hi_f:
        raise ValueError(f"ci must have lo <= hi, got {ci!r}")
    return lo_f, hi_f
