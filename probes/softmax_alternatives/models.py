"""The random attention layer the parts measure: one head, no norm, no MLP, no positions, float64."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from analysis.hooks import hooks
from analysis.model import ModelConfig, TinyTransformer

PATTERN = "blocks.0.attn.hook_pattern"
SCORES = "blocks.0.attn.hook_attn_scores"


def random_head(width: int, kernel: str, seed: int, **fields: Any) -> TinyTransformer:
    """One attention head of width ``width`` (fan-in init, logit scale 1/sqrt(width), no norm, no positions, full
    attention, no MLP unless ``fields`` give one), float64, with attention ``kernel`` and any other ModelConfig
    ``fields``: the inputs go in as they are, so a row's logits are ``q_i . k_j / sqrt(width)``. The weights depend on
    ``seed`` and the shapes only, so two kernels built with one seed share them."""
    cfg = dict(
        input="embedded",
        output="none",
        d_model=width,
        n_layers=1,
        n_heads=1,
        d_mlp=0,
        norm="none",
        pos="none",
        attention=kernel,
        causal=False,
        dtype="float64",
        seed=seed,
    )
    return TinyTransformer(ModelConfig(**{**cfg, **fields})).eval()


def head_pattern_and_scores(model: TinyTransformer, x: torch.Tensor, bias=None) -> dict[str, torch.Tensor]:
    """The one head's pattern and logits (``{PATTERN: (B, T, T), SCORES: (B, T, T)}``) of ``model`` on ``x`` (with
    the logit bias ``bias``, if any)."""
    got: dict[str, torch.Tensor] = {}

    def keep(t: torch.Tensor, name: str) -> None:
        got[name] = t[:, 0].clone()

    with torch.no_grad(), hooks(model, [(PATTERN, keep), (SCORES, keep)]):
        model(x) if bias is None else model(x, attn_bias=bias)
    return got


def row_logits(model: TinyTransformer, x: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(B, T) each row's own logit ``a_i = c x_i^T M x_i`` and the std ``s_i = c |M^T x_i|`` of its logits on Gaussian
    keys independent of ``x_i`` (``M = W_q^T W_k``): given the weights and the query, the other keys' logits are
    i.i.d. N(0, s_i^2) exactly."""
    attn, c = model.blocks[0].attn, model.config.scale
    with torch.no_grad():
        q, k = attn.W_q(x), attn.W_k(x)  # (B, T, d)
        own = c * (q * k).sum(-1)
        std = c * (q @ attn.W_k.weight).norm(dim=-1)  # x^T W_q^T W_k = (W_q x)^T W_k
    return own.numpy(), std.numpy()
