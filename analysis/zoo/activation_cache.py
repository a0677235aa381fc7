"""The activation cache :func:`analysis.zoo.hooks.run_with_cache` returns, with TransformerLens's conveniences.

:class:`ActivationCache` is a ``dict`` keyed by the model's full hook names (``blocks.0.attn.hook_pattern``)
that also answers, as TransformerLens's ``ActivationCache`` does, to

* another spelling of a name (``HOOK_ALIASES``: ``blocks.0.attn.hook_scores``);
* a short name, alone (``cache["embed"]``, ``cache["k6"]``) or in a tuple ``(name, layer)`` or
  ``(name, layer, layer_type)`` (``cache["pattern", 0]``, ``cache["resid_post", -1]``,
  ``cache["normalized", 1, "ln2"]``), turned into the full name by :func:`get_act_name` (TransformerLens's
  ``utils.get_act_name``); a negative layer counts from the end. Our extension: the short name ``scores``
  (the workbench's older spelling) means ``attn_scores``;

and has :meth:`~ActivationCache.stack_activation` (alias ``stack``), :meth:`~ActivationCache.accumulated_resid`
and :meth:`~ActivationCache.keys_per_row`. A key the cache lacks raises ``KeyError`` naming the full hook name
it looked for, whether the model has that hook (then ``run_with_cache``'s ``names=`` left it out) and what the
cache holds. :func:`keys_per_row` counts the keys each query row of an attention layer sees.
"""

from __future__ import annotations

import operator
import re
from typing import Any

import torch

# Other accepted spellings of the last part of a hook name -> the canonical (TransformerLens) one.
HOOK_ALIASES = {"hook_scores": "hook_attn_scores"}
SCORES = "hook_attn_scores"  # pre-softmax attention logits (B, H, T, K), -inf where masked

# utils.get_act_name's tables (TransformerLens), plus our own older short spelling ("scores").
_NAME_ALIASES = {
    "attn": "pattern",
    "attn_logits": "attn_scores",
    "key": "k",
    "query": "q",
    "value": "v",
    "mlp_pre": "pre",
    "mlp_mid": "mid",
    "mlp_post": "post",
    **{alias.removeprefix("hook_"): canon.removeprefix("hook_") for alias, canon in HOOK_ALIASES.items()},
}
_LAYER_TYPE_ALIASES = {"a": "attn", "m": "mlp", "b": "", "block": "", "blocks": "", "attention": "attn"}
_ATTN_NAMES = ("k", "v", "q", "z", "rot_k", "rot_q", "result", "pattern", "attn_scores")
_MLP_NAMES = ("pre", "post", "mid", "pre_linear")
_NORM_NAMES = ("scale", "normalized")
_BLOCK = re.compile(r"blocks\.(\d+)\.")


def canonical_name(name: str) -> str:
    """``name`` with an alias in its last part replaced by the canonical spelling (else unchanged)."""
    head, dot, last = name.rpartition(".")
    return head + dot + HOOK_ALIASES.get(last, last)


def get_act_name(name: str, layer: int | str | None = None, layer_type: str | None = None) -> str:
    """The full hook name of a short one, as TransformerLens's ``utils.get_act_name``.

    A full name (with a dot, or starting ``hook_``) given alone comes back unchanged. ``"k6"`` reads as
    ``("k", 6)`` and ``"normalized1ln2"`` as ``("normalized", 1, "ln2")``. Attention names (q, k, v, z, pattern,
    attn_scores, ...) live under ``attn.``, MLP names (pre, post, mid) under ``mlp.``; ``layer_type`` places any
    other name (``"ln1"``, ``"a"`` for attn, ``"m"`` for mlp). ``normalized``/``scale`` without a layer are the
    final norm's. Examples: ``("pattern", 0)`` -> ``blocks.0.attn.hook_pattern``, ``("resid_post", 2)`` ->
    ``blocks.2.hook_resid_post``, ``("scores", 1)`` -> ``blocks.1.attn.hook_attn_scores``, ``"embed"`` ->
    ``hook_embed``. A negative layer is not resolved here (the cache does that: it knows the depth).
    """
    if ("." in name or name.startswith("hook_")) and layer is None and layer_type is None:
        return name
    match = re.match(r"([a-z]+)(\d+)([a-z]?.*)", name)
    if match is not None:
        name, layer, layer_type = match.groups(0)
    name = _NAME_ALIASES.get(name, name)
    if name in _ATTN_NAMES:
        layer_type = "attn"
    elif name in _MLP_NAMES:
        layer_type = "mlp"
    elif layer_type in _LAYER_TYPE_ALIASES:
        layer_type = _LAYER_TYPE_ALIASES[layer_type]
    full = (f"blocks.{layer}." if layer is not None else "") + (f"{layer_type}." if layer_type else "") + f"hook_{name}"
    return f"ln_final.{full}" if name in _NORM_NAMES and layer is None else full


def keys_per_row(scores: torch.Tensor) -> torch.Tensor:
    """How many keys each query row of an attention layer sees: ``scores`` are its pre-softmax logits
    ``hook_attn_scores`` (..., T, K) and the answer (..., T) counts the entries that are not ``-inf``.

    Our models write ``-inf`` for every key a row cannot see (the causal mask: row ``i`` sees ``i + 1`` keys;
    an ``attn_bias`` of ``-inf``, e.g. a local window; the keys past a row block, see :mod:`analysis.zoo.hooks`),
    so the count follows whatever mask the model applied, per batch element and head, and a bidirectional
    model gives ``K`` everywhere. The pattern cannot tell this: a seen key may get weight 0 (softmax underflow,
    sparsemax's exact zeros) and a masked one has weight 0 too.
    """
    return (~torch.isneginf(scores)).sum(-1)


class ActivationCache(dict):
    """The activations :func:`~analysis.zoo.hooks.run_with_cache` returns: a ``dict`` from the model's hook names to
    tensors that also finds an entry by another spelling of its name or by a TransformerLens short name
    (module docstring). ``n_layers``: the model's depth (set by ``run_with_cache``; for a cache built by hand,
    ``None`` means one more than the deepest ``blocks.{l}.`` among its keys). ``model_hook_names`` and
    ``names_arg`` (the hook points the model has and the ``names=`` it was run with) only word error messages.
    """

    n_layers: int | None = None
    model_hook_names: tuple[str, ...] = ()
    names_arg: Any = None

    # ---- lookup ---------------------------------------------------------------------------------------
    def __missing__(self, key: Any) -> torch.Tensor:
        full = self._full_name(key)
        for name in (full, canonical_name(full)):
            if dict.__contains__(self, name):
                return dict.__getitem__(self, name)
        raise KeyError(self._missing_message(key, full))

    def __contains__(self, key: object) -> bool:
        if dict.__contains__(self, key):
            return True
        try:
            full = self._full_name(key)
        except (TypeError, ValueError):
            return False
        return dict.__contains__(self, full) or dict.__contains__(self, canonical_name(full))

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default

    @property
    def depth(self) -> int:
        """The number of layers: ``n_layers``, or for a cache built by hand the deepest block among its keys + 1."""
        if self.n_layers is not None:
            return self.n_layers
        return 1 + max((int(m.group(1)) for k in self if (m := _BLOCK.match(str(k)))), default=-1)

    def _full_name(self, key: Any) -> str:
        """The full hook name ``key`` (a name, a short name, or a ``(name, layer[, layer_type])`` tuple) means."""
        if isinstance(key, str):
            return get_act_name(key)
        if not isinstance(key, tuple) or not 1 <= len(key) <= 3 or not isinstance(key[0], str):
            raise TypeError(f"a cache key is a hook name or a (name, layer[, layer_type]) tuple, got {key!r}")
        name, layer, *rest = (*key, None) if len(key) == 1 else key
        if layer is not None and not isinstance(layer, str):
            layer = operator.index(layer)
            if layer < 0:  # counts from the end, as TransformerLens
                layer += self.depth
        return get_act_name(name, layer, *rest)

    def _missing_message(self, key: Any, full: str) -> str:
        holds = f"the cache holds {self._summary()}" if len(self) else "the cache is empty"
        asked = f"{full!r}" if key == full else f"{full!r} (for key {key!r})"
        known = {canonical_name(n) for n in self.model_hook_names}
        if canonical_name(full) in known:
            return (
                f"{asked} is not cached: run_with_cache was called with names={self.names_arg!r}, not caching it "
                f"({holds}); pass names that include {full!r}, or names=None for every hook point"
            )
        if self.model_hook_names:
            last = full.rpartition(".")[2]
            near = [n for n in self.model_hook_names if n.endswith("." + last) or n == last][:4]
            hint = f"; hook points named {last}: {near}" if near else ""
            return f"{asked} is not a hook point of the model ({holds}){hint}"
        return f"{asked} is not in the cache ({holds})"

    def _summary(self, most: int = 6) -> str:
        """The cached names, short: one entry per name across layers (``blocks.{0,1}.attn.hook_pattern``)."""
        layers: dict[str, list[str]] = {}
        for key in self:
            m = _BLOCK.match(str(key))
            rest = str(key)[m.end() :] if m else str(key)
            layers.setdefault(f"blocks.{{}}.{rest}" if m else rest, []).append(m.group(1) if m else "")
        names = [p.format(ls[0] if len(ls) == 1 else "{" + ",".join(ls) + "}") for p, ls in layers.items()]
        more = f", ... ({len(self)} hooks in all)" if len(names) > most else ""
        return ", ".join(names[:most]) + more

    # ---- stacks over layers -----------------------------------------------------------------------------
    def _stop(self, layer: int | None, most: int, what: str) -> int:
        if layer is None or layer == -1:
            return most
        if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer <= most:
            raise ValueError(f"{what}: layer must be None, -1 or an integer in 0..{most}, got {layer!r}")
        return layer

    def stack_activation(self, activation_name: str, layer: int | None = -1, sublayer_type: str | None = None):
        """``self[activation_name, l, sublayer_type]`` for ``l = 0 .. layer - 1`` stacked on a new leading dim,
        in layer order (TransformerLens's ``stack_activation``): ``layer`` ``-1``/``None`` (default) stacks every
        layer. E.g. ``stack("pattern")`` is (n_layers, B, H, T, T). ``ValueError`` naming ``activation_name``
        when no layer has it cached; ``KeyError`` (naming the full hook name) when only some do."""
        stop = self._stop(layer, self.depth, "stack_activation")
        keys = [(activation_name, l) + ((sublayer_type,) if sublayer_type else ()) for l in range(stop)]
        if not any(k in self for k in keys):
            hint = f"; it holds {self._summary()}" if len(self) else "; it is empty"
            raise ValueError(
                f"stack_activation: no layer l < {stop} of this cache has {activation_name!r} "
                f"({get_act_name(activation_name, 0, sublayer_type)} ...){hint}"
            )
        return torch.stack([self[k] for k in keys], dim=0)

    stack = stack_activation

    def accumulated_resid(
        self, layer: int | None = None, incl_mid: bool = False, mlp_input: bool = False, return_labels: bool = False
    ):
        """The residual stream before each layer, then the final one, stacked on a new leading dim
        (TransformerLens's ``accumulated_resid``): ``resid_pre`` of layers ``0 .. layer`` (labels ``"{l}_pre"``),
        and for ``layer`` ``None``/``-1``/``n_layers`` (the default) the last block's ``resid_post``
        (``"final_post"``), so ``n_layers + 1`` entries. ``incl_mid`` adds ``resid_mid`` of each layer before
        ``layer`` (``"{l}_mid"``), ``mlp_input`` that of ``layer`` itself. ``return_labels=True`` returns
        ``(stack, labels)``.

        No ``apply_ln`` or ``pos_slice``: the cache holds no model, so no final norm to apply, and our norms have
        no ``hook_scale`` for TransformerLens's cached-scale variant. For a logit lens apply the final norm
        yourself, ``model.ln_final(stack)`` (it normalises each entry over its last axis, as TransformerLens's
        ``apply_ln`` does on the full stack); index positions with ``stack[..., pos, :]``. With ``loops > 1``
        every hook keeps its last firing, so this is the stream of the last pass.
        """
        n = self.depth
        stop = self._stop(layer, n, "accumulated_resid")
        parts, labels = [], []
        for l in range(stop + 1):
            if l == n:
                parts.append(self["resid_post", n - 1])
                labels.append("final_post")
                continue
            parts.append(self["resid_pre", l])
            labels.append(f"{l}_pre")
            if (incl_mid and l < stop) or (mlp_input and l == stop):
                parts.append(self["resid_mid", l])
                labels.append(f"{l}_mid")
        out = torch.stack(parts, dim=0)
        return (out, labels) if return_labels else out

    def keys_per_row(self, layer: int) -> torch.Tensor:
        """:func:`keys_per_row` of layer ``layer``'s cached ``hook_attn_scores`` (..., T): the keys each query row
        sees under the mask the model applied (causal: row ``i`` has ``i + 1``). Needs the scores cached (the
        pattern cannot tell a masked key from a seen one of weight 0)."""
        return keys_per_row(self["attn_scores", layer])
