"""Part ``one_layer``: trained LSA stacks of every depth (the passed model in its place), their weights against GD,
GD++ and the learned step, and one trained layer over independent seeds against the optimal step."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from analysis.claims.evidence import mean_se
from analysis.claims.ledger import Ledger
from analysis.data.regression_data import RegressionBatch
from analysis.probing.base import Result
from analysis.probing.parts import Context, each_claim
from analysis.theory import icl_gd as th
from analysis.training.train import train
from probes.icl_gd.bands import SOURCE_ETA, claim_seed, seeds_ok
from probes.icl_gd.config import Config, part_seeds, spectrum
from probes.icl_gd.models import (
    ModelPredictor,
    NegYReadoutTask,
    OneStepGD,
    Stacks,
    as_float64,
    best_gd_eta,
    lsa_weights_from_model,
    model_config,
    predict,
    regression_task,
    sample_batch,
    sq_err,
    torch_threads,
    train_config,
)

PART_NAME = "one_layer"
DESCRIPTION = "trained LSA stacks of every depth against GD, GD++ and the learned step; one layer over seeds"
FIELDS = ("eta_seeds", "train_steps", "train_lr")
PROVIDES = (Stacks,)


def train_one(cfg: Config, n_layers: int, progress: bool, seed: int | None = None, link: str = "linear") -> tuple:
    """Train (cached) one LSA stack: (float64 model, MSE history, wall time, from cache). ``seed`` (default
    ``cfg.seed``: weights and data stream) is a replicate's seed (:func:`part_seeds`); ``link`` the responses
    of :func:`regression_task`."""
    task = NegYReadoutTask(regression_task(cfg, link=link), hide_query=cfg.hide_query)
    with torch_threads(cfg.threads):
        res = train(
            model_config(cfg, n_layers, seed=seed),
            task,
            train_config(cfg, n_layers, seed=seed),
            device=cfg.torch_device(),
            progress=progress,
        )
    hist = 2.0 * np.asarray(res.history["loss"], dtype=np.float64)  # back to plain MSE
    return as_float64(res.model), hist, float(res.meta.get("wall_time", res.wall_time)), bool(res.from_cache)


def train_stacks(cfg: Config, model: Any, progress: bool) -> dict[int, tuple]:
    if model is not None:
        return {int(model.n_layers): (model, None, 0.0, False)}
    return {int(K): train_one(cfg, int(K), progress) for K in cfg.depths}


# per-depth results of measure_stacks, each a (K,) array of the Dataset (in this order)
STACK_FIELDS = (
    "loss_model",
    "loss_model_se",
    "eta_fit_pred",
    "eta_fit_pred_se",
    "eta_fit_weights",
    "off_structure",
    "loss_gd_steps",
    "eta_gd_steps",
    "cos_steps",
    "preds_diff_steps",
    "model_diff_steps",
    "train_time_s",
    "map_error",
    "loss_gd_perstep",
    "excess_over_gd_perstep",
    "excess_over_gd_perstep_se",
    "loss_gdpp",
    "excess_over_gdpp",
    "excess_over_gdpp_se",
    "cos_gdpp",
    "depth_diff_prev",
    "depth_diff_prev_se",
)


STACK_SCHEDULES = ("eta_gd_perstep", "eta_gdpp", "gamma_gdpp")  # per depth and layer, (K, layer) arrays


def measure_stacks(
    cfg: Config, trained: dict, eta_star: float, data: dict, scalars: dict, coords: dict
) -> tuple[dict, dict]:
    """Per depth K: loss, eta read two ways (:func:`stack_weights`), K-step GD (one eta, per-step etas) and
    GD++ fitted on a separate batch and measured paired with the model (:func:`stack_vs_gd`); the paired
    difference to the previous depth; then the headline (first) model against GD at eta* and the
    baselines (:func:`measure_headline`). Returns the predictors and, per depth, the fitted schedules'
    squared errors on the evaluation tasks."""
    Sigma = th.second_moment(cfg.d, cfg.x_dist, spectrum(cfg))
    evalN = sample_batch(cfg, cfg.n_eval, cfg.n_context, "eval")
    fit_batch = sample_batch(cfg, cfg.n_fit, cfg.n_context, "gd_schedule_fit")
    Ks, Kmax = list(trained), max(trained)
    per_K: dict[str, list[float]] = {k: [] for k in STACK_FIELDS}
    sched = {n: np.full((len(trained), Kmax), np.nan) for n in STACK_SCHEDULES}
    predictors: dict[int, ModelPredictor] = {}
    sq_schedules: dict[int, dict[str, np.ndarray]] = {}
    sq_prev = None
    for i, (K, (mk, hist, wall, _cached)) in enumerate(trained.items()):
        f = predictors[K] = ModelPredictor(mk, label=f"lsa{K}", hide_query=cfg.hide_query)
        pred = predict(f, evalN)
        sq_model = sq_err(pred, evalN)
        row = dict(zip(("loss_model", "loss_model_se"), mean_se(sq_model)[:2], strict=True))
        row.update(zip(("eta_fit_pred", "eta_fit_pred_se"), fit_eta_se(pred, evalN), strict=True))
        row.update(stack_weights(cfg, mk, pred, evalN, eta_star if i == 0 else None, data))
        fits, schedules, sq_fits = stack_vs_gd(cfg, K, f, sq_model, evalN, fit_batch, Sigma, eta_star)
        row.update(fits)
        sq_schedules[K] = sq_fits
        for key, values in schedules.items():
            sched[key][i, :K] = values
        diff = mean_se(sq_model - sq_prev)[:2] if sq_prev is not None else (math.nan, math.nan)
        row.update(zip(("depth_diff_prev", "depth_diff_prev_se"), diff, strict=True), train_time_s=wall)
        sq_prev = sq_model
        for key in STACK_FIELDS:
            per_K[key].append(row[key])
        if hist is not None:
            data[f"train_loss_K{K}"] = ((f"step_K{K}",), hist)
    for key, vals in per_K.items():
        data[key] = (("K",), np.asarray(vals, dtype=np.float64))
    for key, arr in sched.items():
        data[key] = (("K", "layer"), arr)
    coords.update(K=np.asarray(Ks, dtype=np.int64), layer=np.arange(1, Kmax + 1))
    measure_headline(cfg, Ks[0], predictors[Ks[0]], evalN, eta_star, per_K, data, scalars)
    return predictors, sq_schedules


def stack_weights(
    cfg: Config, mk: Any, pred: torch.Tensor, evalN: RegressionBatch, construction_eta: float | None, data: dict
) -> dict[str, float]:
    """What the weights of one trained stack say: the learning rate of the first layer's y-linear part
    (one-layer stacks only), its distance from the GD structure, and how exactly the weights read into the
    theory's LSA reproduce the model's predictions ``pred``. With ``construction_eta`` (the headline
    model) the first layer's W_K^T W_Q and P W_V are stored beside the construction's at that rate. NaN
    for a model whose weights are not an LSA stack."""
    N, d = cfg.n_context, cfg.d
    stack = lsa_weights_from_model(mk)
    if stack is None:
        return {key: math.nan for key in ("eta_fit_weights", "off_structure", "map_error")}
    G = th.lsa_linear_part(stack[0], N)
    ref = predict(th.LinearSelfAttention(stack, include_query=not cfg.hide_query), evalN)
    out = {
        "eta_fit_weights": float(np.trace(G) / d) if len(stack) == 1 else math.nan,
        "off_structure": float(th.eta_from_lsa_weights(stack[0], N)["off_structure"]),
        "map_error": float((ref - pred).abs().max() / pred.abs().max()),
    }
    if construction_eta is not None:
        W0, c = stack[0], th.gd_lsa_weights(d, construction_eta, N)
        data["learned_WKQ"] = (("row", "col"), W0["W_K"].T @ W0["W_Q"])
        data["learned_PWV"] = (("row", "col"), W0["P"] @ W0["W_V"])
        data["construction_WKQ"] = (("row", "col"), c["W_K"].T @ c["W_Q"])
        data["construction_PWV"] = (("row", "col"), c["P"] @ c["W_V"])
    return out


def stack_vs_gd(
    cfg: Config,
    K: int,
    f: ModelPredictor,
    sq_model: np.ndarray,
    evalN: RegressionBatch,
    fit_batch: RegressionBatch,
    Sigma: np.ndarray,
    eta_star: float,
) -> tuple[dict, dict]:
    """One K-layer stack against K steps of GD: at one learning rate (best on the evaluation tasks), at
    its best per-step learning rates, and GD++ (per-layer eta and gamma). The schedules are fitted on a
    separate fixed batch (float64, Rao-Blackwellised loss), then measured on the evaluation tasks paired
    with the model (same tasks: the differences have small standard errors). Returns the per-depth
    results, the fitted schedules and their squared errors on the evaluation tasks (they do not depend on
    the model: :func:`measure_depth_seeds` measures the other replicates against them)."""
    eta_K, loss_K = best_gd_eta(evalN, K, Sigma, cfg, hi=3.0 * eta_star)
    fits = {
        "gd_perstep": th.fit_gd_schedule(fit_batch.x_ctx, Sigma, cfg.noise, K, eta0=eta_K),
        "gdpp": th.fit_gd_schedule(fit_batch.x_ctx, Sigma, cfg.noise, K, plus_plus=True, eta0=eta_K),
    }
    row: dict[str, float] = {}
    sq_fits: dict[str, np.ndarray] = {}
    for key, fit in fits.items():
        sq_fit = sq_fits[key] = sq_err(predict(fit["predictor"], evalN), evalN)
        row[f"loss_{key}"] = mean_se(sq_fit).mean
        row[f"excess_over_{key}"], row[f"excess_over_{key}_se"] = mean_se(sq_model - sq_fit)[:2]
    schedules = {
        "eta_gd_perstep": fits["gd_perstep"]["eta"],
        "eta_gdpp": fits["gdpp"]["eta"],
        "gamma_gdpp": fits["gdpp"]["gamma"],
    }
    row["cos_gdpp"] = th.sensitivity_cosine(f, fits["gdpp"]["predictor"], evalN.x_ctx, evalN.y_ctx, evalN.x_q)
    cmp = th.compare_predictors(f, th.GD(eta=eta_K, steps=K), evalN.x_ctx, evalN.y_ctx, evalN.x_q)
    row.update(
        loss_gd_steps=loss_K,
        eta_gd_steps=eta_K,
        cos_steps=cmp["cos_sensitivity"],
        preds_diff_steps=cmp["preds_diff"],
        model_diff_steps=cmp["model_diff"],
    )
    return row, schedules, sq_fits


def measure_headline(
    cfg: Config,
    main_K: int,
    f_main: ModelPredictor,
    evalN: RegressionBatch,
    eta_star: float,
    per_K: dict[str, list[float]],
    data: dict,
    scalars: dict,
) -> None:
    """The headline model (first depth) against one GD step at eta* and the baselines, paired on the same
    evaluation tasks; a scatter of its predictions against GD's; its per-depth results as scalars."""
    gd_star = th.one_step_gd(eta_star)
    pred_main, pred_gd = predict(f_main, evalN), predict(gd_star, evalN)
    cmp = th.compare_predictors(f_main, gd_star, evalN.x_ctx, evalN.y_ctx, evalN.x_q)
    n_show = min(500, cfg.n_eval)  # predictions kept for the trained-vs-GD scatter
    data["scatter_model"] = (("task",), pred_main.numpy()[:n_show])
    data["scatter_gd"] = (("task",), pred_gd.numpy()[:n_show])
    diff, diff_se = mean_se(sq_err(pred_main, evalN) - sq_err(pred_gd, evalN))[:2]
    base_loss = {n: mean_se(sq_err(predict(b, evalN), evalN))[:2] for n, b in baselines(cfg).items()}
    scalars.update(
        layers_main=main_K,
        loss_model=per_K["loss_model"][0],
        loss_model_se=per_K["loss_model_se"][0],
        loss_model_excess_over_gd_star=diff,
        loss_model_excess_over_gd_star_se=diff_se,
        loss_model_paired=scalars["loss_gd_theory"] + diff,  # closed-form loss* plus the paired MC excess
        loss_gd=mean_se(sq_err(pred_gd, evalN)).mean,
        loss_ols=base_loss["least_squares"][0],
        loss_ridge=base_loss["ridge"][0],
        eta_fit=per_K["eta_fit_pred"][0],
        eta_fit_se=per_K["eta_fit_pred_se"][0],
        eta_fit_weights=per_K["eta_fit_weights"][0],
        cos_sensitivity=cmp["cos_sensitivity"],
        preds_diff=cmp["preds_diff"],
        model_diff=cmp["model_diff"],
        train_time_s=per_K["train_time_s"][0],
        depth_loss_ratio_last=per_K["loss_model"][-1] / per_K["loss_model"][0],
    )


def baselines(cfg: Config) -> dict[str, Any]:
    return {
        "least_squares": th.LeastSquares(),
        "ridge": th.Ridge.bayes_optimal(cfg.noise) if cfg.noise > 0 else th.Ridge(lam=0.0),
        "averaging": th.Averaging(),
        "knn": th.KNN(3),
        "zero": th.ZeroPredictor(),
    }


def fit_eta_se(pred: torch.Tensor, batch: RegressionBatch) -> tuple[float, float]:
    """eta fitted to the predictions (least squares on g = x_q . h) and its heteroscedasticity-robust SE."""
    N = batch.x_ctx.shape[1]
    g = (np.einsum("bnd,bn->bd", batch.x_ctx, batch.y_ctx) / N * batch.x_q).sum(-1)
    p = pred.detach().numpy()
    eta = float((g * p).sum() / (g * g).sum())
    resid = p - eta * g
    return eta, float(np.sqrt(np.mean(g**2 * resid**2) / g.size) / np.mean(g**2))


def measure_eta_seeds(
    cfg: Config, trained: dict, model: Any, progress: bool, data: dict, scalars: dict, coords: dict
) -> list[tuple[int, Any, float]]:
    """One-layer models from ``eta_seeds`` replicate seeds (replicate 0 is the one-layer model of ``depths``):
    per replicate the eta fitted to its predictions and its paired excess loss over one GD step at eta* on the
    evaluation tasks. Their spread over seeds (optimiser noise, finite training) is the one-layer claims'
    uncertainty, which an SE over the tasks of one model does not see. Returns (seed, model, eta_fit) per
    replicate (none for a given ``model``)."""
    seeds = part_seeds(cfg, "eta") if model is None and 1 in trained else []
    evalN = sample_batch(cfg, cfg.n_eval, cfg.n_context, "eval")
    sq_gd = sq_err(predict(th.one_step_gd(scalars["eta_theory"]), evalN), evalN)
    out, excess, cached = [], [], []
    for r, s in enumerate(seeds):
        if r == 0:
            mk = trained[1][0]
        else:
            mk, _hist, _wall, from_cache = train_one(cfg, 1, progress, seed=s)
            cached.append(from_cache)
        pred = predict(ModelPredictor(mk, hide_query=cfg.hide_query), evalN)
        out.append((s, mk, fit_eta_se(pred, evalN)[0]))
        excess.append(mean_se(sq_err(pred, evalN) - sq_gd).mean)
    data["eta_fit_seeds"] = (("eta_seed",), np.asarray([e for _s, _m, e in out], dtype=np.float64))
    data["excess_gd_star_seeds"] = (("eta_seed",), np.asarray(excess, dtype=np.float64))
    coords["eta_seed"] = np.asarray(seeds, dtype=np.int64)
    scalars["_cached"] = scalars.get("_cached", []) + cached
    return out


def claims_one_layer(led: Ledger, r: Result) -> None:
    """von Oswald et al. 2023: the trained one-layer LSA is one GD step at eta* (isotropic laws). Each claim's
    band is over the ``eta_seeds`` one-layer replicates (:func:`measure_eta_seeds`)."""
    ds, s, cfg = r.data, r.scalars, r.config
    if int(ds["K"].values[0]) != 1 or cfg.x_dist == "anisotropic":
        return
    seed = claim_seed(cfg.x_dist)
    etas = ds["eta_fit_seeds"].values
    n = int(etas.size)
    names = ["eta_fit_vs_eta_star"]
    k = ds["k"].values
    j = int(np.argmin(k))
    fixed_rate = k[j] != cfg.n_context and np.isfinite(ds["excess_model_k"].values[j])
    names += ["loss_vs_k_fixed_rate"] if fixed_rate else []
    if not headline_is_mahankali(cfg):  # otherwise mahankali_<law>_loss is this measurement
        names.insert(0, "trained_loss_vs_gd_star")
    enough_seeds = seeds_ok(led, names, n, "eta", SOURCE_ETA, seed)
    if enough_seeds and not headline_is_mahankali(cfg):
        led.judge(
            "trained_loss_vs_gd_star",
            replicates=s["loss_gd_theory"] + ds["excess_gd_star_seeds"].values,
            expected=s["loss_gd_theory"],
            alternative=s["loss_gd_untuned"],
            seed=seed,
            why=f"95% t band over {n} training seeds of loss* plus each seed's paired (model - GD at eta*) "
            "squared-error difference on the same n_eval tasks",
            statement=f"trained 1-layer LSAs ({n} seeds, mean) have the loss of one GD step at eta* "
            "(closed-form loss*)",
        )
    if enough_seeds:
        led.judge(
            "eta_fit_vs_eta_star",
            replicates=etas,
            expected=s["eta_theory"],
            alternative=s["eta_untuned"],
            seed=seed,
            why=f"95% t band over {n} training seeds of eta_fit (optimiser noise, finite training)",
            statement=f"the learning rate fitted to trained 1-layer LSAs ({n} seeds, mean) equals eta*",
        )
    led.judge(
        "cos_sensitivity_vs_gd_star",
        measured=s["cos_sensitivity"],
        lo=0.99,
        hi=1.0,
        why="von Oswald et al. report cosines of d yhat / d x_q above 0.99 in this setting",
        statement="mean cosine of d yhat/d x_q between the trained layer and GD at eta* is in von Oswald's range",
    )
    if fixed_rate and enough_seeds:
        th_model = float(np.mean(ds["loss_model_theory_k_seeds"].values[:, j]))
        led.judge(
            "loss_vs_k_fixed_rate",
            replicates=th_model + ds["excess_model_k_seeds"].values[:, j],
            expected=th_model,
            alternative=float(ds["loss_gd_star_theory_k"].values[j]),
            hypothesis=f"the layer adapts its rate to the context length: GD at eta*(k = {k[j]})",
            seed=seed,
            why=f"95% t band over {n} training seeds of each seed's paired (model - GD at its eta_fit k/N) "
            "squared-error difference on n_eval tasks, added to the seeds' mean closed-form loss at eta_fit k/N",
            statement=f"at k = {k[j]} examples trained 1-layer LSAs ({n} seeds, mean) have the loss of one GD step "
            f"at their eta_fit k/N (its 1/N is fixed in the weights)",
        )


def headline_is_mahankali(cfg: Config) -> bool:
    """Whether the headline one-layer model is one of Mahankali et al.'s runs (same law, d, N, kernel): its
    loss and closed form are then claimed once, by :func:`claims_mahankali`."""
    return (
        cfg.x_dist in cfg.mahankali.laws
        and cfg.model.attention == "linear"
        and (cfg.d, cfg.n_context) == (cfg.mahankali.d, cfg.mahankali.n)
    )


def measure(ctx: Context) -> None:
    """Puts the :class:`Stacks` for the depth and ridge parts."""
    cfg = ctx.config
    trained = train_stacks(cfg, ctx.model, ctx.progress)
    eta_star = ctx.get(OneStepGD).theory["eta_star"]
    predictors, sq_schedules = measure_stacks(cfg, trained, eta_star, ctx.data, ctx.scalars, ctx.coords)
    one_layer = measure_eta_seeds(cfg, trained, ctx.model, ctx.progress, ctx.data, ctx.scalars, ctx.coords)
    ctx.put(Stacks(trained=trained, predictors=predictors, sq_schedules=sq_schedules, one_layer=one_layer))


claims = each_claim(claims_one_layer)
