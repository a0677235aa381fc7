r"""Expected losses by (Rao-Blackwellised) Monte Carlo, and the table of every baseline's loss.

A predictor linear in the labels, yhat = x_q^T A(X) y, has a loss that can be averaged exactly over w,
the noise and x_q given the context inputs X (:func:`conditional_loss_linear`); only X is sampled.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from analysis.core.validation import check_int
from analysis.data.regression_data import noiseless_query_target
from analysis.theory.icl_gd._common import ArrayLike, as_f64, check_theory_args
from analysis.theory.icl_gd.baselines import KNN, LeastSquares, Predictor, Ridge
from analysis.theory.icl_gd.closed_forms import (
    least_squares_theory,
    one_step_gd_theory,
    optimal_preconditioner,
)
from analysis.theory.icl_gd.data import sample_regression, second_moment


def conditional_loss_linear(
    A: ArrayLike, x_ctx: ArrayLike, Sigma: ArrayLike, sigma: float, w_std: float, query_noise: bool = True
) -> torch.Tensor:
    r"""E[(yhat - y_q)^2 | X] for yhat = x_q^T A(X) y, averaged exactly over w, eps, eps_q and x_q.

    yhat - y_q = x_q^T (A X - I) w + sigma x_q^T A eps - sigma eps_q, with w, eps, x_q independent:
        E[. | X] = w_std^2 tr((AX - I)^T Sigma (AX - I)) + sigma^2 tr(A^T Sigma A) + sigma^2 (query noise).
    Only the second moment Sigma of x_q enters. Returns (B,).
    """
    A, X, S = as_f64(A), as_f64(x_ctx), as_f64(Sigma)
    d = X.shape[-1]
    E = A @ X - torch.eye(d, dtype=torch.float64)  # (B, d, d)
    bias = w_std**2 * ((S @ E) * E).sum((-2, -1))
    var = sigma**2 * ((S @ A) * A).sum((-2, -1))
    return bias + var + sigma**2 * float(query_noise)


def expected_loss_mc(
    predictor: Predictor,
    d: int,
    N: int,
    x_dist: str,
    sigma: float,
    rng: np.random.Generator,
    n_tasks: int = 20000,
    w_std: float = 1.0,
    Sigma: ArrayLike | None = None,
    query_noise: bool = True,
    rao_blackwell: bool = True,
    chunk: int = 20000,
    link: str = "linear",
) -> dict[str, Any]:
    """Monte Carlo expected loss with its standard error (sample std / sqrt(n)).

    Predictors with ``linear_map`` (linear in y) average the per-task loss analytically over w, the
    noise and x_q (:func:`conditional_loss_linear`) unless ``rao_blackwell=False`` or the responses are
    nonlinear (``link`` other than ``linear``: that average assumes y = w.x); others (and those cases) use
    the squared error of one query per task. Returns dict(loss, se, n, method).
    """
    check_theory_args(d, N, sigma, w_std, query_noise)
    check_int("n_tasks", n_tasks, minimum=2)
    check_int("chunk", chunk, minimum=1)
    S = second_moment(d, x_dist, Sigma)
    use_rb = rao_blackwell and hasattr(predictor, "linear_map") and link == "linear"
    vals = []
    done = 0
    while done < n_tasks:
        n = min(chunk, n_tasks - done)
        batch = sample_regression(n, d, N, x_dist, sigma, rng, Sigma, w_std, link)
        if use_rb:
            A = predictor.linear_map(batch.x_ctx)
            vals.append(conditional_loss_linear(A, batch.x_ctx, S, sigma, w_std, query_noise).numpy())
        else:
            with torch.no_grad():
                yhat = predictor(batch.x_ctx, batch.y_ctx, batch.x_q).detach().numpy()
            target = batch.y_q if query_noise else noiseless_query_target(batch, link)
            vals.append((yhat - target) ** 2)
        done += n
    v = np.concatenate(vals)
    return {
        "loss": float(v.mean()),
        "se": float(v.std(ddof=1) / math.sqrt(v.size)),
        "n": int(v.size),
        "method": "monte_carlo_rb" if use_rb else "monte_carlo",
    }


def baseline_theory(
    d: int,
    N: int,
    x_dist: str,
    sigma: float,
    rng: np.random.Generator,
    w_std: float = 1.0,
    Sigma: ArrayLike | None = None,
    query_noise: bool = True,
    n_mc: int = 20000,
    knn_k: int = 3,
) -> dict[str, dict[str, Any]]:
    """Expected losses of every baseline at one context length: name -> dict(loss, se, method, ...).

    Closed forms (se = 0): zero, averaging, best one-step GD, best preconditioned step (Gaussian
    family), least squares where :func:`least_squares_theory` has one. Monte Carlo otherwise
    (Rao-Blackwellised for ridge / least squares; plain for k-NN).
    """
    S = second_moment(d, x_dist, Sigma)
    one = one_step_gd_theory(d, N, x_dist, sigma, w_std, Sigma, query_noise)
    out: dict[str, dict[str, Any]] = {
        "zero": {"loss": one["a"], "se": 0.0, "method": "closed_form"},
        "averaging": {"loss": float(one["loss_fn"](1.0)), "se": 0.0, "method": "closed_form"},
        "gd_star": {"loss": one["loss_star"], "se": 0.0, "method": "closed_form", "eta": one["eta_star"]},
    }
    if x_dist != "uniform":
        pre = optimal_preconditioner(S, N, sigma, w_std, query_noise)
        out["precond_gd_star"] = {"loss": pre["loss_star"], "se": 0.0, "method": "closed_form"}
    ls = least_squares_theory(d, N, x_dist, sigma, w_std, Sigma, query_noise)
    mc = dict(
        d=d,
        N=N,
        x_dist=x_dist,
        sigma=sigma,
        rng=rng,
        n_tasks=n_mc,
        w_std=w_std,
        Sigma=Sigma,
        query_noise=query_noise,
    )
    out["least_squares"] = (
        {"loss": ls, "se": 0.0, "method": "closed_form"} if ls is not None else expected_loss_mc(LeastSquares(), **mc)
    )
    if sigma == 0:
        out["ridge_bayes"] = dict(out["least_squares"])
    else:
        out["ridge_bayes"] = expected_loss_mc(Ridge.bayes_optimal(sigma, w_std), **mc)
    out["knn"] = expected_loss_mc(KNN(knn_k), **mc)
    return out
