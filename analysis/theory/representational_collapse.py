r"""Representational collapse and over-squashing in causal attention: closed forms (float64).

Barbero et al. 2024 ("Transformers need glasses!") show that two sequences which differ only a little
-- a sequence and the same sequence with its last token repeated; ``k`` ones then a zero against
``k+1`` ones then a zero -- have last-token representations whose distance goes to zero with the
length, so that a finite-precision format eventually cannot tell them apart; and that the sensitivity
of the last token to token ``i`` is governed by the number of (weighted) paths from ``i`` to the end.
This module derives the rates a causal attention layer predicts, exactly where the layer is uniform
(all logits equal) and as orders where it is softmax with bounded logits.

Notation. Positions ``1..n``; one causal layer maps values ``v_1..v_n`` to the last output
``y_n = sum_i w_i v_i`` with ``w = softmax(s_1..s_n)``; uniform attention is ``w_i = 1/n`` (the running
mean, ``M[t, s] = 1/t`` for ``s <= t``).

1. Repeat the last token (:func:`repeat_last_gap_uniform`, :func:`repeat_last_gap_softmax`). The second
   sequence has one more key, a copy of key ``n`` with the same value, and the same query (no positions):
   ``y' = (Z y + e^{s_n} v_n)/(Z + e^{s_n})``, so ``y' - y = e^{s_n}(v_n - y)/(Z + e^{s_n})``. With
   ``|s_i| <= B`` the weight is ``<= e^{2B}/(n+1)``: ``|y' - y| = Theta(1/n)`` unless ``v_n = y``. Uniform:
   ``y' - y = (v_n - mean(v))/(n + 1)`` exactly.
2. Counting (:func:`counting_gap_uniform`): ``1^k 0`` against ``1^{k+1} 0``. Without positions every
   ``1`` has the same state at every layer (it only sees copies of itself, and norms and MLPs act per
   position), so the last state is a function of the mass ``p`` the zero's query puts on itself:
   ``y = (1 - p) V(U) + p V(Z)``. Uniform: ``p = 1/(k+1)``, so ``y_b - y_a = (u - z)/((k+1)(k+2))``:
   **Theta(k^-2)**, one order faster than the repeat family, because the added key equals the keys
   already averaged. The same holds for softmax (``p = e^b/(k e^a + e^b)``, ``dp/dk = O(k^-2)``) and at
   every depth: the last state is a smooth function ``G(p)`` and ``Delta p = O(k^-2)``. For a stack of
   uniform layers without norm or MLP (``h <- h + A_l mean``) it is a polynomial in ``p`` of degree
   ``L`` (:func:`counting_two_state`), and ``(k+1)(k+2) |gap| -> |G'(0)|`` (:func:`counting_leading_constant`).
   RoPE keeps the argument (values carry no position); learned absolute positions break it (the zero
   sits at position ``k+1`` in one sequence and ``k+2`` in the other): no decay is predicted.
3. One early token changed (:func:`early_gap_uniform`): ``y - y' = w_p (v_p - v'_p)``, ``Theta(1/n)`` in
   one layer. Through ``L`` uniform layers the offset is carried by every path (item 4), giving
   ``Theta((ln n)^{L-1}/n)`` with local exponent ``1 - (L-1)/ln n`` (the relay model of the
   prompt-forgetting probe).
4. Over-squashing (:func:`path_sensitivity`, :func:`linear_stack_sensitivity`). For ``L`` uniform layers
   ``h^l = h^{l-1} + M h^{l-1} A_l^T`` the Jacobian of the last state with respect to the input at ``i``
   is a sum over paths ``i = t_0 <= t_1 <= ... <= t_k = n`` through ``k`` attention hops (the other
   ``L - k`` layers take the residual), each hop into ``t`` weighted ``1/t``. With ``A_l = I``:
   ``d h^L_n / d h^0_i = (delta_{in} + (1/n) sum_{k=1}^{L} C(L, k) h_{k-1}(1/i, ..., 1/n)) I`` where
   ``h_m`` is the complete homogeneous symmetric polynomial. For ``L = 1`` it is flat (``1/n``); for
   ``L >= 2`` it *decreases* with ``i``: early tokens have more paths (``h_{k-1} ~ (ln(n/i))^{k-1}/(k-1)!``).
   With general ``A_l`` the backward recursion ``R^{l-1}_s = R^l_s + sum_{t >= s} R^l_t A_l / t`` gives
   the blocks exactly (:func:`linear_stack_sensitivity`).
5. Depth, exactly: a uniform stack without norm or MLP is linear in its inputs, and
   :func:`linear_stack` evaluates it in float64; the probe checks the network against it.
6. What the one-layer rates predict at depth ``l`` (:func:`predicted_depth_slopes`). Repeat and counting:
   the two sequences share every state of their common causal prefix at every depth, so at layer ``l``
   the last query sees the same keys except O(1) positions whose states differ by the previous layer's
   gap; by item 1 (2) each layer adds a gap of the same order and carries the old one with an O(1)
   factor: the exponent is the same at every depth. Early token: the offset reaches every later position
   (weight ``~1/t``), and the next layer averages those offsets, ``(1/n) sum_t 1/t ~ ln n / n``: the path
   count of item 4 at ``i = p + 1``. The prediction at depth ``l`` is the exponent that a least-squares
   line fits to ``path_sensitivity(n, l)[p]`` over the probe's own window and grid (``1`` for ``l = 1``).
7. RoPE and the repeat family (softmax only). The repeated copy sits one position further right, so the
   last query's relative offset to *every* earlier key grows by one: each logit changes by
   ``q^T (R(m+1) - R(m)) k = O(1)`` (oscillatory in ``m``, not decaying), each weight by ``O(1/n)``, and with
   i.i.d. random values the output changes by ``|sum_s dw_s (v_s - y)| ~ sqrt(n) / n``: **n^-1/2**
   (:func:`rope_repeat_gap`). Uniform attention ignores the logits (rate 1). Counting keeps ``k^-2``:
   the ones all carry one value, so only the mass on the zero matters, and one more one adds one O(1)
   term to an O(k) normaliser.

Precision. A format with machine epsilon ``eps`` (spacing of 1.0) represents a coordinate ``x`` on a grid
of spacing ``ulp(x)`` with ``eps |x| / 2 < ulp(x) <= eps |x|``; the Euclidean norm of the spacing vector of
``h`` therefore lies in ``(eps/2, 1] * eps^-1 * eps |h|``. We take ``resolution = eps |h|``
(:func:`resolution`): two states closer than that are separated by at most about one grid step per
coordinate, so rounding decides whether they differ.

The effective floor depends on ``n`` (:func:`floor_exponent`). Each computed state carries the rounding
errors of all the operations before it, and the two states' errors are not shared (different last
queries, different key counts). The attention output at the last position is a sum over ``n`` terms
``w_s v_s``; recursive summation commits an error ``<= u |partial sum_k|`` at step ``k`` (``u = eps/2``),
independent and zero-mean in the probabilistic model (Higham & Mary 2019), so the error has RMS
``u sqrt(sum_k |S_k|^2)``. Random (i.i.d.) values: ``|S_k| ~ sqrt(k)/n |v|``, so the error is
``u |v| sqrt(sum_k k)/n = O(u |v|)``: an ``n``-independent floor ``c eps |h|``. Coherent values (the
counting prefix, ``k`` copies of one value, and its softmax normaliser, ``k`` equal terms):
``|S_k| = (k/n) |v|``, error ``u |v| sqrt(n/3)``: the floor grows as ``eps |h| (a + b sqrt(n))``, local
exponent in ``(0, 1/2)`` approaching ``1/2``. The worst case (all errors aligned) is linear in ``n``.
The divergence of the low-precision pair difference from the float64 one, ``|(h~_a - h~_b) - (h_a - h_b)|``,
is the floor the format resolves against; the two states stop being resolved when the distance
falls under it.
"""

from __future__ import annotations

import math

import numpy as np
import torch

FAMILIES = ("repeat_last", "counting", "early_token")
EPS = {
    name: float(torch.finfo(dt).eps)
    for name, dt in (
        ("float16", torch.float16),
        ("bfloat16", torch.bfloat16),
        ("float32", torch.float32),
        ("float64", torch.float64),
    )
}


# ------------------------------------------------------------------------------------------------
# one layer
# ------------------------------------------------------------------------------------------------


def repeat_last_gap_uniform(values: np.ndarray) -> np.ndarray:
    """``y' - y = (v_n - mean(v))/(n+1)`` for uniform attention over ``values`` (n, d) and one more copy of ``v_n``."""
    v = np.asarray(values, dtype=np.float64)
    n = v.shape[0]
    return (v[-1] - v.mean(axis=0)) / (n + 1)


def repeat_last_gap_softmax(logits: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``y' - y = e^{s_n}(v_n - y)/(Z + e^{s_n})`` for softmax weights of ``logits`` (n,) over ``values`` (n, d)."""
    s = np.asarray(logits, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    e = np.exp(s - s.max())
    Z = e.sum()
    y = e @ v / Z
    return e[-1] * (v[-1] - y) / (Z + e[-1])


def counting_gap_uniform(k: int | np.ndarray, u: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``y_b - y_a = (u - z)/((k+1)(k+2))``: uniform last output of ``1^{k+1} 0`` minus ``1^k 0`` (values u, z)."""
    k = np.asarray(k, dtype=np.float64)[..., None]
    return (np.asarray(u, np.float64) - np.asarray(z, np.float64)) / ((k + 1) * (k + 2))


def early_gap_uniform(n: int | np.ndarray, delta: np.ndarray) -> np.ndarray:
    """``y - y' = delta/n``: one value changed by ``delta`` at any position, uniform attention over n."""
    n = np.asarray(n, dtype=np.float64)[..., None]
    return np.asarray(delta, np.float64) / n


def predicted_slope(family: str, pos: str, separators: bool = False, attention: str = "softmax") -> float:
    """Decay exponent ``alpha`` (distance ~ n^-alpha) a causal softmax stack predicts (module docstring).

    ``nan`` where no power-law decay is predicted (learned absolute positions shift the read-out
    position in the repeat and counting families). Counting with separators: the prefix is no longer
    one repeated state, the added ``1`` moves the mean by ``O(1/k)``, so the rate falls back to 1.
    Repeat with RoPE and softmax: every relative offset of the last query shifts by one, 1/2 (item 7).
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    if pos == "learned" and family != "early_token":
        return math.nan
    if family == "counting":
        return 1.0 if separators else 2.0
    if family == "repeat_last" and pos == "rope" and attention != "uniform":
        return 0.5
    return 1.0


def fitted_exponent(n: np.ndarray, y: np.ndarray) -> float:
    """``-slope`` of the least-squares line of ``ln y`` on ``ln n`` (the exponent a power-law fit reports)."""
    x, ly = np.log(np.asarray(n, np.float64)), np.log(np.asarray(y, np.float64))
    return float(-np.polyfit(x, ly, 1)[0])


def predicted_depth_slopes(
    family: str,
    pos: str,
    L: int,
    n_grid: np.ndarray,
    separators: bool = False,
    attention: str = "softmax",
    early_position: int = 0,
) -> np.ndarray:
    """Exponent predicted at depths ``1..L`` (item 6) for a fit on the points ``n_grid``.

    Repeat and counting: :func:`predicted_slope` at every depth. Early token: the fitted exponent of
    the path count ``path_sensitivity(n, l)[early_position]`` over ``n_grid`` (exactly 1 at ``l = 1``).
    """
    one = predicted_slope(family, pos, separators, attention)
    if family != "early_token" or not math.isfinite(one):
        return np.full(L, one)
    grid = np.asarray(n_grid, dtype=np.int64)
    curve = np.array([[path_sensitivity(int(n), depth)[early_position] for n in grid] for depth in range(1, L + 1)])
    return np.array([fitted_exponent(grid, c) for c in curve])


def rope_repeat_gap(q: np.ndarray, keys: np.ndarray, values: np.ndarray, base: float = 10000.0) -> float:
    """``|y' - y|`` of one causal RoPE softmax layer: query ``q`` (dh,) at position ``n`` over ``keys`` and
    ``values`` (n, dh) at positions ``1..n``, against the same at position ``n + 1`` with the last key and
    value repeated at ``n + 1`` (item 7). Scale ``1/sqrt(dh)``; RoPE pairs ``(2j, 2j+1)``, angle ``m base^(-2j/dh)``."""
    k = np.asarray(keys, np.float64)
    v = np.asarray(values, np.float64)
    n, dh = k.shape
    freqs = base ** (-np.arange(0, dh, 2) / dh)  # (dh/2,)

    def rot(x, pos):  # x (m, dh) rotated by angle pos * freqs per pair
        ang = np.asarray(pos, np.float64)[:, None] * freqs  # (m, dh/2)
        c, s = np.cos(ang), np.sin(ang)
        x0, x1 = x[:, 0::2], x[:, 1::2]
        out = np.empty_like(x)
        out[:, 0::2], out[:, 1::2] = x0 * c - x1 * s, x0 * s + x1 * c
        return out

    def attend(m):  # query at position m over keys 1..m (the first n given, then the repeated one)
        kk = np.vstack([k, k[-1:]])[:m]
        vv = np.vstack([v, v[-1:]])[:m]
        logits = rot(kk, np.arange(1, m + 1)) @ rot(np.asarray(q, np.float64)[None], [m])[0] / math.sqrt(dh)
        w = np.exp(logits - logits.max())
        return w @ vv / w.sum()

    return float(np.linalg.norm(attend(n + 1) - attend(n)))


def floor_exponent(coherent: bool) -> tuple[float, float]:
    """Range of the local exponent of the effective float floor against ``n`` (module docstring, precision):
    ``(0, 0)`` for i.i.d. random values (n-independent), ``(0, 1/2)`` for coherent values (``a + b sqrt(n)``)."""
    return (0.0, 0.5) if coherent else (0.0, 0.0)


# ------------------------------------------------------------------------------------------------
# stacks of uniform layers without norm or MLP (exactly linear)
# ------------------------------------------------------------------------------------------------


def causal_mean(h: np.ndarray) -> np.ndarray:
    """``(M h)_t = (1/t) sum_{s<=t} h_s`` over the first axis of (T, d)."""
    t = np.arange(1, h.shape[0] + 1, dtype=np.float64)[:, None]
    return np.cumsum(h, axis=0) / t


def linear_stack(h0: np.ndarray, mats: list[np.ndarray]) -> np.ndarray:
    """States ``h^L`` (T, d) of ``h^l = h^{l-1} + M h^{l-1} A_l^T`` from the inputs ``h0`` (T, d)."""
    h = np.asarray(h0, dtype=np.float64)
    for A in mats:
        h = h + causal_mean(h) @ np.asarray(A, np.float64).T  # (T, d)
    return h


def counting_two_state(k: int, u: np.ndarray, z: np.ndarray, mats: list[np.ndarray]) -> np.ndarray:
    """Last state of ``1^k 0`` through the uniform linear stack, by the two-state recursion.

    Every ``1`` carries ``U_l = U_{l-1} + A_l U_{l-1}``; the zero ``Z_l = Z_{l-1} + A_l((1-p) U_{l-1} + p Z_{l-1})``
    with ``p = 1/(k+1)``: a polynomial of degree L in p.
    """
    U, Z = np.asarray(u, np.float64), np.asarray(z, np.float64)
    p = 1.0 / (k + 1)
    for A in mats:
        A = np.asarray(A, np.float64)
        U, Z = U + A @ U, Z + A @ ((1 - p) * U + p * Z)
    return Z


def counting_leading_constant(u: np.ndarray, z: np.ndarray, mats: list[np.ndarray]) -> float:
    """``|G'(0)|``: ``(k+1)(k+2) |gap_k| -> |dZ_L/dp at p = 0|`` (gap = Z_L(1/(k+2)) - Z_L(1/(k+1))).

    Differentiating the recursion at ``p = 0``: ``D_l = D_{l-1} + A_l (Z^0_{l-1} - U_{l-1})``, ``D_0 = 0``,
    with ``Z^0_l = Z^0_{l-1} + A_l U_{l-1}``.
    """
    U, Z0 = np.asarray(u, np.float64), np.asarray(z, np.float64)
    D = np.zeros_like(U)
    for A in mats:
        A = np.asarray(A, np.float64)
        D = D + A @ (Z0 - U)  # uses the p = 0 values of layer l-1 (the derivative terms with p vanish)
        U, Z0 = U + A @ U, Z0 + A @ U
    return float(np.linalg.norm(D))


def complete_homogeneous(x: np.ndarray, m_max: int) -> np.ndarray:
    """``h_m(x_1..x_N)`` for ``m = 0..m_max`` by ``h_m(x_1..x_j) = h_m(x_1..x_{j-1}) + x_j h_{m-1}(x_1..x_j)``."""
    h = np.zeros(m_max + 1)
    h[0] = 1.0
    for xj in np.asarray(x, np.float64):
        for m in range(1, m_max + 1):
            h[m] = h[m] + xj * h[m - 1]
    return h


def path_sensitivity(n: int, L: int) -> np.ndarray:
    """``d h^L_n / d h^0_i`` (a multiple of I) for ``i = 1..n``, ``L`` uniform layers with ``A_l = I``.

    ``delta_{in} + (1/n) sum_{k=1}^L C(L,k) h_{k-1}(1/i, ..., 1/n)``. The suffix recursion over ``i``
    (adding ``x = 1/i`` to the front) gives every ``i`` in O(n L).
    """
    out = np.empty(n)
    h = np.zeros(L)  # h_0..h_{L-1} of the suffix (1/i..1/n)
    h[0] = 1.0
    for i in range(n, 0, -1):
        x = 1.0 / i
        for m in range(1, L):
            h[m] = h[m] + x * h[m - 1]
        out[i - 1] = sum(math.comb(L, k) * h[k - 1] for k in range(1, L + 1)) / n
    out[-1] += 1.0
    return out


def path_sensitivity_matrix(n: int, L: int) -> np.ndarray:
    """The same row from the matrix power: row ``n`` of ``(I + M)^L`` (for the test of the closed form)."""
    M = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]
    return np.linalg.matrix_power(np.eye(n) + M, L)[-1]


def linear_stack_sensitivity(n: int, mats: list[np.ndarray]) -> np.ndarray:
    """Blocks ``R_i = d h^L_n / d h^0_i`` (n, d, d) of the uniform linear stack, by the backward recursion.

    ``h^l_t = h^{l-1}_t + A_l (1/t) sum_{s<=t} h^{l-1}_s`` gives ``R^{l-1}_s = R^l_s + (sum_{t>=s} R^l_t / t) A_l``.
    """
    d = np.asarray(mats[0]).shape[0] if mats else 1
    R = np.zeros((n, d, d))
    R[-1] = np.eye(d)
    inv_t = 1.0 / np.arange(1, n + 1, dtype=np.float64)
    for A in reversed(mats):
        suffix = np.cumsum((R * inv_t[:, None, None])[::-1], axis=0)[::-1]  # (n, d, d): sum_{t>=s} R_t / t
        R = R + suffix @ np.asarray(A, np.float64)
    return R


# ------------------------------------------------------------------------------------------------
# precision
# ------------------------------------------------------------------------------------------------


def resolution(dtype: str, norm: np.ndarray | float) -> np.ndarray:
    """``eps(dtype) * |h|``: the distance below which a format cannot be relied on to separate two states."""
    if dtype not in EPS:
        raise ValueError(f"dtype must be one of {tuple(EPS)}, got {dtype!r}")
    return EPS[dtype] * np.asarray(norm, dtype=np.float64)


def collapse_length(n: np.ndarray, distance: np.ndarray, norm: np.ndarray, dtype: str) -> float:
    """First ``n`` from which the (float64) distance stays below ``resolution(dtype, norm)``; nan if never."""
    below = np.asarray(distance) < resolution(dtype, norm)
    if not below[-1]:
        return math.nan
    first = len(below) - int(np.argmin(below[::-1])) if not below.all() else 0
    return float(np.asarray(n)[first])


def extrapolated_collapse(n_anchor: float, ratio: float, alpha: float | np.ndarray) -> np.ndarray:
    r"""Where a power law ``D(n) = D(n_a) (n / n_a)^-alpha`` meets the resolution: ``n* = n_a ratio^(1/alpha)``.

    ``ratio = D(n_a) / (eps |h|)`` at the anchor ``n_a`` (``|h|`` taken constant beyond it). Decreasing in
    ``alpha`` for ``ratio > 1`` (a faster decay crosses sooner), so an interval of ``alpha`` maps to an
    interval of ``n*`` with its ends swapped. Computed in logs and capped at ``e^709`` (float64's range).
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    if n_anchor <= 0 or ratio <= 0 or np.any(alpha <= 0):
        raise ValueError(f"n_anchor, ratio and alpha must be positive, got {n_anchor}, {ratio}, {alpha}")
    return np.exp(np.minimum(math.log(n_anchor) + math.log(ratio) / alpha, 709.0))


def collapse_interval(
    n_anchor: float,
    ratio: float,
    alpha_ci: tuple[float, float],
    log_se: float = 0.0,
    grid_ratio: float = 1.0,
    k: float = 3.0,
) -> tuple[float, float]:
    r"""Range of the first grid length at which the distance stays below the resolution, from the fit.

    Three sources, combined in ``ln n``: the decay exponent anywhere in ``alpha_ci`` (the fit's bootstrap
    interval); the level ``ln D(n_a)`` uncertain by ``k`` standard errors ``log_se`` (a sample mean over
    bases: shifts ``ln n*`` by ``k log_se / alpha``); and the measurement grid: the measured collapse
    length is the first grid point at or after the crossing, so it can exceed ``n*`` by one grid step
    ``grid_ratio`` (ratio of neighbouring lengths) but not fall below it.
    """
    lo_a, hi_a = float(alpha_ci[0]), float(alpha_ci[1])
    if not 0 < lo_a <= hi_a:
        raise ValueError(f"alpha_ci must be a positive interval, got {alpha_ci}")
    if log_se < 0 or grid_ratio < 1:
        raise ValueError(f"log_se must be >= 0 and grid_ratio >= 1, got {log_se}, {grid_ratio}")
    shift_lo, shift_hi = -k * log_se, k * log_se  # ln D(n_a) at its lower / upper end
    lo = extrapolated_collapse(n_anchor, ratio * math.exp(shift_lo), hi_a if ratio * math.exp(shift_lo) > 1 else lo_a)
    hi = extrapolated_collapse(n_anchor, ratio * math.exp(shift_hi), lo_a if ratio * math.exp(shift_hi) > 1 else hi_a)
    return float(lo), float(hi) * grid_ratio
