"""The regression tasks: in-context linear regression (and its query-slot read-out) and regression on a fixed
causal convolution (the attention_only probe).

Every task is a frozen dataclass validated on construction; ``config()`` is a JSON-safe dict that fully
determines it (it goes into checkpoint cache keys) and :func:`analysis.data.tasks.task_from_config` rebuilds it.
Draws use the generator they are given; fixed random structure (a rotation of the regression inputs, the
convolution kernel) comes from a ``numpy.random.Generator`` seeded by a field of the task.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from analysis.core.validation import check_choice, check_float, check_int, check_sequence
from analysis.data.regression_data import (
    LINKS,
    InputLaw,
    RegressionBatch,
    RegressionLaw,
    interleaved_tokens,
)
from analysis.data.task_base import _check_batch, _check_generator, _check_outputs

# ================================================================================================
# In-context linear regression


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
# Regression on a fixed causal convolution (the attention_only probe)


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
