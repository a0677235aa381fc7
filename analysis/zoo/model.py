"""The tiny-transformer zoo: one decoder-only model whose every theory-relevant knob is a config field.

This module is the front that re-exports the model's parts from where they live; read them in this order:

* :mod:`analysis.zoo.model_config`: :class:`ModelConfig` (every field documented), the ``Literal`` types of its
  choice fields with their tuples of values, and :func:`one_head_layer`;
* :mod:`analysis.zoo.layers`: the norms, the MLP and the rotary position embedding;
* :mod:`analysis.zoo.attention`: softmax-family attention and its kernels (hooks, fused kernel, row blocks for
  long sequences), with the logit biases of :mod:`analysis.zoo.attention_bias`;
* :mod:`analysis.zoo.recurrent_attention`: the recurrent-state mixer (``attention="recurrent"``);
* :mod:`analysis.zoo.transformer`: :class:`Block` (where norm placement lives, with the residual block written
  out for every placement) and :class:`TinyTransformer` with its initialisation.

Shapes are commented as ``B`` batch, ``T`` sequence, ``H`` heads, ``dh`` head size, ``d`` model width.
"""

from __future__ import annotations

from analysis.zoo.attention import (  # noqa: F401
    AUTO_BLOCK_BYTES,
    Attention,
    k_interval_softmax,
    shift_mix,
    sparsemax,
)
from analysis.zoo.attention_bias import PrefixKeyBias, bias_block, layer_biases  # noqa: F401
from analysis.zoo.layers import MLP, Norm, _activation, rope_rotate, rope_table  # noqa: F401
from analysis.zoo.model_config import (  # noqa: F401
    ACTIVATIONS,
    ATTENTION_KERNELS,
    DTYPES,
    INITS,
    INPUTS,
    NORM_PLACEMENTS,
    NORM_TYPES,
    OUTPUTS,
    POSITIONAL,
    TOKEN_MIXERS,
    Activation,
    AttentionKernel,
    DType,
    InitScheme,
    InputKind,
    KIntervalMode,
    LoopUnit,
    ModelConfig,
    NormPlacement,
    NormType,
    OutputKind,
    PatternKernel,
    Positional,
    one_head_layer,
)
from analysis.zoo.recurrent_attention import RecurrentAttention  # noqa: F401
from analysis.zoo.transformer import Block, TinyTransformer, mimetic_heads  # noqa: F401
