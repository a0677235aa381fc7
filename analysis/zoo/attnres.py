"""Full Attention Residuals (``ModelConfig(residual="attnres")``, the residual redesign seed ``000#69`` compares):
each sublayer's input is a softmax-weighted mix over depth instead of the running sum of the skips.

With ``v_0`` the embedding and ``v_1, v_2, ...`` the sublayers' outputs in order (attention, MLP, attention, ...;
each ``s F(N(x))`` as the pre-norm block computes it), the input of the next sublayer is::

    h = sum_i alpha_i v_i,    alpha = softmax_i(w . v_i / rms(v_i))

with ``w`` a learned pseudo-query of width ``d`` per aggregation point (:class:`DepthAttention`), initialised to zero,
so that at initialisation every earlier output weighs the same (the mean of the ``v_i``, where the plain residual
stream is their sum). The keys are the values RMS-normalised without a gain, so ``w`` alone sets the sharpness.
Block ``l`` owns two points: ``attnres_mid`` (after its attention: the MLP's input) and, with an MLP,
``attnres_post`` (after its MLP: the next block's input, or the final norm's); the first block's input is the
embedding itself. The hooks keep their meaning: ``hook_resid_pre``, ``hook_resid_mid`` and ``hook_resid_post`` are
the aggregated inputs, ``hook_attn_out`` and ``hook_mlp_out`` the outputs ``v_i``; ``hook_attnres_weights`` of each
point holds ``alpha`` (B, T, number of values).

The queries are one-dimensional, so Muon trains them with AdamW and weight decay leaves them alone; a zero query draws
nothing, so every other weight equals the plain model's of the same seed.
"""

from __future__ import annotations

import torch
from torch import nn

from analysis.zoo.hooks import HookPoint


class DepthAttention(nn.Module):
    """One aggregation point of Full AttnRes: ``forward(values)`` mixes the list of (B, T, d) values by the softmax
    of their RMS-normalised keys against a learned query (module docstring)."""

    def __init__(self, d_model: int, eps: float) -> None:
        super().__init__()
        self.query = nn.Parameter(torch.zeros(d_model))
        self.eps = eps
        self.hook_attnres_weights = HookPoint()  # (B, T, number of values)

    def forward(self, values: list[torch.Tensor]) -> torch.Tensor:
        v = torch.stack(values, dim=-2)  # (B, T, n, d)
        keys = v * torch.rsqrt(v.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        alpha = self.hook_attnres_weights(torch.softmax(keys @ self.query, dim=-1))  # (B, T, n)
        return (alpha.unsqueeze(-1) * v).sum(dim=-2)
