"""Part ``shaped`` (seed 004#82): skipless attention-only stacks at initialisation (``W_q = 0``, the zoo's
``zero_query``): with causal softmax every layer is the uniform average C and the token kernel collapses exactly like
``C^L (C^L)^T`` (theory section 13), with shaped attention (``attention="shaped"``, ``alpha I + beta softmax - gamma
C`` from (1, 1, 1)) every layer is the identity and independent tokens stay uncorrelated."""

from __future__ import annotations

import numpy as np
import torch

from analysis.claims.ledger import Ledger
from analysis.probing.base import MAX_SEED, Result
from analysis.probing.parts import Context, each_claim, measure_replicates, paired_with_law
from analysis.theory import softmax_alternatives as th
from analysis.training.train import derived_seed
from probes.softmax_alternatives.config import Config
from probes.softmax_alternatives.models import random_head, stack_correlations, stacks_setting

DESCRIPTION = "skipless attention stacks at init: softmax's token kernel collapses like C^L, shaped attention keeps it"
FIELDS = ("shaped_depths", "shaped_d_model", "shaped_tokens", "shaped_batch_size", "shaped_seeds")
GATE = "shaped"

FIGURE = "sa_shaped"
CORRELATIONS = {"softmax": "shaped_softmax_correlation", "shaped": "shaped_shaped_correlation"}
EPS = float(np.finfo(np.float64).eps)


def stack(config: Config, kernel: str, depth: int, seed: int):
    """A skipless attention-only stack (one head per layer, no norm, no MLP, causal, fan-in value and output weights,
    ``W_q = 0``) of ``depth`` layers with attention ``kernel``; the weights depend on ``seed`` and the shapes only."""
    return random_head(
        config.shaped.d_model, kernel, seed, n_layers=depth, causal=True, attn_residual=False, zero_query=True
    )


def measure_layer(config: Config, seed: int) -> dict[str, np.ndarray]:
    """Seed ``seed``: per depth, the mean token correlation of the token kernel ``mean_b X_L X_L^T`` over
    ``shaped_batch_size`` sequences of Gaussian tokens, for the softmax and the shaped stack (the same weights), and the
    largest deviation of any shaped layer's pattern from the identity."""
    c = config
    g = torch.Generator().manual_seed(derived_seed(seed, "shaped_inputs") % MAX_SEED)
    x = torch.randn(c.shaped.batch_size, c.shaped.tokens, c.shaped.d_model, generator=g, dtype=torch.float64)
    eye = torch.eye(c.shaped.tokens, dtype=torch.float64)
    weights = derived_seed(seed, "shaped_weights") % MAX_SEED

    def identity_error(kernel: str, model, y: torch.Tensor, cache) -> dict[str, float]:
        if kernel != "shaped":
            return {}
        return {"shaped_identity_error": max(float((p - eye).abs().max()) for p in cache.values())}

    return stack_correlations(x, c.shaped.depths, lambda k, L: stack(c, k, L, weights), CORRELATIONS, identity_error)


def measure(ctx: Context) -> None:
    c = ctx.config
    measure_replicates(ctx, "shaped", ("shaped_depth", c.shaped.depths), lambda s: measure_layer(c, s))
    ctx.data["shaped_softmax_correlation_law"] = (
        ("shaped_depth",),
        np.array([th.mean_token_correlation(th.collapse_kernel(c.shaped.tokens, L)) for L in c.shaped.depths]),
    )


def claim_shaped(led: Ledger, r: Result) -> None:
    """004#82: shaped attention starts at the identity and keeps the token kernel of a skipless stack (the
    alternative: softmax's collapse), where causal softmax at zero logits collapses it exactly like C^L (the
    alternative: the kernel kept)."""
    c, d = r.config, r.data
    soft = d["shaped_softmax_correlation"].values  # (depth, seed)
    law = d["shaped_softmax_correlation_law"].values  # (depth,)
    shaped = d["shaped_shaped_correlation"].values
    why = f"95% t band over {c.shaped.seeds} independent stacks (replicate seeds) of each one's "
    setting = stacks_setting(c.shaped.d_model, c.shaped.tokens, c.shaped.depths, "W_q = 0")
    statement = f"{setting}: the mean token correlation of the token kernel"
    led.judge(
        "shaped_attention_identity_at_init",
        measured=float(d["shaped_identity_error"].values.max()),
        expected=0.0,
        atol=4 * EPS,
        why="softmax at zero logits and C are the same float64 softmax of zeros, so I + P - P rounds to I; a few "
        "eps for the sum's order",
        statement=f"every shaped layer of the stacks (depths {list(c.shaped.depths)}) has pattern exactly I at init",
    )
    replicates, level = paired_with_law(soft, np.broadcast_to(law[:, None], soft.shape))
    led.judge(
        "softmax_stack_kernel_collapse",
        replicates=replicates,
        expected=level,
        alternative=0.0,
        why=why + "mean over the depths of the measured correlation minus the law's (paired), plus the law's mean",
        statement=f"{statement} of the softmax stack is the law's (" + ", ".join(f"{v:.3f}" for v in law) + ")",
    )
    led.judge(
        "shaped_stack_keeps_token_kernel",
        replicates=shaped.mean(axis=0),
        expected=0.0,
        alternative=level,
        why=why + "mean over the depths of the measured correlation",
        statement=f"{statement} of the shaped stack is 0 at every depth",
    )


claims = each_claim(claim_shaped)
