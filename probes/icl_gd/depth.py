"""Part ``depth``: K-layer stacks over independent seeds against K steps of GD and GD++ (von Oswald et al.)."""

from __future__ import annotations

from typing import Any

import numpy as np

from analysis.claims.evidence import family_size, mean_se, seed_z, worst_case
from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from analysis.probing.parts import Context, each_claim
from probes.icl_gd.bands import below_zero_at_worst, seeds_ok
from probes.icl_gd.config import Config, part_seeds
from probes.icl_gd.models import ModelPredictor, Stacks, predict, sample_batch, sq_err
from probes.icl_gd.stacks import train_one

DESCRIPTION = "K-layer stacks over independent seeds against K steps of GD and GD++"
FIELDS = ("depth_seeds", "depth_steps", "depth_lr")
NEEDS = ("one_layer",)
SOURCE_DEPTH = "von Oswald et al. 2023 Sec. 3 (trained deep LSA stacks implement GD++, not plain GD)"

DEPTH_SEED_FIELDS = ("excess_over_gd_perstep", "excess_over_gdpp", "depth_diff_prev")  # (K, depth_seed) each


def measure_depth_seeds(
    cfg: Config,
    trained: dict,
    sq_schedules: dict,
    model: Any,
    progress: bool,
    data: dict,
    scalars: dict,
    coords: dict,
) -> None:
    """Every stack of ``depths`` from ``depth_seeds`` replicate seeds (replicate 0: the stacks of
    :func:`measure_stacks`), each on the same evaluation tasks against the same fitted K-step GD and GD++
    schedules (they do not depend on the model): per replicate the paired excess over each, and over the
    next shallower stack of the same seed. Their spread over seeds is the depth claims' uncertainty (a
    given ``model`` has no replicates)."""
    seeds = part_seeds(cfg, "depth") if model is None else [cfg.seed]
    evalN = sample_batch(cfg, cfg.n_eval, cfg.n_context, "eval")
    Ks = list(trained)
    out = {n: np.full((len(Ks), len(seeds)), np.nan) for n in DEPTH_SEED_FIELDS}
    cached = []
    for r, seed in enumerate(seeds):
        sq_prev = None
        for i, K in enumerate(Ks):
            if r == 0:
                mk = trained[K][0]
            else:
                mk, _hist, _wall, from_cache = train_one(cfg, K, progress, seed=seed)
                cached.append(from_cache)
            sq = sq_err(predict(ModelPredictor(mk, hide_query=cfg.hide_query), evalN), evalN)
            for key in ("gd_perstep", "gdpp"):
                out[f"excess_over_{key}"][i, r] = mean_se(sq - sq_schedules[K][key]).mean
            if sq_prev is not None:
                out["depth_diff_prev"][i, r] = mean_se(sq - sq_prev).mean
            sq_prev = sq
    for n, v in out.items():
        data[f"{n}_seeds"] = (("K", "depth_seed"), v)
    coords["depth_seed"] = np.asarray(seeds, dtype=np.int64)
    scalars["_cached"] = scalars.get("_cached", []) + cached


def claims_depth(led: Ledger, r: Result) -> None:
    """von Oswald et al. 2023 Sec. 3: K trained layers beat K plain GD steps and match GD++; the loss
    falls with depth. Each recorded once, at the depth nearest to failing, with its band over the
    ``depth_seeds`` replicates of every stack (:func:`measure_depth_seeds`)."""
    ds = r.data
    Ks = ds["K"].values
    if len(Ks) < 2 or Ks[0] == Ks[1]:
        return
    deep = Ks > 1
    n = int(ds.sizes["depth_seed"])
    names = ("depth_beats_plain_gd", "depth_matches_gdpp", "depth_loss_falls_with_K")
    if not seeds_ok(led, names, n, "depth", SOURCE_DEPTH):
        return
    paired = f"95% t band over {n} training seeds of the paired"
    e = ds["excess_over_gd_perstep_seeds"].values  # (K, depth_seed)
    below_zero_at_worst(
        led,
        "depth_beats_plain_gd",
        e,
        deep,
        why=f"{paired} (model - K-step GD) squared-error difference on the same n_eval tasks",
        statement="trained K-layer stacks have a lower loss than K plain GD steps at their best per-step rates",
        worst=lambda i: f"worst depth, K = {Ks[i]}; {n} seeds, mean",
    )
    e_pp = ds["excess_over_gdpp_seeds"].values
    z = np.where(deep, np.abs(seed_z(e_pp)), np.nan)
    i = worst_case(z)
    if i is not None:
        led.judge(
            "depth_matches_gdpp",
            replicates=e_pp[i],
            family=family_size(z),
            expected=0.0,
            alternative=float(ds["loss_gd_perstep"].values[i] - ds["loss_gdpp"].values[i]),
            why=f"{paired} (model - GD++) squared-error difference on the same n_eval tasks",
            statement=f"trained K-layer stacks have the loss of GD++ (per-layer eta, gamma fitted on separate tasks) "
            f"(worst depth, K = {Ks[i]}; {n} seeds, mean)",
        )
    below_zero_at_worst(
        led,
        "depth_loss_falls_with_K",
        ds["depth_diff_prev_seeds"].values,
        why=f"{paired} difference of two consecutive stacks' squared errors (the same seed's stacks) on the same tasks",
        statement="each trained stack has a lower loss than the next shallower one",
        worst=lambda i: f"worst step, K = {Ks[i - 1]} -> {Ks[i]}; {n} seeds, mean",
    )


def measure(ctx: Context) -> None:
    cfg = ctx.config
    stacks = ctx.get(Stacks)
    measure_depth_seeds(
        cfg, stacks.trained, stacks.sq_schedules, ctx.model, ctx.progress, ctx.data, ctx.scalars, ctx.coords
    )


claims = each_claim(claims_depth)
