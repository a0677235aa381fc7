"""Part ``trajectory``: alpha measured at checkpoints along training (the trained run with snapshots only)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from analysis.core.progress import bar
from analysis.probing.parts import Context
from probes.prompt_forgetting.config import Config
from probes.prompt_forgetting.laws import FitWindow, power_law
from probes.prompt_forgetting.models import Prepared, cancel_bias, language_losses
from probes.prompt_forgetting.offsets import measure_offsets


def bias_trajectory(
    config: Config, snapshots: dict, pairs: tuple, window: tuple[float, float], progress: bool = True
) -> xr.Dataset:
    """Alpha along training: at every step of ``snapshots`` (step -> model) the last layer's alpha of
    the same pairs without (``alpha_trajectory``) and with the cancelling bias (``alpha_bias_trajectory``),
    each with its bootstrap CI, and the held-out loss (``heldout_loss_trajectory``), over ``train_step``."""
    a, b, c = pairs
    P, N = config.prompt_len, config.prompt_len + config.cont_len
    t = np.arange(P + 1, N + 1, dtype=np.float64)
    rng = np.random.default_rng(config.seed + 15485863)
    steps = sorted(snapshots)
    out = {k: [] for k in ("alpha", "alpha_ci", "alpha_bias", "alpha_bias_ci")}
    for s in bar(steps, progress=progress, desc="checkpoints", leave=False):
        model = snapshots[s]
        dtype = next(model.parameters()).dtype
        for key, bias in (("alpha", None), ("alpha_bias", cancel_bias(P, N, dtype))):
            D = measure_offsets(model, a, b, c, attn_bias=bias, progress=False)["distance"][:, -1]  # (n, T) last layer
            fit = power_law(t, D, window, n_boot=config.n_boot, rng=rng)
            out[key].append(fit.alpha)
            out[key + "_ci"].append(fit.alpha_ci)
    loss = language_losses(config, {str(s): snapshots[s] for s in steps})
    return xr.Dataset(
        {
            "alpha_trajectory": (("train_step",), np.array(out["alpha"])),
            "alpha_trajectory_ci": (("train_step", "end"), np.array(out["alpha_ci"])),
            "alpha_bias_trajectory": (("train_step",), np.array(out["alpha_bias"])),
            "alpha_bias_trajectory_ci": (("train_step", "end"), np.array(out["alpha_bias_ci"])),
            "heldout_loss_trajectory": (("train_step",), np.array([loss[f"heldout_loss_{s}"] for s in steps])),
        },
        coords={"train_step": np.array(steps, dtype=np.int64), "end": ["lo", "hi"]},
    )


DESCRIPTION = "alpha at checkpoints along training (a trained run with snapshots)"
NEEDS = ("offsets",)


def measure(ctx: Context) -> None:
    prep = ctx.get(Prepared)
    if "snapshots" in prep.info:
        window = ctx.get(FitWindow).window
        traj = bias_trajectory(ctx.config, prep.info["snapshots"], prep.pairs, window, progress=ctx.progress)
        ctx.data.update(traj.data_vars)
        ctx.coords.update(traj.coords)
