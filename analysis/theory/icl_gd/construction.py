r"""The analytic construction (von Oswald et al. 2023, Prop. 1 and Sec. 3): linear self-attention
layers whose query output is one (or K) step(s) of (preconditioned) gradient descent from w = 0.

The tokens are those the models are trained on (:func:`analysis.data.regression_data.concat_tokens`:
e_i = (x_i, y_i), the query (x_q, 0) last), the layer has no softmax and no 1/sqrt(d) scale, keys and
values come from the context only, and the prediction is minus the query's y-slot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from analysis.core.validation import check_bool, check_float, check_int
from analysis.data.regression_data import concat_tokens
from analysis.theory.icl_gd._common import ArrayLike, as_f64, check_gamma


def read_prediction(tokens: torch.Tensor) -> torch.Tensor:
    """yhat = -(the query token's y-slot), von Oswald's sign convention."""
    return -tokens[:, -1, -1]


def gd_lsa_weights(d: int, eta: float, N: int, gamma: ArrayLike | None = None) -> dict[str, np.ndarray]:
    r"""Weights of one LSA layer whose query output is one (preconditioned) GD step from w = 0.

    With D = d + 1 and blocks ordered (x, y)::

        W_K = [[I, 0], [0, 0]]     W_Q = [[Gamma^T, 0], [0, 0]]  -> W_K^T W_Q = [[Gamma^T, 0], [0, 0]]
        W_V = [[0, 0], [0, -1]]    P   = [[0, 0], [0, eta / N]]

    Then for any token j:  score_ij = x_i^T Gamma^T x_j,  P W_V e_i = (0, -eta y_i / N), so
        e_j[y] <- e_j[y] - (eta/N) sum_i y_i x_i^T Gamma^T x_j = e_j[y] - x_j^T (eta Gamma h),
    and the x-parts never change. On the query (y-slot 0) this writes -x_q^T w_1 with
    w_1 = eta Gamma h, the GD step; hence yhat = -e_q[y]. (Gamma^T, not Gamma, appears in the
    scores because x_j^T Gamma h = sum_i y_i x_i^T Gamma^T x_j / N; they agree for symmetric Gamma.)
    """
    check_int("d", d, minimum=1)
    check_int("N", N, minimum=1)
    check_float("eta", eta)
    g = np.eye(d) if gamma is None else check_gamma(gamma)
    if g.shape != (d, d):
        raise ValueError(f"gamma must have shape ({d}, {d}), got {g.shape}")
    D = d + 1
    W_K = np.zeros((D, D))
    W_K[:d, :d] = np.eye(d)
    W_Q = np.zeros((D, D))
    W_Q[:d, :d] = g.T
    W_V = np.zeros((D, D))
    W_V[d, d] = -1.0
    P = np.zeros((D, D))
    P[d, d] = float(eta) / N
    return {"W_K": W_K, "W_Q": W_Q, "W_V": W_V, "P": P}


def gd_lsa_stack(
    d: int, eta: float | Sequence[float], N: int, layers: int, gamma: ArrayLike | None = None
) -> list[dict[str, np.ndarray]]:
    r"""K = ``layers`` stacked LSA layers computing K steps of (preconditioned) GD from w = 0.

    Why stacking the one-step layer works (von Oswald et al. Sec. 3): write r_i^{(k)} = y_i - w_k.x_i
    for the residuals after k GD steps. GD gives w_{k+1} = w_k + eta_k Gamma (1/N) sum_i r_i^{(k)} x_i,
    hence  r_j^{(k+1)} = r_j^{(k)} - (eta_k/N) sum_i r_i^{(k)} x_i^T Gamma^T x_j.
    This is exactly the layer's update of the y-slots when the context y-slots hold r^{(k)} (they
    start at y = r^{(0)}), and for the query slot s_k = -w_k.x_q (starting at 0 = -w_0.x_q) it
    gives s_{k+1} = s_k - x_q^T (w_{k+1} - w_k) = -w_{k+1}.x_q. So after K layers yhat = -s_K =
    w_K.x_q. The identity needs keys/values from the context tokens only (a query token in the
    keys would feed s_k back into later layers) and x-parts that stay fixed (P has zero x-rows).
    """
    check_int("layers", layers, minimum=1)
    etas = list(eta) if isinstance(eta, Sequence) else [eta] * layers
    if len(etas) != layers:
        raise ValueError(f"eta must be a float or have one entry per layer ({layers}), got {len(etas)}")
    return [gd_lsa_weights(d, e, N, gamma) for e in etas]


def lsa_forward(
    tokens: ArrayLike,
    weights: Mapping[str, ArrayLike] | Sequence[Mapping[str, ArrayLike]],
    *,
    include_query: bool = False,
) -> torch.Tensor:
    """Float64 reference forward pass of one or several stacked LSA layers (no softmax, no norm).

    ``tokens`` (B, T, D) with the query last; ``weights`` a dict with W_K, W_Q (D_k, D), W_V (D_v, D)
    and P (D, D_v), or a list of such dicts (one per layer). ``include_query`` also uses the query
    token as a key/value. Returns the final tokens (B, T, D); see :func:`read_prediction`.
    """
    check_bool("include_query", include_query)
    h = as_f64(tokens)
    if h.ndim != 3:
        raise ValueError(f"tokens must have shape (B, T, D), got {tuple(h.shape)}")
    stack = [weights] if isinstance(weights, Mapping) else list(weights)
    if not stack:
        raise ValueError("weights must hold at least one layer")
    for layer, W in enumerate(stack):
        missing = {"W_K", "W_Q", "W_V", "P"} - set(W)
        if missing:
            raise ValueError(f"weights[{layer}] lacks {sorted(missing)}")
        WK, WQ, WV, P = (as_f64(W[k]) for k in ("W_K", "W_Q", "W_V", "P"))
        src = h if include_query else h[:, :-1]  # (B, S, D) keys and values
        keys = src @ WK.T  # (B, S, Dk)
        queries = h @ WQ.T  # (B, T, Dk)
        values = src @ WV.T  # (B, S, Dv)
        scores = queries @ keys.transpose(1, 2)  # (B, T, S): (W_Q e_j).(W_K e_i) = e_i^T W_K^T W_Q e_j
        h = h + (scores @ values) @ P.T  # (B, T, D)
    return h


@dataclass(frozen=True, eq=False)
class LinearSelfAttention:
    """Predictor from LSA weights (e.g. :func:`gd_lsa_stack` or weights read off a trained model)."""

    layers: Any  # dict of W_K, W_Q, W_V, P, or a sequence of such dicts
    include_query: bool = False  # use the query token as key/value too
    label: str = "lsa"  # name used in tables

    @property
    def name(self) -> str:
        n = 1 if isinstance(self.layers, Mapping) else len(self.layers)
        return f"{self.label}_L={n}"

    def __call__(self, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> torch.Tensor:
        tokens = concat_tokens(x_ctx, y_ctx, x_q, dtype=torch.float64)  # (B, N+1, d+1)
        return read_prediction(lsa_forward(tokens, self.layers, include_query=self.include_query))
