"""Explorer of in-context learning as gradient descent (icl_gd): the best step size ``eta*`` of one GD step and
its loss, against the input dimension, the context length and the label noise.

The compute function :func:`eta_star_curves` evaluates the closed forms per change; it is tested in
``tests/test_explorers.py`` and timed in ``bench/run.py`` (``--only explorers``).
"""

from __future__ import annotations

import numpy as np

from analysis.core.validation import check_choice, check_float, check_int
from analysis.notebook.explorers_base import Choice, Explorer, Slider, _two_panels
from analysis.notebook.plotting import BLUE, VERMILLION, theory_line
from analysis.theory.icl_gd import closed_forms as th_icl

# ----------------------------------------------------------------------------------------------
# icl_gd: the best step size of one GD step
# ----------------------------------------------------------------------------------------------
ICL_INPUTS = ("gaussian", "uniform")


def eta_star_curves(d: int, N: int, sigma: float, x_dist: str = "gaussian", n_max: int = 128) -> dict:
    """``eta*`` and the loss of the best single GD step for context lengths ``1..n_max``; the loss parabola at ``N``.

    From :func:`analysis.theory.icl_gd.closed_forms.one_step_gd_theory` (``w ~ N(0, I)``, label noise ``sigma``).
    """
    check_int("d", d, minimum=1)
    check_int("N", N, minimum=1)
    check_int("n_max", n_max, minimum=N)
    check_float("sigma", sigma, minimum=0.0)
    check_choice("x_dist", x_dist, ICL_INPUTS)
    ns = np.arange(1, n_max + 1)
    per_n = [th_icl.one_step_gd_theory(d, int(k), x_dist, sigma) for k in ns]
    at = per_n[N - 1]
    eta = np.linspace(0.0, 2.0 * at["eta_star"], 81)
    return {
        "N": ns,
        "eta_star": np.array([r["eta_star"] for r in per_n]),
        "loss_star": np.array([r["loss_star"] for r in per_n]),
        "zero_loss": at["a"],
        "eta": eta,
        "loss": at["loss_fn"](eta),
        "eta_star_at_N": at["eta_star"],
        "loss_star_at_N": at["loss_star"],
    }


def _render_eta(d: int, N: int, sigma: float, x_dist: str):
    c = eta_star_curves(d, N, sigma, x_dist)
    fig, (ax, ax2) = _two_panels()
    theory_line(ax, c["N"], c["eta_star"], "$\\eta^*(N)$")
    ax.axvline(N, color=BLUE, linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("context length N")
    ax.set_ylabel("best step size $\\eta^*$")
    ax.set_title(f"d = {d}, noise {sigma:g}, {x_dist} inputs")
    ax.legend(fontsize=6)
    theory_line(ax2, c["eta"], c["loss"], f"loss($\\eta$) at N = {N}")
    ax2.plot([c["eta_star_at_N"]], [c["loss_star_at_N"]], "o", color=VERMILLION, label="$\\eta^*$")
    ax2.axhline(c["zero_loss"], color="grey", linewidth=0.8, label="predict 0")
    ax2.set_xlabel("step size $\\eta$")
    ax2.set_ylabel("expected squared error")
    ax2.legend(fontsize=6)
    return fig, f"η* = {c['eta_star_at_N']:.4g}, loss* = {c['loss_star_at_N']:.4g} (predicting 0: {c['zero_loss']:.4g})"


def explore_eta_star(static: bool | None = None) -> Explorer:
    """The one-step-GD ``eta*`` against d, N and the label noise."""
    controls = [
        Slider("d", "input dim d", 1, 32, 1, 10, integer=True),
        Slider("N", "context N", 1, 128, 1, 10, integer=True),
        Slider("sigma", "label noise", 0.0, 2.0, 0.05, 0.0),
        Choice("x_dist", "inputs", ICL_INPUTS, "gaussian"),
    ]
    return Explorer("One step of GD", controls, _render_eta, static)
