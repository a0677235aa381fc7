"""Claims on trained models: DeepNet's stability and the Curse of Depth."""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from analysis.claims.evidence import mean_se
from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from analysis.theory import signal_propagation as th
from probes.signal_propagation.claims_deepnorm import _curse_scale
from probes.signal_propagation.claims_growth import _seeds, summarised
from probes.signal_propagation.trained import deep_share, stability_train_config


def _laplace_se(k: int, n: int) -> float:
    """Standard error of a fraction of ``k`` out of ``n`` from the Laplace estimate ``(k + 1) / (n + 2)``
    (finite at 0 and n, where the plug-in binomial error is 0)."""
    p = (k + 1) / (n + 2)
    return math.sqrt(p * (1 - p) / n)


def stability_outcomes(data: xr.Dataset) -> dict[str, list[str]]:
    """norm -> the classification (theory section 13) of every stability run's loss curve."""
    floor = float(data.attrs["unigram_entropy"])
    margin = th.stall_margin(floor, float(data.attrs["entropy_rate"]))
    return {
        str(n): [
            th.classify_training(data["stab_loss"].sel(stab_norm=n).values[s], floor, margin)
            for s in range(data.sizes["stab_seed"])
        ]
        for n in data.stab_norm.values
    }


def claim_deepnet_stability(led: Ledger, r: Result) -> None:
    """DeepNet (000#65), trained: at depth, Adam at the probe's rate without warm-up, Post-LN stalls or diverges
    where DeepNorm trains; the first update's size against the Theorem's depth factors (theory sections 10, 13)."""
    cfg, data, sc = r.config, r.data, r.scalars
    if not cfg.trained or "stab_loss" not in data:
        return
    N, S = cfg.stability.depth, data.sizes["stab_seed"]
    floor = float(data.attrs["unigram_entropy"])
    margin = th.stall_margin(floor, float(data.attrs["entropy_rate"]))
    out = stability_outcomes(data)
    final = {n: np.array([th.final_loss(c) for c in data["stab_loss"].sel(stab_norm=n).values]) for n in out}
    failed = {n: sum(o != "trained" for o in out[n]) for n in out}
    for n in out:
        sc[f"{n}_L{N}_no_warmup_failed_fraction"] = failed[n] / S
        sc[f"{n}_L{N}_no_warmup_diverged"] = sum(o == "diverged" for o in out[n])
        sc[f"{n}_L{N}_no_warmup_final_loss"] = float(np.mean(final[n]))
    sc["stability_stall_threshold"] = floor - margin
    rule = (
        f"L = {N}, d = {cfg.model.d_model}, T = {cfg.seq_len}, {cfg.stability.steps} Adam updates at the probe's rate "
        f"{stability_train_config(cfg).lr:g} without warm-up, {S} seeds"
    )
    cost = f"{S} independent seeds (about 37 s per seed for a Post-LN and a DeepNorm run, one thread)"
    led.judge(
        "deepnet_post_fails_where_deepnorm_trains",
        measured=(failed["post"] - failed["deepnorm"]) / S,
        se=math.hypot(_laplace_se(failed["post"], S), _laplace_se(failed["deepnorm"], S)),
        dof=S - 1,
        why=f"95% t band of the difference of two fractions of {S} runs each: SE the hypot of the two fractions' "
        f"Laplace SEs ((k+1)/(n+2), finite at 0 and n), dof {S} - 1 (the smaller group's n - 1); {cost}; a run "
        "fails when it diverges (non-finite loss, or final loss above the first) or stalls (final loss, the mean "
        "over the last tenth of the steps, not a tenth of the context gap H(pi) - H below the context-free H(pi))",
        statement=f"{rule}: fraction of failed runs, Post-LN minus DeepNorm > 0",
    )
    gain = _seeds(floor - final["deepnorm"])
    led.judge(
        "deepnorm_trains_at_depth_without_warmup",
        replicates=summarised(sc, "deepnorm_context_gain", gain),
        why="95% t band over the seeds (n seeds) of H(pi) minus the final training loss (mean over the last tenth "
        f"of the steps); {cost}",
        statement=f"deepnorm, {rule}: final loss below the context-free loss H(pi)",
    )
    led.judge(
        "post_final_loss_above_deepnorm_at_depth",
        replicates=_seeds(final["post"] - final["deepnorm"]),  # same seeds and data stream: paired
        why="95% t band over the seeds (n seeds) of the paired difference of final losses (same weight seed and "
        f"data stream); {cost}",
        statement=f"{rule}: final loss Post-LN minus DeepNorm > 0",
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        lr_ = np.log(
            data["stab_update"].sel(stab_norm="post").values / data["stab_update"].sel(stab_norm="deepnorm").values
        )
    lr_ = _seeds(lr_)
    ratio = float(th.deepnorm_update_ratio(N, "adam"))
    sc["post_over_deepnorm_first_update"] = float(np.exp(mean_se(lr_).mean))
    sc["post_over_deepnorm_update_bound_ratio"] = ratio
    led.judge(
        "post_over_deepnorm_first_update_at_depth",
        replicates=lr_,
        expected=math.log(ratio),
        alternative=0.0,
        why="95% t band over the seeds (n seeds) of the paired log(|dx_L| post / |dx_L| deepnorm) after the first "
        f"update, same seed and batch; {cost}",
        statement=f"L = {N}, first Adam update at rate {stability_train_config(cfg).lr:g}: "
        f"log(update post / update deepnorm) = log(2 sqrt N)",
    )


def claim_curse_of_depth_trained(led: Ledger, r: Result) -> None:
    """GPAS (000#2) / Curse of Depth (000#50), trained: Pre-LN's stream grows faster than linearly over the
    layers; LayerNorm scaling lowers it; removing a deep block costs less than a shallow one, less so with
    LayerNorm scaling (theory section 12 gives the linear alternative)."""
    cfg, data, sc = r.config, r.data, r.scalars
    if not cfg.trained or "curse_resid_var" not in data or "pre" not in data.curse_norm.values:
        return
    L = data.sizes["clayer"]
    if L < 4:
        return
    m_pre = data["curse_resid_var"].sel(curse_norm="pre").values  # (pos, seed)
    C = m_pre.shape[1]
    p = np.array([th.variance_growth_exponent(m_pre[:, s])[0] for s in range(C)])
    sc["pre_variance_growth_exponent_trained"] = mean_se(_seeds(p)).mean
    led.judge(
        "pre_variance_growth_superlinear_trained",
        replicates=_seeds(p),
        alternative=th.PRE_LN_INIT_GROWTH_EXPONENT,
        why=f"95% t band over the {C} trained seeds of the exponent p of m_l - m_0 ~ l^p (least squares on log-log "
        "per seed, layers 1..L with m_l > m_0, held-out Markov batch)",
        statement=f"pre (trained), L={L}: exponent of the variance increase over layers > 1",
    )
    q = np.array(
        [th.variance_growth_exponent(r)[0] for r in data["curse_sum_rule_init"].sel(curse_norm="pre").values.T]
    )
    sc["pre_variance_growth_exponent_sum_rule_init"] = float(np.nanmean(q))
    led.judge(
        "pre_variance_grows_faster_than_init_sum_rule_trained",
        replicates=_seeds(p - q),  # same seed, same held-out batch: paired
        why=f"95% t band over the {C} seeds of the paired difference of exponents (trained model minus the sum rule "
        "of its own initialisation, same held-out batch)",
        statement=f"pre, L={L}: growth exponent of m_l - m_0, trained minus the sum rule at init > 0",
    )
    share_pre = np.array([deep_share(x) for x in data["curse_ablation"].sel(curse_norm="pre").values.T])
    sc["pre_deep_ablation_share_trained"] = mean_se(_seeds(share_pre)).mean
    led.judge(
        "pre_deep_blocks_matter_less_trained",
        replicates=_seeds(share_pre),
        alternative=0.5,
        why=f"95% t band over the {C} trained seeds of D / (D + S), D and S the mean held-out loss increase when one "
        "block of the deep half (L/2..L-1), resp. of blocks 1..L/2-1, is removed (its residual contribution zeroed)",
        statement=f"pre (trained), L={L}: deep half's share of the per-block ablation damage < 1/2",
    )
    if "ln_scaling" in data.curse_norm.values:
        _claim_ln_scaling_trained(led, r, m_pre, share_pre)


def _claim_ln_scaling_trained(led: Ledger, r: Result, m_pre: np.ndarray, share_pre: np.ndarray) -> None:
    """The LayerNorm-scaling half of :func:`claim_curse_of_depth_trained`, paired with Pre-LN's same seeds."""
    cfg, data, sc = r.config, r.data, r.scalars
    L, C = data.sizes["clayer"], m_pre.shape[1]
    m_ls = data["curse_resid_var"].sel(curse_norm="ln_scaling").values
    lr = _seeds(np.log(m_ls[L] / m_pre[L]))  # same seeds and batch: paired
    led.judge(
        "ln_scaling_lowers_last_variance_trained",
        replicates=summarised(sc, "ln_scaling_over_pre_last_variance_trained", lr, log_ratio=True),
        why=f"95% t band over the {C} seeds of the paired log(m_L ln_scaling / m_L pre)",
        statement=f"trained, L={L}: last-layer variance, ln_scaling below pre",
    )
    share_ls = np.array([deep_share(x) for x in data["curse_ablation"].sel(curse_norm="ln_scaling").values.T])
    sc["ln_scaling_deep_ablation_share_trained"] = float(np.nanmean(share_ls))
    led.judge(
        "ln_scaling_raises_deep_block_share_trained",
        replicates=_seeds(share_ls - share_pre),  # same seeds and batch: paired
        why=f"95% t band over the {C} seeds of the paired difference of the deep half's share D / (D + S)",
        scale=_curse_scale(cfg),
        statement=f"trained, L={L}: deep half's ablation share, ln_scaling minus pre > 0",
    )
