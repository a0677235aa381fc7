"""Explorers of attention itself: the entropy of a row against ``ln n - s^2/2`` (attention_entropy), how many
relative-position heads a convolution needs (attention_only), and the relay model's forgetting exponent
(prompt_forgetting; its measured overlay is in :mod:`companions.explorers`).

Each ``*_curves`` compute function is a pure function of the control values built on the theory modules, tested
in ``tests/test_explorers.py`` and timed in ``bench/run.py`` (``--only explorers``).
"""

from __future__ import annotations

import math

import numpy as np

from analysis.core.validation import check_choice, check_float, check_int
from analysis.notebook.explorers_base import Choice, Explorer, Slider, _two_panels
from analysis.notebook.plotting import BLUE, VERMILLION, theory_line
from analysis.theory import attention_entropy as th_ae
from analysis.theory import attention_only as th_ao
from analysis.theory import prompt_forgetting as th_pf

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
