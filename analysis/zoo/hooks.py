"""Named hook points, caches and interventions.

A :class:`HookPoint` is an identity module placed at every place a theory paper talks about (the
residual stream before/after each sublayer, attention scores and patterns, the input and output of
every norm, ...). Its name is its module path, in TransformerLens vocabulary::

    hook_embed, hook_pos_embed,
    blocks.{l}.hook_resid_pre, blocks.{l}.hook_resid_mid, blocks.{l}.hook_resid_post,
    blocks.{l}.attn.hook_q|hook_k|hook_v, blocks.{l}.attn.hook_attn_scores, blocks.{l}.attn.hook_pattern,
    blocks.{l}.attn.hook_z, blocks.{l}.hook_attn_out, blocks.{l}.mlp.hook_pre|hook_post,
    blocks.{l}.hook_mlp_out, blocks.{l}.ln1.hook_in|hook_normalized, ..., ln_final.hook_in|hook_normalized

:func:`resid_names` builds the residual stream's names (per stage, or the stream at every depth).
Names are also accepted in the workbench's older spelling (``HOOK_ALIASES``: ``attn.hook_scores`` for
``attn.hook_attn_scores``) wherever names are given: :func:`resolve_names`, :func:`hooks`,
:func:`run_with_cache` and the cache it returns; a hook point's own ``name`` is always the canonical one.
The cache (:class:`~analysis.zoo.activation_cache.ActivationCache`, re-exported here with :func:`get_act_name`
and :func:`keys_per_row`) also takes TransformerLens's keys, ``cache["pattern", 0]``, ``cache["resid_post", -1]``,
and has ``stack("pattern")``, ``accumulated_resid()`` and ``keys_per_row(layer)``.

Hooks are attached only inside the :func:`hooks` context manager, whose ``finally`` removes them even
when the forward pass raises. With no hook attached a hook point costs one attribute test.

A hook function has the signature ``fn(tensor, name) -> tensor | None``; returning a tensor replaces
the activation (an intervention), returning ``None`` leaves it unchanged (an observation).

Row blocks. A model computing attention in blocks of query rows (``TinyTransformer.query_block``,
so that no T x T matrix exists at once) calls ``hook_attn_scores``/``hook_pattern`` once per block with a
``(B, H, r1 - r0, K)`` tensor, and while it does the hook point's ``rows`` attribute is ``(r0, r1)``
(``None`` for a whole-matrix call); ``K`` is the number of keys the block's rows can see (``r1`` for a
causal model). :func:`run_with_cache` reassembles such blocks into the full matrix.

Any model that exposes ``named_hook_points() -> dict[str, HookPoint]`` works with these functions
(see :class:`analysis.zoo.protocol.ProbeModel`), so probes never depend on our own model class.
"""

from __future__ import annotations

import contextlib
import fnmatch
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import torch
from torch import nn

# The cache and the names it understands live in analysis.zoo.activation_cache; they are re-exported here.
from analysis.zoo.activation_cache import (  # noqa: F401
    HOOK_ALIASES,
    SCORES,
    ActivationCache,
    canonical_name,
    get_act_name,
    keys_per_row,
)

HookFn = Callable[[torch.Tensor, str], torch.Tensor | None]
RESID_STAGES = ("pre", "mid", "post")


def _spellings(name: str) -> list[str]:
    """Every accepted spelling of the canonical hook name ``name`` (itself first)."""
    head, dot, last = name.rpartition(".")
    return [name] + [head + dot + alias for alias, canon in HOOK_ALIASES.items() if canon == last]


def resid_names(n_layers: int, stage: str = "post") -> list[str]:
    """Hook names of the residual stream of an ``n_layers``-block model.

    ``stage`` ``"pre"`` | ``"mid"`` | ``"post"``: ``blocks.{l}.hook_resid_{stage}`` for ``l = 0 .. n_layers - 1``.
    ``"depth"``: the stream at every depth ``k = 0 .. n_layers`` (``n_layers + 1`` names): the input of the
    first block, ``blocks.0.hook_resid_pre``, then each block's output ``blocks.{l}.hook_resid_post``.
    """
    if isinstance(n_layers, bool) or not isinstance(n_layers, int) or n_layers < 0:
        raise ValueError(f"n_layers must be an integer >= 0, got {n_layers!r}")
    if stage == "depth":
        return resid_names(1, "pre") + resid_names(n_layers, "post") if n_layers else []
    if stage not in RESID_STAGES:
        raise ValueError(f"stage must be one of {[*RESID_STAGES, 'depth']}, got {stage!r}")
    return [f"blocks.{layer}.hook_resid_{stage}" for layer in range(n_layers)]


class HookPoint(nn.Module):
    """Identity module that calls its attached hook functions, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.name: str = ""
        self._fns: list[HookFn] = []
        self.rows: tuple[int, int] | None = None  # (r0, r1) while a block of query rows passes

    @property
    def active(self) -> bool:
        return bool(self._fns)

    def forward(self, x: torch.Tensor, rows: tuple[int, int] | None = None) -> torch.Tensor:
        if not self._fns:
            return x
        self.rows = rows
        try:
            return self._call(x)
        finally:
            self.rows = None

    def _call(self, x: torch.Tensor) -> torch.Tensor:
        for fn in self._fns:
            out = fn(x, self.name)
            if out is not None:
                if out.shape != x.shape:
                    raise ValueError(
                        f"hook at {self.name} returned shape {tuple(out.shape)}, expected {tuple(x.shape)}"
                    )
                x = out
        return x


def name_hook_points(module: nn.Module) -> dict[str, HookPoint]:
    """Give every HookPoint inside ``module`` its module-path name and return them by name."""
    points = {}
    for name, sub in module.named_modules():
        if isinstance(sub, HookPoint):
            sub.name = name
            points[name] = sub
    return points


def _points(model: Any) -> dict[str, HookPoint]:
    if hasattr(model, "named_hook_points"):
        return model.named_hook_points()
    return name_hook_points(model)


def hook_points(model: Any) -> dict[str, HookPoint]:
    """The model's hook points by name (e.g. to read a point's ``rows`` inside a hook function)."""
    return _points(model)


def resolve_names(model: Any, names: str | Sequence[str] | Callable[[str], bool] | None) -> list[str]:
    """Expand ``names`` (exact names, glob patterns such as ``"blocks.*.hook_resid_post"``, or a
    predicate) into the list of existing hook names, in model order. ``None`` means all of them.

    A point is chosen when its name or one of its other spellings (``HOOK_ALIASES``) matches; the names
    returned are the model's own. An exact name or a pattern that matches nothing raises ``ValueError``
    listing what exists.
    """
    available = list(_points(model))
    if names is None:
        return available
    if callable(names):
        return [n for n in available if any(names(s) for s in _spellings(n))]
    if isinstance(names, str):
        names = [names]
    chosen: list[str] = []
    for pattern in names:
        hits = [n for n in available if any(fnmatch.fnmatchcase(s, pattern) for s in _spellings(n))]
        if not hits:
            raise ValueError(f"names: no hook point matches {pattern!r}; available hook points: {available}")
        chosen.extend(h for h in hits if h not in chosen)
    order = {n: i for i, n in enumerate(available)}
    return sorted(chosen, key=order.__getitem__)


@contextlib.contextmanager
def hooks(model: Any, fwd_hooks: Iterable[tuple[str, HookFn]]) -> Iterator[Any]:
    """Attach ``(name_or_pattern, fn)`` pairs for the duration of the ``with`` block.

    The hooks are removed in ``finally``, so an exception in the forward pass (or in a hook) never
    leaves one behind.
    """
    points = _points(model)
    attached: list[tuple[HookPoint, HookFn]] = []
    try:
        for pattern, fn in fwd_hooks:
            # an exact canonical name needs no matching (run_with_cache passes every name it caches)
            names = [pattern] if isinstance(pattern, str) and pattern in points else resolve_names(model, pattern)
            for name in names:
                points[name]._fns.append(fn)
                attached.append((points[name], fn))
        yield model
    finally:
        for point, fn in attached:
            # remove by identity: the same function may be attached at several points
            for i, f in enumerate(point._fns):
                if f is fn:
                    del point._fns[i]
                    break


def run_with_cache(
    model: Any,
    inputs: torch.Tensor,
    names: str | Sequence[str] | Callable[[str], bool] | None = None,
    *,
    detach: bool = True,
    fwd_hooks: Iterable[tuple[str, HookFn]] = (),
    **forward_kwargs: Any,
) -> tuple[torch.Tensor, ActivationCache]:
    """Run ``model(inputs, **forward_kwargs)`` and return ``(output, cache)``.

    Only the hook points in ``names`` are cached (``None`` caches everything: avoid on long
    sequences). ``detach=False`` keeps the autograd graph, e.g. to take gradients with respect to a
    cached activation. ``fwd_hooks`` are interventions applied during the same pass (they run before
    the caching hook at the same point, so the cache sees the intervened value). The cache is keyed
    by the model's hook names and also answers to their aliases and to TransformerLens's short names,
    ``cache["pattern", 0]``, with ``stack``, ``accumulated_resid`` and ``keys_per_row``
    (:class:`~analysis.zoo.activation_cache.ActivationCache`).
    """
    wanted = resolve_names(model, names)
    cache = ActivationCache()
    points = _points(model)
    cache.names_arg = names if names is None or isinstance(names, str) or callable(names) else list(names)
    cache.model_hook_names = tuple(points)
    depth = getattr(model, "n_layers", None)
    cache.n_layers = depth if isinstance(depth, int) else 1 + max(_block_indices(points), default=-1)
    blocks: dict[str, list[torch.Tensor]] = {}

    def save(x: torch.Tensor, name: str) -> None:
        x = x.detach() if detach else x
        if points[name].rows is None:
            cache[name] = x
        else:  # one block of query rows: keep it, reassembled below
            blocks.setdefault(name, []).append(x)

    all_hooks = list(fwd_hooks) + [(n, save) for n in wanted]
    with hooks(model, all_hooks):
        out = model(inputs, **forward_kwargs)
    for name, parts in blocks.items():  # keys a block's rows cannot see: -inf logits, 0 weights
        fill = float("-inf") if canonical_name(name).endswith(SCORES) else 0.0
        width = max(p.shape[-1] for p in parts)
        cache[name] = torch.cat(
            [torch.nn.functional.pad(p, (0, width - p.shape[-1]), value=fill) for p in parts], dim=-2
        )
    return out, cache


def _block_indices(names: Iterable[str]) -> Iterator[int]:
    for name in names:
        head, _, rest = name.partition(".")
        index = rest.partition(".")[0]
        if head == "blocks" and index.isdigit():
            yield int(index)


def active_hook_names(model: Any) -> list[str]:
    """Names of hook points that currently have a function attached (should be empty outside ``with``)."""
    return [n for n, p in _points(model).items() if p.active]
