"""Claims on the residual stream at initialisation: Pre-LN's sum rule and growth law, Peri-LN's linear growth,
Post-LN's unit variance and the growth without a norm."""

from __future__ import annotations

import math

import numpy as np
import xarray as xr
from scipy import stats

from analysis.claims.evidence import mean_se
from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from analysis.theory import signal_propagation as th
from probes.signal_propagation.config import PRE_LIKE, Config


def _seeds(v: np.ndarray) -> list[float]:
    """The per-seed replicate values of a claim: the finite entries of ``v`` (a seed whose statistic is
    undefined, e.g. a log-decrement growth with too few steps above round-off or a seed without Jacobians, is
    left out, and the band's ``n`` counts the others); ``[nan]`` when none is finite (the claim is unmeasured)."""
    v = np.asarray(v, dtype=np.float64).ravel()
    v = v[np.isfinite(v)]
    return [float(x) for x in v] if v.size else [math.nan]


def summarised(sc: dict, key: str, replicates, log_ratio: bool = False):
    """``replicates`` (a claim's per-seed values), their mean recorded as the result's scalar ``key`` first (for a
    log ratio, ``log_ratio``: the exp of the mean, the geometric-mean ratio)."""
    mean = mean_se(replicates).mean
    sc[key] = float(np.exp(mean)) if log_ratio else mean
    return replicates


def _paired_se(d: np.ndarray) -> tuple[float, float]:
    """SE over seeds of the finite per-seed values ``d`` (measurement minus prediction, same seed) and its
    degrees of freedom ``n - 1``: the band of a prediction whose expected value is itself measured per seed."""
    st = mean_se(_seeds(d))
    return st.se, float(max(st.n - 1, 0))


def _slopes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(sample,) log-log slope of each seed's column of ``y`` (points, sample) on ``x`` (points,) or on its own
    column of ``x`` (points, sample)."""
    y = np.asarray(y, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    xs = x if x.ndim == 2 else np.repeat(x[:, None], y.shape[1], axis=1)
    return np.array([th.loglog_slope(xs[:, s], y[:, s])[0] for s in range(y.shape[1])])


def last_layer_grad(data: xr.Dataset, norm: str) -> np.ndarray:
    """(depth, sample) gradient norm of the last block's MLP read-out (W_out; W_o without MLP)."""
    g = data["grad_norm"].sel(norm=norm)
    p = "W_out" if np.isfinite(g.sel(param="W_out")).any() else "W_o"
    return np.stack([g.sel(depth=L, layer=L - 1, param=p).values for L in data.depth.values])


def final_moment(data: xr.Dataset, norm: str) -> np.ndarray:
    """(depth, sample) residual second moment after the last block."""
    v = data["resid_var"].sel(norm=norm)
    return np.stack([v.sel(depth=L, pos=L).values for L in data.depth.values])


def _stream(data: xr.Dataset, norm: str) -> tuple[int, np.ndarray, np.ndarray]:
    """Deepest model of ``norm``: (L, moments m_l (L + 1, sample), per-block increments (L, sample))."""
    L = int(max(data.depth.values))
    v = data["resid_var"].sel(norm=norm, depth=L).values[: L + 1]
    return L, v, np.diff(v, axis=0)


def _mlp_terms(cfg: Config, norm: str, L: int) -> np.ndarray:
    """(L,) the Pre-LN MLP moments g_l = E gelu(s_l z)^2 (s_l = 1/sqrt(l) under LayerNorm scaling)."""
    if cfg.attn_only:
        return np.zeros(L)
    s = [th.ln_scaling_factor(k) if norm == "ln_scaling" else 1.0 for k in range(1, L + 1)]
    return np.array([th.gelu_second_moment(x) for x in s])


INCREMENT_WHY = (
    "95% t band over the initialisations (n seeds, dof n - 1) of each seed's mean per-block residual (increment - "
    "prediction, the prediction measured on the same seed): each block's residual has conditional mean zero given "
    "the stream before it (the branch's last weight matrix is sign-symmetric and independent of it), so a seed's "
    "mean residual has mean zero and the seeds are independent"
)


def claim_pre_ln_sum_rule(led: Ledger, r: Result) -> None:
    """Theory sections 1-3: a Pre-LN block adds a_l + g_l to the stream's second moment; the closed-form
    envelope a_l in [0, s_l^2] bounds the mean increment per block."""
    cfg, data, sc = r.config, r.data, r.scalars
    if cfg.trained or not cfg.skip:
        return
    for norm in [n for n in data.norm.values if n in PRE_LIKE]:
        L, v, inc = _stream(data, norm)
        a = data["attn_moment"].sel(norm=norm, depth=L).values[:L]  # (layer, sample)
        g = _mlp_terms(cfg, norm, L)[:, None]
        se, dof = _paired_se((inc - a - g).mean(0))  # (sample,) each seed's mean residual
        sc[f"{norm}_increment_per_block"] = float(inc.mean())
        led.judge(
            f"{norm}_variance_sum_rule",
            measured=float(inc.mean()),
            expected=float((a + g).mean()),
            se=se,
            dof=dof,
            alternative=float(g.mean()),
            why=INCREMENT_WHY,
            statement=f"{norm}, L={L}: mean increment of m_l per block = mean (a_l + g_l)",
        )
        lower, upper = th.pre_ln_envelope(0.0, L, not cfg.attn_only, norm == "ln_scaling")
        for name, envelope, end, statement in (
            ("above_mlp_floor", lower, "lower end (a_l = 0)", "mean increment >= mean g_l"),
            ("below_envelope", upper, "upper end (a_l = s_l^2)", "mean increment <= mean (s_l^2 + g_l)"),
        ):
            led.judge(
                f"{norm}_increment_{name}",
                measured=float(inc.mean()),
                bound=float(envelope[-1] / L),
                why=f"the envelope's {end} per block; the point estimate of the mean increment, not widened",
                statement=f"{norm}, L={L}: {statement}",
            )


def claim_peri_ln_linear(led: Ledger, r: Result) -> None:
    """Theory section 4: each Peri-LN sublayer adds exactly one unit (its output is a LayerNorm output)."""
    cfg, data = r.config, r.data
    if cfg.trained or not cfg.skip or "peri" not in data.norm.values:
        return
    L, v, inc = _stream(data, "peri")
    per = 1.0 if cfg.attn_only else 2.0
    g = 0.0 if cfg.attn_only else th.gelu_second_moment(1.0)
    led.judge(
        "peri_variance_linear",
        replicates=_seeds(inc.mean(0)),  # (sample,) each seed's mean increment per block
        expected=per,
        alternative=1.0 + g,
        why="95% t band over the initialisations (n seeds) of each seed's mean increment per block: a block's "
        "increment minus its prediction has conditional mean zero given the stream before it (the branch's last "
        "weight matrix is sign-symmetric and independent of it), and the seeds are independent",
        statement=f"peri, L={L}: mean increment of m_l per block = {per:g}",
    )


def claim_pre_ln_growth_law(led: Ledger, r: Result) -> None:
    """GPAS (000#2) / Curse of Depth (000#50): Pre-LN variance grows exponentially with depth. At
    initialisation our sum rule makes it linear; the papers' exponential is the alternative."""
    cfg, data, sc = r.config, r.data, r.scalars
    depths = sorted(int(L) for L in data.depth.values)
    if cfg.trained or not cfg.skip or "pre" not in data.norm.values or len(depths) < 3 or depths[-1] < 8:
        return
    a_, b_, deep = depths[-3:]
    ma, mb, md = (data["resid_var"].sel(norm="pre", depth=L, pos=L).values for L in (a_, b_, deep))  # (sample,)
    lin = mb + (mb - ma) * (deep - b_) / (b_ - a_)
    expo = mb * (mb / ma) ** ((deep - b_) / (b_ - a_))
    sc["pre_variance_linear_extrapolation"] = float(lin.mean())
    sc["pre_variance_exponential_extrapolation"] = float(expo.mean())
    se, dof = _paired_se(md - lin)
    led.judge(
        "pre_variance_growth_linear",
        measured=float(md.mean()),
        expected=float(lin.mean()),
        se=se,
        dof=dof,
        alternative=float(expo.mean()),
        why=f"95% t band over the initialisations (n seeds, dof n - 1) of m_{deep} minus the straight line through "
        f"m_{a_}, m_{b_} of the same initialisation",
        statement=f"pre, init: m_{deep} on the line through L={a_}, {b_} (not on the exponential)",
    )


def claim_post_ln_unit(led: Ledger, r: Result) -> None:
    """A Post-LN stream is a LayerNorm output: its second moment is sigma^2 / (sigma^2 + eps) per token
    (at initialisation, where the LayerNorm's gain is 1 and its bias 0). Claimed with skip connections only:
    the tolerance needs token variances above 1e-2, which a unit stream plus a branch has; a bare branch
    need not (skip=false, d_model=2 gave 1 - m = 1.4e-3)."""
    cfg, data = r.config, r.data
    if cfg.trained or not cfg.skip or "post" not in data.norm.values:
        return
    v, e = data["resid_var"].sel(norm="post"), data["post_ln_moment"].sel(norm="post")
    worst = max(
        float(np.nanmax(np.abs(v.sel(depth=L).values[1 : L + 1] - e.sel(depth=L).values[1 : L + 1])))
        for L in data.depth.values
    )
    led.judge(
        "post_variance_unit",
        measured=worst,
        expected=0.0,
        atol=1e-12,
        why="the output's second moment is mean_t sigma_t^2 / (sigma_t^2 + eps) exactly (sigma_t^2: the norm "
        "input's variance over the width, read at its hook); float64 round-off of means over <= 1e4 values",
        statement="post: m_l = mean_t sigma_t^2 / (sigma_t^2 + eps) (= 1 - O(eps / sigma^2)) at every block and depth",
    )


def claim_no_norm_growth(led: Ledger, r: Result) -> None:
    """Theory section 8: without norms each block adds a_l + mean_t G(q_mid,t): exponential growth."""
    cfg, data, sc = r.config, r.data, r.scalars
    if cfg.trained or not cfg.skip or "none" not in data.norm.values:
        return
    L, v, inc = _stream(data, "none")
    a = data["attn_moment"].sel(norm="none", depth=L).values[:L]
    gm = np.zeros_like(a) if cfg.attn_only else data["mlp_moment"].sel(norm="none", depth=L).values[:L]
    m = v[:L]  # the block's input moment: relative increments have comparable spread at every depth
    se, dof = _paired_se(((inc - a - gm) / m).mean(0))  # (sample,) each seed's mean relative residual
    led.judge(
        "none_variance_sum_rule",
        measured=float((inc / m).mean()),
        expected=float(((a + gm) / m).mean()),
        se=se,
        dof=dof,
        alternative=float((gm / m).mean()),
        why=INCREMENT_WHY + "; each residual is divided by the block's input moment m_l (known given the past)",
        statement=f"none, L={L}: mean relative increment (m_{{l+1}} - m_l)/m_l = mean (a_l + G_l)/m_l",
    )
    m0 = float(v[0].mean())
    lower = float(th.no_norm_lower_bound(m0, L, not cfg.attn_only)[-1])
    sc["none_variance_lower_bound"] = lower
    led.judge(
        "none_variance_lower_bound",
        measured=float(v[L].mean()),
        bound=lower,
        why="rigorous for E m_L at any width; the sample mean is compared unwidened. A tighter closed form needs "
        "a lower bound on the attention ratio kappa (not derived) or a convex minorant of G (the mean-field "
        "iterate is no bound: G is not convex at large q); the tight law is none_exponential_growth_factor",
        statement=f"none, L={L}: m_L >= (5/4)^L m_0",
    )
    if L < 8:
        return
    half = L // 2
    layers = np.arange(half, L + 1)
    # per seed: the growth factor exp(slope) of its own log m_l over the deep half, and its own kappa = a_l / m_l
    growth = np.array([np.exp(stats.linregress(layers, np.log(v[half : L + 1, s])).slope) for s in range(v.shape[1])])
    kappas = np.nanmean(a[half:] / v[half:L], axis=0)  # (sample,)
    predicted = np.array([th.no_norm_growth_factor(k, not cfg.attn_only) for k in kappas])
    kappa = float(np.nanmean(kappas))
    se, dof = _paired_se(growth - predicted)
    sc["none_growth_factor_per_block"] = float(np.mean(growth))
    sc["none_kappa_deep_mean"] = kappa
    led.judge(
        "none_exponential_growth_factor",
        band=dict(measured=float(np.mean(growth)), se=se, dof=dof),  # the seed-mean factor and its paired SE
        expected=th.no_norm_growth_factor(kappa, not cfg.attn_only),
        alternative=th.no_norm_growth_factor(0.0, not cfg.attn_only),
        why="95% t band over the initialisations (n seeds, dof n - 1) of each seed's exp(slope) of log m_l on l "
        "over the deep half minus (1 + kappa) 3/2 at that seed's own mean kappa (the law is linear in kappa, so "
        "the mean prediction is the law at the mean kappa)",
        regime=["none_variance_sum_rule"],  # the growth law is the sum rule's increment a_l + G at large q
        scale=f"the law is the mean-field limit d -> inf (theory section 8); here d_model = {cfg.model.d_model}: the "
        "per-block ratios m_{l+1}/m_l fluctuate (sd of their log about 0.3 at d = 32, 0.14 at d = 128) and exp(slope), "
        "their geometric mean, lies below their mean by about half that variance; knob: d_model",
        statement=f"none, L={L}: per-block growth factor of m_l in the deep half = (1 + kappa) 3/2",
    )
