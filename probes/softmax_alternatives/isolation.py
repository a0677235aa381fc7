"""Part ``isolation`` (seed 000#118): a random softmax layer at initialisation passes on ``sum_j p_ij^2`` of its values'
energy, a share that falls with the sequence length (the residual keeps each token to itself), against the exact law
given each row's own logit and logit spread (theory section 10)."""

from __future__ import annotations

import numpy as np
import torch

from analysis.claims.ledger import Ledger
from analysis.probing.base import MAX_SEED, Result
from analysis.probing.parts import Context, Measured, each_claim, measure_replicates, predict_law_and_slope
from analysis.theory import softmax_alternatives as th
from analysis.training.train import derived_seed
from probes.softmax_alternatives.config import Config
from probes.softmax_alternatives.models import PATTERN, head_pattern_and_scores, random_head, row_logits
from probes.softmax_alternatives.references import SEED_ISOLATION, SOURCE

DESCRIPTION = "a random softmax layer's weight collision against the sequence length and its exact law"
FIELDS = ("isolation_tokens", "isolation_d_model", "isolation_rows", "isolation_batch_size", "isolation_seeds")
GATE = "isolation"

FIGURE = "sa_isolation"


def measure_layer(config: Config, seed: int) -> dict[str, np.ndarray]:
    """Seed ``seed``: one random softmax layer (fan-in init, full attention, float64); per sequence length n, over the
    first ``isolation_rows`` query rows of ``isolation_batch_size`` sequences of n Gaussian tokens, the mean measured
    collision ``sum_j p_ij^2`` and the mean of its exact expectation at each row's ``(a_i, s_i)``."""
    c = config
    model = random_head(c.isolation.d_model, "softmax", derived_seed(seed, "isolation_weights") % MAX_SEED)
    g = torch.Generator().manual_seed(derived_seed(seed, "isolation_inputs") % MAX_SEED)
    out = {k: np.empty(len(c.isolation.tokens)) for k in ("isolation_collision", "isolation_collision_exact")}
    for i, n in enumerate(c.isolation.tokens):
        x = torch.randn(c.isolation.batch_size, n, c.isolation.d_model, generator=g, dtype=torch.float64)
        rows = min(c.isolation.rows, n)
        p = head_pattern_and_scores(model, x)[PATTERN][:, :rows]  # (B, rows, n)
        a, s = row_logits(model, x[:, :rows])
        out["isolation_collision"][i] = float(p.pow(2).sum(-1).mean())
        out["isolation_collision_exact"][i] = float(th.self_collision(n, a, s).mean())
    return out


def measure(ctx: Context) -> None:
    c = ctx.config
    measure_replicates(ctx, "isolation", ("isolation_n", c.isolation.tokens), lambda s: measure_layer(c, s))


def claim_isolation(led: Ledger, r: Result) -> None:
    """000#118: at initialisation softmax attention passes on a share of its values' energy that falls with the
    sequence length, at its exact law (the alternative: uniform weights' 1/n), and its slope in ln n is the law's
    (the alternative: a share that does not depend on the length)."""
    c, d = r.config, r.data
    e = d["isolation_collision_exact"].values  # (n, seed)
    ns = np.asarray(c.isolation.tokens, dtype=np.float64)
    law = (
        "softmax_collision_exact",
        float(((1.0 / ns)[:, None] / e).mean()),
        "the weights spread evenly over the n tokens: collision 1/n",
        f"{SOURCE}, section 10: E[sum_j p_j^2] = int t e^-t [phi^(n-1) + (n-1) e^-2a chi phi^(n-2)] dt at each row's "
        "(a_i, s_i)",
    )
    slope = (
        "softmax_isolation_grows_with_length",
        0.0,
        "a length-independent share (no bias towards isolation; sum pooling's weights would even give +1)",
        f"{SOURCE}, section 10: the law's slope in ln n (-> -1 as n >> e^(s^2))",
    )
    subject = (
        f"random softmax layer (width {c.isolation.d_model}, fan-in init), n = {list(c.isolation.tokens)} Gaussian "
        "tokens, the weight collision sum_j p_ij^2 (the share of the values' energy a row passes on)"
    )
    pairs = (d["isolation_collision"].values, e)
    what = Measured(subject, "n", "collision")
    predict_law_and_slope(led, pairs, ns, law, slope, what, seed=SEED_ISOLATION, figure=FIGURE)


claims = each_claim(claim_isolation)
