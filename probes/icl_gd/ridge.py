"""Part ``ridge``: the loss against the number of context examples k for the trained predictors and the baselines,
and Bayes ridge in closed form against Monte Carlo."""

from __future__ import annotations

import numpy as np

from analysis.claims.evidence import family_size, mean_se, worst_case
from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from analysis.probing.parts import Context, each_claim
from analysis.theory import icl_gd as th
from probes.icl_gd.bands import mc_check
from probes.icl_gd.config import Config, spectrum
from probes.icl_gd.models import ModelPredictor, Stacks, predict, rng_for, sample_batch, sq_err
from probes.icl_gd.stacks import baselines

DESCRIPTION = "the loss against the number of context examples; Bayes ridge against Monte Carlo"
NEEDS = ("one_layer",)


def measure_loss_vs_k(cfg: Config, predictors: dict, one_layer: list, data: dict, scalars: dict, coords: dict) -> None:
    """Loss against the context length k: every stack, the baselines and one GD step at eta*(k); the
    headline layer, and each one-layer replicate of :func:`measure_eta_seeds`, paired with one GD step at its
    eta_fit k/N (its 1/N is fixed in its weights); Bayes ridge against its closed form (Rao-Blackwellised on
    the same contexts)."""
    d, N = cfg.d, cfg.n_context
    Sigma = th.second_moment(d, cfg.x_dist, spectrum(cfg))
    Ks = list(predictors)
    main_K = Ks[0]
    k_values = sorted(set(int(k) for k in cfg.k_values))
    curve_names = ["gd_star", "least_squares", "ridge", "averaging", "knn", "zero"]
    nk = len(k_values)
    lm, lm_se = np.full((len(Ks), nk), np.nan), np.full((len(Ks), nk), np.nan)
    lb, lb_se = np.full((len(curve_names), nk), np.nan), np.full((len(curve_names), nk), np.nan)
    th_star, th_model, th_avg, excess, excess_se, ridge_th, ridge_rb, ridge_rb_se = (
        np.full(nk, np.nan) for _ in range(8)
    )
    ridge_exact = np.zeros(nk, dtype=bool)
    excess_seeds, th_seeds = np.full((len(one_layer), nk), np.nan), np.full((len(one_layer), nk), np.nan)
    # Bayes ridge closed form: exact for sigma = 0, Marchenko-Pastur for sigma > 0 (Gaussian inputs only)
    isotropic = cfg.x_dist != "anisotropic" and (cfg.noise == 0 or cfg.x_dist == "gaussian")
    base = baselines(cfg)
    for j, k in enumerate(k_values):
        bk = sample_batch(cfg, cfg.n_eval, k, "loss_vs_k")
        one_k = th.one_step_gd_theory(d, k, cfg.x_dist, cfg.noise, Sigma=spectrum(cfg))
        th_star[j], th_avg[j] = one_k["loss_star"], float(one_k["loss_fn"](1.0))
        if main_K == 1:
            eta_eff = scalars["eta_fit"] * k / N
            th_model[j] = float(one_k["loss_fn"](eta_eff))
            paired = sq_err(predict(predictors[main_K], bk), bk) - sq_err(predict(th.one_step_gd(eta_eff), bk), bk)
            excess[j], excess_se[j] = mean_se(paired)[:2]
        for r, (_seed, mk, eta_r) in enumerate(one_layer):
            eta_eff = eta_r * k / N
            th_seeds[r, j] = float(one_k["loss_fn"](eta_eff))
            f = ModelPredictor(mk, hide_query=cfg.hide_query)
            excess_seeds[r, j] = mean_se(
                sq_err(predict(f, bk), bk) - sq_err(predict(th.one_step_gd(eta_eff), bk), bk)
            ).mean
        for i, K in enumerate(Ks):
            lm[i, j], lm_se[i, j] = mean_se(sq_err(predict(predictors[K], bk), bk))[:2]
        preds = {"gd_star": th.one_step_gd(one_k["eta_star"]), **base}
        for i, n in enumerate(curve_names):
            lb[i, j], lb_se[i, j] = mean_se(sq_err(predict(preds[n], bk), bk))[:2]
        if isotropic:
            rt = th.ridge_bayes_loss_theory(d, k, cfg.noise, v=float(Sigma[0, 0]))
            ridge_th[j], ridge_exact[j] = rt["loss"], rt["method"] == "exact"
            A = base["ridge"].linear_map(bk.x_ctx)  # the same k contexts, averaged exactly over w, noise, x_q
            ridge_rb[j], ridge_rb_se[j] = mean_se(
                th.conditional_loss_linear(A, bk.x_ctx, Sigma, cfg.noise, 1.0).numpy()
            )[:2]
    data.update(
        loss_model_k=(("K", "k"), lm),
        loss_model_k_se=(("K", "k"), lm_se),
        loss_baseline_k=(("baseline", "k"), lb),
        loss_baseline_k_se=(("baseline", "k"), lb_se),
        loss_gd_star_theory_k=(("k",), th_star),
        loss_averaging_theory_k=(("k",), th_avg),
        loss_model_theory_k=(("k",), th_model),
        excess_model_k=(("k",), excess),
        excess_model_k_se=(("k",), excess_se),
        excess_model_k_seeds=(("eta_seed", "k"), excess_seeds),
        loss_model_theory_k_seeds=(("eta_seed", "k"), th_seeds),
        loss_ridge_theory_k=(("k",), ridge_th),
        loss_ridge_rb_k=(("k",), ridge_rb),
        loss_ridge_rb_k_se=(("k",), ridge_rb_se),
        ridge_theory_exact_k=(("k",), ridge_exact),
    )
    coords.update(k=np.asarray(k_values, dtype=np.int64), baseline=np.asarray(curve_names))
    if isotropic and not ridge_exact.all():
        mp = ~ridge_exact
        scalars["ridge_mp_max_rel_error"] = float((np.abs(ridge_rb[mp] - ridge_th[mp]) / ridge_th[mp]).max())


def measure_ridge_mc(cfg: Config, data: dict, scalars: dict, coords: dict) -> None:
    """Gaussian inputs, d = ridge_mc_d, sigma = ridge_mc_noise, k = 1..3d: Bayes ridge by Monte Carlo
    (Rao-Blackwellised) beside its Marchenko-Pastur limit, and least squares by Monte Carlo at k = 2d
    beside its exact inverse-Wishart risk (the claim) and its asymptotic limit (the alternative)."""
    d, sig = cfg.ridge_mc.d, cfg.ridge_mc.noise
    rng = rng_for(cfg, "ridge_mc")
    k_r = np.arange(1, 3 * d + 1)
    mc = [
        th.expected_loss_mc(th.Ridge.bayes_optimal(sig), d, int(k), "gaussian", sig, rng, n_tasks=cfg.ridge_mc.tasks)
        for k in k_r
    ]
    data["ridge_mc_loss"] = (("ridge_k",), np.array([m["loss"] for m in mc]))
    data["ridge_mc_loss_se"] = (("ridge_k",), np.array([m["se"] for m in mc]))
    data["ridge_mp_loss"] = (("ridge_k",), np.array([th.ridge_bayes_loss_theory(d, int(k), sig)["loss"] for k in k_r]))
    data["ls_exact_loss"] = (
        ("ridge_k",),
        np.array([th.least_squares_theory(d, int(k), "gaussian", sig) for k in k_r], dtype=np.float64),
    )
    coords["ridge_k"] = k_r.astype(np.int64)
    k_ls = 2 * d
    ls = th.expected_loss_mc(th.LeastSquares(), d, k_ls, "gaussian", sig, rng, n_tasks=cfg.ridge_mc.tasks)
    scalars.update(
        ridge_mc_d=d,
        ridge_mc_noise=sig,
        ls_mc_k=k_ls,
        ls_mc_loss=ls["loss"],
        ls_mc_loss_se=ls["se"],
        ls_exact_loss=float(th.least_squares_theory(d, k_ls, "gaussian", sig)),
        ls_asymptotic_loss=sig**2 * (1 + d / (k_ls - d)),
    )


def claims_ridge(led: Ledger, r: Result) -> None:
    """Closed forms of the Bayes-optimal predictor against Monte Carlo: ridge at lambda* = sigma^2
    (exact where it exists) and least squares' inverse-Wishart risk (Gaussian, finite d)."""
    ds, s, cfg = r.data, r.scalars, r.config
    ex = ds["ridge_theory_exact_k"].values.astype(bool)
    if ex.any():
        Sigma = th.second_moment(cfg.d, cfg.x_dist, spectrum(cfg))
        # sigma = 0 and k >= d: the exact loss is 0 and the measured one float64 round-off of pinv, so the
        # SE gets a floor of 1e-9 E y^2 (pinv's relative error is ~ eps cond(X)^2, cond(X) < 1e3 here)
        se = ds["loss_ridge_rb_k_se"].values + 1e-9 * float(np.trace(Sigma))
        m, e = ds["loss_ridge_rb_k"].values, ds["loss_ridge_theory_k"].values
        z = np.where(ex, np.abs(m - e) / se, np.nan)
        j = worst_case(z)
        mc_check(
            led,
            "ridge_bayes_vs_k_exact",
            float(m[j]),
            float(e[j]),
            float(se[j]),
            family=family_size(z),
            alternative=float(np.trace(Sigma)) + cfg.noise**2,
            why="95% band of the SE of the Rao-Blackwellised mean over n_eval contexts (+ a 1e-9 E y^2 floor for "
            "pinv round-off)",
            statement=(
                "the measured loss of ridge at lambda* = sigma^2 equals its exact closed form (worst "
                f"k = {ds['k'].values[j]})"
            ),
        )
    d, k = s["ridge_mc_d"], s["ls_mc_k"]
    mc_check(
        led,
        "least_squares_inverse_wishart",
        s["ls_mc_loss"],
        s["ls_exact_loss"],
        s["ls_mc_loss_se"],
        alternative=s["ls_asymptotic_loss"],
        why="95% band of the SE of the Rao-Blackwellised Monte Carlo mean over ridge_mc_tasks Gaussian contexts",
        statement=(
            f"least squares' risk at d = {d}, k = {k}, sigma = {s['ridge_mc_noise']:g} is sigma^2 (1 + d/(k - d - 1))"
        ),
    )


def measure(ctx: Context) -> None:
    cfg = ctx.config
    stacks = ctx.get(Stacks)
    measure_loss_vs_k(cfg, stacks.predictors, stacks.one_layer, ctx.data, ctx.scalars, ctx.coords)
    measure_ridge_mc(cfg, ctx.data, ctx.scalars, ctx.coords)


claims = each_claim(claims_ridge)
