r"""In-context PCA by a looped linear transformer: the power method, with and without a norm.

Seed ``000#45`` (= ``003#35``): a looped linear transformer *with* LayerNorm, trained to predict the
principal component of the prompt, learns the power method, «each self-attention layer performing one
power iteration»; *without* LayerNorm it «cannot exactly learn the power method». This module is the
float64, model-free side (the data law and token layout: :mod:`analysis.data.pca_data`).

1. The power method. A prompt holds x_1..x_n in R^d, S = (1/n) sum_i x_i x_i^T (the *empirical* covariance,
   eigenvalues l_1 >= l_2 >= ... >= 0, top eigenvector u_1), and a unit start v_0. The iteration
   v_{t+1} = S v_t / |S v_t| gives v_t = S^t v_0 / |S^t v_0|. Writing v_0 = sum_k c_k u_k,

       tan theta_t = |P_perp v_t| / |u_1 . v_t| = sqrt(sum_{k>=2} (l_k/l_1)^{2t} c_k^2) / |c_1|
                   <= (l_2/l_1)^t tan theta_0                                   (exact bound, every t),

   with equality in the limit ratio: tan theta_{t+1} / tan theta_t -> l_2/l_1 per prompt (once the u_2
   component dominates the rest). The limit is s u_1 with s = sign(u_1 . v_0): S is positive
   semi-definite, so the iteration never flips the sign of the u_1 component. That vector is the
   training target (:func:`target`): it is what the algorithm converges to, it has unit norm, and a
   sign- and scale-invariant loss (1 - cos^2) would let an unnormalised iteration reach it too, removing
   exactly the difference a norm makes.

2. Shifted iteration. A layer whose residual stream keeps a multiple of v computes
   v <- N((a I + S) v): the power method on a I + S, same eigenvectors, ratio |a + l_2| / |a + l_1| per
   loop (the largest |a + l_k|, k >= 2, over |a + l_1|). a > 0 is the plain residual form v + eta S v
   with a = 1/eta: rate (1 + eta l_2)/(1 + eta l_1), slower than l_2/l_1; a < 0 (a shift towards the
   small eigenvalues) can be faster. :func:`power_iterates` takes ``shift`` = a.

3. The exact construction (:func:`construction_weights`). Layout of :mod:`analysis.data.pca_data`: a token is
   (a, -a) with a = (x-slot (d), v-slot (d), pad (1)), width D = 2 (2 d + 1); context tokens
   a = (x_i, 0, c_i) / R, c_i = sqrt(R^2 - |x_i|^2) (R bounds every |x_i|), so every context token has
   norm sqrt(2) and the x-slots hold x_i / R; the query a = (0, v_0, 0). One linear-attention head (no
   softmax, logit scale 1, every token sees every token) with query = the v-slot, key = (x-slot,
   -v-slot), value = (R^2 x-slot / n, v-slot), and output into the v-slot (both copies, mirrored), gives
   at the query

       v + (1/n) sum_i x_i (x_i . v) - |v|^2 v = S v      (for |v| = 1)

   (the query also attends to itself: key -v, value v, weight -|v|^2, which cancels the residual), and 0
   at every context token (its v-slot, the query, is 0). Post-LayerNorm (``norm="post"``): every token
   of the layout has zero mean, so LayerNorm divides by the RMS and the centring does nothing; the
   query becomes (0, S v, 0) sqrt(D/2)/|S v| times the norm weight, i.e. S v / |S v| with weight
   sqrt(2/D); each context token (norm sqrt(2)) is multiplied by sqrt(D/2) sqrt(2/D) = 1, unchanged
   (any other common factor would only rescale S, which S v / |S v| ignores). So each loop is one power
   iteration, exactly (float64 identity of the probe, with the norm's epsilon set to 0: the zoo's 1e-5
   adds eps/var to the query's variance), and the query stays a unit vector as the self-cancellation
   needs. The value scale R^2 / n keeps the pre-norm query near unit length (|S v| ~ l_1 = 1): with
   1/n instead, the norm's division by |S v| / R^2 would amplify the query's other slots (rounding
   there) by about R^2 per loop.
   Without a norm (``norm="none"``) the same weights give v_1 = S v_0 exactly, but then
   v_2 = (1 - |v_1|^2) v_1 + S v_1: the cancellation holds only on the unit sphere, which nothing keeps
   the iterate on; a residual layer without a norm multiplies the norm by (1 + eta l_1) per loop in the
   plain form (item 2), so the predicted vector's length is not that of the unit target.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from analysis.core.validation import check_float, check_int

ArrayLike = Any


def spectrum(d: int, rho: float) -> np.ndarray:
    """(d,) population eigenvalues 1, rho, rho^2, ..., rho^(d-1) (gap lambda_2/lambda_1 = rho)."""
    check_int("d", d, minimum=2)
    check_float("rho", rho, minimum=0.0, maximum=1.0, strict_minimum=True)
    return rho ** np.arange(d, dtype=np.float64)


def _x(x: ArrayLike) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 3:
        raise ValueError(f"x must have shape (B, n, d), got {x.shape}")
    return x


def _v(v0: ArrayLike, x: np.ndarray) -> np.ndarray:
    v = np.asarray(v0, dtype=np.float64)
    if v.shape != (x.shape[0], x.shape[2]):
        raise ValueError(f"v0 must have shape {(x.shape[0], x.shape[2])}, got {v.shape}")
    return v


def covariance(x: ArrayLike) -> np.ndarray:
    """(B, d, d) empirical covariances S = X^T X / n (uncentred: the law has mean 0)."""
    x = _x(x)
    return np.einsum("bnd,bne->bde", x, x) / x.shape[1]


def eigh_desc(x: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (B, d), descending, and eigenvectors (B, d, d) (columns) of each prompt's S."""
    lam, U = np.linalg.eigh(covariance(x))
    return lam[:, ::-1].copy(), U[:, :, ::-1].copy()


def gap_ratio(x: ArrayLike) -> np.ndarray:
    """(B,) l_2 / l_1 of each prompt's empirical covariance: the power method's asymptotic rate."""
    lam, _ = eigh_desc(x)
    return lam[:, 1] / lam[:, 0]


def target(x: ArrayLike, v0: ArrayLike) -> np.ndarray:
    """(B, d) s u_1: the top eigenvector of S with the sign of its component along v0 (the power method's
    limit from v0; s = +1 where u_1 . v0 = 0)."""
    x = _x(x)
    v = _v(v0, x)
    _, U = eigh_desc(x)
    u = U[:, :, 0]
    s = np.where((u * v).sum(-1) < 0, -1.0, 1.0)
    return s[:, None] * u


def power_iterates(x: ArrayLike, v0: ArrayLike, loops: int, shift: float = 0.0, normalise: bool = True) -> np.ndarray:
    """(loops + 1, B, d): v_0 and v_t = (shift I + S) v_{t-1}, divided by its norm when ``normalise``."""
    check_int("loops", loops, minimum=0)
    check_float("shift", shift)
    x = _x(x)
    v = _v(v0, x).copy()
    S = covariance(x) + shift * np.eye(x.shape[2])
    out = [v.copy()]
    for _ in range(loops):
        v = np.einsum("bde,be->bd", S, v)
        if normalise:
            v = v / np.linalg.norm(v, axis=-1, keepdims=True)
        out.append(v.copy())
    return np.stack(out)


def tan_angle(v: ArrayLike, u: ArrayLike) -> np.ndarray:
    """tan of the angle between v and the line of u (u unit), over the last axis: |P_perp v| / |u . v|."""
    v, u = np.asarray(v, dtype=np.float64), np.asarray(u, dtype=np.float64)
    along = (v * u).sum(-1)
    perp = np.linalg.norm(v - along[..., None] * u, axis=-1)
    with np.errstate(divide="ignore"):
        return perp / np.abs(along)


def tan_bound(x: ArrayLike, v0: ArrayLike, loops: int) -> np.ndarray:
    """(loops + 1, B) the bound (l_2/l_1)^t tan theta_0 of item 1 on tan theta_t of the power method."""
    check_int("loops", loops, minimum=0)
    x = _x(x)
    v = _v(v0, x)
    t0 = tan_angle(v, target(x, v))
    return gap_ratio(x)[None] ** np.arange(loops + 1)[:, None] * t0[None]


def per_loop_rate(tan: ArrayLike, first: int, last: int) -> np.ndarray:
    """(B,) the geometric-mean contraction of tan theta per loop from loop ``first`` to ``last``,
    (tan_last / tan_first)^(1 / (last - first)), from ``tan`` of shape (loops + 1, B) (row t = loop t)."""
    tan = np.asarray(tan, dtype=np.float64)
    check_int("first", first, minimum=0)
    check_int("last", last, minimum=first + 1, maximum=tan.shape[0] - 1)
    return (tan[last] / tan[first]) ** (1.0 / (last - first))


def shifted_rate(lam: ArrayLike, shift: float) -> np.ndarray:
    """(B,) max_{k >= 2} |shift + l_k| / |shift + l_1| for eigenvalues ``lam`` (B, d) in descending order:
    the asymptotic per-loop rate of the power method on shift I + S (item 2; shift 0: l_2/l_1)."""
    check_float("shift", shift)
    lam = np.asarray(lam, dtype=np.float64)
    return np.abs(shift + lam[:, 1:]).max(-1) / np.abs(shift + lam[:, 0])


def fit_shift(v0: ArrayLike, v1: ArrayLike, x: ArrayLike) -> dict[str, np.ndarray]:
    """Per prompt, least squares v1 ~ a v0 + b S v0 (d equations, 2 unknowns): ``shift`` = a/b (the
    residual form v + eta S v has a/b = 1/eta; the power step a = 0) and ``residual`` = the share of |v1|
    outside span(v0, S v0) (0 for any shifted power step)."""
    x = _x(x)
    v0 = _v(v0, x)
    v1 = _v(v1, x)
    Sv = np.einsum("bde,be->bd", covariance(x), v0)
    A = np.stack([v0, Sv], -1)  # (B, d, 2)
    coef = np.einsum("bkd,bd->bk", np.linalg.pinv(A), v1)  # least squares (minimum norm if degenerate)
    res = v1 - np.einsum("bdk,bk->bd", A, coef)
    return {
        "a": coef[:, 0],
        "b": coef[:, 1],
        "shift": coef[:, 0] / coef[:, 1],
        "residual": np.linalg.norm(res, axis=-1) / np.linalg.norm(v1, axis=-1),
    }


def width(d: int) -> int:
    """Token width D = 2 (2 d + 1) of the mirrored layout (item 3)."""
    check_int("d", d, minimum=1)
    return 2 * (2 * d + 1)


def construction_weights(d: int, n: int, radius: float) -> dict[str, np.ndarray]:
    """The exact power-step layer of item 3, in the zoo's conventions (one head of size D, q = W_q t,
    k = W_k t, v = W_v t, out = W_o sum_j (q . k_j) v_j): ``W_q``, ``W_k``, ``W_v``, ``W_o`` (D, D) and
    the LayerNorm weight ``ln`` (D,) = sqrt(2/D): the query leaves as a unit vector and every context token
    (of norm sqrt(2)) unchanged, so S keeps its scale."""
    check_int("d", d, minimum=1)
    check_int("n", n, minimum=1)
    check_float("radius", radius, minimum=0.0, strict_minimum=True)
    D, m = width(d), 2 * d + 1
    xs, vs = np.arange(d), d + np.arange(d)  # x-slot and v-slot of the first copy
    Wq, Wk, Wv, Wo = (np.zeros((D, D)) for _ in range(4))
    Wq[xs, vs] = 1.0  # q[0:d] = v-slot
    Wk[xs, xs] = 1.0  # k[0:d] = x-slot ...
    Wq[vs, vs] = 1.0  # q[d:2d] = v-slot
    Wk[vs, vs] = -1.0  # ... k[d:2d] = -v-slot
    Wv[xs, xs] = radius**2 / n  # value[0:d] = R^2 x-slot / n
    Wv[vs, vs] = 1.0  # value[d:2d] = v-slot
    for sign, off in ((1.0, 0), (-1.0, m)):  # write value[0:d] + value[d:2d] into both v-slots, mirrored
        Wo[off + vs, xs] = sign
        Wo[off + vs, vs] = sign
    return {"W_q": Wq, "W_k": Wk, "W_v": Wv, "W_o": Wo, "ln": np.full(D, math.sqrt(2.0 / D))}
