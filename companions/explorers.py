"""Explorers that put a cached probe measurement beside the theory (see :mod:`analysis.notebook.explorers`).

Each one reads one probe result through :func:`probes.cached_run`: the full preset's when it is already in the
cache (after ``make figures`` or a full notebook run), otherwise the smoke preset's (computed once, in
seconds, then cached). A knob change never runs the probe: it re-evaluates the closed forms and re-selects
the cached arrays. The compute functions (``relay_view``, ``rank_collapse_view``, ``collapse_view``,
``parameterisation_view``) take the result's Dataset and are tested in ``tests/test_explorers.py``.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr
from matplotlib.ticker import NullFormatter

from analysis.core.validation import check_choice, check_float
from analysis.notebook import explorers as ex
from analysis.notebook.plotting import BLUE, CYCLE, NORM_COLORS, VERMILLION, theory_line
from analysis.probing.base import Result, cache_key, results_cache_dir
from analysis.theory import representational_collapse as th_rc
from analysis.theory import signal_propagation as th_sp
from analysis.theory import width as th_width
from probes import cached_run, parameterisation, prompt_forgetting, representational_collapse, signal_propagation


def cached_result(module, preset: str | None = None) -> Result:
    """``module``'s result for ``preset``; by default the full preset's if cached, else the smoke preset's."""
    if preset is None:
        full = module.Config.preset("full")
        preset = "full" if (results_cache_dir() / module.NAME / cache_key(module, full)).is_dir() else "smoke"
    return cached_run(module, module.Config.preset(preset), progress=False)


# ----------------------------------------------------------------------------------------------
# prompt_forgetting: the relay model's alpha beside the measured one
# ----------------------------------------------------------------------------------------------
def relay_view(data: xr.Dataset, L: int, P: int, T: int) -> dict:
    """The relay model at ``(L, P, T)`` (:func:`analysis.notebook.explorers.relay_alpha_curves`) and the cached run's
    measured exponents: ``measured_alpha`` per depth (layer ``l`` = depth ``l + 1``) and, when the run has
    ``L`` layers or more, ``measured_local`` at its ``t_local`` with the relay model at the run's own prompt
    length (``relay_local``)."""
    theory = ex.relay_alpha_curves(L, P, T)
    layers = data["alpha"].sizes["layer"]
    out = {**theory, "measured_depths": np.arange(1, layers + 1), "measured_alpha": data["alpha"].values}
    if L <= layers:
        out["t_local"] = data["t_local"].values
        out["measured_local"] = data["alpha_local"].isel(layer=L - 1).values
        out["relay_local"] = data["relay_local"].isel(layer=L - 1).values
    return out


def explore_relay(preset: str | None = None, static: bool | None = None) -> ex.Explorer:
    """alpha(t) of the relay model against depth and prompt length, beside a cached measurement."""
    result = cached_result(prompt_forgetting, preset)
    P0, cont = result.config.prompt_len, result.config.cont_len

    def render(L: int, P: int, T: int):
        v = relay_view(result.data, L, P, T)
        fig, (ax, ax2) = ex._two_panels()
        theory_line(ax, v["t"], v["alpha_local"], f"relay, P = {P}")
        theory_line(ax, v["t"], v["alpha_bound"], "bound $1-(L-1)/\\ln t$", linestyle=":")
        if "measured_local" in v:
            ax.plot(v["t_local"], v["measured_local"], color=BLUE, label=f"measured (P = {P0})")
            ax.plot(v["t_local"], v["relay_local"], color=BLUE, linestyle="--", linewidth=0.8, label=f"relay, P = {P0}")
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("continuation position t")
        ax.set_ylabel("local exponent $\\alpha(t)$")
        ax.set_title(f"depth L = {L}")
        ax.legend(fontsize=6)
        theory_line(ax2, v["depths"], v["alpha_window"], f"relay fit over [{2 * P}, {T}]", marker="o")
        ax2.plot(v["measured_depths"], v["measured_alpha"], "s", color=VERMILLION, label=f"measured (P = {P0})")
        ax2.set_xlabel("depth L")
        ax2.set_ylabel("fitted $\\alpha$")
        ax2.legend(fontsize=6)
        a = v["alpha_window"][L - 1]
        return fig, f"relay α over [{2 * P}, {T}] at L = {L}: {a:.3f} (cached run: {result.config.preset_name} preset)"

    controls = [
        ex.Slider("L", "depth L", 1, 8, 1, min(2, result.config.model.n_layers), integer=True),
        ex.Slider("P", "prompt length P", 1, 64, 1, P0, integer=True),
        ex.Slider("T", "continuation T", 256, 8192, 256, max(256, 256 * math.ceil((P0 + cont) / 256)), integer=True),
    ]
    return ex.Explorer("Prompt forgetting", controls, render, static)


# ----------------------------------------------------------------------------------------------
# signal_propagation: rank-collapse residual across depth
# ----------------------------------------------------------------------------------------------
def rank_collapse_view(data: xr.Dataset, depth: int, mask: str) -> dict:
    """Mean rank-collapse residual after each block for every norm placement at ``depth`` (``norms``:
    name -> (depth + 1,)), the collapse variants under ``mask`` (``variants``: name -> per layer) and the shape of
    Dong et al.'s bound for pure attention, ``r_{l+1} = c r_l^3`` with ``c`` fitted to the first step."""
    check_choice("depth", depth, tuple(int(d) for d in data.depth.values))
    check_choice("mask", mask, tuple(str(m) for m in data.mask.values))
    rr = data["rank_residual"].sel(depth=depth).mean("sample")
    norms = {str(n): rr.sel(norm=n).values[: depth + 1] for n in data.norm.values}
    col = data["collapse_residual"].sel(mask=mask).mean("sample")
    variants = {str(v): col.sel(variant=v).values for v in col.variant.values}
    r = variants["pure_attention"]
    layers = np.arange(r.size)
    c = r[1] / r[0] ** 3
    return {"norms": norms, "variants": variants, "layers": layers, "dong": th_sp.dong_bound(r[0], c, layers), "c": c}


def explore_rank_collapse(preset: str | None = None, static: bool | None = None) -> ex.Explorer:
    """The rank-collapse residual against depth for each norm placement (cached signal_propagation run)."""
    result = cached_result(signal_propagation, preset)
    depths = tuple(int(d) for d in result.data.depth.values)
    masks = tuple(str(m) for m in result.data.mask.values)

    def render(depth: int, mask: str):
        v = rank_collapse_view(result.data, depth, mask)
        fig, (ax, ax2) = ex._two_panels()
        for norm, r in v["norms"].items():
            ax.plot(np.arange(r.size), r, marker=".", color=NORM_COLORS.get(norm, BLUE), label=norm)
        ax.set_xlabel("block (0 = embedding)")
        ax.set_ylabel("rank-collapse residual")
        ax.set_title(f"full models, L = {depth}")
        ax.legend(fontsize=6)
        for (name, r), color in zip(v["variants"].items(), CYCLE, strict=False):
            ax2.plot(v["layers"], np.maximum(r, 1e-17), marker=".", color=color, label=name)
        theory_line(ax2, v["layers"], np.maximum(v["dong"], 1e-17), "Dong shape $c\\,r^3$")
        ax2.set_yscale("log")
        ax2.set_xlabel("layer")
        ax2.set_title(f"attention stacks, {mask} mask")
        ax2.legend(fontsize=5)
        last = {n: f"{r[-1]:.3g}" for n, r in v["norms"].items()}
        return (
            fig,
            f"residual after block {depth}: {last}; fitted c = {v['c']:.3g} ({result.config.preset_name} preset)",
        )

    controls = [ex.Choice("depth", "depth L", depths, depths[-1]), ex.Choice("mask", "mask", masks, masks[-1])]
    return ex.Explorer("Rank collapse", controls, render, static)


# ----------------------------------------------------------------------------------------------
# representational_collapse: distance against n per dtype, and where it meets the dtype's resolution
# ----------------------------------------------------------------------------------------------
def collapse_view(data: xr.Dataset, dtype: str, alpha: float, n_max: float = 1e8) -> dict:
    """Measured float64 distance of the two final states against ``n``, the resolution ``eps(dtype) |h|`` and the
    power law ``D(n_a) (n / n_a)^-alpha`` anchored at the longest length ``n_a``, which meets the resolution at
    ``n_star`` (:func:`analysis.theory.representational_collapse.extrapolated_collapse`)."""
    dtypes = tuple(str(d) for d in data.dtype.values if str(d) != "float64")
    check_choice("dtype", dtype, dtypes)
    check_float("alpha", alpha, minimum=1e-3)
    n = data["n"].values.astype(float)
    distance = data["distance"].sel(dtype="float64").values
    resolution = th_rc.resolution(dtype, data["norm"].values)
    n_a, ratio = n[-1], float(distance[-1] / resolution[-1])
    n_star = float(th_rc.extrapolated_collapse(n_a, ratio, alpha))
    grid = np.geomspace(n_a, max(n_max, 2 * n_a), 64)
    return {
        "n": n,
        "distance": distance,
        "measured_in_dtype": data["distance"].sel(dtype=dtype).values,
        "resolution": resolution,
        "n_grid": grid,
        "power_law": distance[-1] * (grid / n_a) ** -alpha,
        "resolution_level": resolution[-1],
        "n_star": n_star,
    }


def explore_collapse(preset: str | None = None, static: bool | None = None) -> ex.Explorer:
    """Collapse distance against n per dtype: where the decay meets each format's resolution."""
    result = cached_result(representational_collapse, preset)
    dtypes = tuple(str(d) for d in result.data.dtype.values if str(d) != "float64")
    fitted = float(result.scalars["slope"])

    def render(dtype: str, alpha: float):
        v = collapse_view(result.data, dtype, alpha)
        fig, ax = plt.subplots(figsize=(ex.FIGSIZE[0] * 0.62, ex.FIGSIZE[1]), constrained_layout=True)
        ax.plot(v["n"], v["distance"], "o-", color=BLUE, ms=3, label="float64 distance")
        ax.plot(v["n"], v["measured_in_dtype"], ".", color=VERMILLION, label=f"computed in {dtype}")
        ax.plot(v["n"], v["resolution"], color="grey", label=f"resolution eps({dtype})|h|")
        ax.axhline(v["resolution_level"], color="grey", linewidth=0.6, linestyle=":")
        theory_line(ax, v["n_grid"], v["power_law"], f"$n^{{-{alpha:.2f}}}$ from the last point")
        if math.isfinite(v["n_star"]) and v["n_star"] < v["n_grid"][-1]:
            ax.axvline(v["n_star"], color=VERMILLION, linewidth=0.8, linestyle="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("sequence length n")
        ax.set_ylabel("distance of final states")
        ax.legend(fontsize=5)
        return fig, (
            f"{dtype}: the decay n^-{alpha:.2f} meets the resolution at n* ≈ {v['n_star']:.3g} "
            f"(fitted exponent {fitted:.3f}; {result.config.preset_name} preset)"
        )

    controls = [
        ex.Choice("dtype", "dtype", dtypes, dtypes[-1]),
        ex.Slider("alpha", "decay exponent α", 0.1, 2.0, 0.01, round(min(max(fitted, 0.1), 2.0), 2)),
    ]
    return ex.Explorer("Representational collapse", controls, render, static)


# ----------------------------------------------------------------------------------------------
# parameterisation: every layer's first update against width, standard or muP, beside the derived slopes
# ----------------------------------------------------------------------------------------------
def parameterisation_view(data: xr.Dataset, mixer: str, optimizer: str, parameterisation: str, width: int) -> dict:
    """Per layer of ``mixer``: the mean over seeds of its own first-update RMS against width under
    ``parameterisation`` (``sizes``), the derived power law through the geometric mean (``laws``, exponents in
    ``exponents``), and at ``width`` each layer's size under both parameterisations (``at_width``)."""
    check_choice("mixer", mixer, tuple(str(m) for m in data.mixer.values))
    check_choice("optimizer", optimizer, tuple(str(o) for o in data.optimizer.values))
    check_choice("parameterisation", parameterisation, tuple(str(p) for p in data.parameterisation.values))
    widths = data["width"].values.astype(float)
    check_choice("width", width, tuple(int(w) for w in widths))
    own = data["own_update"].sel(mixer=mixer, optimizer=optimizer).mean("width_seed")
    layers = th_width.MIXER_LAYERS[mixer]
    sizes, laws, exponents = {}, {}, {}
    for layer in layers:
        y = own.sel(parameterisation=parameterisation, layer=layer).values
        e = th_width.own_update_exponent(layer, optimizer, parameterisation, mixer)
        centre = np.exp(np.log(y).mean())
        sizes[layer], exponents[layer] = y, e
        laws[layer] = centre * (widths / np.exp(np.log(widths).mean())) ** e
    at_width = {
        str(p): own.sel(parameterisation=p, width=width).sel(layer=list(layers)).values
        for p in own.parameterisation.values
    }
    return {
        "widths": widths,
        "layers": layers,
        "sizes": sizes,
        "laws": laws,
        "exponents": exponents,
        "at_width": at_width,
    }


def explore_parameterisation(preset: str | None = None, static: bool | None = None) -> ex.Explorer:
    """Switch the parameterisation, the optimizer, the mixer and the width: each layer's own first update against
    width beside its derived slope, and at one width the layers under standard and muP side by side."""
    result = cached_result(parameterisation, preset)
    d = result.data
    widths = tuple(int(w) for w in d["width"].values)

    def render(mixer: str, optimizer: str, parameterisation: str, width: int):
        v = parameterisation_view(d, mixer, optimizer, parameterisation, width)
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=ex.FIGSIZE, constrained_layout=True)
        for k, layer in enumerate(v["layers"]):
            color = CYCLE[k % len(CYCLE)]
            ax.plot(
                v["widths"], v["sizes"][layer], "o", ms=3, color=color, label=f"{layer} ({v['exponents'][layer]:+g})"
            )
            ax.plot(v["widths"], v["laws"][layer], "--", color=color, lw=0.8)
        ax.axvline(width, color="grey", lw=0.6, ls=":")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("width d_model")
        ax.set_ylabel("RMS of the own first update dW x")
        ax.legend(fontsize=5, title="layer (derived exponent)", title_fontsize=5)
        x = np.arange(len(v["layers"]))
        for j, (p, color) in enumerate(zip(v["at_width"], (VERMILLION, BLUE), strict=False)):
            ax2.bar(x + (j - 0.5) * 0.4, v["at_width"][p], width=0.4, color=color, label=p)
        ax2.set_xticks(x, v["layers"], fontsize=6)
        ax2.set_yscale("log")
        ax2.set_title(f"d = {width}", fontsize=7)
        ax2.legend(fontsize=6)
        ratio = float(np.exp(np.mean(np.log(v["at_width"]["standard"] / v["at_width"]["mup"]))))
        return fig, (
            f"{mixer}, {optimizer}, {parameterisation}: dashed lines are the derived exponents; at d = {width} the "
            f"standard updates are {ratio:.3g} times muP's (geometric mean over layers; "
            f"{result.config.preset_name} preset)"
        )

    controls = [
        ex.Choice("mixer", "mixer", tuple(str(m) for m in d.mixer.values), str(d.mixer.values[0])),
        ex.Choice("optimizer", "optimizer", tuple(str(o) for o in d.optimizer.values), "adam"),
        ex.Choice("parameterisation", "parameterisation", tuple(str(p) for p in d.parameterisation.values), "mup"),
        ex.Choice("width", "width", widths, widths[-1]),
    ]
    return ex.Explorer("Width parameterisations", controls, render, static)
