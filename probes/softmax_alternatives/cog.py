"""Part ``cog`` (seed 004#28): Cog attention's signed weights (SignExp, the zoo's ``attention="cog"``) make a layer
odd in each token separately, so a skipless attention-only stack over i.i.d. Gaussian tokens keeps every pair of
tokens uncorrelated in expectation at every depth (theory section 15), where softmax on the same weights averages
them towards one token (rank collapse)."""

from __future__ import annotations

import numpy as np
import torch

from analysis.claims.ledger import Ledger
from analysis.probing.base import MAX_SEED, Result
from analysis.probing.parts import Context, each_claim, measure_replicates
from analysis.training.train import derived_seed
from probes.softmax_alternatives.config import Config
from probes.softmax_alternatives.models import random_head, stack_correlations, stacks_setting

DESCRIPTION = "skipless Cog-attention stacks at init: token sign equivariance, and no collapse where softmax collapses"
FIELDS = ("cog_depths", "cog_d_model", "cog_tokens", "cog_batch_size", "cog_seeds")
GATE = "cog"

FIGURE = "sa_cog"
CORRELATIONS = {"softmax": "cog_softmax_correlation", "cog": "cog_cog_correlation"}


def stack(config: Config, kernel: str, depth: int, seed: int):
    """A skipless attention-only stack (one head per layer, no norm, no MLP, causal, fan-in weights including the
    queries) of ``depth`` layers with attention ``kernel``; the weights depend on ``seed`` and the shapes only."""
    return random_head(config.cog.d_model, kernel, seed, n_layers=depth, causal=True, attn_residual=False)


def measure_layer(config: Config, seed: int) -> dict[str, np.ndarray]:
    """Seed ``seed``: per depth, the mean token correlation of the token kernel ``mean_b X_L X_L^T`` over
    ``cog_batch_size`` sequences of Gaussian tokens for the softmax and the Cog stack (the same weights and tokens), and
    the Cog stack's largest deviation from sign equivariance, ``max |f(D X) - D f(X)| / max |f(X)|`` for random token
    signs D (one draw per sequence)."""
    c = config
    g = torch.Generator().manual_seed(derived_seed(seed, "cog_inputs") % MAX_SEED)
    x = torch.randn(c.cog.batch_size, c.cog.tokens, c.cog.d_model, generator=g, dtype=torch.float64)
    signs = torch.randint(0, 2, (c.cog.batch_size, c.cog.tokens, 1), generator=g).to(torch.float64) * 2.0 - 1.0
    weights = derived_seed(seed, "cog_weights") % MAX_SEED

    def equivariance(kernel: str, model, y: torch.Tensor, cache) -> dict[str, float]:
        if kernel != "cog":
            return {}
        with torch.no_grad():
            flipped = model(signs * x)
        return {"cog_equivariance_error": float((flipped - signs * y).abs().max() / y.abs().max())}

    return stack_correlations(x, c.cog.depths, lambda k, L: stack(c, k, L, weights), CORRELATIONS, equivariance)


def measure(ctx: Context) -> None:
    c = ctx.config
    measure_replicates(ctx, "cog", ("cog_depth", c.cog.depths), lambda s: measure_layer(c, s))


def claim_cog(led: Ledger, r: Result) -> None:
    """004#28: a Cog-attention stack is exactly odd in each token (an identity), so it keeps independent tokens
    uncorrelated at every depth (the alternative: the collapse softmax shows on the same weights)."""
    c, d = r.config, r.data
    soft = d["cog_softmax_correlation"].values  # (depth, seed)
    cog = d["cog_cog_correlation"].values
    statement = stacks_setting(c.cog.d_model, c.cog.tokens, c.cog.depths, "fan-in init")
    led.judge(
        "cog_token_sign_equivariance",
        measured=float(d["cog_equivariance_error"].values.max()),
        expected=0.0,
        atol=0.0,
        why="negation is exact in IEEE arithmetic and every sum of a flipped row flips term by term, so the float64 "
        "stack is odd in each token bit for bit",
        statement=f"{statement}: flipping any tokens' signs flips exactly their outputs (relative error, max over "
        "depths and replicates)",
    )
    level = float(soft.mean())
    led.judge(
        "cog_stack_keeps_tokens_uncorrelated",
        replicates=cog.mean(axis=0),
        expected=0.0,
        alternative=level,
        why=f"95% t band over {c.cog.seeds} independent stacks (replicate seeds) of each one's mean over the depths "
        "of the measured mean token correlation",
        statement=f"{statement}: the mean token correlation of the Cog stack's token kernel is 0 at every depth "
        "(softmax's on the same weights: " + ", ".join(f"{v:.3f}" for v in soft.mean(axis=1)) + ")",
    )


claims = each_claim(claim_cog)
