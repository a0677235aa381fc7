"""The small model protocol every probe goes through.

A probe needs only a forward pass and named activations. Anything that satisfies
:class:`ProbeModel` can be probed: our :class:`~analysis.model.TinyTransformer`, or an adapter around
another library's model that exposes the same hook names. Probes must not import the zoo's classes
to inspect a model; they ask these properties instead.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import torch

from analysis.hooks import HookPoint


@runtime_checkable
class ProbeModel(Protocol):
    """Forward pass plus named hook points (TransformerLens vocabulary, see :mod:`analysis.hooks`)."""

    @property
    def n_layers(self) -> int: ...

    @property
    def causal(self) -> bool: ...

    @property
    def input_kind(self) -> str:  # "tokens" | "vectors"
        ...

    def named_hook_points(self) -> dict[str, HookPoint]: ...

    def hook_names(self) -> list[str]: ...

    def __call__(self, inputs: torch.Tensor, attn_bias: Any = None) -> torch.Tensor: ...


def describe(model: Any) -> dict[str, Any]:
    """What a probe may rely on, as a plain dict (used in error messages and provenance)."""
    if not isinstance(model, ProbeModel):
        raise ValueError(
            f"model must satisfy analysis.protocol.ProbeModel (n_layers, causal, input_kind, "
            f"named_hook_points, hook_names, __call__), got {type(model).__name__}"
        )
    return {"n_layers": model.n_layers, "causal": model.causal, "input_kind": model.input_kind}
