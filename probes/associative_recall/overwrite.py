"""Part ``overwrite`` (item 2): a key written again: the delta rule reads exactly the new value, the additive rule the
sum of the old and the new."""

from __future__ import annotations

import torch

from analysis.claims.ledger import Ledger
from analysis.probing.base import MAX_SEED, Result
from analysis.probing.parts import Context, each_claim
from analysis.training.train import derived_seed
from probes.associative_recall.config import Config
from probes.associative_recall.memories import unit_vectors, write_memory

DESCRIPTION = "a key written again: the delta rule reads the new value, the additive rule old + new"
FIELDS = ("d_key",)


def measure_overwrite(config: Config) -> dict[str, float]:
    """Orthonormal keys (d_key / 2 of them, 64 draws), key 0 written again: the largest deviation of the
    delta rule's read-out from the new value and of the additive read-out from old + new (both forms)."""
    gen = torch.Generator().manual_seed(derived_seed(config.seed, "overwrite") % MAX_SEED)
    R, n, d = 64, max(config.d_key // 2, 1), config.d_key
    basis = torch.linalg.qr(torch.randn(R, d, d, generator=gen, dtype=torch.float64))[0][..., :n].transpose(-1, -2)
    keys = torch.cat([basis, basis[:, :1]], dim=1)  # (R, n + 1, d): key 0 again at the end
    vals = unit_vectors(gen, (R, n + 1), d)
    out = {}
    for form in ("parallel", "recurrent"):
        delta = write_memory("delta", keys, vals, form) @ basis[:, 0, :, None]  # (R, d, 1)
        add = write_memory("additive", keys, vals, form) @ basis[:, 0, :, None]
        out[f"delta_{form}"] = float((delta[..., 0] - vals[:, -1]).abs().max())
        out[f"additive_{form}"] = float((add[..., 0] - vals[:, 0] - vals[:, -1]).abs().max())
        out[f"additive_miss_{form}"] = float((add[..., 0] - vals[:, -1]).norm(dim=-1).min())
    return out


def measure(ctx: Context) -> None:
    ctx.scalars.update({f"overwrite_{k}": v for k, v in measure_overwrite(ctx.config).items()})


def claim_overwrite(led: Ledger, r: Result) -> None:
    """Orthonormal keys, beta = 1: the delta rule overwrites exactly; the additive rule returns old + new."""
    s = r.scalars
    why = "float64 rounding of <= 33 rank-one updates of unit vectors"
    for name, rule, statement in (
        (
            "delta_overwrite_exact",
            "delta",
            "delta rule, orthonormal keys, beta = 1: a rewritten key reads exactly its new value",
        ),
        (
            "additive_overwrite_sum",
            "additive",
            "additive rule, orthonormal keys: a rewritten key reads old + new value",
        ),
    ):
        led.judge(
            name,
            measured=max(s[f"overwrite_{rule}_parallel"], s[f"overwrite_{rule}_recurrent"]),
            atol=1e-12,
            why=why,
            statement=statement,
        )


claims = each_claim(claim_overwrite)
