"""The bands of the representational-collapse claims: a claim measured once per model takes the seed-to-seed
spread over two or more replicates, or its one model's within-run SE over its inputs (the one band policy,
:mod:`analysis.claims.evidence`)."""

from __future__ import annotations

import math

import numpy as np

from analysis.claims.evidence import t_multiple
from analysis.claims.ledger import Ledger
from analysis.probing.base import Result


def one_model_reason(r: Result, over: str = "random bases") -> str:
    """The ``within_run`` reason of a claim about the run's one model: its value is fixed by the weights, and
    the SE is the bootstrap (or spread) over the inputs ``over``."""
    if not r.meta.get("own_model", True):
        who = f"the passed model ({r.meta.get('model', 'given weights')})"
    else:
        who = f"this one model (weight seed {r.config.seed}{', trained' if r.config.trained else ', untrained'})"
    return f"a property of {who}: fixed by its weights; the SE is over its {over}"


def bases_dof(r: Result) -> int:
    """Degrees of freedom of an SE over the run's ``n_bases`` samples (bootstrap or spread)."""
    return int(r.config.n_bases) - 1


def band(rs: tuple[Result, ...], values, se: float, dof: int, over: str = "random bases") -> dict:
    """Band arguments of a claim measured once per model: over two or more replicates their values (the
    seed-to-seed spread, :mod:`analysis.probing.replicates`); for one run its measurement with the within-run SE ``se``
    (``dof``) over its inputs ``over``."""
    if len(rs) > 1:
        return dict(replicates=[float(v) for v in values])
    return dict(measured=float(values[0]), se=float(se), dof=dof, within_run=one_model_reason(rs[0], over))


def why_band(rs: tuple[Result, ...], one_run: str) -> str:
    """The band's ``why``: the spread over the replicate seeds, or ``one_run`` for a single run."""
    if len(rs) > 1:
        n = len(rs)
        trained = ", each trained by the same recipe" if rs[0].config.trained else ""
        return (
            f"95% t band ({n - 1} dof) of the standard error of the mean over {n} independent seeds (weights, "
            f"samples and bootstrap: analysis.claims.evidence.replicate_seed{trained})"
        )
    return one_run


def mean_over(rs: tuple[Result, ...], values) -> tuple[float, float]:
    """``(mean, half-width of the 95% t band)`` that :func:`band` gives ``values`` (the one run: its own)."""
    x = np.asarray(values, dtype=float)
    if x.size == 1:
        return float(x[0]), math.nan
    return float(x.mean()), t_multiple(x.size - 1) * float(x.std(ddof=1) / math.sqrt(x.size))


def seeds_note(rs: tuple[Result, ...], bad: int) -> str:
    return f" in {bad} of {len(rs)} seeds" if len(rs) > 1 else ""


def claim_positive_mean(
    led: Ledger,
    name: str,
    rs: tuple[Result, ...],
    samples: list[np.ndarray],
    over: str,
    why: str,
    *,
    statement: str,
    se_floor: float = 0.0,
) -> None:
    """The claim ``name`` that the mean of per-sample values is positive (a direction, its sign, hypothesis, source and
    figure declared): ``samples`` holds each replicate's values; over two or more replicates the band is their means'
    spread (:func:`band`), for one run the SE of its mean over its ``over`` (at least ``se_floor``), ``why`` saying
    what they are."""
    x = samples[0]
    se = max(float(x.std(ddof=1) / math.sqrt(x.size)), se_floor)
    b = band(rs, [v.mean() for v in samples], se, x.size - 1, over)
    led.judge(
        name,
        replicates=b.get("replicates"),
        measured=b.get("measured"),
        se=b.get("se"),
        dof=b.get("dof"),
        within_run=b.get("within_run"),
        why=why_band(rs, f"95% t band ({x.size - 1} dof) of the standard error of the mean over {why}"),
        statement=statement,
    )
