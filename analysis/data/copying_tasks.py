"""The copying tasks on token sequences: induction (continue a segment that occurred earlier) and selective
copying (Mamba's content-aware copying of the data tokens scattered among blanks).

Both are token tasks (:class:`analysis.data.task_base._TokenLM`) whose targets hold -1 where nothing is asked, so
the cross-entropy and the accuracy count only the positions asked. Every draw uses the generator it is given, in
the fixed order the class docstring states.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import Tensor

from analysis.core.validation import check_choice, check_int
from analysis.data.task_base import _check_batch, _check_generator, _masked_accuracy, _masked_lm_loss, _TokenLM

# ================================================================================================
# Induction: a repeated segment


@dataclass(frozen=True)
class Induction(_TokenLM):
    """Induction heads' task: continue a segment that occurred earlier in the sequence.

    A sequence of ``seq_len = T`` tokens: a prefix of ``T - L`` *distinct* tokens (the first ``T - L`` of a
    uniformly random permutation of the vocabulary, so every token occurs at most once there), then a copy of
    the prefix's segment ``x[p : p + L]`` (``L = segment``) at a uniformly random source offset
    ``p in {0, ..., T - 2L}``. At each repeated position ``t = T - L + i`` (``i = 0..L-1``) the target is the
    token that followed the previous occurrence of the current token, ``x[p + i + 1]``; the targets (B, T)
    hold it there and -1 elsewhere, so ``loss`` (cross-entropy) and :meth:`accuracy` count only the repeated
    positions. Draws from the generator (fixed order): ``rand(B, V)`` (its argsort: the permutations), then
    ``randint`` offsets (B,).
    """

    vocab_size: int = 32
    seq_len: int = 24
    segment: int = 8

    def __post_init__(self) -> None:
        check_int("segment", self.segment, minimum=2, maximum=10_000)
        check_int("seq_len", self.seq_len, minimum=2 * self.segment, maximum=100_000)
        check_int("vocab_size", self.vocab_size, minimum=self.seq_len - self.segment, maximum=100_000)

    @property
    def name(self) -> str:
        return f"induction_v{self.vocab_size}_T{self.seq_len}_L{self.segment}"

    @property
    def n_offsets(self) -> int:
        """Number of source offsets ``p``: ``T - 2L + 1``."""
        return self.seq_len - 2 * self.segment + 1

    def config(self) -> dict:
        return {"kind": "induction", **dataclasses.asdict(self)}

    def draw(self, batch_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """``(tokens (B, T), offsets p (B,))``."""
        _check_batch(batch_size)
        _check_generator(generator)
        B, T, L, dev = batch_size, self.seq_len, self.segment, generator.device
        prefix = torch.rand(B, self.vocab_size, generator=generator, device=dev).argsort(-1)[:, : T - L].cpu()
        p = torch.randint(0, self.n_offsets, (B,), generator=generator, device=dev).cpu()
        src = p[:, None] + torch.arange(L)  # (B, L)
        return torch.cat([prefix, prefix.gather(1, src)], dim=1), p

    def sample(
        self, batch_size: int, generator: torch.Generator, device="cpu", dtype=torch.float32
    ) -> tuple[Tensor, Tensor]:
        """``(inputs (B, T), targets (B, T))``; ``dtype`` is unused (token ids)."""
        x, p = self.draw(batch_size, generator)
        T, L = self.seq_len, self.segment
        targets = torch.full((batch_size, T), -1, dtype=torch.long)
        targets[:, T - L :] = x.gather(1, p[:, None] + 1 + torch.arange(L))
        return x.to(device), targets.to(device)

    def loss(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """Mean cross-entropy (nats) over the repeated positions only (targets >= 0)."""
        return _masked_lm_loss(outputs, targets, self.vocab_size)

    def accuracy(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """(B, L) bool: the arg-max at each repeated position is the target."""
        return _masked_accuracy(outputs, targets)


# ================================================================================================
# Selective copying (Mamba's content-aware copying)


@dataclass(frozen=True)
class SelectiveCopying(_TokenLM):
    """Selective copying (Gu and Dao's Mamba, 003#16): copy the data tokens scattered among blanks, in order.

    A sequence of ``seq_len = length + n_copy`` token ids: a region of ``length`` positions holding
    ``n_copy`` data tokens (ids ``2 .. n_values + 1``, drawn with replacement) and blanks (id 0) elsewhere,
    then ``n_copy`` go markers (id 1). At the j-th go marker the target is the j-th data token of the
    region (in order of position); the targets (B, T) hold it there and -1 elsewhere, so ``loss``
    (cross-entropy) and :meth:`accuracy` count only the go positions. ``spacing``:

    * ``"random"``: the data positions are a uniformly random ``n_copy``-subset of the region, drawn
      afresh per sequence (the selective task: where a token sits says nothing about its rank);
    * ``"fixed"``: always the positions ``(i + 1) * (length // n_copy) - 1``, i = 0..n_copy-1 (evenly
      spaced, the last one ``length // n_copy`` blanks apart): plain copying, solvable by position alone.

    Draws from the generator (fixed order): ``rand(B, length)`` (its argsort's first ``n_copy`` entries,
    sorted: the random positions; drawn for both spacings so that one seed gives both the same data
    tokens), then ``randint`` data tokens (B, n_copy).
    """

    n_copy: int = 4
    n_values: int = 8
    length: int = 16
    spacing: str = "random"  # "random" | "fixed"

    BLANK = 0
    GO = 1

    def __post_init__(self) -> None:
        check_int("n_copy", self.n_copy, minimum=1, maximum=1000)
        check_int("length", self.length, minimum=self.n_copy, maximum=100_000)
        check_int("n_values", self.n_values, minimum=2, maximum=100_000)
        check_choice("spacing", self.spacing, ("random", "fixed"))

    @property
    def name(self) -> str:
        return f"selcopy_{self.spacing}_n{self.n_copy}_v{self.n_values}_L{self.length}"

    @property
    def vocab_size(self) -> int:
        return self.n_values + 2

    @property
    def seq_len(self) -> int:
        return self.length + self.n_copy

    def fixed_positions(self) -> Tensor:
        """(n_copy,) the data positions of the fixed spacing."""
        gap = self.length // self.n_copy
        return (torch.arange(self.n_copy) + 1) * gap - 1

    def config(self) -> dict:
        return {"kind": "selective_copying", **dataclasses.asdict(self)}

    def draw(self, batch_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """``(positions (B, n_copy) increasing, data ids (B, n_copy))``."""
        _check_batch(batch_size)
        _check_generator(generator)
        B, dev = batch_size, generator.device
        pos = torch.rand(B, self.length, generator=generator, device=dev).argsort(-1)[:, : self.n_copy].cpu()
        data = torch.randint(2, self.n_values + 2, (B, self.n_copy), generator=generator, device=dev).cpu()
        if self.spacing == "fixed":
            pos = self.fixed_positions().expand(B, -1)
        return pos.sort(-1).values, data

    def sample(
        self, batch_size: int, generator: torch.Generator, device="cpu", dtype=torch.float32
    ) -> tuple[Tensor, Tensor]:
        """``(inputs (B, T), targets (B, T))``; ``dtype`` is unused (token ids)."""
        pos, data = self.draw(batch_size, generator)
        x = torch.full((batch_size, self.seq_len), self.BLANK, dtype=torch.long)
        x.scatter_(1, pos, data)
        x[:, self.length :] = self.GO
        targets = torch.full((batch_size, self.seq_len), -1, dtype=torch.long)
        targets[:, self.length :] = data
        return x.to(device), targets.to(device)

    def loss(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """Mean cross-entropy (nats) over the go positions only (targets >= 0)."""
        return _masked_lm_loss(outputs, targets, self.vocab_size)

    def accuracy(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """(B, n_copy) bool: the arg-max at each go position is the data token to copy."""
        return _masked_accuracy(outputs, targets)
