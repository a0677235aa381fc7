"""Claims on trained models: DeepNet's stability and the Curse of Depth."""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from analysis.evidence import mean_se
from analysis.ledger import Ledger
from analysis.theory import signal_propagation as th
from probes.base import Result
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
    led = led.given(seed="000#65", figure="signal_deepnet_trained")
    cfg, data, sc = r.config, r.data, r.scalars
    if not cfg.trained or "stab_loss" not in data:
        return
    N, S = cfg.stability_depth, data.sizes["stab_seed"]
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
        f"L = {N}, d = {cfg.d_model}, T = {cfg.seq_len}, {cfg.stability_steps} Adam updates at the probe's rate "
        f"{stability_train_config(cfg).lr:g} without warm-up, {S} seeds"
    )
    cost = f"{S} independent seeds (about 37 s per seed for a Post-LN and a DeepNorm run, one thread)"
    led.direction(
        "deepnet_post_fails_where_deepnorm_trains",
        measured=(failed["post"] - failed["deepnorm"]) / S,
        sign=1,
        se=math.hypot(_laplace_se(failed["post"], S), _laplace_se(failed["deepnorm"], S)),
        dof=S - 1,
        hypothesis="DeepNorm's alpha, beta change nothing: Post-LN fails as often as DeepNorm",
        source="000#65 Wang et al. 2022 (DeepNet): deep Post-LN diverges or stalls without warm-up, DeepNorm trains",
        why=f"95% t band of the difference of two fractions of {S} runs each: SE the hypot of the two fractions' "
        f"Laplace SEs ((k+1)/(n+2), finite at 0 and n), dof {S} - 1 (the smaller group's n - 1); {cost}; a run "
        "fails when it diverges (non-finite loss, or final loss above the first) or stalls (final loss, the mean "
        "over the last tenth of the steps, not a tenth of the context gap H(pi) - H below the context-free H(pi))",
        statement=f"{rule}: fraction of failed runs, Post-LN minus DeepNorm > 0",
        requires_full=True,
    )
    gain = _seeds(floor - final["deepnorm"])
    led.direction(
        "deepnorm_trains_at_depth_without_warmup",
        replicates=summarised(sc, "deepnorm_context_gain", gain),
        sign=1,
        hypothesis="DeepNorm stalls at the context-free loss H(pi) as Post-LN does",
        source="000#65 Wang et al. 2022: DeepNorm trains very deep Post-LN-style stacks stably",
        why="95% t band over the seeds (n seeds) of H(pi) minus the final training loss (mean over the last tenth "
        f"of the steps); {cost}",
        statement=f"deepnorm, {rule}: final loss below the context-free loss H(pi)",
        requires_full=True,
    )
    led.direction(
        "post_final_loss_above_deepnorm_at_depth",
        replicates=_seeds(final["post"] - final["deepnorm"]),  # same seeds and data stream: paired
        sign=1,
        hypothesis="the same final loss with and without DeepNorm",
        source="000#65 Wang et al. 2022: Post-LN's instability at depth costs loss that DeepNorm keeps",
        why="95% t band over the seeds (n seeds) of the paired difference of final losses (same weight seed and "
        f"data stream); {cost}",
        statement=f"{rule}: final loss Post-LN minus DeepNorm > 0",
        requires_full=True,
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        lr_ = np.log(
            data["stab_update"].sel(stab_norm="post").values / data["stab_update"].sel(stab_norm="deepnorm").values
        )
    lr_ = _seeds(lr_)
    ratio = float(th.deepnorm_update_ratio(N, "adam"))
    sc["post_over_deepnorm_first_update"] = float(np.exp(mean_se(lr_).mean))
    sc["post_over_deepnorm_update_bound_ratio"] = ratio
    led.predict(
        "post_over_deepnorm_first_update_at_depth",
        replicates=lr_,
        expected=math.log(ratio),
        alternative=0.0,
        hypothesis="DeepNorm's alpha, beta leave the update unchanged (ratio 1)",
        source="Wang et al. 2022 (DeepNet) Theorem, theory section 10: the Adam update bounds' depth factors "
        "2 sqrt 2 N (Post-LN) and sqrt(2N) (DeepNorm), ratio 2 sqrt N; here at the training rate, where the "
        "one-step claims deepnorm_update_vs_depth_adam / post_update_at_most_linear_adam use a rate 3000x "
        "smaller, and with every parameter moving (the Theorem holds the LayerNorm gains fixed)",
        why="95% t band over the seeds (n seeds) of the paired log(|dx_L| post / |dx_L| deepnorm) after the first "
        f"update, same seed and batch; {cost}",
        statement=f"L = {N}, first Adam update at rate {stability_train_config(cfg).lr:g}: "
        f"log(update post / update deepnorm) = log(2 sqrt N)",
        requires_full=True,
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
    led.direction(
        "pre_variance_growth_superlinear_trained",
        replicates=_seeds(p),
        sign=1,
        alternative=th.PRE_LN_INIT_GROWTH_EXPONENT,
        hypothesis="linear growth (exponent 1): the sum rule's bounded increment per block, as at initialisation",
        source="000#2 GPAS / 000#50 Curse of Depth: the Pre-LN stream's variance grows faster than linearly "
        "(exponentially) across the layers of trained models",
        why=f"95% t band over the {C} trained seeds of the exponent p of m_l - m_0 ~ l^p (least squares on log-log "
        "per seed, layers 1..L with m_l > m_0, held-out Markov batch)",
        seed="000#2",
        statement=f"pre (trained), L={L}: exponent of the variance increase over layers > 1",
        requires_full=True,
        figure="signal_curse_of_depth_trained",
    )
    q = np.array(
        [th.variance_growth_exponent(r)[0] for r in data["curse_sum_rule_init"].sel(curse_norm="pre").values.T]
    )
    sc["pre_variance_growth_exponent_sum_rule_init"] = float(np.nanmean(q))
    led.direction(
        "pre_variance_grows_faster_than_init_sum_rule_trained",
        replicates=_seeds(p - q),  # same seed, same held-out batch: paired
        sign=1,
        hypothesis="training keeps the initialisation's growth law: the exponent of the sum rule m_0 + sum_l "
        "(a_l + g_l) of the same seed's untrained model (a_l grows with the tokens' correlation, so it exceeds 1)",
        source="000#2 GPAS / 000#50 Curse of Depth: training makes the Pre-LN stream grow faster across layers; "
        "theory sections 1-3 and 12 for the initialisation's law",
        why=f"95% t band over the {C} seeds of the paired difference of exponents (trained model minus the sum rule "
        "of its own initialisation, same held-out batch)",
        seed="000#2",
        statement=f"pre, L={L}: growth exponent of m_l - m_0, trained minus the sum rule at init > 0",
        requires_full=True,
        figure="signal_curse_of_depth_trained",
    )
    share_pre = np.array([deep_share(x) for x in data["curse_ablation"].sel(curse_norm="pre").values.T])
    sc["pre_deep_ablation_share_trained"] = mean_se(_seeds(share_pre)).mean
    led.direction(
        "pre_deep_blocks_matter_less_trained",
        replicates=_seeds(share_pre),
        sign=-1,
        alternative=0.5,
        hypothesis="every block equally important: the deep half takes half the ablation damage",
        source="000#50 Curse of Depth: removing a deep Pre-LN layer costs much less than removing a shallow one",
        why=f"95% t band over the {C} trained seeds of D / (D + S), D and S the mean held-out loss increase when one "
        "block of the deep half (L/2..L-1), resp. of blocks 1..L/2-1, is removed (its residual contribution zeroed)",
        seed="000#50",
        statement=f"pre (trained), L={L}: deep half's share of the per-block ablation damage < 1/2",
        requires_full=True,
        figure="signal_curse_of_depth_trained",
    )
    if "ln_scaling" in data.curse_norm.values:
        _claim_ln_scaling_trained(led, r, m_pre, share_pre)


def _claim_ln_scaling_trained(led: Ledger, r: Result, m_pre: np.ndarray, share_pre: np.ndarray) -> None:
    """The LayerNorm-scaling half of :func:`claim_curse_of_depth_trained`, paired with Pre-LN's same seeds."""
    led = led.given(seed="000#50", figure="signal_curse_of_depth_trained")
    cfg, data, sc = r.config, r.data, r.scalars
    L, C = data.sizes["clayer"], m_pre.shape[1]
    m_ls = data["curse_resid_var"].sel(curse_norm="ln_scaling").values
    lr = _seeds(np.log(m_ls[L] / m_pre[L]))  # same seeds and batch: paired
    led.direction(
        "ln_scaling_lowers_last_variance_trained",
        replicates=summarised(sc, "ln_scaling_over_pre_last_variance_trained", lr, log_ratio=True),
        sign=-1,
        hypothesis="LayerNorm scaling leaves the trained stream's variance unchanged",
        source="000#50 Curse of Depth: LayerNorm scaling (1/sqrt(l) on the norms' output) tames the variance growth",
        why=f"95% t band over the {C} seeds of the paired log(m_L ln_scaling / m_L pre)",
        statement=f"trained, L={L}: last-layer variance, ln_scaling below pre",
        requires_full=True,
    )
    share_ls = np.array([deep_share(x) for x in data["curse_ablation"].sel(curse_norm="ln_scaling").values.T])
    sc["ln_scaling_deep_ablation_share_trained"] = float(np.nanmean(share_ls))
    led.direction(
        "ln_scaling_raises_deep_block_share_trained",
        replicates=_seeds(share_ls - share_pre),  # same seeds and batch: paired
        sign=1,
        hypothesis="LayerNorm scaling leaves the deep blocks' share of the ablation damage unchanged",
        source="000#50 Curse of Depth: with LayerNorm scaling deep layers contribute more (removing them costs more)",
        why=f"95% t band over the {C} seeds of the paired difference of the deep half's share D / (D + S)",
        scale=_curse_scale(cfg),
        statement=f"trained, L={L}: deep half's ablation share, ln_scaling minus pre > 0",
        requires_full=True,
    )
