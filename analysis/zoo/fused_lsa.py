r"""A hand-fused forward and backward for one linear self-attention layer read at the query's y-slot.

von Oswald et al.'s in-context regression trains one LSA layer (``attention="linear"``, one head, no
norm, MLP, positions, biases or read-out; identity read-in) on tokens ``e_1..e_N`` (context) and
``e_q`` (the query, last), with the query hidden as a key (a logit bias of -inf on the last column),
and reads the prediction as minus the last coordinate of the query's output. Only that one number
enters the loss, so the layer collapses to (row vectors, ``s = logit_scale * branch_multiplier``)

    out_q[-1] = r e_q[-1] + s sum_{j <= N} (e_q W_q^T W_k e_j^T) (W_o[-1] W_v e_j^T)
              = r e_q[-1] + s sum_j (C_j . a) (C_j . u),   a = (e_q W_q^T) W_k,  u = W_o[-1] W_v

with ``C`` the (B, N, D) context tokens and ``r`` 1 with the attention residual, 0 without. The
plain autograd path computes every token's q, k, v, the (B, T, T) pattern, the whole output and
then takes one coordinate; here the forward is four small contractions and the backward is written
out (``g = dL/d out_q[-1]``, per task):

    dL/da = s g (C^T (C u)),        dL/du = s sum_b g (C^T (C a)),
    dL/dW_k = q^T dL/da,            dL/dW_q = (dL/da W_k^T)^T e_q,       q = e_q W_q^T
    dL/dW_v = W_o[-1]^T dL/du,      dL/dW_o[-1] = dL/du W_v^T,           the other rows of dL/dW_o: 0

which is the same function and the same gradient as the autograd path, summed in a different order:
they agree to float rounding (``tests/test_fused_lsa.py`` compares them in float64 and float32), not
bit for bit, which is why the training task that uses this path names it in its config (and so in the
checkpoint key).

:func:`eligible` says whether a model is exactly this architecture; :func:`query_readout_loss` is the
loss ``0.5 mean_b (-out_q[-1] - y_b)^2`` through the fused path, differentiable with respect to the
four weight matrices (``loss.backward()`` fills their ``.grad``; the tokens are data, not differentiated).
"""

from __future__ import annotations

from typing import Any

import torch


def eligible(model: Any) -> bool:
    """True when ``model`` is a one-layer, one-head linear-attention TinyTransformer with nothing else
    (the architecture above), no hook attached anywhere, and weights that require gradients."""
    cfg = getattr(model, "config", None)
    if cfg is None or not hasattr(model, "named_hook_points"):
        return False
    shape_ok = (
        cfg.attention == "linear"
        and cfg.n_layers == 1
        and cfg.n_heads == 1
        and cfg.mlp_width == 0
        and cfg.norm == "none"
        and not cfg.use_final_norm
        and cfg.input == "embedded"
        and cfg.output == "none"
        and not cfg.bias
        and cfg.pos == "none"
        and not cfg.qk_norm
        and not cfg.causal
        and cfg.loops == 1
    )
    if not shape_ok:
        return False
    if any(p.active for p in model.named_hook_points().values()):
        return False
    return {n for n, _ in model.named_parameters()} == {f"blocks.0.attn.W_{m}.weight" for m in "qkvo"}


def forward_parts(tokens, W_q, W_k, W_v, W_o, scale: float, residual: bool) -> dict[str, torch.Tensor]:  # noqa: N803
    """The fused forward: ``out`` = out_q[-1] (B,) and the intermediates the backward reuses."""
    C, e_q = tokens[:, :-1], tokens[:, -1]  # (B, N, D), (B, D)
    q = e_q @ W_q.t()  # (B, Dh)
    a = q @ W_k  # (B, D):  a_b = W_k^T q_b
    u = W_o[-1] @ W_v  # (D,):   u = W_v^T W_o[-1]
    Ca = torch.bmm(C, a.unsqueeze(-1)).squeeze(-1)  # (B, N)
    Cu = C @ u  # (B, N)
    out = scale * (Ca * Cu).sum(-1)  # (B,)
    if residual:
        out = out + e_q[:, -1]
    return {"C": C, "e_q": e_q, "q": q, "Ca": Ca, "Cu": Cu, "out": out}


def backward_parts(C, e_q, q, Ca, Cu, g, W_k, W_v, W_o, scale: float) -> tuple[torch.Tensor, ...]:  # noqa: N803
    """``(dW_q, dW_k, dW_v, dW_o)`` from ``g = dL/d out_q[-1]`` (B,) (formulas in the module docstring)."""
    ga = (scale * g).unsqueeze(-1) * torch.bmm(Cu.unsqueeze(1), C).squeeze(1)  # (B, D)  dL/da
    gu = scale * torch.mv(C.reshape(-1, C.shape[-1]).t(), (g.unsqueeze(-1) * Ca).reshape(-1))  # (D,)  dL/du
    dW_k = q.t() @ ga  # (Dh, D)
    dW_q = (ga @ W_k.t()).t() @ e_q  # (Dh, D)
    dW_v = torch.outer(W_o[-1], gu)  # (Dh, D)
    dW_o = torch.zeros_like(W_o)
    dW_o[-1] = W_v @ gu
    return dW_q, dW_k, dW_v, dW_o


class _QueryReadoutLoss(torch.autograd.Function):
    """``0.5 mean (-out_q[-1] - y)^2`` of the LSA layer; forward and backward by hand (module docstring)."""

    @staticmethod
    def forward(ctx, tokens, targets, W_q, W_k, W_v, W_o, scale: float, residual: bool):  # noqa: N803
        f = forward_parts(tokens, W_q, W_k, W_v, W_o, scale, residual)
        err = -f["out"] - targets  # pred - y
        ctx.save_for_backward(f["C"], f["e_q"], f["q"], f["Ca"], f["Cu"], err, W_k, W_v, W_o)
        ctx.scale = scale
        return 0.5 * err.pow(2).mean()

    @staticmethod
    def backward(ctx, grad_loss):
        C, e_q, q, Ca, Cu, err, W_k, W_v, W_o = ctx.saved_tensors
        g = -(grad_loss / err.shape[0]) * err  # (B,)  dL/d out_q[-1]
        return None, None, *backward_parts(C, e_q, q, Ca, Cu, g, W_k, W_v, W_o, ctx.scale), None, None


def query_readout_loss(model: Any, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """von Oswald's training loss ``0.5 mean_b (-out_q[-1] - y_b)^2`` of an :func:`eligible` model on
    concat tokens (B, N+1, D) with the query (last token) hidden as a key, through the fused path."""
    if not eligible(model):
        raise ValueError("model is not a one-layer, one-head linear-attention LSA without hooks (fused_lsa.eligible)")
    cfg = model.config
    attn = model.blocks[0].attn
    dtype = cfg.torch_dtype
    if tokens.dim() != 3 or tokens.shape[-1] != cfg.d_model or tokens.shape[1] < 2:
        raise ValueError(f"tokens must have shape (B, N+1 >= 2, {cfg.d_model}), got {tuple(tokens.shape)}")
    return _QueryReadoutLoss.apply(
        tokens.to(dtype),
        targets.to(dtype),
        attn.W_q.weight,
        attn.W_k.weight,
        attn.W_v.weight,
        attn.W_o.weight,
        float(cfg.scale * cfg.branch_multiplier),
        bool(cfg.attn_residual),
    )
