"""Shared helpers of the in-context regression theory: float64 tensor views, batch and argument checks."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from analysis.core.validation import check_bool, check_float, check_int

ArrayLike = Any  # numpy array or torch tensor


def as_f64(a: ArrayLike) -> torch.Tensor:
    """float64 tensor view of ``a`` (keeps the autograd graph of a tensor input)."""
    if isinstance(a, torch.Tensor):
        return a.to(torch.float64)
    return torch.as_tensor(np.asarray(a, dtype=np.float64))


def as_batch(x_ctx: ArrayLike, y_ctx: ArrayLike, x_q: ArrayLike) -> tuple[torch.Tensor, ...]:
    """float64 tensors (x_ctx, y_ctx, x_q) after checking the shapes (B, N, d), (B, N), (B, d)."""
    xc, yc, xq = as_f64(x_ctx), as_f64(y_ctx), as_f64(x_q)
    if xc.ndim != 3 or yc.shape != xc.shape[:2] or xq.shape != (xc.shape[0], xc.shape[2]):
        raise ValueError(
            "expected x_ctx (B, N, d), y_ctx (B, N), x_q (B, d); got "
            f"{tuple(xc.shape)}, {tuple(yc.shape)}, {tuple(xq.shape)}"
        )
    return xc, yc, xq


def fmt_float(x: float) -> str:
    """A float as it appears in predictor names (4 significant digits)."""
    return f"{x:.4g}"


def check_gamma(gamma: ArrayLike | None) -> np.ndarray | None:
    """A preconditioner as a finite float64 (d, d) array (None stays None: the identity)."""
    if gamma is None:
        return None
    g = np.asarray(gamma, dtype=np.float64)
    if g.ndim != 2 or g.shape[0] != g.shape[1] or not np.all(np.isfinite(g)):
        raise ValueError(f"gamma must be a finite square (d, d) matrix, got shape {g.shape}")
    return g


def check_theory_args(d: int, N: int, sigma: float, w_std: float, query_noise: bool) -> None:
    """The arguments every expected-loss formula takes (w_std > 0: the Bayes ridge divides by it)."""
    check_int("d", d, minimum=1)
    check_int("N", N, minimum=1)
    check_float("sigma", sigma, minimum=0.0)
    check_float("w_std", w_std, minimum=0.0, strict_minimum=True)
    check_bool("query_noise", query_noise)
