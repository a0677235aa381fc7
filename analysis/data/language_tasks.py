"""The language tasks: an order-1 Markov language with a known entropy rate, and next-token prediction on the
standard-library text corpus (:mod:`analysis.data.corpus`).

Both are token tasks (:class:`analysis.data.task_base._TokenLM`: token ids in, next-token logits out, mean
cross-entropy in nats). The Markov chain's transition matrix is fixed by a ``numpy.random.Generator`` seeded by
the task's ``seed``; every draw uses the generator it is given.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import torch
from torch import Tensor

from analysis.core.validation import check_float, check_int
from analysis.data.corpus import Corpus, CorpusSpec, build_corpus
from analysis.data.task_base import _check_batch, _check_generator, _TokenLM

# ================================================================================================
# An order-1 Markov language with a known entropy rate


def _is_primitive(positive: np.ndarray) -> bool:
    """Whether a nonnegative matrix with this zero pattern is primitive (irreducible and aperiodic).

    Wielandt: an n x n primitive matrix has ``A^k > 0`` for ``k = (n-1)^2 + 1``; since every row of a
    stochastic matrix has a positive entry, ``A^m > 0`` implies ``A^(m+1) > 0``, so repeated squaring
    up to any exponent >= that bound decides it.
    """
    a = positive.astype(np.float64)
    n = a.shape[0]
    bound, exponent = (n - 1) ** 2 + 1, 1
    while exponent < bound:
        a = np.minimum(a @ a, 1.0)  # keep 0/1 entries: only the zero pattern matters
        exponent *= 2
    return bool((a > 0).all())


@dataclass(frozen=True)
class MarkovLanguage(_TokenLM):
    """Sequences from an order-1 Markov chain ``P(x_{t+1} = j | x_t = i) = P_ij``.

    Each row of ``P`` is drawn from Dirichlet(concentration * 1) with ``numpy.random.default_rng(seed)``
    (float64): small concentrations give peaked, low-entropy rows. Dirichlet rows are strictly
    positive almost surely, so the chain is ergodic; because float64 can still underflow to exact
    zeros at tiny concentrations, primitivity of ``P`` is checked on construction.

    Sequences start from the stationary law ``pi`` (``pi P = pi``), so the chain is stationary and the
    expected cross-entropy of the true conditional is the entropy rate at *every* position:
    ``H = -sum_i pi_i sum_j P_ij ln P_ij`` nats (``bayes_loss``). A context-free model can do no better
    than the unigram entropy ``H(pi)``; conditioning reduces entropy, so ``H <= H(pi)``.

    LM task: ``sample`` draws ``seq_len + 1`` tokens ``s`` and returns ``(s[:, :-1], s[:, 1:])``;
    ``loss`` is the mean cross-entropy in nats of logits (B, T, V) against the next tokens (B, T).
    """

    vocab_size: int = 16  # number of states V
    seq_len: int = 128  # model context length T (each sample has T + 1 tokens)
    concentration: float = 0.5  # Dirichlet parameter of every row of P
    seed: int = 0  # seed of the numpy Generator that draws P

    def __post_init__(self) -> None:
        check_int("vocab_size", self.vocab_size, minimum=2, maximum=4096)
        check_int("seq_len", self.seq_len, minimum=1)
        check_float("concentration", self.concentration, minimum=0.0, strict_minimum=True)
        check_int("seed", self.seed, minimum=0)
        if not _is_primitive(self.transition > 0):
            raise ValueError(
                f"concentration={self.concentration} gave a transition matrix with zeros that is not "
                "ergodic (float64 underflow); use a larger concentration or another seed"
            )

    @property
    def name(self) -> str:
        return f"markov_v{self.vocab_size}_c{self.concentration:g}_s{self.seed}"

    def config(self) -> dict:
        return {"kind": "markov", **dataclasses.asdict(self)}

    # -- exact quantities (float64) --------------------------------------------------------------
    @cached_property
    def transition(self) -> np.ndarray:
        """(V, V) float64 row-stochastic matrix ``P``."""
        rng = np.random.default_rng(self.seed)
        p = rng.dirichlet(np.full(self.vocab_size, float(self.concentration)), size=self.vocab_size)
        return p

    @cached_property
    def stationary(self) -> np.ndarray:
        """(V,) float64 ``pi`` with ``pi P = pi``, ``sum pi = 1``: a linear solve of ``(P^T - I) pi = 0``
        with one (redundant) equation replaced by the normalisation."""
        V = self.vocab_size
        a = self.transition.T - np.eye(V)
        a[-1, :] = 1.0
        b = np.zeros(V)
        b[-1] = 1.0
        pi = np.linalg.solve(a, b)
        # Nearly reducible chains (tiny concentrations) can give round-off negatives of order 1e-17;
        # anything larger would mean the solve failed.
        if pi.min() < -1e-12:
            raise ValueError(f"stationary distribution is ill-conditioned (min {pi.min():.3g}); raise concentration")
        pi = np.clip(pi, 0.0, None)
        return pi / pi.sum()

    @property
    def entropy_rate(self) -> float:
        """``-sum_i pi_i sum_j P_ij ln P_ij`` in nats (0 ln 0 = 0)."""
        p = self.transition
        plogp = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
        return float(-(self.stationary * plogp.sum(axis=1)).sum())

    @property
    def unigram_entropy(self) -> float:
        """``H(pi) = -sum_i pi_i ln pi_i`` in nats."""
        pi = self.stationary
        return float(-(pi * np.log(np.where(pi > 0, pi, 1.0))).sum())  # 0 ln 0 = 0

    @property
    def bayes_loss(self) -> float:
        """Expected next-token cross-entropy of the true conditional: the entropy rate (stationary start)."""
        return self.entropy_rate

    # -- sampling --------------------------------------------------------------------------------
    def sample_sequences(self, batch_size: int, length: int, generator: torch.Generator) -> Tensor:
        """(B, length) LongTensor on the generator's device: ``x_0 ~ pi``, then ``x_{t+1} ~ P[x_t]``."""
        _check_batch(batch_size)
        check_int("length", length, minimum=1)
        _check_generator(generator)
        dev = generator.device
        p = torch.tensor(self.transition, dtype=torch.float64, device=dev)  # (V, V)
        pi = torch.tensor(self.stationary, dtype=torch.float64, device=dev).clamp_min(0.0)  # (V,)
        out = torch.empty((batch_size, length), dtype=torch.long, device=dev)
        out[:, 0] = torch.multinomial(pi, batch_size, replacement=True, generator=generator)
        for t in range(1, length):
            out[:, t] = torch.multinomial(p[out[:, t - 1]], 1, generator=generator).squeeze(1)  # (B,)
        return out

    def sample(
        self, batch_size: int, generator: torch.Generator, device="cpu", dtype=torch.float32
    ) -> tuple[Tensor, Tensor]:
        """``(inputs, targets)``, both (B, seq_len) LongTensors; ``dtype`` is unused (token ids)."""
        s = self.sample_sequences(batch_size, self.seq_len + 1, generator).to(device)
        return s[:, :-1], s[:, 1:]


# ================================================================================================
# Language modelling on the standard-library text corpus


@dataclass(frozen=True)
class CorpusLM(_TokenLM):
    """Next-token prediction on the corpus of :mod:`analysis.data.corpus` (byte- or char-level).

    ``sample`` draws ``batch_size`` windows of ``seq_len + 1`` tokens from the train split at offsets
    ``torch.randint(0, n_train - seq_len, (B,), generator)`` and returns ``(w[:, :-1], w[:, 1:])``.
    ``eval_batches`` walks the validation split deterministically in non-overlapping windows, so every
    validation token after the first is predicted once (held-out loss). ``loss`` is mean CE in nats.
    The corpus is built (or loaded from its cache) on first use.
    """

    seq_len: int = 128  # model context length T
    corpus: CorpusSpec = field(default_factory=CorpusSpec)  # which text and which encoding

    def __post_init__(self) -> None:
        check_int("seq_len", self.seq_len, minimum=1)
        if isinstance(self.corpus, dict):
            object.__setattr__(self, "corpus", CorpusSpec.from_dict(self.corpus))
        if not isinstance(self.corpus, CorpusSpec):
            raise ValueError(f"corpus must be a CorpusSpec, got {type(self.corpus).__name__}")

    @property
    def name(self) -> str:
        return f"corpus_{self.corpus.source}_{self.corpus.encoding}_T{self.seq_len}"

    @cached_property
    def data(self) -> Corpus:
        c = build_corpus(self.corpus)
        if c.n_val < self.seq_len + 1 or c.n_tokens - c.n_val < self.seq_len + 1:
            raise ValueError(f"seq_len={self.seq_len} is longer than a corpus split; lower it or raise max_bytes")
        return c

    @property
    def vocab_size(self) -> int:
        return 256 if self.corpus.encoding == "byte" else self.data.vocab_size

    @cached_property
    def _train(self) -> Tensor:
        return torch.from_numpy(np.ascontiguousarray(self.data.train_tokens))

    @cached_property
    def _val(self) -> Tensor:
        return torch.from_numpy(np.ascontiguousarray(self.data.val_tokens))

    def config(self) -> dict:
        return {
            "kind": "corpus_lm",
            "seq_len": self.seq_len,
            "corpus": self.corpus.to_dict(),
            "corpus_sha256": self.data.sha256,  # the text itself, so a changed stdlib changes the key
            "vocab_size": self.vocab_size,
        }

    def window_offsets(self, batch_size: int, generator: torch.Generator) -> Tensor:
        """(B,) start offsets into the train split, uniform on ``[0, n_train - seq_len - 1]``."""
        _check_batch(batch_size)
        _check_generator(generator)
        high = self._train.shape[0] - self.seq_len  # last valid start + 1
        return torch.randint(0, high, (batch_size,), generator=generator, device=generator.device).cpu()

    def sample(
        self, batch_size: int, generator: torch.Generator, device="cpu", dtype=torch.float32
    ) -> tuple[Tensor, Tensor]:
        """``(inputs, targets)``, both (B, seq_len) LongTensors; ``dtype`` is unused (token ids)."""
        offsets = self.window_offsets(batch_size, generator)
        idx = offsets[:, None] + torch.arange(self.seq_len + 1)  # (B, T+1)
        w = self._train[idx].long().to(device)  # (B, T+1)
        return w[:, :-1], w[:, 1:]

    @property
    def n_eval_windows(self) -> int:
        """Non-overlapping windows of the validation split (stride seq_len, length seq_len + 1)."""
        return (self._val.shape[0] - 1) // self.seq_len

    def eval_batches(
        self, batch_size: int = 64, max_batches: int | None = None, device="cpu"
    ) -> Iterator[tuple[Tensor, Tensor]]:
        """Deterministic ``(inputs, targets)`` batches over the validation split, in order.

        Window k covers val tokens ``[k T, (k+1) T]``; the last batch may be smaller. ``max_batches``
        stops early (a cheaper, still deterministic, held-out estimate).
        """
        _check_batch(batch_size)
        if max_batches is not None:
            check_int("max_batches", max_batches, minimum=1)
        T, n = self.seq_len, self.n_eval_windows
        for i, start in enumerate(range(0, n, batch_size)):
            if max_batches is not None and i >= max_batches:
                return
            k = torch.arange(start, min(start + batch_size, n))
            idx = k[:, None] * T + torch.arange(T + 1)  # (b, T+1)
            w = self._val[idx].long().to(device)
            yield w[:, :-1], w[:, 1:]
