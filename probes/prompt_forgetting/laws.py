"""Part ``offsets``: the offsets' power laws per layer and position (alpha, the local exponent), the theorem's bound
and its constants, the relay model's prediction, and the held-out losses of an own language model."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import xarray as xr

from analysis.claims.fitting import PowerLawFit, bootstrap_power_law, local_exponent
from analysis.probing.parts import Context
from analysis.theory import prompt_forgetting as th
from analysis.zoo import protocol
from probes.prompt_forgetting.config import Config
from probes.prompt_forgetting.models import Prepared, language_losses
from probes.prompt_forgetting.offsets import measure_offsets, relay_matrix_limit, relay_prediction


def bound_constants(t: np.ndarray, ratio: np.ndarray, fit_lo: float) -> dict[str, np.ndarray]:
    """Per layer: the smallest ``C`` with ``D <= C P (ln t)^(l-1)/t`` on ``[fit_lo, N]`` (``bound_constant``),
    the ratio's geometric mean over the last octave ``[N/2, N]`` (``bound_plateau``) and the OLS slope of
    ``ln ratio`` on ``ln t`` over that octave (``bound_plateau_slope``; 0 for a true plateau).
    """
    win = t >= fit_lo
    last = t >= t[-1] / 2
    lt = np.log(t[last])
    lr = np.log(ratio[:, last])  # (L, n_last)
    slope = ((lr - lr.mean(axis=1, keepdims=True)) * (lt - lt.mean())).sum(axis=1) / ((lt - lt.mean()) ** 2).sum()
    return {
        "bound_constant": ratio[:, win].max(axis=1),
        "bound_plateau": np.exp(lr.mean(axis=1)),
        "bound_plateau_slope": slope,
    }


def plateau_slope_ci(
    t: np.ndarray, D: np.ndarray, shape: np.ndarray, *, n_boot: int, rng: np.random.Generator, level: float = 0.95
) -> np.ndarray:
    """(L, 2): percentile bootstrap CI over pairs of ``bound_plateau_slope`` (the last octave's slope).

    ``D`` (n, L, T) per pair, ``shape`` (L, T). The slope of ``ln(gm D / shape)`` on ``ln t`` is linear in
    ``ln D``, so each replicate's slope is the mean of the resampled pairs' own slopes.
    """
    last = t >= t[-1] / 2
    lt = np.log(t[last])
    w = (lt - lt.mean()) / ((lt - lt.mean()) ** 2).sum()
    per_pair = (np.log(D[:, :, last]) - np.log(shape[None, :, last])) @ w  # (n, L)
    draws = rng.integers(0, per_pair.shape[0], size=(n_boot, per_pair.shape[0]))
    boot = per_pair[draws].mean(axis=1)  # (n_boot, L)
    q = (1.0 - level) / 2.0
    return np.quantile(boot, [q, 1.0 - q], axis=0).T


def offset_laws(config: Config, m: dict, P: int, N: int) -> dict:
    """The decay of the offsets ``m["distance"]`` (n, L, T) against the relay model and the bound.

    Per layer: power-law fits of the offsets and of the relative offsets (``fits``, ``fits_rel``), the
    local exponent on ``t_loc``, the relay model's offsets and local exponent, the bound's shape and
    local exponent, the ratio to the bound with its constants and the bootstrap CI of its plateau slope.
    The fits and the CI draw from one bootstrap stream, in that order.
    """
    L = m["distance"].shape[1]
    t = np.arange(P + 1, N + 1, dtype=np.float64)  # absolute positions of the continuation
    D = m["distance"]  # (n, L, T)
    rel = D / m["norm"]
    gm = np.exp(np.log(D).mean(axis=0))  # (L, T) geometric mean over pairs
    rng = np.random.default_rng(config.seed + 104729)
    window = (config.fit_lo, float(N))
    fits = [power_law(t, D[:, layer], window, n_boot=config.n_boot, rng=rng) for layer in range(L)]
    fits_rel = [power_law(t, rel[:, layer], window, n_boot=config.n_boot, rng=rng) for layer in range(L)]
    t_loc_range = (max(config.fit_lo / 2, P + 2.0), float(N))
    t_loc = None
    alpha_loc = []
    for layer in range(L):
        t_loc, al = local_exponent_on_grid(t, gm[layer], t_loc_range)
        alpha_loc.append(al)
    depth = np.arange(1, L + 1)
    relay = np.stack([th.relay_offsets(P, int(k), N)[P:] for k in depth])  # (L, T)
    shape = np.stack([th.bound_shape(P, int(k), t) for k in depth])  # (L, T)
    bound_ratio = gm / shape
    return {
        "t": t,
        "window": window,
        "gm": gm,
        "gm_rel": np.exp(np.log(rel).mean(axis=0)),
        "fits": fits,
        "fits_rel": fits_rel,
        "t_loc": t_loc,
        "alpha_loc": alpha_loc,
        "relay": relay,
        "relay_loc": np.stack([local_exponent_on_grid(t, r, t_loc_range)[1] for r in relay]),
        "bound_loc": np.stack([th.bound_local_exponent(int(k), t_loc) for k in depth]),
        "bound_ratio": bound_ratio,
        "consts": bound_constants(t, bound_ratio, config.fit_lo),
        "slope_ci": plateau_slope_ci(t, D, shape, n_boot=config.n_boot, rng=rng),
        "relay_consts": bound_constants(t, relay / shape, config.fit_lo),
    }


def offsets_dataset(config: Config, m: dict, law: dict, relay_pred, limit) -> xr.Dataset:
    """The result's arrays: the measured offsets and prompt shares beside the laws of :func:`offset_laws`,
    and with an exact relay prediction (``relay_pred`` (n, L, T), ``limit`` (L,); else ``None``) that too."""
    L, T = m["distance"].shape[1:]
    fits, fits_rel, depth = law["fits"], law["fits_rel"], np.arange(1, L + 1)
    share = np.nanmean(m["share"], axis=0) if np.isfinite(m["share"]).any() else np.full((L, T), np.nan)
    share_max = np.nanmax(m["share_max"], axis=0) if np.isfinite(m["share_max"]).any() else np.full((L, T), np.nan)
    coords = {
        "layer": np.arange(L),
        "t": law["t"],
        "pair": np.arange(config.n_pairs),
        "t_local": law["t_loc"],
        "end": ["lo", "hi"],
    }
    data = xr.Dataset(
        {
            "distance": (("layer", "t"), law["gm"]),
            "distance_rel": (("layer", "t"), law["gm_rel"]),
            "distance_pairs": (("pair", "layer", "t"), m["distance"]),
            "alpha": (("layer",), np.array([f.alpha for f in fits])),
            "alpha_ci": (("layer", "end"), np.array([f.alpha_ci for f in fits])),
            "alpha_rel": (("layer",), np.array([f.alpha for f in fits_rel])),
            "alpha_rel_ci": (("layer", "end"), np.array([f.alpha_ci for f in fits_rel])),
            "log_c": (("layer",), np.array([f.log_c for f in fits])),
            "alpha_local": (("layer", "t_local"), np.stack(law["alpha_loc"])),
            "relay": (("layer", "t"), law["relay"]),
            "relay_local": (("layer", "t_local"), law["relay_loc"]),
            "bound_local": (("layer", "t_local"), law["bound_loc"]),
            "bound_ratio": (("layer", "t"), law["bound_ratio"]),
            **{k: (("layer",), v) for k, v in law["consts"].items()},
            "bound_plateau_slope_ci": (("layer", "end"), law["slope_ci"]),
            "relay_bound_plateau": (("layer",), law["relay_consts"]["bound_plateau"]),
            "relay_limit": (("layer",), np.array([th.relay_limit(int(k)) for k in depth])),
            "prompt_share": (("layer", "t"), share),
            "prompt_share_max": (("layer", "t"), share_max),
            "max_logit_pairs": (("pair",), m["max_logit"]),
            "min_prenorm_rms_pairs": (("pair",), m["min_rms"]),
        },
        coords=coords,
    )
    if relay_pred is not None:  # the exact matrix relay prediction, averaged over pairs like `distance`
        data["relay_matrix"] = (("layer", "t"), np.exp(np.log(relay_pred).mean(axis=0)))
        data["relay_matrix_pairs"] = (("pair", "layer", "t"), relay_pred)
        data["relay_matrix_limit"] = (("layer",), limit)
    return data


def offsets_scalars(m: dict, law: dict, P: int) -> dict:
    """The deepest layer's exponent and bound constants, the theorem's measured conditions, and the relay
    model's exponent over the same window (what ``alpha`` is compared with)."""
    last, window, alpha_loc, consts = law["fits"][-1], law["window"], law["alpha_loc"], law["consts"]
    return {
        "alpha": last.alpha,
        "alpha_ci_lo": last.alpha_ci[0],
        "alpha_ci_hi": last.alpha_ci[1],
        "alpha_rel": law["fits_rel"][-1].alpha,
        "fit_lo": window[0],
        "fit_hi": window[1],
        "fit_rms_residual": last.rms_residual,
        "max_logit": float(np.max(m["max_logit"])),
        "min_prenorm_rms": float(np.min(m["min_rms"])),
        "norm_max": float(m["norm"].max()),
        "alpha_local_end": float(alpha_loc[-1][np.isfinite(alpha_loc[-1])][-1])
        if np.isfinite(alpha_loc[-1]).any()
        else math.nan,
        "bound_local_end": float(law["bound_loc"][-1][-1]),
        "bound_constant": float(consts["bound_constant"][-1]),
        "bound_plateau": float(consts["bound_plateau"][-1]),
        "bound_plateau_slope": float(consts["bound_plateau_slope"][-1]),
        # the relay model's alpha of this depth over the same window: what alpha is compared with
        "alpha_relay_window": (
            th.relay_alpha_window(P, len(law["fits"]), window[0], int(window[1])) if window[0] >= P + 1 else math.nan
        ),
    }


def power_law(
    t: np.ndarray, Y: np.ndarray, window: tuple[float, float], *, n_boot: int, rng: np.random.Generator
) -> PowerLawFit:
    """:func:`bootstrap_power_law` of the offsets ``Y`` (pairs, t), or an all-NaN fit when an offset in the
    window is 0 or not finite: saturated attention (large logits, float32) can put exactly zero weight on
    the prompt, which is then forgotten exactly and has no power law."""
    try:
        return bootstrap_power_law(t, Y, window, n_boot=n_boot, rng=rng)
    except ValueError:
        if np.all(Y > 0) and np.all(np.isfinite(Y)):
            raise  # not the zero offsets: a real error
    nan = math.nan
    return PowerLawFit(alpha=nan, log_c=nan, window=window, n_points=0, rms_residual=nan, alpha_ci=(nan, nan))


def local_exponent_on_grid(t: np.ndarray, y: np.ndarray, t_range: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`local_exponent` on the probe's grid; NaN where ``y`` has a zero or non-finite value (see
    :func:`power_law`): the grid is the same, the exponents unmeasured."""
    if np.all(y > 0) and np.all(np.isfinite(y)):
        return local_exponent(t, y, n_grid=40, half_width=0.3, t_range=t_range)
    grid, _ = local_exponent(t, np.ones_like(t), n_grid=40, half_width=0.3, t_range=t_range)
    return grid, np.full(grid.shape, math.nan)


@dataclass(frozen=True)
class FitWindow:
    """The window of positions the offsets' power law was fitted over (the trajectory fits the same one)."""

    window: tuple[float, float]


PART_NAME = "offsets"
DESCRIPTION = "the offsets between continuations after two prompts per layer, their power laws and the theorem's bound"
PROVIDES = (FitWindow,)


def measure(ctx: Context) -> None:
    """The offsets, their laws, the relay model's prediction (the exact uniform relay network), the dataset and
    scalars, the training and held-out losses; puts the :class:`FitWindow` for the trajectory."""
    config, prep = ctx.config, ctx.get(Prepared)
    model, info = prep.net, prep.info
    P, T = config.prompt_len, config.cont_len
    N = P + T
    a, b, c = prep.pairs
    m = measure_offsets(model, a, b, c, attn_bias=prep.bias, progress=ctx.progress)
    law = offset_laws(config, m, P, N)
    ctx.put(FitWindow(law["window"]))
    exact_relay = (
        ctx.own_model
        and config.model.attention == "uniform"
        and config.model.norm == "none"
        and config.model.d_mlp == 0
    )
    relay_pred = limit = None
    if exact_relay and config.logit_bias == "none":
        relay_pred = relay_prediction(model, m["embed_delta"], N)[:, :, P:]  # (n, L, T) per pair
        limit = np.exp(np.log(relay_matrix_limit(model, m["embed_delta"])).mean(axis=0))  # (L,) like `distance`
    data = offsets_dataset(config, m, law, relay_pred, limit)
    ctx.data.update(data.data_vars)
    ctx.coords.update(data.coords)
    ctx.attrs.update(data.attrs)
    ctx.scalars.update(offsets_scalars(m, law, P))
    if "train_loss" in info:
        ctx.scalars["train_loss"] = float(info["train_loss"])
    if ctx.own_model and config.data != "random":
        losses = language_losses(config, {"model": model})
        ctx.scalars.update(
            heldout_loss=losses["heldout_loss_model"],
            bigram_entropy=losses["bigram_entropy"],
            unigram_entropy=losses["unigram_entropy"],
        )
    ctx.meta.update({k: v for k, v in info.items() if k not in ("train_loss", "snapshots")})
    ctx.meta["model"] = "built from config" if ctx.own_model else f"passed in: {type(model).__name__}"
    if not ctx.own_model:
        ctx.meta["model_vocab_size"] = protocol.vocab_size(model)
        ctx.meta["model_max_positions"] = protocol.max_positions(model)
