"""The sources, seeds and band helpers the in-context-regression claims share."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from analysis.claims.evidence import family_size, seed_z, worst_case
from analysis.claims.ledger import Ledger

MC_NO_MODEL = "no model: a closed form checked by Monte Carlo, whose SE over the draws is the whole uncertainty"


SEED_MAHANKALI = "000#26"  # Mahankali et al. 2023: one LSA layer's optimum is one step of (preconditioned) GD


SOURCE_VO = "von Oswald et al. 2023 (default setting: d=10, N=10, U(-1/2,1/2), 1 layer, Adam, batch 2048)"


SOURCE_ETA = "derivation: analysis.theory.icl_gd.one_step_gd_theory (Mahankali et al. 2023; Ahn et al. 2023)"


HYP_INF = "infinite context (S = Sigma): the untuned rate tr Sigma^2 / tr Sigma^3 (= 1/v), no finite-N term"
SEED_LOOPED = "003#50"  # Chen et al.: linear looped transformers do multi-step GD in context with n = O(d)
SOURCE_LOOPED = (
    "Chen et al. (seed 003#50): a linear looped transformer implements multi-step GD, small error at n = O(d); "
    "closed forms: analysis.theory.looped"
)


def claim_seed(x_dist: str) -> str | None:
    """Mahankali et al.'s theorem is for Gaussian inputs; for the uniform law the claim is ours."""
    return SEED_MAHANKALI if x_dist in ("gaussian", "anisotropic") else None


def seeds_ok(led: Ledger, names: Sequence[str], n: int, part: str, source: str, seed: str | None = None) -> bool:
    """Whether ``n`` replicate seeds can give a band; otherwise the claims ``names`` are recorded as not
    evaluated (a given model, or ``<part>_seeds`` = 1)."""
    if n >= 2:
        return True
    for name in names:
        led.judge(
            name,
            source=source,
            seed=seed,
            reason=f"needs {part}_seeds >= 2 trained replicates for the band over seeds (has {n})",
        )
    return False


def below_zero_at_worst(
    led: Ledger,
    name: str,
    replicates: np.ndarray,
    candidates: np.ndarray | None = None,
    *,
    why: str,
    statement: str,
    worst: Callable[[int], str],
    fallback: int | None = None,
) -> None:
    """The direction claim ``name`` (declared with sign -1, full runs): in every case the seeds' mean of
    ``replicates`` (case, seed) lies below 0, recorded at the case nearest to failing, the largest :func:`seed_z`
    (among the ``candidates`` where given), and stated as ``statement (worst(case))``. Where no case has a z nothing
    is recorded, or the case ``fallback`` is (a replicate diverged: the claim fails as unmeasured)."""
    z = seed_z(replicates) if candidates is None else np.where(candidates, seed_z(replicates), np.nan)
    i = worst_case(z)
    i = fallback if i is None else i
    if i is None:
        return
    led.judge(name, replicates=replicates[i], family=family_size(z), why=why, statement=f"{statement} ({worst(i)})")


def mc_check(
    led: Ledger,
    name: str,
    measured: float,
    expected: float,
    se: float,
    *,
    alternative: float,
    why: str,
    statement: str,
    seed: str | None = None,
    family: int | None = None,
) -> None:
    """The prediction ``name``: a closed form (``expected``) equals its Monte Carlo estimate ``measured``, whose SE
    ``se`` over the draws (a normal band) is the whole uncertainty (no model: the declaration's ``within_run`` says
    so; its ``source`` and ``hypothesis`` are declared too). ``seed``: the run's seed paper, None where the claim
    is ours (:func:`claim_seed`)."""
    led.judge(
        name,
        band={"measured": measured, "expected": expected, "se": se, "dof": math.inf},
        family=family,
        alternative=alternative,
        seed=seed,
        why=why,
        statement=statement,
    )


def within_rounding(led: Ledger, name: str, ratio: np.ndarray, *, why: str, statement: str) -> None:
    """The identity ``name``: every deviation in ``ratio``, in units of its float64 rounding bound, is within 1 (the
    bound); recorded at the worst."""
    led.judge(name, measured=float(ratio.max()), expected=0.0, atol=1.0, why=why, statement=statement)
