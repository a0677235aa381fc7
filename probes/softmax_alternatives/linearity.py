"""Part ``linearity`` (seed 003#37): how linear the map from one layer's token embeddings to the next is, for the MLP
sublayer of a random zoo block with and without its skip connection, against the exact population score of theory
section 8 (Stein's lemma and Mehler's expansion, given the weights)."""

from __future__ import annotations

import numpy as np
import torch

from analysis.claims.ledger import Ledger
from analysis.probing.base import MAX_SEED, Result
from analysis.probing.parts import Context, each_claim, over_replicates
from analysis.theory import softmax_alternatives as th
from analysis.training.train import derived_seed
from analysis.zoo.hooks import hooks
from analysis.zoo.model import TinyTransformer
from probes.softmax_alternatives.config import Config
from probes.softmax_alternatives.models import random_head

DESCRIPTION = "the linearity score of an MLP sublayer with and without its skip connection, against its exact law"
FIELDS = (
    "linearity_scales",
    "linearity_d_model",
    "linearity_d_mlp",
    "linearity_activation",
    "linearity_tokens",
    "linearity_batch_size",
    "linearity_seeds",
)
GATE = "linearity"

FIGURE = "sa_linearity"
MID, POST = "blocks.0.hook_resid_mid", "blocks.0.hook_resid_post"
KINDS = ("residual", "no_residual")


def linearity_model(config: Config, seed: int, residual: bool) -> TinyTransformer:
    """One zoo block of width ``linearity_d_model`` in float64: uniform full attention (its output, the sequence mean
    through ``W_o W_v``, keeps the MLP's input Gaussian), then the MLP (``linearity_d_mlp`` units,
    ``linearity_activation``) with its skip connection or without; no norm, no positions, fan-in init. The weights
    depend on ``seed`` only, so the two variants of one seed share them."""
    return random_head(
        config.linearity.d_model,
        "uniform",
        seed,
        d_mlp=config.linearity.d_mlp,
        activation=config.linearity.activation,
        mlp_residual=residual,
    )


def mlp_input_covariance(model: TinyTransformer, tokens: int, scale: float) -> np.ndarray:
    """Covariance of the MLP's input ``m_t = x_t + G xbar`` for i.i.d. ``x_t ~ N(0, scale^2 I)`` over ``tokens``
    tokens, ``G = W_o W_v`` (uniform full attention): ``scale^2 (I + (G + G^T)/T + G G^T / T)`` exactly."""
    attn = model.blocks[0].attn
    G = (attn.W_o.weight @ attn.W_v.weight).detach().numpy()
    eye = np.eye(G.shape[0])
    return scale * scale * (eye + (G + G.T) / tokens + G @ G.T / tokens)


def layer_embeddings(model: TinyTransformer, x: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """The MLP sublayer's input and output token embeddings (the stream before and after it), each (B T, d)."""
    got: dict[str, torch.Tensor] = {}

    def keep(t: torch.Tensor, name: str) -> None:
        got[name] = t.reshape(-1, t.shape[-1]).clone()

    with torch.no_grad(), hooks(model, [(MID, keep), (POST, keep)]):
        model(x)
    return got[MID].numpy(), got[POST].numpy()


def measure_layer(config: Config, seed: int) -> dict[str, np.ndarray]:
    """Seed ``seed``: per input scale and variant (with, without the skip connection; the same weights and tokens),
    the measured unexplained fraction ``1 - score`` and its exact population value given the weights."""
    c = config
    weights = derived_seed(seed, "linearity_weights") % MAX_SEED
    g = torch.Generator().manual_seed(derived_seed(seed, "linearity_inputs") % MAX_SEED)
    x = torch.randn(c.linearity.batch_size, c.linearity.tokens, c.linearity.d_model, generator=g, dtype=torch.float64)
    shape = (len(c.linearity.scales), len(KINDS))
    out = {k: np.empty(shape) for k in ("measured", "exact")}
    for j, residual in enumerate((True, False)):
        model = linearity_model(c, weights, residual)
        mlp = model.blocks[0].mlp
        W_in, W_out = mlp.W_in.weight.detach().numpy(), mlp.W_out.weight.detach().numpy()
        for i, scale in enumerate(c.linearity.scales):
            mid, post = layer_embeddings(model, scale * x)
            sigma = mlp_input_covariance(model, c.linearity.tokens, scale)
            out["measured"][i, j] = th.linearity_unexplained(mid, post)
            out["exact"][i, j] = th.mlp_linearity(W_in, W_out, sigma, residual, c.linearity.activation)["unexplained"]
    return out


def measure(ctx: Context) -> None:
    c = ctx.config
    got = over_replicates(
        c.seed, c.linearity.seeds, lambda s: measure_layer(c, s), progress=ctx.progress, desc="MLP sublayers"
    )
    dims = ("linearity_scale", "linearity_kind", "linearity_seed")
    ctx.data["linearity_unexplained"] = (dims, got["measured"])
    ctx.data["linearity_unexplained_exact"] = (dims, got["exact"])
    ctx.coords.update(
        linearity_scale=list(c.linearity.scales),
        linearity_kind=list(KINDS),
        linearity_seed=list(range(c.linearity.seeds)),
    )


def claim_linearity(led: Ledger, r: Result) -> None:
    """003#37: the map across an MLP sublayer is close to linear with the skip connection and much less so without
    it; each variant's unexplained fraction ``1 - score`` is its exact law, and the other variant's law (the skip
    connection changing nothing) is the alternative. Paired per layer: the measured over the exact fraction."""
    c, d = r.config, r.data
    m, e = d["linearity_unexplained"], d["linearity_unexplained_exact"]  # (scale, kind, seed)
    for kind, other, name in (
        ("residual", "no_residual", "mlp_linearity_with_residual"),
        ("no_residual", "residual", "mlp_linearity_without_residual"),
    ):
        ratio = (m.sel(linearity_kind=kind) / e.sel(linearity_kind=kind)).values.mean(axis=0)  # (seed,)
        alt = (e.sel(linearity_kind=other) / e.sel(linearity_kind=kind)).values.mean()
        level = e.sel(linearity_kind=kind).values.mean(axis=-1)  # (scale,)
        led.judge(
            name,
            replicates=ratio,
            expected=1.0,
            alternative=float(alt),
            why=f"95% t band over {c.linearity.seeds} independent layers (replicate seeds) of each one's mean over the "
            "input scales of the measured unexplained fraction 1 - score over its exact value (paired: the layer's own "
            "weights); the 1 is the ratio's definition",
            statement=f"{c.linearity.activation} MLP sublayer {'with' if kind == 'residual' else 'without'} its skip "
            f"connection, d = {c.linearity.d_model}, {c.linearity.d_mlp} units, Gaussian tokens at scales "
            f"{list(c.linearity.scales)}: 1 - linearity score is the exact law ("
            + ", ".join(f"{v:.3f}" for v in level)
            + ")",
        )


claims = each_claim(claim_linearity)
