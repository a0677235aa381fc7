"""Part ``extension``: a format's collapse measured on lengths beyond ``max_len``, against where the main run's
float64 power law puts it (Barbero et al. 2024 with the fitted law; theory: ``collapse_interval``)."""

from __future__ import annotations

import math

import numpy as np

from analysis.claims.evidence import t_multiple
from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from analysis.probing.parts import Context
from analysis.theory import representational_collapse as th
from probes.representational_collapse.bands import one_model_reason
from probes.representational_collapse.config import EXTENSION_FIELDS, Config, extension_lengths
from probes.representational_collapse.distances import rate_alternative
from probes.representational_collapse.models import Models, build_models, check_length
from probes.representational_collapse.sequences import lengths, measure_distances

DESCRIPTION = "a format's collapse measured beyond max_len against the main fit's prediction"
GATE = "extend_dtype"
FIELDS = EXTENSION_FIELDS


def measure_extension(config: Config, models: dict, model, vocab: int, progress: bool) -> dict:
    """The collapse of ``extend_dtype`` on lengths ``extend_lo .. extend_hi`` x ``max_len`` (new bases):
    float64 and that format's distances, the resolution, the first collapsed length and the outputs after it."""
    dt = config.extend.dtype
    lo, hi = extension_lengths(config)
    sub = config.replace(
        dtypes=(dt,),
        max_len=hi,
        min_len=lo,
        n_lengths=config.extend.lengths,
        fit_lo=float(lo),
        n_bases=config.extend.bases or config.n_bases,
        sensitivity=False,
        extend_dtype="",
    )
    if model is not None:
        check_length(sub, model)
    ext_models = {"float64": models["float64"]}
    ext_models[dt] = models[dt] if dt in models else build_models(sub.replace(dtypes=(dt,)), model, progress)[0][dt]
    ns = lengths(sub)
    per = measure_distances(ext_models, sub, ns, progress=progress, vocab=vocab)["per_dtype"]
    norm = np.exp(np.log(per["float64"]["norm"]).mean(0))
    dist = np.stack([np.exp(np.log(per[k]["distance"]).mean(0)) for k in ("float64", dt)])
    c = th.collapse_length(ns, dist[0], norm, dt)
    after = ns >= c if math.isfinite(c) else np.zeros(ns.size, bool)
    frac = {k: float(per[dt][k][:, after].mean()) if after.any() else math.nan for k in ("argmax_equal", "identical")}
    return {
        "n": ns,
        "distance": dist,
        "resolution": th.resolution(dt, norm),
        "collapse_n": float(c),
        "grid_ratio": float(np.max(ns[1:] / ns[:-1])),
        **frac,
    }


def collapse_prediction(
    result: Result, dtype: str, grid_ratio: float = 1.0, k: float | None = None
) -> dict[str, float]:
    """Where ``result``'s float64 power law puts the collapse of ``dtype``, with an interval for a measurement.

    Anchored at the run's longest length ``n_a`` (the probe's ``collapse_n_extrapolated``):
    ``n* = n_a (D(n_a) / eps|h(n_a)|)^(1/alpha)``. The interval
    (:func:`analysis.theory.representational_collapse.collapse_interval`) takes ``alpha`` over the fit's
    bootstrap CI, the level ``ln D(n_a)`` within ``k`` standard errors of its mean over the ``S`` samples (``None``:
    the 95% Student-t multiple with ``S - 1`` dof, :func:`analysis.claims.evidence.t_multiple`)
    (``std_s ln D_s(n_a) / sqrt(S)``; counted twice in variance, ``sqrt(2)``, because a second run that measures
    the collapse draws its own samples) and one step ``grid_ratio`` of the measuring run's length grid.
    """
    d, s = result.data, result.scalars
    ln_d = np.log(d["distance_samples"].sel(dtype="float64").values[:, -1])  # (S,)
    log_se = float(ln_d.std(ddof=1) / math.sqrt(ln_d.size)) * math.sqrt(2.0)
    k = t_multiple(ln_d.size - 1) if k is None else k
    ratio = float(d["distance"].sel(dtype="float64")[-1] / d["resolution"].sel(dtype=dtype)[-1])
    n_a = float(d["n"].values[-1])
    lo, hi = th.collapse_interval(n_a, ratio, (s["slope_ci_lo"], s["slope_ci_hi"]), log_se, grid_ratio, k)
    n_star = float(th.extrapolated_collapse(n_a, ratio, s["slope"]))
    return {"n_star": n_star, "lo": lo, "hi": hi, "ratio": ratio, "log_se": log_se, "n_a": n_a}


def measure(ctx: Context) -> None:
    """The collapse of ``extend_dtype`` measured beyond ``max_len`` (:func:`measure_extension`)."""
    config = ctx.config
    shared = ctx.get(Models)
    ext = measure_extension(config, shared.models, ctx.model, shared.vocab, ctx.progress)
    ctx.coords.update(n_ext=ext["n"], ext_dtype=["float64", config.extend.dtype])
    ctx.data.update(
        ext_distance=(("ext_dtype", "n_ext"), ext["distance"]),
        ext_resolution=(("n_ext",), ext["resolution"]),
    )
    for k in ("collapse_n", "argmax_equal", "identical", "grid_ratio"):
        ctx.scalars[f"ext_{k}"] = ext[k]


def claims(led: Ledger, rs: tuple[Result, ...]) -> None:
    """The collapse length on the first replicate's extension (the extension is measured on replicate 0 only)."""
    claim_collapse_length(led, rs[0])


def claim_collapse_length(led: Ledger, r: Result) -> None:
    """Barbero et al. with the float64 power law: the format collapses where the fitted law meets eps|h|,
    measured on the extension beyond max_len against the interval the main fit predicts."""
    config, s = r.config, r.scalars
    dt = config.extend.dtype
    if not dt:
        return
    name = f"collapse_length_{dt}"
    if not s["causal"] or not math.isfinite(s["slope_ci_lo"]) or s["slope_ci_lo"] <= 0:
        led.judge(name, reason="no decaying power law: the slope CI reaches 0 (or the model is bidirectional)")
        return
    p = collapse_prediction(r, dt, grid_ratio=s["ext_grid_ratio"])
    own = r.meta.get("own_model", True)
    alt_slope, alt_h = rate_alternative(
        config,
        r.meta.get("pos_assumed", config.model.pos),
        config.model.attention if own else "softmax",
        int(r.data["layer"].size),
    )
    if alt_slope > 0:
        alt = float(th.extrapolated_collapse(p["n_a"], p["ratio"], alt_slope))
        alt_h = f"{alt_h}, which crosses eps|h| at n = n_a ratio^(1/{alt_slope:g})"
    else:
        alt, alt_h = float(r.data["n_ext"].values[-1]) * s["ext_grid_ratio"], "no decay: no collapse in the extension"
    m = s["ext_collapse_n"]
    # the predicted interval [lo, hi] around n*, written as the measurement's interval (see Ledger.predict)
    ci = (m - (p["hi"] - p["n_star"]), m + (p["n_star"] - p["lo"]))
    within_run = one_model_reason(r, "bases (the main run's and the extension's)")
    led.judge(
        name,
        expected=p["n_star"],
        band={"measured": m, "ci": ci, "coverage": 0.95, "within_run": within_run},
        alternative=alt,
        hypothesis=alt_h,
        why="alpha over the fit's 95% bootstrap CI, ln D(max_len) within the 95% t band (n_bases - 1 dof) of its "
        "mean over the bases of two independent sample sets, plus one step of the extension's grid (theory: "
        "collapse_interval)",
        statement=f"{config.family}, {dt}: the first length from which the float64 distance stays below "
        f"eps({dt}) |h| (measured on lengths up to {int(r.data['n_ext'].values[-1])}) is where the "
        "main run's power law puts it",
    )
