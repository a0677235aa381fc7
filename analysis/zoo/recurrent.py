"""Recurrent-state token mixers: linear attention, the delta rule, decay and gating, in two exact forms.

One family of causal token mixers whose memory is a matrix state ``S`` (per head, ``dv x dk``) written
once per token and read by the query. With feature maps ``phi`` on queries and keys, per-token decay
``alpha_t`` in (0, 1] and per-token write strength ``beta_t``::

    additive (linear attention):  S_t = alpha_t S_{t-1} + v_t k_t^T
    delta rule (DeltaNet):        S_t = alpha_t S_{t-1} + beta_t (v_t - alpha_t S_{t-1} k_t) k_t^T
                                      = alpha_t S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T
    read-out:                     z_t = S_t q_t            (normalised: z_t / (q_t . n_t),
                                                            n_t = alpha_t n_{t-1} + k_t)

where ``q``, ``k`` are the feature-mapped queries and keys (:func:`feature_map`). ``alpha_t = 1`` is no
decay (Katharopoulos et al.'s linear attention; DeltaNet, 003#30), a constant per head is RetNet-style
fixed decay, and ``alpha_t = sigmoid(w . x_t + b)`` per head is input-dependent gating (GLA, 003#2;
Gated DeltaNet with the delta rule, 003#8).

Two forms compute the same ``z`` (and final state):

* :func:`recurrent_scan` -- the sequential scan above, one token at a time: the reference.
* :func:`parallel_form` -- attention-like. With ``gamma_ts = prod_{r=s+1..t} alpha_r`` (the decay as a
  cumulative-product mask, computed as ``exp(L_t - L_s)`` of the cumulative log-decays ``L``) the state
  is ``S_t = sum_{s <= t} gamma_ts u_s k_s^T`` for pseudo-values ``u``: ``u = v`` for the additive rule,
  and for the delta rule ``u_t = beta_t (v_t - sum_{s<t} gamma_ts (k_t . k_s) u_s)``, i.e. the unit
  lower-triangular system ``(I + diag(beta) M) U = diag(beta) V`` with ``M_ts = gamma_ts k_t . k_s``
  (s < t), solved by one triangular solve -- the UT transform of the WY representation of the
  Householder-like products of DeltaNet (003#30), here over the whole sequence at once. Then
  ``z = (Q K^T * Gamma) U``, and the normaliser is the row sum of ``Q K^T * Gamma``.

The two agree to floating-point rounding for every write rule, decay, feature map and normalisation
(``tests/test_recurrent.py``; the associative-recall probe's identity claim). Shapes: ``q``, ``k``
(B, H, T, dk), ``v`` (B, H, T, dv), ``beta`` and ``log_alpha`` (B, H, T).
"""

from __future__ import annotations

import math
import typing
from typing import Literal

import torch
import torch.nn.functional as F

WriteRule = Literal["additive", "delta"]
Decay = Literal["none", "fixed", "gated"]
FeatureMap = Literal["identity", "elu1", "favor"]
WRITE_RULES = typing.get_args(WriteRule)
DECAYS = typing.get_args(Decay)
FEATURE_MAPS = typing.get_args(FeatureMap)
FORMS = ("parallel", "recurrent")


def favor_projection(d: int, m: int, seed: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """(m, d) i.i.d. N(0, 1) rows ``w_i`` from ``torch.Generator().manual_seed(seed)`` (drawn in float64)."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(m, d, generator=gen, dtype=torch.float64).to(dtype)


def positive_random_features(x: torch.Tensor, proj: torch.Tensor) -> torch.Tensor:
    """FAVOR+ positive random features (Choromanski et al., 004#70): ``phi(x)_i = exp(w_i . x - |x|^2 / 2) / sqrt(m)``,
    so that ``E[phi(x) . phi(y)] = exp(x . y)`` for ``w_i ~ N(0, I)``. ``x`` (..., d), ``proj`` (m, d) or a
    batch of projections (..., m, d) broadcasting against ``x``'s leading axes."""
    m = proj.shape[-2]
    return torch.exp(x @ proj.transpose(-1, -2) - 0.5 * (x * x).sum(-1, keepdim=True)) / math.sqrt(m)


def feature_map(x: torch.Tensor, kind: str, *, scale: float = 1.0, proj: torch.Tensor | None = None) -> torch.Tensor:
    """``phi(x)`` over the last axis. identity: ``scale x`` (the logit scale rides on the query); elu1:
    ``elu(x) + 1``; favor: positive random features of ``sqrt(scale) x`` (so ``phi(q) . phi(k)`` estimates
    ``exp(scale q . k)``, the softmax kernel)."""
    if kind == "identity":
        return x * scale if scale != 1.0 else x
    if kind == "elu1":
        return F.elu(x) + 1.0
    if kind == "favor":
        if proj is None:
            raise ValueError("feature map 'favor' needs its random projection")
        return positive_random_features(x * math.sqrt(scale), proj)
    raise ValueError(f"feature map must be one of {list(FEATURE_MAPS)}, got {kind!r}")


def unit_rows(x: torch.Tensor) -> torch.Tensor:
    """``x / |x|`` over the last axis (DeltaNet's L2-normalised keys and queries; 0 stays 0)."""
    return x / x.norm(dim=-1, keepdim=True).clamp_min(torch.finfo(x.dtype).tiny)


def recurrent_scan(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    beta: torch.Tensor | None = None,
    log_alpha: torch.Tensor | None = None,
    normalize: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The sequential scan (module docstring): ``(z (B, H, T, dv), final state (B, H, dv, dk))``.

    ``beta=None`` is the additive rule, a tensor the delta rule; ``log_alpha=None`` no decay."""
    B, H, T, dk = k.shape
    S = torch.zeros(B, H, v.shape[-1], dk, dtype=v.dtype, device=v.device)
    n = torch.zeros(B, H, dk, dtype=k.dtype, device=k.device)
    out = []
    for t in range(T):
        kt, vt, qt = k[:, :, t], v[:, :, t], q[:, :, t]  # (B, H, dk|dv)
        if log_alpha is not None:
            a = log_alpha[:, :, t].exp()[..., None]  # (B, H, 1)
            S, n = S * a[..., None], n * a
        n = n + kt
        if beta is None:
            S = S + vt[..., :, None] * kt[..., None, :]
        else:
            err = vt - (S @ kt[..., None])[..., 0]  # v_t - S k_t (the decayed S)
            S = S + beta[:, :, t, None, None] * err[..., :, None] * kt[..., None, :]
        z = (S @ qt[..., None])[..., 0]  # (B, H, dv)
        if normalize:
            z = z / (qt * n).sum(-1, keepdim=True)
        out.append(z)
    return torch.stack(out, dim=2), S


def momentum_delta_scan(
    k: torch.Tensor, v: torch.Tensor, *, beta: float, mu: float, state: torch.Tensor | None = None
) -> torch.Tensor:
    """The delta rule with momentum (Momentum DeltaNet, 003#112), sequentially: with ``M_0 = 0``,

        M_t = mu M_{t-1} + beta (v_t - S_{t-1} k_t) k_t^T,      S_t = S_{t-1} + M_t,

    heavy-ball online SGD on ``|S k_t - v_t|^2 / 2``; ``mu = 0`` is the delta rule (:func:`recurrent_scan`). ``k``
    (B, T, dk), ``v`` (B, T, dv), ``state`` the initial ``S_0`` (B, dv, dk; zeros if None). Returns every state
    ``S_0 .. S_T`` (B, T + 1, dv, dk). The sequential form only: it is not (yet) a mixer of the zoo."""
    B, T, dk = k.shape
    S = torch.zeros(B, v.shape[-1], dk, dtype=v.dtype, device=v.device) if state is None else state.clone()
    M = torch.zeros_like(S)
    out = [S]
    for t in range(T):
        kt = k[:, t]
        err = v[:, t] - (S @ kt[..., None])[..., 0]  # v_t - S_{t-1} k_t
        M = mu * M + beta * err[..., :, None] * kt[..., None, :]
        S = S + M
        out.append(S)
    return torch.stack(out, dim=1)


def decay_mask(log_alpha: torch.Tensor | None, T: int, like: torch.Tensor) -> torch.Tensor:
    """``Gamma`` (B, H, T, T) or (T, T): ``prod_{r=s+1..t} alpha_r`` for ``s <= t``, 0 above the diagonal."""
    causal = torch.ones(T, T, dtype=torch.bool, device=like.device).tril()
    if log_alpha is None:
        return causal.to(like.dtype)
    L = log_alpha.cumsum(-1)  # (B, H, T)
    diff = (L[..., :, None] - L[..., None, :]).masked_fill(~causal, float("-inf"))
    return diff.exp()


def parallel_form(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    beta: torch.Tensor | None = None,
    log_alpha: torch.Tensor | None = None,
    normalize: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The attention-like form (module docstring), same arguments and outputs as :func:`recurrent_scan`."""
    T = k.shape[2]
    G = decay_mask(log_alpha, T, k)  # (B, H, T, T) or (T, T)
    A = (q @ k.transpose(-1, -2)) * G  # (B, H, T, T): z = A U
    u = v if beta is None else pseudo_values(k, v, beta, G)
    z = A @ u
    if normalize:
        z = z / A.sum(-1, keepdim=True)
    g_last = G[..., -1, :]  # (.., T): decay from each token to the end
    S = torch.einsum("...s,...sv,...sk->...vk", g_last.expand(k.shape[:-1]), u, k)
    return z, S


def pseudo_values(k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """``U`` of the delta rule: the solution of ``(I + diag(beta) M) U = diag(beta) V``, ``M`` the strictly
    lower part of ``(K K^T) * Gamma`` (one unit-triangular solve, the UT transform)."""
    T = k.shape[2]
    M = ((k @ k.transpose(-1, -2)) * G).tril(-1)  # (B, H, T, T)
    eye = torch.eye(T, dtype=k.dtype, device=k.device)
    system = eye + beta[..., :, None] * M
    return torch.linalg.solve_triangular(system, beta[..., None] * v, upper=False, unitriangular=True)


def mix(form: str, q, k, v, *, beta=None, log_alpha=None, normalize=False) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`parallel_form` or :func:`recurrent_scan` by name (``form`` in ``FORMS``)."""
    if form == "parallel":
        return parallel_form(q, k, v, beta=beta, log_alpha=log_alpha, normalize=normalize)
    if form == "recurrent":
        return recurrent_scan(q, k, v, beta=beta, log_alpha=log_alpha, normalize=normalize)
    raise ValueError(f"form must be one of {list(FORMS)}, got {form!r}")


def retnet_decays(n_heads: int) -> torch.Tensor:
    """(H,) float64 fixed decays ``1 - 2^(-5 - h)``, h = 0..H-1 (RetNet's multi-scale schedule)."""
    return 1.0 - 2.0 ** (-5.0 - torch.arange(n_heads, dtype=torch.float64))
