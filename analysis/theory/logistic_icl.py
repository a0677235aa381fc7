r"""In-context classification by a looped softmax layer: one layer, one step of normalised GD (seed 000#33).

Setting. A prompt holds n labelled examples (x_i, y_i), y_i in {-1, +1}; write z_i = y_i x_i. The
in-context loss is the log of the mean exponential loss of the margins z_i . w,

    L(w) = log (1/n) sum_i exp(-z_i . w),      grad L(w) = - sum_i p_i(w) z_i,   p(w) = softmax(-Z w),

i.e. the exponential loss's gradient divided by the loss itself (a *normalised* gradient: its size does
not shrink as the margins grow, unlike the plain exponential or logistic loss whose gradients vanish on
separable data). One step of GD with step eta is

    w' = w + eta sum_i softmax_i(-Z w) z_i .                                                     (1)

Construction (exact). (1) *is* one softmax attention head: tokens of width 2d, context token i =
(z_i, 0), the query token (0, w) last; W_Q reads the query's w-slot (q = w), W_K maps the z-slot to
k_i = -z_i, W_V copies the z-slot and W_O writes eta times the head's output into the w-slot; the
residual stream adds it to w. The query is hidden as a key (an attention bias of -inf on its column),
so its row attends to the n context tokens with weights softmax(-Z w): the query's w-slot after the
layer is (1). The context tokens' w-slots change too (their rows see q = 0, uniform weights) but no
key, value or query of a later application reads a context token's w-slot, so looping the layer T
times runs T steps of (1) exactly (:func:`construction_weights`; the identity is checked in float64).

Why a trained layer should find it (the prediction). Trained on the one-step map w -> (1) for w drawn
around the iterates, the layer's loss is zero only where it computes (1) on those inputs; the head's
bilinear form W_Q^T W_K and the map W_O W_V are identifiable from the one-step target (softmax logits
are determined up to a per-row constant, and the query row's constant is fixed by its hidden column),
so a converged layer agrees with the construction on the data's support and its loop tracks T-step GD.

The alternative. A layer whose attention stays uniform (linear attention, or softmax with vanishing
logits) adds eta * mean(z) each loop: its iterate keeps the direction of the class-mean difference
z_bar = (1/n) sum z_i for every T. GD's first step is exactly that direction; from the second step on
GD re-weights towards the examples with small margins (towards the max-margin direction), so
cos(w_T^GD, z_bar) < 1 for T >= 2 (:func:`mean_direction_cosine` measures how far).

Everything here is float64 numpy.
"""

from __future__ import annotations

import numpy as np

from analysis.core.validation import check_float, check_int


def _softmax_rows(s: np.ndarray) -> np.ndarray:
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)


def lse_loss(w: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """L(w) = log mean_i exp(-z_i . w) per prompt; ``w`` (B, d), ``Z`` (B, n, d) -> (B,)."""
    s = -np.einsum("bnd,bd->bn", Z, w)
    m = s.max(axis=1)
    return m + np.log(np.exp(s - m[:, None]).mean(axis=1))


def lse_grad(w: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """grad L(w) = -sum_i softmax_i(-Z w) z_i, (B, d)."""
    p = _softmax_rows(-np.einsum("bnd,bd->bn", Z, w))
    return -np.einsum("bn,bnd->bd", p, Z)


def gd_step(w: np.ndarray, Z: np.ndarray, eta: float) -> np.ndarray:
    """One step (1): w + eta sum_i softmax_i(-Z w) z_i."""
    return w - eta * lse_grad(w, Z)


def gd_iterates(Z: np.ndarray, eta: float, steps: int, w0: np.ndarray | None = None) -> np.ndarray:
    """(steps + 1, B, d): w_0 (zeros unless given), w_1, ..., w_steps of (1)."""
    check_int("steps", steps, minimum=0)
    check_float("eta", eta, minimum=0.0)
    Z = np.asarray(Z, dtype=np.float64)
    w = np.zeros(Z.shape[::2], dtype=np.float64) if w0 is None else np.asarray(w0, dtype=np.float64)
    out = [w]
    for _ in range(steps):
        w = gd_step(w, Z, eta)
        out.append(w)
    return np.stack(out)


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine of (..., d) arrays (NaN where either row is zero)."""
    na, nb = np.linalg.norm(a, axis=-1), np.linalg.norm(b, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (a * b).sum(axis=-1) / (na * nb)


def mean_direction_cosine(Z: np.ndarray, iterates: np.ndarray) -> np.ndarray:
    """cos(w_t, z_bar) per step and prompt, (steps + 1, B): the uniform-attention alternative's cosine with
    GD (z_bar = mean_i z_i is the direction every iterate of a uniform-attention loop keeps)."""
    return cosine(iterates, np.asarray(Z).mean(axis=1)[None])


def construction_weights(d: int, eta: float) -> dict[str, np.ndarray]:
    """nn.Linear weights (out, in) of the one-head layer computing (1) on tokens (z, w) of width 2d.

    ``W_q`` (d, 2d) = [0 I], ``W_k`` = [-I 0], ``W_v`` = [I 0], ``W_o`` (2d, d) = [0; eta I]; logit scale 1.
    """
    check_int("d", d, minimum=1)
    check_float("eta", eta, minimum=0.0)
    I, O = np.eye(d), np.zeros((d, d))
    return {
        "W_q": np.hstack([O, I]),
        "W_k": np.hstack([-I, O]),
        "W_v": np.hstack([I, O]),
        "W_o": np.vstack([O, eta * I]),
    }


def step_rounding_bound(Z: np.ndarray, w: np.ndarray, eta: float) -> np.ndarray:
    """Float64 bound per prompt on |layer(w) - gd_step(w)| (Euclidean norm) for one application of the
    construction against (1) evaluated here, both in float64 with unit roundoff u = 2^-53.

    The construction's q, k, v are exact (its weights are 0, 1 and -1, so every product and sum is exact
    except for the zeros it adds). Each side then rounds the logits -z_i . w (a d-term dot product:
    absolute error <= d u |z_i| |w| (1 + O(u))), the softmax (exp, an n-term sum and a quotient: relative
    error <= (n + 4) u per weight), the weighted n-term sum of values (<= n u relative in sum_i p_i |z_i|),
    the product by eta and the residual addition (<= u relative each). A logit error ds moves a softmax
    weight p_i by at most 2 |ds| p_i (first order). Hence per side, with zm = max_i |z_i|,

        |err| <= eta zm (2 d u zm |w| + (2 n + 4) u) + u (|w| + 2 eta zm) ,

    and the bound returned is twice that (two independent computations), times 1.01 for the neglected
    second-order terms.
    """
    u = np.finfo(np.float64).eps / 2
    Z, w = np.asarray(Z, dtype=np.float64), np.asarray(w, dtype=np.float64)
    n, d = Z.shape[-2], Z.shape[-1]
    zm = np.linalg.norm(Z, axis=-1).max(axis=-1)
    wn = np.linalg.norm(w, axis=-1)
    one = eta * zm * (2 * d * u * zm * wn + (2 * n + 4) * u) + u * (wn + 2 * eta * zm)
    return 2.02 * one
