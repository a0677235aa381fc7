"""Part ``mahankali`` (seed 000#26): one trained LSA layer per input law is one step of preconditioned GD with the
optimal step matrix (Mahankali et al. 2023)."""

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
from probes.icl_gd.bands import SEED_MAHANKALI, mc_check, seeds_ok
from probes.icl_gd.config import ETA_CRITERION, PRECONDITIONER_CRITERION, Config, linear_task, part_seeds, spectrum
from probes.icl_gd.models import (
    ModelPredictor,
    infinite_context_loss,
    predict,
    rng_for,
    sample_batch,
    sq_err,
    untuned_eta,
)
from probes.icl_gd.stacks import fit_eta_se, headline_is_mahankali, train_one

DESCRIPTION = "one trained layer per input law is one step of preconditioned GD with the optimal step matrix"
FIELDS = ("mahankali", "mahankali_d", "mahankali_n", "mahankali_seeds")


def mahankali_theory(c: Config, law: str) -> dict[str, Any]:
    """The optimal one step for one law, the alternatives its claims name, and its preconditioner:
    ref (the optimal predictor), loss_star, loss_alt (the competing step's loss), eta_star / eta_alt (plain
    step sizes; NaN for the anisotropic law), gamma_star and gamma_alt (the optimal (d, d) G = eta Gamma
    and the competing one), mc_alt (the alternative of the Monte Carlo check)."""
    d, N, sigma = c.d, c.n_context, c.noise
    lin = th.one_step_gd_theory(d, N, c.x_dist, sigma, Sigma=spectrum(c))
    eye = np.eye(d)
    if law == "anisotropic":
        pre = th.optimal_preconditioner(np.diag(spectrum(c)), N, sigma)
        return {
            "ref": th.one_step_gd(1.0, pre["gamma"]),
            "loss_star": pre["loss_star"],
            "loss_alt": lin["loss_star"],
            "mc_alt": lin["loss_star"],
            "eta_star": math.nan,
            "eta_alt": math.nan,
            "gamma_star": pre["gamma"],
            "gamma_alt": lin["eta_star"] * eye,
            "loss_gamma": pre["loss_fn"],
        }
    if law == "relu":
        r = th.one_step_gd_relu_theory(d, N, sigma)
        return {
            "ref": th.one_step_gd(r["eta_star"]),
            "loss_star": r["loss_star"],
            "loss_alt": float(r["loss_fn"](lin["eta_star"])),
            "mc_alt": float(lin["loss_fn"](r["eta_star"])),
            "eta_star": r["eta_star"],
            "eta_alt": lin["eta_star"],
            "gamma_star": r["eta_star"] * eye,
            "gamma_alt": lin["eta_star"] * eye,
            "loss_gamma": r["loss_gamma"],
        }
    eta_alt = untuned_eta(c)
    return {
        "ref": th.one_step_gd(lin["eta_star"]),
        "loss_star": lin["loss_star"],
        "loss_alt": float(lin["loss_fn"](eta_alt)),
        "mc_alt": infinite_context_loss(c, lin, lin["eta_star"]),
        "eta_star": lin["eta_star"],
        "eta_alt": eta_alt,
        "gamma_star": lin["eta_star"] * eye,
        "gamma_alt": eta_alt * eye,
        "loss_gamma": lambda G: th.preconditioned_gd_loss(G, N, c.x_dist, sigma, Sigma=spectrum(c)),
    }


def gamma_rel_error(pred: torch.Tensor, b: RegressionBatch, target: np.ndarray, blocks: int = 10) -> tuple:
    """G = eta Gamma fitted to the predictions (:func:`analysis.theory.icl_gd.fit_preconditioner`), its
    relative Frobenius distance |G - target|_F / |target|_F and that distance's jackknife SE over ``blocks``
    blocks of tasks (the fit's own uncertainty on these tasks; training noise is not in it)."""
    G = th.fit_preconditioner(pred, b.x_ctx, b.y_ctx, b.x_q)
    rel = float(np.linalg.norm(G - target) / np.linalg.norm(target))
    idx = np.array_split(np.arange(len(b.y_q)), blocks)
    loo = []
    for j in range(blocks):
        keep = np.concatenate([ix for i, ix in enumerate(idx) if i != j])
        Gj = th.fit_preconditioner(pred[keep], b.x_ctx[keep], b.y_ctx[keep], b.x_q[keep])
        loo.append(np.linalg.norm(Gj - target) / np.linalg.norm(target))
    loo = np.asarray(loo)
    se = float(np.sqrt((blocks - 1) / blocks * np.sum((loo - loo.mean()) ** 2)))
    return G, rel, se


MK_FIELDS = (
    "mk_loss_star",
    "mk_loss_alt",
    "mk_excess",
    "mk_excess_se",
    "mk_eta_star",
    "mk_eta_alt",
    "mk_eta_fit",
    "mk_eta_fit_se",
    "mk_gamma_rel_error",
    "mk_gamma_rel_error_se",
    "mk_gamma_alt_rel_error",
    "mk_loss_gamma_fit",
    "mk_loss_star_mc",
    "mk_loss_star_mc_se",
    "mk_mc_alt",
)


MK_SEED_FIELDS = ("mk_excess_seeds", "mk_gamma_rel_error_seeds", "mk_eta_fit_seeds")  # (mk_dist, mk_seed) each


def measure(ctx: Context) -> None:
    """Mahankali et al.'s setting (d = mahankali_d, N = mahankali_n): a one-layer linear LSA trained on Gaussian
    inputs, isotropic and anisotropic (the geometric spectrum of condition number ``cond``), and on isotropic
    inputs with ReLU responses, each measured paired with the optimal one step on the same tasks: GD at eta*
    (isotropic; the ReLU law's own eta*) or preconditioned by Gamma* (anisotropic). Per law also the step
    matrix G = eta Gamma fitted to the layer's predictions against the optimal one (claims: the preconditioner
    within 5%, Gamma proportional to I for ReLU responses) and the plain rate fitted to them. The ``mk_*`` fields
    are replicate 0's (``seed``); ``mk_*_seeds`` hold the excess, the step matrix's distance and the rate of
    every replicate of ``mahankali_seeds`` (:func:`part_seeds`), on the same tasks: the claims' band."""
    cfg, data, scalars, coords, progress = ctx.config, ctx.data, ctx.scalars, ctx.coords, ctx.progress
    dists = list(cfg.mahankali.laws)
    out = {n: np.full(len(dists), np.nan) for n in MK_FIELDS}
    seeds = part_seeds(cfg, "mahankali")
    per_seed = {n: np.full((len(dists), len(seeds)), np.nan) for n in MK_SEED_FIELDS}
    cached = []
    for j, law in enumerate(dists):
        # Mahankali et al.'s laws at (mahankali_d, mahankali_n); the ReLU law's inputs are isotropic Gaussian, its
        # responses ReLU (the task's link)
        x_dist, link = ("gaussian", "relu") if law == "relu" else (law, "linear")
        c = linear_task(cfg, cfg.mahankali.d, cfg.mahankali.n, x_dist)
        mk, _hist, _wall, from_cache = train_one(c, 1, progress, link=link)
        cached.append(from_cache)
        b = sample_batch(c, cfg.n_eval, c.n_context, "mahankali", link=link)
        pred = predict(ModelPredictor(mk, hide_query=cfg.hide_query), b)
        t = mahankali_theory(c, law)
        G, rel, rel_se = gamma_rel_error(pred, b, t["gamma_star"])
        data[f"mk_gamma_fit_{law}"] = (("prow", "pcol"), G)
        data[f"mk_gamma_star_{law}"] = (("prow", "pcol"), t["gamma_star"])
        out["mk_gamma_rel_error"][j], out["mk_gamma_rel_error_se"][j] = rel, rel_se
        out["mk_gamma_alt_rel_error"][j] = np.linalg.norm(t["gamma_alt"] - t["gamma_star"]) / np.linalg.norm(
            t["gamma_star"]
        )
        out["mk_loss_gamma_fit"][j] = float(t["loss_gamma"](G))
        mc = th.expected_loss_mc(
            t["ref"],
            c.d,
            c.n_context,
            c.x_dist,
            c.noise,
            rng_for(cfg, "mahankali_mc", j),
            n_tasks=cfg.n_mc,
            Sigma=spectrum(c),
            link=link,
        )
        out["mk_loss_star_mc"][j], out["mk_loss_star_mc_se"][j], out["mk_mc_alt"][j] = mc["loss"], mc["se"], t["mc_alt"]
        out["mk_excess"][j], out["mk_excess_se"][j] = mean_se(sq_err(pred, b) - sq_err(predict(t["ref"], b), b))[:2]
        out["mk_loss_star"][j], out["mk_loss_alt"][j] = t["loss_star"], t["loss_alt"]
        out["mk_eta_star"][j], out["mk_eta_alt"][j] = t["eta_star"], t["eta_alt"]
        out["mk_eta_fit"][j], out["mk_eta_fit_se"][j] = fit_eta_se(pred, b)
        sq_ref = sq_err(predict(t["ref"], b), b)
        for r, seed in enumerate(seeds):  # replicate 0: the model, its predictions and G above
            if r:
                mk, _hist, _wall, from_cache = train_one(c, 1, progress, seed=seed, link=link)
                cached.append(from_cache)
                pred = predict(ModelPredictor(mk, hide_query=cfg.hide_query), b)
                G = th.fit_preconditioner(pred, b.x_ctx, b.y_ctx, b.x_q)
            per_seed["mk_excess_seeds"][j, r] = mean_se(sq_err(pred, b) - sq_ref).mean
            per_seed["mk_gamma_rel_error_seeds"][j, r] = np.linalg.norm(G - t["gamma_star"]) / np.linalg.norm(
                t["gamma_star"]
            )
            per_seed["mk_eta_fit_seeds"][j, r] = fit_eta_se(pred, b)[0]
    for n, v in out.items():
        data[n] = (("mk_dist",), v)
    for n, v in per_seed.items():
        data[n] = (("mk_dist", "mk_seed"), v)
    coords["mk_dist"] = np.asarray(dists, dtype=str)
    coords["mk_seed"] = np.asarray(seeds, dtype=np.int64)
    scalars["_cached"] = scalars.get("_cached", []) + cached


MK_LAW_WORDS = {
    "gaussian": "isotropic Gaussian inputs",
    "anisotropic": "anisotropic Gaussian inputs (condition number cond)",
    "relu": "isotropic Gaussian inputs with ReLU responses max(0, w.x) + noise",
}


MK_STEP_WORDS = {
    "gaussian": "one GD step at eta*",
    "anisotropic": "one step preconditioned by Gamma*",
    "relu": "one least-squares GD step at the ReLU law's eta*",
}


MK_ALT_WORDS = {
    "gaussian": "one GD step at the untuned rate 1/v",
    "anisotropic": "plain GD: the best unpreconditioned step (eta* I) for this Sigma",
    "relu": "the step tuned for linear responses (eta* of the linear law, N / (N + d + 1 + sigma^2))",
}


MK_SOURCE = {
    "gaussian": "analysis.theory.icl_gd.one_step_gd_theory",
    "anisotropic": "analysis.theory.icl_gd.optimal_preconditioner",
    "relu": "analysis.theory.icl_gd.one_step_gd_relu_theory",
}


def claims_mahankali(led: Ledger, r: Result) -> None:
    """Mahankali et al. 2023: the optimal one-layer LSA is one GD step for isotropic Gaussian inputs, one
    preconditioned step for anisotropic ones, and still one plain least-squares GD step when only the responses
    are nonlinear (ReLU). Per law: the trained layers' loss (band over ``mahankali_seeds``) and its closed form
    against Monte Carlo; the fitted step matrix against the optimal one (issue 17: within 5%); the fitted plain
    rate (issue 17: within 1%)."""
    ds, cfg = r.data, r.config
    if "mk_dist" not in ds.coords:
        return
    for j, law in enumerate(ds["mk_dist"].values.tolist()):
        row = {n: float(ds[n].values[j]) for n in MK_FIELDS}
        row.update({n: ds[n].values[j] for n in MK_SEED_FIELDS})
        claims_mahankali_loss(led, row, law, cfg)
        claims_mahankali_step(led, row, law)


def claims_mahankali_loss(led: Ledger, r: dict, law: str, cfg: Config) -> None:
    """The trained layers' loss against the optimal step's closed form, and that closed form against Monte Carlo."""
    name = f"mahankali_{law}_loss"
    src = f"Mahankali et al. 2023; closed form: {MK_SOURCE[law]}"
    n = int(r["mk_excess_seeds"].size)
    if seeds_ok(led, [name], n, "mahankali", src, SEED_MAHANKALI):
        led.judge(
            name,
            replicates=r["mk_loss_star"] + r["mk_excess_seeds"],
            expected=r["mk_loss_star"],
            alternative=r["mk_loss_alt"],
            why=f"95% t band over {n} training seeds of loss* plus each seed's paired (model - optimal step) "
            "squared-error difference on the same n_eval tasks",
            statement=f"1-layer linear LSAs trained on {MK_LAW_WORDS[law]} (d = {cfg.mahankali.d}, N = "
            f"{cfg.mahankali.n}; {n} seeds, mean) have the loss of {MK_STEP_WORDS[law]} (closed form)",
        )
    if law == cfg.x_dist and law != "anisotropic" and headline_is_mahankali(cfg):
        return  # the headline's loss_star_mc (claims_eta_star) is this closed form's Monte Carlo check
    mc_check(
        led,
        f"mahankali_{law}_loss_star_mc",
        r["mk_loss_star_mc"],
        r["mk_loss_star"],
        r["mk_loss_star_mc_se"],
        alternative=r["mk_mc_alt"],
        seed=SEED_MAHANKALI,
        why="95% band of the SE of the Monte Carlo mean over n_mc tasks (Rao-Blackwellised over w for linear "
        "responses)",
        statement=f"the closed-form loss of {MK_STEP_WORDS[law]} ({MK_LAW_WORDS[law]}) equals its Monte Carlo estimate",
    )


def claims_mahankali_step(led: Ledger, r: dict, law: str) -> None:
    """The step matrix G = eta Gamma fitted to the trained layers against the optimal one, and their plain rate
    (the means over ``mahankali_seeds`` replicates, against issue 17's criteria)."""
    what = {
        "gaussian": "eta* I",
        "anisotropic": "the optimal preconditioner Gamma* = [(1 + 1/N) Sigma + (tr Sigma + sigma^2)/N I]^-1",
        "relu": "eta* I of the ReLU law (a multiple of the identity: plain GD on least squares)",
    }[law]
    rel, eta = mean_se(r["mk_gamma_rel_error_seeds"]), mean_se(r["mk_eta_fit_seeds"])
    led.judge(
        f"mahankali_{law}_gamma",
        measured=rel.mean,
        expected=0.0,
        atol=PRECONDITIONER_CRITERION,
        alternative=r["mk_gamma_alt_rel_error"],
        why=f"band = issue 17's criterion (|G - G*|_F <= {PRECONDITIONER_CRITERION} |G*|_F); measured: the mean over "
        f"{rel.n} training seeds (their SE {rel.se:.2g}; replicate 0's jackknife SE over the n_eval tasks "
        f"{r['mk_gamma_rel_error_se']:.2g})",
        statement=f"{MK_LAW_WORDS[law]}: the step matrix G fitted to the trained layers' predictions equals "
        f"{what} (relative Frobenius distance, mean over seeds)",
    )
    if law == "anisotropic":
        return
    led.judge(
        f"mahankali_{law}_eta_fit",
        measured=eta.mean,
        expected=r["mk_eta_star"],
        atol=ETA_CRITERION * r["mk_eta_star"],
        alternative=r["mk_eta_alt"],
        why=f"band = issue 17's criterion (within {ETA_CRITERION:.0%} of eta*); measured: the mean over {eta.n} "
        f"training seeds (their SE {eta.se:.2g})",
        statement=f"{MK_LAW_WORDS[law]}: the plain GD rate fitted to the trained layers' predictions equals "
        f"eta*{' of the ReLU law' if law == 'relu' else ''} (closed form; mean over seeds)",
    )


claims = each_claim(claims_mahankali)
