r"""The alignment metrics of von Oswald et al. 2023 between two predictors: "preds diff", "model diff"
and the cosine of the sensitivities d yhat / d x_q.
"""

from __future__ import annotations

import torch

from analysis.theory.icl_gd._common import ArrayLike, as_batch
from analysis.theory.icl_gd.baselines import Predictor


def sensitivity(predictor: Predictor, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> torch.Tensor:
    """d yhat / d x_q per task (B, d) by autograd in float64 (the task's implied linear model).

    Uses grad of sum_b yhat_b, which is per-task correct because tasks do not interact in a
    predictor. A predictor without a gradient path to x_q (piecewise constant, e.g. k-NN) gets 0.
    """
    xc, yc, xq = as_batch(x_ctx, y_ctx, x_q)
    xq = xq.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        yhat = predictor(xc.detach(), yc.detach(), xq)
        if not yhat.requires_grad:
            return torch.zeros_like(xq).detach()
        (g,) = torch.autograd.grad(yhat.sum(), xq, allow_unused=True)
    return torch.zeros_like(xq).detach() if g is None else g.detach()


def preds_diff(f: Predictor, g: Predictor, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> float:
    """von Oswald's "preds diff": mean over tasks of |f(task) - g(task)| (L2 norm of a scalar)."""
    with torch.no_grad():
        return float((f(x_ctx, y_ctx, x_q) - g(x_ctx, y_ctx, x_q)).abs().mean())


def model_diff(f: Predictor, g: Predictor, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> float:
    """von Oswald's "model diff": mean over tasks of |d f/d x_q - d g/d x_q|_2."""
    sf, sg = sensitivity(f, x_ctx, y_ctx, x_q), sensitivity(g, x_ctx, y_ctx, x_q)
    return float(torch.linalg.vector_norm(sf - sg, dim=-1).mean())


def sensitivity_cosine(f: Predictor, g: Predictor, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> float:
    """Mean over tasks of the cosine between d f/d x_q and d g/d x_q (a zero vector counts as cosine 0)."""
    sf, sg = sensitivity(f, x_ctx, y_ctx, x_q), sensitivity(g, x_ctx, y_ctx, x_q)
    denom = torch.linalg.vector_norm(sf, dim=-1) * torch.linalg.vector_norm(sg, dim=-1)
    cos = torch.where(denom > 0, (sf * sg).sum(-1) / denom.clamp_min(torch.finfo(torch.float64).tiny), 0.0)
    return float(cos.mean())


def compare_predictors(
    f: Predictor, g: Predictor, x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike
) -> dict[str, float]:
    """The three alignment metrics at once: preds_diff, model_diff, cos_sensitivity."""
    return {
        "preds_diff": preds_diff(f, g, x_ctx, y_ctx, x_q),
        "model_diff": model_diff(f, g, x_ctx, y_ctx, x_q),
        "cos_sensitivity": sensitivity_cosine(f, g, x_ctx, y_ctx, x_q),
    }
