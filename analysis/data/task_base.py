"""The task interface and what every task shares.

A *task* is the small interface the trainer codes against (:class:`Task`): it draws a batch ``(inputs, targets)``
from an explicit ``torch.Generator`` and turns the model's outputs into a scalar loss. Here too: the argument
checks of the samplers and losses, the next-token base class of the token tasks (:class:`_TokenLM`), the
(masked) cross-entropies and accuracies they score with, and :func:`model_io`, the model fields that plug a task
in. The tasks themselves live in :mod:`analysis.data.regression_tasks`, :mod:`analysis.data.language_tasks`,
:mod:`analysis.data.recall_tasks` and :mod:`analysis.data.copying_tasks` (all re-exported by
:mod:`analysis.data.tasks`).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch
import torch.nn.functional as F
from torch import Tensor

from analysis.core.validation import check_choice, check_int


@runtime_checkable
class Task(Protocol):
    name: str  # short, parameter-encoding name (figure labels, file names)
    input_kind: str  # "tokens" (LongTensor ids) | "vectors" (float features)
    vocab_size: int  # for tokens (0 otherwise)
    d_in: int  # for vectors (0 otherwise)
    d_out: int  # for vectors (0 otherwise)

    def config(self) -> dict: ...

    def sample(
        self, batch_size: int, generator: torch.Generator, device="cpu", dtype=torch.float32
    ) -> tuple[Tensor, Tensor]: ...

    def loss(self, outputs: Tensor, targets: Tensor) -> Tensor: ...


def _check_batch(batch_size) -> None:
    check_int("batch_size", batch_size, minimum=1)


def _check_generator(generator) -> None:
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator, got {type(generator).__name__}")


def _check_outputs(outputs: Tensor, ndim: int, last: int | None, what: str) -> None:
    if outputs.ndim != ndim or (last is not None and outputs.shape[-1] != last):
        raise ValueError(f"outputs must have shape {what}, got {tuple(outputs.shape)}")


class _TokenLM:
    """What every next-token language task shares: token inputs, LM logits out, cross-entropy."""

    @property
    def input_kind(self) -> str:
        return "tokens"

    @property
    def d_in(self) -> int:
        return 0

    @property
    def d_out(self) -> int:
        return 0

    def loss(self, outputs: Tensor, targets: Tensor) -> Tensor:
        return _lm_loss(outputs, targets, self.vocab_size)


def _lm_loss(outputs: Tensor, targets: Tensor, vocab_size: int) -> Tensor:
    """Mean next-token cross-entropy in nats: logits (B, T, V) against ids (B, T)."""
    _check_outputs(outputs, 3, vocab_size, f"(B, T, {vocab_size})")
    if targets.shape != outputs.shape[:2]:
        raise ValueError(f"targets must have shape {tuple(outputs.shape[:2])}, got {tuple(targets.shape)}")
    return F.cross_entropy(outputs.reshape(-1, vocab_size), targets.reshape(-1))  # (B*T, V) vs (B*T,)


def _masked_lm_loss(outputs: Tensor, targets: Tensor, vocab_size: int) -> Tensor:
    """Mean cross-entropy in nats over the positions asked (targets >= 0; -1 elsewhere)."""
    _check_outputs(outputs, 3, vocab_size, f"(B, T, {vocab_size})")
    return F.cross_entropy(outputs.reshape(-1, vocab_size), targets.reshape(-1), ignore_index=-1)


def _masked_accuracy(outputs: Tensor, targets: Tensor) -> Tensor:
    """(B, asked per row) bool: the arg-max at each position asked (targets >= 0) is the target."""
    asked = targets >= 0
    return (outputs.argmax(-1) == targets)[asked].view(targets.shape[0], -1)


# ================================================================================================
# the model a task plugs into


def model_io(task: Task) -> dict:
    """The :class:`analysis.zoo.model.ModelConfig` fields that read a ``task``'s inputs and write its outputs:
    token ids in and next-token logits out (``input="tokens"``, ``vocab_size``, ``output="lm"``), or feature
    vectors in and a linear read-out out (``input="vectors"``, ``d_in``, ``output="linear"``, ``d_out``).
    ``ValueError`` for any other ``task.input_kind``."""
    check_choice("task.input_kind", task.input_kind, ("tokens", "vectors"))
    if task.input_kind == "tokens":
        return {"input": "tokens", "vocab_size": task.vocab_size, "output": "lm"}
    return {"input": "vectors", "d_in": task.d_in, "output": "linear", "d_out": task.d_out}
