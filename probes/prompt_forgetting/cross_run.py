"""Claims across runs: a bias against none, trained against untrained, alpha across depth and the depth law, the
relay model at every depth."""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from analysis.claims.evidence import mean_se, t_multiple
from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from analysis.theory import prompt_forgetting as th
from probes.prompt_forgetting.alpha_claims import claim_bias_reverses, mean_note, over_seeds
from probes.prompt_forgetting.config import NAME
from probes.prompt_forgetting.models import TRAINED_ONE_SEED


def _alpha_se(r: Result) -> float:
    """Standard error of the last layer's alpha from its 95% percentile bootstrap CI (half-width / z(97.5%))."""
    return (r.scalars["alpha_ci_hi"] - r.scalars["alpha_ci_lo"]) / (2 * t_multiple(math.inf))


def _pairs_dof(runs) -> int:
    """Degrees of freedom of a bootstrap SE over prompt pairs: the fewest pairs of ``runs``, minus one."""
    return min(r.config.n_pairs for r in runs) - 1


def _check_pair(a: Result, b: Result, differ: set[str]) -> None:
    da, db = a.config.to_dict(), b.config.to_dict()
    other = {k for k in da if da[k] != db.get(k)} - differ - {"train_steps", "train_seq_len", "train_checkpoints"}
    if other:
        raise ValueError(f"the two runs must differ only in {sorted(differ)}; they also differ in {sorted(other)}")


def _runs(x) -> list[Result]:
    """The Results of one design: a :class:`analysis.probing.replicates.Replicates`, a list of Results, or one
    Result."""
    if hasattr(x, "results"):
        return list(x.results)
    return list(x) if isinstance(x, list | tuple) else [x]


def _paired(a, b, differ: set[str]) -> tuple[list[Result], list[Result]]:
    """Two designs' Results paired by seed (the same seeds on both sides), each pair checked by _check_pair."""
    ra, rb = sorted(_runs(a), key=lambda r: r.config.seed), sorted(_runs(b), key=lambda r: r.config.seed)
    if [r.config.seed for r in ra] != [r.config.seed for r in rb]:
        raise ValueError("the two designs must have the same seeds")
    for x, y in zip(ra, rb, strict=True):
        _check_pair(x, y, differ)
    return ra, rb


def bias_claims(plain, biased) -> Ledger:
    """The seed's intervention: cancelling dilution stops the decay early in training (alpha = 0) and
    reverses it after (alpha < 0). ``plain`` and ``biased`` differ only in ``logit_bias``: one Result each,
    or replicates at the same independent seeds (:mod:`analysis.probing.replicates`), whose spread is then the band."""
    plains, biaseds = _paired(plain, biased, {"logit_bias"})
    plain, biased = plains[0], biaseds[0]
    cfg = biased.config
    if cfg.logit_bias != "cancel" or plain.config.logit_bias != "none":
        raise ValueError("bias_claims needs an unbiased run and its cancel-bias twin")
    if cfg.model.attention == "uniform" and cfg.model.norm == "none" and cfg.model.d_mlp == 0:
        raise ValueError(
            "the relay network's bias claim is exact: uniform_bias_offset_constant in the biased run's own ledger"
        )
    led = Ledger(NAME, preset=cfg.preset_name)
    unbiased = float(np.mean([r.scalars["alpha"] for r in plains]))
    note = mean_note(tuple(biaseds) if len(biaseds) > 1 else None)
    if len(biaseds) > 1:
        band = dict(replicates=[r.scalars["alpha"] for r in biaseds])
        why = over_seeds(tuple(biaseds), "biased last-layer alpha")
    else:
        ci = (biased.scalars["alpha_ci_lo"], biased.scalars["alpha_ci_hi"])
        band = dict(measured=biased.scalars["alpha"], ci=ci, coverage=0.95)
        why = "95% percentile bootstrap CI over prompt pairs of the biased run's last-layer alpha" + (
            f"; {TRAINED_ONE_SEED}" if cfg.trained else ""
        )
    if cfg.trained:
        claim_bias_reverses(
            led,
            "bias_reverses_decay",
            band,
            why=why,
            statement=f"trained model with the cancelling bias: alpha < 0 (the offset grows; unbiased alpha "
            f"{unbiased:.3f})",
        )
    else:
        led.judge(
            "bias_stops_decay",
            expected=0.0,
            band=band,
            alternative=unbiased,
            why=why,
            statement=f"untrained {cfg.model.attention} model with the cancelling bias: alpha{note} = 0",
        )
    return led


def trained_vs_untrained_claims(untrained, trained) -> Ledger:
    """The seed's headline: trained models forget faster than untrained ones (same architecture and depth).

    ``untrained`` and ``trained`` are one Result each, or lists of Results over the same weight seeds
    (:func:`weight_seeds`): with two seeds or more the band is the 95% t band of the per-seed differences;
    with one seed (the notebook's: training is the pipeline's cost) it is the two runs' bootstrap SEs over
    prompt pairs, a claim about these two models."""
    un = list(untrained) if isinstance(untrained, list | tuple) else [untrained]
    tr = list(trained) if isinstance(trained, list | tuple) else [trained]
    if len(un) != len(tr) or sorted(r.config.seed for r in un) != sorted(r.config.seed for r in tr):
        raise ValueError("trained_vs_untrained_claims needs the same weight seeds on both sides")
    un, tr = sorted(un, key=lambda r: r.config.seed), sorted(tr, key=lambda r: r.config.seed)
    for u, t in zip(un, tr, strict=True):
        _check_pair(u, t, {"trained"})
        if u.config.trained or not t.config.trained:
            raise ValueError("trained_vs_untrained_claims needs an untrained run and its trained twin")
    cfg = tr[0].config
    led = Ledger(NAME, preset=cfg.preset_name)
    diffs = [t.scalars["alpha"] - u.scalars["alpha"] for u, t in zip(un, tr, strict=True)]
    scale = (
        f"the seed's trained models are large LMs trained to convergence; here L = {cfg.model.n_layers}, "
        f"d = {cfg.model.d_model}, {cfg.train.steps} updates on {cfg.data}; knob: train_steps/n_layers/d_model"
    )
    statement = f"alpha_trained - alpha_untrained > 0 at equal depth L = {cfg.model.n_layers} ({cfg.data} data)"
    if len(diffs) >= 2:
        led.judge(
            "trained_forgets_faster",
            replicates=diffs,
            why=f"95% t band over {len(diffs)} weight seeds of the per-seed difference",
            scale=scale,
            statement=statement,
        )
    else:
        led.judge(
            "trained_forgets_faster",
            measured=diffs[0],
            se=math.hypot(_alpha_se(tr[0]), _alpha_se(un[0])),
            dof=_pairs_dof(un + tr),
            within_run="a claim about these two models (one weight seed each): their alphas are fixed by their "
            "weights; the SE is the bootstrap over prompt pairs",
            why="95% t band of the difference, SE the hypot of each run's SE (its 95% bootstrap CI half-width / "
            f"1.96; independent bootstraps of the same prompts), dof the fewer pairs - 1; {TRAINED_ONE_SEED}",
            scale=scale,
            statement=statement,
        )
    return led


def depth_sweep_claims(results: list) -> Ledger:
    """The relay model's depth law: alpha over a fixed window falls with L as the relay model's does.

    ``results``: untrained runs differing only in ``n_layers`` (one weight seed). Measured: the OLS slope of
    alpha on L (SE propagated from each run's bootstrap CI over prompt pairs); predicted: the same slope of
    the relay model's window alphas. The same law over weight seeds: :func:`depth_law_claims`. Each item
    may instead be replicates at the same independent seeds (:mod:`analysis.probing.replicates`): the slope is then
    fitted per seed and the band is the spread of the per-seed slopes.
    """
    designs = [_runs(x) for x in results]
    results = [d[0] for d in designs]
    if len(results) < 2:
        raise ValueError("depth_sweep_claims needs runs at two depths at least")
    for r in results[1:]:
        _check_pair(results[0], r, {"n_layers"})
    Ls = np.array([r.config.model.n_layers for r in results], dtype=np.float64)
    if len(set(Ls)) != len(Ls):
        raise ValueError(f"depths must differ, got {Ls}")
    w = (Ls - Ls.mean()) / ((Ls - Ls.mean()) ** 2).sum()
    alpha = np.array([r.scalars["alpha"] for r in results])
    se = float(np.sqrt(np.sum(w**2 * np.array([_alpha_se(r) for r in results]) ** 2)))
    relay = np.array(
        [
            th.relay_alpha_window(
                r.config.prompt_len, r.config.model.n_layers, r.scalars["fit_lo"], int(r.scalars["fit_hi"])
            )
            for r in results
        ]
    )
    led = Ledger(NAME, preset=results[0].config.preset_name)
    if len(designs[0]) > 1:
        paired = [_paired(designs[0], d, {"n_layers"}) for d in designs[1:]]
        per_depth = [paired[0][0]] + [b for _, b in paired]  # (depth) lists of Results, seeds in order
        alphas = np.array([[r.scalars["alpha"] for r in d] for d in per_depth])  # (depth, seed)
        band = dict(replicates=[float(w @ alphas[:, j]) for j in range(alphas.shape[1])])
        why = over_seeds(tuple(per_depth[0]), "OLS slope of alpha on L (fitted per seed)")
    else:
        band = dict(measured=float(w @ alpha), se=se, dof=_pairs_dof(results))
        why = (
            "95% t band of the OLS slope (dof: the fewest prompt pairs - 1), each alpha's SE its 95% bootstrap "
            "CI half-width / 1.96; over weight seeds: alpha_falls_with_depth of depth_law_claims"
        )
    led.judge(
        "alpha_depth_slope_matches_relay",
        expected=float(w @ relay),
        band=band,
        alternative=0.0,
        why=why,
        statement=f"d alpha / dL over L = {[int(x) for x in Ls]} equals the relay model's "
        f"({float(w @ relay):.3f} per layer)",
    )
    return led


SEED_UNTRAINED = (0.2, 0.5)  # the seed's alpha range for untrained models (000#1)


def depth_law(runs: list[Result]) -> xr.Dataset:
    """Alpha against depth over weight seeds: ``runs`` are untrained runs differing only in ``n_layers``
    and ``seed`` (every depth with the same seeds, at least two; :func:`weight_seeds` lists independent
    ones). Per depth: the seed mean of the last layer's alpha, its standard error from the seed-to-seed
    spread and the 95% t half-width, and the relay model's and the bound shape's alpha over the same fit
    window."""
    if not runs:
        raise ValueError("depth_law needs runs")
    for r in runs[1:]:
        _check_pair(runs[0], r, {"n_layers", "seed"})
    Ls = sorted({r.config.model.n_layers for r in runs})
    seeds = sorted({r.config.seed for r in runs})
    by = {(r.config.model.n_layers, r.config.seed): r for r in runs}
    missing = [(L, s) for L in Ls for s in seeds if (L, s) not in by]
    if missing or len(seeds) < 2:
        raise ValueError(f"depth_law needs every depth at the same >= 2 seeds; missing (n_layers, seed): {missing}")
    grid = {
        k: np.array([[by[L, s].scalars[k] for s in seeds] for L in Ls])
        for k in ("alpha", "alpha_ci_lo", "alpha_ci_hi", "max_logit")
    }
    r0 = runs[0]
    P, lo, hi = r0.config.prompt_len, r0.scalars["fit_lo"], int(r0.scalars["fit_hi"])
    a = grid["alpha"]
    stats = [mean_se(row) for row in a]
    se = np.array([x.se for x in stats])
    k95 = t_multiple(len(seeds) - 1)  # 95% two-sided for a mean of n_seeds draws
    data = {k: (("layers", "seed"), v) for k, v in grid.items()}
    data.update(
        alpha_mean=("layers", np.array([x.mean for x in stats])),
        alpha_se=("layers", se),
        alpha_half95=("layers", k95 * se),
        relay_alpha=("layers", np.array([by[L, seeds[0]].scalars["alpha_relay_window"] for L in Ls])),
        bound_alpha=("layers", np.array([th.bound_alpha_window(P, L, lo, hi) for L in Ls])),
    )
    return xr.Dataset(
        data,
        coords={"layers": Ls, "seed": seeds},
        attrs={"fit_lo": lo, "fit_hi": hi, "prompt_len": P, "preset": r0.config.preset_name, "k95": k95},
    )


def depth_law_claims(law: xr.Dataset) -> Ledger:
    """The relay model across depth (000#1), over :func:`depth_law`'s weight seeds (each claim's band the 95% t
    band of its per-seed replicates): alpha falls with L (the per-seed OLS slope on L); at each depth it
    equals the relay model's alpha over the same window (alternative alpha = 1, dilution alone); and where
    the seed mean enters the seed's untrained range."""
    Ls = law["layers"].values.astype(np.float64)
    n_seeds = law.sizes["seed"]
    per_seed = law["alpha"].transpose("layers", "seed").values  # (layers, seed)
    mean, relay = law["alpha_mean"].values, law["relay_alpha"].values
    seeds_why = (
        f"95% t band over {n_seeds} weight seeds (untrained models: each seed is one forward pass per prompt pair "
        "and depth; the seed count is the notebook's)"
    )
    window = f"window [{law.attrs['fit_lo']:g}, {law.attrs['fit_hi']:g}]"
    led = Ledger(NAME, preset=law.attrs["preset"])
    if len(Ls) >= 2:
        w = (Ls - Ls.mean()) / ((Ls - Ls.mean()) ** 2).sum()
        led.judge(
            "alpha_falls_with_depth",
            replicates=w @ per_seed,  # the OLS slope on L of each seed's alphas
            why=f"{seeds_why}, of each seed's OLS slope of alpha on L",
            statement=f"untrained pre-LN softmax: d alpha / dL < 0 over L = {[int(x) for x in Ls]} ({window})",
        )
    for i, L in enumerate(Ls.astype(int)):
        name = f"alpha_vs_relay_L{L}"
        if abs(relay[i] - 1.0) < 1e-12:
            led.judge(name, reason="one layer: the relay model's alpha is 1, the alternative itself")
            continue
        led.judge(
            name,
            replicates=per_seed[i],
            expected=float(relay[i]),
            alternative=1.0,
            why=f"{seeds_why}, of the last layer's alpha",
            statement=f"L = {L}: seed-mean alpha equals the relay model's {relay[i]:.3f} ({window})",
        )
    lo, hi = SEED_UNTRAINED
    inside = [int(L) for L, m in zip(Ls, mean, strict=True) if lo <= m <= hi]
    deep = int(Ls[-1])
    relay_outside = not lo <= relay[-1] <= hi
    diag = {f"alpha_vs_relay_L{deep}": "pass"} if relay_outside and deep > 1 else None
    led.judge(
        "alpha_untrained_seed_range_deepest",
        measured=float(mean[-1]),
        lo=lo,
        hi=hi,
        why="the seed's reported range for untrained models (large LMs, long contexts)",
        diagnosed_by=diag,
        diagnosis=(
            f"the network follows the relay model, whose alpha at L = {deep} over this "
            f"window ({relay[-1]:.3f}) lies outside the range"
        )
        if diag
        else "",
        statement=f"untrained, L = {deep}: seed-mean alpha in the seed's range [{lo}, {hi}] (depths inside: "
        f"{inside or 'none'})",
    )
    return led


def relay_model_claims(prompt_len: int, t_max: int, preset: str) -> Ledger:
    """The relay model's closed form (exact rationals) and its asymptotic expansion's error rate."""
    led = Ledger(NAME, preset=preset)
    wrong = sum(
        th.relay_offsets_exact(P, L, 20)[t - 1] != th.relay_offset_closed_form_exact(P, L, t)
        for P in (1, 3)
        for L in (1, 2, 3)
        for t in range(1, 21)
    )
    led.judge(
        "relay_closed_form_exact",
        measured=float(wrong),
        expected=0.0,
        why="exact rational arithmetic: no rounding",
        statement="closed form (harmonic numbers) == recursion exactly: mismatches over P in {1,3}, L <= 3, t <= 20",
    )
    t = np.unique(np.geomspace(prompt_len + 1, t_max, 200).astype(int))
    worst = 0.0
    for L in range(1, 5):
        d = th.relay_offsets(prompt_len, L, t_max)[t - 1]
        asym = th.relay_asymptotic(prompt_len, L, t)
        worst = max(worst, float(np.max(np.abs(d / asym - 1) * t / (L * (L + prompt_len)))))
    led.judge(
        "relay_asymptotic_rate",
        measured=worst,
        bound=1.0,
        why="each of <= L harmonic factors errs by <= (L+P)/t relative",
        statement="|Delta/asymptotic - 1| <= L (L + P)/t for L <= 4 (measured: max of the ratio of the two)",
    )
    return led
