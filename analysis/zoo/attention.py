"""Softmax-family attention of the tiny transformer: :class:`Attention`, multi-head attention with a switchable
kernel (``ModelConfig.attention``), and the kernels and helpers it uses (:func:`sparsemax`,
:func:`k_interval_softmax`, KV shifting :func:`shift_mix`). Shapes are commented as ``B`` batch, ``T`` sequence,
``H`` heads, ``dh`` head size, ``d`` model width.

Every intermediate value passes through a named :class:`~analysis.zoo.hooks.HookPoint`; attention patterns are
materialised whenever a hook watches the attention internals or a bias is passed. Only where nothing probes (the
trainer sets ``model.allow_fused = True`` while it trains) may softmax attention take the fused kernel, so a cached
run and a plain forward pass give bit-identical outputs as long as one (B, H, T, T) matrix is at most
``AUTO_BLOCK_BYTES`` (8 MB); above that an unwatched forward computes attention in row blocks (see below) and agrees
with a watched one to float rounding (summation order), not bit for bit.

Long sequences. ``model.query_block = R`` computes materialised attention in blocks of ``R`` query rows, each against
the keys it can see, so memory grows like ``R T`` instead of ``T^2``; the outputs equal the whole-matrix computation
up to floating-point summation order, and score/pattern hooks see one block at a time (``HookPoint.rows``,
:mod:`analysis.zoo.hooks`). A bias that is itself ``T x T`` would defeat that:
:class:`~analysis.zoo.attention_bias.PrefixKeyBias` describes "a value per query row on the first ``n`` keys" in
``O(T)`` memory and hands each block its slice.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from analysis.zoo.attention_bias import bias_block
from analysis.zoo.hooks import HookPoint
from analysis.zoo.layers import Norm, rope_rotate
from analysis.zoo.model_config import ModelConfig


def sparsemax(z: torch.Tensor) -> torch.Tensor:
    """Sparsemax over the last dimension (Martins and Astudillo 2016): the Euclidean projection of ``z`` onto the
    probability simplex, ``max(z - tau, 0)`` with ``tau`` such that each row sums to 1. With the logits sorted
    decreasingly, ``z_(1) >= z_(2) >= ...``, the support is the largest ``k`` with ``1 + k z_(k) > sum_{i<=k} z_(i)``
    and ``tau = (sum_{i<=k} z_(i) - 1) / k``. A ``-inf`` logit (a masked key) gets weight exactly 0, and so does every
    key more than ``tau`` below the top: unlike softmax, sparsemax gives exact zeros."""
    zs = torch.sort(z, dim=-1, descending=True).values
    seen = torch.isfinite(zs)
    csum = torch.where(seen, zs, torch.zeros((), dtype=z.dtype, device=z.device)).cumsum(-1)
    k = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype, device=z.device)
    k_z = (seen & (1.0 + k * zs > csum)).sum(-1, keepdim=True)  # the support's size (>= 1 where a key is seen)
    tau = (csum.gather(-1, (k_z - 1).clamp(min=0)) - 1.0) / k_z.to(z.dtype)
    return torch.clamp(z - tau, min=0.0)


def k_interval_softmax(z: torch.Tensor, K: int, mode: str) -> torch.Tensor:
    """K-interval softmax over the last dimension (after the K-interval attention paper): per row, the exponential
    ``e^(z - M)`` is read off the grid ``e^(-k h)``, ``k = 0..K``, ``h = (M - m) / K`` between the row's largest and
    smallest visible logits ``M``, ``m``; ``mode="round"`` takes the nearest grid value, ``"interpolate"`` the linear
    interpolation between the two around it (exact at the grid points); then each row is normalised. A row whose
    visible logits are all equal (``h = 0``) is uniform over them, as softmax; ``-inf`` logits get weight 0."""
    seen = torch.isfinite(z)
    zero = torch.zeros((), dtype=z.dtype, device=z.device)
    top = torch.where(seen, z, torch.full((), float("-inf"), dtype=z.dtype, device=z.device)).amax(-1, keepdim=True)
    low = torch.where(seen, z, torch.full((), float("inf"), dtype=z.dtype, device=z.device)).amin(-1, keepdim=True)
    h = (top - low) / K
    flat = h <= 0
    h = torch.where(flat, torch.ones((), dtype=z.dtype, device=z.device), h)
    u = torch.where(seen, (top - z) / h, zero)  # grid coordinate in [0, K]
    if mode == "round":
        approx = torch.exp(-torch.round(u) * h)
    else:
        k0 = torch.clamp(torch.floor(u), max=K - 1)
        t = u - k0
        approx = (1 - t) * torch.exp(-k0 * h) + t * torch.exp(-(k0 + 1) * h)
    approx = torch.where(seen & ~flat, approx, torch.where(seen, torch.ones((), dtype=z.dtype, device=z.device), zero))
    return approx / approx.sum(-1, keepdim=True)


def shift_mix(x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """KV shifting of ``x`` (B, T, H, dh) with per-head ``weights`` (H, 2): ``w0 x_t + w1 x_(t-1)``, ``x_(-1) = 0``."""
    prev = F.pad(x, (0, 0, 0, 0, 1, 0))[:, :-1]  # (B, T, H, dh): x shifted one step later, zero first
    return weights[:, 0, None] * x + weights[:, 1, None] * prev


# Unwatched materialised attention larger than this (bytes of one (B, H, T, T) matrix) runs in row blocks of about
# this size (Attention._rows_per_block); outputs then equal the whole-matrix ones to float rounding (summation order).
AUTO_BLOCK_BYTES = 8 * 2**20


class Attention(nn.Module):
    """Multi-head attention with a switchable kernel.

    scores = scale * q k^T (+ ssmax factor) (+ bias), masked entries -inf   -> hook_attn_scores (B, H, T, T)
    pattern: softmax/ssmax/uniform -> softmax(scores); sigmoid -> sigmoid(scores + b) on the support;
             sparsemax -> sparsemax(scores) (exact zeros); k_interval -> softmax with a K-value grid of the
             exponential; sa_softmax -> scores * softmax(scores) (SA-Softmax: signed weights, no vanishing
             gradient); softplus_l1 -> softplus(scores) / its row sum (the l1 norm; softplus(-inf) = 0);
             shaped -> alpha I + beta softmax(scores) - gamma C, C softmax's weights at zero logits (uniform over
             the visible keys), (alpha, beta, gamma) = ``shape_coef`` per head, init (1, 1, 1): with zero logits
             (``zero_query``) exactly the identity (the shaped transformer; He & Hofmann's simplified blocks);
             cog -> sign(scores) e^|scores| / sum e^|scores| (SignExp: negative weights, |weights| on the
             simplex; flipping one token's sign flips its own output and no other's);
             linear -> scores on the support, 0 elsewhere (no normalisation)   -> hook_pattern
    For every kernel a bias of -inf hides a key (e.g. the query token from itself in ICL layouts).
    ``rel_pos = R``: a learned per-head bias ``b_h[i - j]`` (parameter ``rel_bias``, zeros at init) joins the
    logits with ``attn_bias``. ``kv_shift``: keys and values are replaced by ``a1 k_t + a2 k_(t-1)`` and
    ``b1 v_t + b2 v_(t-1)`` (parameters ``shift_k``, ``shift_v`` of shape (H, 2), init (1, 0)) right after the
    projections, so hook_k and hook_v see the shifted ones.
    """

    def __init__(self, cfg: ModelConfig) -> None:
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
        if cfg.rel_pos:  # b_h[i - j]: causal offsets 0..R-1, bidirectional -(R-1)..R-1 (index + R - 1)
            self.rel_bias = nn.Parameter(torch.zeros(H, cfg.rel_pos if cfg.causal else 2 * cfg.rel_pos - 1))
        if cfg.attention == "shaped":  # per head (alpha, beta, gamma) of alpha I + beta softmax - gamma C
            self.shape_coef = nn.Parameter(torch.tensor([[1.0, 1.0, 1.0]] * H))
        if cfg.kv_shift:  # per head (current, previous) weights of the keys and of the values
            self.shift_k = nn.Parameter(torch.tensor([[1.0, 0.0]] * H))
            self.shift_v = nn.Parameter(torch.tensor([[1.0, 0.0]] * H))
        self.hook_q = HookPoint()  # (B, T, H, dh), after KV shift, QK-norm and RoPE
        self.hook_k = HookPoint()
        self.hook_v = HookPoint()
        self.hook_attn_scores = HookPoint()  # (B, H, T, T), pre-softmax logits, -inf where masked
        self.hook_pattern = HookPoint()  # (B, H, T, T), the weights that multiply v
        self.hook_z = HookPoint()  # (B, T, H, dh), pattern @ v
        self.allow_fused = False  # the trainer switches this on; probes always see materialised patterns
        self.query_block: int | None = None  # rows per block of materialised attention (None: all at once)

    def _materialise(self, attn_bias: torch.Tensor | None) -> bool:
        c = self.cfg
        return (
            not self.allow_fused
            or c.attention != "softmax"
            or attn_bias is not None
            or c.rel_pos > 0
            or self.query_block is not None
            or self.hook_attn_scores.active
            or self.hook_pattern.active
        )

    def forward(self, x: torch.Tensor, attn_bias: torch.Tensor | None = None) -> torch.Tensor:
        c = self.cfg
        B, T, _ = x.shape
        H, dh = c.n_heads, c.head_size
        q = self.W_q(x).view(B, T, H, dh)  # (B, T, H, dh)
        k = self.W_k(x).view(B, T, H, dh)
        v = self.W_v(x).view(B, T, H, dh)
        if c.kv_shift:
            k, v = shift_mix(k, self.shift_k), shift_mix(v, self.shift_v)
        if c.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        if c.pos == "rope":
            q, k = rope_rotate(q, c.rope_base), rope_rotate(k, c.rope_base)
        q, k, v = self.hook_q(q), self.hook_k(k), self.hook_v(v)
        qh, kh, vh = (t.transpose(1, 2) for t in (q, k, v))  # (B, H, T, dh)

        if not self._materialise(attn_bias):
            z = F.scaled_dot_product_attention(qh, kh, vh, is_causal=c.causal, scale=c.scale)  # (B, H, T, dh)
        else:
            R = self._rows_per_block(B, H, T, qh.element_size())
            blocks = [self._rows(qh, kh, vh, attn_bias, r0, min(r0 + R, T), T, whole=R >= T) for r0 in range(0, T, R)]
            z = blocks[0] if len(blocks) == 1 else torch.cat(blocks, dim=2)  # (B, H, T, dh)
        z = self.hook_z(z.transpose(1, 2))  # (B, T, H, dh)
        return self.W_o(z.reshape(B, T, H * dh))  # (B, T, d)

    def _rows_per_block(self, B: int, H: int, T: int, itemsize: int) -> int:
        """Query rows per block: ``query_block`` when set; else the whole matrix when a hook watches the scores
        or the pattern (hooks see whole matrices) or when it is at most ``AUTO_BLOCK_BYTES``; else blocks of
        about that size (nothing watches, so only the speed shows: a (B, H, T, T) matrix of tens of MB is
        freshly mapped and page-faulted on every call and streams through memory three times, a block stays
        in the allocator's reused memory and the cache, and causal blocks skip the keys they cannot see)."""
        if self.query_block is not None:
            return self.query_block
        if self.hook_attn_scores.active or self.hook_pattern.active:
            return T
        per_row = B * H * T * itemsize
        return T if per_row * T <= AUTO_BLOCK_BYTES else max(1, AUTO_BLOCK_BYTES // per_row)

    def _rows(self, qh, kh, vh, attn_bias, r0: int, r1: int, T: int, whole: bool) -> torch.Tensor:
        """``z`` of query rows ``r0:r1`` (B, H, r, dh) against the keys they can see (``:r1`` if causal)."""
        c = self.cfg
        B, H = qh.shape[:2]
        K = r1 if c.causal else T
        # One (B, H, r, K) buffer is scaled, biased and masked in place: the same roundings as out-of-place
        # arithmetic, and no T x T temporaries (each is a fresh allocation, page-faulted in, when a hook keeps the
        # scores). None of these in-place ops overwrites a value autograd saved: the product's backward needs q
        # and k, the scaling's and the bias's need nothing of it, and the scores' own grad flows through softmax.
        if c.attention == "uniform":
            scores = torch.zeros(B, H, r1 - r0, K, dtype=qh.dtype, device=qh.device)
        else:
            scores = (qh[:, :, r0:r1] @ kh[:, :, :K].transpose(-1, -2)).mul_(c.scale)  # (B, H, r, K)
        if c.attention == "ssmax":
            scores.mul_(c.ssmax_s * torch.log(self._n_visible(T, qh)[r0:r1]))
        if attn_bias is not None:
            scores.add_(bias_block(attn_bias, r0, r1, K).to(scores.dtype))
        if c.rel_pos:
            scores.add_(self.rel_bias_rows(r0, r1, K)[None])
        rows = None if whole else (r0, r1)
        scores = self.hook_attn_scores(self._mask_rows(scores, r0, r1, K), rows)
        pattern = self.hook_pattern(self.kernel(scores, r0), rows)
        return pattern @ vh[:, :, :K]  # (B, H, r, dh)

    def kernel(self, scores: torch.Tensor, r0: int = 0) -> torch.Tensor:
        """The pattern of ``scores`` (..., K) under this module's attention kernel, row by row over the last axis; a
        logit of ``-inf`` (the mask, or a ``-inf`` bias) is a key the row does not see, weight 0. ``r0``: the query
        index of the first row (shaped attention's identity term sits on key ``r0 + row``); heads on axis -3."""
        c = self.cfg
        if c.attention in ("softmax", "ssmax", "uniform"):
            return torch.softmax(scores, dim=-1)
        if c.attention == "sigmoid":
            return torch.sigmoid(scores + c.sigmoid_bias)  # sigmoid(-inf) = 0 off the support
        if c.attention == "sparsemax":
            return sparsemax(scores)
        if c.attention == "k_interval":
            return k_interval_softmax(scores, c.k_interval, c.k_interval_mode)
        if c.attention == "shaped":
            return self._shaped(scores, r0)
        if c.attention == "softplus_l1":  # softplus(-inf) = 0: unseen keys weigh nothing
            f = F.softplus(scores)
            return f / f.sum(-1, keepdim=True)
        unseen = scores == float("-inf")
        zero = torch.zeros((), dtype=scores.dtype, device=scores.device)
        if c.attention == "cog":  # softmax of |z| (unseen keys stay -inf: weight 0) times sign(z), 0 where unseen
            magnitude = torch.softmax(torch.where(unseen, scores, scores.abs()), dim=-1)
            return torch.where(unseen, zero, torch.sign(scores) * magnitude)
        if c.attention == "sa_softmax":  # z * softmax(z): 0 where unseen (not -inf * 0)
            return torch.where(unseen, zero, scores * torch.softmax(scores, dim=-1))
        return torch.where(unseen, zero, scores)  # linear

    def _shaped(self, scores: torch.Tensor, r0: int) -> torch.Tensor:
        """``alpha I + beta softmax(scores) - gamma C`` over heads (axis -3), each term zero on unseen keys."""
        unseen = scores == float("-inf")
        r, K = scores.shape[-2:]
        eye = torch.arange(r0, r0 + r, device=scores.device)[:, None] == torch.arange(K, device=scores.device)
        eye = (eye & ~unseen).to(scores.dtype)
        uniform = torch.softmax(torch.where(unseen, scores, torch.zeros_like(scores)), dim=-1)
        a, b, g = (self.shape_coef[:, i, None, None].to(scores.dtype) for i in range(3))  # (H, 1, 1)
        return a * eye + b * torch.softmax(scores, dim=-1) - g * uniform

    def rel_bias_rows(self, r0: int, r1: int, K: int) -> torch.Tensor:
        """(H, r1 - r0, K): the relative-position bias ``b_h[i - j]`` of query rows ``r0:r1`` and keys ``:K``,
        offsets clipped to the table (causal: ``0..R-1``, keys after the query get ``b_h[0]`` and are masked)."""
        R, dev = self.cfg.rel_pos, self.rel_bias.device
        off = torch.arange(r0, r1, device=dev)[:, None] - torch.arange(K, device=dev)[None, :]  # (r, K): i - j
        idx = off.clamp(0, R - 1) if self.cfg.causal else off.clamp(1 - R, R - 1) + R - 1
        return self.rel_bias[:, idx]

    def _mask_rows(self, scores: torch.Tensor, r0: int, r1: int, K: int) -> torch.Tensor:
        """``scores`` (B, H, r1 - r0, K) of query rows ``r0:r1``, set in place to ``-inf`` where a row cannot see
        the key: a causal row sees itself and earlier keys, so only keys ``r0..`` can be hidden and only that
        part is written (the keys before ``r0`` are seen by every row of the block); a bidirectional row sees
        every key, and nothing is written."""
        if self.cfg.causal and r0 < K:
            dev = scores.device
            hide = torch.arange(r0, K, device=dev)[None, :] > torch.arange(r0, r1, device=dev)[:, None]  # (r, K - r0)
            scores[..., r0:].masked_fill_(hide, float("-inf"))
        return scores

    def _n_visible(self, T: int, x: torch.Tensor) -> torch.Tensor:
        if self.cfg.causal:
            n = torch.arange(1, T + 1, dtype=torch.float64, device=x.device)
        else:
            n = torch.full((T,), float(T), dtype=torch.float64, device=x.device)
        return n.to(x.dtype)[:, None]  # (T, 1): one factor per query row
