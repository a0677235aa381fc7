"""Interactive explorers: turn a knob, see the theory move (JupyterLab), or a static figure (papermill, nbval).

An explorer is a set of controls (:class:`Slider`, :class:`Choice`) and a ``render(**values)`` that returns a
matplotlib figure and one line of text. Displayed in a notebook (:meth:`Explorer._ipython_display_`) it is

* **interactive** in a live kernel with ipywidgets: one widget per control; each change calls ``render`` and
  replaces the picture (a PNG in an ``ipywidgets.Image``, so it works under any matplotlib backend);
* **static** under ``WORKBENCH_STATIC=1`` (``scripts/make_figures.py`` and the nbval step of ``make test`` set
  it), outside a kernel, or without ipywidgets: the figure at the default values as a PNG output and the text.
  No widget is created, so no widget state reaches an executed notebook.

Each explorer's numbers come from a *compute* function (``entropy_curves``, ``relay_alpha_curves``,
``eta_star_curves``, ``readout_error_curves``, ``conv_heads_curves`` here; the ones that read cached probe
results are in :mod:`companions.explorers`): pure functions of the control values built on the theory modules, tested in
``tests/test_explorers.py`` and timed in ``bench/run.py`` (``--only explorers``). Closed forms are evaluated
per change; the only sampling is a small Monte Carlo over random logits or random memories (fixed seeds).
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import numpy as np

from analysis.core.validation import check_choice, check_float, check_int
from analysis.notebook.plotting import BLUE, STYLE, VERMILLION, theory_line
from analysis.theory import associative_recall as th_ar
from analysis.theory import attention_entropy as th_ae
from analysis.theory import attention_only as th_ao
from analysis.theory import prompt_forgetting as th_pf
from analysis.theory import softmax_alternatives as th_sa
from analysis.theory.icl_gd import closed_forms as th_icl

STATIC_ENV = "WORKBENCH_STATIC"
FIGSIZE = (7.0, 2.7)
DPI = 110


# ----------------------------------------------------------------------------------------------
# Controls and the explorer
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Slider:
    """A numeric control: ``lo <= value <= hi`` in steps of ``step`` (integers when ``integer``)."""

    name: str
    label: str
    lo: float
    hi: float
    step: float
    value: float
    integer: bool = False


@dataclass(frozen=True)
class Choice:
    """A control with a fixed list of options."""

    name: str
    label: str
    options: tuple[Any, ...]
    value: Any


def is_static() -> bool:
    """True where widgets cannot work or must not be written: ``WORKBENCH_STATIC`` set, no kernel, no ipywidgets."""
    if os.environ.get(STATIC_ENV, "").lower() in ("1", "true", "yes"):
        return True
    try:
        import ipywidgets  # noqa: F401
        from IPython import get_ipython
    except ImportError:
        return True
    shell = get_ipython()
    return shell is None or not hasattr(shell, "kernel")


def figure_png(fig) -> bytes:
    """The figure as PNG bytes (closed afterwards)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


class Explorer:
    """Controls plus ``render(**values) -> (figure, text)``; displays as widgets or as a static figure."""

    def __init__(self, title: str, controls: Sequence[Slider | Choice], render: Callable, static: bool | None = None):
        self.title = title
        self.controls = tuple(controls)
        self.render = render
        self.static = is_static() if static is None else bool(static)
        self.values = {c.name: c.value for c in self.controls}
        self._image = self._text = None

    def png(self, **over: Any) -> tuple[bytes, str]:
        """Render at the current values updated by ``over`` (which become current): (PNG bytes, text)."""
        unknown = set(over) - set(self.values)
        if unknown:
            raise ValueError(f"unknown control(s) {sorted(unknown)}; controls are {sorted(self.values)}")
        self.values.update(over)
        with plt.style.context(STYLE), matplotlib.rc_context({"figure.figsize": FIGSIZE}):
            fig, text = self.render(**self.values)
            return figure_png(fig), text

    def update(self, **over: Any) -> None:
        """What a widget change calls: re-render and replace the picture and the text."""
        data, text = self.png(**over)
        if self._image is not None:
            self._image.value = data
            self._text.value = f"<b>{self.title}</b>: {text}"

    def widget(self):
        """The ipywidgets box (controls above the picture)."""
        import ipywidgets as w

        data, text = self.png()
        self._image = w.Image(value=data, format="png")
        self._text = w.HTML(f"<b>{self.title}</b>: {text}")
        boxes = []
        for c in self.controls:
            if isinstance(c, Choice):
                box = w.Dropdown(options=list(c.options), value=c.value, description=c.label)
            else:
                kind = w.IntSlider if c.integer else w.FloatSlider
                box = kind(value=c.value, min=c.lo, max=c.hi, step=c.step, description=c.label, continuous_update=False)
            box.style.description_width = "initial"
            box.observe(lambda change, name=c.name: self.update(**{name: change["new"]}), names="value")
            boxes.append(box)
        return w.VBox([w.HBox(boxes, layout=w.Layout(flex_flow="row wrap")), self._text, self._image])

    def _ipython_display_(self) -> None:
        from IPython.display import HTML, Image, display

        if self.static:
            data, text = self.png()
            display(Image(data=data, format="png"))
            display(
                HTML(f"<p><b>{self.title}</b> (static: open the notebook in JupyterLab to turn the knobs): {text}</p>")
            )
        else:
            display(self.widget())


def _two_panels():
    return plt.subplots(1, 2, figsize=FIGSIZE, constrained_layout=True)


# ----------------------------------------------------------------------------------------------
# attention_entropy: ln n - s^2/2 against Monte Carlo over Gaussian logits
# ----------------------------------------------------------------------------------------------
ENTROPY_KERNELS = ("softmax", "ssmax")


def entropy_curves(n_max: int, scale: float, kernel: str = "softmax", reps: int = 64, seed: int = 0) -> dict:
    """Entropy of one attention row over ``n`` keys with i.i.d. ``N(0, std^2)`` logits, ``n`` from 2 to ``n_max``.

    ``std = scale`` for softmax; SSMax multiplies the logits by ``ln n``, so ``std = scale ln n``. Returns the
    grid ``n``, ``std``, the law ``lln`` = ``ln n - std^2/2``, its second-order form, the Monte Carlo mean and
    standard error over ``reps`` rows per ``n`` (fixed ``seed``) and the fluctuation ``(e^{std^2} - 1)/n`` that
    the law needs small.
    """
    check_int("n_max", n_max, minimum=2)
    check_float("scale", scale, minimum=0.0)
    check_choice("kernel", kernel, ENTROPY_KERNELS)
    n = np.unique(np.geomspace(2, n_max, 16).round().astype(int))
    std = scale * (np.log(n) if kernel == "ssmax" else np.ones(len(n)))
    rng = np.random.default_rng(seed)
    mc = np.array([th_ae.gaussian_entropy_mc(int(k), float(s), reps, rng) for k, s in zip(n, std, strict=True)])
    return {
        "n": n,
        "std": std,
        "lln": th_ae.lln_entropy(n, std),
        "second_order": th_ae.lln_entropy_second_order(n, std),
        "measured": mc[:, 0],
        "se": mc[:, 1],
        "fluctuation": th_ae.partition_fluctuation(n, std),
    }


def _render_entropy(n_max: int, scale: float, kernel: str):
    c = entropy_curves(n_max, scale, kernel)
    fig, (ax, ax2) = _two_panels()
    ax.errorbar(c["n"], c["measured"], yerr=1.96 * c["se"], color=BLUE, marker="o", ms=3, label="Monte Carlo")
    theory_line(ax, c["n"], c["lln"], "$\\ln n - s^2/2$")
    valid = c["fluctuation"] < 1  # where the second-order form is meaningful
    theory_line(ax, c["n"], np.where(valid, c["second_order"], np.nan), "second order", linestyle=":")
    ax.plot(c["n"], np.log(c["n"]), color="grey", linewidth=0.8, label="$\\ln n$ (uniform)")
    ax.set_xscale("log")
    ax.set_xlabel("keys n")
    ax.set_ylabel("row entropy (nats)")
    ax.set_ylim(
        min(-0.2, float(np.min(c["lln"][valid])) if valid.any() else -0.2, float(np.min(c["measured"]))),
        1.1 * math.log(n_max),
    )
    ax.set_title(f"{kernel}, logit scale {scale:g}")
    ax.legend(fontsize=6)
    ax2.plot(c["n"], c["measured"] - c["lln"], color=BLUE, marker="o", ms=3, label="measured - law")
    ax2.plot(c["n"], c["fluctuation"], color=VERMILLION, label="$(e^{s^2}-1)/n$")
    ax2.axhline(0, color="black", linewidth=0.6)
    ax2.set_xscale("log")
    ax2.set_yscale("symlog", linthresh=1e-2)
    ax2.set_ylim(-1.0, 10.0)
    ax2.set_xlabel("keys n")
    ax2.legend(fontsize=6)
    gap = float(np.max(np.abs(c["measured"] - c["lln"])))
    return fig, f"largest |measured - (ln n - s²/2)| = {gap:.3g} nats; the law needs (e^(s²)-1)/n ≪ 1"


def explore_entropy(static: bool | None = None) -> Explorer:
    """The entropy law ``ln n - s^2/2`` against measured row entropies: sliders for n and the logit scale."""
    controls = [
        Slider("n_max", "largest n", 8, 2048, 8, 512, integer=True),
        Slider("scale", "logit scale s", 0.0, 3.0, 0.05, 1.0),
        Choice("kernel", "kernel", ENTROPY_KERNELS, "softmax"),
    ]
    return Explorer("Attention entropy", controls, _render_entropy, static)


# ----------------------------------------------------------------------------------------------
# prompt_forgetting: alpha of the relay model (the measured overlay is in companions.explorers)
# ----------------------------------------------------------------------------------------------
def relay_alpha_curves(L: int, P: int, T: int, max_depth: int = 8) -> dict:
    """The linear relay model's forgetting exponent for prompt length ``P`` and continuation up to ``T``.

    ``t`` (positions ``P+2..T``) and ``alpha_local`` = ``-d ln Delta^L_t / d ln t`` (centred differences of
    :func:`analysis.theory.prompt_forgetting.relay_offsets`), its asymptotic form ``alpha_asymptotic``, the
    theorem's bound exponent ``1 - (L-1)/ln t``; ``depths`` 1..``max_depth`` and ``alpha_window`` the exponent a
    power-law fit over ``[2P, T]`` reports at each depth (:func:`relay_alpha_window`).
    """
    check_int("L", L, minimum=1)
    check_int("P", P, minimum=1)
    check_int("T", T, minimum=4 * P + 2)
    t_all = np.arange(1, T + 1, dtype=np.float64)
    log_delta = np.log(th_pf.relay_offsets(P, L, T))
    local = -np.gradient(log_delta, np.log(t_all))
    keep = t_all > P + 1
    depths = np.arange(1, max_depth + 1)
    return {
        "t": t_all[keep],
        "alpha_local": local[keep],
        "alpha_asymptotic": th_pf.relay_local_exponent_asymptotic(P, L, t_all[keep]),
        "alpha_bound": th_pf.bound_local_exponent(L, t_all[keep]),
        "depths": depths,
        "alpha_window": np.array([th_pf.relay_alpha_window(P, int(d), 2.0 * P, T) for d in depths]),
        "window": (2.0 * P, float(T)),
    }


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
# attention_only: how many relative-position heads a convolution needs
# ----------------------------------------------------------------------------------------------
def conv_heads_curves(K: int, d: int, decay: float, seed: int = 0) -> dict:
    """Least relative MSE of ``H = 0..K`` content-free heads expressing a random K-tap convolution in ``d``
    dimensions whose taps shrink as ``decay^k`` (tap ``k``: i.i.d. N(0, decay^(2k)/d) entries).

    ``bound``: Eckart-Young on the unfolded kernel (:func:`analysis.theory.attention_only.rank_bound`);
    ``signed``: the error of its truncated-SVD factors (:func:`~analysis.theory.attention_only.mixed_error`),
    which attain it with signed patterns; ``one_hot``: H heads that each copy one tap exactly (one-hot
    patterns on the H largest taps), one choice of nonnegative patterns (softmax ones do at least this well
    at the optimum); ``sigma``: the unfolded kernel's singular values.
    """
    check_int("K", K, minimum=1)
    check_int("d", d, minimum=1)
    check_float("decay", decay, minimum=0.0, maximum=1.0)
    rng = np.random.default_rng(seed)
    kernel = rng.standard_normal((K, d, d)) / math.sqrt(d) * (decay ** np.arange(K))[:, None, None]
    if not np.any(kernel):
        kernel[0] = np.eye(d)  # decay 0 keeps tap 0 only; never an all-zero kernel
    H = np.arange(K + 1)
    tap = (kernel**2).sum((1, 2))
    kept = np.concatenate([[0.0], np.cumsum(np.sort(tap)[::-1])])
    signed = [th_ao.mixed_error(kernel, *th_ao.rank_h_factors(kernel, h)) if h else 1.0 for h in H]
    return {
        "H": H,
        "bound": np.array([th_ao.rank_bound(kernel, int(h)) for h in H]),
        "signed": np.array(signed),
        "one_hot": 1.0 - kept / tap.sum(),
        "sigma": th_ao.singular_values(kernel),
    }


def _render_conv_heads(K: int, d: int, decay: float):
    c = conv_heads_curves(K, d, decay)
    fig, (ax, ax2) = _two_panels()
    ax.plot(c["H"], c["one_hot"], "s-", color=VERMILLION, ms=3, label="one-hot heads on the largest taps")
    ax.plot(c["H"], c["signed"], "o", color=BLUE, ms=4, label="truncated SVD (signed patterns)")
    theory_line(ax, c["H"], c["bound"], "rank-H bound (Eckart-Young)")
    ax.set_xlabel("heads H")
    ax.set_ylabel("relative MSE")
    ax.set_title(f"K = {K} taps, d = {d}")
    ax.legend(fontsize=6)
    ax2.semilogy(np.arange(1, len(c["sigma"]) + 1), c["sigma"] ** 2 / (c["sigma"] ** 2).sum(), "o-", color=BLUE, ms=3)
    ax2.set_xlabel("singular value i of the unfolded kernel")
    ax2.set_ylabel("share of sigma_i^2")
    need = int(np.argmax(c["bound"] <= 1e-12)) if np.any(c["bound"] <= 1e-12) else K
    return fig, f"exact with H = {need} heads (rank of the unfolded kernel); one head leaves {c['bound'][1]:.3g}"


def explore_conv_heads(static: bool | None = None) -> Explorer:
    """Convolution by attention: the least error of H relative-position heads against H, per kernel shape."""
    controls = [
        Slider("K", "taps K", 1, 8, 1, 4, integer=True),
        Slider("d", "width d", 1, 8, 1, 4, integer=True),
        Slider("decay", "tap decay", 0.0, 1.0, 0.05, 0.7),
    ]
    return Explorer("Convolution by attention", controls, _render_conv_heads, static)


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
