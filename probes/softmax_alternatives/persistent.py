"""Part ``persistent`` (seed 004#90): an all-attention layer's persistent memory vectors at initialisation. Each query
row attends to its T context tokens and to N persistent key-value vectors (the feed-forward layer's replacement);
the share of its weight on the persistent memory is exact given the row's logit spread (theory section 17) and falls
with the context length at its law's slope (like 1/T once the context dominates), where a feed-forward layer's
contribution does not depend on the context length."""

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
from probes.softmax_alternatives.references import SEED_PERSISTENT, SOURCE

DESCRIPTION = "persistent memory vectors beside the context: their share of a row's weight against T and its law"
FIELDS = (
    "persistent_slots",
    "persistent_scale",
    "persistent_context",
    "persistent_d_model",
    "persistent_rows",
    "persistent_batch_size",
    "persistent_seeds",
)
GATE = "persistent"

FIGURE = "sa_persistent"


def memory_bias(n_memory: int, n_tokens: int) -> torch.Tensor:
    """(n_memory + n_tokens)^2 logit bias: ``-inf`` on the diagonal, so every context row sees the N persistent
    vectors and the other ``n_tokens - 1`` context tokens."""
    bias = torch.zeros(n_memory + n_tokens, n_memory + n_tokens, dtype=torch.float64)
    return bias.fill_diagonal_(float("-inf"))


def measure_layer(config: Config, seed: int) -> dict[str, np.ndarray]:
    """Seed ``seed``: one random softmax head (fan-in init, float64) and N persistent vectors ``r N(0, I)`` (r =
    ``persistent_scale``), per context length T over ``persistent_batch_size`` sequences of T + 1 Gaussian tokens: the
    first ``persistent_rows`` context rows' mean weight on the persistent vectors and the mean of its exact law at
    each row's logit spread."""
    c = config
    N, r = c.persistent.slots, c.persistent.scale
    model = random_head(c.persistent.d_model, "softmax", derived_seed(seed, "persistent_weights") % MAX_SEED)
    g = torch.Generator().manual_seed(derived_seed(seed, "persistent_inputs") % MAX_SEED)
    memory = r * torch.randn(N, c.persistent.d_model, generator=g, dtype=torch.float64)
    out = {k: np.empty(len(c.persistent.context)) for k in ("persistent_share", "persistent_share_exact")}
    for i, T in enumerate(c.persistent.context):
        x = torch.randn(c.persistent.batch_size, T + 1, c.persistent.d_model, generator=g, dtype=torch.float64)
        seq = torch.cat([memory.expand(c.persistent.batch_size, N, -1), x], dim=1)
        rows = slice(N, N + min(c.persistent.rows, T + 1))
        p = head_pattern_and_scores(model, seq, memory_bias(N, T + 1))[PATTERN][:, rows]  # (B, rows, N + T + 1)
        s = row_logits(model, seq[:, rows])[1]
        out["persistent_share"][i] = float(p[..., :N].sum(-1).mean())
        out["persistent_share_exact"][i] = float(th.persistent_share(N, T, s, r).mean())
    return out


def measure(ctx: Context) -> None:
    c = ctx.config
    measure_replicates(ctx, "persistent", ("persistent_t", c.persistent.context), lambda s: measure_layer(c, s))


def claim_persistent(led: Ledger, r: Result) -> None:
    """004#90: the persistent memory's share of a row's weight is its exact law (the alternative: exchangeable keys'
    N/(N + T)) and falls with the context length at the law's slope in ln T (the alternative: a length-independent
    contribution, like the feed-forward layer it replaces)."""
    c, d = r.config, r.data
    e = d["persistent_share_exact"].values  # (T, seed)
    ts = np.asarray(c.persistent.context, dtype=np.float64)
    N = c.persistent.slots
    law = (
        "persistent_memory_share_exact",
        float((N / (N + ts) / e.mean(axis=1)).mean()),
        "the persistent keys weigh like context keys (exchangeable): share N/(N + T)",
        f"{SOURCE}, section 17: N int chi_rs phi_rs^(N-1) phi_s^T dt at each row's logit spread s",
    )
    slope = (
        "persistent_memory_share_falls_with_context",
        0.0,
        "a contribution independent of the context length, like the feed-forward layer the memory replaces",
        f"{SOURCE}, section 17: the law's slope in ln T (-> -1: N e^((rs)^2/2) / (T e^(s^2/2)))",
    )
    subject = (
        f"a random softmax head (width {c.persistent.d_model}, fan-in init) with N = {N} persistent vectors of scale "
        f"{c.persistent.scale:g} beside T = {list(c.persistent.context)} Gaussian context tokens, the share of a "
        "row's weight on the persistent memory"
    )
    pairs = (d["persistent_share"].values, e)
    what = Measured(subject, "T", "share", "layers and memories")
    predict_law_and_slope(led, pairs, ts, law, slope, what, seed=SEED_PERSISTENT, figure=FIGURE)


claims = each_claim(claim_persistent)
