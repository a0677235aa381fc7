"""Part ``denominator`` (seed 003#31): normalised linear attention (identity features) divides by ``D = c q . sum_j
k_j``, which crosses zero; its read-out and query gradient are heavy-tailed with the indices of theory section 11
(1 and 1/2), measured by Hill's estimator on a random layer's rows; TransNormer's NormAttention (the output
normalised instead) is measured beside it. The claims read queries independent of the keys, where the section's law
is exact given the keys and values; self-attention rows (a query shares its token with a key) are measured too
(``denominator_self_*_tail_index``): the same indices asymptotically, read about 1% lower at the top 1% of the rows.
"""

from __future__ import annotations

import numpy as np
import torch

from analysis.claims.fitting import hill_tail_index
from analysis.claims.ledger import Ledger
from analysis.probing.base import MAX_SEED, Result
from analysis.probing.parts import Context, each_claim, over_replicates
from analysis.theory import softmax_alternatives as th
from analysis.training.train import derived_seed
from probes.softmax_alternatives.config import Config
from probes.softmax_alternatives.models import random_head

DESCRIPTION = "normalised linear attention's read-out and query gradient: heavy tails of the 1/D scaling"
FIELDS = (
    "denominator_d_model",
    "denominator_tokens",
    "denominator_batch_size",
    "denominator_top",
    "denominator_seeds",
)
GATE = "denominator"

FIGURE = "sa_denominator"
KINDS = ("numerator", "readout", "gradient", "norm_gradient")
SELF_KINDS = ("readout", "gradient")  # measured on self-attention rows too
# survival probabilities at which the figure reads each quantity's quantile
SURVIVAL = tuple(float(p) for p in np.logspace(-3.5, -0.3, 24))


def measure_layer(config: Config, seed: int) -> dict[str, np.ndarray]:
    """Seed ``seed``: one random head (fan-in init, float64) over ``denominator_batch_size`` sequences of
    ``denominator_tokens`` Gaussian tokens (the keys and values), read with identity features by as many queries
    from a second, independent set of Gaussian tokens through the same ``W_q`` (a cross-attention read: given the
    keys and values each query is Gaussian, so theory section 11 (a) is exact), and by the sequences' own tokens
    (self-attention: the query shares its token with a key, and the law holds only asymptotically). Per quantity of
    section 11, Hill's tail index over all rows and, for the cross read, the quantiles at the survival
    probabilities ``SURVIVAL`` (over the median)."""
    c = config
    model = random_head(c.denominator.d_model, "linear", derived_seed(seed, "denominator_weights") % MAX_SEED)
    g = torch.Generator().manual_seed(derived_seed(seed, "denominator_inputs") % MAX_SEED)
    shape = (c.denominator.batch_size, c.denominator.tokens, c.denominator.d_model)
    x = torch.randn(*shape, generator=g, dtype=torch.float64)  # keys and values
    x_q = torch.randn(*shape, generator=g, dtype=torch.float64)  # the independent queries
    attn = model.blocks[0].attn
    with torch.no_grad():
        q, q_self, k, v = (w(t).numpy() for w, t in ((attn.W_q, x_q), (attn.W_q, x), (attn.W_k, x), (attn.W_v, x)))
    rows = th.linear_readouts(q, k, v, model.config.scale)
    own = th.linear_readouts(q_self, k, v, model.config.scale)
    out: dict[str, np.ndarray] = {}
    for kind in KINDS:
        x_k = rows[kind].ravel()
        out[f"{kind}_index"] = np.array(hill_tail_index(x_k, c.denominator.top))
        out[f"{kind}_quantile"] = np.quantile(x_k, 1.0 - np.asarray(SURVIVAL)) / np.median(x_k)
    for kind in SELF_KINDS:
        out[f"self_{kind}_index"] = np.array(hill_tail_index(own[kind].ravel(), c.denominator.top))
    return out


def measure(ctx: Context) -> None:
    c = ctx.config
    got = over_replicates(
        c.seed, c.denominator.seeds, lambda s: measure_layer(c, s), progress=ctx.progress, desc="denominator layers"
    )
    seeds, quantiles = ("denominator_seed",), ("denominator_survival", "denominator_seed")
    for kind in KINDS:
        ctx.data[f"denominator_{kind}_tail_index"] = (seeds, got[f"{kind}_index"])
        ctx.data[f"denominator_{kind}_quantile"] = (quantiles, got[f"{kind}_quantile"])
    for kind in SELF_KINDS:
        ctx.data[f"denominator_self_{kind}_tail_index"] = (seeds, got[f"self_{kind}_index"])
    ctx.coords.update(denominator_survival=list(SURVIVAL), denominator_seed=list(range(c.denominator.seeds)))


def claim_denominator_tails(led: Ledger, r: Result) -> None:
    """003#31: the 1/D scaling of linear attention makes its read-out and its gradients heavy-tailed (unbounded):
    tail index 1 for the read-out (the alternative: the numerator's own Gaussian-like tail, as with a denominator
    bounded away from zero) and 1/2 for the query gradient (the alternative: 1, a gradient no heavier than the
    read-out)."""
    c, d = r.config, r.data
    law = th.linear_attention_tail_indices(c.denominator.d_model)
    samples = c.denominator.batch_size * c.denominator.tokens
    why = (
        f"95% t band over {c.denominator.seeds} independent layers (replicate seeds) of Hill's index from the "
        f"largest {c.denominator.top:g} of the {samples} rows"
    )
    statement = (
        f"random head (width {c.denominator.d_model}, fan-in init), {c.denominator.tokens} Gaussian keys and values, "
        "independent Gaussian queries, identity features, read-out y / D with D = c q . sum_j k_j"
    )
    led.judge(
        "linear_attention_readout_tail_index",
        replicates=d["denominator_readout_tail_index"].values,
        expected=law["readout"],
        alternative=float(d["denominator_numerator_tail_index"].values.mean()),
        why=why,
        statement=f"{statement}: the read-out's tail index is 1 (no mean)",
    )
    led.judge(
        "linear_attention_gradient_tail_index",
        replicates=d["denominator_gradient_tail_index"].values,
        expected=law["gradient"],
        alternative=law["readout"],
        why=why,
        statement=f"{statement}: the query gradient's tail index is 1/2 (no finite moment of order 1/2)",
    )


claims = each_claim(claim_denominator_tails)
