"""Where each of our hook points sits in a Hugging Face GPT-2 or BERT-style model, and the PyTorch hooks that put
them there (and that remove skip connections) for :class:`~analysis.zoo.hf_adapter.HFModel`.

How the hook points are placed
------------------------------
Attention internals (``attn.hook_q`` ... ``attn.hook_z``) are hook points of our attention function
(:mod:`analysis.zoo.hf_attention`). Everything else is a PyTorch forward (pre-)hook on the wrapped model's
modules, calling one of our :class:`~analysis.zoo.hooks.HookPoint` s (so a hook function may replace the
activation):

============================  ===========================  ======================================
our name                      GPT-2 (``GPT2LMHeadModel``)  BERT (``BertModel``)
============================  ===========================  ======================================
hook_embed                    ``wte`` output               ``embeddings.word_embeddings`` output
hook_pos_embed                ``wpe`` output               ``embeddings.position_embeddings`` output
blocks.l.hook_resid_pre       input of ``h[l]``            input of ``encoder.layer[l]``
blocks.l.ln1.hook_in/_norm..  ``ln_1`` input / output      ``attention.output.LayerNorm`` in/out
blocks.l.hook_attn_out        ``attn`` output              ``attention.output.dense`` output
blocks.l.hook_resid_mid       input of ``ln_2``            ``attention`` output
blocks.l.ln2.hook_in/_norm..  ``ln_2`` input / output      ``output.LayerNorm`` in / out
blocks.l.mlp.hook_pre/_post   ``mlp.c_fc`` / ``mlp.act``   ``intermediate.dense`` / ``..act_fn``
blocks.l.hook_mlp_out         ``mlp`` output               ``output.dense`` output
blocks.l.hook_resid_post      output of ``h[l]``           output of ``encoder.layer[l]``
ln_final.hook_in/_normalized  ``ln_f`` input / output      (none: BERT is Post-LN)
============================  ===========================  ======================================

BERT is Post-LN, so ``ln1.hook_in`` there is ``x + attn(x)`` (the zoo's ``norm="post"`` has the same convention)
and ``hook_attn_out`` is the branch before dropout, i.e. what is added to the stream in eval mode.

Skip connections can be removed (``residual=False`` or ``HFModel.with_residual``), the experiment of Dong et al.
(2021): a block then computes ``y = f(x)`` instead of ``y = x + f(x)`` for both sublayers. For BERT the residual
input of ``BertSelfOutput``/``BertOutput`` is replaced by zeros (exact); for GPT-2, whose residual additions are
inline, the branch output is replaced by ``f(x) - x`` so the block's addition yields ``f(x)`` (exact up to one
rounding of the sum).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from analysis.zoo.hooks import HookPoint

SUPPORTED = ("gpt2", "bert")  # model_type values whose module layout is mapped below

# ------------------------------------------------------------------------------------------------
# Module layouts: where each of our hook points sits in the wrapped model
# ------------------------------------------------------------------------------------------------
# (our name relative to blocks.{l}, module path relative to the layer, kind); kind "out" = the
# module's output (first element of a tuple output), "in" = its first positional input.
_GPT2_BLOCK = [
    ("ln1.hook_in", "ln_1", "in"),
    ("ln1.hook_normalized", "ln_1", "out"),
    ("hook_attn_out", "attn", "out"),
    ("hook_resid_mid", "ln_2", "in"),
    ("ln2.hook_in", "ln_2", "in"),
    ("ln2.hook_normalized", "ln_2", "out"),
    ("mlp.hook_pre", "mlp.c_fc", "out"),
    ("mlp.hook_post", "mlp.act", "out"),
    ("hook_mlp_out", "mlp", "out"),
]
_BERT_BLOCK = [
    ("hook_attn_out", "attention.output.dense", "out"),
    ("ln1.hook_in", "attention.output.LayerNorm", "in"),
    ("ln1.hook_normalized", "attention.output.LayerNorm", "out"),
    ("hook_resid_mid", "attention", "out"),
    ("mlp.hook_pre", "intermediate.dense", "out"),
    ("mlp.hook_post", "intermediate.intermediate_act_fn", "out"),
    ("hook_mlp_out", "output.dense", "out"),
    ("ln2.hook_in", "output.LayerNorm", "in"),
    ("ln2.hook_normalized", "output.LayerNorm", "out"),
]
_ATTN_POINTS = ("hook_q", "hook_k", "hook_v", "hook_attn_scores", "hook_pattern", "hook_z")


def _get(module: nn.Module, path: str) -> nn.Module:
    for part in path.split("."):
        module = getattr(module, part)
    return module


class _Points(nn.Module):
    """A container of HookPoints (and nested containers) so that module paths give our names."""


def _ensure(root: nn.Module, dotted: str) -> HookPoint:
    parts = dotted.split(".")
    node = root
    for part in parts[:-1]:
        if not hasattr(node, part):
            node.add_module(part, _Points())
        node = getattr(node, part)
    if not hasattr(node, parts[-1]):
        node.add_module(parts[-1], HookPoint())
    return getattr(node, parts[-1])


def backbone(hf: nn.Module, kind: str) -> nn.Module:
    """The ``transformers`` model under its head (``transformer`` of a GPT-2 LM, ``bert`` of a BERT with a head)."""
    if kind == "gpt2":
        return getattr(hf, "transformer", hf)
    return getattr(hf, "bert", hf)


def layers(hf: nn.Module, kind: str) -> Sequence[nn.Module]:
    """The blocks of a ``kind`` model, in order."""
    if kind == "gpt2":
        return backbone(hf, kind).h
    return backbone(hf, kind).encoder.layer


# ------------------------------------------------------------------------------------------------
# The hooks
# ------------------------------------------------------------------------------------------------
def attach(handles: list[Any], module: nn.Module, point: HookPoint, kind: str) -> None:
    """Call ``point`` on ``module``'s first input (``kind="in"``), its output (``"out"``; the first element of
    a tuple output) or its position-embedding output (``"pos"``: (1, T, d) seen as the zoo's (T, d)), through a
    PyTorch forward (pre-)hook whose handle is appended to ``handles``."""
    if kind == "in":

        def pre_hook(mod, args, kwargs):
            if args:
                return (point(args[0]), *args[1:]), kwargs
            key = next(iter(kwargs))  # hidden_states passed by keyword
            return args, {**kwargs, key: point(kwargs[key])}

        handles.append(module.register_forward_pre_hook(pre_hook, with_kwargs=True))
    elif kind == "pos":  # position embeddings come out as (1, T, d); the zoo's hook sees (T, d)

        def pos_hook(mod, args, output):
            if output.dim() == 3 and output.shape[0] == 1:
                return point(output[0])[None]
            return point(output)

        handles.append(module.register_forward_hook(pos_hook))
    else:

        def out_hook(mod, args, output):
            if isinstance(output, tuple):
                return (point(output[0]), *output[1:])
            return point(output)

        handles.append(module.register_forward_hook(out_hook))


def remove_skips(handles: list[Any], kind: str, block: nn.Module) -> None:
    """Hooks (handles appended to ``handles``) that make ``block`` of a ``kind`` model compute ``y = f(x)``
    instead of ``y = x + f(x)`` for both sublayers (see the module docstring)."""
    if kind == "bert":

        def zero_residual(mod, args):
            hidden, resid = args[0], args[1]
            return (hidden, torch.zeros_like(resid))

        for mod in (block.attention.output, block.output):
            handles.append(mod.register_forward_pre_hook(zero_residual))
        return
    # GPT-2 adds the residual inline: replace each branch output f(x) by f(x) - x
    saved: dict[str, torch.Tensor] = {}

    def keep(slot):
        def hook(mod, args, kwargs):
            saved[slot] = args[0] if args else next(iter(kwargs.values()))

        return hook

    def subtract(slot):
        def hook(mod, args, output):
            if isinstance(output, tuple):
                return (output[0] - saved[slot], *output[1:])
            return output - saved[slot]

        return hook

    handles.append(block.ln_1.register_forward_pre_hook(keep("attn"), with_kwargs=True))
    handles.append(block.attn.register_forward_hook(subtract("attn")))
    handles.append(block.ln_2.register_forward_pre_hook(keep("mlp"), with_kwargs=True))
    handles.append(block.mlp.register_forward_hook(subtract("mlp")))
