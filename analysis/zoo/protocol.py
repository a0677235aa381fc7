"""The small model protocol every probe goes through.

A probe needs only a forward pass and named activations. Anything that satisfies
:class:`ProbeModel` can be probed: our :class:`~analysis.zoo.model.TinyTransformer`, or an adapter around
another library's model that exposes the same hook names. Probes must not import the zoo's classes
to inspect a model; they ask these properties instead.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import torch

from analysis.zoo.hooks import HookPoint


@runtime_checkable
class ProbeModel(Protocol):
    """Forward pass plus named hook points (TransformerLens vocabulary, see :mod:`analysis.zoo.hooks`)."""

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
            f"model must satisfy analysis.zoo.protocol.ProbeModel (n_layers, causal, input_kind, "
            f"named_hook_points, hook_names, __call__), got {type(model).__name__}"
        )
    return {"n_layers": model.n_layers, "causal": model.causal, "input_kind": model.input_kind}


# ------------------------------------------------------------------------------------------------
# Optional properties. A model may expose them directly (the Hugging Face adapter does); for the zoo
# they are read off its ModelConfig. Probes use these functions instead of reaching into ``.config``.
# ------------------------------------------------------------------------------------------------
def vocab_size(model: Any) -> int | None:
    """Number of token ids the model embeds (``None`` for models that read vectors)."""
    if getattr(model, "input_kind", "tokens") != "tokens":
        return None
    if isinstance(getattr(model, "vocab_size", None), int):
        return model.vocab_size
    cfg = getattr(model, "config", None)
    return getattr(cfg, "vocab_size", None)


def max_positions(model: Any) -> int | None:
    """Longest sequence the model accepts (learned absolute positions), ``None`` if unbounded."""
    if hasattr(model, "max_positions"):
        return model.max_positions
    cfg = getattr(model, "config", None)
    if getattr(cfg, "pos", None) == "learned":
        return int(cfg.max_len)
    return None


def check_length(model: Any, n_tokens: int, what: str = "sequence length") -> None:
    """``ValueError`` naming ``what`` if ``n_tokens`` exceeds :func:`max_positions`."""
    limit = max_positions(model)
    if limit is not None and n_tokens > limit:
        raise ValueError(f"{what} {n_tokens} exceeds the model's {limit} positions; use at most {limit}")


def encode_text(model: Any, text: str) -> torch.Tensor:
    """Token ids (T,) of ``text`` in the model's own vocabulary.

    A model with a tokenizer exposes ``encode(text)``; byte-level zoo models (vocab_size >= 256) take
    the UTF-8 bytes, the encoding our corpus language models are trained on.
    """
    if hasattr(model, "encode"):
        return model.encode(text)
    v = vocab_size(model)
    if v is None or v < 256:
        raise ValueError(
            f"cannot encode text for a model with vocab_size={v}: it needs a tokenizer (encode) or >= 256 byte ids"
        )
    return torch.tensor(list(text.encode("utf-8")), dtype=torch.long)
