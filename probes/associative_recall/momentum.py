"""Part ``momentum`` (seed 003#112): the delta rule with momentum regressing a fixed map online; the mean overlap of
its error with the start against the exact second-order recurrence, one momentum in the oscillating region and one in
the damped region, against the first-order picture (momentum as a larger step)."""

from __future__ import annotations

import numpy as np
import torch

from analysis.claims.ledger import Ledger
from analysis.probing.base import MAX_SEED, Result
from analysis.probing.parts import Context, each_claim, over_replicates
from analysis.theory import associative_recall as th
from analysis.training.train import derived_seed
from analysis.zoo.recurrent import momentum_delta_scan
from probes.associative_recall.config import Config
from probes.associative_recall.memories import unit_vectors

DESCRIPTION = "the momentum delta rule's error overlap against its exact second-order recurrence"
FIELDS = ("momentum_d", "momentum_beta", "momentum_mus", "momentum_steps", "momentum_batch_size", "momentum_seeds")
GATE = "momentum"

REGIMES = ("oscillating", "damped")  # momentum_mus[0], momentum_mus[1]


def step(config: Config) -> float:
    """``b = beta / d``: the mean contraction of one delta-rule write with unit keys (``E[k k^T] = I/d``)."""
    return config.momentum.beta / config.momentum.d


def curves(config: Config) -> dict[str, np.ndarray]:
    """Per regime (rows), the exact mean overlap ``r_0..r_T`` and the first-order alternative at ``b / (1 - mu)``."""
    b, T = step(config), config.momentum.steps
    beta, d = config.momentum.beta, config.momentum.d
    return {
        "theory": np.stack([th.momentum_overlap(b, mu, T) for mu in config.momentum.mus]),
        "first_order": np.stack([th.first_order_overlap(b / (1.0 - mu), T) for mu in config.momentum.mus]),
        "square": np.stack([th.momentum_second_moment(beta, d, mu, T) for mu in config.momentum.mus]),
    }


CHECK_WORDS = {
    "oscillating": "the exact law's first trough (its most negative overlap; the first-order picture never goes "
    "below 0)",
    "damped": "the step where the exact law and the first-order picture differ most",
}


def check_step(config: Config) -> np.ndarray:
    """Per regime, the step ``t*`` the claim reads (fixed by theory): the oscillating law's first trough, and where
    the damped law and the first-order picture differ most."""
    c = curves(config)
    return np.array([c["theory"][0].argmin(), np.abs(c["theory"][1] - c["first_order"][1]).argmax()])


def measure_layer(config: Config, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seed ``seed``: per regime and step, the means over ``momentum_batch_size`` sequences of ``<E_0, E_t> / |E_0|^2``
    and of ``|E_t|^2 / |E_0|^2`` for online regression of one Gaussian map ``W`` (``v_t = W k_t``, unit keys), each
    (regimes, T + 1)."""
    d, T, B = config.momentum.d, config.momentum.steps, config.momentum.batch_size
    gen = torch.Generator().manual_seed(derived_seed(seed, "momentum") % MAX_SEED)
    W = torch.randn(d, d, generator=gen, dtype=torch.float64)
    k = unit_vectors(gen, (B, T), d)  # (B, T, d)
    v = k @ W.T
    overlap, square = np.empty((len(REGIMES), T + 1)), np.empty((len(REGIMES), T + 1))
    for j, mu in enumerate(config.momentum.mus):  # the same keys for both momenta
        E = momentum_delta_scan(k, v, beta=config.momentum.beta, mu=mu) - W  # (B, T + 1, d, d)
        overlap[j] = ((E * E[:, :1]).sum((-1, -2)) / (W * W).sum()).mean(0).numpy()
        square[j] = ((E * E).sum((-1, -2)) / (W * W).sum()).mean(0).numpy()
    return overlap, square


def measure(ctx: Context) -> None:
    c = ctx.config
    S = c.momentum.seeds
    got = over_replicates(
        c.seed,
        S,
        lambda s: dict(zip(("overlap", "square"), measure_layer(c, s), strict=True)),
        progress=ctx.progress,
        desc="momentum memories",
    )
    overlap, square = got["overlap"], got["square"]
    law = curves(c)
    dims = ("momentum_regime", "momentum_step", "momentum_seed")
    ctx.data["momentum_overlap"] = (dims, overlap)
    ctx.data["momentum_square_error"] = (dims, square)
    ctx.data["momentum_overlap_theory"] = (("momentum_regime", "momentum_step"), law["theory"])
    ctx.data["momentum_overlap_first_order"] = (("momentum_regime", "momentum_step"), law["first_order"])
    ctx.data["momentum_square_error_theory"] = (("momentum_regime", "momentum_step"), law["square"])
    ctx.coords.update(
        momentum_regime=list(REGIMES), momentum_step=list(range(c.momentum.steps + 1)), momentum_seed=list(range(S))
    )


def root_words(roots: tuple[complex, complex]) -> str:
    """The recurrence's roots in words: modulus and angle when complex, the two values when real."""
    if abs(roots[0].imag) > 0:
        return f"roots {abs(roots[0]):.3f} e^(+-{abs(np.angle(roots[0])):.3f} i)"
    return f"real roots {roots[0].real:.3f}, {roots[1].real:.3f}"


def claim_overlaps(led: Ledger, r: Result) -> None:
    """003#112: the momentum recurrence is a second-order system; its mean error overlap follows the exact
    recurrence, oscillating through zero where the roots are complex, and is not momentum as a larger step."""
    d, c = r.data, r.config
    S = d.sizes["momentum_seed"]
    b = step(c)
    for j, (regime, t) in enumerate(zip(REGIMES, check_step(c), strict=True)):
        mu = c.momentum.mus[j]
        sel = {"momentum_regime": regime, "momentum_step": int(t)}
        roots = th.momentum_roots(b, mu)
        led.judge(
            f"momentum_overlap_{regime}",
            replicates=d["momentum_overlap"].sel(sel).values,
            expected=float(d["momentum_overlap_theory"].sel(sel)),
            alternative=float(d["momentum_overlap_first_order"].sel(sel)),
            hypothesis=f"momentum as a larger step: the first-order delta rule at b/(1 - mu) = {b / (1 - mu):.4g}",
            why=f"95% t band over {S} independent memories (replicate seeds: map and keys) of each one's mean over "
            f"{c.momentum.batch_size} key sequences of <E_0, E_t>/|E_0|^2 at t = {int(t)}, {CHECK_WORDS[regime]}",
            statement=f"momentum delta rule, d = {c.momentum.d}, beta = {c.momentum.beta:g}, mu = {mu:g} ({regime}: "
            f"{root_words(roots)}): the mean error overlap at step {int(t)} follows the exact second-order recurrence",
        )


def claim_second_moment(led: Ledger, r: Result) -> None:
    """003#112's stability question: in the oscillating regime the mean contracts (modulus sqrt(mu) < 1) but the
    memory's squared error follows the exact second-moment map, whose spectral radius can exceed 1."""
    d, c = r.data, r.config
    S = d.sizes["momentum_seed"]
    T = c.momentum.steps
    sel = {"momentum_regime": "oscillating", "momentum_step": T}
    exact = float(d["momentum_square_error_theory"].sel(sel))
    mean_field = float(d["momentum_overlap_theory"].sel(sel)) ** 2  # |E[E_T]|^2 / |E_0|^2
    mu = c.momentum.mus[0]
    rate = th.momentum_second_moment_rate(c.momentum.beta, c.momentum.d, mu)
    led.judge(
        "momentum_square_error_oscillating",
        replicates=d["momentum_square_error"].sel(sel).values / exact,
        expected=1.0,
        alternative=mean_field / exact,
        why=f"95% t band over {S} independent memories of each one's mean over {c.momentum.batch_size} key "
        f"sequences of "
        f"|E_T|^2/|E_0|^2 at T = {T} over the exact second moment; the 1 is the ratio's definition",
        statement=f"momentum delta rule, mu = {mu:g}, beta/d = {step(c):.4g}: the mean converges (modulus "
        f"{np.sqrt(mu):.3f}) but E|E_t|^2 follows the exact second-moment map (spectral radius {rate:.3f} per write): "
        f"{exact:.4g} |E_0|^2 at t = {T}",
    )


claims = each_claim(claim_overlaps, claim_second_moment)
