"""Part ``sigmoid`` (seed 004#109): sigmoid attention with the bias ``b = -ln n`` at initialisation: a row's weights
need not sum to 1, and their sum is ``n E[sigmoid(z - ln n)]`` exactly (theory section 14), of order one at every
sequence length (``-> e^{s^2/2}``), where ``b = 0`` gives ``n/2``; measured on random layers through the zoo's
``attention="sigmoid"`` against the law at each row's logit spread."""

from __future__ import annotations

import math

import numpy as np
import torch

from analysis.claims.ledger import Ledger
from analysis.probing.base import MAX_SEED, Result
from analysis.probing.parts import Context, Measured, each_claim, measure_replicates, predict_law_and_slope
from analysis.theory import softmax_alternatives as th
from analysis.training.train import derived_seed
from probes.softmax_alternatives.config import Config
from probes.softmax_alternatives.models import PATTERN, head_pattern_and_scores, random_head, row_logits
from probes.softmax_alternatives.references import SEED_SIGMOID, SOURCE
from probes.softmax_alternatives.sparse import planted_bias

DESCRIPTION = "sigmoid attention with bias -ln n: a row's weight mass against the sequence length and its exact law"
FIELDS = ("sigmoid_keys", "sigmoid_d_model", "sigmoid_rows", "sigmoid_batch_size", "sigmoid_seeds")
GATE = "sigmoid"

FIGURE = "sa_sigmoid"


def measure_layer(config: Config, seed: int) -> dict[str, np.ndarray]:
    """Seed ``seed``: one random head (fan-in init, float64, the weights shared by every n) with the zoo's sigmoid
    attention and ``sigmoid_bias = -ln n``, per number of keys n over ``sigmoid_batch_size`` sequences of n + 1 Gaussian
    tokens, each row hiding its own key (so it sees n keys with i.i.d. N(0, s_i^2) logits given the weights and the
    query): the first ``sigmoid_rows`` rows' mean weight mass and the mean of its exact law at each row's s_i."""
    c = config
    weights = derived_seed(seed, "sigmoid_weights") % MAX_SEED
    g = torch.Generator().manual_seed(derived_seed(seed, "sigmoid_inputs") % MAX_SEED)
    out = {k: np.empty(len(c.sigmoid.keys)) for k in ("sigmoid_row_mass", "sigmoid_row_mass_exact")}
    for i, n in enumerate(c.sigmoid.keys):
        model = random_head(c.sigmoid.d_model, "sigmoid", weights, sigmoid_bias=-math.log(n))
        x = torch.randn(c.sigmoid.batch_size, n + 1, c.sigmoid.d_model, generator=g, dtype=torch.float64)
        rows = min(c.sigmoid.rows, n + 1)
        p = head_pattern_and_scores(model, x, planted_bias(n, 0.0))[PATTERN][:, :rows]  # (B, rows, n + 1)
        s = row_logits(model, x[:, :rows])[1].ravel()
        out["sigmoid_row_mass"][i] = float(p.sum(-1).mean())
        out["sigmoid_row_mass_exact"][i] = float(th.sigmoid_row_mass(n, -math.log(n), s).mean())
    return out


def measure(ctx: Context) -> None:
    c = ctx.config
    measure_replicates(ctx, "sigmoid", ("sigmoid_n", c.sigmoid.keys), lambda s: measure_layer(c, s))


def claim_sigmoid_mass(led: Ledger, r: Result) -> None:
    """004#109: with the bias -ln n, sigmoid attention's row mass is its exact law (the alternative: softmax's 1) and
    does not grow with the sequence length (the alternative: b = 0's n/2, slope 1)."""
    c, d = r.config, r.data
    law = (
        "sigmoid_row_mass_exact",
        1.0,
        "normalised like softmax: every row's weights sum to 1",
        f"{SOURCE}, section 14: E[sum_j p_j] = n int sigmoid(s u - ln n) phi(u) du at each row's s",
    )
    slope = (
        "sigmoid_row_mass_length_free",
        1.0,
        "the mass grows with the sequence length like b = 0's n/2 (slope 1 in ln n)",
        f"{SOURCE}, section 14: the law's slope in ln n (-> 0 as the mass tends to e^(s^2/2))",
    )
    subject = (
        f"sigmoid attention with bias -ln n, random head (width {c.sigmoid.d_model}, fan-in init), n = "
        f"{list(c.sigmoid.keys)} Gaussian keys, a row's weight mass sum_j sigmoid(z_j - ln n)"
    )
    pairs = (d["sigmoid_row_mass"].values, d["sigmoid_row_mass_exact"].values)  # (n, seed)
    what = Measured(subject, "n", "mass")
    predict_law_and_slope(
        led, pairs, c.sigmoid.keys, law, slope, what, paired="difference", seed=SEED_SIGMOID, figure=FIGURE
    )


claims = each_claim(claim_sigmoid_mass)
