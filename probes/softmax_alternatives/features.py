"""Part ``features`` (seed 003#74): the weights of elu + 1 linear attention over Gaussian queries and keys, their
entropy deficit ``ln n - H`` against the exact law of the theory (section 6), softmax's on the same logits the
alternative: the feature map keeps the weights near uniform where softmax concentrates them."""

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
from analysis.zoo.recurrent import feature_map
from probes.softmax_alternatives.config import Config
from probes.softmax_alternatives.references import SEED_FEATURES, SOURCE

DESCRIPTION = "elu + 1 linear attention's weights: entropy deficit against its exact law, softmax's the alternative"
FIELDS = ("features_d_head", "features_keys", "features_queries", "features_seeds")
GATE = "features"

FIGURE = "sa_feature_entropy"


def entropy_deficit(s: torch.Tensor) -> torch.Tensor:
    """``ln n - H`` of each row's weights ``s / sum(s)`` over the last axis (positive scores)."""
    p = s / s.sum(-1, keepdim=True)
    return math.log(s.shape[-1]) + (p * p.log()).sum(-1)


def measure_layer(config: Config, seed: int, transforms) -> dict[str, np.ndarray]:
    """Seed ``seed``: ``features_queries`` Gaussian queries, each over its own ``features_keys`` Gaussian keys (unit
    coordinates, width d): per query, the measured deficit of elu + 1 weights (the zoo's ``feature_map``) and of softmax
    weights on the logits ``q . k / sqrt(d)``, and the exact expectations of both given the query."""
    d, n, Q = config.features.d_head, config.features.keys, config.features.queries
    g = torch.Generator().manual_seed(derived_seed(seed, "features") % MAX_SEED)
    q = torch.randn(Q, d, generator=g, dtype=torch.float64)
    k = torch.randn(Q, n, d, generator=g, dtype=torch.float64)
    fq, fk = feature_map(q, "elu1"), feature_map(k, "elu1")
    elu = entropy_deficit((fk @ fq[:, :, None])[..., 0])  # (Q,)
    soft = entropy_deficit(torch.softmax((k @ q[:, :, None])[..., 0] / math.sqrt(d), dim=-1))
    a = fq.numpy()
    s_row = (q.norm(dim=-1) / math.sqrt(d)).numpy()  # softmax logits on the row: i.i.d. N(0, |q|^2 / d)
    return {
        "elu1_entropy_deficit": elu.numpy(),
        "elu1_entropy_deficit_exact": np.array(
            [th.feature_entropy_deficit("elu1", a[i], n, transforms=transforms) for i in range(Q)]
        ),
        "softmax_entropy_deficit": soft.numpy(),
        "softmax_entropy_deficit_exact": np.array([math.log(n) - gaussian_entropy_exact(n, float(s)) for s in s_row]),
    }


def measure(ctx: Context) -> None:
    c = ctx.config
    transforms = th.feature_transforms("elu1", 1.0)
    axis = ("features_query", range(c.features.queries))
    measure_replicates(ctx, "features", axis, lambda s: measure_layer(c, s, transforms))


def claim_elu1_deficit(led: Ledger, r: Result) -> None:
    """003#74: kernelised (elu + 1) attention does not concentrate: its rows' entropy stays within the exact, small
    deficit of ln n, where softmax on the same logits loses about s^2/2."""
    led = led.given(seed=SEED_FEATURES, figure=FIGURE)
    d, c = r.data, r.config
    law = (
        "elu1_entropy_deficit",
        float(d["softmax_entropy_deficit_exact"].values.mean()),
        "the kernel concentrates like softmax: the deficit of softmax on the same logits q . k / sqrt(d) "
        "(exact, ~ s^2/2)",
        f"{SOURCE}, section 6: ln n - E[H] = D + v/(2n) - c/n + D v/n, D = E[x ln x] by Frullani's integral, "
        "the transforms factorised over d",
    )
    subject = (
        f"elu + 1 linear attention, d = {c.features.d_head}, n = {c.features.keys} Gaussian keys, "
        f"{c.features.queries} query rows, the entropy deficit ln n - H in nats"
    )
    pairs = (d["elu1_entropy_deficit"].values, d["elu1_entropy_deficit_exact"].values)  # (query, seed)
    predict_law(led, pairs, law, Measured(subject, "row", "deficit", "sets of queries and keys"), paired="difference")


claims = each_claim(claim_elu1_deficit)
