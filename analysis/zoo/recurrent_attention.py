"""The recurrent-state token mixer as a layer of the tiny transformer: :class:`RecurrentAttention`
(``ModelConfig.attention = "recurrent"``), the multi-head module around the computations of
:mod:`analysis.zoo.recurrent` (feature maps, write rules, decays, the parallel and the sequential form).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from analysis.zoo.hooks import HookPoint
from analysis.zoo.layers import Norm, rope_rotate
from analysis.zoo.model_config import ModelConfig
from analysis.zoo.recurrent import FORMS, favor_projection, feature_map, mix, retnet_decays, unit_rows


class RecurrentAttention(nn.Module):
    """The recurrent-state token mixer (``attention="recurrent"``; :mod:`analysis.zoo.recurrent`), multi-head.

    q, k, v, W_o as in :class:`~analysis.zoo.attention.Attention` (the same names, so the same initial weights), then
    per head: feature maps on q and k (the delta rule also L2-normalises them, as DeltaNet does, so that
    ``I - beta k k^T`` is a contraction), write strength ``beta`` (a fixed ``delta_beta`` or
    ``sigmoid(W_beta x)``), decay ``alpha`` (a learned scalar per head or ``sigmoid(W_gate x + b)``, both
    initialised at RetNet's ``1 - 2^(-5-h)``), and the state read by q. ``form`` ("parallel", the default,
    or "recurrent", the sequential scan) picks the computation; both give the same numbers to rounding.

    Hooks: ``hook_q``/``hook_k`` (B, T, H, dk) after the feature map (what the state stores and reads),
    ``hook_v`` (B, T, H, dh), ``hook_beta`` and ``hook_log_alpha`` (B, T, H) where used, ``hook_state``
    (B, H, dh, dk: the state after the last token; computed only when watched) and ``hook_z`` (B, T, H, dh).
    """

    def __init__(self, cfg: ModelConfig, layer: int = 0) -> None:
        super().__init__()
        self.cfg = cfg
        H, dh, d = cfg.n_heads, cfg.head_size, cfg.d_model
        self.W_q = nn.Linear(d, H * dh, bias=cfg.bias)
        self.W_k = nn.Linear(d, H * dh, bias=cfg.bias)
        self.W_v = nn.Linear(d, H * dh, bias=cfg.bias)
        self.W_o = nn.Linear(H * dh, d, bias=cfg.bias)
        if cfg.qk_norm:
            self.q_norm = Norm(dh, cfg.norm_type, cfg.norm_eps, cfg.bias)
            self.k_norm = Norm(dh, cfg.norm_type, cfg.norm_eps, cfg.bias)
        if cfg.write_rule == "delta" and cfg.delta_beta is None:
            self.W_beta = nn.Linear(d, H, bias=False)
        decay_logit = torch.logit(retnet_decays(H))  # float64; the model casts it to its dtype
        if cfg.decay == "fixed":
            self.decay_logit = nn.Parameter(decay_logit)  # alpha_h = sigmoid(decay_logit_h)
        elif cfg.decay == "gated":
            self.W_gate = nn.Linear(d, H, bias=False)
            self.gate_bias = nn.Parameter(decay_logit)  # alpha_t = sigmoid(W_gate x_t + gate_bias)
        if cfg.feature_map == "favor":  # fixed draws (a buffer: saved, never trained), one set per layer
            self.register_buffer("proj", favor_projection(dh, cfg.n_features, cfg.seed + 104_729 * (layer + 1)))
        self.hook_q = HookPoint()
        self.hook_k = HookPoint()
        self.hook_v = HookPoint()
        self.hook_beta = HookPoint()
        self.hook_log_alpha = HookPoint()
        self.hook_state = HookPoint()
        self.hook_z = HookPoint()
        self.form = "parallel"  # or "recurrent": the sequential scan (same numbers; TinyTransformer.recurrent_form)
        self.allow_fused = False  # unused: kept so that model-wide switches apply to every mixer
        self.query_block: int | None = None  # unused (the parallel form is whole-matrix)

    def forward(self, x: torch.Tensor, attn_bias: torch.Tensor | None = None) -> torch.Tensor:
        c = self.cfg
        if attn_bias is not None:
            raise ValueError("attention 'recurrent' takes no attention bias (its state has no logits to bias)")
        if self.form not in FORMS:
            raise ValueError(f"form must be one of {list(FORMS)}, got {self.form!r}")
        B, T, _ = x.shape
        H, dh = c.n_heads, c.head_size
        q = self.W_q(x).view(B, T, H, dh)
        k = self.W_k(x).view(B, T, H, dh)
        v = self.W_v(x).view(B, T, H, dh)
        if c.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        if c.pos == "rope":
            q, k = rope_rotate(q, c.rope_base), rope_rotate(k, c.rope_base)
        proj = getattr(self, "proj", None)
        q = feature_map(q, c.feature_map, scale=c.scale, proj=proj)
        k = feature_map(k, c.feature_map, scale=1.0 if c.feature_map == "identity" else c.scale, proj=proj)
        if c.write_rule == "delta":
            q, k = unit_rows(q), unit_rows(k)
        q, k, v = self.hook_q(q), self.hook_k(k), self.hook_v(v)
        beta, log_alpha = self._beta(x), self._log_alpha(x)
        z, state = mix(
            self.form,
            *(t.transpose(1, 2) for t in (q, k, v)),  # (B, H, T, d.)
            beta=None if beta is None else beta.transpose(1, 2),
            log_alpha=None if log_alpha is None else log_alpha.transpose(1, 2),
            normalize=c.state_norm,
        )
        if self.hook_state.active:
            self.hook_state(state)
        z = self.hook_z(z.transpose(1, 2))  # (B, T, H, dh)
        return self.W_o(z.reshape(B, T, H * dh))

    def _beta(self, x: torch.Tensor) -> torch.Tensor | None:
        """(B, T, H) write strengths of the delta rule (None for the additive rule)."""
        c = self.cfg
        if c.write_rule != "delta":
            return None
        if c.delta_beta is not None:
            beta = torch.full((*x.shape[:2], c.n_heads), float(c.delta_beta), dtype=x.dtype, device=x.device)
        else:
            beta = torch.sigmoid(self.W_beta(x))
        return self.hook_beta(beta)

    def _log_alpha(self, x: torch.Tensor) -> torch.Tensor | None:
        """(B, T, H) log-decays (None without decay)."""
        c = self.cfg
        if c.decay == "none":
            return None
        if c.decay == "fixed":
            log_alpha = F.logsigmoid(self.decay_logit).expand(*x.shape[:2], c.n_heads)
        else:
            log_alpha = F.logsigmoid(self.W_gate(x) + self.gate_bias)
        return self.hook_log_alpha(log_alpha)
