"""Part ``depth``: the coordinate check over depth. Pre-LN softmax models of width ``depth_d_model`` and depth
``n_layers`` in ``depths``, standard (no branch scaling) and depth-muP with branches times ``(L0/L)^alpha``, alpha 1/2
(Depth-muP) and 1 (CompleteP), ``L0`` the smallest depth: at initialisation the RMS of the branches' sum
``x_L - x_0``; after the first Adam update one block's own update (the output matrices' ``dW x`` times the branch
multiplier, averaged over blocks) and the final stream's change on the same sequence; each one's exponent in L against
:mod:`analysis.theory.width`'s (the alternative: the standard parameterisation's, or depth-muP's for the standard
runs)."""

from __future__ import annotations

import numpy as np
import torch

from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from analysis.probing.parts import Context, each_claim, log_slopes, over_replicates
from analysis.theory import width as th
from analysis.zoo.hooks import run_with_cache
from analysis.zoo.model import ModelConfig, TinyTransformer
from probes.parameterisation.config import DEPTH_RUNS, MIXER, SOURCE, Config
from probes.parameterisation.measure import first_update, sequence

DESCRIPTION = "depth-muP's coordinate check: the branches' sum, one block's update and the stream's change against L"
FIELDS = ("depths", "depth_d_model", "depth_lr", "depth_seeds", "n_heads", "vocab_size", "seq_len")
QUANTITIES = ("branch_sum", "block_update", "stream_change")
FIGURE = "param_depth"
TOLERANCE = 0.2


def depth_config(c: Config, run: str, n_layers: int, seed: int) -> ModelConfig:
    """The model of depth run ``run`` (:data:`DEPTH_RUNS`) at ``n_layers`` blocks."""
    parameterisation, alpha = DEPTH_RUNS[run]
    extra = {}
    if parameterisation == "depth_mup":
        extra = dict(
            parameterisation="depth_mup", base_d_model=c.depth.d_model, base_n_layers=c.depths[0], depth_alpha=alpha
        )
    return ModelConfig(
        vocab_size=c.vocab_size, d_model=c.depth.d_model, n_layers=n_layers, n_heads=c.n_heads, seed=seed,
        **MIXER["softmax"], **extra,
    )  # fmt: skip


def _final_stream(model: TinyTransformer, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    L = model.config.n_layers
    with torch.no_grad():
        _, cache = run_with_cache(model, tokens, names=["hook_embed", f"blocks.{L - 1}.hook_resid_post"])
    return cache["hook_embed"], cache[f"blocks.{L - 1}.hook_resid_post"]


def measure_one(c: Config, run: str, n_layers: int, seed: int) -> dict[str, float]:
    """The three quantities of one model (module docstring)."""
    tokens, targets = sequence(c.vocab_size, c.seq_len, seed)
    cfg = depth_config(c, run, n_layers, seed)
    r = first_update(cfg, "adam", c.depth.lr, tokens, targets, keep=True)
    before, after = r["models"]
    x0, xl = _final_stream(before, tokens)
    _, xl1 = _final_stream(after, tokens)
    writers = [v for n, v in r["own"].items() if n.endswith(("attn.W_o", "mlp.W_out"))]
    return {
        "branch_sum": float((xl - x0).double().pow(2).mean().sqrt()),
        "block_update": float(np.mean(writers)) * cfg.branch_multiplier,
        "stream_change": float((xl1 - xl).double().pow(2).mean().sqrt()),
    }


def measure(ctx: Context) -> None:
    c = ctx.config

    def one_seed(seed: int) -> dict[str, np.ndarray]:
        out = np.empty((len(DEPTH_RUNS), len(QUANTITIES), len(c.depths)))
        for i, run in enumerate(DEPTH_RUNS):
            for j, L in enumerate(c.depths):
                got = measure_one(c, run, L, seed)
                out[i, :, j] = [got[q] for q in QUANTITIES]
        return {"depth_size": out}

    got = over_replicates(c.seed, c.depth.seeds, one_seed, progress=ctx.progress, desc="depth replicates")
    ctx.data["depth_size"] = (("depth_run", "depth_quantity", "depth", "depth_seed"), got["depth_size"])
    ctx.coords.update(
        depth_run=list(DEPTH_RUNS), depth_quantity=list(QUANTITIES), depth=list(c.depths),
        depth_seed=list(range(c.depth.seeds)),
    )  # fmt: skip


def depth_exponent(run: str, quantity: str) -> float:
    """The derived depth exponent of ``quantity`` for depth run ``run``."""
    parameterisation, alpha = DEPTH_RUNS[run]
    if quantity == "branch_sum":
        return th.branch_sum_exponent(parameterisation, alpha)
    if quantity == "block_update":
        return th.block_update_exponent(parameterisation)
    return th.stream_update_exponent(parameterisation)


def claim_depth_exponents(led: Ledger, r: Result) -> None:
    """Each depth run's three exponents in L against the derived ones; the alternative: the standard
    parameterisation's (for a depth-muP run) or Depth-muP's (for the standard run)."""
    c, d = r.config, r.data
    for run in DEPTH_RUNS:
        other = "depth_mup_sqrt" if run == "standard" else "standard"
        for q in QUANTITIES:
            values = d["depth_size"].sel(depth_run=run, depth_quantity=q).values  # (depth, seed)
            slopes = log_slopes(values, c.depths)
            e, alt = depth_exponent(run, q), depth_exponent(other, q)
            if run == "standard" and q == "stream_change":
                led.judge(
                    "depth_exponent_standard_stream_change",
                    population=slopes,
                    bound=e,
                    why="each seed's slope: the blocks' own updates add coherently (L times one block's), and what "
                    "later blocks add to a change that reaches them, (I + J) dx with J of mean zero, only adds",
                    statement=f"standard: ln(stream change) against ln L, L = {list(c.depths)}: slope >= {e:g} "
                    f"({SOURCE})",
                )
                continue
            led.judge(
                f"depth_exponent_{run}_{q}",
                measured=float(slopes.mean()),
                expected=e,
                alternative=alt,
                atol=TOLERANCE,
                why=(
                    f"criterion: within {TOLERANCE} of the derived exponent, an asymptotic (large-L, small-lr) law "
                    f"fitted over L = {list(c.depths)}; per-seed slopes {np.round(slopes, 3).tolist()}"
                ),
                statement=(
                    f"{run}: ln({q.replace('_', ' ')}) against ln L (width {c.depth.d_model}, Adam lr {c.depth.lr:g} "
                    f"at the first update, {c.depth.seeds} seeds): slope {e:+g} ({SOURCE})"
                ),
            )


claims = each_claim(claim_depth_exponents)
