"""The tiny-transformer zoo: one decoder-only model whose every theory-relevant knob is a config field.

Read it top to bottom: :class:`ModelConfig` (every field documented), the norms, attention, MLP,
:class:`Block` (where norm placement lives) and :class:`TinyTransformer`. Shapes are commented as
``B`` batch, ``T`` sequence, ``H`` heads, ``dh`` head size, ``d`` model width.

Residual block, written once for all placements (``s`` = ``branch_scale``, ``a`` = DeepNorm's alpha,
``N`` = a norm, ``F`` = attention or MLP)::

    pre   x + s F(N(x))                 peri  x + s N_out(F(N(x)))
    post  N(a x + s F(x))               none  x + s F(x)
    mix   post in the first ``mix_post_layers`` layers, pre after (Mix-LN)

With a residual switched off the ``x`` (or ``a x``) term is dropped. Every intermediate value passes
through a named :class:`~analysis.zoo.hooks.HookPoint`; attention patterns are materialised whenever a
hook watches the attention internals or a bias is passed. Only where nothing probes (the trainer sets
``model.allow_fused = True`` while it trains) may softmax attention take the fused kernel, so a cached
run and a plain forward pass give bit-identical outputs as long as one (B, H, T, T) matrix is at most
``AUTO_BLOCK_BYTES`` (8 MB); above that an unwatched forward computes attention in row blocks (see below)
and agrees with a watched one to float rounding (summation order), not bit for bit.

Long sequences. ``model.query_block = R`` computes materialised attention in blocks of ``R`` query
rows, each against the keys it can see, so memory grows like ``R T`` instead of ``T^2``; the outputs
equal the whole-matrix computation up to floating-point summation order, and score/pattern hooks see
one block at a time (``HookPoint.rows``, :mod:`analysis.zoo.hooks`). A bias that is itself ``T x T``
would defeat that: :class:`PrefixKeyBias` describes "a value per query row on the first ``n`` keys" in
``O(T)`` memory and hands each block its slice.
"""

from __future__ import annotations

import functools
import math
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import torch
import torch.nn.functional as F
from torch import nn

from analysis.core.config import BaseConfig, param
from analysis.core.validation import check_float, check_int
from analysis.zoo.hooks import HookPoint, name_hook_points
from analysis.zoo.recurrent import (
    FORMS,
    Decay,
    FeatureMap,
    WriteRule,
    favor_projection,
    feature_map,
    mix,
    retnet_decays,
    unit_rows,
)

InputKind = Literal["tokens", "vectors", "embedded"]
OutputKind = Literal["lm", "linear", "none"]
Activation = Literal["gelu", "gelu_tanh", "relu", "silu", "tanh", "identity", "softmax", "bilinear"]
NormPlacement = Literal["pre", "post", "peri", "mix", "none"]
NormType = Literal["layernorm", "rmsnorm"]
PatternKernel = Literal[
    "softmax",
    "linear",
    "sigmoid",
    "ssmax",
    "uniform",
    "sparsemax",
    "k_interval",
    "sa_softmax",
    "softplus_l1",
    "shaped",
    "cog",
]  # kernels with a T x T pattern
AttentionKernel = Literal[PatternKernel, "recurrent"]  # every value of ModelConfig.attention (flattened)
KIntervalMode = Literal["interpolate", "round"]
LoopUnit = Literal["stack", "block"]
Positional = Literal["none", "learned", "rope"]
InitScheme = Literal["fan_in", "gpt2", "mimetic"]
DType = Literal["float64", "float32", "bfloat16", "float16"]

NORM_PLACEMENTS = typing.get_args(NormPlacement)
NORM_TYPES = typing.get_args(NormType)
ATTENTION_KERNELS = typing.get_args(PatternKernel)  # the kernels of Attention (hook_attn_scores, hook_pattern)
TOKEN_MIXERS = typing.get_args(AttentionKernel)  # every value of ModelConfig.attention
POSITIONAL = typing.get_args(Positional)
ACTIVATIONS = typing.get_args(Activation)
INPUTS = typing.get_args(InputKind)
OUTPUTS = typing.get_args(OutputKind)
INITS = typing.get_args(InitScheme)
DTYPES = {name: getattr(torch, name) for name in typing.get_args(DType)}  # "float64" -> torch.float64, ...


@dataclass(frozen=True)
class ModelConfig(BaseConfig):
    """Every architectural knob of :class:`TinyTransformer`; the weights are a function of this config.

    The fields' declarations say what each one allows (choices, bounds); :meth:`validate` adds the
    rules between fields. ``to_dict()`` keys cached checkpoints, so names, order and defaults are
    fixed; ints given for float fields are kept as ints for the same reason.
    """

    FLOATS_FROM_INTS: ClassVar[bool] = False

    # --- input / output -------------------------------------------------------------------------
    input: InputKind = param(
        "tokens", "tokens: embed ids | vectors: linear read-in of d_in | embedded: identity (d_in = d_model)"
    )
    vocab_size: int = param(64, "token vocabulary (input tokens or output lm: >= 2)")
    d_in: int = param(0, "width of real-vector inputs (input vectors: >= 1; embedded: 0 or d_model)", minimum=0)
    output: OutputKind = param(
        "lm", "lm: logits over vocab | linear: read-out of width d_out | none: final residual stream"
    )
    d_out: int = param(0, "read-out width (output linear: >= 1)", minimum=0)
    # --- shape ----------------------------------------------------------------------------------
    d_model: int = param(64, "residual-stream width d", minimum=1)
    n_layers: int = param(2, "depth L", minimum=0)
    n_heads: int = param(4, "heads H per layer", minimum=1)
    d_head: int | None = param(
        None, "head size dh; None -> d_model // n_heads (then n_heads must divide d_model)", minimum=1
    )
    d_mlp: int | None = param(None, "MLP hidden width; None -> 4 d_model; 0 -> attention-only", minimum=0)
    activation: Activation = param(
        "gelu",
        "MLP nonlinearity (softmax: over the hidden units, the MLP read as a key-value memory; bilinear: no "
        "nonlinearity, the product of two linear maps, W_out ((W_in x) * (W_gate x)), a GLU without its gate's "
        "activation)",
    )
    bias: bool = param(False, "biases in linear layers and LayerNorm")
    # --- normalisation --------------------------------------------------------------------------
    norm: NormPlacement = param("pre", "placement: pre | post | peri | mix | none")
    mix_post_layers: int | None = param(
        None, "mix: number of leading post-LN layers (<= n_layers); None -> round(L / 4)", minimum=0
    )
    norm_type: NormType = param("layernorm", "layernorm | rmsnorm")
    norm_eps: float = param(1e-5, "epsilon of every norm", minimum=0.0)
    ln_scaling: bool = param(
        False, "LayerNorm scaling (Curse of Depth): block l's norms output times 1/sqrt(l), l = 1..L"
    )
    deepnorm: bool = param(
        False, "DeepNorm (post only): skip times alpha = (2L)^(1/4), init of V, O, MLP times beta = (8L)^(-1/4)"
    )
    qk_norm: bool = param(False, "normalise queries and keys per head (over dh) before the dot product")
    final_norm: bool | None = param(None, "norm before the head; None -> on for pre/peri/mix, off for post/none")
    # --- attention ------------------------------------------------------------------------------
    attention: AttentionKernel = param(
        "softmax",
        "softmax | linear (unnormalised) | sigmoid | ssmax (logits x s ln n) | uniform (zero logits) | sparsemax "
        "(the logits' Euclidean projection onto the simplex: exact zeros) | k_interval (softmax with the "
        "exponential read off a per-row grid of K + 1 values) | sa_softmax (self-adjusting: z * softmax(z)) | "
        "softplus_l1 (softplus(z) over its row's l1 norm) | shaped (alpha I + beta softmax(z) - gamma C, C the "
        "uniform weights over the visible keys, per-head learned (alpha, beta, gamma) from (1, 1, 1)) | cog "
        "(Cog attention's SignExp: sign(z) e^|z| over its row's sum of e^|z|, signed weights with |w| on the simplex)",
    )
    logit_scale: float | None = param(None, "multiplies q.k; None -> 1 / sqrt(dh)")
    ssmax_s: float = param(1.0, "SSMax: logits multiplied by ssmax_s * ln(number of visible keys)")
    sigmoid_bias: float = param(0.0, "sigmoid attention: weights sigmoid(logit + sigmoid_bias)")
    causal: bool = param(True, "causal mask (False: every token sees every token)")
    # --- recurrent-state mixer (attention "recurrent", analysis/zoo/recurrent.py) and looping ----------
    # Added after checkpoints were stored: omit_at_default keeps them out of to_dict() (and so out of
    # every existing cache key) while they hold their defaults.
    write_rule: WriteRule = param(
        "additive", "recurrent: additive S += v k^T | delta S += beta (v - S k) k^T", omit_at_default=True
    )
    delta_beta: float | None = param(
        None,
        "delta rule: fixed write strength beta in (0, 2]; None -> per token sigmoid(w . x) per head",
        maximum=2.0,
        omit_at_default=True,
    )
    decay: Decay = param(
        "none",
        "recurrent: none | fixed (a learned scalar per head, RetNet init) | gated (sigmoid(w . x_t + b) per head)",
        omit_at_default=True,
    )
    feature_map: FeatureMap = param(
        "identity",
        "recurrent: phi of q and k: identity | elu1 (elu + 1) | favor (positive random features)",
        omit_at_default=True,
    )
    n_features: int = param(64, "favor: number m of random features", minimum=1, omit_at_default=True)
    state_norm: bool = param(
        False,
        "recurrent: read-out divided by q . (decayed sum of keys): normalised linear attention",
        omit_at_default=True,
    )
    loops: int = param(
        1, "weight-tied looping: the stack (or each block) applied this many times", minimum=1, omit_at_default=True
    )
    loop_unit: LoopUnit = param("stack", "what loops repeat: the whole stack | each block", omit_at_default=True)
    # --- K-interval attention (added later) ----------------------------------------------------------
    k_interval: int = param(
        16,
        "k_interval attention: the grid's intervals K; each row's exponential is read off K + 1 values spaced "
        "evenly from its largest to its smallest visible logit",
        minimum=1,
        maximum=1 << 20,
        omit_at_default=True,
    )
    k_interval_mode: KIntervalMode = param(
        "interpolate",
        "k_interval: linear interpolation between the two nearest grid values | hard rounding to the nearest one",
        omit_at_default=True,
    )
    # --- positional logit bias and KV shifting (attention kernels with a pattern; added later) -----
    rel_pos: int = param(
        0,
        "per-head learned relative-position logit bias b_h[i - j] over offsets |i - j| < rel_pos (farther "
        "keys share the edge offset's value), added to the logits before the kernel; 0 = off",
        minimum=0,
        omit_at_default=True,
    )
    zero_query: bool = param(
        False,
        "W_q zero at initialisation (set after every draw, so no other weight moves): zero logits, so softmax "
        "starts uniform and shaped attention at the identity",
        omit_at_default=True,
    )
    kv_shift: bool = param(
        False,
        "KV shifting (Xu et al.): per head k'_t = a1 k_t + a2 k_(t-1), v'_t = b1 v_t + b2 v_(t-1) with learned "
        "scalars (init a1 = b1 = 1, a2 = b2 = 0; k_(-1) = 0); causal only",
        omit_at_default=True,
    )
    # --- residual stream ------------------------------------------------------------------------
    attn_residual: bool = param(True, "skip connection around attention")
    mlp_residual: bool = param(True, "skip connection around the MLP")
    branch_scale: float = param(1.0, "multiplies every sublayer output (e.g. 1/sqrt(L))")
    # --- positions ------------------------------------------------------------------------------
    pos: Positional = param("none", "none | learned (absolute, max_len) | rope")
    max_len: int = param(1024, "longest sequence for learned positions", minimum=1)
    rope_base: float = param(10000.0, "RoPE frequency base (> 1)")
    # --- numerics and initialisation ------------------------------------------------------------
    init: InitScheme = param(
        "fan_in",
        "fan_in: N(0, 1/fan_in), embeddings N(0, 1) | gpt2: N(0, init_std^2), out-proj / sqrt(2L) | mimetic: "
        "fan_in, then per head W_q^T W_k = alpha Z + beta I and W_o W_v = alpha' Z' - beta' I (Z, Z' i.i.d. "
        "N(0, 1/d); the top head-size singular directions when a head is narrower than d)",
    )
    init_std: float = param(0.02, "gpt2 init only (> 0)")
    mimetic_qk: tuple[float, float] = param(
        (0.7, 0.7), "mimetic init: (alpha, beta) of W_q^T W_k = alpha Z + beta I", minimum=0.0, omit_at_default=True
    )
    mimetic_vo: tuple[float, float] = param(
        (0.4, 0.4), "mimetic init: (alpha', beta') of W_o W_v = alpha' Z' - beta' I", minimum=0.0, omit_at_default=True
    )
    dtype: DType = param("float32", "float64 | float32 | bfloat16 | float16")
    seed: int = param(0, "the initial weights are a function of this seed only", minimum=0)

    def validate(self) -> None:
        """The field checks, then the rules between fields (each error names its field)."""
        super().validate()
        if self.d_head is None and self.d_model % self.n_heads:
            raise ValueError(
                f"d_model must be divisible by n_heads, got d_model={self.d_model}, n_heads={self.n_heads}"
            )
        if self.input == "tokens" or self.output == "lm":
            check_int("vocab_size", self.vocab_size, minimum=2)
        if self.input == "vectors":
            check_int("d_in", self.d_in, minimum=1)
        if self.input == "embedded" and self.d_in not in (0, self.d_model):
            raise ValueError(f"d_in must equal d_model ({self.d_model}) for input 'embedded', got {self.d_in}")
        if self.output == "linear":
            check_int("d_out", self.d_out, minimum=1)
        if self.mix_post_layers is not None:
            check_int("mix_post_layers", self.mix_post_layers, maximum=self.n_layers)
            if self.norm != "mix":
                raise ValueError(f"mix_post_layers is only used with norm 'mix', got norm={self.norm!r}")
        if self.deepnorm and self.norm != "post":
            raise ValueError(f"deepnorm requires norm 'post' (DeepNorm is a Post-LN scheme), got {self.norm!r}")
        check_float("rope_base", self.rope_base, minimum=1.0, strict_minimum=True)
        if self.pos == "rope" and self.head_size % 2:
            got = (
                f"d_head={self.d_head}"
                if self.d_head is not None
                else (f"d_model / n_heads = {self.d_model} / {self.n_heads} = {self.head_size}")
            )
            raise ValueError(f"pos 'rope' needs an even head size, got {got}")
        check_float("init_std", self.init_std, minimum=0.0, strict_minimum=True)
        defaults = {s.name: s.default for s in self.field_specs()}
        for name in ("mimetic_qk", "mimetic_vo"):
            if self.init != "mimetic" and getattr(self, name) != defaults[name]:
                raise ValueError(f"{name} is only used with init 'mimetic', got init={self.init!r}")
        self._validate_recurrent()

    def _validate_recurrent(self) -> None:
        """The recurrent mixer's fields are set only where they act (so no two keys name one model)."""
        defaults = {s.name: s.default for s in self.field_specs()}
        if self.attention != "recurrent":
            for name in ("write_rule", "delta_beta", "decay", "feature_map", "n_features", "state_norm"):
                if getattr(self, name) != defaults[name]:
                    raise ValueError(
                        f"{name} is only used with attention 'recurrent', got attention={self.attention!r}"
                    )
        elif not self.causal:
            raise ValueError("causal must be true for attention 'recurrent' (a recurrent state reads the past only)")
        if self.delta_beta is not None:
            check_float("delta_beta", self.delta_beta, minimum=0.0, strict_minimum=True)
            if self.write_rule != "delta":
                raise ValueError(f"delta_beta is only used with write_rule 'delta', got {self.write_rule!r}")
        if self.n_features != defaults["n_features"] and self.feature_map != "favor":
            raise ValueError(f"n_features is only used with feature_map 'favor', got {self.feature_map!r}")
        if self.state_norm and self.feature_map == "identity":
            raise ValueError("state_norm needs a positive feature_map (elu1 | favor): q . k may vanish for identity")
        if self.loop_unit != defaults["loop_unit"] and self.loops == 1:
            raise ValueError("loop_unit is only used with loops > 1")
        for name in ("rel_pos", "kv_shift"):
            if getattr(self, name) != defaults[name] and self.attention == "recurrent":
                raise ValueError(f"{name} needs an attention kernel with a pattern, got attention 'recurrent'")
        if self.kv_shift and not self.causal:
            raise ValueError("kv_shift needs causal attention (k'_t mixes in k_(t-1), the past)")

    # derived values ------------------------------------------------------------------------------
    @property
    def head_size(self) -> int:
        return self.d_head if self.d_head is not None else self.d_model // self.n_heads

    @property
    def mlp_width(self) -> int:
        return 4 * self.d_model if self.d_mlp is None else self.d_mlp

    @property
    def scale(self) -> float:
        return self.logit_scale if self.logit_scale is not None else 1.0 / math.sqrt(self.head_size)

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    @property
    def use_final_norm(self) -> bool:
        if self.final_norm is not None:
            return self.final_norm
        return self.norm in ("pre", "peri", "mix")

    @property
    def n_mix_post(self) -> int:
        if self.mix_post_layers is not None:
            return self.mix_post_layers
        return int(round(self.n_layers / 4))

    def placement(self, layer: int) -> str:
        """Norm placement of block ``layer`` (0-based): resolves ``mix`` into post/pre."""
        if self.norm == "mix":
            return "post" if layer < self.n_mix_post else "pre"
        return self.norm

    @property
    def deepnorm_alpha(self) -> float:
        return (2.0 * self.n_layers) ** 0.25 if self.deepnorm else 1.0

    @property
    def deepnorm_beta(self) -> float:
        return (8.0 * self.n_layers) ** -0.25 if self.deepnorm else 1.0


def one_head_layer(d_model: int, **fields: Any) -> ModelConfig:
    """The config of the smallest model the theory sections reason about: one layer of one attention head, no MLP
    (``d_mlp=0``), the inputs taken in as they are (``input="embedded"``) and the final residual stream given out
    (``output="none"``); ``fields`` set every other knob and may override these (``d_mlp``, ``input``,
    ``output``). Equal to the :class:`ModelConfig` written out field by field, so its weights and cache keys are
    the same."""
    base = dict(input="embedded", output="none", d_model=d_model, n_layers=1, n_heads=1, d_mlp=0)
    return ModelConfig(**{**base, **fields})


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


# ------------------------------------------------------------------------------------------------
# Attention
# ------------------------------------------------------------------------------------------------
def sparsemax(z: torch.Tensor) -> torch.Tensor:
    """Sparsemax over the last dimension (Martins and Astudillo 2016): the Euclidean projection of ``z`` onto the
    probability simplex, ``max(z - tau, 0)`` with ``tau`` such that each row sums to 1. With the logits sorted
    decreasingly, ``z_(1) >= z_(2) >= ...``, the support is the largest ``k`` with ``1 + k z_(k) > sum_{i<=k} z_(i)``
    and ``tau = (sum_{i<=k} z_(i) - 1) / k``. A ``-inf`` logit (a masked key) gets weight exactly 0, and so does every
    key more than ``tau`` below the top: unlike softmax, sparsemax gives exact zeros."""
    zs = torch.sort(z, dim=-1, descending=True).values
    seen = torch.isfinite(zs)
    csum = torch.where(seen, zs, torch.zeros((), dtype=z.dtype, device=z.device)).cumsum(-1)
    k = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype, device=z.device)
    k_z = (seen & (1.0 + k * zs > csum)).sum(-1, keepdim=True)  # the support's size (>= 1 where a key is seen)
    tau = (csum.gather(-1, (k_z - 1).clamp(min=0)) - 1.0) / k_z.to(z.dtype)
    return torch.clamp(z - tau, min=0.0)


def k_interval_softmax(z: torch.Tensor, K: int, mode: str) -> torch.Tensor:
    """K-interval softmax over the last dimension (after the K-interval attention paper): per row, the exponential
    ``e^(z - M)`` is read off the grid ``e^(-k h)``, ``k = 0..K``, ``h = (M - m) / K`` between the row's largest and
    smallest visible logits ``M``, ``m``; ``mode="round"`` takes the nearest grid value, ``"interpolate"`` the linear
    interpolation between the two around it (exact at the grid points); then each row is normalised. A row whose
    visible logits are all equal (``h = 0``) is uniform over them, as softmax; ``-inf`` logits get weight 0."""
    seen = torch.isfinite(z)
    zero = torch.zeros((), dtype=z.dtype, device=z.device)
    top = torch.where(seen, z, torch.full((), float("-inf"), dtype=z.dtype, device=z.device)).amax(-1, keepdim=True)
    low = torch.where(seen, z, torch.full((), float("inf"), dtype=z.dtype, device=z.device)).amin(-1, keepdim=True)
    h = (top - low) / K
    flat = h <= 0
    h = torch.where(flat, torch.ones((), dtype=z.dtype, device=z.device), h)
    u = torch.where(seen, (top - z) / h, zero)  # grid coordinate in [0, K]
    if mode == "round":
        approx = torch.exp(-torch.round(u) * h)
    else:
        k0 = torch.clamp(torch.floor(u), max=K - 1)
        t = u - k0
        approx = (1 - t) * torch.exp(-k0 * h) + t * torch.exp(-(k0 + 1) * h)
    approx = torch.where(seen & ~flat, approx, torch.where(seen, torch.ones((), dtype=z.dtype, device=z.device), zero))
    return approx / approx.sum(-1, keepdim=True)


def shift_mix(x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """KV shifting of ``x`` (B, T, H, dh) with per-head ``weights`` (H, 2): ``w0 x_t + w1 x_(t-1)``, ``x_(-1) = 0``."""
    prev = F.pad(x, (0, 0, 0, 0, 1, 0))[:, :-1]  # (B, T, H, dh): x shifted one step later, zero first
    return weights[:, 0, None] * x + weights[:, 1, None] * prev


class PrefixKeyBias:
    """Additive logit bias ``b[i, j] = values[i]`` for keys ``j < n_keys`` and 0 for the rest, kept as the
    ``(T,)`` vector ``values``: what a query row adds to a fixed prefix of keys (e.g. the prompt), in
    ``O(T)`` memory. ``block(r0, r1, k)`` is the ``(r1 - r0, k)`` slice ``b[r0:r1, :k]``; ``dense()`` the
    full ``(T, T)`` matrix (for models that take only tensors)."""

    def __init__(self, values: torch.Tensor, n_keys: int) -> None:
        if not isinstance(values, torch.Tensor) or values.dim() != 1:
            raise ValueError("values must be a 1-D tensor (one value per query row)")
        check_int("n_keys", n_keys, minimum=0, maximum=values.shape[0])
        self.values, self.n_keys = values, n_keys

    @property
    def shape(self) -> tuple[int, int]:
        return (self.values.shape[0], self.values.shape[0])

    @property
    def dtype(self) -> torch.dtype:
        return self.values.dtype

    def to(self, *args: Any, **kwargs: Any) -> PrefixKeyBias:
        """A copy with ``values.to(*args, **kwargs)`` (a dtype, a device or both, as ``Tensor.to``)."""
        return PrefixKeyBias(self.values.to(*args, **kwargs), self.n_keys)

    def block(self, r0: int, r1: int, k: int) -> torch.Tensor:
        out = torch.zeros(r1 - r0, k, dtype=self.values.dtype, device=self.values.device)
        out[:, : min(self.n_keys, k)] = self.values[r0:r1, None]
        return out

    def dense(self) -> torch.Tensor:
        T = self.values.shape[0]
        return self.block(0, T, T)


def bias_block(attn_bias: Any, r0: int, r1: int, k: int) -> torch.Tensor:
    """Rows ``r0:r1`` and keys ``:k`` of a logit bias: a tensor whose last two dims are ``(T, T)`` (leading
    dims broadcast against ``(B, H)``) or a :class:`PrefixKeyBias`."""
    if isinstance(attn_bias, torch.Tensor):  # a row or key dim of size 1 broadcasts: it is never sliced
        rows = slice(None) if attn_bias.shape[-2] == 1 else slice(r0, r1)
        keys = slice(None) if attn_bias.shape[-1] == 1 else slice(None, k)
        return attn_bias[..., rows, keys]
    return attn_bias.block(r0, r1, k)


# Unwatched materialised attention larger than this (bytes of one (B, H, T, T) matrix) runs in row blocks of about
# this size (Attention._rows_per_block); outputs then equal the whole-matrix ones to float rounding (summation order).
AUTO_BLOCK_BYTES = 8 * 2**20


class Attention(nn.Module):
    """Multi-head attention with a switchable kernel.

    scores = scale * q k^T (+ ssmax factor) (+ bias), masked entries -inf   -> hook_attn_scores (B, H, T, T)
    pattern: softmax/ssmax/uniform -> softmax(scores); sigmoid -> sigmoid(scores + b) on the support;
             sparsemax -> sparsemax(scores) (exact zeros); k_interval -> softmax with a K-value grid of the
             exponential; sa_softmax -> scores * softmax(scores) (SA-Softmax: signed weights, no vanishing
             gradient); softplus_l1 -> softplus(scores) / its row sum (the l1 norm; softplus(-inf) = 0);
             shaped -> alpha I + beta softmax(scores) - gamma C, C softmax's weights at zero logits (uniform over
             the visible keys), (alpha, beta, gamma) = ``shape_coef`` per head, init (1, 1, 1): with zero logits
             (``zero_query``) exactly the identity (the shaped transformer; He & Hofmann's simplified blocks);
             cog -> sign(scores) e^|scores| / sum e^|scores| (SignExp: negative weights, |weights| on the
             simplex; flipping one token's sign flips its own output and no other's);
             linear -> scores on the support, 0 elsewhere (no normalisation)   -> hook_pattern
    For every kernel a bias of -inf hides a key (e.g. the query token from itself in ICL layouts).
    ``rel_pos = R``: a learned per-head bias ``b_h[i - j]`` (parameter ``rel_bias``, zeros at init) joins the
    logits with ``attn_bias``. ``kv_shift``: keys and values are replaced by ``a1 k_t + a2 k_(t-1)`` and
    ``b1 v_t + b2 v_(t-1)`` (parameters ``shift_k``, ``shift_v`` of shape (H, 2), init (1, 0)) right after the
    projections, so hook_k and hook_v see the shifted ones.
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        H, dh, d = cfg.n_heads, cfg.head_size, cfg.d_model
        self.W_q = nn.Linear(d, H * dh, bias=cfg.bias)
        self.W_k = nn.Linear(d, H * dh, bias=cfg.bias)
        self.W_v = nn.Linear(d, H * dh, bias=cfg.bias)
        self.W_o = nn.Linear(H * dh, d, bias=cfg.bias)
        if cfg.qk_norm:
            self.q_norm = Norm(dh, cfg.norm_type, cfg.norm_eps, cfg.bias)
            self.k_norm = Norm(dh, cfg.norm_type, cfg.norm_eps, cfg.bias)
        if cfg.rel_pos:  # b_h[i - j]: causal offsets 0..R-1, bidirectional -(R-1)..R-1 (index + R - 1)
            self.rel_bias = nn.Parameter(torch.zeros(H, cfg.rel_pos if cfg.causal else 2 * cfg.rel_pos - 1))
        if cfg.attention == "shaped":  # per head (alpha, beta, gamma) of alpha I + beta softmax - gamma C
            self.shape_coef = nn.Parameter(torch.tensor([[1.0, 1.0, 1.0]] * H))
        if cfg.kv_shift:  # per head (current, previous) weights of the keys and of the values
            self.shift_k = nn.Parameter(torch.tensor([[1.0, 0.0]] * H))
            self.shift_v = nn.Parameter(torch.tensor([[1.0, 0.0]] * H))
        self.hook_q = HookPoint()  # (B, T, H, dh), after KV shift, QK-norm and RoPE
        self.hook_k = HookPoint()
        self.hook_v = HookPoint()
        self.hook_attn_scores = HookPoint()  # (B, H, T, T), pre-softmax logits, -inf where masked
        self.hook_pattern = HookPoint()  # (B, H, T, T), the weights that multiply v
        self.hook_z = HookPoint()  # (B, T, H, dh), pattern @ v
        self.allow_fused = False  # the trainer switches this on; probes always see materialised patterns
        self.query_block: int | None = None  # rows per block of materialised attention (None: all at once)

    def _materialise(self, attn_bias: torch.Tensor | None) -> bool:
        c = self.cfg
        return (
            not self.allow_fused
            or c.attention != "softmax"
            or attn_bias is not None
            or c.rel_pos > 0
            or self.query_block is not None
            or self.hook_attn_scores.active
            or self.hook_pattern.active
        )

    def forward(self, x: torch.Tensor, attn_bias: torch.Tensor | None = None) -> torch.Tensor:
        c = self.cfg
        B, T, _ = x.shape
        H, dh = c.n_heads, c.head_size
        q = self.W_q(x).view(B, T, H, dh)  # (B, T, H, dh)
        k = self.W_k(x).view(B, T, H, dh)
        v = self.W_v(x).view(B, T, H, dh)
        if c.kv_shift:
            k, v = shift_mix(k, self.shift_k), shift_mix(v, self.shift_v)
        if c.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        if c.pos == "rope":
            q, k = rope_rotate(q, c.rope_base), rope_rotate(k, c.rope_base)
        q, k, v = self.hook_q(q), self.hook_k(k), self.hook_v(v)
        qh, kh, vh = (t.transpose(1, 2) for t in (q, k, v))  # (B, H, T, dh)

        if not self._materialise(attn_bias):
            z = F.scaled_dot_product_attention(qh, kh, vh, is_causal=c.causal, scale=c.scale)  # (B, H, T, dh)
        else:
            R = self._rows_per_block(B, H, T, qh.element_size())
            blocks = [self._rows(qh, kh, vh, attn_bias, r0, min(r0 + R, T), T, whole=R >= T) for r0 in range(0, T, R)]
            z = blocks[0] if len(blocks) == 1 else torch.cat(blocks, dim=2)  # (B, H, T, dh)
        z = self.hook_z(z.transpose(1, 2))  # (B, T, H, dh)
        return self.W_o(z.reshape(B, T, H * dh))  # (B, T, d)

    def _rows_per_block(self, B: int, H: int, T: int, itemsize: int) -> int:
        """Query rows per block: ``query_block`` when set; else the whole matrix when a hook watches the scores
        or the pattern (hooks see whole matrices) or when it is at most ``AUTO_BLOCK_BYTES``; else blocks of
        about that size (nothing watches, so only the speed shows: a (B, H, T, T) matrix of tens of MB is
        freshly mapped and page-faulted on every call and streams through memory three times, a block stays
        in the allocator's reused memory and the cache, and causal blocks skip the keys they cannot see)."""
        if self.query_block is not None:
            return self.query_block
        if self.hook_attn_scores.active or self.hook_pattern.active:
            return T
        per_row = B * H * T * itemsize
        return T if per_row * T <= AUTO_BLOCK_BYTES else max(1, AUTO_BLOCK_BYTES // per_row)

    def _rows(self, qh, kh, vh, attn_bias, r0: int, r1: int, T: int, whole: bool) -> torch.Tensor:
        """``z`` of query rows ``r0:r1`` (B, H, r, dh) against the keys they can see (``:r1`` if causal)."""
        c = self.cfg
        B, H = qh.shape[:2]
        K = r1 if c.causal else T
        # One (B, H, r, K) buffer is scaled, biased and masked in place: the same roundings as out-of-place
        # arithmetic, and no T x T temporaries (each is a fresh allocation, page-faulted in, when a hook keeps the
        # scores). None of these in-place ops overwrites a value autograd saved: the product's backward needs q
        # and k, the scaling's and the bias's need nothing of it, and the scores' own grad flows through softmax.
        if c.attention == "uniform":
            scores = torch.zeros(B, H, r1 - r0, K, dtype=qh.dtype, device=qh.device)
        else:
            scores = (qh[:, :, r0:r1] @ kh[:, :, :K].transpose(-1, -2)).mul_(c.scale)  # (B, H, r, K)
        if c.attention == "ssmax":
            scores.mul_(c.ssmax_s * torch.log(self._n_visible(T, qh)[r0:r1]))
        if attn_bias is not None:
            scores.add_(bias_block(attn_bias, r0, r1, K).to(scores.dtype))
        if c.rel_pos:
            scores.add_(self.rel_bias_rows(r0, r1, K)[None])
        rows = None if whole else (r0, r1)
        scores = self.hook_attn_scores(self._mask_rows(scores, r0, r1, K), rows)
        pattern = self.hook_pattern(self.kernel(scores, r0), rows)
        return pattern @ vh[:, :, :K]  # (B, H, r, dh)

    def kernel(self, scores: torch.Tensor, r0: int = 0) -> torch.Tensor:
        """The pattern of ``scores`` (..., K) under this module's attention kernel, row by row over the last axis; a
        logit of ``-inf`` (the mask, or a ``-inf`` bias) is a key the row does not see, weight 0. ``r0``: the query
        index of the first row (shaped attention's identity term sits on key ``r0 + row``); heads on axis -3."""
        c = self.cfg
        if c.attention in ("softmax", "ssmax", "uniform"):
            return torch.softmax(scores, dim=-1)
        if c.attention == "sigmoid":
            return torch.sigmoid(scores + c.sigmoid_bias)  # sigmoid(-inf) = 0 off the support
        if c.attention == "sparsemax":
            return sparsemax(scores)
        if c.attention == "k_interval":
            return k_interval_softmax(scores, c.k_interval, c.k_interval_mode)
        if c.attention == "shaped":
            return self._shaped(scores, r0)
        if c.attention == "softplus_l1":  # softplus(-inf) = 0: unseen keys weigh nothing
            f = F.softplus(scores)
            return f / f.sum(-1, keepdim=True)
        unseen = scores == float("-inf")
        zero = torch.zeros((), dtype=scores.dtype, device=scores.device)
        if c.attention == "cog":  # softmax of |z| (unseen keys stay -inf: weight 0) times sign(z), 0 where unseen
            magnitude = torch.softmax(torch.where(unseen, scores, scores.abs()), dim=-1)
            return torch.where(unseen, zero, torch.sign(scores) * magnitude)
        if c.attention == "sa_softmax":  # z * softmax(z): 0 where unseen (not -inf * 0)
            return torch.where(unseen, zero, scores * torch.softmax(scores, dim=-1))
        return torch.where(unseen, zero, scores)  # linear

    def _shaped(self, scores: torch.Tensor, r0: int) -> torch.Tensor:
        """``alpha I + beta softmax(scores) - gamma C`` over heads (axis -3), each term zero on unseen keys."""
        unseen = scores == float("-inf")
        r, K = scores.shape[-2:]
        eye = torch.arange(r0, r0 + r, device=scores.device)[:, None] == torch.arange(K, device=scores.device)
        eye = (eye & ~unseen).to(scores.dtype)
        uniform = torch.softmax(torch.where(unseen, scores, torch.zeros_like(scores)), dim=-1)
        a, b, g = (self.shape_coef[:, i, None, None].to(scores.dtype) for i in range(3))  # (H, 1, 1)
        return a * eye + b * torch.softmax(scores, dim=-1) - g * uniform

    def rel_bias_rows(self, r0: int, r1: int, K: int) -> torch.Tensor:
        """(H, r1 - r0, K): the relative-position bias ``b_h[i - j]`` of query rows ``r0:r1`` and keys ``:K``,
        offsets clipped to the table (causal: ``0..R-1``, keys after the query get ``b_h[0]`` and are masked)."""
        R, dev = self.cfg.rel_pos, self.rel_bias.device
        off = torch.arange(r0, r1, device=dev)[:, None] - torch.arange(K, device=dev)[None, :]  # (r, K): i - j
        idx = off.clamp(0, R - 1) if self.cfg.causal else off.clamp(1 - R, R - 1) + R - 1
        return self.rel_bias[:, idx]

    def _mask_rows(self, scores: torch.Tensor, r0: int, r1: int, K: int) -> torch.Tensor:
        """``scores`` (B, H, r1 - r0, K) of query rows ``r0:r1``, set in place to ``-inf`` where a row cannot see
        the key: a causal row sees itself and earlier keys, so only keys ``r0..`` can be hidden and only that
        part is written (the keys before ``r0`` are seen by every row of the block); a bidirectional row sees
        every key, and nothing is written."""
        if self.cfg.causal and r0 < K:
            dev = scores.device
            hide = torch.arange(r0, K, device=dev)[None, :] > torch.arange(r0, r1, device=dev)[:, None]  # (r, K - r0)
            scores[..., r0:].masked_fill_(hide, float("-inf"))
        return scores

    def _n_visible(self, T: int, x: torch.Tensor) -> torch.Tensor:
        if self.cfg.causal:
            n = torch.arange(1, T + 1, dtype=torch.float64, device=x.device)
        else:
            n = torch.full((T,), float(T), dtype=torch.float64, device=x.device)
        return n.to(x.dtype)[:, None]  # (T, 1): one factor per query row


class RecurrentAttention(nn.Module):
    """The recurrent-state token mixer (``attention="recurrent"``; :mod:`analysis.zoo.recurrent`), multi-head.

    q, k, v, W_o as in :class:`Attention` (the same names, so the same initial weights), then per head:
    feature maps on q and k (the delta rule also L2-normalises them, as DeltaNet does, so that
    ``I - beta k k^T`` is a contraction), write strength ``beta`` (a fixed ``delta_beta`` or
    ``sigmoid(W_beta x)``), decay ``alpha`` (a learned scalar per head or ``sigmoid(W_gate x + b)``, both
    initialised at RetNet's ``1 - 2^(-5-h)``), and the state read by q. ``form`` ("parallel", the default,
    or "recurrent", the sequential scan) picks the computation; both give the same numbers to rounding.

    Hooks: ``hook_q``/``hook_k`` (B, T, H, dk) after the feature map (what the state stores and reads),
    ``hook_v`` (B, T, H, dh), ``hook_beta`` and ``hook_log_alpha`` (B, T, H) where used, ``hook_state``
    (B, H, dh, dk: the state after the last token; computed only when watched) and ``hook_z`` (B, T, H, dh).
    """

    def __init__(self, cfg: ModelConfig, layer: int = 0) -> None:
        super().__init__()
        self.cfg = cfg
        H, dh, d = cfg.n_heads, cfg.head_size, cfg.d_model
        self.W_q = nn.Linear(d, H * dh, bias=cfg.bias)
        self.W_k = nn.Linear(d, H * dh, bias=cfg.bias)
        self.W_v = nn.Linear(d, H * dh, bias=cfg.bias)
        self.W_o = nn.Linear(H * dh, d, bias=cfg.bias)
        if cfg.qk_norm:
            self.q_norm = Norm(dh, cfg.norm_type, cfg.norm_eps, cfg.bias)
            self.k_norm = Norm(dh, cfg.norm_type, cfg.norm_eps, cfg.bias)
        if cfg.write_rule == "delta" and cfg.delta_beta is None:
            self.W_beta = nn.Linear(d, H, bias=False)
        decay_logit = torch.logit(retnet_decays(H))  # float64; the model casts it to its dtype
        if cfg.decay == "fixed":
            self.decay_logit = nn.Parameter(decay_logit)  # alpha_h = sigmoid(decay_logit_h)
        elif cfg.decay == "gated":
            self.W_gate = nn.Linear(d, H, bias=False)
            self.gate_bias = nn.Parameter(decay_logit)  # alpha_t = sigmoid(W_gate x_t + gate_bias)
        if cfg.feature_map == "favor":  # fixed draws (a buffer: saved, never trained), one set per layer
            self.register_buffer("proj", favor_projection(dh, cfg.n_features, cfg.seed + 104_729 * (layer + 1)))
        self.hook_q = HookPoint()
        self.hook_k = HookPoint()
        self.hook_v = HookPoint()
        self.hook_beta = HookPoint()
        self.hook_log_alpha = HookPoint()
        self.hook_state = HookPoint()
        self.hook_z = HookPoint()
        self.form = "parallel"  # or "recurrent": the sequential scan (same numbers; TinyTransformer.recurrent_form)
        self.allow_fused = False  # unused: kept so that model-wide switches apply to every mixer
        self.query_block: int | None = None  # unused (the parallel form is whole-matrix)

    def forward(self, x: torch.Tensor, attn_bias: torch.Tensor | None = None) -> torch.Tensor:
        c = self.cfg
        if attn_bias is not None:
            raise ValueError("attention 'recurrent' takes no attention bias (its state has no logits to bias)")
        if self.form not in FORMS:
            raise ValueError(f"form must be one of {list(FORMS)}, got {self.form!r}")
        B, T, _ = x.shape
        H, dh = c.n_heads, c.head_size
        q = self.W_q(x).view(B, T, H, dh)
        k = self.W_k(x).view(B, T, H, dh)
        v = self.W_v(x).view(B, T, H, dh)
        if c.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        if c.pos == "rope":
            q, k = rope_rotate(q, c.rope_base), rope_rotate(k, c.rope_base)
        proj = getattr(self, "proj", None)
        q = feature_map(q, c.feature_map, scale=c.scale, proj=proj)
        k = feature_map(k, c.feature_map, scale=1.0 if c.feature_map == "identity" else c.scale, proj=proj)
        if c.write_rule == "delta":
            q, k = unit_rows(q), unit_rows(k)
        q, k, v = self.hook_q(q), self.hook_k(k), self.hook_v(v)
        beta, log_alpha = self._beta(x), self._log_alpha(x)
        z, state = mix(
            self.form,
            *(t.transpose(1, 2) for t in (q, k, v)),  # (B, H, T, d.)
            beta=None if beta is None else beta.transpose(1, 2),
            log_alpha=None if log_alpha is None else log_alpha.transpose(1, 2),
            normalize=c.state_norm,
        )
        if self.hook_state.active:
            self.hook_state(state)
        z = self.hook_z(z.transpose(1, 2))  # (B, T, H, dh)
        return self.W_o(z.reshape(B, T, H * dh))

    def _beta(self, x: torch.Tensor) -> torch.Tensor | None:
        """(B, T, H) write strengths of the delta rule (None for the additive rule)."""
        c = self.cfg
        if c.write_rule != "delta":
            return None
        if c.delta_beta is not None:
            beta = torch.full((*x.shape[:2], c.n_heads), float(c.delta_beta), dtype=x.dtype, device=x.device)
        else:
            beta = torch.sigmoid(self.W_beta(x))
        return self.hook_beta(beta)

    def _log_alpha(self, x: torch.Tensor) -> torch.Tensor | None:
        """(B, T, H) log-decays (None without decay)."""
        c = self.cfg
        if c.decay == "none":
            return None
        if c.decay == "fixed":
            log_alpha = F.logsigmoid(self.decay_logit).expand(*x.shape[:2], c.n_heads)
        else:
            log_alpha = F.logsigmoid(self.W_gate(x) + self.gate_bias)
        return self.hook_log_alpha(log_alpha)


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


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        super().__init__()
        self.cfg, self.layer = cfg, layer
        self.placement = cfg.placement(layer)
        out_scale = 1.0 / math.sqrt(layer + 1) if cfg.ln_scaling else 1.0
        has_mlp = cfg.mlp_width > 0

        def norm(scale: float = 1.0) -> Norm:
            return Norm(cfg.d_model, cfg.norm_type, cfg.norm_eps, cfg.bias, scale)

        # attributes are assigned in execution order, so hook names list in the order they fire
        self.hook_resid_pre = HookPoint()  # (B, T, d)
        if self.placement != "none":
            self.ln1 = norm(out_scale)
        self.attn = RecurrentAttention(cfg, layer) if cfg.attention == "recurrent" else Attention(cfg)
        if self.placement == "peri":
            self.ln1_out = norm()
        self.hook_attn_out = HookPoint()  # (B, T, d), branch output as added to the stream
        self.hook_resid_mid = HookPoint()
        if has_mlp:
            if self.placement != "none":
                self.ln2 = norm(out_scale)
            self.mlp = MLP(cfg)
            if self.placement == "peri":
                self.ln2_out = norm()
            self.hook_mlp_out = HookPoint()
        else:
            self.mlp = None
        self.hook_resid_post = HookPoint()

    def _sublayer(self, x, fn, n_in, n_out, hook_out, residual: bool) -> torch.Tensor:
        c, p = self.cfg, self.placement
        h = fn(n_in(x) if p in ("pre", "peri") else x)
        if p == "peri":
            h = n_out(h)
        h = hook_out(c.branch_scale * h if c.branch_scale != 1.0 else h)
        if residual:
            h = (c.deepnorm_alpha * x if c.deepnorm else x) + h
        if p == "post":
            h = n_in(h)
        return h

    def forward(self, x: torch.Tensor, attn_bias: torch.Tensor | None = None) -> torch.Tensor:
        c = self.cfg
        x = self.hook_resid_pre(x)
        x = self._sublayer(
            x,
            lambda h: self.attn(h, attn_bias),
            getattr(self, "ln1", None),
            getattr(self, "ln1_out", None),
            self.hook_attn_out,
            c.attn_residual,
        )
        x = self.hook_resid_mid(x)
        if self.mlp is not None:
            x = self._sublayer(
                x,
                self.mlp,
                getattr(self, "ln2", None),
                getattr(self, "ln2_out", None),
                self.hook_mlp_out,
                c.mlp_residual,
            )
        return self.hook_resid_post(x)


# ------------------------------------------------------------------------------------------------
# The model
# ------------------------------------------------------------------------------------------------
def mimetic_heads(attn: nn.Module, c: ModelConfig, gen: torch.Generator) -> None:
    """Mimetic initialisation (Trockman & Kolter 2023) of one attention module, per head h, drawing from ``gen``:
    ``W_q^h^T W_k^h`` is the best rank-``dh`` factorisation of ``alpha Z + beta I`` and ``W_o^h W_v^h`` that of
    ``alpha' Z' - beta' I`` (``Z`` i.i.d. N(0, 1/d); ``M = U S V^T`` split as ``sqrt(S)`` on each side). With one
    head of width d the products are exact."""
    d, H = c.d_model, c.n_heads
    dh = attn.W_q.out_features // H

    def factor(alpha: float, beta: float) -> tuple[torch.Tensor, torch.Tensor]:
        Z = torch.randn(d, d, generator=gen, dtype=torch.float64) / math.sqrt(d)
        U, S, Vh = torch.linalg.svd(alpha * Z + beta * torch.eye(d, dtype=torch.float64))
        root = S[:dh].sqrt()
        return U[:, :dh] * root, root[:, None] * Vh[:dh]  # (d, dh), (dh, d)

    (a_qk, b_qk), (a_vo, b_vo) = c.mimetic_qk, c.mimetic_vo
    for h in range(H):
        rows = slice(h * dh, (h + 1) * dh)
        left, right = factor(a_qk, b_qk)  # W_q^T W_k = left @ right
        attn.W_q.weight[rows].copy_(left.T.to(attn.W_q.weight.dtype))
        attn.W_k.weight[rows].copy_(right.to(attn.W_k.weight.dtype))
        left, right = factor(a_vo, -b_vo)  # W_o W_v = left @ right
        attn.W_o.weight[:, rows].copy_(left.to(attn.W_o.weight.dtype))
        attn.W_v.weight[rows].copy_(right.to(attn.W_v.weight.dtype))


class TinyTransformer(nn.Module):
    """Decoder-only transformer built from a :class:`ModelConfig`; weights are a function of ``cfg.seed``.

    ``forward(inputs, attn_bias=None)``: ``inputs`` are token ids (B, T) or vectors (B, T, d_in);
    ``attn_bias`` is an additive logit bias broadcastable to (B, H, T, T), applied in every layer, or
    a sequence of ``n_layers`` such tensors (``None`` entries for no bias in that layer).
    Returns logits (B, T, vocab), a read-out (B, T, d_out) or the final residual stream (B, T, d).

    Weight-tied looping (``loops = T > 1``): the whole stack (``loop_unit="stack"``) or each block
    (``"block"``) is applied T times with the same weights; every hook point then fires T times per
    forward pass (a cache keeps the last).
    """

    def __init__(self, cfg: ModelConfig, device: str | torch.device | None = None) -> None:
        super().__init__()
        if not isinstance(cfg, ModelConfig):
            raise ValueError(f"cfg must be a ModelConfig, got {type(cfg).__name__}")
        self.config = cfg
        d = cfg.d_model
        # nn.Linear/nn.Embedding draw default weights from the global RNG: build them with the global
        # state saved and restored, then overwrite every weight from our own generator.
        with torch.random.fork_rng(devices=[]):
            self._build(cfg, d)
        self._hook_points = name_hook_points(self)
        self.to(dtype=cfg.torch_dtype)  # draw in the target dtype: float64 models get float64 draws
        self._init_weights()
        self.to(device=device)

    def _build(self, cfg: ModelConfig, d: int) -> None:
        if cfg.input == "tokens":
            self.embed = nn.Embedding(cfg.vocab_size, d)
        elif cfg.input == "vectors":
            self.embed = nn.Linear(cfg.d_in, d, bias=cfg.bias)
        self.hook_embed = HookPoint()  # (B, T, d)
        if cfg.pos == "learned":
            self.pos_embed = nn.Embedding(cfg.max_len, d)
            self.hook_pos_embed = HookPoint()  # (T, d)
        self.blocks = nn.ModuleList(Block(cfg, layer) for layer in range(cfg.n_layers))
        if cfg.use_final_norm:
            self.ln_final = Norm(d, cfg.norm_type, cfg.norm_eps, cfg.bias)
        if cfg.output == "lm":
            self.head = nn.Linear(d, cfg.vocab_size, bias=cfg.bias)
        elif cfg.output == "linear":
            self.head = nn.Linear(d, cfg.d_out, bias=cfg.bias)

    # ---------------------------------------------------------------------------------------------
    def _init_weights(self) -> None:
        """Draw every weight from one generator seeded by ``cfg.seed``, in float64, module by module
        in definition order, so the weights do not depend on the dtype or the device.

        fan_in: ``nn.Linear`` weights N(0, 1/fan_in), embeddings N(0, 1). gpt2: N(0, init_std^2),
        output projections of the residual branches divided by sqrt(2L). Norm gains 1, biases 0.
        DeepNorm multiplies the value, output and MLP weights by beta (Wang et al. 2022).
        """
        c = self.config
        gen = torch.Generator().manual_seed(c.seed)
        beta_names = ("attn.W_v", "attn.W_o", "mlp.W_in", "mlp.W_out")
        out_proj = ("attn.W_o", "mlp.W_out")

        def draw(p: torch.Tensor, std: float) -> None:
            p.copy_((torch.randn(p.shape, generator=gen, dtype=torch.float64) * std).to(p.dtype))

        with torch.no_grad():
            for name, m in self.named_modules():
                if isinstance(m, Norm):
                    m.weight.fill_(1.0)
                    if m.bias is not None:
                        m.bias.zero_()
                elif isinstance(m, nn.Embedding):
                    draw(m.weight, c.init_std if c.init == "gpt2" else 1.0)
                elif isinstance(m, nn.Linear):
                    if c.init == "gpt2":
                        std = c.init_std / (math.sqrt(2 * max(c.n_layers, 1)) if name.endswith(out_proj) else 1.0)
                    else:
                        std = 1.0 / math.sqrt(m.in_features)
                    if c.deepnorm and name.endswith(beta_names):
                        std *= c.deepnorm_beta
                    draw(m.weight, std)
                    if m.bias is not None:
                        m.bias.zero_()
            if c.init == "mimetic":
                for m in self.modules():
                    if isinstance(m, (Attention, RecurrentAttention)):
                        mimetic_heads(m, c, gen)
            if c.zero_query:  # after every draw: no other weight moves
                for m in self.modules():
                    if isinstance(m, (Attention, RecurrentAttention)):
                        m.W_q.weight.zero_()

    # ---------------------------------------------------------------------------------------------
    @property
    def n_layers(self) -> int:
        return self.config.n_layers

    @property
    def causal(self) -> bool:
        return self.config.causal

    @property
    def input_kind(self) -> str:
        return "tokens" if self.config.input == "tokens" else "vectors"

    @property
    def allow_fused(self) -> bool:
        return all(b.attn.allow_fused for b in self.blocks)

    @allow_fused.setter
    def allow_fused(self, value: bool) -> None:
        for b in self.blocks:
            b.attn.allow_fused = bool(value)

    @property
    def recurrent_form(self) -> str:
        """How recurrent mixers compute: "parallel" (attention-like) or "recurrent" (the sequential scan)."""
        forms = {b.attn.form for b in self.blocks if isinstance(b.attn, RecurrentAttention)}
        return forms.pop() if len(forms) == 1 else "parallel"

    @recurrent_form.setter
    def recurrent_form(self, form: str) -> None:
        if form not in FORMS:
            raise ValueError(f"recurrent_form must be one of {list(FORMS)}, got {form!r}")
        for b in self.blocks:
            if isinstance(b.attn, RecurrentAttention):
                b.attn.form = form

    @property
    def query_block(self) -> int | None:
        """Rows per block of materialised attention (``None``: the whole T x T matrix at once)."""
        return self.blocks[0].attn.query_block if len(self.blocks) else None

    @query_block.setter
    def query_block(self, rows: int | None) -> None:
        if rows is not None:
            check_int("query_block", rows, minimum=1)
        for b in self.blocks:
            b.attn.query_block = rows

    def named_hook_points(self) -> dict[str, HookPoint]:
        return self._hook_points

    def hook_names(self) -> list[str]:
        return list(self._hook_points)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    # ---------------------------------------------------------------------------------------------
    def embed_inputs(self, inputs: torch.Tensor) -> torch.Tensor:
        c = self.config
        if c.input == "tokens":
            if inputs.dtype not in (torch.int64, torch.int32) or inputs.dim() != 2:
                raise ValueError(
                    f"inputs must be integer token ids of shape (B, T), got {inputs.dtype} {tuple(inputs.shape)}"
                )
            x = self.embed(inputs)  # (B, T, d)
        else:
            width = c.d_in if c.input == "vectors" else c.d_model
            if not inputs.is_floating_point() or inputs.dim() != 3 or inputs.shape[-1] != width:
                raise ValueError(
                    f"inputs must be real vectors of shape (B, T, {width}), got {inputs.dtype} {tuple(inputs.shape)}"
                )
            inputs = inputs.to(c.torch_dtype)
            x = self.embed(inputs) if c.input == "vectors" else inputs
        x = self.hook_embed(x)
        if c.pos == "learned":
            T = x.shape[1]
            if T > c.max_len:
                raise ValueError(f"sequence length {T} exceeds max_len={c.max_len} of learned positions")
            x = x + self.hook_pos_embed(self.pos_embed.weight[:T])  # (T, d) broadcast over B
        return x

    def forward(
        self,
        inputs: torch.Tensor,
        attn_bias: torch.Tensor | Sequence[torch.Tensor | None] | None = None,
    ) -> torch.Tensor:
        c = self.config
        biases = self._layer_biases(attn_bias)
        x = self.embed_inputs(inputs)  # (B, T, d)
        stack_loops, block_loops = (c.loops, 1) if c.loop_unit == "stack" else (1, c.loops)
        for _ in range(stack_loops):
            for block, bias in zip(self.blocks, biases, strict=True):
                for _ in range(block_loops):
                    x = block(x, bias)
        if c.use_final_norm:
            x = self.ln_final(x)
        if c.output == "none":
            return x
        return self.head(x)  # (B, T, vocab) or (B, T, d_out)

    def _layer_biases(self, attn_bias) -> list[torch.Tensor | None]:
        return layer_biases(attn_bias, self.config.n_layers)


def layer_biases(attn_bias, n_layers: int) -> list[torch.Tensor | None]:
    """One additive logit bias (or None) per layer from a forward's ``attn_bias`` argument: ``None`` or
    one tensor for every layer, or a sequence of ``n_layers`` entries (shared by the adapters)."""
    if attn_bias is None or isinstance(attn_bias, (torch.Tensor, PrefixKeyBias)):
        return [attn_bias] * n_layers
    biases = list(attn_bias)
    if len(biases) != n_layers:
        raise ValueError(f"attn_bias must be a tensor or a sequence of n_layers={n_layers} tensors, got {len(biases)}")
    return biases
