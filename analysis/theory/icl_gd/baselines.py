"""Baselines of in-context regression (Garg et al. 2022): one call signature for every predictor,
``predictor(x_ctx (B, N, d), y_ctx (B, N), x_q (B, d)) -> yhat (B,)`` in float64.

Zero, (preconditioned) K-step GD from w = 0, averaging, least squares, ridge and k-nearest neighbours.
Predictors linear in the labels (:class:`LinearInY`) also expose ``linear_map``, so their expected loss
can be averaged exactly over w, the noise and the query (:mod:`.risk`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from analysis.core.validation import check_float, check_int
from analysis.theory.icl_gd._common import ArrayLike, as_batch, as_f64, check_gamma, fmt_float


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
        xc, yc, xq = as_batch(x_ctx, y_ctx, x_q)
        w_hat = torch.einsum("bdn,bn->bd", self.linear_map(xc), yc)  # (B, d)
        return (w_hat * xq).sum(-1)


@dataclass(frozen=True)
class ZeroPredictor:
    """yhat = 0. Its loss is the label variance  w_std^2 tr Sigma (+ sigma^2)."""

    @property
    def name(self) -> str:
        return "zero"

    def __call__(self, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> torch.Tensor:
        _, _, xq = as_batch(x_ctx, y_ctx, x_q)
        return xq.sum(-1) * 0.0  # zeros that keep a (zero) gradient path to x_q


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
        object.__setattr__(self, "gamma", check_gamma(self.gamma))

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
        eta = fmt_float(etas[0]) if len(set(etas)) == 1 else "[" + ",".join(map(fmt_float, etas)) + "]"
        pre = "p" if self.gamma is not None else ""  # "p": preconditioned
        return f"{pre}gd{self.steps}_eta={eta}"

    def _gamma_t(self, d: int) -> torch.Tensor:
        if self.gamma is None:
            return torch.eye(d, dtype=torch.float64)
        if self.gamma.shape != (d, d):
            raise ValueError(f"gamma has shape {self.gamma.shape}, the data have d = {d}")
        return torch.as_tensor(self.gamma)

    def linear_map(self, x_ctx: ArrayLike) -> torch.Tensor:
        xc = as_f64(x_ctx)
        B, N, d = xc.shape
        G = self._gamma_t(d)
        S = xc.transpose(1, 2) @ xc / N  # (B, d, d)
        XtN = xc.transpose(1, 2) / N  # (B, d, N)
        A = torch.zeros(B, d, N, dtype=torch.float64)
        for eta in self.etas:
            A = A - eta * (G @ (S @ A - XtN))
        return A

    def __call__(self, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> torch.Tensor:
        xc, yc, xq = as_batch(x_ctx, y_ctx, x_q)
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
        xc = as_f64(x_ctx)
        return xc.transpose(1, 2) / xc.shape[1]  # (B, d, N)


@dataclass(frozen=True)
class LeastSquares(LinearInY):
    """Min-norm least squares: w_hat = pinv(X) y (ordinary least squares when N >= d)."""

    @property
    def name(self) -> str:
        return "least_squares"

    def linear_map(self, x_ctx: ArrayLike) -> torch.Tensor:
        return torch.linalg.pinv(as_f64(x_ctx))  # (B, d, N)


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
        return f"ridge_lam={fmt_float(self.lam)}"

    def linear_map(self, x_ctx: ArrayLike) -> torch.Tensor:
        xc = as_f64(x_ctx)
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
        xc, yc, xq = as_batch(x_ctx, y_ctx, x_q)
        dist = ((xc - xq.unsqueeze(1)) ** 2).sum(-1)  # (B, N)
        k = min(self.k, xc.shape[1])
        idx = torch.topk(dist, k, dim=1, largest=False).indices  # (B, k)
        return torch.gather(yc, 1, idx).mean(1)
