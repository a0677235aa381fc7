"""Part ``parallel`` (seed 000#96, insight 1): what running a pre-norm block's attention and MLP in parallel changes
at initialisation. In a random zoo stack each block's MLP is fed ``N(x + a)`` (sequential) where a parallel block
would feed it ``N(x)``; the mean squared difference of the two outputs is exact given each token's two inputs
(theory section 16, Mehler's expansion), and relative to the MLP's output it falls with depth as the stream grows."""

from __future__ import annotations

import numpy as np
import torch

from analysis.claims.ledger import Ledger
from analysis.probing.base import MAX_SEED, Result
from analysis.probing.parts import Context, Measured, each_claim, measure_replicates, predict_law_and_slope
from analysis.theory import softmax_alternatives as th
from analysis.training.train import derived_seed
from analysis.zoo.hooks import hooks
from analysis.zoo.model import ModelConfig, TinyTransformer
from probes.softmax_alternatives.config import Config
from probes.softmax_alternatives.references import SEED_PARALLEL, SOURCE

DESCRIPTION = "a pre-norm stack's MLP fed the block input instead of the mid-block stream, against its exact law"
FIELDS = (
    "parallel_depth",
    "parallel_d_model",
    "parallel_n_heads",
    "parallel_d_mlp",
    "parallel_tokens",
    "parallel_batch_size",
    "parallel_seeds",
)
GATE = "parallel"

FIGURE = "sa_parallel"
ACTIVATION = "gelu"  # the zoo's default MLP


def parallel_model(config: Config, seed: int) -> TinyTransformer:
    """A random zoo stack in float64: ``parallel_depth`` pre-LayerNorm blocks of width ``parallel_d_model``
    (``parallel_n_heads`` causal softmax heads, a GELU MLP of ``parallel_d_mlp`` units, fan-in init, no biases), the
    Gaussian tokens fed in as they are (no positions), the final stream out."""
    c = config
    cfg = ModelConfig(
        input="embedded",
        output="none",
        d_model=c.parallel.d_model,
        n_layers=c.parallel.depth,
        n_heads=c.parallel.n_heads,
        d_mlp=c.parallel.d_mlp,
        activation=ACTIVATION,
        norm="pre",
        pos="none",
        dtype="float64",
        seed=seed,
    )
    return TinyTransformer(cfg).eval()


def block_inputs(model: TinyTransformer, x: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per block, its input stream ``x`` and its mid-block stream ``x + a`` (each (B, T, d)) on the tokens ``x``."""
    got: dict[str, torch.Tensor] = {}

    def keep(t: torch.Tensor, name: str) -> None:
        got[name] = t.clone()

    L = model.config.n_layers
    names = [f"blocks.{l}.hook_resid_{w}" for l in range(L) for w in ("pre", "mid")]
    with torch.no_grad(), hooks(model, [(n, keep) for n in names]):
        model(x)
    return [(got[f"blocks.{l}.hook_resid_pre"], got[f"blocks.{l}.hook_resid_mid"]) for l in range(L)]


def measure_layer(config: Config, seed: int) -> dict[str, np.ndarray]:
    """Seed ``seed``: per block l, over ``parallel_batch_size`` sequences of ``parallel_tokens`` Gaussian tokens, the
    block's MLP on ``u = ln2(x + a)`` (what it sees) and on ``v = ln2(x)`` (what a parallel block would feed it): the
    measured mean ``|M(u) - M(v)|^2 / d`` and mean ``|M(v)|^2 / d`` and their exact expectations given each token's
    ``(|u|, |v|, cos(u, v))``."""
    c = config
    model = parallel_model(c, derived_seed(seed, "parallel_weights") % MAX_SEED)
    g = torch.Generator().manual_seed(derived_seed(seed, "parallel_inputs") % MAX_SEED)
    x = torch.randn(c.parallel.batch_size, c.parallel.tokens, c.parallel.d_model, generator=g, dtype=torch.float64)
    keys = ("parallel_difference", "parallel_difference_exact", "parallel_output", "parallel_output_exact")
    out = {k: np.empty(c.parallel.depth) for k in keys}
    d = c.parallel.d_model
    for l, (pre, mid) in enumerate(block_inputs(model, x)):
        block = model.blocks[l]
        with torch.no_grad():
            u, v = block.ln2(mid), block.ln2(pre)
            mu, mv = block.mlp(u), block.mlp(v)
        u, v = u.reshape(-1, d).numpy(), v.reshape(-1, d).numpy()
        nu, nv = np.linalg.norm(u, axis=1), np.linalg.norm(v, axis=1)
        law = th.parallel_mlp_discrepancy(
            ACTIVATION, nu / np.sqrt(d), nv / np.sqrt(d), np.sum(u * v, axis=1) / (nu * nv)
        )
        out["parallel_difference"][l] = float((mu - mv).pow(2).sum(-1).mean()) / d
        out["parallel_output"][l] = float(mv.pow(2).sum(-1).mean()) / d
        out["parallel_difference_exact"][l] = float(law["difference"].mean())
        out["parallel_output_exact"][l] = float(law["output"].mean())
    return out


def measure(ctx: Context) -> None:
    c = ctx.config
    measure_replicates(
        ctx, "parallel", ("parallel_layer", list(range(c.parallel.depth))), lambda s: measure_layer(c, s)
    )


def claim_parallel(led: Ledger, r: Result) -> None:
    """000#96: feeding a pre-norm block's MLP the block input (parallel) instead of the mid-block stream
    (sequential) changes its output by its exact law (the alternative: no change, the sublayers commuting), a
    relative change that falls with depth at the law's slope (the alternative: the same cost at every depth)."""
    c, d = r.config, r.data
    m, e = d["parallel_difference"].values, d["parallel_difference_exact"].values  # (layer, seed)
    pairs = (m, e, m / d["parallel_output"].values, e / d["parallel_output_exact"].values)
    law = (
        "parallel_mlp_discrepancy_exact",
        0.0,
        "the sublayers commute at init: the parallel block's MLP output equals the sequential one's",
        f"{SOURCE}, section 16: E|M(u) - M(v)|^2 / d = m2(s_u) + m2(s_v) - 2 sum_n c_n(s_u) c_n(s_v) rho^n given each "
        "token's inputs",
    )
    slope = (
        "parallel_discrepancy_falls_with_depth",
        0.0,
        "a depth-independent cost, as in a post-norm stack that renormalises the stream after every sublayer",
        f"{SOURCE}, section 16: the law's slope in ln l at each token's measured inputs",
    )
    subject = (
        f"random pre-LN stacks ({c.parallel.depth} blocks, width {c.parallel.d_model}, {c.parallel.n_heads} causal "
        f"softmax heads, GELU MLP of {c.parallel.d_mlp}, fan-in init), {c.parallel.tokens} Gaussian tokens, each "
        "block's MLP fed N(x) (parallel) instead of N(x + a) (sequential)"
    )
    layers = np.arange(1, c.parallel.depth + 1, dtype=np.float64)
    what = Measured(subject, "l", "squared change of the MLP's output", "stacks", "relative change")
    predict_law_and_slope(led, pairs, layers, law, slope, what, seed=SEED_PARALLEL, figure=FIGURE)


claims = each_claim(claim_parallel)
