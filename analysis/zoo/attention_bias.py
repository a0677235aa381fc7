"""Additive attention-logit biases a forward pass takes: :class:`PrefixKeyBias` (a value per query row on the
first ``n`` keys, kept in ``O(T)`` memory so that row-blocked attention never builds a ``T x T`` bias),
:func:`bias_block` (the slice of a bias one block of query rows needs) and :func:`layer_biases` (one bias per
layer from a forward's ``attn_bias`` argument, shared by the zoo and the Hugging Face adapters).
"""

from __future__ import annotations

from typing import Any

import torch

from analysis.core.validation import check_int


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


def layer_biases(attn_bias, n_layers: int) -> list[torch.Tensor | None]:
    """One additive logit bias (or None) per layer from a forward's ``attn_bias`` argument: ``None`` or
    one tensor for every layer, or a sequence of ``n_layers`` entries (shared by the adapters)."""
    if attn_bias is None or isinstance(attn_bias, (torch.Tensor, PrefixKeyBias)):
        return [attn_bias] * n_layers
    biases = list(attn_bias)
    if len(biases) != n_layers:
        raise ValueError(f"attn_bias must be a tensor or a sequence of n_layers={n_layers} tensors, got {len(biases)}")
    return biases
