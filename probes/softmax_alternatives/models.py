"""The random attention layer the parts measure: one head, no norm, no MLP, no positions, float64."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from analysis.zoo.hooks import hooks
from analysis.zoo.model import TinyTransformer, one_head_layer

PATTERN = "blocks.0.attn.hook_pattern"
SCORES = "blocks.0.attn.hook_attn_scores"


def random_head(width: int, kernel: str, seed: int, **fields: Any) -> TinyTransformer:
    """One attention head of width ``width`` (fan-in init, logit scale 1/sqrt(width), no norm, no positions, full
    attention, no MLP unless ``fields`` give one), float64, with attention ``kernel`` and any other ModelConfig
    ``fields``: the inputs go in as they are, so a row's logits are ``q_i . k_j / sqrt(width)``. The weights depend on
    ``seed`` and the shapes only, so two kernels built with one seed share them."""
    cfg = dict(norm="none", pos="none", attention=kernel, causal=False, dtype="float64", seed=seed)
    return TinyTransformer(one_head_layer(width, **{**cfg, **fields})).eval()


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


def stack_correlations(
    x: torch.Tensor,
    depths: Any,
    stacks: Callable[[str, int], TinyTransformer],
    names: dict[str, str],
    check: Callable[[str, TinyTransformer, torch.Tensor, Any], dict[str, float]] | None = None,
) -> dict[str, np.ndarray]:
    """Per depth L of ``depths`` and attention kernel of ``names`` (kernel -> variable name), the mean token
    correlation (:func:`~analysis.theory.softmax_alternatives.mean_token_correlation`) of the token kernel
    ``mean_b X_L X_L^T`` of ``stacks(kernel, L)`` on the batch ``x`` (B, T, d); ``check(kernel, model, y, cache)``
    adds named per-depth values measured on that stack, its output ``y`` and every layer's attention pattern
    (``cache``, ``blocks.<l>.attn.hook_pattern``, from the same forward pass). Returns one array per name, by depth."""
    from analysis.theory import softmax_alternatives as th
    from analysis.zoo.hooks import run_with_cache

    out = {name: np.empty(len(depths)) for name in names.values()}
    for i, depth in enumerate(depths):
        patterns = [f"blocks.{layer}.attn.hook_pattern" for layer in range(depth)]
        for kernel, name in names.items():
            model = stacks(kernel, depth)
            with torch.no_grad():
                y, cache = run_with_cache(model, x, names=patterns)
            out[name][i] = th.mean_token_correlation(torch.einsum("btd,bsd->ts", y, y).numpy() / x.shape[0])
            for key, value in (check(kernel, model, y, cache) if check is not None else {}).items():
                out.setdefault(key, np.empty(len(depths)))[i] = value
    return out


def stacks_setting(width: int, tokens: int, depths: Any, init: str) -> str:
    """The words of a claim on the skipless stacks of :func:`stack_correlations` (width, initialisation, tokens,
    depths)."""
    return (
        f"skipless attention-only stacks (width {width}, one head, {init}), {tokens} causal Gaussian tokens, depths "
        f"{list(depths)}"
    )
