"""Part ``decay`` (seed 003#2, the premise of gated linear attention: a global decay term in the additive update):
untrained additive memories with a fixed decay ``gamma`` (RetNet's ``1 - 2^-5``), written through the zoo's recurrent
mixer, read with each stored key; the mean read-out error against its exact law (theory item 7), which stays bounded
as the number of pairs N grows, where the undecayed memory's ``(N - 1)/d_k`` grows without bound."""

from __future__ import annotations

import math

import numpy as np
import torch

from analysis.claims.ledger import Ledger
from analysis.probing.base import MAX_SEED, Result
from analysis.probing.parts import Context, Measured, each_claim, log_slopes, measure_replicates, predict_law_and_slope
from analysis.theory import associative_recall as th
from analysis.training.train import derived_seed
from analysis.zoo.recurrent import mix
from probes.associative_recall.config import SEED_DECAY, SOURCE, Config
from probes.associative_recall.memories import unit_vectors

DESCRIPTION = "additive memories with a global decay: the read-out error against N and its exact law"
FIELDS = ("decay_pairs", "decay_key", "decay_gamma", "decay_batch_size", "decay_seeds")
GATE = "decay"

FIGURE = "ar_decay"


def decayed_readout(keys: torch.Tensor, vals: torch.Tensor, gamma: float) -> torch.Tensor:
    """(R, N, dv): the read-out at every stored key of the memory ``S_t = gamma S_(t-1) + v_t k_t^T`` written with
    ``keys`` (R, N, dk) and ``vals`` (R, N, dv) through :func:`analysis.zoo.recurrent.mix` (the recurrent scan, one
    head:
    its memory is O(N), the parallel form's N x N decay mask is not)."""
    k, v = keys[:, None], vals[:, None]
    log_alpha = torch.full(k.shape[:3], math.log(gamma), dtype=k.dtype)
    _, S = mix("recurrent", k, k, v, log_alpha=log_alpha)
    return keys @ S[:, 0].transpose(-1, -2)


def measure_layer(config: Config, seed: int) -> dict[str, np.ndarray]:
    """Seed ``seed``: per N, the mean relative squared read-out error ``|S k_j - v_j|^2`` over the N items of
    ``decay_batch_size`` memories of unit keys and values (fresh per N), and its exact law's mean over the items."""
    c = config
    g = torch.Generator().manual_seed(derived_seed(seed, "decay_memories") % MAX_SEED)
    out = {k: np.empty(len(c.decay.pairs)) for k in ("decay_error", "decay_error_exact")}
    for i, n in enumerate(c.decay.pairs):
        keys = unit_vectors(g, (c.decay.batch_size, n), c.decay.key)
        vals = unit_vectors(g, (c.decay.batch_size, n), c.decay.key)
        read = decayed_readout(keys, vals, c.decay.gamma)
        out["decay_error"][i] = float(((read - vals) ** 2).sum(-1).mean())
        out["decay_error_exact"][i] = float(th.decayed_readout_error(n, c.decay.key, c.decay.gamma).mean())
    return out


def measure(ctx: Context) -> None:
    c = ctx.config
    measure_replicates(ctx, "decay", ("decay_n", c.decay.pairs), lambda s: measure_layer(c, s))


def claim_decay(led: Ledger, r: Result) -> None:
    """003#2: a global decay bounds an additive memory's interference: its mean read-out error is the exact law (the
    alternative: the undecayed (N - 1)/d_k) and grows with N far slower than the undecayed memory's (slope 1)."""
    c, d = r.config, r.data
    e = d["decay_error_exact"].values  # (N, seed)
    ns = np.asarray(c.decay.pairs, dtype=np.float64)
    undecayed = th.additive_readout_error(ns, c.decay.key)
    law = (
        "decayed_memory_readout_error",
        float((undecayed / e.mean(axis=1)).mean()),
        "the decay changes nothing: the undecayed memory's (N - 1)/d_k",
        f"{SOURCE}, item 7: (1 - gamma^(N-j))^2 + (1/d_k) sum_(i != j) gamma^(2(N-i)), averaged over j",
    )
    slope = (
        "decayed_memory_error_bounded_in_n",
        float(log_slopes(undecayed[:, None], ns)[0]),
        "interference grows with the number of pairs as in the undecayed memory ((N - 1)/d_k)",
        f"{SOURCE}, item 7: the law's slope in ln N (-> 0: the mean error tends to 1 + 1/(d_k (1 - gamma^2)))",
    )
    subject = (
        f"additive memories with decay gamma = {c.decay.gamma:g} (d_k = {c.decay.key}, unit keys and values), "
        f"N = {list(c.decay.pairs)} pairs, read with each stored key, the relative squared read-out error"
    )
    pairs = (d["decay_error"].values, e)
    what = Measured(subject, "N", "error", "sets of memories")
    predict_law_and_slope(led, pairs, ns, law, slope, what, seed=SEED_DECAY, figure=FIGURE)


claims = each_claim(claim_decay)
