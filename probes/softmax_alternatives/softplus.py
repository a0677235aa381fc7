"""Part ``softplus`` (seed 000#85): attention that normalises ``softplus`` of the logits by its row's l1 norm (the
zoo's ``attention="softplus_l1"``) keeps its rows' entropy within about a nat of ``ln n`` at every logit scale (theory
section 12: the deficit tends to ``(ln 4 pi - gamma)/2``), where softmax's deficit grows like ``s^2/2``; measured on
random layers at several logit scales against the exact law at each row's logit spread, softmax's the alternative."""

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
from probes.softmax_alternatives.models import PATTERN, head_pattern_and_scores, random_head, row_logits
from probes.softmax_alternatives.references import SEED_SOFTPLUS, SOURCE
from probes.softmax_alternatives.sparse import planted_bias

DESCRIPTION = (
    "l1-normalised softplus attention: a bounded entropy deficit at every logit scale, softmax's the alternative"
)
FIELDS = (
    "softplus_scales",
    "softplus_d_model",
    "softplus_keys",
    "softplus_rows",
    "softplus_batch_size",
    "softplus_seeds",
)
GATE = "softplus"

FIGURE = "sa_softplus"


def measure_layer(config: Config, seed: int) -> dict[str, np.ndarray]:
    """Seed ``seed``: one random head (fan-in init, float64; the weights shared by every scale) with the zoo's
    softplus_l1 kernel at logit scales ``s / sqrt(d)``, over ``softplus_batch_size`` sequences of n + 1 Gaussian tokens,
    each row hiding its own key (so it sees n keys with i.i.d. N(0, s_i^2) logits given the weights and the query):
    per scale, the first ``softplus_rows`` rows' mean measured deficit ``ln n - H``, the mean of its exact law at
    each row's ``s_i`` and the mean of softmax's exact deficit there."""
    c = config
    n, d = c.softplus.keys, c.softplus.d_model
    g = torch.Generator().manual_seed(derived_seed(seed, "softplus_inputs") % MAX_SEED)
    x = torch.randn(c.softplus.batch_size, n + 1, d, generator=g, dtype=torch.float64)
    bias = planted_bias(n, 0.0)  # the diagonal hidden, nothing planted
    rows = min(c.softplus.rows, n + 1)
    measured, exact, softmax = (np.empty(len(c.softplus.scales)) for _ in range(3))
    for i, scale in enumerate(c.softplus.scales):
        model = random_head(
            d, "softplus_l1", derived_seed(seed, "softplus_weights") % MAX_SEED, logit_scale=scale / math.sqrt(d)
        )
        p = head_pattern_and_scores(model, x, bias)[PATTERN][:, :rows]  # (B, rows, n + 1), one zero per row
        keep = ~torch.eye(n + 1, dtype=torch.bool)[:rows]  # drop each row's hidden key
        p = p[:, keep].reshape(c.softplus.batch_size, rows, n)
        s = row_logits(model, x[:, :rows])[1].ravel()  # each row's logit std s_i
        measured[i] = float(entropy_deficit(p).mean())
        exact[i] = float(np.mean([th.softplus_l1_entropy_deficit(float(v), n) for v in s]))
        softmax[i] = float(np.mean([math.log(n) - gaussian_entropy_exact(n, float(v)) for v in s]))
    return {
        "softplus_entropy_deficit": measured,
        "softplus_entropy_deficit_exact": exact,
        "softplus_softmax_deficit_exact": softmax,
    }


def measure(ctx: Context) -> None:
    c = ctx.config
    measure_replicates(ctx, "softplus", ("softplus_scale", c.softplus.scales), lambda s: measure_layer(c, s))
    ctx.scalars["softplus_deficit_limit"] = th.SOFTPLUS_DEFICIT_LIMIT


def claim_softplus_deficit(led: Ledger, r: Result) -> None:
    """000#85: l1-normalised softplus weights keep a bounded entropy deficit at every logit scale (the exact law,
    tending to (ln 4 pi - gamma)/2), where softmax's on the same logits grows with the scale."""
    led = led.given(seed=SEED_SOFTPLUS, figure=FIGURE)
    c, d = r.config, r.data
    law = (
        "softplus_l1_entropy_deficit",
        float(d["softplus_softmax_deficit_exact"].values.mean()),
        "the l1 norm concentrates the weights like softmax's: softmax's exact deficit on the same rows",
        f"{SOURCE}, section 12: section 6's expansion with x = softplus(sigma Z) / E softplus(sigma Z), "
        "-> (ln 4 pi - gamma)/2 as sigma grows",
    )
    subject = (
        f"softplus_l1 attention, random head (width {c.softplus.d_model}), n = {c.softplus.keys} keys, logit scales "
        f"sigma = {list(c.softplus.scales)}, the entropy deficit ln n - H (-> {th.SOFTPLUS_DEFICIT_LIMIT:.3f} as sigma "
        "grows)"
    )
    pairs = (d["softplus_entropy_deficit"].values, d["softplus_entropy_deficit_exact"].values)  # (scale, seed)
    predict_law(led, pairs, law, Measured(subject, "sigma", "deficit"), paired="difference")


claims = each_claim(claim_softplus_deficit)
