"""Part ``distances``: the last-token distance of the pairs against the length, and its decay exponent against
the derived rate (Barbero et al. 2024; theory module, items 1-3, 6, 7), per layer, with learned positions as the
no-decay case."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from analysis.claims.evidence import t_multiple
from analysis.claims.fitting import bootstrap_power_law
from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from analysis.probing.parts import Context
from analysis.theory import representational_collapse as th
from probes.representational_collapse.bands import band, bases_dof, mean_over, seeds_note, why_band
from probes.representational_collapse.config import BIDIRECTIONAL, SEED, SOURCE, Config
from probes.representational_collapse.models import Models
from probes.representational_collapse.sequences import gmean, lengths, measure_distances

DESCRIPTION = "the pair distance against the length in every dtype, and its decay exponent per layer against the rate"


@dataclass(frozen=True)
class Distances:
    """What the precision and linear-stack parts read: the length grid, the raw measurements
    (:func:`measure_distances`), the float64 geometric-mean norm (n,) and distance (dtype, n), and the main fit."""

    ns: np.ndarray
    m: dict
    norm: np.ndarray
    dist: np.ndarray
    fit: Any


PROVIDES = (Distances,)
FIELDS = (
    "family",
    "max_len",
    "min_len",
    "n_lengths",
    "n_bases",
    "early_position",
    "separator_every",
    "dtypes",
    "fit_lo",
    "n_boot",
)


def half_window_drift(
    n: np.ndarray, Y: np.ndarray, window: tuple[float, float], n_boot: int, rng: np.random.Generator
) -> tuple[float, float]:
    """``(alpha_upper - alpha_lower, bootstrap SE)``: the exponent fitted on the upper half of ``window``
    (in ``ln n``) minus the lower half's, on the geometric mean over the rows of ``Y`` (samples, n); the
    SE from replicates that draw the rows once for both halves. ``nan`` with fewer than 2 points a half."""
    mid = math.sqrt(window[0] * window[1])
    lower = (n >= window[0]) & (n <= mid)
    upper = (n >= mid) & (n <= window[1])
    if lower.sum() < 2 or upper.sum() < 2 or not np.all(Y > 0):
        return math.nan, math.nan
    logY = np.log(Y)
    draws = rng.integers(0, Y.shape[0], size=(n_boot, Y.shape[0]))
    Z = np.concatenate([logY.mean(0)[None], logY[draws].mean(axis=1)])  # (1 + n_boot, N)

    def alpha(mask):
        x = np.log(n[mask])
        dx = x - x.mean()
        return -(Z[:, mask] - Z[:, mask].mean(1, keepdims=True)) @ dx / (dx @ dx)

    drift = alpha(upper) - alpha(lower)
    return float(drift[0]), float(drift[1:].std(ddof=1))


def fit_rates(config: Config, ns: np.ndarray, m: dict, pos: str, attention: str) -> dict:
    """The power laws of the float64 distances: the main fit ``fit`` (``None`` when a distance is 0), one fit
    per layer ``depth_fits`` with its half-window ``drift`` (L, 2) and the predicted ``depth_pred`` (the
    effective float floor is :func:`probes.representational_collapse.precision.floor_fits`).

    Every fit has its own bootstrap stream, derived from ``config.seed``."""
    per, L = m["per_dtype"], m["layer_distance"].shape[1]
    D64 = per["float64"]["distance"]  # (S, N)
    rng = np.random.default_rng(config.seed + 104729)
    nf = ns.astype(np.float64)
    window = (config.fit_lo, float(config.max_len))
    fit = None
    if np.all(D64 > 0):
        fit = bootstrap_power_law(nf, D64, window, n_boot=config.n_boot, rng=rng, n_points=len(ns))
    # depth: a fit per layer on its own bootstrap stream (the main fit's stream is unchanged), and the drift of
    # the exponent from the lower to the upper half of the window (a finite-n correction shrinks with n)
    LD = m["layer_distance"]  # (S, L, N)
    depth_fits, drift = [], np.full((L, 2), math.nan)
    for layer in range(L):
        ok = np.all(LD[:, layer] > 0)
        depth_fits.append(
            bootstrap_power_law(
                nf,
                LD[:, layer],
                window,
                n_boot=config.n_boot,
                n_points=len(ns),
                rng=np.random.default_rng([config.seed, 7, layer]),
            )
            if ok
            else None
        )
        drift[layer] = half_window_drift(
            nf, LD[:, layer], window, config.n_boot, np.random.default_rng([config.seed, 13, layer])
        )
    grid = nf[(nf >= window[0]) & (nf <= window[1])]
    depth_pred = th.predicted_depth_slopes(
        config.family, pos, L, grid, config.separator_every > 0, attention, config.early_position
    )
    return {"fit": fit, "depth_fits": depth_fits, "drift": drift, "depth_pred": depth_pred}


def measure(ctx: Context) -> None:
    """The pair distances over the length grid in every dtype, the float64 power laws (main and per layer) and the
    predicted exponents. Puts the :class:`Distances` for the parts that need them."""
    config, shared = ctx.config, ctx.get(Models)
    dts, models = shared.dtypes, shared.models
    L = models["float64"].n_layers
    ns = lengths(config)
    m = measure_distances(models, config, ns, progress=ctx.progress, vocab=shared.vocab)
    per = m["per_dtype"]
    norm = np.exp(np.log(per["float64"]["norm"]).mean(0))  # (N,) geometric mean |h|
    dist = np.stack([gmean(per[dt]["distance"]) for dt in dts])  # (dtype, N)
    attention = config.model.attention if ctx.own_model else "softmax"
    predicted = th.predicted_slope(
        config.family, shared.pos, separators=config.separator_every > 0, attention=attention
    )
    rates = fit_rates(config, ns, m, shared.pos, attention)
    fit, depth_fits = rates["fit"], rates["depth_fits"]
    ctx.put(Distances(ns=ns, m=m, norm=norm, dist=dist, fit=fit))
    slope_ci = fit.alpha_ci if fit else (math.nan, math.nan)
    ctx.coords.update(dtype=dts, n=ns, sample=np.arange(config.n_bases), end=["lo", "hi"], layer=np.arange(1, L + 1))
    ctx.data.update(
        distance=(("dtype", "n"), dist),
        distance_samples=(("sample", "dtype", "n"), np.stack([per[dt]["distance"] for dt in dts], axis=1)),
        layer_distance=(("layer", "n"), gmean(m["layer_distance"])),
        norm=(("n",), norm),
        slope_ci=(("end",), np.array(slope_ci)),
        layer_slope=(("layer",), np.array([f.alpha if f else math.nan for f in depth_fits])),
        layer_slope_se=(("layer",), np.array([(f.alpha_boot_se or 0.0) if f else math.nan for f in depth_fits])),
        layer_slope_predicted=(("layer",), rates["depth_pred"]),
        layer_drift=(("layer",), rates["drift"][:, 0]),
        layer_drift_se=(("layer",), rates["drift"][:, 1]),
    )
    ctx.scalars.update(
        slope=fit.alpha if fit else math.nan,
        slope_ci_lo=slope_ci[0],
        slope_ci_hi=slope_ci[1],
        predicted_slope=predicted,
        slope_se=(fit.alpha_boot_se or 0.0) if fit else math.nan,
        fit_lo=float(config.fit_lo),
        fit_hi=float(config.max_len),
        fit_rms_residual=fit.rms_residual if fit else math.nan,
        distance_at_max_len=float(dist[0, -1]),
        causal=float(bool(models["float64"].causal)),
    )


def claims(led: Ledger, rs: tuple[Result, ...]) -> None:
    """The decay rate at the last layer and the first, and no decay with learned absolute positions."""
    claim_rate(led, rs)
    claim_learned_positions(led, rs)


def rate_alternative(config: Config, pos: str, attention: str, L: int) -> tuple[float, str]:
    """The competing decay law for the distance at depth ``L`` (an exponent and its hypothesis)."""
    if config.family == "counting" and config.separator_every:
        return 2.0, "separators change nothing: the counting rate k^-2 of one repeated prefix state"
    if config.family == "counting":
        return 1.0, "the added '1' moves the mean by O(1/k) as in the repeat family: k^-1"
    if config.family == "repeat_last" and pos == "rope":
        return (
            (0.5, "RoPE's shifted offsets dominate as under softmax: n^-1/2")
            if attention == "uniform"
            else (1.0, "RoPE leaves the position-free rate n^-1")
        )
    if config.family == "repeat_last":
        return 2.0, "the counting family's rate n^-2"
    if L >= 2:
        return 1.0, "no relay through depth: the one-layer rate n^-1 at every depth"
    return 0.0, "no decay: an early token keeps its influence on the last position"


def _slope_claim(
    led: Ledger, rs: tuple[Result, ...], name: str, layer: int, alt: tuple[float, str], requires_full: bool
) -> None:
    """The fitted exponent at ``layer`` against the predicted one, and where it misses, the drift of the
    exponent across the window that diagnoses a finite-n correction."""
    r = rs[0]
    d, config = r.data, r.config
    sel = {"layer": layer}
    measured = [float(x.data["layer_slope"].sel(sel)) for x in rs]
    want = float(d["layer_slope_predicted"].sel(sel))
    drift = [float(x.data["layer_drift"].sel(sel)) for x in rs]
    if bad := sum(not math.isfinite(m) for m in measured):
        led.judge(
            name,
            reason=f"a zero distance at layer {layer}{seeds_note(rs, bad)} (bitwise-equal float64 states): no "
            "power law to fit",
        )
        return
    dof = bases_dof(r)
    mean, half = mean_over(rs, measured)
    if len(rs) == 1:
        half = t_multiple(dof) * float(d["layer_slope_se"].sel(sel))
    diag = f"{name}_drifts_toward_prediction"
    if abs(mean - want) > half and all(math.isfinite(x) for x in drift):
        led.judge(
            diag,
            sign=1 if want > mean else -1,
            band=band(rs, drift, float(d["layer_drift_se"].sel(sel)), dof, "bases (one draw of them for both halves)"),
            why=why_band(
                rs,
                "95% t band (n_bases - 1 dof) of the bootstrap SE of the difference (one draw of the samples for "
                "both halves)",
            ),
            requires_full=requires_full,
            statement=f"layer {layer}: the exponent fitted on the window's upper half is nearer the "
            f"prediction {want:.3g} than the lower half's (upper - lower, toward it)",
        )
    where = (
        f"{config.family} (pos {r.meta.get('pos_assumed')}, sep {config.separator_every}), layer {layer}: "
        f"decay exponent of the float64 pair distance = {want:.3g}"
    )
    led.predict(
        name,
        expected=want,
        **band(rs, measured, float(d["layer_slope_se"].sel(sel)), dof),
        alternative=alt[0],
        hypothesis=alt[1],
        source=f"{SOURCE}; derivation (theory module, items 1-3, 6, 7)",
        seed=SEED,
        why=why_band(
            rs, "95% t band (n_bases - 1 dof) of the bootstrap SE of the fitted exponent (resampling the bases)"
        ),
        requires_full=requires_full,
        statement=where,
        figure="rc_depth" if layer == 1 else "rc_distance",
        diagnosed_by={diag: "pass"} if diag in led else None,
        diagnosis="the exponent moves toward the prediction as n grows: the window is pre-asymptotic"
        if diag in led
        else "",
    )


def claim_rate(led: Ledger, rs: tuple[Result, ...]) -> None:
    """Barbero et al.: the last-token distance decays as a power of n, at the predicted rate at every depth."""
    r = rs[0]
    config, s, L = r.config, r.scalars, int(r.data["layer"].size)
    names = ["slope_matches_prediction"] + (["slope_layer1"] if L >= 2 else [])
    if not s["causal"]:
        for name in names:
            led.judge(name, source=f"{SOURCE}; derivation (theory module)", reason=BIDIRECTIONAL)
        return
    if not math.isfinite(s["predicted_slope"]):
        return  # learned positions: claim_learned_positions
    own = r.meta.get("own_model", True)
    attention = config.model.attention if own else "softmax"
    pos = r.meta.get("pos_assumed", config.model.pos)
    requires_full = config.model.attention != "uniform" or not own  # the softmax rates are asymptotic: the long window
    _slope_claim(led, rs, names[0], L, rate_alternative(config, pos, attention, L), requires_full)
    if L >= 2:
        _slope_claim(led, rs, names[1], 1, rate_alternative(config, pos, attention, 1), requires_full)


def claim_learned_positions(led: Ledger, rs: tuple[Result, ...]) -> None:
    """Learned absolute positions: the read-out position differs between the two sequences: no decay."""
    r = rs[0]
    config, s = r.config, r.scalars
    pos = r.meta.get("pos_assumed", config.model.pos)
    slopes = [x.scalars["slope"] for x in rs]
    if not (s["causal"] and pos == "learned" and config.family != "early_token"):
        return
    if not all(math.isfinite(v) for v in slopes):
        return
    free = th.predicted_slope(config.family, "none", config.separator_every > 0, config.model.attention)
    led.judge(
        "learned_positions_no_collapse",
        expected=0.0,
        band=band(rs, slopes, s["slope_se"], bases_dof(r)),
        alternative=free,
        hypothesis=f"positions do not matter: the position-free rate {free:g}",
        why=why_band(
            rs, "95% t band (n_bases - 1 dof) of the bootstrap SE of the fitted exponent (resampling the bases)"
        ),
        requires_full=config.trained or not r.meta.get("own_model", True),
        statement=f"{config.family} with learned absolute positions: the distance does not decay (alpha = 0)",
    )
