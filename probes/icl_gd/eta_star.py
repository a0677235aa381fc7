"""Part ``eta_star``: the loss-optimal step size of one GD step in closed form against Monte Carlo, and its finite-N
correction against the infinite-context rate."""

from __future__ import annotations

import math

import numpy as np

from analysis.claims.evidence import mean_se
from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from analysis.probing.parts import Context, each_claim
from probes.icl_gd.bands import claim_seed, mc_check
from probes.icl_gd.config import Config
from probes.icl_gd.models import OneStepGD, sample_batch

DESCRIPTION = "the optimal step of one GD step in closed form against Monte Carlo"


def eta_star_mc(cfg: Config, eta_star: float) -> dict[str, float]:
    """Monte Carlo eta* = E[g y_q] / E[g^2], g = x_q . h (the least-squares eta of one GD step), with a
    delta-method SE, and the MC loss of GD at the closed-form eta*."""
    b = sample_batch(cfg, cfg.n_mc, cfg.n_context, "eta_mc")
    h = np.einsum("bnd,bn->bd", b.x_ctx, b.y_ctx) / cfg.n_context  # (B, d)
    g = (h * b.x_q).sum(-1)  # (B,)
    c_hat = float((g * g).mean())
    eta_hat = float((g * b.y_q).mean() / c_hat)
    infl = (g * b.y_q - eta_hat * g * g) / c_hat  # influence function of the ratio
    se_eta = float(infl.std(ddof=1) / math.sqrt(g.size))
    loss, se_loss = mean_se((eta_star * g - b.y_q) ** 2)[:2]
    return {"eta": eta_hat, "eta_se": se_eta, "loss": loss, "loss_se": se_loss}


def measure_eta_star(cfg: Config, one: dict, data: dict, scalars: dict, coords: dict) -> None:
    """eta* and loss* by Monte Carlo, and the closed-form loss of one GD step against eta with MC points."""
    N, eta_star = cfg.n_context, one["eta_star"]
    mc = eta_star_mc(cfg, eta_star)
    scalars.update(eta_mc=mc["eta"], eta_mc_se=mc["eta_se"], loss_gd_mc=mc["loss"], loss_gd_mc_se=mc["loss_se"])
    etas = np.linspace(0.0, 2.0 * eta_star, 41)
    scan = sample_batch(cfg, cfg.n_eval, N, "eta_scan")
    g_scan = (np.einsum("bnd,bn->bd", scan.x_ctx, scan.y_ctx) / N * scan.x_q).sum(-1)
    sq = (etas[:, None] * g_scan[None, :] - scan.y_q[None, :]) ** 2  # (n_eta, B)
    data["loss_eta_theory"] = (("eta",), np.asarray(one["loss_fn"](etas), dtype=np.float64))
    data["loss_eta_mc"] = (("eta",), sq.mean(1))
    data["loss_eta_mc_se"] = (("eta",), sq.std(1, ddof=1) / math.sqrt(sq.shape[1]))
    coords["eta"] = etas


def claims_eta_star(led: Ledger, r: Result) -> None:
    """The closed-form optimal rate eta* and its loss against Monte Carlo; the alternative is the
    infinite-context value (the untuned rate), which the 1/N fourth-moment term moves eta* away from."""
    s, cfg = r.scalars, r.config
    mc_check(
        led,
        "eta_star_mc",
        s["eta_mc"],
        s["eta_theory"],
        s["eta_mc_se"],
        alternative=s["eta_untuned"],
        seed=claim_seed(cfg.x_dist),
        why="95% band of the delta-method SE of the Monte Carlo least-squares rate E[g y_q]/E[g^2] over n_mc tasks",
        statement=f"eta* (closed form, {cfg.x_dist}) equals the Monte Carlo least-squares learning rate of one GD step",
    )
    mc_check(
        led,
        "loss_star_mc",
        s["loss_gd_mc"],
        s["loss_gd_theory"],
        s["loss_gd_mc_se"],
        alternative=s["loss_gd_infinite_context"],
        seed=claim_seed(cfg.x_dist),
        why="95% band of the SE of the mean squared error over n_mc tasks",
        statement="the closed-form loss of one GD step at eta* equals its Monte Carlo estimate",
    )


def measure(ctx: Context) -> None:
    measure_eta_star(ctx.config, ctx.get(OneStepGD).theory, ctx.data, ctx.scalars, ctx.coords)


claims = each_claim(claims_eta_star)
