r"""Gated linear recurrences: linear self-attention by construction, and what time invariance cannot copy.

1. A gated linear RNN *is* linear self-attention (003#14, Zucchet et al.; :func:`gated_rnn`,
   :func:`lsa_as_gated_rnn`). The RNN has ``m`` units with an element-wise (diagonal) linear recurrence fed
   and read through multiplicative gates::

       u_t = (A x_t) * (B x_t)                 input gating (a GLU without the nonlinearity)
       h_t = g_t * h_{t-1} + u_t               diagonal recurrence, gate g_t in (0, 1]^m
       y_t = O ((C x_t) * h_t)                 output gating, then a linear read-out

   Index the units by pairs ``(i, j)``, ``i`` over value coordinates and ``j`` over key coordinates of each
   head, and set ``A_(i,j) = W_v[i]``, ``B_(i,j) = W_k[j]``, ``C_(i,j) = c W_q[j]``, ``O[:, (i,j)] = W_o[:, i]``
   (``c`` the logit scale). Then ``u_t = vec(v_t k_t^T)``, ``h_t = vec(S_t)`` with
   ``S_t = sum_{s <= t} (prod_{r=s+1..t} g_r) v_s k_s^T`` and ``y_t = W_o S_t (c q_t)``: with ``g = 1``
   exactly causal, unnormalised linear self-attention ``y_t = W_o sum_{s <= t} (c q_t . k_s) v_s``; with a
   per-head input-dependent gate ``g_t = sigmoid(w . x_t + b)`` shared by the head's units, exactly the
   zoo's gated linear-attention mixer (``attention="recurrent", decay="gated"``). No approximation is made:
   the two compute the same sums of the same products, so they agree to float rounding (the RNN needs
   ``m = H d_v d_k`` units). Without the multiplicative gates the RNN is linear in its inputs.
2. An RNN without multiplicative gating cannot regress in context (:func:`linear_predictor_loss`). On the
   in-context regression law (:mod:`analysis.data.regression_data`: ``w ~ N(0, w_std^2 I)``, tokens
   ``(x_i, y_i)``, the query ``(x_q, 0)``, ``y_q = w . x_q + sigma eps``) any predictor affine in the tokens,
   ``yhat = c + sum_i (a_i . x_i + b_i y_i) + a_q . x_q``, is uncorrelated with ``y_q``: ``E[x_i y_q] =
   E[x_i x_q^T] E[w] = 0``, ``E[y_i y_q] = w_std^2 E[x_i . x_q] = 0`` for ``i != q`` (independent zero-mean
   inputs), ``E[x_q y_q] = Sigma E[w] = 0``. So ``E(yhat - y_q)^2 = E yhat^2 + E y_q^2 >= w_std^2 tr Sigma +
   sigma^2``, the loss of the zero predictor. One linear self-attention layer reaches the one-step
   (preconditioned) GD optimum of :func:`analysis.theory.icl_gd.one_step_gd_theory` (``loss_star``); the
   gated RNN contains that layer (item 1 with ``g = 1``), so its optimum is at most ``loss_star``.
3. Selective copying (003#16, Mamba; :class:`analysis.data.tasks.SelectiveCopying`): ``n`` data tokens (i.i.d.
   uniform over ``V`` values) at positions ``p_1 < ... < p_n`` of a region of ``L``, to be output in
   order. With random spacing the positions are a uniform ``n``-subset, so the j-th lies at ``p``
   (0-based) with probability (:func:`order_position_pmf`)::

       P(p_j = p) = C(p, j - 1) C(L - 1 - p, n - j) / C(L, n).

   A *time-invariant one-tap read-out* -- output j copies the token at one fixed position ``p`` (what a
   fixed convolution with a single tap does) -- is right when ``p = p_j`` and otherwise right with
   probability ``1/V`` (another data token or a blank: the tokens are independent of the positions and
   uniform), so its best accuracy is (:func:`fixed_tap_accuracy`)::

       a_tap = (1/n) sum_j [P_j* + (1 - P_j*) / V],   P_j* = max_p P(p_j = p),

   and 1 for fixed spacing (``P_j* = 1``). The zoo's ``decay="fixed"`` mixer is time-invariant only in
   its decay: its keys and queries are functions of the input (``S_t = a S_{t-1} + v_t k_t^T``), so a
   blank can write nothing and a layer with ``a = 1`` can count the data tokens seen -- the count that a
   second layer needs to address the j-th one. Nothing here bounds that model: ``a_tap`` is the accuracy
   of the read-out the seed's argument attributes to time-invariant models, not a theorem about it.
"""

from __future__ import annotations

import math

import numpy as np
import torch


def gated_rnn(
    x: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    O: torch.Tensor,  # noqa: E741
    gate: torch.Tensor | None = None,
) -> torch.Tensor:
    """Item 1's RNN, one step at a time: ``x`` (batch, T, d); ``A, B, C`` (m, d); ``O`` (d_out, m);
    ``gate`` (batch, T, m) in (0, 1] or None (no decay, g = 1). Returns ``y`` (batch, T, d_out)."""
    h = torch.zeros(x.shape[0], A.shape[0], dtype=x.dtype)
    out = []
    for t in range(x.shape[1]):
        xt = x[:, t]
        u = (xt @ A.T) * (xt @ B.T)
        h = u if gate is None and t == 0 else (h if gate is None else gate[:, t] * h) + u
        out.append(((xt @ C.T) * h) @ O.T)
    return torch.stack(out, dim=1)


def lsa_as_gated_rnn(
    W_q: torch.Tensor, W_k: torch.Tensor, W_v: torch.Tensor, W_o: torch.Tensor, n_heads: int, scale: float = 1.0
) -> dict[str, torch.Tensor]:
    """Item 1's weights ``A, B, C, O`` from one multi-head linear-attention layer: ``W_q, W_k, W_v``
    (H dh, d) as nn.Linear weights, ``W_o`` (d_out, H dh); unit ``(h, i, j)`` at ``h dh^2 + i dh + j``."""
    H = n_heads
    dh = W_q.shape[0] // H
    q, k, v = (W.reshape(H, dh, -1) for W in (W_q, W_k, W_v))  # (H, dh, d)
    A = v[:, :, None, :].expand(H, dh, dh, -1).reshape(H * dh * dh, -1)  # unit (h, i, j) <- v row i
    B = k[:, None, :, :].expand(H, dh, dh, -1).reshape(H * dh * dh, -1)  # unit (h, i, j) <- k row j
    C = scale * q[:, None, :, :].expand(H, dh, dh, -1).reshape(H * dh * dh, -1)
    O = W_o.reshape(-1, H, dh)[:, :, :, None].expand(-1, H, dh, dh).reshape(W_o.shape[0], H * dh * dh)  # noqa: E741
    return {"A": A, "B": B, "C": C, "O": O}


def head_gate_units(gate: torch.Tensor, d_head: int) -> torch.Tensor:
    """(batch, T, H) per-head gates -> (batch, T, H dh^2): every unit of a head shares its head's gate."""
    b, T, H = gate.shape
    return gate[..., None].expand(b, T, H, d_head * d_head).reshape(b, T, H * d_head * d_head)


def causal_lsa(x: torch.Tensor, W_q, W_k, W_v, W_o, n_heads: int, scale: float = 1.0, gate=None) -> torch.Tensor:
    """The attention form of item 1: ``W_o sum_{s <= t} gamma_ts (c q_t . k_s) v_s`` per head, with
    ``gamma_ts = prod_{r=s+1..t} g_r`` (``gate`` (batch, T, H), None: 1). ``x`` (batch, T, d)."""
    b, T, _ = x.shape
    H = n_heads
    q, k, v = ((x @ W.T).view(b, T, H, -1).transpose(1, 2) for W in (W_q, W_k, W_v))  # (b, H, T, dh)
    mask = torch.ones(T, T, dtype=x.dtype).tril()
    if gate is not None:
        g = gate.transpose(1, 2)  # (b, H, T)
        prod = torch.ones(b, H, T, T, dtype=x.dtype)
        for t in range(T):
            for s in range(t):
                prod[:, :, t, s] = g[:, :, s + 1 : t + 1].prod(-1)
        mask = mask * prod
    z = ((scale * q @ k.transpose(-1, -2)) * mask) @ v  # (b, H, T, dh)
    return z.transpose(1, 2).reshape(b, T, -1) @ W_o.T


def linear_predictor_loss(d: int, sigma: float, w_std: float = 1.0, trace_sigma: float | None = None) -> float:
    """Item 2: the least loss of any predictor affine in the tokens (an RNN without multiplicative gates):
    ``w_std^2 tr Sigma + sigma^2`` (``tr Sigma = d`` for standard Gaussian inputs unless given)."""
    tr = float(d) if trace_sigma is None else float(trace_sigma)
    return float(w_std) ** 2 * tr + float(sigma) ** 2


def order_position_pmf(length: int, n_copy: int) -> np.ndarray:
    """Item 3: (n_copy, length) ``P(p_j = p)`` of the j-th smallest of a uniform n-subset of ``0..L-1``."""
    total = math.comb(length, n_copy)
    return np.array(
        [
            [math.comb(p, j) * math.comb(length - 1 - p, n_copy - 1 - j) / total for p in range(length)]
            for j in range(n_copy)
        ]
    )


def fixed_tap_accuracy(length: int, n_copy: int, n_values: int, spacing: str = "random") -> float:
    """Item 3: the best accuracy of a time-invariant one-tap read-out (output j copies one fixed position)."""
    if spacing == "fixed":
        return 1.0
    if spacing != "random":
        raise ValueError(f"spacing must be 'random' or 'fixed', got {spacing!r}")
    best = order_position_pmf(length, n_copy).max(-1)  # (n_copy,)
    return float(np.mean(best + (1.0 - best) / n_values))
