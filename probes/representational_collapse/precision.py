"""Part ``precision``: where each low-precision format stops resolving the pair (the float64 distance below
eps|h|, Barbero et al. 2024), what the outputs do after it, and the effective float floor (the rounding model of
the theory module)."""

from __future__ import annotations

import math

import numpy as np

from analysis.claims.fitting import bootstrap_power_law
from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from analysis.probing.parts import Context
from analysis.theory import representational_collapse as th
from probes.representational_collapse.bands import band, bases_dof, claim_positive_mean, seeds_note, why_band
from probes.representational_collapse.config import Config
from probes.representational_collapse.distances import Distances
from probes.representational_collapse.models import Models

DESCRIPTION = "each format's collapse length, its outputs after it, and the effective float floor"
FIELDS = ("dtypes", "fit_lo", "n_boot")
NEEDS = ("distances",)


def precision_measures(ns: np.ndarray, per: dict, dist: np.ndarray, norm: np.ndarray, dts: list[str], fit) -> dict:
    """Per dtype: the measured ``collapse`` length, the ``extrap``olated one of the fitted power law, the
    median ``rel_error`` of the distance against float64's and the median ``divergence`` (dtype, N)."""
    slope = fit.alpha if fit else math.nan
    collapse = np.array([th.collapse_length(ns, dist[0], norm, dt) for dt in dts])
    # where the fitted power law crosses eps |h| (|h| at max_len): the extrapolated collapse length
    # (in logs, capped at e^709 ~ the largest float64: a near-zero slope extrapolates beyond any length)
    extrap = np.array(
        [math.nan]
        + [
            float(np.exp(min(np.log(ns[-1]) + np.log(dist[0, -1] / th.resolution(dt, norm[-1])) / slope, 709.0)))
            if fit and slope > 0
            else math.nan
            for dt in dts[1:]
        ]
    )
    # how far each dtype's distance is from the float64 one (median over samples): ~0 while resolved
    D64 = per["float64"]["distance"]
    rel_error = np.stack([np.median(np.abs(per[dt]["distance"] - D64) / D64, axis=0) for dt in dts])
    divergence = np.stack([np.median(per[dt]["divergence"], axis=0) for dt in dts])
    return {"collapse": collapse, "extrap": extrap, "rel_error": rel_error, "divergence": divergence}


def floor_fits(config: Config, ns: np.ndarray, per: dict, norm: np.ndarray, dts: list[str]) -> dict:
    """The effective float floor: per low dtype, the power law of its divergence from float64 (relative to
    |h|) against n, on its own bootstrap stream derived from ``config.seed`` (``{}`` entry missing where a
    divergence in the window is 0)."""
    nf = ns.astype(np.float64)
    window = (config.fit_lo, float(config.max_len))
    fits = {}
    for i, dt in enumerate(dts[1:], start=1):
        Dv = per[dt]["divergence"]
        if np.all(Dv[:, nf >= window[0]] > 0):
            fits[dt] = bootstrap_power_law(
                nf,
                Dv / norm,
                window,
                n_boot=config.n_boot,
                n_points=len(ns),
                rng=np.random.default_rng([config.seed, 11, i]),
            )
    return fits


def measure(ctx: Context) -> None:
    """Each format's resolution eps|h|, its collapse length (measured and extrapolated), what its outputs do once
    collapsed, its distance's error against float64's and its divergence from float64 with the floor's exponent."""
    config, dts, d = ctx.config, ctx.get(Models).dtypes, ctx.get(Distances)
    ns, dist, norm = d.ns, d.dist, d.norm
    per = d.m["per_dtype"]
    prec = precision_measures(ns, per, dist, norm, dts, d.fit)
    ctx.data.update(
        resolution=(("dtype", "n"), np.stack([th.resolution(dt, norm) for dt in dts])),
        divergence=(("dtype", "n"), prec["divergence"]),
        argmax_equal=(("dtype", "n"), np.stack([per[dt]["argmax_equal"].mean(0) for dt in dts])),
        identical=(("dtype", "n"), np.stack([per[dt]["identical"].mean(0) for dt in dts])),
        rel_error=(("dtype", "n"), prec["rel_error"]),
        collapse_n=(("dtype",), prec["collapse"]),
        collapse_n_extrapolated=(("dtype",), prec["extrap"]),
    )
    for dt, c, e in zip(dts, prec["collapse"], prec["extrap"], strict=True):
        ctx.scalars[f"collapse_n_{dt}"] = float(c)
        if dt != "float64":
            ctx.scalars[f"collapse_n_extrapolated_{dt}"] = float(e)
        if dt != "float64" and math.isfinite(c):  # the outputs in that dtype once collapsed (samples x lengths)
            after = ns >= c
            ctx.scalars[f"argmax_equal_after_collapse_{dt}"] = float(per[dt]["argmax_equal"][:, after].mean())
            ctx.scalars[f"identical_after_collapse_{dt}"] = float(per[dt]["identical"][:, after].mean())
    for dt, f in floor_fits(config, ns, per, norm, dts).items():
        ctx.scalars[f"floor_exponent_{dt}"] = -f.alpha  # divergence ~ n^(+beta)
        ctx.scalars[f"floor_exponent_se_{dt}"] = f.alpha_boot_se or 0.0


def claims(led: Ledger, rs: tuple[Result, ...]) -> None:
    """Per low-precision format: the floor's exponent and the loss of resolution past eps|h|."""
    for dt in rs[0].data["dtype"].values[1:]:
        claim_floor(led, rs, str(dt))
        claim_unresolved(led, rs, str(dt))


def claim_floor(led: Ledger, rs: tuple[Result, ...], dt: str) -> None:
    """The effective float32 floor (rounding model of the theory module): the dtype's pair difference
    against float64's is n-independent for random bases and grows (a + b sqrt(n)) for the coherent counting prefix."""
    r = rs[0]
    s, config = r.scalars, r.config
    if dt != "float32" or f"floor_exponent_{dt}" not in s:
        return  # coarser formats collapse inside the window
    betas = [x.scalars[f"floor_exponent_{dt}"] for x in rs]
    why = why_band(
        rs,
        "95% t band (n_bases - 1 dof) of the bootstrap SE of the fitted exponent of "
        "|(h_a - h_b) - (h_a - h_b)_64| / |h| against n",
    )
    spread = band(rs, betas, s[f"floor_exponent_se_{dt}"], bases_dof(r))
    name = f"floor_{dt}_exponent"
    if config.family == "counting":  # with separators the prefix is two-state: still coherent
        statement = f"{dt}, coherent counting prefix: the floor grows with n (a + b sqrt(n): beta > 0)"
        led.judge(name, sign=1, band=spread, why=why, statement=statement)
        return
    led.judge(  # random bases: the declared hypothesis (an n-independent floor) is the prediction here
        name,
        expected=0.0,
        band=spread,
        alternative=0.5,
        hypothesis="coherent roundings as for the counting prefix: a + b sqrt(n), local beta up to 1/2",
        why=why,
        statement=f"{dt}, random bases: the floor is n-independent (beta = 0)",
    )


def _unresolved_shift(r: Result, dt: str) -> np.ndarray | None:
    """Per sample: mean ln relative error of ``dt`` against float64 at n >= collapse_n minus at n < collapse_n
    (``None`` without a collapse inside the window, or with no resolved length before it)."""
    d = r.data
    c = float(d["collapse_n"].sel(dtype=dt))
    after = d["n"].values >= c
    if not math.isfinite(c) or after.all():
        return None
    D = d["distance_samples"]
    err = np.abs(D.sel(dtype=dt).values - D.sel(dtype="float64").values) / D.sel(dtype="float64").values
    le = np.log(np.maximum(err, 1e-300))  # (samples, n); an exact match counts as a tiny error
    return le[:, after].mean(1) - le[:, ~after].mean(1)


def claim_unresolved(led: Ledger, rs: tuple[Result, ...], dt: str) -> None:
    """Barbero et al.: below the format's resolution eps|h| the format no longer resolves the pair: its
    distance stops tracking float64's (relative error after the crossing above the error before it)."""
    d = rs[0].data
    name = f"collapse_{dt}_unresolved"
    n = d["n"].values
    collapse = [float(x.data["collapse_n"].sel(dtype=dt)) for x in rs]
    if bad := sum(not math.isfinite(c) for c in collapse):
        ratio = float(d["distance"].sel(dtype="float64")[-1] / d["resolution"].sel(dtype=dt)[-1])
        n_star = float(d["collapse_n_extrapolated"].sel(dtype=dt))
        led.judge(
            name,
            reason=f"no collapse in {dt} up to n = {int(n[-1])}{seeds_note(rs, bad)}: the float64 distance there "
            f"is {ratio:.3g} eps|h|; the fitted power law puts the crossing at n ~ {n_star:.3g}"
            + (" (first seed)" if len(rs) > 1 else ""),
        )
        return
    shifts = [_unresolved_shift(x, dt) for x in rs]
    if bad := sum(x is None for x in shifts):
        led.judge(
            name,
            reason=f"collapsed from the shortest length on{seeds_note(rs, bad)}: no resolved length to compare with",
        )
        return
    claim_positive_mean(
        led,
        name,
        rs,
        shifts,
        "samples",
        "samples of the per-sample shift",
        statement=f"{dt}: mean ln(|D_{dt} - D_64| / D_64) over n >= collapse_n minus over n < collapse_n is positive",
    )
