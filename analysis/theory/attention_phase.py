r"""Softmax attention at initialisation as a random-energy model: the entropy transition in inverse
temperature and token correlation (float64; after Giorlandino & Goldt, ICLR 2026, "Two failure modes of
deep transformers"). Model-free: the theory side of the phase-diagram measurements of ``signal_propagation``.

Setting. ``T`` tokens on the sphere of radius ``sqrt(d)`` with pairwise cosine ``p``: ``x_i . x_j = d (p +
(1 - p) delta_ij)`` (:func:`correlated_tokens`). One head with query and key maps ``W_q, W_k`` of i.i.d.
``N(0, 1/d)`` entries (the zoo's ``fan_in`` init), head width ``d_h``, and logits in the random-energy
normalisation

    s_ij = beta sqrt(ln T) (W_q x_i) . (W_k x_j) / sqrt(d_h).

1. A row is softmax over i.i.d. Gaussian logits. Fix the query ``q = W_q x_i``. Over the draw of ``W_k``
the logits of row ``i`` are jointly Gaussian with mean 0 and covariance

    Cov(s_ij, s_ij') = beta^2 ln T (|q|^2 / d_h) (x_j . x_j' / d) = beta^2 ln T (|q|^2 / d_h) (p + (1 - p) delta_jj'),

i.e. a part common to all keys (variance ``p``) plus an independent part. Softmax is blind to a shift
common to the row, so the row's weights are those of ``T`` i.i.d. ``N(0, sigma^2)`` logits with

    sigma^2 = beta^2 (1 - p) ln T (|q|^2 / d_h),       E |q|^2 / d_h = |x_i|^2 / d = 1        (:func:`logit_std`)

(``|q|^2 / d_h`` is a chi-square mean over ``d_h`` coordinates: it concentrates at 1 as ``d_h`` grows; a probe
uses each row's measured logit spread).

2. The transition (random-energy model, Derrida 1981). For ``T`` i.i.d. ``N(0, sigma^2)`` energies with
``sigma^2 = 2 ln T (beta / beta_c)^2`` the partition sum is self-averaging up to ``sigma = sqrt(2 ln T)``,
the largest of ``T`` Gaussians, and condenses on O(1) terms beyond. With ``sigma^2 = beta^2 (1 - p) ln T``
the critical inverse temperature is

    beta_c(p) = sqrt(2 / (1 - p))                                                 (:func:`critical_beta`)

— correlated tokens (``p`` near 1) need a hotter softmax to freeze; the p-blind value is ``sqrt 2``. As ``T ->
oo`` the row entropy and the participation ``sum_j a_ij^2`` obey

    H / ln T  ->  1 - (beta / beta_c)^2   (beta < beta_c),    0 above             (:func:`entropy_ratio_limit`)
    sum_j a_ij^2  ->  0                   (beta < beta_c),    1 - beta_c / beta   (:func:`participation_limit`)

(below ``beta_c``: ``H = ln T + ln E e^{sigma z} - E[sigma z e^{sigma z}] / E e^{sigma z} = ln T - sigma^2 / 2`` to
leading order; above: the weights are Poisson-Dirichlet with parameter ``m = beta_c / beta``, whose
``E sum a^2 = 1 - m``).

3. Finite T. The limits are reached slowly (corrections in ``1 / ln T``; far at ``T ~ 1e3``), so the yardstick of
a measurement at finite ``T`` is the exact expectation for ``T`` i.i.d. Gaussian logits at the same ``sigma``:
the entropy by the Frullani quadrature of :func:`analysis.theory.attention_entropy.gaussian_entropy`, the
participation by :func:`gaussian_participation_exact`: with ``1 / Z^2 = int_0^oo t e^{-t Z} dt`` and
independence,

    E sum_j a_j^2 = T E[e^{2 x_1} / Z^2] = T int_0^oo t chi(t) phi(t)^{T-1} dt,
    phi(t) = E exp(-t e^{x}),   chi(t) = E[e^{2x} exp(-t e^{x})],   x ~ N(0, sigma^2);

in ``u = ln t`` the integrand is ``T E[g(u + x)] phi^{T-1}`` with ``g(y) = exp(2y - e^y)`` bounded by ``4/e^2``
(no overflow at any ``sigma``). Checks (tests): ``T = 1`` gives 1, ``sigma = 0`` gives ``1/T``, Monte Carlo
agrees within its standard error, and the finite-``T`` values approach the limits of 2 as ``T`` grows.
"""

from __future__ import annotations

import math

import numpy as np

from analysis.theory.attention_entropy import _WZ, _Z, gaussian_entropy

__all__ = [
    "correlated_tokens",
    "critical_beta",
    "entropy_ratio_finite",
    "entropy_ratio_limit",
    "gaussian_participation_exact",
    "gaussian_participation_mc",
    "logit_std",
    "participation_finite",
    "participation_limit",
]


def _check_p(p: float) -> float:
    p = float(p)
    if not 0.0 <= p < 1.0:
        raise ValueError(f"p (the tokens' pairwise cosine) must be in [0, 1), got {p!r}")
    return p


def _check_beta(beta) -> np.ndarray:
    b = np.asarray(beta, dtype=np.float64)
    if not np.all(np.isfinite(b)) or np.any(b < 0):
        raise ValueError(f"beta (inverse temperature) must be finite and >= 0, got {beta!r}")
    return b


def _check_T(T) -> int:
    if isinstance(T, bool) or not isinstance(T, int | np.integer) or T < 1:
        raise ValueError(f"T (tokens per row) must be an integer >= 1, got {T!r}")
    return int(T)


def critical_beta(p: float) -> float:
    """``beta_c(p) = sqrt(2 / (1 - p))``: where the rows of tokens with pairwise cosine ``p`` freeze (section 2)."""
    return math.sqrt(2.0 / (1.0 - _check_p(p)))


def logit_std(beta, p: float, T: int) -> np.ndarray:
    """``sigma = beta sqrt((1 - p) ln T)``: the spread of a row's logits beyond their common part (section 1,
    at ``|q|^2 / d_h = 1``)."""
    return _check_beta(beta) * math.sqrt((1.0 - _check_p(p)) * math.log(_check_T(T)))


def entropy_ratio_limit(beta, p: float) -> np.ndarray:
    """``lim_{T -> oo} H / ln T = max(1 - (beta / beta_c)^2, 0)`` (section 2)."""
    return np.maximum(1.0 - (_check_beta(beta) / critical_beta(p)) ** 2, 0.0)


def participation_limit(beta, p: float) -> np.ndarray:
    """``lim_{T -> oo} sum_j a_j^2 = max(1 - beta_c / beta, 0)`` (section 2; 0 at ``beta = 0``)."""
    b = _check_beta(beta)
    with np.errstate(divide="ignore"):
        return np.where(b > 0, np.maximum(1.0 - critical_beta(p) / np.where(b > 0, b, 1.0), 0.0), 0.0)


def gaussian_participation_exact(n: int, s: float, n_u: int = 1201) -> float:
    """``E sum_j a_j^2`` for softmax over ``n`` i.i.d. ``N(0, s^2)`` logits, by the quadrature of section 3."""
    n, s = _check_T(n), float(s)
    if not math.isfinite(s) or s < 0:
        raise ValueError(f"s (logit std) must be finite and >= 0, got {s!r}")
    if n == 1:
        return 1.0
    if s == 0.0:
        return 1.0 / n
    # small t: phi ~ 1 and the integrand ~ n t^2 e^{2 s^2}; large t: e^{2y - e^y} needs y = u + s z ~ O(1)
    u = np.linspace(-(s * s + math.log(n) + 40.0), 14.0 * s + 40.0, n_u)
    y = u[:, None] + s * _Z[None, :]  # (Nu, Nz)
    ey = np.exp(np.minimum(y, 700.0))
    phi = np.exp(-ey) @ _WZ
    g = np.exp(2.0 * np.minimum(y, 700.0) - ey) @ _WZ
    return float(n * np.sum(g * phi ** (n - 1)) * (u[1] - u[0]))


def gaussian_participation_mc(n: int, s: float, reps: int, rng: np.random.Generator) -> tuple[float, float]:
    """Monte Carlo ``(mean, standard error)`` of ``sum_j a_j^2`` over ``reps`` rows of ``n`` i.i.d. ``N(0, s^2)``
    logits (the independent check of :func:`gaussian_participation_exact`)."""
    x = s * rng.standard_normal((int(reps), _check_T(n)))
    x -= x.max(axis=1, keepdims=True)
    a = np.exp(x)
    a /= a.sum(axis=1, keepdims=True)
    v = (a * a).sum(axis=1)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(len(v)))


def entropy_ratio_finite(beta: float, p: float, T: int) -> float:
    """``E H / ln T`` for ``T`` i.i.d. Gaussian logits at :func:`logit_std` (the finite-T yardstick; T >= 2)."""
    T = _check_T(T)
    if T < 2:
        raise ValueError(f"T must be >= 2 for H / ln T, got {T}")
    s = float(logit_std(beta, p, T))
    return float(gaussian_entropy([T], s)[0]) / math.log(T)


def participation_finite(beta: float, p: float, T: int) -> float:
    """``E sum_j a_j^2`` for ``T`` i.i.d. Gaussian logits at :func:`logit_std` (the finite-T yardstick)."""
    return gaussian_participation_exact(T, float(logit_std(beta, p, T)))


def correlated_tokens(T: int, d: int, p: float, rng: np.random.Generator, exact: bool | None = None) -> np.ndarray:
    """``(T, d)`` tokens on the sphere of radius ``sqrt(d)`` with pairwise cosine ``p``.

    ``exact`` (the default when ``d >= T + 1``): ``x_i = sqrt(d) (sqrt(p) e_0 + sqrt(1 - p) e_i)`` for ``T + 1``
    orthonormal vectors ``e`` in a random orientation, so every cosine is ``p`` to rounding. Otherwise (any
    ``T``, e.g. ``T >> d``): ``x_i`` is ``sqrt(p d) u + sqrt(1 - p) g_i`` projected onto the sphere, with ``u`` a
    random unit vector and ``g_i`` i.i.d. ``N(0, I_d)``: the cosines are ``p + O(1 / sqrt d)``, and for a
    direction ``v`` drawn independently of the tokens the projections ``x_j . v`` are i.i.d. over ``j`` up to
    that normalisation (section 1's i.i.d. logits, now exactly so given the query and key weights)."""
    T, p = _check_T(T), _check_p(p)
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 1:
        raise ValueError(f"d (token width) must be an integer >= 1, got {d!r}")
    d = int(d)
    if exact is None:
        exact = d >= T + 1
    if exact:
        if d < T + 1:
            raise ValueError(f"d (token width) must be >= T + 1 = {T + 1} for exact cosines, got {d}")
        q, _ = np.linalg.qr(rng.standard_normal((d, T + 1)))  # orthonormal columns
        e0, e = q[:, 0], q[:, 1:].T  # (d,), (T, d)
        return math.sqrt(d) * (math.sqrt(p) * e0[None, :] + math.sqrt(1.0 - p) * e)
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    x = math.sqrt(p * d) * u[None, :] + math.sqrt(1.0 - p) * rng.standard_normal((T, d))
    return math.sqrt(d) * x / np.linalg.norm(x, axis=1, keepdims=True)
