"""The tiny transformer's config: :class:`ModelConfig`, every theory-relevant knob of
:class:`~analysis.zoo.transformer.TinyTransformer` as a documented field, with the rules between fields and the
values derived from them; the ``Literal`` types of its choice fields and their tuples of allowed values
(``NORM_PLACEMENTS``, ``ATTENTION_KERNELS``, ...); and :func:`one_head_layer`, the smallest model the theory
sections reason about.
"""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import torch

from analysis.core.config import BaseConfig, param
from analysis.core.validation import check_float, check_int
from analysis.zoo.config_rules import check_parameterisation, check_recurrent, check_residual
from analysis.zoo.recurrent import Decay, FeatureMap, WriteRule

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
Parameterisation = Literal["standard", "mup", "depth_mup"]
Residual = Literal["add", "attnres"]
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
PARAMETERISATIONS = typing.get_args(Parameterisation)
DTYPES = {name: getattr(torch, name) for name in typing.get_args(DType)}  # "float64" -> torch.float64, ...


@dataclass(frozen=True)
class ModelConfig(BaseConfig):
    """Every architectural knob of :class:`~analysis.zoo.transformer.TinyTransformer`; the weights are a function
    of this config.

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
    residual: Residual = param(
        "add",
        "add: each sublayer's output added to the stream | attnres: Full Attention Residuals, each sublayer's input "
        "a softmax-weighted mix of the embedding and every earlier sublayer's output (analysis.zoo.attnres)",
        omit_at_default=True,
    )
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
    # --- width and depth parameterisation (added later; analysis/zoo/parameterisation.py) -----------
    parameterisation: Parameterisation = param(
        "standard",
        "standard | mup (muP in width: read-out times base_d_model / d_model at its base-width init, attention "
        "logits q.k / d_head scaled to equal the standard ones at the base width, gpt2 init stds times "
        "sqrt(base fan-in / fan-in); the trainer's per-parameter learning rates) | depth_mup (mup, and every "
        "residual branch times (base_n_layers / n_layers)^depth_alpha with the matching learning rates)",
        omit_at_default=True,
    )
    base_d_model: int = param(
        32, "mup, depth_mup: the width d0 at which the model is the standard one", minimum=1, omit_at_default=True
    )
    base_n_layers: int = param(
        1, "depth_mup: the depth L0 at which the branches are not scaled", minimum=1, omit_at_default=True
    )
    depth_alpha: float = param(
        0.5, "depth_mup: branch exponent alpha: 0.5 (1/sqrt(L), Depth-muP) | 1.0 (1/L, CompleteP)",
        omit_at_default=True,
    )  # fmt: skip
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
        check_recurrent(self)
        check_parameterisation(self)
        check_residual(self)

    # derived values ------------------------------------------------------------------------------
    @property
    def head_size(self) -> int:
        return self.d_head if self.d_head is not None else self.d_model // self.n_heads

    @property
    def mlp_width(self) -> int:
        return 4 * self.d_model if self.d_mlp is None else self.d_mlp

    @property
    def base_head_size(self) -> int:
        """The head size at the base width (``head_size`` itself under the standard parameterisation)."""
        if self.parameterisation == "standard" or self.d_head is not None:
            return self.head_size
        return self.base_d_model // self.n_heads

    @property
    def scale(self) -> float:
        """Multiplier of q.k: ``logit_scale`` or 1/sqrt(dh); under mup the base width's value times dh0 / dh
        (1/d_head scaling, equal to the standard one at the base width)."""
        base = self.logit_scale if self.logit_scale is not None else 1.0 / math.sqrt(self.base_head_size)
        if self.parameterisation == "standard":
            return base
        return base * self.base_head_size / self.head_size

    @property
    def width_mult(self) -> float:
        """d_model / base_d_model under mup and depth_mup (the read-out's divisor); 1 under standard."""
        return 1.0 if self.parameterisation == "standard" else self.d_model / self.base_d_model

    @property
    def branch_multiplier(self) -> float:
        """What every residual branch's output is multiplied by: ``branch_scale``, and under depth_mup times
        (base_n_layers / n_layers)^depth_alpha."""
        if self.parameterisation != "depth_mup":
            return self.branch_scale
        return self.branch_scale * (self.base_n_layers / max(self.n_layers, 1)) ** self.depth_alpha

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
