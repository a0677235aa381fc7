"""Our attention function inside a Hugging Face ``transformers`` model.

Attention is computed by :func:`workbench_attention`, registered with ``transformers`` under the name
``"workbench"`` (``ATTN_IMPLEMENTATION``) and selected on the wrapped model. It is the eager computation
``softmax(scale * q k^T + mask) v`` with hook points for ``hook_q``/``hook_k``/``hook_v`` (B, T, H, dh),
``hook_attn_scores`` (B, H, T, T; pre-softmax logits with ``-inf`` where masked, as in the zoo), ``hook_pattern``
and ``hook_z``, and it adds the probe's ``attn_bias`` to the logits. So patterns are observed *and* can be
intervened on, exactly as in :class:`~analysis.zoo.transformer.TinyTransformer`. It finds the hook points and the
bias of the adapter whose forward pass is running through the context variable ``_CURRENT``
(:class:`~analysis.zoo.hf_adapter.HFModel` sets it).
"""

from __future__ import annotations

import contextvars
from typing import Any

import torch
from torch import nn

from analysis.zoo.hf_loading import _require_transformers

ATTN_IMPLEMENTATION = "workbench"

# the adapter (an HFModel) whose forward pass is running (our attention function finds its hook points here)
_CURRENT: contextvars.ContextVar[nn.Module | None] = contextvars.ContextVar("workbench_hf_model", default=None)


def workbench_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eager softmax attention with our hook points; ``query`` etc. are (B, H, T, dh).

    ``attention_mask`` is what ``transformers`` builds for eager attention: ``None``, or additive
    (B, 1, T, S) with the dtype's minimum where a key is hidden (or boolean, True = visible).
    Returns ``(attn_output (B, T, H, dh), weights (B, H, T, S))`` as ``transformers`` expects.
    """
    if scaling is None:
        scaling = query.shape[-1] ** -0.5
    adapter = _CURRENT.get()
    points = adapter._attn_points.get(id(module)) if adapter is not None else None
    bias = adapter._bias_for(id(module)) if adapter is not None else None

    if points is not None:
        q = points["hook_q"](query.transpose(1, 2)).transpose(1, 2)  # hooks see (B, T, H, dh)
        k = points["hook_k"](key.transpose(1, 2)).transpose(1, 2)
        v = points["hook_v"](value.transpose(1, 2)).transpose(1, 2)
    else:
        q, k, v = query, key, value
    scores = (q @ k.transpose(-1, -2)) * scaling  # (B, H, T, S)
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            visible = attention_mask
        else:
            visible = attention_mask > torch.finfo(attention_mask.dtype).min / 2
            scores = scores + attention_mask.masked_fill(~visible, 0.0).to(scores.dtype)
        scores = scores.masked_fill(~visible, float("-inf"))
    if bias is not None:
        scores = scores + bias.to(scores.dtype)
    if points is not None:
        scores = points["hook_attn_scores"](scores)
    pattern = torch.softmax(scores, dim=-1)
    if module.training and dropout > 0:
        pattern = nn.functional.dropout(pattern, p=dropout)
    if points is not None:
        pattern = points["hook_pattern"](pattern)
    z = (pattern @ v).transpose(1, 2)  # (B, T, H, dh)
    if points is not None:
        z = points["hook_z"](z)
    return z.contiguous(), pattern


def _register_attention() -> None:
    transformers = _require_transformers()
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask

    del transformers
    AttentionInterface.register(ATTN_IMPLEMENTATION, workbench_attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(ATTN_IMPLEMENTATION, eager_mask)  # additive masks, never skipped
