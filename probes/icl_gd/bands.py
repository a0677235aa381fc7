"""The sources, seeds and band helpers the in-context-regression claims share."""

from __future__ import annotations

from collections.abc import Sequence

from analysis.ledger import Ledger

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
        led.not_evaluated(
            name,
            role="prediction",
            source=source,
            seed=seed,
            reason=f"needs {part}_seeds >= 2 trained replicates for the band over seeds (has {n})",
        )
    return False
