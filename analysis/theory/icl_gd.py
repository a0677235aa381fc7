r"""In-context linear regression as gradient descent: baselines, the exact construction, closed forms.

Everything here is float64 and model-free: it is the theory side of the ``icl_gd`` probe (issue 4),
following von Oswald et al. 2023 (construction, metrics), Ahn et al. 2023 and Mahankali et al. 2023
(the optimum of one linear self-attention layer is one step of preconditioned GD) and Garg et al. 2022
(baselines).

Conventions (fixed once, used everywhere below)
-----------------------------------------------
Data. A task draws ``w ~ N(0, w_std^2 I_d)``, context inputs ``x_i`` (i = 1..N) and a query ``x_q``
i.i.d. from the input law, and labels ``y_i = w.x_i + sigma eps_i``, ``y_q = w.x_q + sigma eps_q``
with standard normal ``eps``. Input laws: ``gaussian`` N(0, I); ``uniform`` U(-1/2, 1/2)^d (per
coordinate E x^2 = v = 1/12, E x^4 = m4 = 1/80); ``anisotropic`` N(0, Sigma). ``Sigma`` always
denotes the input second moment E[x x^T].

Loss. The *loss* of a predictor is the plain mean squared error E[(yhat - y_q)^2] against the
noisy query label (``query_noise=True``, the default; ``False`` measures against w.x_q, i.e. removes
the additive sigma^2). von Oswald et al. report half of this (their ``compute_loss`` is 0.5 * MSE).

Gradient descent. The in-context loss is L(w) = 1/(2N) sum_i (w.x_i - y_i)^2 (von Oswald et al.),
so grad L(w) = (1/N) X^T (X w - y) and one step from w = 0 with learning rate eta and preconditioner
Gamma is  w_1 = eta Gamma h,  h := (1/N) sum_i y_i x_i,  yhat = x_q^T w_1 = eta x_q^T Gamma h.
With Gamma = I: yhat = eta (1/N) sum_i y_i x_i.x_q. Garg et al.'s "averaging" is eta = 1.

Ridge. w_hat = argmin_w sum_i (y_i - w.x_i)^2 + lam |w|^2 = (X^T X + lam I)^{-1} X^T y (a *sum*
over the context, not a mean). With the Gaussian prior above the posterior mean is this ridge with
lam* = sigma^2 / w_std^2, the Bayes-optimal predictor for every input law (the posterior of w given
the context is Gaussian whatever the law of x). lam = 0 means the min-norm least-squares solution.

Linear self-attention (LSA) layer, on tokens e_i = (x_i, y_i) in R^{d+1}, query token (x_q, 0)::

    e_j <- e_j + P W_V sum_{i in context} e_i (e_i^T W_K^T W_Q e_j)

no softmax, no 1/sqrt(d) scale (the 1/N lives in P), keys and values from the N context tokens only
(von Oswald's default ``include_query=False``), every token j (context and query) updated. The
prediction is read from the query token's y-slot with a minus sign: yhat = -e_q[y] (their
``preds = -h[:, -1, -1]``): the construction writes -(prediction) there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np
import sympy as sp
import torch

from analysis.validation import check_bool, check_choice, check_float, check_int

X_DISTS = ("gaussian", "uniform", "anisotropic")
UNIFORM_V = 1.0 / 12.0  # E x^2 for x ~ U(-1/2, 1/2)
UNIFORM_M4 = 1.0 / 80.0  # E x^4 for x ~ U(-1/2, 1/2)

ArrayLike = Any  # numpy array or torch tensor


# ================================================================================================
# Sampling (float64, for Monte Carlo checks)
# ================================================================================================


class RegressionBatch(NamedTuple):
    """A batch of in-context regression tasks (numpy float64)."""

    x_ctx: np.ndarray  # (B, N, d) context inputs
    y_ctx: np.ndarray  # (B, N) context labels w.x_i + sigma eps_i
    x_q: np.ndarray  # (B, d) query input
    y_q: np.ndarray  # (B,) noisy query label w.x_q + sigma eps_q
    w: np.ndarray  # (B, d) task weights (noiseless target: (w * x_q).sum(-1))


def geometric_spectrum(d: int, cond: float) -> np.ndarray:
    """Eigenvalues geometrically spaced from ``cond`` times the smallest to the smallest, mean 1.

    lambda_k proportional to cond^{-k/(d-1)}, k = 0..d-1, rescaled so tr Sigma = d (the same signal
    variance w_std^2 tr Sigma as the isotropic Gaussian). ``cond`` = lambda_max / lambda_min.
    """
    check_int("d", d, minimum=1)
    check_float("cond", cond, minimum=1.0)
    if d == 1:
        return np.ones(1)
    lam = float(cond) ** (-np.arange(d) / (d - 1))
    return lam * d / lam.sum()


def second_moment(d: int, x_dist: str, Sigma: ArrayLike | None = None) -> np.ndarray:
    """E[x x^T] for the input law: I, I/12, or ``Sigma`` (a (d, d) PSD matrix or a (d,) spectrum)."""
    check_int("d", d, minimum=1)
    check_choice("x_dist", x_dist, X_DISTS)
    if x_dist != "anisotropic":
        if Sigma is not None:
            raise ValueError(f"Sigma must be None for x_dist={x_dist!r} (only 'anisotropic' takes it)")
        return np.eye(d) * (UNIFORM_V if x_dist == "uniform" else 1.0)
    if Sigma is None:
        raise ValueError("Sigma must be given for x_dist='anisotropic' (a (d, d) matrix or a (d,) spectrum)")
    S = np.asarray(Sigma, dtype=np.float64)
    if S.shape == (d,):
        S = np.diag(S)
    if S.shape != (d, d):
        raise ValueError(f"Sigma must have shape ({d}, {d}) or ({d},), got {S.shape}")
    if not np.allclose(S, S.T, rtol=0, atol=1e-12 * max(1.0, np.abs(S).max())):
        raise ValueError("Sigma must be symmetric")
    if np.linalg.eigvalsh(S).min() < -1e-12 * max(1.0, np.abs(S).max()):
        raise ValueError("Sigma must be positive semi-definite")
    return S


def _sqrtm_psd(S: np.ndarray) -> np.ndarray:
    lam, U = np.linalg.eigh(S)
    return (U * np.sqrt(np.clip(lam, 0.0, None))) @ U.T


def sample_regression(
    n_tasks: int,
    d: int,
    N: int,
    x_dist: str,
    sigma: float,
    rng: np.random.Generator,
    Sigma: ArrayLike | None = None,
    w_std: float = 1.0,
) -> RegressionBatch:
    """Draw ``n_tasks`` independent regression tasks (see the module docstring for the law)."""
    check_int("n_tasks", n_tasks, minimum=1)
    check_int("N", N, minimum=1)
    check_float("sigma", sigma, minimum=0.0)
    check_float("w_std", w_std, minimum=0.0)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    S = second_moment(d, x_dist, Sigma)
    shape = (n_tasks, N + 1, d)
    if x_dist == "uniform":
        x = rng.uniform(-0.5, 0.5, size=shape)
    else:
        x = rng.standard_normal(shape)
        if x_dist == "anisotropic":
            x = x @ _sqrtm_psd(S)  # rows z^T S^{1/2}: covariance S^{1/2} S^{1/2} = S
    w = w_std * rng.standard_normal((n_tasks, d))
    eps = rng.standard_normal((n_tasks, N + 1))
    y = np.einsum("btd,bd->bt", x, w) + sigma * eps  # (B, N+1)
    return RegressionBatch(x[:, :N], y[:, :N], x[:, N], y[:, N], w)


# ================================================================================================
# Baselines: one call signature  predictor(x_ctx (B,N,d), y_ctx (B,N), x_q (B,d)) -> yhat (B,)
# ================================================================================================


def _t(a: ArrayLike) -> torch.Tensor:
    """float64 tensor view of ``a`` (keeps the autograd graph of a tensor input)."""
    if isinstance(a, torch.Tensor):
        return a.to(torch.float64)
    return torch.as_tensor(np.asarray(a, dtype=np.float64))


def _batch(x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> tuple[torch.Tensor, ...]:
    xc, yc, xq = _t(x_ctx), _t(y_ctx), _t(x_q)
    if xc.ndim != 3 or yc.shape != xc.shape[:2] or xq.shape != (xc.shape[0], xc.shape[2]):
        raise ValueError(
            "expected x_ctx (B, N, d), y_ctx (B, N), x_q (B, d); got "
            f"{tuple(xc.shape)}, {tuple(yc.shape)}, {tuple(xq.shape)}"
        )
    return xc, yc, xq


def _fmt(x: float) -> str:
    return f"{x:.4g}"


class Predictor(Protocol):
    """Anything with ``name`` and ``__call__(x_ctx, y_ctx, x_q) -> yhat (B,)`` (a trained model too)."""

    name: str

    def __call__(self, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> torch.Tensor: ...


class LinearInY:
    """Mixin for predictors of the form yhat = x_q^T A(X) y (A depends on the context inputs only).

    ``linear_map(x_ctx) -> A`` of shape (B, d, N) lets :func:`expected_loss_mc` average the loss over
    w, the noise and x_q analytically (Rao-Blackwellisation, see :func:`conditional_loss_linear`).
    """

    def linear_map(self, x_ctx: ArrayLike) -> torch.Tensor:  # pragma: no cover - interface
        raise NotImplementedError

    def __call__(self, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> torch.Tensor:
        xc, yc, xq = _batch(x_ctx, y_ctx, x_q)
        w_hat = torch.einsum("bdn,bn->bd", self.linear_map(xc), yc)  # (B, d)
        return (w_hat * xq).sum(-1)


@dataclass(frozen=True)
class ZeroPredictor:
    """yhat = 0. Its loss is the label variance  w_std^2 tr Sigma (+ sigma^2)."""

    @property
    def name(self) -> str:
        return "zero"

    def __call__(self, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> torch.Tensor:
        _, _, xq = _batch(x_ctx, y_ctx, x_q)
        return xq.sum(-1) * 0.0  # zeros that keep a (zero) gradient path to x_q


def _check_gamma(gamma: ArrayLike | None) -> np.ndarray | None:
    if gamma is None:
        return None
    g = np.asarray(gamma, dtype=np.float64)
    if g.ndim != 2 or g.shape[0] != g.shape[1] or not np.all(np.isfinite(g)):
        raise ValueError(f"gamma must be a finite square (d, d) matrix, got shape {g.shape}")
    return g


@dataclass(frozen=True, eq=False)
class GD(LinearInY):
    """``steps`` steps of (preconditioned) GD on L(w) = 1/(2N) |X w - y|^2 from w = 0.

    w_{k+1} = w_k - eta_k Gamma (1/N) X^T (X w_k - y),  yhat = x_q^T w_K. As a linear map of y:
    A_0 = 0,  A_{k+1} = A_k - eta_k Gamma (S A_k - X^T / N),  S = X^T X / N.
    ``eta`` is one float or one per step; ``gamma`` None means the identity.
    """

    eta: float | tuple[float, ...] = 1.0  # learning rate (or a schedule of length `steps`)
    steps: int = 1  # number of GD steps K
    gamma: Any = None  # optional (d, d) preconditioner Gamma

    def __post_init__(self) -> None:
        check_int("steps", self.steps, minimum=1)
        for k, e in enumerate(self.etas):
            check_float(f"eta[{k}]", e)
        object.__setattr__(self, "gamma", _check_gamma(self.gamma))

    @property
    def etas(self) -> tuple[float, ...]:
        if isinstance(self.eta, Sequence):
            if len(self.eta) != self.steps:
                raise ValueError(f"eta must have one entry per step ({self.steps}), got {len(self.eta)}")
            return tuple(self.eta)
        return (self.eta,) * self.steps

    @property
    def name(self) -> str:
        etas = self.etas
        eta = _fmt(etas[0]) if len(set(etas)) == 1 else "[" + ",".join(map(_fmt, etas)) + "]"
        pre = "p" if self.gamma is not None else ""  # "p": preconditioned
        return f"{pre}gd{self.steps}_eta={eta}"

    def _gamma_t(self, d: int) -> torch.Tensor:
        if self.gamma is None:
            return torch.eye(d, dtype=torch.float64)
        if self.gamma.shape != (d, d):
            raise ValueError(f"gamma has shape {self.gamma.shape}, the data have d = {d}")
        return torch.as_tensor(self.gamma)

    def linear_map(self, x_ctx: ArrayLike) -> torch.Tensor:
        xc = _t(x_ctx)
        B, N, d = xc.shape
        G = self._gamma_t(d)
        S = xc.transpose(1, 2) @ xc / N  # (B, d, d)
        XtN = xc.transpose(1, 2) / N  # (B, d, N)
        A = torch.zeros(B, d, N, dtype=torch.float64)
        for eta in self.etas:
            A = A - eta * (G @ (S @ A - XtN))
        return A

    def __call__(self, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> torch.Tensor:
        xc, yc, xq = _batch(x_ctx, y_ctx, x_q)
        B, N, d = xc.shape
        G = self._gamma_t(d)
        w = torch.zeros(B, d, dtype=torch.float64)
        for eta in self.etas:
            grad = torch.einsum("bnd,bn->bd", xc, (xc @ w.unsqueeze(-1)).squeeze(-1) - yc) / N  # (B, d)
            w = w - eta * grad @ G.T  # row form of Gamma grad
        return (w * xq).sum(-1)


def one_step_gd(eta: float, gamma: ArrayLike | None = None) -> GD:
    """One GD step from w = 0: yhat = eta x_q^T Gamma (1/N) sum_i y_i x_i."""
    return GD(eta=eta, steps=1, gamma=gamma)


@dataclass(frozen=True)
class Averaging(LinearInY):
    """Garg et al.'s averaging: yhat = (1/N) sum_i y_i x_i.x_q (one GD step with eta = 1)."""

    @property
    def name(self) -> str:
        return "averaging"

    def linear_map(self, x_ctx: ArrayLike) -> torch.Tensor:
        xc = _t(x_ctx)
        return xc.transpose(1, 2) / xc.shape[1]  # (B, d, N)


@dataclass(frozen=True)
class LeastSquares(LinearInY):
    """Min-norm least squares: w_hat = pinv(X) y (ordinary least squares when N >= d)."""

    @property
    def name(self) -> str:
        return "least_squares"

    def linear_map(self, x_ctx: ArrayLike) -> torch.Tensor:
        return torch.linalg.pinv(_t(x_ctx))  # (B, d, N)


@dataclass(frozen=True)
class Ridge(LinearInY):
    """w_hat = (X^T X + lam I)^{-1} X^T y (sum convention); lam = 0 falls back to min-norm LS."""

    lam: float = 1.0  # ridge penalty on |w|^2 against the summed squared error

    def __post_init__(self) -> None:
        check_float("lam", self.lam, minimum=0.0)

    @classmethod
    def bayes_optimal(cls, sigma: float, w_std: float = 1.0) -> Ridge:
        """The posterior mean under w ~ N(0, w_std^2 I), Gaussian noise: lam* = sigma^2 / w_std^2."""
        check_float("w_std", w_std, minimum=0.0, strict_minimum=True)
        check_float("sigma", sigma, minimum=0.0)
        return cls(lam=float(sigma) ** 2 / float(w_std) ** 2)

    @property
    def name(self) -> str:
        return f"ridge_lam={_fmt(self.lam)}"

    def linear_map(self, x_ctx: ArrayLike) -> torch.Tensor:
        xc = _t(x_ctx)
        if self.lam == 0.0:
            return torch.linalg.pinv(xc)
        # (X^T X + lam I)^{-1} X^T = V diag(s / (s^2 + lam)) U^T: the SVD form stays accurate when lam is below
        # the float64 resolution of a rank-deficient X^T X (fewer examples than dimensions), where solving
        # the normal equations fails or returns noise
        U, S, Vh = torch.linalg.svd(xc, full_matrices=False)  # (B, N, r), (B, r), (B, r, d)
        return Vh.transpose(1, 2) @ ((S / (S * S + self.lam))[..., None] * U.transpose(1, 2))  # (B, d, N)


@dataclass(frozen=True)
class KNN:
    """Average label of the k context points nearest (Euclidean) to x_q (all N if k > N)."""

    k: int = 3  # number of neighbours

    def __post_init__(self) -> None:
        check_int("k", self.k, minimum=1)

    @property
    def name(self) -> str:
        return f"knn_k={self.k}"

    def __call__(self, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> torch.Tensor:
        xc, yc, xq = _batch(x_ctx, y_ctx, x_q)
        dist = ((xc - xq.unsqueeze(1)) ** 2).sum(-1)  # (B, N)
        k = min(self.k, xc.shape[1])
        idx = torch.topk(dist, k, dim=1, largest=False).indices  # (B, k)
        return torch.gather(yc, 1, idx).mean(1)


# ================================================================================================
# The analytic construction (von Oswald et al. 2023, Prop. 1 and Sec. 3)
# ================================================================================================


def build_tokens(x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> torch.Tensor:
    """Tokens (B, N+1, d+1): e_i = (x_i, y_i) for the context, (x_q, 0) last."""
    xc, yc, xq = _batch(x_ctx, y_ctx, x_q)
    ctx = torch.cat([xc, yc.unsqueeze(-1)], dim=-1)  # (B, N, d+1)
    query = torch.cat([xq, torch.zeros_like(xq[:, :1])], dim=-1).unsqueeze(1)  # (B, 1, d+1)
    return torch.cat([ctx, query], dim=1)


def read_prediction(tokens: torch.Tensor) -> torch.Tensor:
    """yhat = -(the query token's y-slot), von Oswald's sign convention."""
    return -tokens[:, -1, -1]


def gd_lsa_weights(d: int, eta: float, N: int, gamma: ArrayLike | None = None) -> dict[str, np.ndarray]:
    r"""Weights of one LSA layer whose query output is one (preconditioned) GD step from w = 0.

    With D = d + 1 and blocks ordered (x, y)::

        W_K = [[I, 0], [0, 0]]     W_Q = [[Gamma^T, 0], [0, 0]]  -> W_K^T W_Q = [[Gamma^T, 0], [0, 0]]
        W_V = [[0, 0], [0, -1]]    P   = [[0, 0], [0, eta / N]]

    Then for any token j:  score_ij = x_i^T Gamma^T x_j,  P W_V e_i = (0, -eta y_i / N), so
        e_j[y] <- e_j[y] - (eta/N) sum_i y_i x_i^T Gamma^T x_j = e_j[y] - x_j^T (eta Gamma h),
    and the x-parts never change. On the query (y-slot 0) this writes -x_q^T w_1 with
    w_1 = eta Gamma h, the GD step; hence yhat = -e_q[y]. (Gamma^T, not Gamma, appears in the
    scores because x_j^T Gamma h = sum_i y_i x_i^T Gamma^T x_j / N; they agree for symmetric Gamma.)
    """
    check_int("d", d, minimum=1)
    check_int("N", N, minimum=1)
    check_float("eta", eta)
    g = np.eye(d) if gamma is None else _check_gamma(gamma)
    if g.shape != (d, d):
        raise ValueError(f"gamma must have shape ({d}, {d}), got {g.shape}")
    D = d + 1
    W_K = np.zeros((D, D))
    W_K[:d, :d] = np.eye(d)
    W_Q = np.zeros((D, D))
    W_Q[:d, :d] = g.T
    W_V = np.zeros((D, D))
    W_V[d, d] = -1.0
    P = np.zeros((D, D))
    P[d, d] = float(eta) / N
    return {"W_K": W_K, "W_Q": W_Q, "W_V": W_V, "P": P}


def gd_lsa_stack(
    d: int, eta: float | Sequence[float], N: int, layers: int, gamma: ArrayLike | None = None
) -> list[dict[str, np.ndarray]]:
    r"""K = ``layers`` stacked LSA layers computing K steps of (preconditioned) GD from w = 0.

    Why stacking the one-step layer works (von Oswald et al. Sec. 3): write r_i^{(k)} = y_i - w_k.x_i
    for the residuals after k GD steps. GD gives w_{k+1} = w_k + eta_k Gamma (1/N) sum_i r_i^{(k)} x_i,
    hence  r_j^{(k+1)} = r_j^{(k)} - (eta_k/N) sum_i r_i^{(k)} x_i^T Gamma^T x_j.
    This is exactly the layer's update of the y-slots when the context y-slots hold r^{(k)} (they
    start at y = r^{(0)}), and for the query slot s_k = -w_k.x_q (starting at 0 = -w_0.x_q) it
    gives s_{k+1} = s_k - x_q^T (w_{k+1} - w_k) = -w_{k+1}.x_q. So after K layers yhat = -s_K =
    w_K.x_q. The identity needs keys/values from the context tokens only (a query token in the
    keys would feed s_k back into later layers) and x-parts that stay fixed (P has zero x-rows).
    """
    check_int("layers", layers, minimum=1)
    etas = list(eta) if isinstance(eta, Sequence) else [eta] * layers
    if len(etas) != layers:
        raise ValueError(f"eta must be a float or have one entry per layer ({layers}), got {len(etas)}")
    return [gd_lsa_weights(d, e, N, gamma) for e in etas]


def lsa_forward(
    tokens: ArrayLike,
    weights: Mapping[str, ArrayLike] | Sequence[Mapping[str, ArrayLike]],
    *,
    include_query: bool = False,
) -> torch.Tensor:
    """Float64 reference forward pass of one or several stacked LSA layers (no softmax, no norm).

    ``tokens`` (B, T, D) with the query last; ``weights`` a dict with W_K, W_Q (D_k, D), W_V (D_v, D)
    and P (D, D_v), or a list of such dicts (one per layer). ``include_query`` also uses the query
    token as a key/value. Returns the final tokens (B, T, D); see :func:`read_prediction`.
    """
    check_bool("include_query", include_query)
    h = _t(tokens)
    if h.ndim != 3:
        raise ValueError(f"tokens must have shape (B, T, D), got {tuple(h.shape)}")
    stack = [weights] if isinstance(weights, Mapping) else list(weights)
    if not stack:
        raise ValueError("weights must hold at least one layer")
    for layer, W in enumerate(stack):
        missing = {"W_K", "W_Q", "W_V", "P"} - set(W)
        if missing:
            raise ValueError(f"weights[{layer}] lacks {sorted(missing)}")
        WK, WQ, WV, P = (_t(W[k]) for k in ("W_K", "W_Q", "W_V", "P"))
        src = h if include_query else h[:, :-1]  # (B, S, D) keys and values
        keys = src @ WK.T  # (B, S, Dk)
        queries = h @ WQ.T  # (B, T, Dk)
        values = src @ WV.T  # (B, S, Dv)
        scores = queries @ keys.transpose(1, 2)  # (B, T, S): (W_Q e_j).(W_K e_i) = e_i^T W_K^T W_Q e_j
        h = h + (scores @ values) @ P.T  # (B, T, D)
    return h


@dataclass(frozen=True, eq=False)
class LinearSelfAttention:
    """Predictor from LSA weights (e.g. :func:`gd_lsa_stack` or weights read off a trained model)."""

    layers: Any  # dict of W_K, W_Q, W_V, P, or a sequence of such dicts
    include_query: bool = False  # use the query token as key/value too
    label: str = "lsa"  # name used in tables

    @property
    def name(self) -> str:
        n = 1 if isinstance(self.layers, Mapping) else len(self.layers)
        return f"{self.label}_L={n}"

    def __call__(self, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> torch.Tensor:
        tokens = build_tokens(x_ctx, y_ctx, x_q)
        return read_prediction(lsa_forward(tokens, self.layers, include_query=self.include_query))


# ================================================================================================
# Closed forms: one step of (preconditioned) GD
# ================================================================================================


def _tr(M: Any) -> Any:
    """Trace that works for numpy arrays and sympy matrices alike."""
    return sum(M[i, i] for i in range(M.shape[0]))


def _fourth_moment_trace(x_dist: str, Sigma: Any, v: Any = None, m4: Any = None) -> Callable[[Any], Any]:
    r"""A -> tr E[x x^T A x x^T] for the input law.

    Gaussian N(0, Sigma), Isserlis:  E[x x^T A x x^T] = Sigma (A + A^T) Sigma + tr(A Sigma) Sigma,
        trace = 2 tr(A Sigma^2) + tr(A Sigma) tr(Sigma).
    Independent zero-mean symmetric coordinates with E x^2 = v, E x^4 = m4 (uniform: 1/12, 1/80):
        E[x_k x_m x_n x_l] = v^2 (d_km d_nl + d_kn d_ml + d_kl d_mn) + (m4 - 3 v^2) d_kmnl, so
        E[x x^T A x x^T] = v^2 (A + A^T + tr(A) I) + (m4 - 3 v^2) diag(A),
        trace = ((d + 2) v^2 + m4 - 3 v^2) tr A = ((d - 1) v^2 + m4) tr A.
    (The Gaussian with Sigma = v I is the case m4 = 3 v^2 of the second formula.)
    """
    if x_dist in ("gaussian", "anisotropic"):
        return lambda A: 2 * _tr(A @ Sigma @ Sigma) + _tr(A @ Sigma) * _tr(Sigma)
    d = Sigma.shape[0]
    return lambda A: ((d - 1) * v**2 + m4) * _tr(A)


def _one_step_loss(Gamma: Any, Sigma: Any, trF: Callable, N: Any, sigma: Any, w_std: Any, qn: Any) -> Any:
    r"""E[(x_q^T Gamma h - y_q)^2] for h = (1/N) sum_i y_i x_i; works on numpy or sympy matrices.

    With S = (1/N) sum_i x_i x_i^T, h = S w + (sigma/N) sum_i eps_i x_i and x_q independent of the
    context (E x_q x_q^T = Sigma), A := Gamma^T Sigma Gamma:
      E[y_q^2]        = w_std^2 tr Sigma + sigma^2 qn                            (qn = query noise 0/1)
      E[yhat y_q]     = E[w^T Sigma Gamma S w] = w_std^2 tr(Sigma Gamma Sigma)    (E S = Sigma)
      E[yhat^2]       = E[h^T A h] = w_std^2 tr E[S A S] + (sigma^2/N) tr(A Sigma)
      E[S A S]        = (1 - 1/N) Sigma A Sigma + (1/N) E[x x^T A x x^T]          (i != j pairs independent)
    so  loss(Gamma) = w_std^2 tr Sigma + qn sigma^2 - 2 w_std^2 tr(Sigma Gamma Sigma)
                      + w_std^2 [(1 - 1/N) tr(A Sigma^2) + trF(A)/N] + (sigma^2/N) tr(A Sigma).
    """
    A = Gamma.T @ Sigma @ Gamma
    a = w_std**2 * _tr(Sigma) + qn * sigma**2
    cross = w_std**2 * _tr(Sigma @ Gamma @ Sigma)
    quad = w_std**2 * ((1 - 1 / N) * _tr(A @ Sigma @ Sigma) + trF(A) / N) + sigma**2 / N * _tr(A @ Sigma)
    return a - 2 * cross + quad


def _check_theory_args(d: int, N: int, sigma: float, w_std: float, query_noise: bool) -> None:
    check_int("d", d, minimum=1)
    check_int("N", N, minimum=1)
    check_float("sigma", sigma, minimum=0.0)
    check_float("w_std", w_std, minimum=0.0, strict_minimum=True)
    check_bool("query_noise", query_noise)


def preconditioned_gd_loss(
    gamma: ArrayLike,
    N: int,
    x_dist: str,
    sigma: float,
    w_std: float = 1.0,
    Sigma: ArrayLike | None = None,
    query_noise: bool = True,
) -> float:
    """Expected loss of yhat = x_q^T Gamma (1/N) sum_i y_i x_i (eta folded into Gamma). See _one_step_loss."""
    G = _check_gamma(gamma)
    d = G.shape[0]
    _check_theory_args(d, N, sigma, w_std, query_noise)
    S = second_moment(d, x_dist, Sigma)
    trF = _fourth_moment_trace(x_dist, S, UNIFORM_V, UNIFORM_M4)
    return float(_one_step_loss(G, S, trF, N, float(sigma), float(w_std), float(query_noise)))


def one_step_gd_theory(
    d: int,
    N: int,
    x_dist: str,
    sigma: float,
    w_std: float = 1.0,
    Sigma: ArrayLike | None = None,
    query_noise: bool = True,
) -> dict[str, Any]:
    r"""Best learning rate of one plain GD step from w = 0 and its loss.

    loss(eta) = a - 2 b eta + c eta^2 (put Gamma = eta I in :func:`_one_step_loss`):
        a = w_std^2 tr Sigma + sigma^2 (query noise),   b = w_std^2 tr Sigma^2,
        c = w_std^2 [(1 - 1/N) tr Sigma^3 + trF(Sigma)/N] + (sigma^2/N) tr Sigma^2,
        eta* = b / c,   loss* = a - b^2 / c.
    Isotropic Gaussian (Sigma = I): eta* = N / (N + d + 1 + sigma^2/w_std^2) (Mahankali et al. 2023,
    Ahn et al. 2023 with their scaling). Independent coordinates with variance v, fourth moment m4
    (uniform: 1/12, 1/80):
        eta* = v / [(1 - 1/N) v^2 + ((d - 1) v^2 + m4)/N + sigma^2 v / (N w_std^2)].
    Anisotropic Gaussian: trF(Sigma) = 2 tr Sigma^3 + tr Sigma^2 tr Sigma.

    For isotropic laws (gaussian, uniform) this is also the optimal one-layer LSA: the y-odd part of
    an LSA output is r_y sum_i y_i x_i^T M_xx x_q, i.e. preconditioned one-step GD; the remaining
    terms are even in y (w -> -w symmetry) so they can only add error; and the optimal Gamma of a
    strictly convex quadratic loss invariant under coordinate sign flips and permutations is a
    multiple of I. For anisotropic inputs the optimum is preconditioned (:func:`optimal_preconditioner`).

    Returns dict(eta_star, loss_star, a, b, c, loss_fn) with loss_fn(eta) = a - 2 b eta + c eta^2.
    """
    _check_theory_args(d, N, sigma, w_std, query_noise)
    S = second_moment(d, x_dist, Sigma)
    trF = _fourth_moment_trace(x_dist, S, UNIFORM_V, UNIFORM_M4)
    w2, s2 = float(w_std) ** 2, float(sigma) ** 2
    a = w2 * np.trace(S) + s2 * float(query_noise)
    b = w2 * np.trace(S @ S)
    c = w2 * ((1 - 1 / N) * np.trace(S @ S @ S) + trF(S) / N) + s2 / N * np.trace(S @ S)
    a, b, c = float(a), float(b), float(c)

    def loss_fn(eta: float | np.ndarray) -> float | np.ndarray:
        return a - 2 * b * np.asarray(eta) + c * np.asarray(eta) ** 2

    return {"eta_star": b / c, "loss_star": a - b * b / c, "a": a, "b": b, "c": c, "loss_fn": loss_fn}


def optimal_preconditioner(
    Sigma: ArrayLike, N: int, sigma: float, w_std: float = 1.0, query_noise: bool = True
) -> dict[str, Any]:
    r"""Optimal Gamma for yhat = x_q^T Gamma (1/N) sum_i y_i x_i with Gaussian inputs N(0, Sigma).

    For Gaussian x, E[S A S] = (1 + 1/N) Sigma A Sigma + (1/N) tr(A Sigma) Sigma (Isserlis, A sym.),
    so with A = Gamma^T Sigma Gamma the loss is
        a - 2 w^2 tr(Sigma Gamma Sigma) + tr(Gamma^T Sigma Gamma M),
        M = w^2 (1 + 1/N) Sigma^2 + ((w^2 tr Sigma + sigma^2)/N) Sigma.
    Setting the gradient -2 w^2 Sigma^2 + 2 Sigma Gamma M to zero:
        Gamma* = w^2 Sigma M^{-1} = [(1 + 1/N) Sigma + ((tr Sigma + sigma^2/w^2)/N) I]^{-1}
    (Ahn et al. 2023, Lemma 1 form; a minimiser even for singular Sigma). It commutes with Sigma,
    and at the optimum tr(Gamma^T Sigma Gamma M) = w^2 tr(Sigma Gamma* Sigma), so
        loss* = w^2 tr Sigma + sigma^2 - w^2 sum_k lam_k^2 / ((1 + 1/N) lam_k + (tr Sigma + sigma^2/w^2)/N).
    Sigma = I recovers eta* I of :func:`one_step_gd_theory`.

    Returns dict(gamma, loss_star, loss_fn) with loss_fn(Gamma) = :func:`preconditioned_gd_loss`.
    """
    S = np.asarray(Sigma, dtype=np.float64)
    d = S.shape[0]
    S = second_moment(d, "anisotropic", S)
    _check_theory_args(d, N, sigma, w_std, query_noise)
    w2, s2 = float(w_std) ** 2, float(sigma) ** 2
    ridge = (np.trace(S) + s2 / w2) / N
    gamma = np.linalg.inv((1 + 1 / N) * S + ridge * np.eye(d))
    gamma = 0.5 * (gamma + gamma.T)
    lam = np.linalg.eigvalsh(S)
    loss_star = w2 * lam.sum() + s2 * float(query_noise) - w2 * np.sum(lam**2 / ((1 + 1 / N) * lam + ridge))

    def loss_fn(G: ArrayLike) -> float:
        return preconditioned_gd_loss(G, N, "anisotropic", sigma, w_std, S, query_noise)

    return {"gamma": gamma, "loss_star": float(loss_star), "loss_fn": loss_fn}


# ================================================================================================
# Least squares, ridge, K-step GD: closed forms where they exist, otherwise Rao-Blackwellised MC
# ================================================================================================


def conditional_loss_linear(
    A: ArrayLike, x_ctx: ArrayLike, Sigma: ArrayLike, sigma: float, w_std: float, query_noise: bool = True
) -> torch.Tensor:
    r"""E[(yhat - y_q)^2 | X] for yhat = x_q^T A(X) y, averaged exactly over w, eps, eps_q and x_q.

    yhat - y_q = x_q^T (A X - I) w + sigma x_q^T A eps - sigma eps_q, with w, eps, x_q independent:
        E[. | X] = w_std^2 tr((AX - I)^T Sigma (AX - I)) + sigma^2 tr(A^T Sigma A) + sigma^2 (query noise).
    Only the second moment Sigma of x_q enters. Returns (B,).
    """
    A, X, S = _t(A), _t(x_ctx), _t(Sigma)
    d = X.shape[-1]
    E = A @ X - torch.eye(d, dtype=torch.float64)  # (B, d, d)
    bias = w_std**2 * ((S @ E) * E).sum((-2, -1))
    var = sigma**2 * ((S @ A) * A).sum((-2, -1))
    return bias + var + sigma**2 * float(query_noise)


def expected_loss_mc(
    predictor: Predictor,
    d: int,
    N: int,
    x_dist: str,
    sigma: float,
    rng: np.random.Generator,
    n_tasks: int = 20000,
    w_std: float = 1.0,
    Sigma: ArrayLike | None = None,
    query_noise: bool = True,
    rao_blackwell: bool = True,
    chunk: int = 20000,
) -> dict[str, Any]:
    """Monte Carlo expected loss with its standard error (sample std / sqrt(n)).

    Predictors with ``linear_map`` (linear in y) average the per-task loss analytically over w, the
    noise and x_q (:func:`conditional_loss_linear`) unless ``rao_blackwell=False``; others (and that
    case) use the squared error of one query per task. Returns dict(loss, se, n, method).
    """
    _check_theory_args(d, N, sigma, w_std, query_noise)
    check_int("n_tasks", n_tasks, minimum=2)
    check_int("chunk", chunk, minimum=1)
    S = second_moment(d, x_dist, Sigma)
    use_rb = rao_blackwell and hasattr(predictor, "linear_map")
    vals = []
    done = 0
    while done < n_tasks:
        n = min(chunk, n_tasks - done)
        batch = sample_regression(n, d, N, x_dist, sigma, rng, Sigma, w_std)
        if use_rb:
            A = predictor.linear_map(batch.x_ctx)
            vals.append(conditional_loss_linear(A, batch.x_ctx, S, sigma, w_std, query_noise).numpy())
        else:
            with torch.no_grad():
                yhat = predictor(batch.x_ctx, batch.y_ctx, batch.x_q).detach().numpy()
            target = batch.y_q if query_noise else (batch.w * batch.x_q).sum(-1)
            vals.append((yhat - target) ** 2)
        done += n
    v = np.concatenate(vals)
    return {
        "loss": float(v.mean()),
        "se": float(v.std(ddof=1) / math.sqrt(v.size)),
        "n": int(v.size),
        "method": "monte_carlo_rb" if use_rb else "monte_carlo",
    }


def least_squares_theory(
    d: int,
    N: int,
    x_dist: str,
    sigma: float,
    w_std: float = 1.0,
    Sigma: ArrayLike | None = None,
    query_noise: bool = True,
) -> float | None:
    r"""Closed-form expected loss of min-norm least squares, or None where none is known here.

    Cases (q = sigma^2 if query_noise else 0):
    * sigma = 0, N >= d: X has full column rank a.s., w is recovered exactly: loss = q = 0.
    * Gaussian N(0, Sigma), N >= d + 2: w_hat - w = sigma (X^T X)^{-1} X^T eps, so
      loss = q + sigma^2 tr(Sigma E[(X^T X)^{-1}]) = q + sigma^2 d / (N - d - 1)
      (inverse-Wishart mean Sigma^{-1}/(N - d - 1); independent of Sigma). N in {d, d+1}: infinite.
    * Sigma = v I (gaussian, uniform, or isotropic "anisotropic"), N < d: min-norm w_hat is w projected
      on the row space of X (rank N a.s.) plus noise, bias = w^2 tr(Sigma (I - P)) = w^2 v (d - N);
      noise term 0 if sigma = 0; for Gaussian x, sigma^2 tr E[(X X^T)^{-1}] v = sigma^2 N / (d - N - 1)
      (X X^T / v is Wishart(N, d dof)) for N <= d - 2, infinite for N = d - 1.
    """
    _check_theory_args(d, N, sigma, w_std, query_noise)
    S = second_moment(d, x_dist, Sigma)
    q = float(sigma) ** 2 * float(query_noise)
    s2, w2 = float(sigma) ** 2, float(w_std) ** 2
    gaussian = x_dist in ("gaussian", "anisotropic")
    if N >= d:
        if sigma == 0:
            return q
        if gaussian:
            return q + s2 * d / (N - d - 1) if N >= d + 2 else math.inf
        return None
    v = S[0, 0]
    if not np.allclose(S, v * np.eye(d), rtol=1e-12, atol=0):
        return None
    bias = w2 * v * (d - N)
    if sigma == 0:
        return q + bias
    if gaussian:
        return q + bias + (s2 * N / (d - N - 1) if N <= d - 2 else math.inf)
    return None


def baseline_theory(
    d: int,
    N: int,
    x_dist: str,
    sigma: float,
    rng: np.random.Generator,
    w_std: float = 1.0,
    Sigma: ArrayLike | None = None,
    query_noise: bool = True,
    n_mc: int = 20000,
    knn_k: int = 3,
) -> dict[str, dict[str, Any]]:
    """Expected losses of every baseline at one context length: name -> dict(loss, se, method, ...).

    Closed forms (se = 0): zero, averaging, best one-step GD, best preconditioned step (Gaussian
    family), least squares where :func:`least_squares_theory` has one. Monte Carlo otherwise
    (Rao-Blackwellised for ridge / least squares; plain for k-NN).
    """
    S = second_moment(d, x_dist, Sigma)
    one = one_step_gd_theory(d, N, x_dist, sigma, w_std, Sigma, query_noise)
    out: dict[str, dict[str, Any]] = {
        "zero": {"loss": one["a"], "se": 0.0, "method": "closed_form"},
        "averaging": {"loss": float(one["loss_fn"](1.0)), "se": 0.0, "method": "closed_form"},
        "gd_star": {"loss": one["loss_star"], "se": 0.0, "method": "closed_form", "eta": one["eta_star"]},
    }
    if x_dist != "uniform":
        pre = optimal_preconditioner(S, N, sigma, w_std, query_noise)
        out["precond_gd_star"] = {"loss": pre["loss_star"], "se": 0.0, "method": "closed_form"}
    ls = least_squares_theory(d, N, x_dist, sigma, w_std, Sigma, query_noise)
    mc = dict(
        d=d,
        N=N,
        x_dist=x_dist,
        sigma=sigma,
        rng=rng,
        n_tasks=n_mc,
        w_std=w_std,
        Sigma=Sigma,
        query_noise=query_noise,
    )
    out["least_squares"] = (
        {"loss": ls, "se": 0.0, "method": "closed_form"}
        if ls is not None
        else expected_loss_mc(LeastSquares(), **mc)
    )
    if sigma == 0:
        out["ridge_bayes"] = dict(out["least_squares"])
    else:
        out["ridge_bayes"] = expected_loss_mc(Ridge.bayes_optimal(sigma, w_std), **mc)
    out["knn"] = expected_loss_mc(KNN(knn_k), **mc)
    return out


# ================================================================================================
# GD++ (von Oswald et al. 2023, Sec. 3): GD with a curvature correction of the inputs per layer
# ================================================================================================


@dataclass(frozen=True, eq=False)
class GDPlusPlus(LinearInY):
    r"""K layers of "GD++": each layer takes a GD step on the labels *and* contracts every input.

    State per layer k: inputs x_i^{(k)}, x_q^{(k)} (x^{(0)} = x) and residuals r^{(k)} in the context
    y-slots (r^{(0)} = y), query slot s_k (s_0 = 0), S_k = (1/N) sum_i x_i^{(k)} x_i^{(k)T}. One layer,
    all updates computed from the layer's input (one LSA layer: von Oswald's GD++ construction with
    W_K^T W_Q = diag(I, 0) and P W_V = -diag(gamma_k I, eta_k) / N):
        r_j <- r_j - (eta_k / N) sum_i r_i x_i^T x_j        (the GD step; j = query: s_k <- s_k - ...)
        x_j <- (I - gamma_k S_k) x_j                        (the curvature correction, context and query)
    and yhat = -s_K. gamma = 0 is plain K-step GD with learning rates eta_k (:class:`GD`): the
    residual recursion is GD's r^{(k+1)} = y - X w_{k+1}. The last layer's gamma never reaches the
    prediction (the inputs it corrects are not read again).

    Linear in y: with row matrices X^{(k)} (N, d), M_k = prod_{l<k} (I - gamma_l S_l) (so x_q^{(k)} = M_k x_q)
    and R_k = prod_{l<k} (I - (eta_l/N) X^{(l)} X^{(l)T}) (so r^{(k)} = R_k y),
        yhat = x_q^T A y,   A = sum_k (eta_k / N) M_k^T X^{(k)T} R_k   (d, N).
    """

    eta: tuple[float, ...] = (1.0,)  # learning rate of the GD step of each layer (length K)
    gamma: tuple[float, ...] = (0.0,)  # curvature-correction strength of each layer (length K)

    def __post_init__(self) -> None:
        eta = tuple(float(e) for e in (self.eta if isinstance(self.eta, Sequence) else (self.eta,)))
        gamma = tuple(float(g) for g in (self.gamma if isinstance(self.gamma, Sequence) else (self.gamma,)))
        if not eta:
            raise ValueError("eta must hold one learning rate per layer (at least one)")
        if len(gamma) != len(eta):
            raise ValueError(f"gamma must have one entry per layer ({len(eta)}), got {len(gamma)}")
        for k, (e, g) in enumerate(zip(eta, gamma, strict=True)):
            check_float(f"eta[{k}]", e)
            check_float(f"gamma[{k}]", g)
        object.__setattr__(self, "eta", eta)
        object.__setattr__(self, "gamma", gamma)

    @property
    def steps(self) -> int:
        return len(self.eta)

    @property
    def name(self) -> str:
        return f"gdpp{self.steps}"

    def linear_map(self, x_ctx: ArrayLike, eta: Any = None, gamma: Any = None) -> torch.Tensor:
        """A (B, d, N) with yhat = x_q^T A y; ``eta``/``gamma`` override the fields (tensors keep autograd)."""
        xc = _t(x_ctx)
        B, N, d = xc.shape
        etas = self.eta if eta is None else eta
        gammas = self.gamma if gamma is None else gamma
        eye_d = torch.eye(d, dtype=torch.float64)
        X = xc  # (B, N, d) current inputs
        M = eye_d.expand(B, d, d)  # (B, d, d) x_q^{(k)} = M x_q
        R = torch.eye(N, dtype=torch.float64).expand(B, N, N)  # (B, N, N) r^{(k)} = R y
        A = torch.zeros(B, d, N, dtype=torch.float64)
        for e, g in zip(etas, gammas, strict=True):
            XtR = X.transpose(1, 2) @ R  # (B, d, N): sum_i x_i r_i as a map of y
            A = A + (e / N) * (M.transpose(1, 2) @ XtR)
            R = R - (e / N) * (X @ XtR)  # r_j <- r_j - (eta/N) sum_i r_i x_i.x_j
            C = eye_d - g * (X.transpose(1, 2) @ X) / N  # (B, d, d) I - gamma S_k (symmetric)
            X = X @ C  # rows x_j^T C = (C x_j)^T
            M = C @ M
        return A

    def __call__(self, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> torch.Tensor:
        """The token recursion itself (not via ``linear_map``): an independent implementation."""
        xc, yc, xq = _batch(x_ctx, y_ctx, x_q)
        N = xc.shape[1]
        X, r, q = xc, yc, xq
        s = torch.zeros_like(yc[:, 0])  # (B,) query y-slot
        for e, g in zip(self.eta, self.gamma, strict=True):
            h = torch.einsum("bnd,bn->bd", X, r) / N  # (1/N) sum_i r_i x_i
            s = s - e * (h * q).sum(-1)
            r_new = r - e * torch.einsum("bd,bnd->bn", h, X)
            S = X.transpose(1, 2) @ X / N  # (B, d, d)
            X = X - g * (X @ S)  # rows: x_j - gamma S x_j
            q = q - g * (S @ q.unsqueeze(-1)).squeeze(-1)
            r = r_new
        return -s


def gdpp_lsa_stack(d: int, eta: Sequence[float], gamma: Sequence[float], N: int) -> list[dict[str, np.ndarray]]:
    r"""LSA weights of :class:`GDPlusPlus`: per layer W_K = W_Q = diag(I, 0), W_V = -I, P = diag(gamma I, eta)/N.

    Then score_ij = x_i^T x_j, P W_V e_i = -(gamma x_i, eta r_i)/N, so e_j gains
    -(1/N) sum_i (gamma x_i, eta r_i) x_i^T x_j = -(gamma S x_j, (eta/N) sum_i r_i x_i^T x_j): exactly one
    GD++ layer (context-only keys, as for :func:`gd_lsa_stack`).
    """
    check_int("d", d, minimum=1)
    check_int("N", N, minimum=1)
    if len(eta) != len(gamma) or not eta:
        raise ValueError(f"eta and gamma must have the same non-zero length, got {len(eta)} and {len(gamma)}")
    D = d + 1
    out = []
    for e, g in zip(eta, gamma, strict=True):
        WK = np.zeros((D, D))
        WK[:d, :d] = np.eye(d)
        P = np.diag(np.r_[np.full(d, float(g)), float(e)]) / N
        out.append({"W_K": WK, "W_Q": WK.copy(), "W_V": -np.eye(D), "P": P})
    return out


def fit_gd_schedule(
    x_ctx: ArrayLike,
    Sigma: ArrayLike,
    sigma: float,
    steps: int,
    *,
    plus_plus: bool = False,
    w_std: float = 1.0,
    eta0: float | Sequence[float] = 0.5,
    query_noise: bool = True,
) -> dict[str, Any]:
    r"""Per-layer learning rates (and GD++ gammas) minimising the expected loss on a fixed batch of contexts.

    The objective is the Rao-Blackwellised mean of :func:`conditional_loss_linear` over the given
    contexts X (exact in w, the noise and x_q), a smooth function of (eta, gamma); it is minimised in
    float64 by L-BFGS with autograd gradients, from plain GD at ``eta0`` (gamma = 0). ``plus_plus=False``
    keeps gamma = 0: K-step GD at its best per-step learning rates. The last layer's gamma does not
    enter the prediction and is kept at 0. Returns dict(eta, gamma, loss, predictor).
    """
    from scipy.optimize import minimize

    check_int("steps", steps, minimum=1)
    check_bool("plus_plus", plus_plus)
    xc = _t(x_ctx).detach()
    S = _t(Sigma)
    e0 = [float(eta0)] * steps if not isinstance(eta0, Sequence) else [float(e) for e in eta0]
    if len(e0) != steps:
        raise ValueError(f"eta0 must be a float or have {steps} entries, got {len(e0)}")
    n_g = steps - 1 if plus_plus else 0
    base = GDPlusPlus(eta=tuple(e0), gamma=(0.0,) * steps)

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        t = torch.as_tensor(theta, dtype=torch.float64).requires_grad_(True)
        etas = list(t[:steps])
        gammas = list(t[steps:]) + [torch.zeros((), dtype=torch.float64)] * (steps - n_g)
        A = base.linear_map(xc, eta=etas, gamma=gammas)
        loss = conditional_loss_linear(A, xc, S, sigma, w_std, query_noise).mean()
        (g,) = torch.autograd.grad(loss, t)
        return float(loss.detach()), g.numpy()

    theta0 = np.r_[e0, np.zeros(n_g)]
    res = minimize(objective, theta0, jac=True, method="L-BFGS-B", options={"maxiter": 200, "gtol": 1e-8})
    eta = tuple(float(v) for v in res.x[:steps])
    gamma = tuple(float(v) for v in res.x[steps:]) + (0.0,) * (steps - n_g)
    return {"eta": eta, "gamma": gamma, "loss": float(res.fun), "predictor": GDPlusPlus(eta=eta, gamma=gamma)}


# ================================================================================================
# Bayes-optimal ridge against the context length (Gaussian isotropic inputs)
# ================================================================================================


def wishart_trace_inverse(d: int, k: int) -> float:
    r"""E tr((X^T X)^{-1}) for X (k, d) with i.i.d. N(0, 1) entries: the inverse-Wishart mean.

    X^T X ~ Wishart_d(k, I), E (X^T X)^{-1} = I / (k - d - 1) for k >= d + 2, so the trace is
    d / (k - d - 1); infinite for k < d + 2 (k in {d, d + 1}: the mean diverges; k < d: singular).
    This is the exact finite-k case of the ridge trace below (s = 0); for s > 0 the real Wishart
    ensemble has no elementary closed form (the one-point density of the Laguerre *orthogonal*
    ensemble is not a finite sum), so :func:`ridge_bayes_loss_theory` uses the Marchenko-Pastur limit.
    """
    check_int("d", d, minimum=1)
    check_int("k", k, minimum=0)
    return d / (k - d - 1) if k >= d + 2 else math.inf


def marchenko_pastur_trace_inverse(d: int, k: int, s: float) -> float:
    r"""The Marchenko-Pastur approximation of E tr((X^T X + s I)^{-1}) (d, k -> inf, d/k = c fixed).

    tr((X^T X + s I)^{-1}) = (d/k) (1/d) tr((X^T X/k + lam I)^{-1}), lam = s/k, and the normalised trace
    tends to the MP Stieltjes transform at -lam (ratio c):
        m(-lam) = [sqrt((1 - c + lam)^2 + 4 c lam) - (1 - c + lam)] / (2 c lam).
    s = 0, c < 1: the limit d/(k - d) (the exact finite value is d/(k - d - 1)).
    """
    check_int("d", d, minimum=1)
    check_int("k", k, minimum=1)
    check_float("s", s, minimum=0.0)
    c = d / k
    if s == 0.0:
        return d / (k - d) if k > d else math.inf
    lam = s / k
    b = 1.0 - c + lam
    m = (math.sqrt(b * b + 4.0 * c * lam) - b) / (2.0 * c * lam)
    return d / k * m


def ridge_bayes_loss_theory(
    d: int,
    k: int,
    sigma: float,
    w_std: float = 1.0,
    v: float = 1.0,
    query_noise: bool = True,
) -> dict[str, Any]:
    r"""Expected loss of the Bayes-optimal predictor (ridge at lam* = sigma^2/w_std^2) with k examples.

    Isotropic inputs with E x x^T = v I (Gaussian N(0, v I) for sigma > 0), w ~ N(0, w_std^2 I). The
    posterior of w given the context is N(w_hat, sigma^2 (X^T X + lam* I)^{-1}) whatever the law of x
    (w_hat the ridge solution), and x_q is independent of the context, so with q = sigma^2 (query noise)
        loss(k) = q + v E |w_hat - w|^2 = q + v sigma^2 E tr((X^T X + lam* I)^{-1})
                = q + sigma^2 E tr((Z^T Z + (lam*/v) I)^{-1}),   X = sqrt(v) Z.
    * sigma = 0 (exact, any isotropic law whose X has rank min(k, d) a.s.): lam* -> 0 is min-norm least
      squares, which recovers w for k >= d and leaves the d - k unseen directions:
      loss = w_std^2 v max(d - k, 0).
    * sigma > 0: the trace by its Marchenko-Pastur limit :func:`marchenko_pastur_trace_inverse` (exact as
      d, k -> inf at fixed d/k, O(1/d) relative error at finite size, universal for i.i.d. entries); the
      exact finite-k value at lam* -> 0 is the inverse-Wishart mean (:func:`least_squares_theory`).
    No predictor using the same k examples has a lower expected loss (it is the posterior mean).
    Returns dict(loss, method) with method "exact" or "marchenko_pastur".
    """
    check_int("d", d, minimum=1)
    check_int("k", k, minimum=0)
    check_float("sigma", sigma, minimum=0.0)
    check_float("w_std", w_std, minimum=0.0, strict_minimum=True)
    check_float("v", v, minimum=0.0, strict_minimum=True)
    check_bool("query_noise", query_noise)
    s2, w2, v = float(sigma) ** 2, float(w_std) ** 2, float(v)
    q = s2 * float(query_noise)
    if s2 == 0.0:
        return {"loss": w2 * v * max(d - k, 0), "method": "exact"}
    if k == 0:
        return {"loss": q + w2 * v * d, "method": "exact"}  # predicts 0: the prior variance
    tr = marchenko_pastur_trace_inverse(d, k, s2 / (w2 * v))
    return {"loss": q + s2 * tr, "method": "marchenko_pastur"}


# ================================================================================================
# Sympy: brute-force expectations that check the closed forms
# ================================================================================================


def sympy_symbols() -> dict[str, sp.Symbol]:
    """The symbols used by the sympy helpers: eta, sigma, w_std, v, m4, d, N (all positive)."""
    names = ("eta", "sigma", "w_std", "v", "m4", "d", "N")
    return {n: sp.Symbol(n, positive=True) for n in names}


def _gauss_moment(p: int) -> int:
    return 0 if p % 2 else math.prod(range(p - 1, 0, -2))  # (p-1)!! for even p


def sympy_one_step_loss_bruteforce(
    d: int, N: int, *, L: sp.Matrix | None = None, gamma: sp.Matrix | None = None, query_noise: bool = True
) -> sp.Expr:
    """E[(eta x_q^T Gamma h - y_q)^2] by expanding the polynomial and replacing each monomial by its moment.

    Independent of every closed form in this module: x coordinates are independent with
    E x^2 = v, E x^4 = m4 (``L`` None) or x = L z with z standard normal (Gaussian with Sigma = L L^T);
    w = w_std u, u and the noises standard normal. Use small d, N (d = N = 3 takes ~1 s).
    """
    sy = sympy_symbols()
    eta, sigma, w_std, v, m4 = (sy[k] for k in ("eta", "sigma", "w_std", "v", "m4"))
    u = sp.symbols(f"u0:{d}")
    eps = sp.symbols(f"e0:{N + 1}")
    if L is None:
        xs = [sp.symbols(f"x{i}_0:{d}") for i in range(N + 1)]
        x_vecs = [sp.Matrix(r) for r in xs]
        x_vars = [s for r in xs for s in r]
    else:
        zs = [sp.symbols(f"z{i}_0:{d}") for i in range(N + 1)]
        x_vecs = [sp.Matrix(L) * sp.Matrix(r) for r in zs]
        x_vars = [s for r in zs for s in r]
    G = sp.eye(d) if gamma is None else sp.Matrix(gamma)
    w = sp.Matrix(u) * w_std
    y = [(w.T * x_vecs[i])[0] + sigma * eps[i] for i in range(N)]
    h = sum((y[i] * x_vecs[i] for i in range(N)), sp.zeros(d, 1)) / N
    x_q = x_vecs[N]
    y_q = (w.T * x_q)[0] + (sigma * eps[N] if query_noise else 0)
    err = eta * (x_q.T * G * h)[0] - y_q
    gens = list(x_vars) + list(u) + list(eps)
    poly = sp.Poly(sp.expand(err**2), *gens)
    n_x = len(x_vars)
    total = sp.Integer(0)
    for powers, coeff in poly.terms():
        m = sp.Integer(1)
        for j, p in enumerate(powers):
            if p == 0:
                continue
            if j >= n_x or L is not None:
                m *= _gauss_moment(p)
            elif p % 2:
                m = 0
            elif p == 2:
                m *= v
            elif p == 4:
                m *= m4
            else:
                raise ValueError(f"moment of order {p} of a coordinate is not defined here")
            if m == 0:
                break
        total += coeff * m
    return sp.expand(total)


def sympy_one_step_loss_closed_form(
    d: int, N: int, *, L: sp.Matrix | None = None, gamma: sp.Matrix | None = None, query_noise: bool = True
) -> sp.Expr:
    """The closed form used numerically (:func:`_one_step_loss`), evaluated in sympy (same code path)."""
    sy = sympy_symbols()
    eta, sigma, w_std, v, m4 = (sy[k] for k in ("eta", "sigma", "w_std", "v", "m4"))
    G = eta * (sp.eye(d) if gamma is None else sp.Matrix(gamma))
    if L is None:
        Sigma = v * sp.eye(d)
        trF = _fourth_moment_trace("uniform", Sigma, v, m4)
    else:
        Sigma = sp.Matrix(L) * sp.Matrix(L).T
        trF = _fourth_moment_trace("anisotropic", Sigma)
    return sp.expand(_one_step_loss(G, Sigma, trF, sp.Integer(N), sigma, w_std, int(query_noise)))


def sympy_eta_star_independent() -> sp.Expr:
    """eta* for independent coordinates (v, m4), symbolic in d, N, sigma, w_std (for notebooks)."""
    sy = sympy_symbols()
    d, N, v, m4, sigma, w = (sy[k] for k in ("d", "N", "v", "m4", "sigma", "w_std"))
    return v / ((1 - 1 / N) * v**2 + ((d - 1) * v**2 + m4) / N + sigma**2 * v / (N * w**2))


# ================================================================================================
# Metrics of von Oswald et al.: preds diff, model diff, cosine of sensitivities
# ================================================================================================


def sensitivity(predictor: Predictor, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> torch.Tensor:
    """d yhat / d x_q per task (B, d) by autograd in float64 (the task's implied linear model).

    Uses grad of sum_b yhat_b, which is per-task correct because tasks do not interact in a
    predictor. A predictor without a gradient path to x_q (piecewise constant, e.g. k-NN) gets 0.
    """
    xc, yc, xq = _batch(x_ctx, y_ctx, x_q)
    xq = xq.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        yhat = predictor(xc.detach(), yc.detach(), xq)
        if not yhat.requires_grad:
            return torch.zeros_like(xq).detach()
        (g,) = torch.autograd.grad(yhat.sum(), xq, allow_unused=True)
    return torch.zeros_like(xq).detach() if g is None else g.detach()


def preds_diff(f: Predictor, g: Predictor, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> float:
    """von Oswald's "preds diff": mean over tasks of |f(task) - g(task)| (L2 norm of a scalar)."""
    with torch.no_grad():
        return float((f(x_ctx, y_ctx, x_q) - g(x_ctx, y_ctx, x_q)).abs().mean())


def model_diff(f: Predictor, g: Predictor, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> float:
    """von Oswald's "model diff": mean over tasks of |d f/d x_q - d g/d x_q|_2."""
    sf, sg = sensitivity(f, x_ctx, y_ctx, x_q), sensitivity(g, x_ctx, y_ctx, x_q)
    return float(torch.linalg.vector_norm(sf - sg, dim=-1).mean())


def sensitivity_cosine(
    f: Predictor, g: Predictor, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike
) -> float:
    """Mean over tasks of the cosine between d f/d x_q and d g/d x_q (a zero vector counts as cosine 0)."""
    sf, sg = sensitivity(f, x_ctx, y_ctx, x_q), sensitivity(g, x_ctx, y_ctx, x_q)
    denom = torch.linalg.vector_norm(sf, dim=-1) * torch.linalg.vector_norm(sg, dim=-1)
    cos = torch.where(denom > 0, (sf * sg).sum(-1) / denom.clamp_min(torch.finfo(torch.float64).tiny), 0.0)
    return float(cos.mean())


def compare_predictors(
    f: Predictor, g: Predictor, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike
) -> dict[str, float]:
    """The three alignment metrics at once: preds_diff, model_diff, cos_sensitivity."""
    return {
        "preds_diff": preds_diff(f, g, x_ctx, y_ctx, x_q),
        "model_diff": model_diff(f, g, x_ctx, y_ctx, x_q),
        "cos_sensitivity": sensitivity_cosine(f, g, x_ctx, y_ctx, x_q),
    }


# ================================================================================================
# Reading eta (and Gamma) off predictions and off trained weights
# ================================================================================================


def _gd_feature(x_ctx: ArrayLike, y_ctx: ArrayLike) -> torch.Tensor:
    xc, yc = _t(x_ctx), _t(y_ctx)
    return torch.einsum("bnd,bn->bd", xc, yc) / xc.shape[1]  # h = (1/N) sum_i y_i x_i, (B, d)


def fit_eta(pred: ArrayLike, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> float:
    """Learning rate whose one-step GD best matches ``pred`` in least squares.

    GD predicts eta g_b with g_b = x_q.h_b, so argmin_eta sum_b (pred_b - eta g_b)^2 = sum g p / sum g^2.
    """
    xc, yc, xq = _batch(x_ctx, y_ctx, x_q)
    p = _t(pred).detach().reshape(-1)
    if p.shape[0] != xc.shape[0]:
        raise ValueError(f"pred must have shape ({xc.shape[0]},), got {tuple(_t(pred).shape)}")
    g = (_gd_feature(xc, yc) * xq).sum(-1)
    return float((g * p).sum() / (g * g).sum())


def fit_preconditioner(pred: ArrayLike, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> np.ndarray:
    """Matrix G = eta Gamma minimising sum_b (pred_b - x_q^T G h_b)^2 (needs B >= d^2 tasks).

    pred_b ~ sum_kl G_kl x_q,k h_b,l is linear in vec(G) with features vec(x_q h^T): a lstsq problem.
    """
    xc, yc, xq = _batch(x_ctx, y_ctx, x_q)
    B, _, d = xc.shape
    if B < d * d:
        raise ValueError(f"fit_preconditioner needs at least d^2 = {d * d} tasks, got {B}")
    feats = (xq.unsqueeze(-1) * _gd_feature(xc, yc).unsqueeze(-2)).reshape(B, d * d)  # (B, d*d)
    p = _t(pred).detach().reshape(B, 1)
    sol = torch.linalg.lstsq(feats, p, driver="gelsd").solution  # (d*d, 1)
    return sol.reshape(d, d).numpy()


def eta_from_lsa_weights(
    weights: Mapping[str, ArrayLike] | Sequence[Mapping[str, ArrayLike]], N: int
) -> dict[str, Any] | list[dict[str, Any]]:
    r"""Read the GD learning rate (and preconditioner) off LSA weights in this module's convention.

    Assumption: the layer is e_j <- e_j + P W_V sum_{context i} e_i (e_i^T W_K^T W_Q e_j) on tokens
    (x, y) with the prediction -e_q[y] (any logit scale folded into W_Q). With U = P W_V, its y-row
    r = (r_x, r_y), M = W_K^T W_Q and B = M[:, :d] (query y-slot 0), one layer writes on the query
        out = sum_i (r . e_i)(e_i^T B x_q),
    a cubic form with coefficient tensor T_abc = r_a B_bc. Its GD part is a = y, b in x:
        yhat = -r_y sum_i y_i x_i^T M_xx x_q = x_q^T G h,  G = eta Gamma = -N r_y M_xx^T.
    Returned per layer:
      eta            tr(G)/d (the best multiple of I in Frobenius norm),
      gamma          G (= eta Gamma),
      non_scalar     |G - eta I|_F / |G|_F (0 for plain GD),
      off_structure  |T - T_GD|_F / |T|_F = sqrt(|r_x|^2 |B|^2 + r_y^2 |M_yx|^2) / (|r| |B|), invariant
                     under the rescalings W_K -> a W_K, W_Q -> W_Q / a, P -> b P, W_V -> W_V / b;
      off_structure_full  |U - U_yy e_y e_y^T| / |U| and |M - M_xx (+) 0| / |M| combined in quadrature,
                     which also measures what matters only for deeper stacks (x-writes, y in scores).
    """
    check_int("N", N, minimum=1)
    if not isinstance(weights, Mapping):
        return [eta_from_lsa_weights(w, N) for w in weights]
    WK, WQ, WV, P = (np.asarray(weights[k], dtype=np.float64) for k in ("W_K", "W_Q", "W_V", "P"))
    U = P @ WV  # (D, D)
    M = WK.T @ WQ  # (D, D)
    D = M.shape[0]
    if U.shape != (D, D):
        raise ValueError(f"P W_V must be ({D}, {D}) like W_K^T W_Q, got {U.shape}")
    d = D - 1
    r, Bm = U[d], M[:, :d]
    r_y, M_xx = r[d], M[:d, :d]
    G = -N * r_y * M_xx.T
    eta = float(np.trace(G) / d)
    gn = np.linalg.norm(G)
    num = math.sqrt(np.sum(r[:d] ** 2) * np.sum(Bm**2) + r_y**2 * np.sum(M[d, :d] ** 2))
    den = np.linalg.norm(r) * np.linalg.norm(Bm)
    U_off = U.copy()
    U_off[d, d] = 0.0
    M_off = M.copy()
    M_off[:d, :d] = 0.0
    nu, nm = np.linalg.norm(U), np.linalg.norm(M)
    full = math.hypot(
        np.linalg.norm(U_off) / nu if nu > 0 else 0.0, np.linalg.norm(M_off) / nm if nm > 0 else 0.0
    )
    return {
        "eta": eta,
        "gamma": G,
        "non_scalar": float(np.linalg.norm(G - eta * np.eye(d)) / gn) if gn > 0 else 0.0,
        "off_structure": float(num / den) if den > 0 else 0.0,
        "off_structure_full": float(full),
    }


def lsa_linear_part(weights: Mapping[str, ArrayLike], N: int) -> np.ndarray:
    r"""The whole y-linear part G of one LSA layer's prediction, yhat_lin = x_q^T G h.

    :func:`eta_from_lsa_weights` reads G from the GD path r_y M_xx only. With U = P W_V (y-row
    r = (r_x, r_y)), M = W_K^T W_Q and the query (x_q, 0), the prediction -sum_i (r.e_i)(e_i^T M e_q)
    has two terms linear in the labels:
        r_y y_i x_i^T M_xx x_q   and   y_i (r_x.x_i)(M_yx x_q) = y_i x_i^T (r_x M_yx) x_q,
    with M_yx the y-row of M restricted to x. Hence, with h = (1/N) sum_i y_i x_i,
        G = -N (r_y M_xx + r_x M_yx)^T.
    Every other term of the layer is even in the labels (and of the query's own key/value, when the
    query is visible: y-slot 0 there), so it is uncorrelated with any y-odd predictor.
    """
    check_int("N", N, minimum=1)
    WK, WQ, WV, P = (np.asarray(weights[k], dtype=np.float64) for k in ("W_K", "W_Q", "W_V", "P"))
    U = P @ WV  # (D, D)
    M = WK.T @ WQ  # (D, D)
    d = M.shape[0] - 1
    r_x, r_y = U[d, :d], U[d, d]
    return -N * (r_y * M[:d, :d] + np.outer(r_x, M[d, :d])).T


__all__ = [
    "X_DISTS",
    "UNIFORM_V",
    "UNIFORM_M4",
    "RegressionBatch",
    "geometric_spectrum",
    "second_moment",
    "sample_regression",
    "Predictor",
    "LinearInY",
    "ZeroPredictor",
    "GD",
    "one_step_gd",
    "Averaging",
    "LeastSquares",
    "Ridge",
    "KNN",
    "build_tokens",
    "read_prediction",
    "gd_lsa_weights",
    "gd_lsa_stack",
    "lsa_forward",
    "LinearSelfAttention",
    "preconditioned_gd_loss",
    "one_step_gd_theory",
    "optimal_preconditioner",
    "conditional_loss_linear",
    "expected_loss_mc",
    "least_squares_theory",
    "baseline_theory",
    "GDPlusPlus",
    "gdpp_lsa_stack",
    "fit_gd_schedule",
    "wishart_trace_inverse",
    "marchenko_pastur_trace_inverse",
    "ridge_bayes_loss_theory",
    "sympy_symbols",
    "sympy_one_step_loss_bruteforce",
    "sympy_one_step_loss_closed_form",
    "sympy_eta_star_independent",
    "sensitivity",
    "preds_diff",
    "model_diff",
    "sensitivity_cosine",
    "compare_predictors",
    "fit_eta",
    "fit_preconditioner",
    "eta_from_lsa_weights",
    "lsa_linear_part",
]
