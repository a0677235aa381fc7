"""Part ``taylor`` (seed 000#51): the second-order Taylor feature map ``phi(q) . phi(k) = 1 + z + z^2/2`` (Hedgehog's
example of a linear attention that keeps softmax's spikiness), over Gaussian queries and keys: how often it orders a
pair of keys against their logits (exactly ``Phi(-sqrt(2)/sigma)``; softmax's ``e^z`` never does) and its rows'
entropy deficit against the exact law (softmax's on the same logits the alternative)."""

from __future__ import annotations

import math

import numpy as np
import torch

from analysis.claims.ledger import Ledger
from analysis.probing.base import MAX_SEED, Result
from analysis.probing.parts import Context, Measured, each_claim, measure_replicates, predict_law
from analysis.theory import softmax_alternatives as th
from analysis.theory.attention_entropy import gaussian_entropy_exact
from analysis.training.train import derived_seed
from probes.softmax_alternatives.config import Config
from probes.softmax_alternatives.features import entropy_deficit
from probes.softmax_alternatives.references import SEED_TAYLOR, SOURCE

DESCRIPTION = "the Taylor feature map: monotonicity violations Phi(-sqrt(2)/sigma) and the entropy of its weights"
FIELDS = ("taylor_d_head", "taylor_keys", "taylor_queries", "taylor_seeds")
GATE = "taylor"

FIGURE = "sa_taylor"


def taylor_features(x: torch.Tensor) -> torch.Tensor:
    """``[1, x / d^(1/4), vec(x x^T) / sqrt(2 d)]`` over the last axis: ``phi(q) . phi(k) = 1 + z + z^2/2``, ``z = q . k
    / sqrt(d)``."""
    d = x.shape[-1]
    outer = (x[..., :, None] * x[..., None, :]).flatten(-2) / math.sqrt(2 * d)
    return torch.cat([torch.ones_like(x[..., :1]), x / d**0.25, outer], dim=-1)


def discordant_fraction(z: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """Per row (last axis: keys), the fraction of key pairs whose scores ``s`` and logits ``z`` order oppositely."""
    dz = z[..., :, None] - z[..., None, :]
    ds = s[..., :, None] - s[..., None, :]
    n = z.shape[-1]
    return ((dz * ds) < 0).sum((-1, -2)).double() / (n * (n - 1))


def measure_layer(config: Config, seed: int) -> dict[str, np.ndarray]:
    """Seed ``seed``: per query row over its own keys, the measured discordant fraction and entropy deficit of the
    Taylor weights, their exact values at the row's logit std ``sigma = |q| / sqrt(d)``, and softmax's exact deficit."""
    d, n, Q = config.taylor.d_head, config.taylor.keys, config.taylor.queries
    g = torch.Generator().manual_seed(derived_seed(seed, "taylor") % MAX_SEED)
    q = torch.randn(Q, d, generator=g, dtype=torch.float64)
    k = torch.randn(Q, n, d, generator=g, dtype=torch.float64)
    z = (k @ q[:, :, None])[..., 0] / math.sqrt(d)  # (Q, n) logits
    s = (taylor_features(k) @ taylor_features(q)[:, :, None])[..., 0]  # (Q, n) scores phi(q) . phi(k)
    sigma = (q.norm(dim=-1) / math.sqrt(d)).numpy()
    return {
        "taylor_discordant": discordant_fraction(z, s).numpy(),
        "taylor_discordant_exact": th.taylor_discordance(sigma),
        "taylor_entropy_deficit": entropy_deficit(s).numpy(),
        "taylor_entropy_deficit_exact": np.array([th.taylor_entropy_deficit(float(x), n) for x in sigma]),
        "taylor_softmax_deficit_exact": np.array([math.log(n) - gaussian_entropy_exact(n, float(x)) for x in sigma]),
    }


def measure(ctx: Context) -> None:
    c = ctx.config
    measure_replicates(ctx, "taylor", ("taylor_query", range(c.taylor.queries)), lambda s: measure_layer(c, s))


def claim_taylor(led: Ledger, r: Result) -> None:
    """000#51: softmax's exp is monotone in the logit and concentrates the weights; the Taylor map that approximates
    it orders some pairs against their logits, at an exact rate, and keeps part of the concentration (elu + 1 keeps
    almost none), at its exact law. Each claim is paired per row: the replicate's mean over rows of measured minus
    exact, plus the overall exact level."""
    led = led.given(seed=SEED_TAYLOR, figure=FIGURE)
    c, d = r.config, r.data
    setting = (
        f"Taylor features, d = {c.taylor.d_head}, n = {c.taylor.keys} Gaussian keys, {c.taylor.queries} query rows"
    )
    for var, law, subject, quantity in (
        (
            "taylor_discordant",
            (
                "taylor_monotonicity_violations",
                0.0,
                "the Taylor map keeps dot-product monotonicity, as softmax's exp does: no pair ordered against its "
                "logits",
                f"{SOURCE}, section 7: P = Phi(-sqrt(2)/sigma) (for z_1 < z_2 discordant iff z_1 + z_2 < -2)",
            ),
            f"{setting}, the fraction of key pairs ordered against their logits",
            "discordant fraction",
        ),
        (
            "taylor_entropy_deficit",
            (
                "taylor_entropy_deficit",
                float(d["taylor_softmax_deficit_exact"].values.mean()),
                "the Taylor map is as spiky as the softmax it expands: softmax's exact deficit on the same logits",
                f"{SOURCE}, section 7: section 6's expansion with x = (1 + z + z^2/2)/(1 + sigma^2/2)",
            ),
            f"{setting}, the entropy deficit ln n - H in nats",
            "deficit",
        ),
    ):
        what = Measured(subject, "row", quantity, "sets of queries and keys")
        predict_law(led, (d[var].values, d[f"{var}_exact"].values), law, what, paired="difference")


claims = each_claim(claim_taylor)
