"""GPT-2 and the zoo: a small ``GPT2Config`` whose every field has a zoo equivalent (:func:`gpt2_config`), the
:class:`~analysis.zoo.model_config.ModelConfig` of the same architecture (:func:`zoo_config_for_gpt2`) and our
:class:`~analysis.zoo.transformer.TinyTransformer` carrying a GPT-2's weights (:func:`zoo_from_gpt2`).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from analysis.zoo.hf_adapter import HFModel
from analysis.zoo.hf_loading import _require_transformers
from analysis.zoo.model_config import ModelConfig
from analysis.zoo.transformer import TinyTransformer


def gpt2_config(**overrides: Any):
    """A small ``GPT2Config`` (no dropout) whose every field has a zoo equivalent; overrides pass through."""
    transformers = _require_transformers()
    fields = dict(
        vocab_size=256,
        n_positions=256,
        n_embd=64,
        n_layer=2,
        n_head=4,
        n_inner=None,
        activation_function="gelu_new",
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        layer_norm_epsilon=1e-5,
        tie_word_embeddings=False,
    )
    fields.update(overrides)
    fields.setdefault("bos_token_id", fields["vocab_size"] - 1)  # GPT-2's 50256 lies outside a small vocabulary
    fields.setdefault("eos_token_id", fields["vocab_size"] - 1)
    return transformers.GPT2Config(**fields)


_GPT2_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu"}


def zoo_config_for_gpt2(config: Any, *, dtype: str = "float32"):
    """The :class:`~analysis.zoo.model_config.ModelConfig` with the same architecture as a ``GPT2Config``.

    Pre-LN LayerNorm with biases, learned absolute positions, softmax attention scaled by
    1/sqrt(d_head), causal, final LayerNorm, LM head without tying. Fields GPT-2 has and the zoo
    does not (attention scaling by layer index, cross-attention, reordered upcast) raise a ValueError.
    """
    if config.model_type != "gpt2":
        raise ValueError(f"config must be a GPT2Config, got model_type={config.model_type!r}")
    if config.activation_function not in _GPT2_ACTIVATIONS:
        raise ValueError(
            f"activation_function must be one of {list(_GPT2_ACTIVATIONS)}, got {config.activation_function!r}"
        )
    for flag in ("scale_attn_by_inverse_layer_idx", "add_cross_attention", "reorder_and_upcast_attn"):
        if getattr(config, flag, False):
            raise ValueError(f"{flag}=True has no zoo equivalent")
    if not getattr(config, "scale_attn_weights", True):
        raise ValueError("scale_attn_weights=False has no zoo equivalent")
    return ModelConfig(
        input="tokens",
        vocab_size=config.vocab_size,
        output="lm",
        d_model=config.n_embd,
        n_layers=config.n_layer,
        n_heads=config.n_head,
        d_mlp=config.n_inner or 4 * config.n_embd,
        activation=_GPT2_ACTIVATIONS[config.activation_function],
        bias=True,
        norm="pre",
        norm_type="layernorm",
        norm_eps=config.layer_norm_epsilon,
        final_norm=True,
        attention="softmax",
        causal=True,
        pos="learned",
        max_len=config.n_positions,
        dtype=dtype,
    )


def zoo_from_gpt2(model: HFModel | nn.Module, *, dtype: str = "float64"):
    """Our :class:`~analysis.zoo.transformer.TinyTransformer` carrying a GPT-2's weights (same function, our code).

    GPT-2's ``Conv1D`` stores weights as (in, out), ``nn.Linear`` as (out, in): every projection is
    transposed; the fused ``c_attn`` splits into W_q, W_k, W_v. The LM head has no bias in GPT-2; the
    zoo's is set to zero. With a tied head the head weight is the token embedding.
    """
    hf = model.hf if isinstance(model, HFModel) else model
    cfg = zoo_config_for_gpt2(hf.config, dtype=dtype)
    zoo = TinyTransformer(cfg)
    bb = getattr(hf, "transformer", hf)
    d = cfg.d_model
    tdt = zoo.config.torch_dtype

    def put(dst: torch.Tensor, src: torch.Tensor) -> None:
        if dst.shape != src.shape:
            raise ValueError(f"shape mismatch {tuple(dst.shape)} vs {tuple(src.shape)}")
        dst.copy_(src.detach().to(torch.float64).to(tdt))

    with torch.no_grad():
        put(zoo.embed.weight, bb.wte.weight)
        put(zoo.pos_embed.weight, bb.wpe.weight)
        for blk, h in zip(zoo.blocks, bb.h, strict=True):
            put(blk.ln1.weight, h.ln_1.weight)
            put(blk.ln1.bias, h.ln_1.bias)
            w, b = h.attn.c_attn.weight, h.attn.c_attn.bias  # (d, 3d), (3d,)
            for i, lin in enumerate((blk.attn.W_q, blk.attn.W_k, blk.attn.W_v)):
                put(lin.weight, w[:, i * d : (i + 1) * d].T)
                put(lin.bias, b[i * d : (i + 1) * d])
            put(blk.attn.W_o.weight, h.attn.c_proj.weight.T)
            put(blk.attn.W_o.bias, h.attn.c_proj.bias)
            put(blk.ln2.weight, h.ln_2.weight)
            put(blk.ln2.bias, h.ln_2.bias)
            put(blk.mlp.W_in.weight, h.mlp.c_fc.weight.T)
            put(blk.mlp.W_in.bias, h.mlp.c_fc.bias)
            put(blk.mlp.W_out.weight, h.mlp.c_proj.weight.T)
            put(blk.mlp.W_out.bias, h.mlp.c_proj.bias)
        put(zoo.ln_final.weight, bb.ln_f.weight)
        put(zoo.ln_final.bias, bb.ln_f.bias)
        head = getattr(hf, "lm_head", None)
        put(zoo.head.weight, head.weight if head is not None else bb.wte.weight)
        if head is not None and head.bias is not None:
            put(zoo.head.bias, head.bias)
        else:
            zoo.head.bias.zero_()
    return zoo.eval()
