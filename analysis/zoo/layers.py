"""The tiny transformer's small layers: :class:`Norm` (LayerNorm or RMSNorm with hooks on its input and output),
the MLP's nonlinearities and :class:`MLP`, and the rotary position embedding (:func:`rope_rotate` with its cached
angle tables, :func:`rope_table`). Shapes: ``B`` batch, ``T`` sequence, ``H`` heads, ``dh`` head size, ``d`` model
width.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch import nn

from analysis.zoo.hooks import HookPoint
from analysis.zoo.model_config import ModelConfig


# ------------------------------------------------------------------------------------------------
# Norms
# ------------------------------------------------------------------------------------------------
class Norm(nn.Module):
    """LayerNorm or RMSNorm over the last axis, with hooks on its input and output.

    ``out_scale`` is a fixed multiplier of the output (LayerNorm scaling uses 1/sqrt(l)).
    Hooks: ``hook_in`` (the norm's input, e.g. the pre-norm activation whose RMS the prompt-forgetting
    bound needs away from zero) and ``hook_normalized`` (the output).
    """

    def __init__(self, width: int, kind: str, eps: float, bias: bool, out_scale: float = 1.0) -> None:
        super().__init__()
        self.kind, self.eps, self.out_scale = kind, eps, out_scale
        self.weight = nn.Parameter(torch.ones(width))
        self.bias = nn.Parameter(torch.zeros(width)) if (bias and kind == "layernorm") else None
        self.hook_in = HookPoint()
        self.hook_normalized = HookPoint()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.hook_in(x)
        if self.kind == "layernorm":
            y = F.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)
        else:
            y = F.rms_norm(x, x.shape[-1:], self.weight, self.eps)
        if self.out_scale != 1.0:
            y = y * self.out_scale
        return self.hook_normalized(y)


def _activation(name: str):
    return {
        "gelu": F.gelu,
        "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),  # GPT-2's "gelu_new"
        "relu": F.relu,
        "silu": F.silu,
        "tanh": torch.tanh,
        "identity": lambda x: x,
        "softmax": lambda x: torch.softmax(x, dim=-1),  # over the hidden units: the MLP as a softmax memory
    }[name]


class MLP(nn.Module):
    """``W_out f(W_in x)``, or with ``activation="bilinear"`` ``W_out ((W_in x) * (W_gate x))``: the bilinear MLP, a
    quadratic form per output, ``y_o = x^T B_o x`` with ``B_o = sum_k W_out[o, k] sym(w_k g_k^T)`` (w_k, g_k the k-th
    rows of W_in, W_gate; :func:`analysis.theory.softmax_alternatives.bilinear_interaction`). ``W_gate`` is drawn
    right after ``W_out`` (fan-in like ``W_in``)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.W_in = nn.Linear(cfg.d_model, cfg.mlp_width, bias=cfg.bias)
        self.W_out = nn.Linear(cfg.mlp_width, cfg.d_model, bias=cfg.bias)
        self.bilinear = cfg.activation == "bilinear"
        self.act = None if self.bilinear else _activation(cfg.activation)
        self.hook_pre = HookPoint()  # (B, T, d_mlp) pre-activation (bilinear: W_in x)
        if self.bilinear:
            self.W_gate = nn.Linear(cfg.d_model, cfg.mlp_width, bias=cfg.bias)
            self.hook_gate = HookPoint()  # (B, T, d_mlp) W_gate x
        self.hook_post = HookPoint()  # (B, T, d_mlp) post-activation (bilinear: the product)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pre = self.hook_pre(self.W_in(x))
        post = pre * self.hook_gate(self.W_gate(x)) if self.bilinear else self.act(pre)
        return self.W_out(self.hook_post(post))


# ------------------------------------------------------------------------------------------------
# Rotary positions
# ------------------------------------------------------------------------------------------------
def rope_rotate(x: torch.Tensor, base: float) -> torch.Tensor:
    """Rotary position embedding of ``x`` (B, T, H, dh): pairs (i, i + dh/2) rotate by angle t * base^(-2i/dh).

    ``[x1 cos - x2 sin, x1 sin + x2 cos]`` with the angle tables of :func:`rope_table`; without autograd the
    halves are written straight into the output (the same four products and two sums, so the same bits as the
    concatenating form autograd needs)."""
    B, T, H, dh = x.shape
    half = dh // 2
    cos, sin = rope_table(T, dh, float(base), x.dtype, x.device)
    x1, x2 = x[..., :half], x[..., half:]
    if torch.is_grad_enabled() and x.requires_grad:
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)  # (B, T, H, dh)
    out = torch.empty_like(x, memory_format=torch.contiguous_format)
    o1, o2 = out[..., :half], out[..., half:]
    torch.mul(x1, cos, out=o1).sub_(x2 * sin)
    torch.mul(x1, sin, out=o2).add_(x2 * cos)
    return out


@functools.lru_cache(maxsize=64)
def rope_table(
    T: int, dh: int, base: float, dtype: torch.dtype, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(cos, sin)`` of the rotary angles ``t * base^(-2i/dh)`` (1, T, 1, dh/2), computed in float64 and cast
    to ``dtype``; kept per shape, dtype and device (read-only, never autograd leaves or inference tensors, so
    a table made under ``torch.inference_mode`` serves training too)."""
    with torch.inference_mode(False), torch.no_grad():
        half = dh // 2
        inv_freq = base ** (-torch.arange(half, dtype=torch.float64, device=device) * 2.0 / dh)  # (dh/2,)
        angle = torch.arange(T, dtype=torch.float64, device=device)[:, None] * inv_freq  # (T, dh/2)
        return angle.cos().to(dtype)[None, :, None, :], angle.sin().to(dtype)[None, :, None, :]
