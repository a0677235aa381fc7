r"""Closed-form expected losses: one step of (preconditioned) GD, its best learning rate eta* and
preconditioner Gamma* (Mahankali et al. 2023; Ahn et al. 2023), and min-norm least squares.

Every formula is written once, on matrices, so that the same code runs on numpy arrays (numbers) and on
sympy matrices (the brute-force checks of :mod:`.symbolic`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from analysis.data.regression_data import UNIFORM_M4, UNIFORM_V
from analysis.theory.icl_gd._common import ArrayLike, check_gamma, check_theory_args
from analysis.theory.icl_gd.data import second_moment


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
    G = check_gamma(gamma)
    d = G.shape[0]
    check_theory_args(d, N, sigma, w_std, query_noise)
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
    check_theory_args(d, N, sigma, w_std, query_noise)
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


def one_step_gd_relu_theory(
    d: int, N: int, sigma: float, w_std: float = 1.0, query_noise: bool = True
) -> dict[str, Any]:
    r"""One GD step on least squares (from w = 0) against a ReLU response: the best preconditioner and its loss.

    The law: x ~ N(0, I_d), w ~ N(0, w_std^2 I_d), y = max(0, w.x) + sigma eps (context and query alike); the
    predictor yhat = x_q^T Gamma h, h = (1/N) sum_i y_i x_i (one least-squares GD step, eta folded into Gamma).
    Mahankali et al. 2023: changing only the responses to a nonlinear function of w.x leaves the optimal
    one-layer LSA a single step of plain GD on least squares. Derivation, with s = w.x and u = w / |w|:

    * Stein's lemma, E[g(s) x | w] = w E[g'(s) | w]; for g = relu, g' = 1{s > 0} has mean 1/2, so
      m(w) := E[y x | w] = w / 2 and E[y_q x_q^T Gamma h] = E[m^T Gamma m] = (w_std^2 / 4) tr Gamma.
    * Write x = u z + x_perp (z ~ N(0, 1) independent of x_perp). With E[relu(z)^2] = 1/2 and
      E[relu(z)^2 z^2] = 3/2: E[relu(s)^2 x x^T | w] = |w|^2 (3/2 u u^T + 1/2 (I - u u^T)) = (|w|^2 / 2)(I + 2 u u^T);
      averaging over w (E|w|^2 u u^T = E w w^T = w_std^2 I): E[relu(s)^2 x x^T] = w_std^2 (d + 2)/2 I.
    * Context points are independent given w, so E[h h^T] = (1/N) E[y^2 x x^T] + (1 - 1/N) E[m m^T] = c I with
          c = [w_std^2 (d + 2)/2 + sigma^2] / N + (1 - 1/N) w_std^2 / 4,
      and (x_q independent, E x_q x_q^T = I) E[yhat^2] = tr(Gamma^T Gamma E[h h^T]) = c |Gamma|_F^2.
    * E[y_q^2] = E[relu(s)^2] + sigma^2 = w_std^2 d / 2 + sigma^2 (query noise).

    So loss(Gamma) = w_std^2 d/2 + qn sigma^2 - (w_std^2 / 2) tr Gamma + c |Gamma|_F^2, a strictly convex
    quadratic whose minimiser is Gamma* = eta* I (a multiple of the identity: plain GD), with
        eta* = (w_std^2 / 4) / c = N / (N + 2 d + 3 + 4 sigma^2 / w_std^2),   loss* = a - d eta* w_std^2 / 4.
    The linear response's rate is N / (N + d + 1 + sigma^2 / w_std^2) (:func:`one_step_gd_theory`): the ReLU's
    larger fourth moment (E[y^2 |x|^2]) lowers the best step. The LSA cannot predict y's mean E relu(s) != 0
    (its output is linear in x_q): that part stays in loss*.

    Returns dict(eta_star, loss_star, a, b, c, loss_fn, loss_gamma) with loss_fn(eta) = a - 2 b eta + d c eta^2
    (b = d w_std^2 / 4) and loss_gamma(Gamma) the loss of any (d, d) preconditioner.
    """
    check_theory_args(d, N, sigma, w_std, query_noise)
    w2, s2 = float(w_std) ** 2, float(sigma) ** 2
    a = w2 * d / 2 + s2 * float(query_noise)
    c = (w2 * (d + 2) / 2 + s2) / N + (1 - 1 / N) * w2 / 4
    b = d * w2 / 4

    def loss_fn(eta: float | np.ndarray) -> float | np.ndarray:
        e = np.asarray(eta, dtype=np.float64)
        return a - 2 * b * e + d * c * e**2

    def loss_gamma(G: ArrayLike) -> float:
        M = check_gamma(G)
        if M.shape != (d, d):
            raise ValueError(f"Gamma must have shape ({d}, {d}), got {M.shape}")
        return float(a - (w2 / 2) * np.trace(M) + c * np.sum(M * M))

    eta = (w2 / 4) / c
    return {
        "eta_star": eta,
        "loss_star": a - b * eta,
        "a": a,
        "b": b,
        "c": d * c,
        "loss_fn": loss_fn,
        "loss_gamma": loss_gamma,
    }


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
    check_theory_args(d, N, sigma, w_std, query_noise)
    w2, s2 = float(w_std) ** 2, float(sigma) ** 2
    ridge = (np.trace(S) + s2 / w2) / N
    gamma = np.linalg.inv((1 + 1 / N) * S + ridge * np.eye(d))
    gamma = 0.5 * (gamma + gamma.T)
    lam = np.linalg.eigvalsh(S)
    loss_star = w2 * lam.sum() + s2 * float(query_noise) - w2 * np.sum(lam**2 / ((1 + 1 / N) * lam + ridge))

    def loss_fn(G: ArrayLike) -> float:
        return preconditioned_gd_loss(G, N, "anisotropic", sigma, w_std, S, query_noise)

    return {"gamma": gamma, "loss_star": float(loss_star), "loss_fn": loss_fn}


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
    check_theory_args(d, N, sigma, w_std, query_noise)
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
