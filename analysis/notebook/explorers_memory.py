"""Explorers of key-value memories: the read-out error of an additive (linear-attention) memory against
``(N - 1)/d_k`` (associative_recall), and how ReLU and softmax memories scale with their slot count
(softmax_alternatives).

The compute functions are pure functions of the control values built on the theory modules, with a small Monte
Carlo over random memories (fixed seeds); tested in ``tests/test_explorers.py`` and timed in ``bench/run.py``
(``--only explorers``).
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np

from analysis.core.validation import check_float, check_int
from analysis.notebook.explorers_base import FIGSIZE, Explorer, Slider, _two_panels
from analysis.notebook.plotting import BLUE, VERMILLION, theory_line
from analysis.theory import associative_recall as th_ar
from analysis.theory import softmax_alternatives as th_sa


# ----------------------------------------------------------------------------------------------
# associative_recall: (N - 1)/d_k against Monte Carlo memories
# ----------------------------------------------------------------------------------------------
def readout_error_curves(n_max: int, d_key: int, d_value: int = 16, draws: int = 64, seed: int = 0) -> dict:
    """Relative read-out error of an additive (linear-attention) memory holding ``N = 1..n_max`` pairs.

    ``theory`` = ``(N - 1)/d_k``; ``measured``/``se`` the mean and standard error over ``draws`` random
    memories of unit keys and values (:func:`analysis.theory.associative_recall.mc_additive_readout_error`).
    """
    check_int("n_max", n_max, minimum=1)
    check_int("d_key", d_key, minimum=1)
    ns = np.unique(np.linspace(1, n_max, min(n_max, 24)).round().astype(int))
    rng = np.random.default_rng(seed)
    runs = [th_ar.mc_additive_readout_error(int(k), d_key, d_value, draws, rng) for k in ns]
    return {
        "N": ns,
        "theory": th_ar.additive_readout_error(ns, d_key),
        "measured": np.array([r.mean() for r in runs]),
        "se": np.array([r.std(ddof=1) / math.sqrt(len(r)) for r in runs]),
    }


def _render_readout(n_max: int, d_key: int):
    c = readout_error_curves(n_max, d_key)
    fig, ax = plt.subplots(figsize=(FIGSIZE[0] / 2 + 0.6, FIGSIZE[1]), constrained_layout=True)
    ax.errorbar(c["N"], c["measured"], yerr=1.96 * c["se"], color=BLUE, marker="o", ms=3, label="random memories")
    theory_line(ax, c["N"], c["theory"], "$(N-1)/d_k$")
    ax.axvline(d_key, color="grey", linewidth=0.8, label="N = $d_k$")
    ax.set_xlabel("stored pairs N")
    ax.set_ylabel("relative read-out error")
    ax.set_title(f"additive memory, $d_k$ = {d_key}")
    ax.legend(fontsize=6)
    return (
        fig,
        f"at N = {c['N'][-1]}: measured {c['measured'][-1]:.3g} ± {1.96 * c['se'][-1]:.2g}, "
        f"theory {c['theory'][-1]:.3g}",
    )


def explore_readout(static: bool | None = None) -> Explorer:
    """Read-out error of a linear-attention memory against the number of stored pairs and the key width."""
    controls = [
        Slider("n_max", "largest N", 2, 128, 1, 48, integer=True),
        Slider("d_key", "key dim", 2, 64, 1, 16, integer=True),
    ]
    return Explorer("Associative recall", controls, _render_readout, static)


# ----------------------------------------------------------------------------------------------
# softmax_alternatives: ReLU and softmax key-value memories against their slot count
# ----------------------------------------------------------------------------------------------
def memory_slot_curves(s: float, n_max: int, draws: int = 256, seed: int = 0) -> dict:
    """Slot moments ``E[sum_i f_i^2]`` of ``n = 1..n_max`` slots with N(0, s^2) pre-activations: ReLU's ``n s^2 / 2``,
    softmax's exact quadrature and its limit ``e^{s^2}/n``, the ``1/n`` of uniform weights, and a Monte Carlo of the
    softmax moment (``draws`` memories per n, with its SE) as an independent check."""
    check_float("s", s, minimum=0.0, maximum=4.0)
    check_int("n_max", n_max, minimum=2, maximum=1 << 14)
    n = np.unique(np.geomspace(1, n_max, 24).round().astype(np.int64))
    rng = np.random.default_rng(seed)
    mc = np.array([th_sa.softmax_slot_moment_mc(int(k), s, draws, rng) for k in n])
    return {
        "n": n,
        "relu": th_sa.relu_slot_moment(n, s),
        "softmax": th_sa.softmax_slot_moment(n, s),
        "lln": th_sa.softmax_slot_moment_lln(n, s),
        "uniform": 1.0 / n,
        "measured": mc[:, 0],
        "se": mc[:, 1],
    }


def _render_memory_slots(s: float, n_max: int):
    c = memory_slot_curves(s, n_max)
    fig, (ax, ax2) = _two_panels()
    theory_line(ax, c["n"], np.maximum(c["relu"], 1e-300), "ReLU: n s^2 / 2")
    ax.plot(c["n"], c["softmax"], "-", color=VERMILLION, label="softmax: E[sum p^2], exact")
    ax.plot(c["n"], c["uniform"], ":", color=BLUE, label="uniform weights: 1/n")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("slots n")
    ax.set_ylabel("E[sum_i f_i^2]")
    ax.legend(fontsize=6)
    ax2.errorbar(
        c["n"],
        c["n"] * c["measured"],
        yerr=2 * c["n"] * c["se"],
        fmt="o",
        ms=3,
        color=VERMILLION,
        label="Monte Carlo (2 SE)",
    )
    theory_line(ax2, c["n"], c["n"] * c["softmax"], "n E[sum p^2], exact")
    ax2.axhline(math.exp(s * s), color=BLUE, ls="--", lw=0.8, label="e^(s^2)")
    ax2.set_xscale("log")
    ax2.set_xlabel("slots n")
    ax2.set_ylabel("softmax concentration n E[sum p^2]")
    ax2.legend(fontsize=6)
    return fig, f"s = {s:g}: softmax concentration e^(s^2) = {math.exp(s * s):.3g} once n >> e^(s^2)"


def explore_memory_slots(static: bool | None = None) -> Explorer:
    """Key-value memories: how ReLU and softmax reads scale with the number of slots, per pre-activation std."""
    controls = [
        Slider("s", "pre-activation std s", 0.0, 3.0, 0.05, 0.8),
        Slider("n_max", "largest n", 16, 4096, 16, 1024, integer=True),
    ]
    return Explorer("Key-value memories", controls, _render_memory_slots, static)
