r"""Looped (weight-tied) linear self-attention as multi-step gradient descent in context.

Chen et al. (seed ``003#50``) show that a linear *looped* transformer (one layer applied T times with the
same weights) implements T steps of gradient descent on the in-context least-squares loss and reaches a
small error with n = O(d) examples when the data are well conditioned, where earlier constructions needed
n = exp(Omega(T)). This module is the float64, model-free side of that statement, in the conventions of
:mod:`analysis.theory.icl_gd` (tokens e_i = (x_i, y_i), query (x_q, 0) hidden as a key, prediction minus
the query's y-slot, in-context loss L(w) = |X w - y|^2 / (2N), S = X^T X / N).

T steps of GD with a constant step eta from w_0 = 0,  w_{k+1} = w_k - eta (S w_k - h),  h = X^T y / N:

    w_T = sum_{j<T} (I - eta S)^j eta h,      y = X w* + sigma eps
    w_T - w* = -(I - eta S)^T w*  +  eta sum_{j<T} (I - eta S)^j X^T eps / N.

With w* ~ N(0, w_std^2 I) and eps ~ N(0, I) independent, in the eigenbasis (lambda_i, u_i) of S the
expected squared weight error given the context inputs X is (:func:`gd_weight_error`)

    E |w_T - w*|^2 = sum_i [ w_std^2 (1 - eta lambda_i)^{2T} + sigma^2 (1 - (1 - eta lambda_i)^T)^2 / (N lambda_i) ]

(the noise term is 0 for lambda_i = 0). Per prompt it falls geometrically, at the rate
rho(X)^2 = max_{lambda_i > 0} (1 - eta lambda_i)^2 per loop (:func:`per_prompt_rate`; a zero eigenvalue,
n < d, leaves its component of w* untouched). At n = c d with isotropic inputs of variance v and d, n
large, the spectrum of S fills the Marchenko-Pastur interval v [(1 - sqrt(d/n))^2, (1 + sqrt(d/n))^2], so
the rate depends on n/d only (:func:`mp_rate`): a constant c gives a constant rate < 1 per loop (the
seed's n = O(d)). An anisotropic Sigma of condition number kappa multiplies the spread of the spectrum and
slows the rate towards 1.

The trained looped layer need not be plain GD. Its weights, read in the convention of
:func:`analysis.theory.icl_gd.eta_from_lsa_weights` (U = P W_V, M = W_K^T W_Q, blocks (x, y)), have a
structured part: the x-x block U_xx of U, its y-y entry u_yy and the x-x block M_xx of M. Keeping only
those, one loop updates every token j (context and query) from the layer's input as

    x_j <- x_j + U_xx X^T X M_xx x_j,        r_j <- r_j + u_yy sum_i r_i x_i^T M_xx x_j

(r: the y-slots, r = y on the context and 0 on the query at the start), which is linear in y and in x_q:
yhat = x_q^T A_T y (:func:`looped_lsa_maps`). U_xx = 0 is preconditioned GD with the fixed matrix step
G = -N u_yy M_xx^T (plain GD with eta = tr G / d when G is a multiple of I); U_xx != 0 is weight-tied
GD++ (von Oswald et al. 2023 Sec. 3): the inputs are contracted by the same map every loop. For any
predictor yhat = x_q^T A y the weight error is exact given X (:func:`linear_map_error`):

    E |A y - w*|^2 = w_std^2 |A X - I|_F^2 + sigma^2 |A|_F^2.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.optimize import minimize_scalar

from analysis.core.validation import check_float, check_int

ArrayLike = Any


def _x(x_ctx: ArrayLike) -> np.ndarray:
    x = np.asarray(x_ctx, dtype=np.float64)
    if x.ndim != 3:
        raise ValueError(f"x_ctx must have shape (B, N, d), got {x.shape}")
    return x


def _loops(loops: int | Sequence[int]) -> list[int]:
    ks = [int(loops)] if np.isscalar(loops) else [int(k) for k in loops]
    if not ks:
        raise ValueError("loops must hold at least one loop count")
    for k in ks:
        check_int("loops", k, minimum=0)
    return ks


def context_spectrum(x_ctx: ArrayLike) -> np.ndarray:
    """(B, d) eigenvalues of S = X^T X / N for every prompt (ascending, float64, clipped at 0)."""
    x = _x(x_ctx)
    S = np.einsum("bnd,bne->bde", x, x) / x.shape[1]
    return np.clip(np.linalg.eigvalsh(S), 0.0, None)


def gd_weight_error(
    x_ctx: ArrayLike, eta: float, loops: int | Sequence[int], noise: float = 0.0, w_std: float = 1.0
) -> np.ndarray:
    """(B, len(loops)) exact E|w_T - w*|^2 given each prompt's inputs, T-step GD from 0 with step ``eta``
    (the closed form of the module docstring, through the eigenvalues of S)."""
    check_float("eta", eta)
    check_float("noise", noise, minimum=0.0)
    check_float("w_std", w_std, minimum=0.0)
    x = _x(x_ctx)
    N = x.shape[1]
    lam = context_spectrum(x)  # (B, d)
    pos = lam > 1e-12 * max(1.0, float(lam.max(initial=0.0)))
    out = []
    for T in _loops(loops):
        f = (1.0 - eta * lam) ** T  # (B, d)
        err = w_std**2 * np.where(pos, f**2, 1.0)
        if noise > 0:
            err = err + noise**2 * np.where(pos, (1.0 - f) ** 2 / (N * np.where(pos, lam, 1.0)), 0.0)
        out.append(err.sum(-1))
    return np.stack(out, -1)


def linear_map_error(A: ArrayLike, x_ctx: ArrayLike, noise: float = 0.0, w_std: float = 1.0) -> np.ndarray:
    """(B,) exact E|A y - w*|^2 given X for a predictor linear in the labels, A of shape (B, d, N):
    w_std^2 |A X - I|_F^2 + sigma^2 |A|_F^2."""
    check_float("noise", noise, minimum=0.0)
    check_float("w_std", w_std, minimum=0.0)
    A = np.asarray(A, dtype=np.float64)
    x = _x(x_ctx)
    if A.shape != (x.shape[0], x.shape[2], x.shape[1]):
        raise ValueError(f"A must have shape {(x.shape[0], x.shape[2], x.shape[1])}, got {A.shape}")
    R = A @ x - np.eye(x.shape[2])
    return w_std**2 * (R**2).sum((-2, -1)) + noise**2 * (A**2).sum((-2, -1))


def structured_parts(weights: Mapping[str, ArrayLike]) -> dict[str, Any]:
    """The structured part of one LSA layer's weights (convention of :mod:`analysis.theory.icl_gd`):
    U_xx, u_yy of U = P W_V and M_xx of M = W_K^T W_Q, the GD step matrix G = -N u_yy M_xx^T (per
    context example: pass N through :func:`step_matrix`), and ``residual`` = the Frobenius share of U and
    M outside those blocks (0 for the GD and GD++ constructions), combined in quadrature."""
    WK, WQ, WV, P = (np.asarray(weights[k], dtype=np.float64) for k in ("W_K", "W_Q", "W_V", "P"))
    U, M = P @ WV, WK.T @ WQ
    d = M.shape[0] - 1
    U_off, M_off = U.copy(), M.copy()
    U_off[:d, :d] = 0.0
    U_off[d, d] = 0.0
    M_off[:d, :d] = 0.0
    nu, nm = np.linalg.norm(U), np.linalg.norm(M)
    res = math.hypot(np.linalg.norm(U_off) / nu if nu > 0 else 0.0, np.linalg.norm(M_off) / nm if nm > 0 else 0.0)
    return {"U_xx": U[:d, :d].copy(), "u_yy": float(U[d, d]), "M_xx": M[:d, :d].copy(), "residual": float(res)}


def step_matrix(parts: Mapping[str, Any], N: int) -> np.ndarray:
    """G = -N u_yy M_xx^T: one loop's GD step on the labels is w <- w + G (h - S w) (eta G/eta = Gamma)."""
    check_int("N", N, minimum=1)
    return -N * parts["u_yy"] * np.asarray(parts["M_xx"], dtype=np.float64).T


def looped_lsa_maps(x_ctx: ArrayLike, U_xx: ArrayLike, u_yy: float, M_xx: ArrayLike, loops: int) -> list[np.ndarray]:
    """[A_1, ..., A_loops], each (B, d, N): yhat after k loops of the structured layer is x_q^T A_k y.

    The recursion (all updates from the layer's input; rows X (N, d), residual map r = R y, query input
    q = Q x_q, query slot s):  s <- s + u_yy q^T M_xx^T X^T r,  r <- r + u_yy X M_xx^T X^T r,
    X <- X (I + M_xx^T X^T X U_xx^T),  q <- (I + U_xx X^T X M_xx) q,  and yhat = -s."""
    check_int("loops", loops, minimum=1)
    check_float("u_yy", u_yy)
    x = _x(x_ctx)
    B, N, d = x.shape
    U = np.asarray(U_xx, dtype=np.float64)
    M = np.asarray(M_xx, dtype=np.float64)
    if U.shape != (d, d) or M.shape != (d, d):
        raise ValueError(f"U_xx and M_xx must have shape ({d}, {d}), got {U.shape} and {M.shape}")
    X = x.copy()
    R = np.broadcast_to(np.eye(N), (B, N, N)).copy()
    Q = np.broadcast_to(np.eye(d), (B, d, d)).copy()
    A = np.zeros((B, d, N))
    out = []
    for _ in range(loops):
        XtX = np.swapaxes(X, 1, 2) @ X  # (B, d, d)
        XtR = np.swapaxes(X, 1, 2) @ R  # (B, d, N): sum_i x_i r_i as a map of y
        A = A - u_yy * (np.swapaxes(Q, 1, 2) @ M.T @ XtR)
        R = R + u_yy * (X @ M.T @ XtR)
        X = X @ (np.eye(d) + M.T @ XtX @ U.T)
        Q = (np.eye(d) + U @ XtX @ M) @ Q
        out.append(A.copy())
    return out


def best_constant_step(
    x_ctx: ArrayLike, loops: int, noise: float = 0.0, w_std: float = 1.0, hi: float | None = None
) -> tuple[float, float]:
    """The constant step minimising the mean of :func:`gd_weight_error` after ``loops`` steps over the
    given prompts, and that mean (bounded scalar search on (0, hi], hi = 2 / mean lambda_max)."""
    check_int("loops", loops, minimum=1)
    x = _x(x_ctx)
    if hi is None:
        hi = 2.0 / float(context_spectrum(x)[:, -1].mean())

    def f(eta: float) -> float:
        return float(gd_weight_error(x, float(eta), [loops], noise, w_std).mean())

    res = minimize_scalar(f, bounds=(1e-9 * hi, hi), method="bounded", options={"xatol": 1e-7 * hi})
    return float(res.x), float(res.fun)


def per_prompt_rate(x_ctx: ArrayLike, eta: float) -> np.ndarray:
    """(B,) rho(X) = max over the positive eigenvalues of S of |1 - eta lambda| (1 where S is singular):
    each prompt's squared weight error falls at least like rho^(2T) (noiseless)."""
    lam = context_spectrum(x_ctx)
    pos = lam > 1e-12 * max(1.0, float(lam.max(initial=0.0)))
    rho = np.where(pos, np.abs(1.0 - eta * lam), 0.0).max(-1)
    return np.where(pos.all(-1), rho, np.maximum(rho, 1.0))


def mp_rate(ratio: float, eta: float | None = None, v: float = 1.0) -> dict[str, float]:
    """Per-loop contraction of GD at large d with n = d / ratio isotropic examples of variance v: the
    Marchenko-Pastur edges lambda_pm = v (1 pm sqrt(ratio))^2 (ratio < 1), rho = max |1 - eta lambda_pm|;
    ``eta`` None takes the best, 2 / (lambda_- + lambda_+) = 1 / (v (1 + ratio)), where
    rho = 2 sqrt(ratio) / (1 + ratio). Returns the edges, eta, rho and the squared-error rate rho^2."""
    check_float("ratio", ratio, minimum=0.0)
    if ratio >= 1:
        raise ValueError(f"ratio = d/n must be < 1 for a non-singular S, got {ratio}")
    lo, hi = v * (1 - math.sqrt(ratio)) ** 2, v * (1 + math.sqrt(ratio)) ** 2
    e = 2.0 / (lo + hi) if eta is None else float(eta)
    rho = max(abs(1 - e * lo), abs(1 - e * hi))
    return {"lambda_min": lo, "lambda_max": hi, "eta": e, "rho": rho, "rate": rho * rho}
