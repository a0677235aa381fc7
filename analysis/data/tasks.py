"""Training tasks: in-context regression, a Markov language, a text corpus, multi-query associative
recall, planted-key retrieval, regression on a fixed convolution and induction (the sequence pairs of
the representational-collapse probe live beside it, in ``probes/representational_collapse/pairs.py``).

A *task* is the small interface the trainer codes against (:class:`Task`): it draws a batch
``(inputs, targets)`` from an explicit ``torch.Generator`` and turns the model's outputs into a scalar
loss. Every task is a frozen dataclass validated on construction; ``config()`` is a JSON-safe dict that
fully determines it (it goes into checkpoint cache keys) and :func:`task_from_config` rebuilds it.

Randomness: every draw uses the generator it is given (on the generator's device, then moved to
``device``), never the global torch/numpy RNG, so a seed fixes a batch exactly and the global state is
untouched. Fixed random structure (a Markov transition matrix, a rotation of the regression inputs)
comes from a ``numpy.random.Generator`` seeded by a field of the task.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol, runtime_checkable

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from analysis.core.validation import check_choice, check_float, check_int, check_sequence
from analysis.data.corpus import Corpus, CorpusSpec, build_corpus
from analysis.data.regression_data import (
    LINKS,
    InputLaw,
    RegressionBatch,
    RegressionLaw,
    concat_tokens,
    interleaved_tokens,
)


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


# ================================================================================================
# 1. In-context linear regression


def _haar_orthogonal(d: int, seed: int) -> np.ndarray:
    """A Haar-random orthogonal (d, d) matrix in float64: QR of a Gaussian matrix, signs fixed."""
    g = np.random.default_rng(seed).standard_normal((d, d))
    q, r = np.linalg.qr(g)
    return q * np.sign(np.diag(r))  # make the factorisation unique, hence the law Haar


@dataclass(frozen=True)
class LinearRegressionTask:
    """In-context linear regression: ``y = w . x + noise_std * eps``, a fresh ``w`` per sequence
    (``link="relu"``: ``y = max(0, w . x) + noise_std * eps``, a nonlinear response of the same draws).

    Inputs ``x``: ``"uniform"`` U(-1/2, 1/2)^d (von Oswald et al. 2023; E[x x^T] = I/12), ``"gaussian"``
    N(0, I), or ``"anisotropic"`` N(0, Sigma) with ``Sigma = Q diag(spectrum) Q^T``. ``Q`` is the
    identity when ``basis_seed`` is None (axis-aligned covariance) and otherwise a fixed Haar-random
    rotation drawn from ``numpy.random.default_rng(basis_seed)``. Weights ``w ~ N(0, w_std^2 I)``;
    ``eps ~ N(0, 1)`` independently for every context point and for the query.

    Layouts and what ``sample`` / ``loss`` mean:

    * ``"concat"`` (von Oswald): ``sample`` returns ``(concat_tokens(x_ctx, y_ctx, x_q), y_q)`` with inputs
      (B, N+1, d+1) and targets (B,). The model (input="vectors", output="linear", d_in=d+1,
      d_out=1) is read at the query token: ``loss = 0.5 * mean_b (outputs[b, -1, 0] - y_q[b])^2``,
      the ``1/2`` squared-error convention of von Oswald et al. (their GD construction's learning rate
      assumes it). The read-out is learned, so no sign convention on the y-channel is imposed here.
    * ``"interleaved"`` (Garg): ``sample`` returns ``(interleaved_tokens(x, y), y)`` with inputs
      (B, 2N, d+1) and targets (B, N). The prediction of ``y_i`` is read at x-token position 2i and the
      loss is the plain mean squared error over all B*N predictions (Garg et al. train on every
      prefix, with no factor 1/2): ``loss = mean_{b,i} (outputs[b, 2i, 0] - y[b, i])^2``.
      The query of :meth:`draw` is not used by this layout.

    The law and its sampler are :attr:`law` (:class:`analysis.data.regression_data.RegressionLaw`), the one
    the theory's Monte Carlo draws from too. Draw order (fixed, so two tasks differing only in
    ``noise_std`` or ``layout`` see the same x and w for the same seed): all N+1 inputs, then ``w``,
    then the N+1 noise values.
    """

    d: int = 10  # input dimension
    n_points: int = 10  # in-context examples N per sequence
    x_dist: str = "uniform"  # "uniform" U(-1/2,1/2)^d | "gaussian" N(0,I) | "anisotropic" N(0, Sigma)
    spectrum: tuple[float, ...] | None = None  # eigenvalues of Sigma (length d); anisotropic only
    basis_seed: int | None = None  # None: Sigma diagonal; int: Sigma rotated by a Haar Q from this seed
    noise_std: float = 0.0  # standard deviation of the label noise
    layout: str = "concat"  # "concat" (von Oswald) | "interleaved" (Garg)
    w_std: float = 1.0  # w ~ N(0, w_std^2 I)
    link: str = "linear"  # "linear": y = w.x + noise | "relu": y = max(0, w.x) + noise (same x, w, noise)

    def __post_init__(self) -> None:
        check_choice("link", self.link, LINKS)
        check_int("d", self.d, minimum=1, maximum=4096)
        check_int("n_points", self.n_points, minimum=1, maximum=100_000)
        check_choice("x_dist", self.x_dist, ("uniform", "gaussian", "anisotropic"))
        check_choice("layout", self.layout, ("concat", "interleaved"))
        check_float("noise_std", self.noise_std, minimum=0.0)
        check_float("w_std", self.w_std, minimum=0.0, strict_minimum=True)
        if self.x_dist == "anisotropic":
            if self.spectrum is None:
                raise ValueError("spectrum must be given (d positive eigenvalues) when x_dist='anisotropic'")
            check_sequence(
                "spectrum",
                self.spectrum,
                item_check=lambda n, v: check_float(n, v, minimum=0.0, strict_minimum=True),
            )
            if len(self.spectrum) != self.d:
                raise ValueError(f"spectrum must have length d={self.d}, got {len(self.spectrum)}")
            object.__setattr__(self, "spectrum", tuple(float(v) for v in self.spectrum))
            if self.basis_seed is not None:
                check_int("basis_seed", self.basis_seed, minimum=0)
        else:
            if self.spectrum is not None:
                raise ValueError(f"spectrum must be None unless x_dist='anisotropic' (x_dist={self.x_dist!r})")
            if self.basis_seed is not None:
                raise ValueError(f"basis_seed must be None unless x_dist='anisotropic' (x_dist={self.x_dist!r})")

    # -- interface -------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        noise = f"_noise{self.noise_std:g}" if self.noise_std else ""
        link = "" if self.link == "linear" else f"_{self.link}"
        return f"linreg_d{self.d}_n{self.n_points}_{self.x_dist}{noise}{link}_{self.layout}"

    @property
    def input_kind(self) -> str:
        return "vectors"

    @property
    def vocab_size(self) -> int:
        return 0

    @property
    def d_in(self) -> int:
        return self.d + 1

    @property
    def d_out(self) -> int:
        return 1

    @property
    def seq_len(self) -> int:
        """Number of tokens in one input sequence."""
        return self.n_points + 1 if self.layout == "concat" else 2 * self.n_points

    def config(self) -> dict:
        d = dataclasses.asdict(self)
        d["spectrum"] = list(self.spectrum) if self.spectrum is not None else None
        if self.link == "linear":  # the field came later: linear tasks keep their checkpoint keys
            del d["link"]
        return {"kind": "linear_regression", **d}

    # -- the data law ----------------------------------------------------------------------------
    @cached_property
    def basis(self) -> np.ndarray:
        """(d, d) float64 orthogonal Q of ``Sigma = Q diag(spectrum) Q^T`` (identity if no rotation)."""
        if self.x_dist == "anisotropic" and self.basis_seed is not None:
            return _haar_orthogonal(self.d, self.basis_seed)
        return np.eye(self.d)

    @cached_property
    def law(self) -> RegressionLaw:
        """The task's data law: the one sampler of :mod:`analysis.data.regression_data` (the theory draws
        its Monte Carlo batches from the same law)."""
        if self.x_dist != "anisotropic":
            inputs = InputLaw.standard(self.d, self.x_dist)
        else:
            inputs = InputLaw.from_spectrum(self.spectrum, None if self.basis_seed is None else self.basis)
        return RegressionLaw(inputs, noise_std=self.noise_std, w_std=self.w_std, link=self.link)

    @property
    def covariance(self) -> np.ndarray:
        """Exact (d, d) float64 second moment ``E[x x^T]`` of one input (the mean is zero)."""
        return self.law.inputs.covariance

    # -- sampling --------------------------------------------------------------------------------
    def draw(self, batch_size: int, generator: torch.Generator, dtype=torch.float32) -> RegressionBatch:
        """Draw ``batch_size`` independent regression problems on the generator's device."""
        _check_batch(batch_size)
        _check_generator(generator)
        return self.law.sample(batch_size, self.n_points, generator, dtype=dtype)

    def sample(
        self, batch_size: int, generator: torch.Generator, device="cpu", dtype=torch.float32
    ) -> tuple[Tensor, Tensor]:
        """``(inputs, targets)``: concat (B, N+1, d+1), (B,) | interleaved (B, 2N, d+1), (B, N)."""
        b = self.draw(batch_size, generator, dtype=dtype)
        if self.layout == "concat":
            inputs, targets = b.tokens(), b.y_q
        else:
            inputs, targets = interleaved_tokens(b.x_ctx, b.y_ctx), b.y_ctx
        return inputs.to(device), targets.to(device)

    def predictions(self, outputs: Tensor) -> Tensor:
        """The model's predictions: (B,) at the query (concat) or (B, N) at the x-tokens (interleaved)."""
        _check_outputs(outputs, 3, 1, "(B, T, 1)")
        if outputs.shape[1] != self.seq_len:
            raise ValueError(f"outputs must have {self.seq_len} positions, got {outputs.shape[1]}")
        if self.layout == "concat":
            return outputs[:, -1, 0]  # (B,)
        return outputs[:, 0::2, 0]  # (B, N)

    def loss(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """concat: ``0.5 * mean (pred - y_q)^2`` (von Oswald); interleaved: ``mean (pred - y)^2`` (Garg)."""
        pred = self.predictions(outputs)
        if pred.shape != targets.shape:
            raise ValueError(f"targets must have shape {tuple(pred.shape)}, got {tuple(targets.shape)}")
        sq = (pred - targets).pow(2).mean()
        return 0.5 * sq if self.layout == "concat" else sq


@dataclass(frozen=True)
class QuerySlotReadout:
    """A concat-layout :class:`LinearRegressionTask` read by a model without a read-out (``output="none"``), as
    von Oswald et al. read their LSA stacks: the prediction is minus the query token's y-slot (the last coordinate
    of the last token) and the loss is ``0.5 * mean (yhat - y_q)^2``. Samples exactly as the wrapped task.
    Subclasses name their variant (``name`` and ``config``: the checkpoint key)."""

    inner: LinearRegressionTask  # the concat-layout regression task

    input_kind = "vectors"
    vocab_size = 0
    d_out = 0
    d_in = property(lambda self: self.inner.d_in)

    def sample(self, batch_size: int, generator: torch.Generator, device="cpu", dtype=torch.float32):
        return self.inner.sample(batch_size, generator, device=device, dtype=dtype)

    def loss(self, outputs: Tensor, targets: Tensor) -> Tensor:
        pred = -outputs[:, -1, -1]  # (B,)
        return 0.5 * (pred - targets).pow(2).mean()


# ================================================================================================
# 2. An order-1 Markov language with a known entropy rate


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
# 3. Language modelling on the standard-library text corpus


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


# ================================================================================================
# 4. Multi-query associative recall (MQAR)


@dataclass(frozen=True)
class AssociativeRecall:
    """Multi-query associative recall (Zoology's MQAR; the delta rule's home ground, 003#30).

    A sequence stores ``n_pairs`` key-value pairs -- distinct keys drawn without replacement from
    ``n_keys`` key ids, values drawn with replacement from ``n_values`` value ids (disjoint ranges) --
    then asks ``n_queries`` of the stored keys (a random subset without replacement, in random order,
    all of them when ``None``); the answer to a query is its key's value. Loss and accuracy count only
    the query positions. Two layouts:

    * ``"tokens"``: ids ``k_1 v_1 ... k_N v_N q_1 ... q_M`` with keys ``0..n_keys-1`` and values
      ``n_keys..n_keys+n_values-1`` (input="tokens", vocab ``n_keys + n_values``); targets (B, T) hold the
      value id at each query position and -1 elsewhere; the logits are (B, T, n_keys + n_values).
    * ``"paired"``: one position per pair, the vector ``[one-hot key | one-hot value]`` (input="vectors",
      ``d_in = n_keys + n_values``), then one position per query, ``[one-hot key | 0]``; targets (B, T) hold
      the value index ``0..n_values-1`` at the query positions and -1 elsewhere; the read-out is
      (B, T, n_values) (output="linear", ``d_out = n_values``). A key and its value share a position, so
      no token shift is needed before the memory is written (the zoo has no short convolution, without
      which an additive linear-attention layer without positions cannot move a key onto its value).

    Draw order from the generator (fixed): ``rand(B, n_keys)`` (keys: its argsort), ``randint`` values
    (B, N), ``rand(B, N)`` (queries: its argsort).
    """

    n_pairs: int = 8
    n_keys: int = 64
    n_values: int = 64
    n_queries: int | None = None  # None: every stored key is asked
    layout: str = "paired"  # "paired" | "tokens"

    def __post_init__(self) -> None:
        check_int("n_keys", self.n_keys, minimum=1, maximum=100_000)
        check_int("n_values", self.n_values, minimum=1, maximum=100_000)
        check_int("n_pairs", self.n_pairs, minimum=1, maximum=self.n_keys)
        if self.n_queries is not None:
            check_int("n_queries", self.n_queries, minimum=1, maximum=self.n_pairs)
        check_choice("layout", self.layout, ("paired", "tokens"))

    @property
    def name(self) -> str:
        return f"mqar_{self.layout}_n{self.n_pairs}_k{self.n_keys}_v{self.n_values}_q{self.queries}"

    @property
    def queries(self) -> int:
        return self.n_pairs if self.n_queries is None else self.n_queries

    @property
    def input_kind(self) -> str:
        return "tokens" if self.layout == "tokens" else "vectors"

    @property
    def vocab_size(self) -> int:
        return self.n_keys + self.n_values if self.layout == "tokens" else 0

    @property
    def d_in(self) -> int:
        return 0 if self.layout == "tokens" else self.n_keys + self.n_values

    @property
    def d_out(self) -> int:
        return 0 if self.layout == "tokens" else self.n_values

    @property
    def seq_len(self) -> int:
        return (2 if self.layout == "tokens" else 1) * self.n_pairs + self.queries

    def config(self) -> dict:
        return {"kind": "associative_recall", **dataclasses.asdict(self)}

    def draw(self, batch_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor, Tensor]:
        """``(keys (B, N), values (B, N), asked (B, M))``: key ids, value indices ``0..n_values-1`` and the
        indices into the N pairs of the queried keys."""
        _check_batch(batch_size)
        _check_generator(generator)
        B, N, dev = batch_size, self.n_pairs, generator.device
        keys = torch.rand(B, self.n_keys, generator=generator, device=dev).argsort(-1)[:, :N]
        values = torch.randint(0, self.n_values, (B, N), generator=generator, device=dev)
        asked = torch.rand(B, N, generator=generator, device=dev).argsort(-1)[:, : self.queries]
        return keys.cpu(), values.cpu(), asked.cpu()

    def sample(
        self, batch_size: int, generator: torch.Generator, device="cpu", dtype=torch.float32
    ) -> tuple[Tensor, Tensor]:
        """``(inputs, targets)`` in the layout of the class docstring."""
        keys, values, asked = self.draw(batch_size, generator)
        q_keys, answers = keys.gather(1, asked), values.gather(1, asked)  # (B, M)
        B, N, M = batch_size, self.n_pairs, self.queries
        if self.layout == "tokens":
            pairs = torch.stack([keys, values + self.n_keys], dim=-1).reshape(B, 2 * N)
            inputs = torch.cat([pairs, q_keys], dim=1)
        else:
            inputs = torch.zeros(B, N + M, self.n_keys + self.n_values, dtype=dtype)
            inputs[:, :N].scatter_(-1, keys[..., None], 1.0)
            inputs[:, :N].scatter_(-1, values[..., None] + self.n_keys, 1.0)
            inputs[:, N:].scatter_(-1, q_keys[..., None], 1.0)
        targets = torch.full((B, self.seq_len), -1, dtype=torch.long)
        targets[:, -M:] = answers + (self.n_keys if self.layout == "tokens" else 0)
        return inputs.to(device), targets.to(device)

    def loss(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """Mean cross-entropy (nats) over the query positions only (targets >= 0)."""
        width = self.vocab_size if self.layout == "tokens" else self.n_values
        _check_outputs(outputs, 3, width, f"(B, T, {width})")
        return F.cross_entropy(outputs.reshape(-1, width), targets.reshape(-1), ignore_index=-1)

    def accuracy(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """(B, M) bool: the arg-max at each query position is the answer."""
        asked = targets >= 0
        hits = outputs.argmax(-1) == targets
        return hits[asked].view(targets.shape[0], -1)


# ================================================================================================
# 4b. Planted-key retrieval (a needle among distractors; the attention_entropy probe, seed 000#6)


@dataclass(frozen=True)
class PlantedKeyRetrieval:
    """One query, one planted key among ``n_pairs - 1`` distractors; the answer is the planted key's value.

    A sequence holds ``n_pairs`` key-value pairs, one per position (the paired layout of
    :class:`AssociativeRecall`: the vector ``[one-hot key | one-hot value]``, ``d_in = n_keys + n_values``), then
    one query position ``[one-hot q | 0]``. The planted pair, at a uniform random position, has key ``q``; every
    other pair's key is drawn uniformly from the ``n_keys - 1`` keys other than ``q`` (distractor keys may repeat:
    the context can grow far past ``n_keys``, and exactly one key matches the query at every length); values are
    uniform over ``n_values``. Targets (B, T) hold the planted value index at the query position (the last) and -1
    elsewhere; the read-out is (B, T, n_values) (output="linear", ``d_out = n_values``).

    Draw order from the generator (fixed): query keys ``randint(n_keys)`` (B,), distractor keys
    ``randint(n_keys - 1)`` (B, N) (shifted past q), values ``randint(n_values)`` (B, N), planted positions
    ``randint(N)`` (B,).
    """

    n_pairs: int = 64
    n_keys: int = 32
    n_values: int = 8

    def __post_init__(self) -> None:
        check_int("n_pairs", self.n_pairs, minimum=1, maximum=1_000_000)
        check_int("n_keys", self.n_keys, minimum=2, maximum=100_000)
        check_int("n_values", self.n_values, minimum=2, maximum=100_000)

    @property
    def name(self) -> str:
        return f"planted_n{self.n_pairs}_k{self.n_keys}_v{self.n_values}"

    @property
    def input_kind(self) -> str:
        return "vectors"

    @property
    def vocab_size(self) -> int:
        return 0

    @property
    def d_in(self) -> int:
        return self.n_keys + self.n_values

    @property
    def d_out(self) -> int:
        return self.n_values

    @property
    def seq_len(self) -> int:
        return self.n_pairs + 1

    def config(self) -> dict:
        return {"kind": "planted_key_retrieval", **dataclasses.asdict(self)}

    def draw(self, batch_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """``(keys (B, N), values (B, N), planted (B,), query (B,))``: key ids, value indices, the planted pair's
        position and the query key (``keys[b, planted[b]] == query[b]``, no other key equals it)."""
        _check_batch(batch_size)
        _check_generator(generator)
        B, N, dev = batch_size, self.n_pairs, generator.device
        query = torch.randint(0, self.n_keys, (B,), generator=generator, device=dev)
        keys = torch.randint(0, self.n_keys - 1, (B, N), generator=generator, device=dev)
        keys = keys + (keys >= query[:, None]).long()  # every key but the query's
        values = torch.randint(0, self.n_values, (B, N), generator=generator, device=dev)
        planted = torch.randint(0, N, (B,), generator=generator, device=dev)
        keys = keys.scatter(1, planted[:, None], query[:, None])
        return keys.cpu(), values.cpu(), planted.cpu(), query.cpu()

    def sample(
        self, batch_size: int, generator: torch.Generator, device="cpu", dtype=torch.float32
    ) -> tuple[Tensor, Tensor]:
        """``(inputs (B, N + 1, d_in), targets (B, N + 1))`` in the layout of the class docstring."""
        return self.encode(*self.draw(batch_size, generator), device=device, dtype=dtype)

    def encode(self, keys: Tensor, values: Tensor, planted: Tensor, query: Tensor, device="cpu", dtype=torch.float32):
        """The inputs and targets of a :meth:`draw`."""
        B, N = keys.shape
        inputs = torch.zeros(B, N + 1, self.d_in, dtype=dtype)
        inputs[:, :N].scatter_(-1, keys[..., None], 1.0)
        inputs[:, :N].scatter_(-1, values[..., None] + self.n_keys, 1.0)
        inputs[:, N].scatter_(-1, query[:, None], 1.0)
        targets = torch.full((B, N + 1), -1, dtype=torch.long)
        targets[:, N] = values.gather(1, planted[:, None])[:, 0]
        return inputs.to(device), targets.to(device)

    def loss(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """Mean cross-entropy (nats) at the query position only (targets >= 0)."""
        _check_outputs(outputs, 3, self.n_values, f"(B, T, {self.n_values})")
        return F.cross_entropy(outputs.reshape(-1, self.n_values), targets.reshape(-1), ignore_index=-1)

    def accuracy(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """(B,) bool: the arg-max at the query position is the planted value."""
        return outputs[:, -1].argmax(-1) == targets[:, -1]


# ================================================================================================
# 5. Regression on a fixed causal convolution (the attention_only probe)


def causal_conv(x: Tensor, kernel: Tensor) -> Tensor:
    """``y_t = sum_{k < K} W_k x_(t-k)`` with zero padding: ``x`` (..., T, d), ``kernel`` (K, d_out, d)."""
    T = x.shape[-2]
    y = torch.zeros(*x.shape[:-1], kernel.shape[1], dtype=x.dtype, device=x.device)
    for k in range(min(kernel.shape[0], T)):
        y[..., k:, :] += x[..., : T - k, :] @ kernel[k].to(x.dtype).T
    return y


@dataclass(frozen=True)
class ConvolutionRegression:
    """Regress ``y = conv(x)``: white inputs ``x_t ~ N(0, I_d)`` i.i.d., targets ``y_t = sum_{k<K} W_k x_(t-k)``.

    The kernel ``W`` (K, d, d) is drawn once from ``numpy.random.default_rng(kernel_seed)``: ``W_k = c_k G_k /
    sqrt(d)`` with ``G_k`` standard Gaussian and tap scales ``c_k = decay^k`` normalised so that ``sum_k c_k^2 = 1``
    (so ``E|y_t|^2 = E|x_t|^2 = d`` in expectation over kernels). Inputs and targets are (B, T, d) (input
    "vectors", output "linear"). ``loss`` is the mean squared error over the rows ``t >= K - 1`` only (the
    first ``K - 1`` rows see the zero padding); draws: one ``randn`` (B, T, d) from the generator.
    """

    d: int = 4
    taps: int = 4  # K
    seq_len: int = 16
    decay: float = 1.0  # tap scale ratio c_(k+1) / c_k
    kernel_seed: int = 0

    def __post_init__(self) -> None:
        check_int("d", self.d, minimum=1, maximum=256)
        check_int("taps", self.taps, minimum=1, maximum=64)
        check_int("seq_len", self.seq_len, minimum=self.taps, maximum=100_000)
        check_float("decay", self.decay, minimum=0.0, strict_minimum=True)
        check_int("kernel_seed", self.kernel_seed, minimum=0)

    @property
    def name(self) -> str:
        return f"conv_d{self.d}_K{self.taps}_T{self.seq_len}_s{self.kernel_seed}"

    @property
    def input_kind(self) -> str:
        return "vectors"

    @property
    def vocab_size(self) -> int:
        return 0

    @property
    def d_in(self) -> int:
        return self.d

    @property
    def d_out(self) -> int:
        return self.d

    def config(self) -> dict:
        return {"kind": "convolution", **dataclasses.asdict(self)}

    @cached_property
    def kernel(self) -> np.ndarray:
        """(K, d, d) float64: ``W_k`` of the class docstring."""
        rng = np.random.default_rng(self.kernel_seed)
        c = self.decay ** np.arange(self.taps, dtype=np.float64)
        c /= np.sqrt((c**2).sum())
        return c[:, None, None] * rng.standard_normal((self.taps, self.d, self.d)) / np.sqrt(self.d)

    def sample(
        self, batch_size: int, generator: torch.Generator, device="cpu", dtype=torch.float32
    ) -> tuple[Tensor, Tensor]:
        _check_batch(batch_size)
        _check_generator(generator)
        x = torch.randn(batch_size, self.seq_len, self.d, generator=generator, device=generator.device)
        x = x.to(torch.float64).cpu()
        y = causal_conv(x, torch.from_numpy(self.kernel))
        return x.to(device=device, dtype=dtype), y.to(device=device, dtype=dtype)

    def loss(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """Mean squared error per coordinate over the rows ``t >= K - 1``."""
        _check_outputs(outputs, 3, self.d, f"(B, T, {self.d})")
        k = self.taps - 1
        return F.mse_loss(outputs[:, k:], targets[:, k:].to(outputs.dtype))


# ================================================================================================
# 6. Induction: a repeated segment


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
# 7. Selective copying (Mamba's content-aware copying)


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


# ================================================================================================
# 8. Nearest neighbour: the value of the key a query aligns with most (the attention_only probe, seed 004#72)


@dataclass(frozen=True)
class NearestNeighbour:
    """For each query, output the key it aligns with most among the ``N`` keys of its sequence.

    The target of Amsel, Yehudai and Bruna ("On the Benefits of Rank in Attention Layers", seed 004#72): a
    nearest-neighbour search that one full-rank attention head represents (logits ``beta q . k_j``, value the key
    itself, ``beta -> inf``) but low-rank heads do not. Here the value of a key is the key itself (the paper's
    nearest-neighbour function outputs the neighbour), so the target of query ``q`` is ``k_(j*)`` with
    ``j* = argmax_j q . k_j``.

    A sequence is ``N = n_keys`` keys followed by ``M = n_queries`` queries (``seq_len = N + M``), as vectors of
    width ``2d``: a key ``k_j`` (uniform on the unit sphere of R^d) fills channels ``[:d]``, a query ``q_m`` fills
    channels ``[d:]`` (so a head reads "query" and "key" from different channels, and a query's own token, if it
    were visible, would carry no key). Queries are Gaussian ``N(0, I/d)``: their directions are uniform on the
    sphere, so ``j*`` has the law it has for unit queries, and orthogonal projections of a query are independent
    (what the theory's additive floor, :func:`analysis.theory.attention_only.additive_floor`, uses).
    :meth:`attn_bias` hides every query token from every row, so a query attends to the ``N`` keys only (and key
    rows, under the causal mask, to the keys before them). Targets (B, M, d) are the nearest keys; ``loss`` is
    the squared error summed over the ``d`` coordinates and averaged over the queries: since ``|k_(j*)| = 1``
    it is the relative MSE ``E|yhat - k_(j*)|^2 / E|k_(j*)|^2``. Draws (fixed order): ``randn`` (B, N, d) keys,
    then ``randn`` (B, M, d) queries; the nearest key is found in float64.
    """

    d: int = 16
    n_keys: int = 16  # N
    n_queries: int = 16  # M

    def __post_init__(self) -> None:
        check_int("d", self.d, minimum=1, maximum=1024)
        check_int("n_keys", self.n_keys, minimum=1, maximum=10_000)
        check_int("n_queries", self.n_queries, minimum=1, maximum=10_000)

    @property
    def name(self) -> str:
        return f"nearest_neighbour_d{self.d}_N{self.n_keys}_M{self.n_queries}"

    @property
    def input_kind(self) -> str:
        return "vectors"

    @property
    def vocab_size(self) -> int:
        return 0

    @property
    def d_in(self) -> int:
        return 2 * self.d

    @property
    def d_out(self) -> int:
        return self.d

    @property
    def seq_len(self) -> int:
        return self.n_keys + self.n_queries

    def config(self) -> dict:
        return {"kind": "nearest_neighbour", **dataclasses.asdict(self)}

    def draw(self, batch_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """``(keys (B, N, d), queries (B, M, d))`` in float64 (keys unit, queries ``N(0, I/d)``)."""
        _check_batch(batch_size)
        _check_generator(generator)
        B, N, M, d, dev = batch_size, self.n_keys, self.n_queries, self.d, generator.device
        keys = torch.randn(B, N, d, generator=generator, device=dev).cpu().to(torch.float64)
        queries = torch.randn(B, M, d, generator=generator, device=dev).cpu().to(torch.float64) / d**0.5
        return keys / keys.norm(dim=-1, keepdim=True), queries

    @staticmethod
    def nearest(keys: Tensor, queries: Tensor) -> Tensor:
        """(B, M, d): ``k_(j*)`` with ``j* = argmax_j q_m . k_j`` for each query."""
        j = (queries @ keys.transpose(-1, -2)).argmax(-1)  # (B, M)
        return keys.gather(1, j[..., None].expand(*j.shape, keys.shape[-1]))

    def inputs(self, keys: Tensor, queries: Tensor) -> Tensor:
        """(B, N + M, 2d): keys in channels ``[:d]``, queries in ``[d:]``."""
        return torch.cat([F.pad(keys, (0, self.d)), F.pad(queries, (self.d, 0))], dim=1)

    def sample(
        self, batch_size: int, generator: torch.Generator, device="cpu", dtype=torch.float32
    ) -> tuple[Tensor, Tensor]:
        keys, queries = self.draw(batch_size, generator)
        x, y = self.inputs(keys, queries), self.nearest(keys, queries)
        return x.to(device=device, dtype=dtype), y.to(device=device, dtype=dtype)

    def attn_bias(self, T: int, device="cpu", dtype=torch.float32) -> Tensor:
        """(T, T): ``-inf`` on every query column (``j >= N``), 0 elsewhere: queries see the keys only."""
        check_int("T", T, minimum=self.n_keys + 1)
        bias = torch.zeros(T, T, dtype=dtype, device=device)
        bias[:, self.n_keys :] = float("-inf")
        return bias

    def errors(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """(B, M): ``|yhat_m - k_(j*)|^2`` at each query position (outputs (B, N + M, d))."""
        _check_outputs(outputs, 3, self.d, f"(B, {self.seq_len}, {self.d})")
        if outputs.shape[1] != self.seq_len:
            raise ValueError(f"outputs must have {self.seq_len} positions, got {outputs.shape[1]}")
        return ((outputs[:, self.n_keys :] - targets.to(outputs.dtype)) ** 2).sum(-1)

    def loss(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """Relative MSE: squared error summed over coordinates, mean over the queries (``|k_(j*)| = 1``)."""
        return self.errors(outputs, targets).mean()


# ================================================================================================
# the model a task plugs into


def model_io(task: Task) -> dict:
    """The :class:`analysis.models.ModelConfig` fields that read a ``task``'s inputs and write its outputs:
    token ids in and next-token logits out (``input="tokens"``, ``vocab_size``, ``output="lm"``), or feature
    vectors in and a linear read-out out (``input="vectors"``, ``d_in``, ``output="linear"``, ``d_out``).
    ``ValueError`` for any other ``task.input_kind``."""
    check_choice("task.input_kind", task.input_kind, ("tokens", "vectors"))
    if task.input_kind == "tokens":
        return {"input": "tokens", "vocab_size": task.vocab_size, "output": "lm"}
    return {"input": "vectors", "d_in": task.d_in, "output": "linear", "d_out": task.d_out}


# ================================================================================================
# rebuilding a task from its config


def task_from_config(config: dict):
    """Rebuild a task from ``task.config()`` (the inverse used when loading a cached checkpoint)."""
    if not isinstance(config, dict) or "kind" not in config:
        raise ValueError("config must be a dict with a 'kind' key")
    d = dict(config)
    kind = d.pop("kind")
    kinds = {
        "linear_regression": LinearRegressionTask,
        "markov": MarkovLanguage,
        "corpus_lm": CorpusLM,
        "associative_recall": AssociativeRecall,
        "planted_key_retrieval": PlantedKeyRetrieval,
        "convolution": ConvolutionRegression,
        "induction": Induction,
        "selective_copying": SelectiveCopying,
        "nearest_neighbour": NearestNeighbour,
    }
    check_choice("kind", kind, tuple(kinds))
    cls = kinds[kind]
    allowed = {f.name for f in dataclasses.fields(cls)} | (
        {"corpus_sha256", "vocab_size"} if kind == "corpus_lm" else set()
    )
    unknown = sorted(set(d) - allowed)
    if unknown:
        raise ValueError(f"config has unknown field(s) {unknown} for kind={kind!r}; allowed: {sorted(allowed)}")
    if kind == "linear_regression":
        if d.get("spectrum") is not None:
            d["spectrum"] = tuple(d["spectrum"])
        return LinearRegressionTask(**d)
    if kind in (
        "markov",
        "associative_recall",
        "planted_key_retrieval",
        "convolution",
        "induction",
        "selective_copying",
        "nearest_neighbour",
    ):
        return cls(**d)
    sha = d.pop("corpus_sha256", None)
    d.pop("vocab_size", None)
    task = CorpusLM(**d)
    if sha is not None and task.data.sha256 != sha:
        warnings.warn(
            f"corpus text differs from the one in the config (sha256 {task.data.sha256[:12]} != {sha[:12]}); "
            "a different Python version builds a different corpus",
            stacklevel=2,
        )
    return task


__all__ = [
    "AssociativeRecall",
    "ConvolutionRegression",
    "CorpusLM",
    "Induction",
    "LinearRegressionTask",
    "MarkovLanguage",
    "NearestNeighbour",
    "QuerySlotReadout",
    "RegressionBatch",
    "SelectiveCopying",
    "Task",
    "concat_tokens",
    "interleaved_tokens",
    "model_io",
    "task_from_config",
]
