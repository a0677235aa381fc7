r"""GD++ (von Oswald et al. 2023, Sec. 3): GD with a curvature correction of the inputs per layer, its
LSA construction, and per-layer schedules (of GD or GD++) fitted to minimise the expected loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from analysis.core.validation import check_bool, check_float, check_int
from analysis.theory.icl_gd._common import ArrayLike, as_batch, as_f64
from analysis.theory.icl_gd.baselines import LinearInY
from analysis.theory.icl_gd.risk import conditional_loss_linear


@dataclass(frozen=True, eq=False)
class GDPlusPlus(LinearInY):
    r"""K layers of "GD++": each layer takes a GD step on the labels *and* contracts every input.

    State per layer k: inputs x_i^{(k)}, x_q^{(k)} (x^{(0)} = x) and residuals r^{(k)} in the context
    y-slots (r^{(0)} = y), query slot s_k (s_0 = 0), S_k = (1/N) sum_i x_i^{(k)} x_i^{(k)T}. One layer,
    all updates computed from the layer's input (one LSA layer: von Oswald's GD++ construction with
    W_K^T W_Q = diag(I, 0) and P W_V = -diag(gamma_k I, eta_k) / N):
        r_j <- r_j - (eta_k / N) sum_i r_i x_i^T x_j        (the GD step; j = query: s_k <- s_k - ...)
        x_j <- (I - gamma_k S_k) x_j                        (the curvature correction, context and query)
    and yhat = -s_K. gamma = 0 is plain K-step GD with learning rates eta_k (:class:`GD`): the
    residual recursion is GD's r^{(k+1)} = y - X w_{k+1}. The last layer's gamma never reaches the
    prediction (the inputs it corrects are not read again).

    Linear in y: with row matrices X^{(k)} (N, d), M_k = prod_{l<k} (I - gamma_l S_l) (so x_q^{(k)} = M_k x_q)
    and R_k = prod_{l<k} (I - (eta_l/N) X^{(l)} X^{(l)T}) (so r^{(k)} = R_k y),
        yhat = x_q^T A y,   A = sum_k (eta_k / N) M_k^T X^{(k)T} R_k   (d, N).
    """

    eta: tuple[float, ...] = (1.0,)  # learning rate of the GD step of each layer (length K)
    gamma: tuple[float, ...] = (0.0,)  # curvature-correction strength of each layer (length K)

    def __post_init__(self) -> None:
        eta = tuple(float(e) for e in (self.eta if isinstance(self.eta, Sequence) else (self.eta,)))
        gamma = tuple(float(g) for g in (self.gamma if isinstance(self.gamma, Sequence) else (self.gamma,)))
        if not eta:
            raise ValueError("eta must hold one learning rate per layer (at least one)")
        if len(gamma) != len(eta):
            raise ValueError(f"gamma must have one entry per layer ({len(eta)}), got {len(gamma)}")
        for k, (e, g) in enumerate(zip(eta, gamma, strict=True)):
            check_float(f"eta[{k}]", e)
            check_float(f"gamma[{k}]", g)
        object.__setattr__(self, "eta", eta)
        object.__setattr__(self, "gamma", gamma)

    @property
    def steps(self) -> int:
        return len(self.eta)

    @property
    def name(self) -> str:
        return f"gdpp{self.steps}"

    def linear_map(self, x_ctx: ArrayLike, eta: Any = None, gamma: Any = None) -> torch.Tensor:
        """A (B, d, N) with yhat = x_q^T A y; ``eta``/``gamma`` override the fields (tensors keep autograd)."""
        xc = as_f64(x_ctx)
        B, N, d = xc.shape
        etas = self.eta if eta is None else eta
        gammas = self.gamma if gamma is None else gamma
        eye_d = torch.eye(d, dtype=torch.float64)
        X = xc  # (B, N, d) current inputs
        M = eye_d.expand(B, d, d)  # (B, d, d) x_q^{(k)} = M x_q
        R = torch.eye(N, dtype=torch.float64).expand(B, N, N)  # (B, N, N) r^{(k)} = R y
        A = torch.zeros(B, d, N, dtype=torch.float64)
        for e, g in zip(etas, gammas, strict=True):
            XtR = X.transpose(1, 2) @ R  # (B, d, N): sum_i x_i r_i as a map of y
            A = A + (e / N) * (M.transpose(1, 2) @ XtR)
            R = R - (e / N) * (X @ XtR)  # r_j <- r_j - (eta/N) sum_i r_i x_i.x_j
            C = eye_d - g * (X.transpose(1, 2) @ X) / N  # (B, d, d) I - gamma S_k (symmetric)
            X = X @ C  # rows x_j^T C = (C x_j)^T
            M = C @ M
        return A

    def __call__(self, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> torch.Tensor:
        """The token recursion itself (not via ``linear_map``): an independent implementation."""
        xc, yc, xq = as_batch(x_ctx, y_ctx, x_q)
        N = xc.shape[1]
        X, r, q = xc, yc, xq
        s = torch.zeros_like(yc[:, 0])  # (B,) query y-slot
        for e, g in zip(self.eta, self.gamma, strict=True):
            h = torch.einsum("bnd,bn->bd", X, r) / N  # (1/N) sum_i r_i x_i
            s = s - e * (h * q).sum(-1)
            r_new = r - e * torch.einsum("bd,bnd->bn", h, X)
            S = X.transpose(1, 2) @ X / N  # (B, d, d)
            X = X - g * (X @ S)  # rows: x_j - gamma S x_j
            q = q - g * (S @ q.unsqueeze(-1)).squeeze(-1)
            r = r_new
        return -s


def gdpp_lsa_stack(d: int, eta: Sequence[float], gamma: Sequence[float], N: int) -> list[dict[str, np.ndarray]]:
    r"""LSA weights of :class:`GDPlusPlus`: per layer W_K = W_Q = diag(I, 0), W_V = -I, P = diag(gamma I, eta)/N.

    Then score_ij = x_i^T x_j, P W_V e_i = -(gamma x_i, eta r_i)/N, so e_j gains
    -(1/N) sum_i (gamma x_i, eta r_i) x_i^T x_j = -(gamma S x_j, (eta/N) sum_i r_i x_i^T x_j): exactly one
    GD++ layer (context-only keys, as for :func:`gd_lsa_stack`).
    """
    check_int("d", d, minimum=1)
    check_int("N", N, minimum=1)
    if len(eta) != len(gamma) or not eta:
        raise ValueError(f"eta and gamma must have the same non-zero length, got {len(eta)} and {len(gamma)}")
    D = d + 1
    out = []
    for e, g in zip(eta, gamma, strict=True):
        WK = np.zeros((D, D))
        WK[:d, :d] = np.eye(d)
        P = np.diag(np.r_[np.full(d, float(g)), float(e)]) / N
        out.append({"W_K": WK, "W_Q": WK.copy(), "W_V": -np.eye(D), "P": P})
    return out


def fit_gd_schedule(
    x_ctx: ArrayLike,
    Sigma: ArrayLike,
    sigma: float,
    steps: int,
    *,
    plus_plus: bool = False,
    w_std: float = 1.0,
    eta0: float | Sequence[float] = 0.5,
    query_noise: bool = True,
) -> dict[str, Any]:
    r"""Per-layer learning rates (and GD++ gammas) minimising the expected loss on a fixed batch of contexts.

    The objective is the Rao-Blackwellised mean of :func:`conditional_loss_linear` over the given
    contexts X (exact in w, the noise and x_q), a smooth function of (eta, gamma); it is minimised in
    float64 by L-BFGS with autograd gradients, from plain GD at ``eta0`` (gamma = 0). ``plus_plus=False``
    keeps gamma = 0: K-step GD at its best per-step learning rates. The last layer's gamma does not
    enter the prediction and is kept at 0. Returns dict(eta, gamma, loss, predictor).
    """
    from scipy.optimize import minimize

    check_int("steps", steps, minimum=1)
    check_bool("plus_plus", plus_plus)
    xc = as_f64(x_ctx).detach()
    S = as_f64(Sigma)
    e0 = [float(eta0)] * steps if not isinstance(eta0, Sequence) else [float(e) for e in eta0]
    if len(e0) != steps:
        raise ValueError(f"eta0 must be a float or have {steps} entries, got {len(e0)}")
    n_g = steps - 1 if plus_plus else 0
    base = GDPlusPlus(eta=tuple(e0), gamma=(0.0,) * steps)

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        t = torch.as_tensor(theta, dtype=torch.float64).requires_grad_(True)
        etas = list(t[:steps])
        gammas = list(t[steps:]) + [torch.zeros((), dtype=torch.float64)] * (steps - n_g)
        A = base.linear_map(xc, eta=etas, gamma=gammas)
        loss = conditional_loss_linear(A, xc, S, sigma, w_std, query_noise).mean()
        (g,) = torch.autograd.grad(loss, t)
        return float(loss.detach()), g.numpy()

    theta0 = np.r_[e0, np.zeros(n_g)]
    res = minimize(objective, theta0, jac=True, method="L-BFGS-B", options={"maxiter": 200, "gtol": 1e-8})
    eta = tuple(float(v) for v in res.x[:steps])
    gamma = tuple(float(v) for v in res.x[steps:]) + (0.0,) * (steps - n_g)
    return {"eta": eta, "gamma": gamma, "loss": float(res.fun), "predictor": GDPlusPlus(eta=eta, gamma=gamma)}
