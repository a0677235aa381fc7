"""Attention entropy: softmax over many logits, its dilution, SSMax, sigmoid and entropy bounds (float64).

Notation. One attention row has ``n`` visible keys with logits ``x_1..x_n`` and weights
``p_j = e^{x_j} / Z``, ``Z = sum_j e^{x_j}``. Its entropy is

    H = -sum_j p_j ln p_j = ln Z - sum_j p_j x_j,      0 <= H <= ln n.

1. Gaussian logits, large n (law of large numbers). Let ``x_j = s z_j`` with ``z_j`` i.i.d. N(0, 1).
Write ``Z = n A`` and ``sum_j x_j e^{x_j} = n B`` with the sample means ``A``, ``B``. Then exactly
``H = ln n + ln A - B / A``. For a Gaussian, ``E[e^{sz}] = e^{s^2/2}`` and, differentiating in ``s``,
``E[s z e^{sz}] = s^2 e^{s^2/2}``. As ``n -> oo`` with ``s`` fixed, ``A -> e^{s^2/2}`` and ``B -> s^2 e^{s^2/2}``,
so

    H  ->  ln n + s^2/2 - s^2  =  ln n - s^2/2                                     (LLN law)

Second order (delta method on f(A, B) = ln A - B/A, with ``Var A = (e^{2s^2} - e^{s^2})/n`` and
``Cov(A, B) = (E[sz e^{2sz}] - E[e^{sz}] E[sz e^{sz}])/n = (2 s^2 e^{2s^2} - s^2 e^{s^2})/n``;
``f_AA = -(1 + 2 s^2) e^{-s^2}``, ``f_AB = e^{-s^2}``, ``f_BB = 0`` at the limit point):

    E[H] = ln n - s^2/2 + (s^2 e^{s^2} - (e^{s^2} - 1)/2) / n + o(1/n)

At small ``s`` the correction is ``s^2/(2n)``: the familiar ``H ~ ln n - (1/2) * sample variance`` with
the sample variance's mean ``s^2 (n-1)/n``.

Breakdown. The expansion is in powers of the relative fluctuation of the partition sum,

    eps(n, s) = Var(Z) / E[Z]^2 = (e^{s^2} - 1) / n,

so the LLN law needs ``n >> e^{s^2}``; for ``n e^{-s^2} <~ 1`` the sum is dominated by its few largest
terms. At ``n = e^{s^2/2}`` (``s = sqrt(2 ln n)``, the largest of n Gaussians) the LLN law predicts
``H = 0``: this is the freezing point of the random-energy model. Beyond it (``s^2 > 2 ln n``) the
weight condenses on O(1) keys and ``E[H] = O(1)``, not the negative value of the LLN law. Between
``e^{s^2/2}`` and ``e^{s^2}`` the leading term survives but the 1/n corrections are O(1).

Exact reference for finite n (quadrature, :func:`gaussian_entropy_exact`). With Frullani's integral
``ln Z = int_0^oo (e^{-t} - e^{-tZ}) dt/t`` and ``1/Z = int_0^oo e^{-tZ} dt``, and independence,

    E[ln Z]         = int_0^oo (e^{-t} - phi(t)^n) dt / t,          phi(t) = E[exp(-t e^{sz})]
    E[sum p_j x_j]  = n int_0^oo psi(t) phi(t)^{n-1} dt,            psi(t) = E[sz e^{sz} exp(-t e^{sz})]

``phi`` and ``psi`` are one-dimensional Gaussian integrals (trapezoid on a wide z grid, spectrally
accurate for these smooth, Gaussian-weighted integrands); the t integrals run over ``u = ln t``.
:func:`gaussian_entropy_mc` is the independent Monte Carlo check (mean and standard error).

Large logit scale (:func:`gaussian_entropy_large_s`). For fixed ``n`` and ``s -> oo`` the weight sits on the
largest logit unless the gap ``G = z_(1) - z_(2)`` between the two largest standard normals is O(1/s); then
``H`` is the binary entropy ``h(d)`` of ``sigmoid(d)`` at ``d = s G`` (a third key near the top costs a second
factor 1/s). With ``g_n(0) = n (n-1) int phi(z)^2 Phi(z)^{n-2} dz`` the density of G at 0 and
``int_0^oo h(d) dd = pi^2 / 6``,

    E[H] = g_n(0) pi^2 / (6 s) + O(1/s^2).

The quadrature overflows (``t = e^u`` with ``u`` up to ``14 s + 40``) past s ~ 45 and loses accuracy before;
:func:`gaussian_entropy` switches to the asymptotic form above ``S_ASYMPTOTIC = 30``, where the two agree to a
few per cent (checked in the tests; the relative gap falls like 1/s). :func:`sample_kurtosis_gaussian` is the
exact mean ``-6 / (n + 1)`` of the sample excess kurtosis ``m4 / m2^2 - 3`` of n i.i.d. Gaussians (a row's
logits are Gaussian in shape only if their excess kurtosis is near it).

2. Dilution. Logits bounded, ``|x_j| <= M``: every weight is at most
``e^M / (e^M + (n-1) e^{-M})``, which fades like ``e^{2M}/n``. A planted key with gap ``g`` above
``n - 1`` zeros has weight ``w_soft = e^g / (e^g + n - 1)``.
SSMax multiplies logits by ``s ln n``: ``w_ssmax = n^{sg} / (n^{sg} + n - 1)``. As ``n -> oo``:
``n^{sg-1} -> oo`` if ``sg > 1`` (w -> 1), ``n/(2n-1) -> 1/2`` if ``sg = 1``, and ``w ~ n^{sg-1} -> 0`` if
``sg < 1``: the fading stops iff ``s g >= 1``. Sigmoid attention (bias ``b``) does not normalise:
``w_sigmoid = sigma(g + b)`` for every n.

Fading rate. Write ``w = 1 / (1 + u)`` with ``u = (n - 1) e^{-a(n)}``, ``a = g`` (softmax) or
``a = s g ln n`` (SSMax, ``a' = da / d ln n = s g``). Then exactly

    d ln w / d ln n = -(n - a' (n - 1)) e^{-a} / (1 + u),

which for SSMax tends to ``min(sg - 1, 0)`` (``sg - 1`` if ``sg < 1``, else 0) with a correction of
relative size ``n^{-|sg - 1|}``, and for softmax to -1 with a correction ``e^g / n``. A least-squares
fit of ``ln w`` on ``ln n`` over a window is a convex combination of the secant slopes, so it lies
within the range of this local slope over the window: the finite-window tolerance of a fitted rate.

2b. A trained planted key (retrieval, seed 000#6). A trained model's query row sees the planted key, ``m``
distractors and a few keys whose number does not grow with the context (here the query itself). Write its logits
as ``a x_j`` with ``a = 1`` (softmax) or ``a = s ln K`` (SSMax, ``K`` the visible keys) and the raw gaps
``d_j = x_planted - x_j``; then exactly

    w = 1 / (1 + sum_fixed e^{-a d_f} + m * mean_j e^{-a d_j}).

If the distractors are i.i.d. (a task property), the mean over the ``m0`` distractors seen at the training length
estimates ``E e^{-a d}`` at any length, so the gaps measured at the training length predict the weight at every
length (:func:`retrieval_weight`; at the training length it reproduces the measured weight exactly). With one
gap ``g``: softmax ``1/(1 + (n - 1) e^{-g})``, fading like 1/n once ``n >> e^g``; SSMax
``1/(1 + (n - 1) n^{-sg})``, as in 2. The effective gap ``-ln(mean_j e^{-a d_j}) / a``
(:func:`effective_gap`) is the single gap with the same weight. For SSMax it gives the condition ``s g >= 1``
in terms of the training: at the training length ``K`` the weight is ``1/(1 + (K - 1) K^{-sg})``, so
``s g >= 1`` iff that weight is at least ``K / (2K - 1)``, about 1/2: a model trained to put more than half of
its attention on the planted key does not fade with SSMax, whatever ``s``.

3. Entropy lower bound for bounded logits. Shannon entropy is at least the min-entropy ``-ln max_j p_j``.
With logits in a range ``R = max_j x_j - min_j x_j`` (softmax is shift invariant, so ``|x_j| <= M`` gives
``R <= 2M``), ``max_j p_j <= 1 / (1 + (n-1) e^{-R})``, hence

    H >= ln(1 + (n - 1) e^{-R})  >=  ln n - R  (>= ln n - 2M).

4. Spectral norm of ``W_Q W_K^T`` (after Zhai et al. 2023). In one head the logit of query ``i`` and key
``j`` is ``c x_i^T W x_j`` with ``W = W_q^T W_k`` (rows of the per-head projections, ``c`` the logit
scale) and ``x`` the attention input. Cauchy-Schwarz gives ``|c x_i^T W x_j| <= c sigma |x_i| |x_j|``,
``sigma = ||W||_2``; so the row range is at most ``R_i = 2 c sigma |x_i| max_j |x_j|`` and by 3.

    H_i >= ln(1 + (n - 1) exp(-2 c sigma |x_i| max_j |x_j|)),

a lower bound that decreases with ``sigma |x|^2``: a small spectral norm forbids entropy collapse.
(Zhai et al.'s Theorem is of this kind, with constants from their own assumptions; this is the form
derived here and checked by the probe on random and trained models.)
"""

from __future__ import annotations

import functools
import math

import numpy as np

# ---------------------------------------------------------------------------------------------
# 1. Gaussian logits
# ---------------------------------------------------------------------------------------------


def entropy(p: np.ndarray, axis: int = -1) -> np.ndarray:
    """Shannon entropy ``-sum p ln p`` along ``axis`` (0 ln 0 = 0), float64."""
    p = np.asarray(p, dtype=np.float64)
    safe = np.where(p > 0, p, 1.0)
    return -np.sum(np.where(p > 0, p * np.log(safe), 0.0), axis=axis)


def softmax_entropy_from_logits(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """``H = logsumexp(x) - sum softmax(x) x`` along ``axis`` (stable, float64; ``-inf`` entries are hidden)."""
    x = np.asarray(x, dtype=np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    Z = e.sum(axis=axis, keepdims=True)
    p = e / Z
    xm = np.where(p > 0, x - m, 0.0)
    return np.squeeze(np.log(Z), axis) - np.sum(p * xm, axis=axis)


def lln_entropy(n, s) -> np.ndarray:
    """Leading LLN law ``ln n - s^2 / 2`` for ``n`` i.i.d. N(0, s^2) logits."""
    n, s = np.asarray(n, dtype=np.float64), np.asarray(s, dtype=np.float64)
    return np.log(n) - 0.5 * s**2


def lln_entropy_second_order(n, s) -> np.ndarray:
    """``ln n - s^2/2 + (s^2 e^{s^2} - (e^{s^2} - 1)/2) / n`` (delta method; see the module docstring)."""
    n, s = np.asarray(n, dtype=np.float64), np.asarray(s, dtype=np.float64)
    s2 = s**2
    return np.log(n) - 0.5 * s2 + (s2 * np.exp(s2) - 0.5 * np.expm1(s2)) / n


def partition_fluctuation(n, s) -> np.ndarray:
    """``eps = Var(Z) / E[Z]^2 = (e^{s^2} - 1) / n``: the LLN law needs eps << 1."""
    n, s = np.asarray(n, dtype=np.float64), np.asarray(s, dtype=np.float64)
    return np.expm1(s**2) / n


def breakdown_scale(n) -> np.ndarray:
    """Logit std at which ``n e^{-s^2} = 1``: ``s = sqrt(ln n)`` (LLN corrections become O(1))."""
    return np.sqrt(np.log(np.asarray(n, dtype=np.float64)))


def freezing_scale(n) -> np.ndarray:
    """Logit std ``sqrt(2 ln n)`` where the LLN law reaches H = 0 (random-energy-model freezing)."""
    return np.sqrt(2.0 * np.log(np.asarray(n, dtype=np.float64)))


_Z = np.linspace(-12.0, 12.0, 961)  # z grid of the Gaussian integrals (tails below e^{-72})
_WZ = np.exp(-0.5 * _Z**2) / math.sqrt(2.0 * math.pi) * (_Z[1] - _Z[0])  # trapezoid weights (ends ~0)


def _phi_psi(t: np.ndarray, s: float) -> tuple[np.ndarray, np.ndarray]:
    """``phi(t) = E[exp(-t e^{sz})]`` and ``psi(t) = E[sz e^{sz} exp(-t e^{sz})]`` on a t vector."""
    x = s * _Z  # (Nz,)
    log_arg = np.log(t)[:, None] + x[None, :]  # ln(t e^x), (Nt, Nz)
    kern = np.exp(-np.exp(np.minimum(log_arg, 700.0)))  # exp(-t e^x)
    phi = kern @ _WZ
    psi = (kern * (x * np.exp(x))[None, :]) @ _WZ
    return phi, psi


def log_t_grid(s: float, n_max: int, n_u: int) -> tuple[np.ndarray, float]:
    """The trapezoid grid ``t = e^u`` (and its step ``du``) of the Laplace-transform quadratures over ``n <= n_max``
    i.i.d. N(0, s^2) logits: ``u`` from ``-(s^2/2 + ln n_max + 40)`` (below, ``1/Z`` is never reached) to
    ``14 s + 40`` (above, every ``exp(-t e^{x})`` factor is negligible), ``n_u`` points."""
    u = np.linspace(-(s * s / 2 + math.log(n_max) + 40.0), 14.0 * s + 40.0, n_u)
    return np.exp(u), float(u[1] - u[0])


def gaussian_entropy_exact(n: int, s: float, n_u: int = 1201) -> float:
    """``E[H]`` for ``n`` i.i.d. N(0, s^2) logits by the Frullani/Laplace quadrature (float64).

    Accuracy: the integrands are smooth in ``u = ln t`` and decay like ``e^{u}`` for small t and
    (at least) like a Gaussian in ``u / s`` for large t; the u range covers both tails, and the
    trapezoid rule on such integrands converges geometrically. Checked in the tests against
    Monte Carlo, against ``s = 0`` (``ln n``), ``n = 1`` (0) and ``n = 2`` (a 1-D integral).
    """
    n, s = int(n), float(s)
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if s < 0:
        raise ValueError(f"s must be >= 0, got {s}")
    if s == 0.0 or n == 1:
        return math.log(n)
    # t below e^{u_lo}: e^{-t} - phi^n ~ t (n E e^x - 1) ~ n e^{s^2/2 + u}; above e^{u_hi}: phi^n tiny
    t, du = log_t_grid(s, n, n_u)
    phi, psi = _phi_psi(t, s)
    ln_z = np.sum(np.exp(-t) - phi**n) * du  # dt/t = du
    mean_px = n * np.sum(psi * phi ** (n - 1) * t) * du  # dt = t du
    return float(ln_z - mean_px)


S_ASYMPTOTIC = 30.0  # gaussian_entropy: quadrature at s <= this, the large-s asymptotic form above


def gaussian_entropy_exact_many(ns, s: float, n_u: int = 1201) -> np.ndarray:
    """:func:`gaussian_entropy_exact` for every n in ``ns`` at one ``s``, sharing ``phi`` and ``psi`` (which do
    not depend on n): the u grid is the one of ``max(ns)`` (a wider range than each n needs)."""
    ns = np.asarray(ns, dtype=np.int64)
    s = float(s)
    if ns.min() < 1:
        raise ValueError(f"n must be >= 1, got {int(ns.min())}")
    if s < 0:
        raise ValueError(f"s must be >= 0, got {s}")
    if s == 0.0:
        return np.log(ns.astype(np.float64))
    t, du = log_t_grid(s, int(ns.max()), n_u)
    phi, psi = _phi_psi(t, s)
    out = np.empty(ns.shape, dtype=np.float64)
    for i, n in np.ndenumerate(ns):
        if n == 1:
            out[i] = 0.0
            continue
        ln_z = np.sum(np.exp(-t) - phi**n) * du
        out[i] = ln_z - n * np.sum(psi * phi ** (n - 1) * t) * du
    return out


def top_gap_density(n) -> np.ndarray:
    """``g_n(0) = n (n-1) int phi(z)^2 Phi(z)^{n-2} dz``: the density at 0 of the gap between the two largest of
    n i.i.d. standard normals (trapezoid on the module's z grid; 0 for n = 1)."""
    n = np.asarray(n, dtype=np.float64)
    cdf = 0.5 * (1.0 + np.vectorize(math.erf)(_Z / math.sqrt(2.0)))
    dens = np.exp(-0.5 * _Z**2) / math.sqrt(2.0 * math.pi)
    pw = np.power(cdf[None, :], np.maximum(n.reshape(-1, 1) - 2.0, 0.0))  # (N, Nz)
    g = n.reshape(-1) * (n.reshape(-1) - 1.0) * (pw @ (dens * _WZ))
    return g.reshape(n.shape)


def gaussian_entropy_large_s(n, s) -> np.ndarray:
    """Leading large-s form ``E[H] = g_n(0) pi^2 / (6 s)`` for n i.i.d. N(0, s^2) logits (module docstring)."""
    s = np.asarray(s, dtype=np.float64)
    return top_gap_density(n) * math.pi**2 / (6.0 * s)


def gaussian_entropy(ns, s: float) -> np.ndarray:
    """``E[H]`` for n i.i.d. N(0, s^2) logits, every n in ``ns``: the exact quadrature at ``s <= S_ASYMPTOTIC``,
    the large-s form above it (finite for every s; see the module docstring for the switch's accuracy)."""
    ns = np.asarray(ns, dtype=np.int64)
    if float(s) <= S_ASYMPTOTIC:
        return gaussian_entropy_exact_many(ns, s)
    return np.where(ns > 1, gaussian_entropy_large_s(ns, s), 0.0)


def mean_normalised_gaussian_entropy(ns, s: float) -> float:
    """Mean over ``ns`` (each >= 2) of ``E[H] / ln n`` at one logit std ``s``: the normalised entropy of a causal
    attention map whose rows see ``ns`` keys, every row's logits i.i.d. N(0, s^2)."""
    ns = np.asarray(ns, dtype=np.int64)
    if ns.min() < 2:
        raise ValueError(f"every n must be >= 2 (H / ln n), got {int(ns.min())}")
    return float(np.mean(gaussian_entropy(ns, s) / np.log(ns)))


S_SMALL = 1e-2  # gaussian_entropy_rows: below this s the second-order small-s form


@functools.lru_cache(maxsize=8)
def _table(ns: tuple[int, ...], n_grid: int) -> np.ndarray:
    """Exact ``E[H]`` (n_grid, len(ns)) on the log grid of :func:`gaussian_entropy_rows` (read-only, cached)."""
    grid = np.geomspace(S_SMALL, S_ASYMPTOTIC, n_grid)
    table = np.stack([gaussian_entropy_exact_many(np.asarray(ns), g) for g in grid])
    table.setflags(write=False)
    return table


def gaussian_entropy_rows(n, s, n_grid: int = 61) -> np.ndarray:
    """``E[H]`` for n i.i.d. N(0, s^2) logits at many ``(n, s)`` pairs (broadcast; every n >= 1).

    ``S_SMALL < s <= S_ASYMPTOTIC``: the exact quadrature for every n needed on ``n_grid`` log-spaced values of
    s, interpolated by a cubic spline in ``ln s`` (the entropy is smooth in ln s; the interpolation error is
    checked against direct quadrature in the tests). ``s > S_ASYMPTOTIC``: the large-s form. ``s <= S_SMALL``:
    ``ln n - (n - 1) s^2 / (2 n)`` (``H = ln n - m2 / 2 + O(s^3)`` with ``E m2 = s^2 (n - 1) / n``)."""
    from scipy.interpolate import CubicSpline  # late import: only this function needs it

    n, s = np.broadcast_arrays(np.asarray(n, dtype=np.int64), np.asarray(s, dtype=np.float64))
    if n.size and n.min() < 1:
        raise ValueError(f"n must be >= 1, got {int(n.min())}")
    if np.any(~(s >= 0)):
        raise ValueError("s must be >= 0 (and not NaN)")
    out = np.empty(n.shape, dtype=np.float64)
    nf = n.astype(np.float64)
    small, large = s <= S_SMALL, s > S_ASYMPTOTIC
    out[small] = np.log(nf[small]) - (nf[small] - 1.0) * s[small] ** 2 / (2.0 * nf[small])
    out[large] = np.where(n[large] > 1, gaussian_entropy_large_s(n[large], s[large]), 0.0)
    mid = ~(small | large)
    if mid.any():
        ns = np.unique(n[mid])
        spline = CubicSpline(np.log(np.geomspace(S_SMALL, S_ASYMPTOTIC, n_grid)), _table(tuple(ns), n_grid), axis=0)
        vals = spline(np.log(s[mid]))  # (rows, len(ns))
        out[mid] = vals[np.arange(vals.shape[0]), np.searchsorted(ns, n[mid])]
    return out


def sample_kurtosis_gaussian(n) -> np.ndarray:
    """``E[m4 / m2^2 - 3] = -6 / (n + 1)``: mean sample excess kurtosis of n i.i.d. Gaussians (central sample
    moments, divisor n; exact, since m4 / m2^2 is independent of m2 for Gaussian samples)."""
    n = np.asarray(n, dtype=np.float64)
    return -6.0 / (n + 1.0)


def gaussian_entropy_mc(n: int, s: float, reps: int, rng: np.random.Generator, batch: int = 256) -> tuple[float, float]:
    """Monte Carlo ``(mean, standard error)`` of the entropy of softmax over n i.i.d. N(0, s^2) logits."""
    vals = []
    left = int(reps)
    while left > 0:
        k = min(batch, left)
        x = s * rng.standard_normal((k, int(n)))  # (k, n)
        vals.append(softmax_entropy_from_logits(x))
        left -= k
    h = np.concatenate(vals)
    return float(h.mean()), float(h.std(ddof=1) / math.sqrt(len(h)))


def two_key_entropy(s: float, n_z: int = 4001) -> float:
    """``E[H]`` for n = 2: the gap ``d = x_1 - x_2 ~ N(0, 2 s^2)`` and H = binary entropy of sigmoid(d)."""
    z = np.linspace(-14.0, 14.0, n_z)
    d = math.sqrt(2.0) * s * z
    p = 0.5 * (1.0 + np.tanh(0.5 * d))  # sigmoid(d), stable
    h = entropy(np.stack([p, 1.0 - p]), axis=0)
    w = np.exp(-0.5 * z**2) / math.sqrt(2.0 * math.pi) * (z[1] - z[0])
    return float(np.sum(h * w))


# ---------------------------------------------------------------------------------------------
# 2. Dilution, planted key, SSMax, sigmoid
# ---------------------------------------------------------------------------------------------


def max_weight_bound(n, M) -> np.ndarray:
    """Largest possible softmax weight when every logit lies in [-M, M]: ``e^M / (e^M + (n-1) e^{-M})``."""
    n, M = np.asarray(n, dtype=np.float64), np.asarray(M, dtype=np.float64)
    return 1.0 / (1.0 + (n - 1.0) * np.exp(-2.0 * M))


def planted_weight_softmax(n, g) -> np.ndarray:
    """Weight of one key with logit ``g`` among ``n - 1`` zero logits: ``e^g / (e^g + n - 1)``."""
    n, g = np.asarray(n, dtype=np.float64), np.asarray(g, dtype=np.float64)
    return 1.0 / (1.0 + (n - 1.0) * np.exp(-g))


def planted_weight_ssmax(n, g, s: float = 1.0) -> np.ndarray:
    """SSMax (logits times ``s ln n``): ``n^{sg} / (n^{sg} + n - 1) = 1 / (1 + (n-1) n^{-sg})``."""
    n, g = np.asarray(n, dtype=np.float64), np.asarray(g, dtype=np.float64)
    return 1.0 / (1.0 + (n - 1.0) * np.exp(-s * g * np.log(n)))


def planted_weight_ssmax_limit(g, s: float = 1.0) -> float:
    """``lim_{n->oo}`` of the SSMax planted weight: 0 if ``sg < 1``, 1/2 if ``sg = 1``, 1 if ``sg > 1``."""
    sg = float(s) * float(g)
    return 0.0 if sg < 1.0 else (0.5 if sg == 1.0 else 1.0)


def planted_weight_sigmoid(n, g, b: float = 0.0) -> np.ndarray:
    """Sigmoid attention: ``sigma(g + b)``, the same for every n."""
    n = np.asarray(n, dtype=np.float64)
    return np.broadcast_to(1.0 / (1.0 + np.exp(-(float(g) + float(b)))), n.shape).copy()


def sigmoid_row_total(n, s, b, n_nodes: int = 96) -> np.ndarray:
    """``E[sum_{j<n} sigma(x_j + b)]`` for ``n`` i.i.d. ``N(0, s^2)`` logits: ``n E sigma(s Z + b)``, Z ~ N(0, 1).

    The total weight of a sigmoid-attention row at initialisation (Ramapuram et al. 2024, seed 000#17):
    sigmoid weights are not normalised, so with ``b = 0`` a row carries ``n/2`` in expectation, exactly
    for every ``s`` (``sigma(x) + sigma(-x) = 1`` and the Gaussian is symmetric), and with ``b = -ln n``
    about 1 (``n sigma(-ln n) = n/(n+1)`` at ``s = 0``; the curvature of sigma raises it by O(s^2)).
    Gauss-Hermite quadrature in float64 (``n_nodes`` probabilists' nodes, exact for polynomials of
    degree ``2 n_nodes - 1``; sigma is entire in a strip, so the error falls geometrically). Broadcasts
    over ``n``, ``s`` and ``b``.
    """
    z, w = np.polynomial.hermite_e.hermegauss(n_nodes)
    w = w / math.sqrt(2.0 * math.pi)
    n, s, b = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (n, s, b)))
    x = s[..., None] * z + b[..., None]
    sig = 0.5 * (1.0 + np.tanh(0.5 * x))  # sigma(x), stable for large |x|
    return n * (sig @ w)


def planted_log_slope(kernel: str, n, g, *, ssmax_s: float = 1.0) -> np.ndarray:
    """Exact local fading rate ``d ln w / d ln n`` of the planted weight (see the module docstring)."""
    n, g = np.asarray(n, dtype=np.float64), float(g)
    if kernel == "sigmoid":
        return np.zeros_like(n)
    if kernel == "softmax":
        a, da = np.full_like(n, g), 0.0
    elif kernel == "ssmax":
        a, da = ssmax_s * g * np.log(n), ssmax_s * g
    else:
        raise ValueError(f"kernel must be one of softmax, ssmax, sigmoid, got {kernel!r}")
    e = np.exp(-a)
    return -(n - da * (n - 1.0)) * e / (1.0 + (n - 1.0) * e)


def ssmax_fade_rate(sg: float) -> float:
    """Asymptotic rate ``lim d ln w / d ln n = min(sg - 1, 0)`` of the SSMax planted weight."""
    return min(float(sg) - 1.0, 0.0)


def planted_weight(kernel: str, n, g, *, ssmax_s: float = 1.0, sigmoid_bias: float = 0.0) -> np.ndarray:
    """Closed-form planted-key weight for ``kernel`` in softmax | ssmax | sigmoid."""
    if kernel == "softmax":
        return planted_weight_softmax(n, g)
    if kernel == "ssmax":
        return planted_weight_ssmax(n, g, ssmax_s)
    if kernel == "sigmoid":
        return planted_weight_sigmoid(n, g, sigmoid_bias)
    raise ValueError(f"kernel must be one of softmax, ssmax, sigmoid, got {kernel!r}")


def ssmax_factor(keys, s: float) -> np.ndarray:
    """The SSMax logit multiplier ``s ln K`` for a row that sees ``K`` keys."""
    return float(s) * np.log(np.asarray(keys, dtype=np.float64))


def retrieval_weight(m, gaps, fixed_gaps, a) -> np.ndarray:
    """Planted weight ``1 / (1 + sum_f e^{-a d_f} + m mean_j e^{-a d_j})`` per row (module docstring, 2b).

    ``gaps`` (..., m0): raw logit gaps (planted minus distractor) of a sample of distractors; ``fixed_gaps``
    (..., f): gaps of the keys whose number does not grow (f may be 0); ``m``: the number of distractors at the
    predicted length; ``a``: the logit multiplier there (1 for softmax, :func:`ssmax_factor` for SSMax). Scalars
    ``m`` and ``a``; float64, with a log-sum-exp so that large gaps do not overflow."""
    gaps = np.asarray(gaps, dtype=np.float64)
    fixed = np.asarray(fixed_gaps, dtype=np.float64)
    m, a = float(m), float(a)
    if m < 0 or gaps.shape[-1] == 0:
        raise ValueError(f"m must be >= 0 and gaps must hold at least one distractor, got m={m}, {gaps.shape}")
    terms = [np.log(m) + _logmeanexp(-a * gaps)] if m > 0 else []
    if fixed.shape[-1]:
        terms.append(_logsumexp(-a * fixed))
    if not terms:
        return np.ones(gaps.shape[:-1])
    log_rest = _logsumexp(np.stack(terms, axis=-1))
    return 1.0 / (1.0 + np.exp(log_rest))


def effective_gap(gaps, a) -> np.ndarray:
    """``-ln(mean_j e^{-a d_j}) / a``: the single raw gap whose distractors would give the same weight."""
    return -_logmeanexp(-float(a) * np.asarray(gaps, dtype=np.float64)) / float(a)


def _logsumexp(x: np.ndarray) -> np.ndarray:
    mx = np.max(x, axis=-1, keepdims=True)
    return np.squeeze(mx, -1) + np.log(np.sum(np.exp(x - mx), axis=-1))


def _logmeanexp(x: np.ndarray) -> np.ndarray:
    return _logsumexp(x) - math.log(x.shape[-1])


# ---------------------------------------------------------------------------------------------
# 3-4. Entropy lower bounds
# ---------------------------------------------------------------------------------------------


def entropy_lower_bound_range(n, R) -> np.ndarray:
    """``H >= ln(1 + (n-1) e^{-R})`` for logits whose range (max - min) is at most R."""
    n, R = np.asarray(n, dtype=np.float64), np.asarray(R, dtype=np.float64)
    return np.log1p((n - 1.0) * np.exp(-R))


def entropy_lower_bound_elementary(n, M) -> np.ndarray:
    """The weaker elementary form ``ln n - 2M`` for ``|x_j| <= M`` (may be negative, then vacuous)."""
    return np.log(np.asarray(n, dtype=np.float64)) - 2.0 * np.asarray(M, dtype=np.float64)


def spectral_entropy_bound(n, sigma, scale, x_norm_query, x_norm_max) -> np.ndarray:
    """``ln(1 + (n-1) exp(-2 c sigma |x_i| max_j |x_j|))``: the entropy floor set by ``||W_q^T W_k||_2``."""
    R = (
        2.0
        * np.asarray(scale, dtype=np.float64)
        * np.asarray(sigma, dtype=np.float64)
        * np.asarray(x_norm_query, dtype=np.float64)
        * np.asarray(x_norm_max, dtype=np.float64)
    )
    return entropy_lower_bound_range(n, R)
