"""Part ``linear_stack``: uniform attention without norm or MLP is exactly a linear stack (theory module, items 4
and 5): the network's last-token states and its sensitivity against the stack's, identities to float64 rounding."""

from __future__ import annotations

import math

import numpy as np

from analysis.claims.ledger import Ledger
from analysis.core.devices import to_numpy
from analysis.probing.base import Result
from analysis.probing.parts import Context
from analysis.theory import representational_collapse as th
from probes.representational_collapse.distances import Distances
from probes.representational_collapse.models import Models
from probes.representational_collapse.oversquashing import Sensitivity

DESCRIPTION = "uniform attention without norm or MLP is exactly a linear stack: its states and sensitivity (identities)"
FIELDS = ("attention", "norm", "d_mlp", "sens_len", "sensitivity")
NEEDS = ("distances", "oversquashing")


def uniform_matrices(model) -> list[np.ndarray]:
    """``A_l = W_o W_v`` (d, d) per layer (uniform heads share one pattern, so the heads combine)."""
    return [to_numpy(blk.attn.W_o.weight.double() @ blk.attn.W_v.weight.double()) for blk in model.blocks]


def uniform_stack_error(m: dict, mats: list[np.ndarray]) -> float:
    """Max over pairs of ``|h_last - linear_stack(h0)|`` / max ``|h_last|``: the network against the exact
    linear stack ``h <- h + M h A^T`` recomputed from the block-0 inputs it saw (pads sit after the read-out
    index; causal: no effect)."""
    worst = 0.0
    for (h0, idx), h_last in zip(m["exact"]["h0"], m["exact"]["last"], strict=True):
        pred = np.stack([th.linear_stack(h0[r, : idx[r] + 1], mats)[-1] for r in range(h0.shape[0])])
        worst = max(worst, float(np.abs(pred - h_last).max() / np.abs(h_last).max()))
    return worst


def exact_uniform(ctx: Context) -> bool:
    """Whether the run's model is exactly a linear stack: an own model with uniform attention, no norm, no MLP."""
    c = ctx.config
    return c.model.attention == "uniform" and c.model.norm == "none" and c.model.d_mlp == 0 and ctx.own_model


def measure(ctx: Context) -> None:
    """For an exact linear stack only: its exact sensitivity with the model's ``W_o W_v``, the network's last-token
    states against the stack recomputed from the block-0 inputs (``uniform_stack_error``) and, when measured, the
    autograd sensitivity against the exact one (``sensitivity_path_error``)."""
    if not exact_uniform(ctx):
        return
    config = ctx.config
    mats = uniform_matrices(ctx.get(Models).models["float64"])
    R = th.linear_stack_sensitivity(config.sens.len, mats)
    sens_exact = np.sqrt((R**2).sum(axis=(1, 2)))
    ctx.data["sensitivity_exact"] = (("position",), sens_exact)
    ctx.scalars["uniform_stack_error"] = uniform_stack_error(ctx.get(Distances).m, mats)
    if config.sensitivity:
        sens_b = ctx.get(Sensitivity).per_base
        ctx.scalars["sensitivity_path_error"] = float(np.max(np.abs(sens_b[:, -1] - sens_exact) / sens_exact.max()))


STACK_WHY = "float64 summation error of T-term running means and d-term products over L layers (8 L T sqrt(d) eps)"


def _worst_identity(led: Ledger, rs: tuple[Result, ...], name: str, error: str, tol: float, statement: str) -> None:
    """The identity ``name``: the worst over the replicates of their scalar ``error`` is 0 within ``tol``."""
    led.judge(name, measured=max(x.scalars[error] for x in rs), atol=tol, why=STACK_WHY, statement=statement)


def claim_exact_uniform(led: Ledger, rs: tuple[Result, ...]) -> None:
    """Uniform attention without norm or MLP is exactly the linear stack (theory module, items 4, 5): on
    every replicate (the worst error is recorded)."""
    r = rs[0]
    s, config, L = r.scalars, r.config, int(r.data["layer"].size)
    if "uniform_stack_error" not in s:
        return
    T = int(r.data["n"].values[-1]) + 2
    tol = 8.0 * L * max(T, config.sens.len) * math.sqrt(config.model.d_model) * th.EPS["float64"]
    every = f" (worst of {len(rs)} seeds)" if len(rs) > 1 else ""
    _worst_identity(
        led,
        rs,
        "uniform_equals_linear_stack",
        "uniform_stack_error",
        tol,
        statement=f"network last-token states == exact linear stack (max abs error / max |h|){every}",
    )
    if not config.sensitivity:
        led.judge(
            "sensitivity_equals_path_sum",
            source="derivation (theory module, item 4)",
            reason="sensitivity=False: not measured",
        )
        return
    _worst_identity(
        led,
        rs,
        "sensitivity_equals_path_sum",
        "sensitivity_path_error",
        tol,
        statement=f"autograd |dh_last/dx_i|_F == exact path sum with the model's W_o W_v, every i and base{every}",
    )


def claims(led: Ledger, rs: tuple[Result, ...]) -> None:
    claim_exact_uniform(led, rs)
