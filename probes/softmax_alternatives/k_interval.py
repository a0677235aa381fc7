"""Part ``k_interval`` (seed 000#16): a random attention layer with K-interval softmax (the exponential read off a
per-row grid of K + 1 values, rounded or interpolated) against exact softmax on the same logits: the rows' L1 error
against its derived bound, and how fast it falls with K."""

from __future__ import annotations

import numpy as np
import torch

from analysis.claims.evidence import replicate_seed
from analysis.claims.ledger import Ledger
from analysis.core.progress import bar
from analysis.probing.base import MAX_SEED, Result
from analysis.probing.parts import Context, each_claim
from analysis.theory import softmax_alternatives as th
from analysis.theory.signal_propagation import loglog_slope
from analysis.training.train import derived_seed
from probes.softmax_alternatives.config import Config
from probes.softmax_alternatives.models import PATTERN, SCORES, head_pattern_and_scores, random_head
from probes.softmax_alternatives.references import SOURCE

DESCRIPTION = "K-interval softmax (rounded, interpolated) against exact softmax: L1 error bound and order in K"
FIELDS = ("interval_ks", "interval_d_model", "interval_len", "interval_batch_size", "interval_seeds")
GATE = "interval"

MODES = th.K_INTERVAL_MODES  # ("interpolate", "round")
ORDER = {"interpolate": -2.0, "round": -1.0}  # the error's order in K (theory section 3)
ORDER_WORDS = {"interpolate": "t(1 - t) h^2 / 2", "round": "h (the exponent moved by <= h/2)"}
FIGURE = "sa_k_interval"


def measure_layer(config: Config, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seed ``seed``: per mode and K, the mean over rows of ``sum_i |p~_i - p_i|`` against exact softmax, and the
    largest ratio of a row's error to its bound ``b/a - 1`` at its own grid step (arrays (modes, K))."""
    g = torch.Generator().manual_seed(derived_seed(seed, "interval_inputs"))
    x = torch.randn(
        config.interval.batch_size, config.interval.len, config.interval.d_model, generator=g, dtype=torch.float64
    )
    weights = derived_seed(seed, "interval_weights") % MAX_SEED  # one layer per seed, shared by every kernel
    exact = head_pattern_and_scores(random_head(config.interval.d_model, "softmax", weights), x)
    span = (exact[SCORES].amax(-1) - exact[SCORES].amin(-1)).numpy()  # (B, T): M - m per row
    error = np.empty((len(MODES), len(config.interval.ks)))
    ratio = np.empty_like(error)
    for a, mode in enumerate(MODES):
        for j, K in enumerate(config.interval.ks):
            model = random_head(config.interval.d_model, "k_interval", weights, k_interval=K, k_interval_mode=mode)
            rows = (head_pattern_and_scores(model, x)[PATTERN] - exact[PATTERN]).abs().sum(-1).numpy()  # (B, T)
            error[a, j] = rows.mean()
            ratio[a, j] = (rows / th.k_interval_l1_bound(span / K, mode)).max()
    return error, ratio


def measure(ctx: Context) -> None:
    c = ctx.config
    S = c.interval.seeds
    error = np.empty((len(MODES), len(c.interval.ks), S))
    ratio = np.empty_like(error)
    with bar(total=S, progress=ctx.progress, desc="K-interval layers") as steps:
        for i in range(S):
            error[..., i], ratio[..., i] = measure_layer(c, replicate_seed(c.seed, i))
            steps.update()
    dims = ("interval_mode", "interval_k", "interval_seed")
    ctx.data["interval_error"] = (dims, error)
    ctx.data["interval_bound_ratio"] = (dims, ratio)
    ctx.coords.update(interval_mode=list(MODES), interval_k=list(c.interval.ks), interval_seed=list(range(S)))


def claim_bounds(led: Ledger, r: Result) -> None:
    """Theory section 3: every row's L1 error against softmax is at most ``b/a - 1`` at its grid step."""
    d = r.data
    what = {"round": "e^h - 1", "interpolate": "r(h) - 1 (~ h^2/8)"}
    for mode in MODES:
        led.judge(
            f"k_interval_{mode}_error_bound",
            measured=float(d["interval_bound_ratio"].sel(interval_mode=mode).max()),
            bound=1.0,
            why="exact algebra on each row (no sampling): the largest over rows, K and layers of the row's L1 error "
            "over its own bound at h = (max - min logit)/K; tightness is that largest ratio",
            statement=f"K-interval softmax ({mode}): every row's sum_i |p~_i - p_i| <= {what[mode]} at its grid step",
        )


def claim_orders(led: Ledger, r: Result) -> None:
    """The mean error falls like K^-1 (rounding) and K^-2 (interpolation); each mode's order is the other's
    alternative."""
    d = r.data
    Ks = d["interval_k"].values
    S = d.sizes["interval_seed"]
    for mode, other in (("interpolate", "round"), ("round", "interpolate")):
        err = d["interval_error"].sel(interval_mode=mode).values  # (K, seed)
        led.judge(
            f"k_interval_{mode}_error_order",
            replicates=[loglog_slope(Ks, err[:, i])[0] for i in range(S)],
            expected=ORDER[mode],
            alternative=ORDER[other],
            hypothesis=f"the grid's error does not depend on how a value is read off it (the {other} order)",
            source=f"{SOURCE}: first-order error p_i (delta_i - mean delta), delta of order {ORDER_WORDS[mode]}, "
            "h = (M - m)/K",
            why=f"95% t band over {S} independent random layers of each one's least-squares slope of ln(mean row L1 "
            "error) on ln K",
            statement=f"K-interval softmax ({mode}): d ln(mean L1 error) / d ln K = {ORDER[mode]:g}",
        )


claims = each_claim(claim_bounds, claim_orders)
