"""Part ``stable_ranks`` (seed 004#1): the stable ranks of each head's W_q^T W_k and of W_O along the matched
models' training, measured by the part ``matched`` (claims only)."""

from __future__ import annotations

import numpy as np

from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from probes.attention_only.matched import second_half_change
from probes.attention_only.shared import part_claims

DESCRIPTION = "the stable ranks of W_q^T W_k and W_O along the matched models' training (measured by matched)"
FIELDS = ("matched_snapshots",)


def claim_stable_ranks(led: Ledger, r: Result) -> None:
    """Second-half relative change of the stable ranks: W_O still grows, QK has settled, more than with MLPs."""
    d = r.data
    qk = second_half_change(d["san_sr_qk"].sel(san_sr_model="attention_only").values)
    wo = second_half_change(d["san_sr_o"].sel(san_sr_model="attention_only").values)
    wo_std = second_half_change(d["san_sr_o"].sel(san_sr_model="standard").values)
    why = f"95% t band over {qk.size} seeds of the per-seed statistic (mean over layers)"
    stat = "relative change of the stable rank between the middle and the end of training (mean over layers)"
    for name, replicates, paired, statement in (
        ("sr_wo_still_grows", wo, "", f"attention-only model: {stat} of W_O > 0"),
        (
            "sr_qk_settles_before_wo",
            wo - np.abs(qk),
            "",
            f"attention-only model: {stat} of W_O minus |that of W_q,h^T W_k,h| > 0",
        ),
        (
            "sr_wo_accumulates_more_without_mlp",
            wo - wo_std,
            " (pairs share the seed)",
            f"{stat} of W_O: attention-only minus standard > 0",
        ),
    ):
        led.judge(name, replicates=replicates, why=why + paired, statement=statement)


claims = part_claims(trained=(claim_stable_ranks,))
