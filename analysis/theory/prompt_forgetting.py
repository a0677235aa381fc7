"""Prompt forgetting: the linear relay model, the O(P (ln t)^(L-1) / t) bound and the dilution bias.

Setting (seed paper, first abstract of ``seeds/000_*.txt``). Two prompts of length ``P`` are followed
by the same continuation; positions are counted from 1, so at position ``t`` a causal layer sees the
``t`` tokens ``1..t`` (prompt ``1..P``, continuation ``P+1..t``). The offset of layer ``l`` at
position ``t`` is the difference of the two hidden states.

The linear relay model
----------------------
``L`` layers of causal uniform attention with a residual connection and unit weights::

    h^l_t = h^(l-1)_t + (1/t) sum_{s<=t} h^(l-1)_s,        Delta^0_t = 1 (t <= P), 0 (t > P).

Write ``M`` for the causal running mean (``(M f)_t = (1/t) sum_{s<=t} f_s``, the discrete Hardy
operator). Then ``Delta^L = (I + M)^L Delta^0 = sum_k C(L, k) M^k Delta^0`` and, exchanging sums,

    (M^k f)_t = (1/t) sum_{s<=t} f_s h_{k-1}(1/s, 1/(s+1), ..., 1/t),

with ``h_n`` the complete homogeneous symmetric polynomial (``h_0 = 1``). Its generating function is
``prod_{u=s}^t (1 - z/u)^(-1) = exp(sum_m p_m z^m / m)`` with the power sums
``p_m(s, t) = H^(m)_t - H^(m)_(s-1)`` (generalised harmonic numbers), so ``h_n`` is a polynomial in
harmonic numbers (Newton's identities: ``h_n = sum_{lambda |- n} p_lambda / z_lambda``). Closed form::

    Delta^L_t = 2^L                                                              (t <= P)
    Delta^L_t = (1/t) sum_{s=1}^P sum_{k=1}^L C(L, k) h_{k-1}(p_1(s,t), p_2(s,t), ...)   (t > P)

(for ``t <= P`` the input is constant on ``1..t`` and ``M`` maps constants to themselves).

Asymptotics. ``H_t = ln t + gamma + O(1/t)`` and ``H^(m)_t = zeta(m) + O(t^(1-m))`` turn the generating
function into ``t^z Gamma(s - z) / Gamma(s) (1 + O(1/t))``, so ``h_n(1/s..1/t) = sum_j (ln t)^(n-j)/(n-j)!
g_j(s) + O((ln t)^n / t)`` with ``sum_j g_j(s) z^j = exp(sum_m (zeta(m) - H^(m)_(s-1)) z^m / m)`` (read
``zeta(1)`` as Euler's ``gamma``; ``g_1(s) = -psi(s)``). Hence

    Delta^L_t = (P / t) Q_L(ln t) (1 + O(1/t)),   Q_L(x) = sum_{k=1}^L C(L,k) sum_j x^(k-1-j)/(k-1-j)! gbar_j,

``gbar_j`` the mean of ``g_j(s)`` over ``s = 1..P``. The leading term is ``x^(L-1)/(L-1)!``, so

    Delta^L_t t / (P (ln t)^(L-1))  ->  1/(L-1)!,   with a correction (L - psibar)/((L-2)! ln t) + O(1/ln^2 t):

the bound ``O(P (ln t)^(L-1)/t)`` is attained (it cannot be improved), but the approach is only
logarithmic. The local exponent ``alpha(t) = -d ln Delta / d ln t = 1 - Q_L'(ln t)/Q_L(ln t) + O(1/t)``
rises towards 1 from below like ``1 - (L-1)/ln t``, which is also the local exponent of the bound's
shape ``P (ln t)^(L-1) / t``.

Matrix relay (the network with uniform attention, no MLP, no norm). With ``attention="uniform"``,
``norm="none"`` and ``d_mlp=0`` a TinyTransformer block is exactly ``h^l = h^(l-1) + M h^(l-1) A_l^T``
with ``A_l = W_o W_v`` (all heads share the uniform pattern). Same continuation tokens and no absolute
positions give ``delta^0_t = 0`` for ``t > P``, so ``delta^L_t = (1/t) sum_{s<=P} sum_k h_{k-1}(1/s..1/t)
E_k delta^0_s`` with ``E_k = sum_{l_1<..<l_k} A_{l_k}..A_{l_1}``: the scalar relay model with matrix
weights. For ``L = 1`` the offset is exactly ``|A_1 sum_s delta^0_s| / t`` (alpha = 1 for every
``t > P``); for ``L > 1`` the reference is *not* a pure ``1/t`` but the relay model's log-corrected law.

Dilution and its cancelling bias
--------------------------------
With attention logits bounded by ``B`` in absolute value the prompt's share of one attention row is
at most ``P e^(2B) / (P e^(2B) + t - P)`` (every prompt weight at most ``e^B``, every continuation
weight at least ``e^(-B)``): it decays like ``1/t``. Adding ``b_t`` to the logits of the prompt keys
of query ``t > P`` turns the uniform share ``P e^b / (P e^b + t - P)`` into the constant ``sigma`` iff

    b_t = ln((t - P) / P) + ln(sigma / (1 - sigma)).

``sigma = P / (P + 1)`` (the share at the first continuation token, so ``b_(P+1) = 0``) gives
``b_t = ln(t - P)``. For softmax attention the same bias removes the key-count factor of the share.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache

import numpy as np

from analysis.claims.fitting import fit_power_law
from analysis.core.validation import check_float, check_int

EULER_GAMMA = 0.57721566490153286060651209008240243104215933593992


# ================================================================================================
# The relay model: recursion (exact and float64)


def _check_plt(P: int, L: int, T: int) -> None:
    check_int("P", P, minimum=1)
    check_int("L", L, minimum=0)
    check_int("T", T, minimum=1)


def relay_offsets_exact(P: int, L: int, T: int) -> list[Fraction]:
    """``Delta^L_t`` for ``t = 1..T`` by the defining recursion, in exact rational arithmetic."""
    _check_plt(P, L, T)
    delta = [Fraction(1) if t <= P else Fraction(0) for t in range(1, T + 1)]
    for _ in range(L):
        running, out = Fraction(0), []
        for t, d in enumerate(delta, start=1):
            running += d
            out.append(d + running / t)
        delta = out
    return delta


def relay_offsets(P: int, L: int, T: int) -> np.ndarray:
    """``Delta^L_t`` of the linear relay model for ``t = 1..T`` (float64, shape ``(T,)``).

    Recursion ``Delta^l = Delta^(l-1) + cumsum(Delta^(l-1)) / t``; every term is positive, so the
    float64 result has relative error at most about ``L T eps`` (no cancellation).
    """
    _check_plt(P, L, T)
    t = np.arange(1, T + 1, dtype=np.float64)
    delta = (t <= P).astype(np.float64)
    for _ in range(L):
        delta = delta + np.cumsum(delta) / t
    return delta


def relay_vector_offsets(delta0: np.ndarray, mats: list[np.ndarray], T: int) -> np.ndarray:
    """Matrix relay model: ``delta^l = delta^(l-1) + M delta^(l-1) A_l^T`` for every layer.

    ``delta0`` (P, d) is the input offset on the prompt (zero after it); ``mats`` the ``A_l`` (d, d).
    Returns (L, T, d): the offset after each layer at positions ``t = 1..T`` (float64).
    """
    delta0 = np.asarray(delta0, dtype=np.float64)
    if delta0.ndim != 2:
        raise ValueError(f"delta0 must have shape (P, d), got {delta0.shape}")
    P, d = delta0.shape
    check_int("T", T, minimum=P)
    x = np.zeros((T, d))
    x[:P] = delta0
    t = np.arange(1, T + 1, dtype=np.float64)[:, None]  # (T, 1)
    out = []
    for A in mats:
        A = np.asarray(A, dtype=np.float64)
        if A.shape != (d, d):
            raise ValueError(f"each matrix must have shape ({d}, {d}), got {A.shape}")
        x = x + (np.cumsum(x, axis=0) / t) @ A.T  # (T, d)
        out.append(x)
    return np.stack(out) if out else np.zeros((0, T, d))


def elementary_products(mats: list[np.ndarray]) -> list[np.ndarray]:
    """``E_k = sum_{l_1<..<l_k} A_{l_k} .. A_{l_1}`` for ``k = 0..L`` (ordered elementary products).

    ``(I + A_L M) .. (I + A_1 M) = sum_k E_k M^k`` because ``M`` (time) commutes with every ``A`` (features).
    """
    d = np.asarray(mats[0]).shape[0] if mats else 0
    E = [np.eye(d)]
    for A in mats:  # multiply (I + A z) on the left
        A = np.asarray(A, dtype=np.float64)
        E = [E[0]] + [E[k] + A @ E[k - 1] for k in range(1, len(E))] + [A @ E[-1]]
    return E


# ================================================================================================
# The closed form: complete homogeneous polynomials of harmonic numbers


@cache
def _partitions(n: int) -> tuple[tuple[int, ...], ...]:
    """Integer partitions of ``n`` (parts in non-increasing order)."""
    if n == 0:
        return ((),)
    out = []

    def rec(rest: int, largest: int, parts: tuple[int, ...]) -> None:
        if rest == 0:
            out.append(parts)
            return
        for p in range(min(rest, largest), 0, -1):
            rec(rest - p, p, parts + (p,))

    rec(n, n, ())
    return tuple(out)


def _z_lambda(parts: tuple[int, ...]) -> int:
    """``z_lambda = prod_i i^(m_i) m_i!`` (``m_i`` the multiplicity of part ``i``)."""
    z = 1
    for part in set(parts):
        m = parts.count(part)
        z *= part**m * math.factorial(m)
    return z


def complete_homogeneous(n: int, power_sums) -> object:
    """``h_n`` from the power sums ``p_1..p_n`` (Newton): ``sum_{lambda |- n} prod p_(lambda_i) / z_lambda``.

    ``power_sums[m - 1] = p_m``; works for Fractions, floats, numpy arrays and sympy expressions.
    """
    check_int("n", n, minimum=0)
    exact = all(isinstance(p, Fraction | int) for p in power_sums)
    total = 0
    for parts in _partitions(n):
        term = Fraction(1, _z_lambda(parts)) if exact else 1.0 / _z_lambda(parts)
        for part in parts:
            term = term * power_sums[part - 1]
        total = total + term
    return total


def _harmonic_exact(n: int, m: int) -> Fraction:
    return sum((Fraction(1, u**m) for u in range(1, n + 1)), Fraction(0))


def relay_offset_closed_form_exact(P: int, L: int, t: int) -> Fraction:
    """``Delta^L_t`` from the closed form (harmonic numbers), in exact rational arithmetic."""
    _check_plt(P, L, t)
    if t <= P:
        return Fraction(2**L)
    total = Fraction(0)
    for s in range(1, P + 1):
        p = [_harmonic_exact(t, m) - _harmonic_exact(s - 1, m) for m in range(1, L + 1)]
        for k in range(1, L + 1):
            total += math.comb(L, k) * complete_homogeneous(k - 1, p)
    return total / t


def relay_offsets_closed_form(P: int, L: int, T: int) -> np.ndarray:
    """The closed form in float64 for ``t = 1..T`` (generalised harmonic numbers by cumulative sums)."""
    _check_plt(P, L, T)
    u = np.arange(1, T + 1, dtype=np.float64)
    H = np.vstack([np.zeros(L + 1), np.cumsum(1.0 / u[:, None] ** np.arange(1, L + 2), axis=0)])  # (T+1, L+1)
    t = np.arange(1, T + 1)
    out = np.full(T, 2.0**L)
    late = t > P
    tl = t[late]
    total = np.zeros(tl.size)
    for s in range(1, P + 1):
        p = [H[tl, m - 1] - H[s - 1, m - 1] for m in range(1, L + 1)]
        for k in range(1, L + 1):
            total += math.comb(L, k) * complete_homogeneous(k - 1, p)
    out[late] = total / tl
    return out


def relay_closed_form_sympy(P: int, L: int):
    """Symbolic closed form for ``t > P``: an expression in ``t`` and ``H^(m)_t`` (sympy ``harmonic``)."""
    import sympy as sp  # heavy, and only this symbolic cross-check needs it: imported on first use

    _check_plt(P, L, 1)
    t = sp.Symbol("t", positive=True, integer=True)
    total = sp.Integer(0)
    for s in range(1, P + 1):
        p = [sp.harmonic(t, m) - sp.harmonic(s - 1, m) for m in range(1, L + 1)]
        for k in range(1, L + 1):
            h = sum(
                (sp.Rational(1, _z_lambda(parts)) * sp.Mul(*[p[q - 1] for q in parts]) for parts in _partitions(k - 1)),
                sp.Integer(0),
            )
            total += sp.binomial(L, k) * h
    return t, sp.expand(total / t)


# ================================================================================================
# Asymptotics


def _zeta(m: int) -> float:
    """Riemann zeta(m) for m >= 2; Euler's gamma for m = 1 (the finite part of H_t - ln t)."""
    from scipy.special import zeta  # heavy, and only these asymptotics need it: imported on first use

    return EULER_GAMMA if m == 1 else float(zeta(m))


def gamma_ratio_coefficients(s: int, n: int) -> np.ndarray:
    """``g_0..g_n`` of ``Gamma(s - z)/Gamma(s) = exp(sum_m (zeta(m) - H^(m)_(s-1)) z^m / m)`` (zeta(1) := gamma)."""
    check_int("s", s, minimum=1)
    check_int("n", n, minimum=0)
    c = np.zeros(n + 1)  # log coefficients c_m, m = 1..n
    for m in range(1, n + 1):
        Hm = sum(1.0 / u**m for u in range(1, s))
        c[m] = (_zeta(m) - Hm) / m
    # exp of a power series: g' = c' g  ->  k g_k = sum_{m=1}^k m c_m g_{k-m}
    g = np.zeros(n + 1)
    g[0] = 1.0
    for k in range(1, n + 1):
        g[k] = sum(m * c[m] * g[k - m] for m in range(1, k + 1)) / k
    return g


def relay_asymptotic_poly(P: int, L: int) -> np.ndarray:
    """Coefficients ``q_0..q_(L-1)`` of ``Q_L(x) = sum_i q_i x^i`` with ``Delta^L_t = (P/t) Q_L(ln t)(1 + O(1/t))``."""
    check_int("P", P, minimum=1)
    check_int("L", L, minimum=1)
    gbar = np.mean([gamma_ratio_coefficients(s, L - 1) for s in range(1, P + 1)], axis=0)  # (L,)
    q = np.zeros(L)
    for k in range(1, L + 1):
        for j in range(k):  # x^(k-1-j)/(k-1-j)! * gbar_j
            q[k - 1 - j] += math.comb(L, k) * gbar[j] / math.factorial(k - 1 - j)
    return q


def relay_asymptotic(P: int, L: int, t) -> np.ndarray:
    """``(P/t) Q_L(ln t)``: the relay offset up to a relative ``O(L/t)`` error."""
    t = np.asarray(t, dtype=np.float64)
    q = relay_asymptotic_poly(P, L)
    x = np.log(t)
    return P / t * np.polyval(q[::-1], x)


def relay_limit(L: int) -> float:
    """``lim_t Delta^L_t t / (P (ln t)^(L-1)) = 1/(L-1)!``."""
    check_int("L", L, minimum=1)
    return 1.0 / math.factorial(L - 1)


def relay_ratio_first_correction(P: int, L: int) -> float:
    """``c_1`` in ``Delta^L_t t/(P (ln t)^(L-1)) = 1/(L-1)! + c_1/ln t + O(1/ln^2 t)``:
    ``(L - psibar)/(L-2)!``, 0 for L = 1.

    ``psibar = (1/P) sum_{s<=P} psi(s)``, ``psi(s) = H_(s-1) - gamma``.
    """
    check_int("L", L, minimum=1)
    if L == 1:
        return 0.0
    psibar = np.mean([sum(1.0 / u for u in range(1, s)) - EULER_GAMMA for s in range(1, P + 1)])
    return float((L - psibar) / math.factorial(L - 2))


def relay_local_exponent_asymptotic(P: int, L: int, t) -> np.ndarray:
    """``1 - Q_L'(ln t)/Q_L(ln t)``: the relay model's local exponent up to ``O(1/t)``."""
    t = np.asarray(t, dtype=np.float64)
    q = relay_asymptotic_poly(P, L)
    x = np.log(t)
    dq = np.polyval(np.polyder(q[::-1]), x) if L > 1 else 0.0 * x
    return 1.0 - dq / np.polyval(q[::-1], x)


# ================================================================================================
# The bound's shape


def bound_shape(P: int, L: int, t) -> np.ndarray:
    """``P (ln t)^(L-1) / t`` (the theorem's rate, constant factor dropped)."""
    check_int("P", P, minimum=1)
    check_int("L", L, minimum=1)
    t = np.asarray(t, dtype=np.float64)
    return P * np.log(t) ** (L - 1) / t


def bound_local_exponent(L: int, t) -> np.ndarray:
    """``-d ln(P (ln t)^(L-1)/t) / d ln t = 1 - (L-1)/ln t``."""
    check_int("L", L, minimum=1)
    t = np.asarray(t, dtype=np.float64)
    return 1.0 - (L - 1) / np.log(t)


def _window_alpha(y: np.ndarray, t_lo: float, t_hi: int, n_points: int) -> float:
    t = np.arange(1, t_hi + 1, dtype=np.float64)
    return fit_power_law(t, y, (t_lo, float(t_hi)), n_points=n_points).alpha


def relay_alpha_window(P: int, L: int, t_lo: float, t_hi: int, n_points: int = 64) -> float:
    """The relay model's fitted exponent over the window ``[t_lo, t_hi]``.

    The least-squares slope of ``-ln Delta^L_t`` against ``ln t`` on the same log grid of ``n_points``
    positions that :func:`analysis.claims.fitting.bootstrap_power_law` uses, so it is the number a measured
    ``alpha`` over that window is to be compared with. ``L = 1`` gives exactly 1 (``Delta^1_t = P/t``);
    each further layer lowers it by roughly ``1/ln t`` of the window (the ``(ln t)^(L-1)`` factor).
    """
    check_int("t_hi", t_hi, minimum=2)
    check_float("t_lo", t_lo, minimum=P + 1.0)
    return _window_alpha(relay_offsets(P, L, t_hi), t_lo, t_hi, n_points)


def bound_alpha_window(P: int, L: int, t_lo: float, t_hi: int, n_points: int = 64) -> float:
    """The bound shape's fitted exponent over ``[t_lo, t_hi]`` (same grid as :func:`relay_alpha_window`).

    An OLS slope is a positively weighted mean of the local slope, so it lies between the local
    exponents ``1 - (L-1)/ln t`` at the two ends of the window.
    """
    check_int("t_hi", t_hi, minimum=2)
    check_float("t_lo", t_lo, minimum=2.0)
    t = np.arange(1, t_hi + 1, dtype=np.float64)
    return _window_alpha(bound_shape(P, L, t), t_lo, t_hi, n_points)


def prompt_share_bound(P: int, t, max_logit: float) -> np.ndarray:
    """Largest prompt share of a softmax row at position ``t > P`` when every ``|logit| <= max_logit``."""
    check_int("P", P, minimum=1)
    check_float("max_logit", max_logit, minimum=0.0)
    t = np.asarray(t, dtype=np.float64)
    # w / (w + t - P) with w = P e^{2B}, written with e^{-2B}: no overflow for large B (the bound is then 1)
    return 1.0 / (1.0 + (t - P) * math.exp(-2.0 * max_logit) / P)


# ================================================================================================
# The dilution-cancelling bias


def default_share(P: int) -> float:
    """The uniform prompt share at the first continuation token, ``P/(P+1)`` (bias 0 there)."""
    check_int("P", P, minimum=1)
    return P / (P + 1.0)


def cancel_bias(P: int, t, share: float | None = None) -> np.ndarray:
    """Logit bias on the prompt keys of query ``t`` keeping the uniform prompt share at ``share``.

    ``b_t = ln((t - P)/P) + ln(share/(1 - share))`` for ``t > P`` and 0 for ``t <= P`` (no continuation
    key is visible, so any bias common to all keys changes nothing). ``share=None`` -> ``P/(P+1)``.
    """
    check_int("P", P, minimum=1)
    share = default_share(P) if share is None else share
    check_float("share", share, minimum=0.0, maximum=1.0)
    if not 0.0 < share < 1.0:
        raise ValueError(f"share must be in (0, 1), got {share!r}")
    t = np.asarray(t, dtype=np.float64)
    b = np.log(np.maximum(t - P, 1.0) / P) + math.log(share / (1.0 - share))
    return np.where(t > P, b, 0.0)


def uniform_prompt_share(P: int, t, bias=0.0) -> np.ndarray:
    """Prompt share ``P e^b / (P e^b + t - P)`` of a uniform row at ``t > P`` with prompt-key bias ``b``."""
    t = np.asarray(t, dtype=np.float64)
    w = P * np.exp(np.asarray(bias, dtype=np.float64))
    return np.where(t > P, w / (w + (t - P)), 1.0)
