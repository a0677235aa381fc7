r"""In-context linear regression: the one data law, the one sampler, the one batch type, the token layouts.

Split as in Garg et al. 2022's code (samplers / tasks / baselines): an :class:`InputLaw` draws the
inputs x (the *sampler*), a :class:`RegressionLaw` adds the task vector w and the label noise (the
*task*: ``y = w.x + noise_std eps``), and the baselines live in :mod:`analysis.theory.icl_gd`. The
trainer's :class:`analysis.data.tasks.LinearRegressionTask` and the theory's Monte Carlo
(:func:`analysis.theory.icl_gd.sample_regression`) both draw through :meth:`RegressionLaw.sample`.

The law. Per task ``w ~ N(0, w_std^2 I_d)``; context inputs x_1..x_N and the query x_q i.i.d. from the
input law; ``y_i = g(w.x_i) + noise_std eps_i`` and ``y_q = g(w.x_q) + noise_std eps_q``, eps standard
normal, with the link ``g`` the identity (``link="linear"``, linear regression) or ``max(0, s)``
(``link="relu"``: a nonlinear response of the same inputs, Mahankali et al. 2023's "only the
distribution of the responses is changed").
Input laws, all written ``x = (z * scale) @ mix`` (row vectors) with z i.i.d. standard coordinates:

* ``uniform``: z ~ U(-1/2, 1/2)^d, no scale or mix; E x^2 = v = 1/12, E x^4 = m4 = 1/80 per coordinate
  (the setting of von Oswald et al. 2023).
* ``gaussian``: z ~ N(0, I), no scale or mix (Garg et al. 2022).
* ``anisotropic``: z ~ N(0, I) and ``E[x x^T] = Sigma``. From a spectrum ``s`` and an optional
  orthogonal basis Q (``Sigma = Q diag(s) Q^T``): scale = sqrt(s), mix = Q^T (none without Q). From a
  full (d, d) matrix Sigma: no scale, mix = Sigma^{1/2} (the symmetric square root).

Randomness. ``rng`` is either a ``numpy.random.Generator`` (numpy float64 arrays: the theory's Monte
Carlo) or a ``torch.Generator`` (tensors on the generator's device in the requested dtype: training).
The draw order is fixed whatever the backend, so that two laws differing only in the noise level share
x and w for the same seed: all N+1 inputs (the query last), then w, then the N+1 noise values.
Neither backend touches the global numpy or torch random state.

Token layouts. :func:`concat_tokens` (von Oswald et al. 2023): e_i = (x_i, y_i), the query (x_q, 0)
last; :func:`interleaved_tokens` (Garg et al. 2022): (x_1, 0), (0, y_1), (x_2, 0), ...
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from analysis.core.validation import check_choice, check_float, check_int

X_DISTS = ("gaussian", "uniform", "anisotropic")
LINKS = ("linear", "relu")  # y = g(w.x) + noise: g the identity, or max(0, .)
UNIFORM_V = 1.0 / 12.0  # E x^2 for x ~ U(-1/2, 1/2)
UNIFORM_M4 = 1.0 / 80.0  # E x^4 for x ~ U(-1/2, 1/2)

Array = Any  # numpy array (numpy backend) or torch tensor (torch backend)


# ================================================================================================
# Batches and token layouts


@dataclass(frozen=True, eq=False)
class RegressionBatch:
    """A batch of in-context regression problems; every row has its own task vector ``w``.

    Numpy float64 arrays when drawn with a numpy generator, tensors when drawn with a torch one.
    """

    x_ctx: Array  # (B, N, d) context inputs
    y_ctx: Array  # (B, N) context labels  g(w.x_i) + noise_std eps_i  (g: the law's link)
    x_q: Array  # (B, d) query input
    y_q: Array  # (B,) noisy query label  g(w.x_q) + noise_std eps_q
    w: Array  # (B, d) task vectors (the noiseless query target is g((w * x_q).sum(-1)))

    def tokens(self, dtype: torch.dtype | None = None) -> Tensor:
        """The concat (von Oswald) tokens (B, N+1, d+1) of this batch: :func:`concat_tokens`."""
        return concat_tokens(self.x_ctx, self.y_ctx, self.x_q, dtype=dtype)


def _as_tensor(a: Array, dtype: torch.dtype | None) -> Tensor:
    """A tensor view of ``a`` (numpy arrays shared, not copied); a tensor keeps its autograd graph."""
    if isinstance(a, Tensor):
        return a if dtype is None else a.to(dtype)
    return torch.as_tensor(np.asarray(a), dtype=dtype)


def concat_tokens(x_ctx: Array, y_ctx: Array, x_q: Array, *, dtype: torch.dtype | None = None) -> Tensor:
    """von Oswald et al. (2023) layout: tokens ``e_i = (x_i, y_i)`` and the query ``(x_q, 0)`` last.

    x_ctx (B, N, d), y_ctx (B, N), x_q (B, d)  ->  (B, N+1, d+1); the last column of the last token is 0.
    Numpy inputs become tensors of their own dtype (float64 from the numpy sampler); ``dtype`` casts
    (``tensor.to``: the autograd graph, e.g. to ``x_q`` for d yhat / d x_q, is kept).
    """
    x, y, q = (_as_tensor(a, dtype) for a in (x_ctx, y_ctx, x_q))
    if x.ndim != 3 or y.shape != x.shape[:2] or q.shape != (x.shape[0], x.shape[2]):
        raise ValueError(
            "expected x_ctx (B, N, d), y_ctx (B, N), x_q (B, d); got "
            f"{tuple(x.shape)}, {tuple(y.shape)}, {tuple(q.shape)}"
        )
    context = torch.cat([x, y.unsqueeze(-1)], dim=-1)  # (B, N, d+1)
    query = torch.cat([q, torch.zeros_like(q[:, :1])], dim=-1).unsqueeze(1)  # (B, 1, d+1)
    return torch.cat([context, query], dim=1)  # (B, N+1, d+1)


def interleaved_tokens(x: Tensor, y: Tensor) -> Tensor:
    """Garg et al. (2022) layout: ``(x_1, 0), (0, y_1), (x_2, 0), (0, y_2), ...``.

    x (B, N, d), y (B, N)  ->  (B, 2N, d+1). x-tokens sit at even positions 2i with a 0 in the last
    column; y-tokens at odd positions 2i+1 are zero except for ``y_i`` in the last column. A causal
    model reads its prediction of ``y_i`` at position 2i, having seen pairs 0..i-1 and ``x_i``.
    """
    if x.ndim != 3 or y.shape != x.shape[:2]:
        raise ValueError(f"shapes must be x (B,N,d), y (B,N); got {tuple(x.shape)}, {tuple(y.shape)}")
    B, N, d = x.shape
    x_tok = torch.cat([x, torch.zeros_like(x[..., :1])], dim=-1)  # (B, N, d+1)
    y_tok = torch.cat([torch.zeros_like(x), y.unsqueeze(-1)], dim=-1)  # (B, N, d+1)
    return torch.stack([x_tok, y_tok], dim=2).reshape(B, 2 * N, d + 1)  # (B, N, 2, d+1) -> (B, 2N, d+1)


# ================================================================================================
# Random streams: one interface over numpy and torch generators


class _NumpyStream:
    """Draws from a ``numpy.random.Generator``: float64 numpy arrays."""

    def __init__(self, rng: np.random.Generator, dtype: Any) -> None:
        if dtype is not None and np.dtype(dtype) != np.float64:
            raise ValueError(f"a numpy generator draws float64 only, got dtype={dtype}")
        self.rng = rng

    def uniform_centred(self, shape: tuple[int, ...]) -> np.ndarray:  # U(-1/2, 1/2)
        return self.rng.uniform(-0.5, 0.5, size=shape)

    def normal(self, shape: tuple[int, ...]) -> np.ndarray:
        return self.rng.standard_normal(shape)

    def constant(self, a: np.ndarray) -> np.ndarray:
        return a

    def row_dot(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:  # (B, T, d), (B, d) -> (B, T)
        return np.einsum("btd,bd->bt", x, w)

    def relu(self, s: np.ndarray) -> np.ndarray:
        return np.maximum(s, 0.0)


class _TorchStream:
    """Draws from a ``torch.Generator``: tensors on the generator's device in ``dtype``."""

    def __init__(self, generator: torch.Generator, dtype: torch.dtype | None) -> None:
        self.gen, self.dev = generator, generator.device
        self.dtype = torch.get_default_dtype() if dtype is None else dtype
        if not isinstance(self.dtype, torch.dtype) or not self.dtype.is_floating_point:
            raise ValueError(f"dtype must be a floating torch.dtype, got {dtype!r}")

    def uniform_centred(self, shape: tuple[int, ...]) -> Tensor:  # U(-1/2, 1/2)
        return torch.rand(shape, generator=self.gen, device=self.dev, dtype=self.dtype) - 0.5

    def normal(self, shape: tuple[int, ...]) -> Tensor:
        return torch.randn(shape, generator=self.gen, device=self.dev, dtype=self.dtype)

    def constant(self, a: np.ndarray) -> Tensor:  # a float64 matrix or vector, cast once
        return torch.tensor(a, dtype=self.dtype, device=self.dev)

    def row_dot(self, x: Tensor, w: Tensor) -> Tensor:  # (B, T, d), (B, d) -> (B, T)
        return torch.einsum("bnd,bd->bn", x, w)

    def relu(self, s: Tensor) -> Tensor:
        return torch.clamp_min(s, 0.0)


def _stream(rng: Any, dtype: Any) -> _NumpyStream | _TorchStream:
    if isinstance(rng, np.random.Generator):
        return _NumpyStream(rng, dtype)
    if isinstance(rng, torch.Generator):
        return _TorchStream(rng, dtype)
    raise ValueError(f"rng must be a numpy.random.Generator or a torch.Generator, got {type(rng).__name__}")


# ================================================================================================
# The input law (the sampler) and the regression law (the task)


def _sqrtm_psd(S: np.ndarray) -> np.ndarray:
    """Symmetric square root of a PSD matrix (negative round-off eigenvalues clipped to 0)."""
    lam, U = np.linalg.eigh(S)
    return (U * np.sqrt(np.clip(lam, 0.0, None))) @ U.T


def _psd_matrix(S: np.ndarray) -> np.ndarray:
    """``S`` itself after checking it is symmetric positive semi-definite (round-off tolerated)."""
    tol = 1e-12 * max(1.0, float(np.abs(S).max()))
    if not np.allclose(S, S.T, rtol=0, atol=tol):
        raise ValueError("Sigma must be symmetric")
    if np.linalg.eigvalsh(S).min() < -tol:
        raise ValueError("Sigma must be positive semi-definite")
    return S


@dataclass(frozen=True, eq=False)
class InputLaw:
    """The law of one input x: ``x = (z * scale) @ mix`` with z i.i.d. standard coordinates.

    Build it with :meth:`standard`, :meth:`from_spectrum`, :meth:`from_covariance` or :meth:`of`
    (the theory's ``(d, x_dist, Sigma)`` signature); ``covariance`` is the exact E[x x^T] (float64).
    """

    d: int  # input dimension
    x_dist: str  # "uniform" | "gaussian" | "anisotropic" (the law of z: uniform, or standard normal)
    covariance: np.ndarray  # (d, d) float64 second moment E[x x^T] (the mean is zero)
    scale: np.ndarray | None = None  # (d,) float64 factor applied to z first, or None
    mix: np.ndarray | None = None  # (d, d) float64 right factor applied second, or None

    @classmethod
    def standard(cls, d: int, x_dist: str) -> InputLaw:
        """U(-1/2, 1/2)^d (``uniform``, E[x x^T] = I/12) or N(0, I) (``gaussian``)."""
        check_int("d", d, minimum=1)
        check_choice("x_dist", x_dist, ("uniform", "gaussian"))
        return cls(d, x_dist, np.eye(d) * (UNIFORM_V if x_dist == "uniform" else 1.0))

    @classmethod
    def from_spectrum(cls, spectrum: Any, basis: np.ndarray | None = None) -> InputLaw:
        """N(0, Q diag(spectrum) Q^T): x = (z * sqrt(spectrum)) @ Q^T; Q = I (no rotation) when None."""
        s = np.asarray(spectrum, dtype=np.float64)
        if s.ndim != 1 or s.size == 0 or not np.all(np.isfinite(s)):
            raise ValueError(f"spectrum must be a non-empty finite vector, got shape {s.shape}")
        if s.min() < -1e-12 * max(1.0, float(np.abs(s).max())):
            raise ValueError("Sigma must be positive semi-definite (the spectrum has a negative entry)")
        d = s.size
        scale = np.sqrt(np.clip(s, 0.0, None))
        if basis is None:
            return cls(d, "anisotropic", np.diag(s), scale=scale)
        q = np.asarray(basis, dtype=np.float64)
        if q.shape != (d, d):
            raise ValueError(f"basis must have shape ({d}, {d}), got {q.shape}")
        return cls(d, "anisotropic", (q * s) @ q.T, scale=scale, mix=q.T)

    @classmethod
    def from_covariance(cls, Sigma: Any) -> InputLaw:
        """N(0, Sigma) for a (d, d) PSD matrix: x = z @ Sigma^{1/2} (the symmetric square root)."""
        S = np.asarray(Sigma, dtype=np.float64)
        if S.ndim != 2 or S.shape[0] != S.shape[1] or S.shape[0] == 0:
            raise ValueError(f"Sigma must be a square (d, d) matrix, got shape {S.shape}")
        S = _psd_matrix(S)
        return cls(S.shape[0], "anisotropic", S, mix=_sqrtm_psd(S))

    @classmethod
    def of(cls, d: int, x_dist: str, Sigma: Any = None) -> InputLaw:
        """The theory's signature: ``Sigma`` None (uniform, gaussian), or a (d,) spectrum (diagonal
        Sigma) or a (d, d) matrix (anisotropic)."""
        check_int("d", d, minimum=1)
        check_choice("x_dist", x_dist, X_DISTS)
        if x_dist != "anisotropic":
            if Sigma is not None:
                raise ValueError(f"Sigma must be None for x_dist={x_dist!r} (only 'anisotropic' takes it)")
            return cls.standard(d, x_dist)
        if Sigma is None:
            raise ValueError("Sigma must be given for x_dist='anisotropic' (a (d, d) matrix or a (d,) spectrum)")
        S = np.asarray(Sigma, dtype=np.float64)
        if S.shape == (d,):
            return cls.from_spectrum(S)
        if S.shape != (d, d):
            raise ValueError(f"Sigma must have shape ({d}, {d}) or ({d},), got {S.shape}")
        return cls.from_covariance(S)

    def sample(self, shape: tuple[int, ...], rng: Any, dtype: Any = None) -> Array:
        """Inputs of shape ``shape + (d,)`` drawn from ``rng`` (numpy float64, or torch in ``dtype``)."""
        return self._draw(_stream(rng, dtype), (*shape, self.d))

    def _draw(self, stream: _NumpyStream | _TorchStream, shape: tuple[int, ...]) -> Array:
        if self.x_dist == "uniform":
            return stream.uniform_centred(shape)
        x = stream.normal(shape)
        if self.scale is not None:
            x = x * stream.constant(self.scale)
        if self.mix is not None:
            x = x @ stream.constant(self.mix)  # rows: x^T mix
        return x


@dataclass(frozen=True, eq=False)
class RegressionLaw:
    """In-context regression: inputs from ``inputs``, ``w ~ N(0, w_std^2 I)``, responses
    ``g(w.x) + noise_std eps`` with the link ``g`` of ``link`` (see the module docstring). :meth:`sample`
    is the one sampler."""

    inputs: InputLaw  # the law of x (context and query alike)
    noise_std: float = 0.0  # standard deviation of the label noise
    w_std: float = 1.0  # w ~ N(0, w_std^2 I)
    link: str = "linear"  # "linear": y = w.x + noise; "relu": y = max(0, w.x) + noise

    def __post_init__(self) -> None:
        if not isinstance(self.inputs, InputLaw):
            raise ValueError(f"inputs must be an InputLaw, got {type(self.inputs).__name__}")
        check_float("noise_std", self.noise_std, minimum=0.0)
        check_float("w_std", self.w_std, minimum=0.0)
        check_choice("link", self.link, LINKS)

    @property
    def d(self) -> int:
        return self.inputs.d

    def sample(self, n_tasks: int, n_points: int, rng: Any, *, dtype: Any = None) -> RegressionBatch:
        """Draw ``n_tasks`` independent problems of ``n_points`` context examples each.

        ``rng`` a numpy Generator (float64 numpy arrays; ``dtype`` must be None or float64) or a torch
        Generator (tensors on its device; ``dtype`` None means torch's default dtype). Draw order: the
        (n_tasks, n_points + 1, d) inputs with the query last, then w (n_tasks, d), then the
        (n_tasks, n_points + 1) noise values (the same for every link: a ReLU law shares x, w and the noise
        with the linear one of the same seed). ``w`` is always the task vector, also for a nonlinear link.
        """
        check_int("n_tasks", n_tasks, minimum=1)
        check_int("n_points", n_points, minimum=1)
        stream = _stream(rng, dtype)
        B, N = n_tasks, n_points
        x = self.inputs._draw(stream, (B, N + 1, self.d))  # (B, N+1, d), query last
        w = self.w_std * stream.normal((B, self.d))  # (B, d)
        eps = stream.normal((B, N + 1))  # (B, N+1)
        s = stream.row_dot(x, w)  # (B, N+1)
        y = (stream.relu(s) if self.link == "relu" else s) + self.noise_std * eps  # (B, N+1)
        return RegressionBatch(x_ctx=x[:, :N], y_ctx=y[:, :N], x_q=x[:, N], y_q=y[:, N], w=w)


def noiseless_query_target(batch: RegressionBatch, link: str = "linear") -> np.ndarray:
    """g(w.x_q) of a numpy batch: the query's response without its noise, for the law's ``link``."""
    check_choice("link", link, LINKS)
    s = (batch.w * batch.x_q).sum(-1)
    return np.maximum(s, 0.0) if link == "relu" else s


__all__ = [
    "LINKS",
    "UNIFORM_M4",
    "UNIFORM_V",
    "X_DISTS",
    "InputLaw",
    "RegressionBatch",
    "RegressionLaw",
    "concat_tokens",
    "interleaved_tokens",
    "noiseless_query_target",
]
