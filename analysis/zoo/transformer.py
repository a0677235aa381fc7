"""The tiny transformer itself: :class:`Block` (where norm placement lives), the mimetic initialisation of an
attention module (:func:`mimetic_heads`) and :class:`TinyTransformer`, whose weights are drawn from one generator
seeded by ``ModelConfig.seed``, module by module in construction order.

Residual block, written once for all placements (``s`` = ``branch_multiplier``: ``branch_scale``, times depth_mup's
(L0 / L)^alpha; ``a`` = DeepNorm's alpha,
``N`` = a norm, ``F`` = attention or MLP)::

    pre   x + s F(N(x))                 peri  x + s N_out(F(N(x)))
    post  N(a x + s F(x))               none  x + s F(x)
    mix   post in the first ``mix_post_layers`` layers, pre after (Mix-LN)

With a residual switched off the ``x`` (or ``a x``) term is dropped. With ``residual="attnres"`` (pre only) the
skips' sum is replaced by a softmax over depth (:mod:`analysis.zoo.attnres`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import torch
from torch import nn

from analysis.core.validation import check_int
from analysis.zoo.attention import Attention
from analysis.zoo.attention_bias import layer_biases
from analysis.zoo.attnres import DepthAttention
from analysis.zoo.hooks import HookPoint, name_hook_points
from analysis.zoo.layers import MLP, Norm
from analysis.zoo.model_config import ModelConfig
from analysis.zoo.parameterisation import init_multiplier
from analysis.zoo.recurrent import FORMS
from analysis.zoo.recurrent_attention import RecurrentAttention


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        super().__init__()
        self.cfg, self.layer = cfg, layer
        self.placement = cfg.placement(layer)
        out_scale = 1.0 / math.sqrt(layer + 1) if cfg.ln_scaling else 1.0
        has_mlp = cfg.mlp_width > 0

        def norm(scale: float = 1.0) -> Norm:
            return Norm(cfg.d_model, cfg.norm_type, cfg.norm_eps, cfg.bias, scale)

        # attributes are assigned in execution order, so hook names list in the order they fire
        self.hook_resid_pre = HookPoint()  # (B, T, d)
        if self.placement != "none":
            self.ln1 = norm(out_scale)
        self.attn = RecurrentAttention(cfg, layer) if cfg.attention == "recurrent" else Attention(cfg)
        if self.placement == "peri":
            self.ln1_out = norm()
        self.hook_attn_out = HookPoint()  # (B, T, d), branch output as added to the stream
        if cfg.residual == "attnres":  # Full AttnRes's aggregation point after the attention
            self.attnres_mid = DepthAttention(cfg.d_model, cfg.norm_eps)
        self.hook_resid_mid = HookPoint()
        if has_mlp:
            if self.placement != "none":
                self.ln2 = norm(out_scale)
            self.mlp = MLP(cfg)
            if self.placement == "peri":
                self.ln2_out = norm()
            self.hook_mlp_out = HookPoint()
        else:
            self.mlp = None
        if cfg.residual == "attnres" and has_mlp:  # Full AttnRes's aggregation point after the MLP
            self.attnres_post = DepthAttention(cfg.d_model, cfg.norm_eps)
        self.hook_resid_post = HookPoint()

    def _sublayer(self, x, fn, n_in, n_out, hook_out, residual: bool) -> torch.Tensor:
        c, p = self.cfg, self.placement
        h = fn(n_in(x) if p in ("pre", "peri") else x)
        if p == "peri":
            h = n_out(h)
        s = c.branch_multiplier
        h = hook_out(s * h if s != 1.0 else h)
        if residual:
            h = (c.deepnorm_alpha * x if c.deepnorm else x) + h
        if p == "post":
            h = n_in(h)
        return h

    def forward(self, x: torch.Tensor, attn_bias: torch.Tensor | None = None) -> torch.Tensor:
        c = self.cfg
        x = self.hook_resid_pre(x)
        x = self._sublayer(
            x,
            lambda h: self.attn(h, attn_bias),
            getattr(self, "ln1", None),
            getattr(self, "ln1_out", None),
            self.hook_attn_out,
            c.attn_residual,
        )
        x = self.hook_resid_mid(x)
        if self.mlp is not None:
            x = self._sublayer(
                x,
                self.mlp,
                getattr(self, "ln2", None),
                getattr(self, "ln2_out", None),
                self.hook_mlp_out,
                c.mlp_residual,
            )
        return self.hook_resid_post(x)

    def forward_attnres(
        self, x: torch.Tensor, values: list[torch.Tensor], attn_bias: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Full AttnRes: ``x`` is this block's aggregated input; each sublayer's output is appended to ``values`` (the
        embedding and every earlier output) and the next input is their softmax mix (:mod:`analysis.zoo.attnres`)."""
        s = self.cfg.branch_multiplier
        x = self.hook_resid_pre(x)
        values.append(self.hook_attn_out(s * self.attn(self.ln1(x), attn_bias)))
        x = self.hook_resid_mid(self.attnres_mid(values))
        if self.mlp is not None:
            values.append(self.hook_mlp_out(s * self.mlp(self.ln2(x))))
            x = self.attnres_post(values)
        return self.hook_resid_post(x)


# ------------------------------------------------------------------------------------------------
# The model
# ------------------------------------------------------------------------------------------------
def mimetic_heads(attn: nn.Module, c: ModelConfig, gen: torch.Generator) -> None:
    """Mimetic initialisation (Trockman & Kolter 2023) of one attention module, per head h, drawing from ``gen``:
    ``W_q^h^T W_k^h`` is the best rank-``dh`` factorisation of ``alpha Z + beta I`` and ``W_o^h W_v^h`` that of
    ``alpha' Z' - beta' I`` (``Z`` i.i.d. N(0, 1/d); ``M = U S V^T`` split as ``sqrt(S)`` on each side). With one
    head of width d the products are exact."""
    d, H = c.d_model, c.n_heads
    dh = attn.W_q.out_features // H

    def factor(alpha: float, beta: float) -> tuple[torch.Tensor, torch.Tensor]:
        Z = torch.randn(d, d, generator=gen, dtype=torch.float64) / math.sqrt(d)
        U, S, Vh = torch.linalg.svd(alpha * Z + beta * torch.eye(d, dtype=torch.float64))
        root = S[:dh].sqrt()
        return U[:, :dh] * root, root[:, None] * Vh[:dh]  # (d, dh), (dh, d)

    (a_qk, b_qk), (a_vo, b_vo) = c.mimetic_qk, c.mimetic_vo
    for h in range(H):
        rows = slice(h * dh, (h + 1) * dh)
        left, right = factor(a_qk, b_qk)  # W_q^T W_k = left @ right
        attn.W_q.weight[rows].copy_(left.T.to(attn.W_q.weight.dtype))
        attn.W_k.weight[rows].copy_(right.to(attn.W_k.weight.dtype))
        left, right = factor(a_vo, -b_vo)  # W_o W_v = left @ right
        attn.W_o.weight[:, rows].copy_(left.to(attn.W_o.weight.dtype))
        attn.W_v.weight[rows].copy_(right.to(attn.W_v.weight.dtype))


class TinyTransformer(nn.Module):
    """Decoder-only transformer built from a :class:`~analysis.zoo.model_config.ModelConfig`; weights are a function
    of ``cfg.seed``.

    ``forward(inputs, attn_bias=None)``: ``inputs`` are token ids (B, T) or vectors (B, T, d_in);
    ``attn_bias`` is an additive logit bias broadcastable to (B, H, T, T), applied in every layer, or
    a sequence of ``n_layers`` such tensors (``None`` entries for no bias in that layer).
    Returns logits (B, T, vocab), a read-out (B, T, d_out) or the final residual stream (B, T, d).

    Weight-tied looping (``loops = T > 1``): the whole stack (``loop_unit="stack"``) or each block
    (``"block"``) is applied T times with the same weights; every hook point then fires T times per
    forward pass (a cache keeps the last).
    """

    def __init__(self, cfg: ModelConfig, device: str | torch.device | None = None) -> None:
        super().__init__()
        if not isinstance(cfg, ModelConfig):
            raise ValueError(f"cfg must be a ModelConfig, got {type(cfg).__name__}")
        self.config = cfg
        d = cfg.d_model
        # nn.Linear/nn.Embedding draw default weights from the global RNG: build them with the global
        # state saved and restored, then overwrite every weight from our own generator.
        with torch.random.fork_rng(devices=[]):
            self._build(cfg, d)
        self._hook_points = name_hook_points(self)
        self.to(dtype=cfg.torch_dtype)  # draw in the target dtype: float64 models get float64 draws
        self._init_weights()
        self.to(device=device)

    def _build(self, cfg: ModelConfig, d: int) -> None:
        if cfg.input == "tokens":
            self.embed = nn.Embedding(cfg.vocab_size, d)
        elif cfg.input == "vectors":
            self.embed = nn.Linear(cfg.d_in, d, bias=cfg.bias)
        self.hook_embed = HookPoint()  # (B, T, d)
        if cfg.pos == "learned":
            self.pos_embed = nn.Embedding(cfg.max_len, d)
            self.hook_pos_embed = HookPoint()  # (T, d)
        self.blocks = nn.ModuleList(Block(cfg, layer) for layer in range(cfg.n_layers))
        if cfg.use_final_norm:
            self.ln_final = Norm(d, cfg.norm_type, cfg.norm_eps, cfg.bias)
        if cfg.output == "lm":
            self.head = nn.Linear(d, cfg.vocab_size, bias=cfg.bias)
        elif cfg.output == "linear":
            self.head = nn.Linear(d, cfg.d_out, bias=cfg.bias)

    # ---------------------------------------------------------------------------------------------
    def _init_weights(self) -> None:
        """Draw every weight from one generator seeded by ``cfg.seed``, in float64, module by module
        in definition order, so the weights do not depend on the dtype or the device.

        fan_in: ``nn.Linear`` weights N(0, 1/fan_in), embeddings N(0, 1). gpt2: N(0, init_std^2),
        output projections of the residual branches divided by sqrt(2L). Norm gains 1, biases 0.
        DeepNorm multiplies the value, output and MLP weights by beta (Wang et al. 2022).
        """
        c = self.config
        gen = torch.Generator().manual_seed(c.seed)
        beta_names = ("attn.W_v", "attn.W_o", "mlp.W_in", "mlp.W_out")
        out_proj = ("attn.W_o", "mlp.W_out")

        def draw(p: torch.Tensor, std: float) -> None:
            p.copy_((torch.randn(p.shape, generator=gen, dtype=torch.float64) * std).to(p.dtype))

        with torch.no_grad():
            for name, m in self.named_modules():
                if isinstance(m, Norm):
                    m.weight.fill_(1.0)
                    if m.bias is not None:
                        m.bias.zero_()
                elif isinstance(m, nn.Embedding):
                    draw(m.weight, c.init_std if c.init == "gpt2" else 1.0)
                elif isinstance(m, nn.Linear):
                    if c.init == "gpt2":
                        std = c.init_std / (math.sqrt(2 * max(c.n_layers, 1)) if name.endswith(out_proj) else 1.0)
                    else:
                        std = 1.0 / math.sqrt(m.in_features)
                    if c.parameterisation != "standard":
                        std *= init_multiplier(c, name, m.in_features, self.base_shapes()[f"{name}.weight"][1])
                    if c.deepnorm and name.endswith(beta_names):
                        std *= c.deepnorm_beta
                    draw(m.weight, std)
                    if m.bias is not None:
                        m.bias.zero_()
            if c.init == "mimetic":
                for m in self.modules():
                    if isinstance(m, (Attention, RecurrentAttention)):
                        mimetic_heads(m, c, gen)
            if c.zero_query:  # after every draw: no other weight moves
                for m in self.modules():
                    if isinstance(m, (Attention, RecurrentAttention)):
                        m.W_q.weight.zero_()

    def base_shapes(self) -> dict[str, tuple[int, ...]]:
        """Every parameter's shape in this model built at ``base_d_model`` (muP's base shapes,
        :mod:`analysis.zoo.parameterisation`)."""
        return base_shapes(self.config)

    # ---------------------------------------------------------------------------------------------
    @property
    def n_layers(self) -> int:
        return self.config.n_layers

    @property
    def causal(self) -> bool:
        return self.config.causal

    @property
    def input_kind(self) -> str:
        return "tokens" if self.config.input == "tokens" else "vectors"

    @property
    def allow_fused(self) -> bool:
        return all(b.attn.allow_fused for b in self.blocks)

    @allow_fused.setter
    def allow_fused(self, value: bool) -> None:
        for b in self.blocks:
            b.attn.allow_fused = bool(value)

    @property
    def recurrent_form(self) -> str:
        """How recurrent mixers compute: "parallel" (attention-like) or "recurrent" (the sequential scan)."""
        forms = {b.attn.form for b in self.blocks if isinstance(b.attn, RecurrentAttention)}
        return forms.pop() if len(forms) == 1 else "parallel"

    @recurrent_form.setter
    def recurrent_form(self, form: str) -> None:
        if form not in FORMS:
            raise ValueError(f"recurrent_form must be one of {list(FORMS)}, got {form!r}")
        for b in self.blocks:
            if isinstance(b.attn, RecurrentAttention):
                b.attn.form = form

    @property
    def query_block(self) -> int | None:
        """Rows per block of materialised attention (``None``: the whole T x T matrix at once)."""
        return self.blocks[0].attn.query_block if len(self.blocks) else None

    @query_block.setter
    def query_block(self, rows: int | None) -> None:
        if rows is not None:
            check_int("query_block", rows, minimum=1)
        for b in self.blocks:
            b.attn.query_block = rows

    def named_hook_points(self) -> dict[str, HookPoint]:
        return self._hook_points

    def hook_names(self) -> list[str]:
        return list(self._hook_points)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    # ---------------------------------------------------------------------------------------------
    def embed_inputs(self, inputs: torch.Tensor) -> torch.Tensor:
        c = self.config
        if c.input == "tokens":
            if inputs.dtype not in (torch.int64, torch.int32) or inputs.dim() != 2:
                raise ValueError(
                    f"inputs must be integer token ids of shape (B, T), got {inputs.dtype} {tuple(inputs.shape)}"
                )
            x = self.embed(inputs)  # (B, T, d)
        else:
            width = c.d_in if c.input == "vectors" else c.d_model
            if not inputs.is_floating_point() or inputs.dim() != 3 or inputs.shape[-1] != width:
                raise ValueError(
                    f"inputs must be real vectors of shape (B, T, {width}), got {inputs.dtype} {tuple(inputs.shape)}"
                )
            inputs = inputs.to(c.torch_dtype)
            x = self.embed(inputs) if c.input == "vectors" else inputs
        x = self.hook_embed(x)
        if c.pos == "learned":
            T = x.shape[1]
            if T > c.max_len:
                raise ValueError(f"sequence length {T} exceeds max_len={c.max_len} of learned positions")
            x = x + self.hook_pos_embed(self.pos_embed.weight[:T])  # (T, d) broadcast over B
        return x

    def forward(
        self,
        inputs: torch.Tensor,
        attn_bias: torch.Tensor | Sequence[torch.Tensor | None] | None = None,
    ) -> torch.Tensor:
        c = self.config
        biases = self._layer_biases(attn_bias)
        x = self.embed_inputs(inputs)  # (B, T, d)
        if c.residual == "attnres":  # one pass (loops is 1): the values are the embedding and every output so far
            values = [x]
            for block, bias in zip(self.blocks, biases, strict=True):
                x = block.forward_attnres(x, values, bias)
        else:
            stack_loops, block_loops = (c.loops, 1) if c.loop_unit == "stack" else (1, c.loops)
            for _ in range(stack_loops):
                for block, bias in zip(self.blocks, biases, strict=True):
                    for _ in range(block_loops):
                        x = block(x, bias)
        if c.use_final_norm:
            x = self.ln_final(x)
        if c.output == "none":
            return x
        if c.parameterisation != "standard":  # muP's read-out multiplier (analysis/zoo/parameterisation.py)
            return self.head(x) / c.width_mult
        return self.head(x)  # (B, T, vocab) or (B, T, d_out)

    def _layer_biases(self, attn_bias) -> list[torch.Tensor | None]:
        return layer_biases(attn_bias, self.config.n_layers)


@functools.cache
def base_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Every parameter's shape in the model of ``cfg`` built at ``base_d_model`` under the standard parameterisation,
    on the meta device (nothing is drawn): muP's base shapes (:mod:`analysis.zoo.parameterisation`)."""
    defaults = {s.name: s.default for s in ModelConfig.field_specs()}
    unset = {k: defaults[k] for k in ("parameterisation", "base_d_model", "base_n_layers", "depth_alpha")}
    base = cfg.replace(**{**unset, "d_model": cfg.base_d_model})
    with torch.device("meta"):
        model = TinyTransformer.__new__(TinyTransformer)
        nn.Module.__init__(model)
        model._build(base, base.d_model)
    return {n: tuple(p.shape) for n, p in model.named_parameters()}
