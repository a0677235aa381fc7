"""House style and figure output for the notebooks.

Conventions every workbench figure follows:

* measurements are solid lines (or markers) in the Okabe-Ito cycle, with a shaded confidence
  :func:`band` beneath them;
* theory is a black dashed :func:`theory_line` drawn *over* the measurement, so a perfect match is
  still visible;
* power laws go on :func:`loglog` axes;
* every figure is written by :func:`save_figure` as PNG and SVG with its provenance embedded in each
  format's own metadata (PNG text chunks, SVG Dublin Core ``<metadata>``) and in a JSON sidecar
  ``<name>.json``; the notebook's claims ledger goes beside them via :func:`save_ledger`.

Re-rendering a figure from the same inputs gives the same bytes: the style fixes ``svg.hashsalt``,
dates are switched off in every format, and the provenance holds no timestamp (see
:mod:`analysis.core.provenance`).
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from analysis.core.io import atomic_write_bytes, atomic_write_json, canonical_json, sha256_bytes
from analysis.core.paths import EXPLORE, REPO, exploring, figures_dir
from analysis.core.provenance import check_name, figure_provenance
from analysis.core.validation import check_choice, check_sequence

STYLE = Path(__file__).with_name("workbench.mplstyle")

# Okabe & Ito (2008), "Color Universal Design": distinguishable under the common colour blindnesses.
OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "bluish_green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish_purple": "#CC79A7",
}
BLUE, ORANGE, GREEN = OKABE_ITO["blue"], OKABE_ITO["orange"], OKABE_ITO["bluish_green"]
VERMILLION, PURPLE, SKY = OKABE_ITO["vermillion"], OKABE_ITO["reddish_purple"], OKABE_ITO["sky_blue"]
GREY = "#7F7F7F"
THEORY = OKABE_ITO["black"]  # theory lines (dashed)
MEASURED = BLUE  # a single measured curve
CYCLE = [BLUE, VERMILLION, GREEN, PURPLE, ORANGE, SKY, OKABE_ITO["yellow"], THEORY]  # = the style's cycle
NORM_COLORS = {  # by norm placement / variant (signal_propagation's norms)
    "pre": BLUE,
    "post": VERMILLION,
    "peri": GREEN,
    "mix": PURPLE,
    "none": GREY,
    "ln_scaling": SKY,
    "deepnorm": ORANGE,
    "qk_norm": OKABE_ITO["black"],
}

FIGSIZE = {  # inches; one column of a two-column paper is 3.5 in
    "single": (3.5, 2.6),
    "wide": (7.0, 2.6),
    "square": (3.5, 3.5),
    "tall": (3.5, 4.8),
}
FORMATS = ("png", "svg", "pdf")
DEFAULT_FORMATS = ("png", "svg")


def use_style() -> None:
    """Apply ``analysis/workbench.mplstyle`` (fonts, sizes, palette, reproducible SVG ids)."""
    plt.style.use(STYLE)


def subplots(nrows: int = 1, ncols: int = 1, *, size: str = "single", **kwargs: Any):
    """``plt.subplots`` with one of the house sizes (``single``, ``wide``, ``square``, ``tall``)."""
    check_choice("size", size, tuple(FIGSIZE))
    return plt.subplots(nrows, ncols, figsize=FIGSIZE[size], **kwargs)


def theory_line(ax, x, y, label: str = "theory", *, color: str = THEORY, **kwargs: Any):
    """Draw a closed-form prediction: dashed, black by default, above the measurements (zorder 3)."""
    kwargs = {"linestyle": "--", "linewidth": 1.2, "zorder": 3, **kwargs}
    (line,) = ax.plot(np.asarray(x), np.asarray(y), color=color, label=label, **kwargs)
    return line


def band(ax, x, lo, hi, *, color: str | None = None, alpha: float = 0.25, label: str | None = None, **kwargs):
    """Shade a confidence band ``lo <= y <= hi`` under the measured curve (zorder 1, no edge)."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    if lo.shape != hi.shape:
        raise ValueError(f"lo and hi must have the same shape, got {lo.shape} and {hi.shape}")
    kwargs = {"linewidth": 0, "zorder": 1, **kwargs}
    return ax.fill_between(np.asarray(x), lo, hi, color=color, alpha=alpha, label=label, **kwargs)


def loglog(ax, *, base: float = 10):
    """Log scale on both axes (power laws are straight lines), with a light minor grid."""
    ax.set_xscale("log", base=base)
    ax.set_yscale("log", base=base)
    ax.grid(True, which="minor", alpha=0.12, linewidth=0.4)
    return ax


# ----------------------------------------------------------------------------------------------
# Writing figures
# ----------------------------------------------------------------------------------------------
def _format_metadata(fmt: str, prov: dict[str, Any]) -> dict[str, Any]:
    """Provenance in the format's own metadata field; every date switched off."""
    text = canonical_json(prov)
    title = f"{prov['notebook']}/{prov['figure']}"
    if fmt == "png":  # tEXt/iTXt chunks; "Provenance" holds the whole record as JSON
        return {
            "Title": title,
            "Description": prov["caption"],
            "Source": prov["commit"],
            "Provenance": text,
            "Date": None,
        }
    if fmt == "svg":  # Dublin Core fields inside <metadata>; dc:description holds the record
        return {
            "Title": title,
            "Description": text,
            "Source": prov["commit"],
            "Identifier": prov["notebook"],
            "Keywords": [f"preset={prov['preset']}"],
            "Date": None,
        }
    return {
        "Title": title,
        "Subject": text,
        "Keywords": prov["commit"],
        "CreationDate": None,
        "ModDate": None,
    }


def save_figure(
    fig,
    name: str,
    *,
    notebook: str,
    params: Mapping[str, Any],
    ledger=None,
    inputs: Mapping[str, str] | None = None,
    caption: str = "",
    formats: Sequence[str] = DEFAULT_FORMATS,
    out_dir: str | os.PathLike | None = None,
) -> dict[str, Path]:
    """Write ``fig`` as ``<name>.png``/``<name>.svg`` plus the sidecar ``<name>.json``.

    ``notebook`` is the notebook's name (e.g. ``"00_overview"``); ``params`` its parameter values
    (must include ``preset``; ``seed`` is recorded when present); ``inputs`` the content hashes the
    figure was computed from (checkpoint keys, result-cache keys); ``ledger`` an
    :class:`analysis.claims.ledger.Ledger` whose claims tagged ``figure=name`` are copied into the sidecar.
    The folder is ``out_dir`` or :func:`analysis.core.paths.figures_dir` (env ``WORKBENCH_FIGURES``; unset, the scratch
    gallery ``build/explore/``: an exploring run never overwrites the committed ``figures/``, and says so once).

    Every file is written atomically; the same figure and inputs give the same bytes. Returns
    ``{"png": path, "svg": path, "json": path}`` (one entry per format written).
    """
    check_name("name", name)
    check_sequence("formats", formats, item_check=lambda f, v: check_choice(f, v, FORMATS), unique=True)
    if not hasattr(fig, "savefig"):
        raise ValueError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    prov = figure_provenance(figure=name, notebook=notebook, params=params, inputs=inputs, caption=caption)
    out = _output_folder(out_dir)
    paths: dict[str, Path] = {}
    files: dict[str, dict[str, str]] = {}
    for fmt in formats:
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, metadata=_format_metadata(fmt, prov))
        data = buf.getvalue()
        paths[fmt] = atomic_write_bytes(out / f"{name}.{fmt}", data)
        files[fmt] = {"path": f"{name}.{fmt}", "sha256": sha256_bytes(data)}
    claims = []
    if ledger is not None:
        claims = [c.to_dict() for c in ledger.claims if c.figure == name]
    sidecar = {**prov, "kind": "figure", "files": files, "claims": claims}
    paths["json"] = atomic_write_json(out / f"{name}.json", sidecar)
    return paths


_TOLD = False  # whether this process has said where exploring runs write


def _output_folder(out_dir: str | os.PathLike | None) -> Path:
    """``out_dir``, else :func:`analysis.core.paths.figures_dir`; the first write of an exploring run says where it
    goes."""
    global _TOLD
    if out_dir is not None:
        return Path(out_dir)
    if exploring() and not _TOLD:
        _TOLD = True
        where = EXPLORE.relative_to(REPO) if EXPLORE.is_relative_to(REPO) else EXPLORE
        print(
            f"exploring: figures and claims go to the scratch gallery {where}/ (the committed figures/ is written by "
            "`make figures` only, or when WORKBENCH_FIGURES names it)"
        )
    return figures_dir()


def save_ledger(ledger, *, notebook: str, out_dir: str | os.PathLike | None = None) -> Path:
    """Write the notebook's claims ledger to ``<figures>/<notebook>.claims.json`` (atomic JSON).

    ``scripts/make_figures.py`` gathers these files into ``claims.json`` and the gallery.
    """
    check_name("notebook", notebook)
    if not hasattr(ledger, "save") or not hasattr(ledger, "claims"):
        raise ValueError(f"ledger must be an analysis.claims.ledger.Ledger, got {type(ledger).__name__}")
    out = _output_folder(out_dir)
    return ledger.save(out / f"{notebook}.claims.json")


def read_png_text(path: str | os.PathLike) -> dict[str, str]:
    """The text chunks of a PNG file (where :func:`save_figure` put the provenance)."""
    from PIL import Image

    with Image.open(path) as im:
        im.load()
        return dict(getattr(im, "text", {}) or im.info)
