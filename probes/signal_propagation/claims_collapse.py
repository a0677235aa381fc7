"""Claims on the block Jacobians, the gradient profiles and rank collapse (Dong et al.)."""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from analysis.claims.evidence import mean_se
from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from analysis.theory import signal_propagation as th
from probes.signal_propagation.claims_deepnorm import _curse_scale
from probes.signal_propagation.claims_growth import _seeds, _slopes, summarised
from probes.signal_propagation.config import COLLAPSE_VARIANTS, MASKS


def _gaps(data: xr.Dataset, norm: str, L: int) -> np.ndarray:
    """(layer, sample) log Jacobian gap of the depth-L model (NaN where not computed)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(data["jacobian_identity_gap"].sel(norm=norm, depth=L).values[:L])


def claim_jacobian_gap(led: Ledger, r: Result) -> None:
    """Theory section 6 and Curse of Depth (000#50): Pre-LN blocks' Jacobians approach the identity with
    depth (|J_l - I| ~ m_l^(-1/2) at init); LayerNorm scaling's effect on the deep blocks."""
    cfg, data, sc = r.config, r.data, r.scalars
    L = int(max(data.depth.values))
    norms = list(data.norm.values)
    if "pre" not in norms or L < 4:
        return
    tag = "trained" if cfg.trained else "init"
    lg = _gaps(data, "pre", L)
    if not cfg.trained and cfg.skip:
        mom = data["resid_var"].sel(norm="pre", depth=L).values[:L]  # (layer, sample) input moment of block l
        js = [s for s in range(lg.shape[1]) if np.isfinite(lg[:, s]).all()]  # the seeds with Jacobians
        # block 0 reads the embedding: layers 1..L-1, each seed's gaps on its own moments
        slopes = _seeds(_slopes(mom[1:, js], np.exp(lg[1:, js]))) if js else [math.nan]
        led.judge(
            "pre_jacobian_gap_vs_moment",
            replicates=summarised(sc, "pre_jacobian_gap_vs_moment_exponent", slopes),
            expected=th.PRE_LN_JACOBIAN_VS_MOMENT_EXPONENT,
            alternative=0.0,
            why="95% t band over the initialisations with exact Jacobians (n seeds, the first JACOBIAN_SAMPLES) of "
            "each seed's log-log slope of |J_l - I| on its own m_l over layers 1..L-1",
            statement=f"pre, L={L}: slope of log |J_l - I| on log m_l = -1/2",
        )
    half = L // 2
    with np.errstate(invalid="ignore"):  # seeds without Jacobians are all NaN and left out
        d = _seeds(lg[half:].mean(0) - lg[:half].mean(0))  # (sample,) per seed, deep half minus shallow half
    led.judge(
        f"pre_deep_blocks_near_identity_{tag}",
        replicates=summarised(sc, f"pre_jacobian_gap_late_over_early_{tag}", d, log_ratio=True),
        why="95% t band over the initialisations with exact Jacobians (n seeds) of each seed's mean log gap over "
        "the deep half minus that over the shallow half",
        statement=f"pre ({tag}), L={L}: mean log gap, deep half < shallow half",
    )
    if "ln_scaling" not in norms:
        return
    with np.errstate(invalid="ignore"):
        d = _seeds(_gaps(data, "ln_scaling", L)[half:].mean(0) - lg[half:].mean(0))  # (sample,) same seeds: paired
    sc[f"ln_scaling_over_pre_deep_gap_{tag}"] = float(np.exp(mean_se(d).mean))
    why = (
        "95% t band over the initialisations with exact Jacobians (n seeds) of the paired difference of each "
        "seed's mean log gap over the deep half, ln_scaling minus pre (same weight seed and batch)"
    )
    if cfg.trained:
        led.judge(
            "ln_scaling_moves_deep_blocks_from_identity",
            replicates=d,
            why=why,
            scale=_curse_scale(cfg),
            statement=f"trained, L={L}: mean log gap over the deep half, ln_scaling > pre",
        )
    else:
        led.judge(
            "ln_scaling_deep_blocks_closer_to_identity_at_init",
            replicates=d,
            why=why,
            statement=f"init, L={L}: mean log gap over the deep half, ln_scaling < pre",
        )


def claim_gradient_profiles(led: Ledger, r: Result) -> None:
    """NormFormer (000#94) / Mix-LN (000#62), claims about trained models (evaluated on a trained run;
    at initialisation only the scalars are kept): Pre-LN's early layers get larger gradients, Post-LN's
    smaller; Mix-LN's are the most uniform."""
    cfg, data, sc = r.config, r.data, r.scalars
    L = int(max(data.depth.values))
    if L < 8:
        return
    tag = "trained" if cfg.trained else "init"
    q = max(1, L // 4)
    lr, cv = {}, {}
    for norm in [n for n in ("pre", "post", "mix") if n in data.norm.values]:
        g = data["grad_norm"].sel(norm=norm, depth=L).values[:L]  # (layer, param, sample)
        per = np.sqrt(np.nansum(g**2, axis=1))  # (layer, sample)
        lr[norm] = np.log(per[:q].mean(0) / per[-q:].mean(0))  # (sample,)
        cv[norm] = per.std(0) / per.mean(0)
        sc[f"{norm}_grad_first_over_last_quarter_{tag}"] = float(np.exp(lr[norm].mean()))
        sc[f"{norm}_grad_cv_{tag}"] = float(cv[norm].mean())
    if not cfg.trained:
        return
    why = "95% t band over the trained seeds (n seeds) of log(mean grad, first quarter / last quarter)"
    for norm, sign in (("pre", 1), ("post", -1)):
        if norm in lr:
            led.judge(
                f"{norm}_early_gradients_{'larger' if sign > 0 else 'smaller'}",
                replicates=_seeds(lr[norm]),
                why=why,
                statement=f"{norm} (trained), L={L}: log grad(first quarter)/grad(last quarter) "
                f"{'>' if sign > 0 else '<'} 0",
            )
    if {"pre", "post", "mix"} <= set(cv):
        best = "pre" if cv["pre"].mean() < cv["post"].mean() else "post"
        led.judge(
            "mix_most_uniform_gradients",
            replicates=_seeds(cv["mix"] - cv[best]),  # same seeds: paired
            hypothesis=f"Mix-LN no more uniform than the better of Pre-/Post-LN ({best})",
            why=f"95% t band over the trained seeds (n seeds) of the paired CV(mix) - CV({best}) of per-layer "
            "gradient norms",
            statement=f"mix (trained), L={L}: CV of per-layer gradient norm below {best}'s",
        )


ROUNDOFF = 1e-16  # float64 round-off of a collapsed stream's residual ratio: logs are taken above it


def _collapse(data: xr.Dataset, variant: str, mask: str) -> np.ndarray:
    """(cpos, sample) residual ratio of a rank-collapse variant."""
    return data["collapse_residual"].sel(variant=variant, mask=mask).values


def _decrement_growth(r: np.ndarray) -> np.ndarray:
    """(sample,) mean log-decrement growth of each initialisation's curve (NaN with too few steps)."""
    return np.array([th.log_decrement_growth(r[:, s])[0] for s in range(r.shape[1])])


def _log10_kept(r: np.ndarray) -> np.ndarray:
    """(sample,) log10 (r_L / r_0), floored at float64 round-off."""
    return np.log10(np.maximum(r[-1], ROUNDOFF) / r[0])


def claim_dong_doubly_exponential(led: Ledger, r: Result) -> None:
    """Dong et al. 2021: pure attention, and attention + MLP without skips, lose rank doubly exponentially
    (r_{l+1} <= c r_l^3); theory section 11: a LayerNorm after each attention changes c, not the cube."""
    cfg, data, sc = r.config, r.data, r.scalars
    if cfg.trained:
        return
    for mask in MASKS:
        for variant in ("pure_attention", "attention_mlp", "attention_ln"):
            growth = _seeds(_decrement_growth(_collapse(data, variant, mask)))
            led.judge(
                f"{variant}_doubly_exponential_{mask}",
                replicates=summarised(sc, f"{variant}_decrement_growth_{mask}", growth),
                why="95% t band over the initialisations (n seeds: those with two decrements above round-off) of "
                "each seed's mean log(delta_(l+1)/delta_l) of the log-decrements "
                "delta_l = log(r_l/r_(l+1)) above round-off (log 3 for r -> c r^3 once r is small, 0 for an "
                "exponential)",
                statement=f"{variant} ({mask} mask): the log-decrement grows with depth",
            )


def claim_dong_mlp_slows(led: Ledger, r: Result) -> None:
    """Dong et al. 2021: MLPs (a large Lipschitz constant) slow down rank collapse."""
    cfg, data, sc = r.config, r.data, r.scalars
    if cfg.trained:
        return
    for mask in MASKS:
        pure, mlp = _collapse(data, "pure_attention", mask), _collapse(data, "attention_mlp", mask)
        ok = (pure > 1e-12) & (mlp > 1e-12)  # both above round-off
        with np.errstate(divide="ignore", invalid="ignore"):
            per = np.array(
                [
                    np.log10(mlp[ok[:, s], s] / pure[ok[:, s], s]).mean() if ok[:, s].any() else np.nan
                    for s in range(pure.shape[1])
                ]
            )
        per = _seeds(per)
        led.judge(
            f"mlp_slows_collapse_{mask}",
            replicates=summarised(sc, f"mlp_over_pure_log10_residual_{mask}", per),
            why="95% t band over the initialisations (n seeds) of each seed's mean log10 ratio of the residuals, "
            "attention + MLP over pure attention (same weight seed and tokens), over the layers where both are above "
            "round-off",
            statement=f"attention + MLP ({mask} mask): mean log10 residual ratio above pure attention's",
        )


def claim_collapse_prevented(led: Ledger, r: Result) -> None:
    """Dong et al. 2021 / Noci et al. 2022: skips (with or without Pre-LN) keep the rank that pure attention
    loses, 1/sqrt(L) branch scaling keeps more; a LayerNorm without skips does not (theory section 11)."""
    cfg, data, sc = r.config, r.data, r.scalars
    if cfg.trained:
        return
    for mask in MASKS:
        kept = {v: _log10_kept(_collapse(data, v, mask)) for v in COLLAPSE_VARIANTS}  # (sample,) each
        for v, k_ in kept.items():
            sc[f"{v}_residual_kept_{mask}"] = float(10 ** np.mean(k_))
        rows = (
            ("skip_prevents_collapse", "skip", "pure_attention"),
            ("pre_ln_prevents_collapse", "pre_ln", "pure_attention"),
            ("branch_scaling_keeps_more_rank", "skip_scaled", "skip"),
        )
        for name, better, worse in rows:
            led.judge(
                f"{name}_{mask}",
                replicates=_seeds(kept[better] - kept[worse]),  # same seeds and tokens: paired
                why="95% t band over the initialisations (n seeds) of the paired difference of log10(r_L/r_0) "
                "(floored at float64 round-off)",
                statement=f"{better} over {worse} ({mask} mask): log10(r_L/r_0) larger",
            )
        led.judge(
            f"attention_ln_still_collapses_{mask}",
            replicates=_seeds(kept["attention_ln"]),
            why="95% t band over the initialisations (n seeds) of log10(r_L/r_0)",
            statement=f"attention + LayerNorm, no skip ({mask} mask): log10(r_L/r_0) < 0",
        )
