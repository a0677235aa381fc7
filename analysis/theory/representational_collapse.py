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

Precision. A format with machine epsilon ``eps`` (spacing of 1.0) represents a coordinate ``x`` on a grid
of spacing ``ulp(x)`` with ``eps |x| / 2 < ulp(x) <= eps |x|``; the Euclidean norm of the spacing vector of
``h`` therefore lies in ``(eps/2, 1] * eps^-1 * eps |h|``. We take ``resolution = eps |h|``
(:func:`resolution`): two states closer than that are separated by at most about one grid step per
coordinate, so rounding decides whether they differ.
"""

from __future__ import annotations

import math

import numpy as np
import torch

FAMILIES = ("repeat_last", "counting", "early_token")
EPS = {name: float(torch.finfo(dt).eps) for name, dt in
       (("float16", torch.float16), ("bfloat16", torch.bfloat16), ("float32", torch.float32),
        ("float64", torch.float64))}  # fmt: skip


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


def predicted_slope(family: str, pos: str, separators: bool = False) -> float:
    """Decay exponent ``alpha`` (distance ~ n^-alpha) a causal softmax stack predicts (module docstring).

    ``nan`` where no power-law decay is predicted (learned absolute positions shift the read-out
    position in the repeat and counting families). Counting with separators: the prefix is no longer
    one repeated state, the added ``1`` moves the mean by ``O(1/k)``, so the rate falls back to 1.
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    if pos == "learned" and family != "early_token":
        return math.nan
    if family == "counting":
        return 1.0 if separators else 2.0
    return 1.0


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
