r"""The GD step a predictor implements: the learning rate eta (and preconditioner eta Gamma) read off
its predictions (least squares on the GD feature x_q.h) or off the weights of a linear self-attention
layer (in the convention of :mod:`.construction`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from analysis.core.validation import check_int
from analysis.theory.icl_gd._common import ArrayLike, as_batch, as_f64


def _gd_feature(x_ctx: ArrayLike, y_ctx: ArrayLike) -> torch.Tensor:
    xc, yc = as_f64(x_ctx), as_f64(y_ctx)
    return torch.einsum("bnd,bn->bd", xc, yc) / xc.shape[1]  # h = (1/N) sum_i y_i x_i, (B, d)


def fit_eta(pred: ArrayLike, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> float:
    """Learning rate whose one-step GD best matches ``pred`` in least squares.

    GD predicts eta g_b with g_b = x_q.h_b, so argmin_eta sum_b (pred_b - eta g_b)^2 = sum g p / sum g^2.
    """
    xc, yc, xq = as_batch(x_ctx, y_ctx, x_q)
    p = as_f64(pred).detach().reshape(-1)
    if p.shape[0] != xc.shape[0]:
        raise ValueError(f"pred must have shape ({xc.shape[0]},), got {tuple(as_f64(pred).shape)}")
    g = (_gd_feature(xc, yc) * xq).sum(-1)
    return float((g * p).sum() / (g * g).sum())


def fit_preconditioner(pred: ArrayLike, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> np.ndarray:
    """Matrix G = eta Gamma minimising sum_b (pred_b - x_q^T G h_b)^2 (needs B >= d^2 tasks).

    pred_b ~ sum_kl G_kl x_q,k h_b,l is linear in vec(G) with features vec(x_q h^T): a lstsq problem.
    """
    xc, yc, xq = as_batch(x_ctx, y_ctx, x_q)
    B, _, d = xc.shape
    if B < d * d:
        raise ValueError(f"fit_preconditioner needs at least d^2 = {d * d} tasks, got {B}")
    feats = (xq.unsqueeze(-1) * _gd_feature(xc, yc).unsqueeze(-2)).reshape(B, d * d)  # (B, d*d)
    p = as_f64(pred).detach().reshape(B, 1)
    sol = torch.linalg.lstsq(feats, p, driver="gelsd").solution  # (d*d, 1)
    return sol.reshape(d, d).numpy()


def eta_from_lsa_weights(
    weights: Mapping[str, ArrayLike] | Sequence[Mapping[str, ArrayLike]], N: int
) -> dict[str, Any] | list[dict[str, Any]]:
    r"""Read the GD learning rate (and preconditioner) off LSA weights in this module's convention.

    Assumption: the layer is e_j <- e_j + P W_V sum_{context i} e_i (e_i^T W_K^T W_Q e_j) on tokens
    (x, y) with the prediction -e_q[y] (any logit scale folded into W_Q). With U = P W_V, its y-row
    r = (r_x, r_y), M = W_K^T W_Q and B = M[:, :d] (query y-slot 0), one layer writes on the query
        out = sum_i (r . e_i)(e_i^T B x_q),
    a cubic form with coefficient tensor T_abc = r_a B_bc. Its GD part is a = y, b in x:
        yhat = -r_y sum_i y_i x_i^T M_xx x_q = x_q^T G h,  G = eta Gamma = -N r_y M_xx^T.
    Returned per layer:
      eta            tr(G)/d (the best multiple of I in Frobenius norm),
      gamma          G (= eta Gamma),
      non_scalar     |G - eta I|_F / |G|_F (0 for plain GD),
      off_structure  |T - T_GD|_F / |T|_F = sqrt(|r_x|^2 |B|^2 + r_y^2 |M_yx|^2) / (|r| |B|), invariant
                     under the rescalings W_K -> a W_K, W_Q -> W_Q / a, P -> b P, W_V -> W_V / b;
      off_structure_full  |U - U_yy e_y e_y^T| / |U| and |M - M_xx (+) 0| / |M| combined in quadrature,
                     which also measures what matters only for deeper stacks (x-writes, y in scores).
    """
    check_int("N", N, minimum=1)
    if not isinstance(weights, Mapping):
        return [eta_from_lsa_weights(w, N) for w in weights]
    WK, WQ, WV, P = (np.asarray(weights[k], dtype=np.float64) for k in ("W_K", "W_Q", "W_V", "P"))
    U = P @ WV  # (D, D)
    M = WK.T @ WQ  # (D, D)
    D = M.shape[0]
    if U.shape != (D, D):
        raise ValueError(f"P W_V must be ({D}, {D}) like W_K^T W_Q, got {U.shape}")
    d = D - 1
    r, Bm = U[d], M[:, :d]
    r_y, M_xx = r[d], M[:d, :d]
    G = -N * r_y * M_xx.T
    eta = float(np.trace(G) / d)
    gn = np.linalg.norm(G)
    num = math.sqrt(np.sum(r[:d] ** 2) * np.sum(Bm**2) + r_y**2 * np.sum(M[d, :d] ** 2))
    den = np.linalg.norm(r) * np.linalg.norm(Bm)
    U_off = U.copy()
    U_off[d, d] = 0.0
    M_off = M.copy()
    M_off[:d, :d] = 0.0
    nu, nm = np.linalg.norm(U), np.linalg.norm(M)
    full = math.hypot(np.linalg.norm(U_off) / nu if nu > 0 else 0.0, np.linalg.norm(M_off) / nm if nm > 0 else 0.0)
    return {
        "eta": eta,
        "gamma": G,
        "non_scalar": float(np.linalg.norm(G - eta * np.eye(d)) / gn) if gn > 0 else 0.0,
        "off_structure": float(num / den) if den > 0 else 0.0,
        "off_structure_full": float(full),
    }


def lsa_linear_part(weights: Mapping[str, ArrayLike], N: int) -> np.ndarray:
    r"""The whole y-linear part G of one LSA layer's prediction, yhat_lin = x_q^T G h.

    :func:`eta_from_lsa_weights` reads G from the GD path r_y M_xx only. With U = P W_V (y-row
    r = (r_x, r_y)), M = W_K^T W_Q and the query (x_q, 0), the prediction -sum_i (r.e_i)(e_i^T M e_q)
    has two terms linear in the labels:
        r_y y_i x_i^T M_xx x_q   and   y_i (r_x.x_i)(M_yx x_q) = y_i x_i^T (r_x M_yx) x_q,
    with M_yx the y-row of M restricted to x. Hence, with h = (1/N) sum_i y_i x_i,
        G = -N (r_y M_xx + r_x M_yx)^T.
    Every other term of the layer is even in the labels (and of the query's own key/value, when the
    query is visible: y-slot 0 there), so it is uncorrelated with any y-odd predictor.
    """
    check_int("N", N, minimum=1)
    WK, WQ, WV, P = (np.asarray(weights[k], dtype=np.float64) for k in ("W_K", "W_Q", "W_V", "P"))
    U = P @ WV  # (D, D)
    M = WK.T @ WQ  # (D, D)
    d = M.shape[0] - 1
    r_x, r_y = U[d, :d], U[d, d]
    return -N * (r_y * M[:d, :d] + np.outer(r_x, M[d, :d])).T
