"""Power-law fits with bootstrap confidence intervals, local exponents, geometric means and Hill's tail index.

Conventions (used by every probe that measures a decay rate):

* a decay ``y(t) ~ c t^(-alpha)`` is fitted by ordinary least squares of ``ln y`` on ``ln t`` over an
  explicit window ``t_lo <= t <= t_hi``, with points taken on a logarithmic grid
  (:func:`log_grid`) so that every decade of ``t`` weighs the same;
* averages over samples (prompt pairs, seeds) of positive quantities are geometric means
  ``exp(mean ln y)``: a power law stays a power law with the same exponent under them;
* the uncertainty is a percentile bootstrap over samples (rows): resample rows with replacement,
  take the geometric mean, refit;
* the local exponent ``alpha(t) = -d ln y / d ln t`` is the slope of a local least-squares line in
  ``ln t`` over a window of half-width ``half_width`` (in ``ln t``) around each grid point, which is
  exact for an exact power law and a smoothed centred difference otherwise (bias ``O(h^2 y'''/y')``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.core.validation import check_float, check_int


@dataclass(frozen=True)
class PowerLawFit:
    """``y ~ exp(log_c) t^(-alpha)`` fitted over ``window`` on ``n_points`` grid points."""

    alpha: float  # decay exponent (minus the log-log slope)
    log_c: float  # intercept of ln y at ln t = 0
    window: tuple[float, float]  # (t_lo, t_hi) actually used (inclusive)
    n_points: int  # grid points in the fit
    rms_residual: float  # RMS of ln y - fit over the grid points (0 for an exact power law)
    alpha_ci: tuple[float, float] | None = None  # bootstrap percentile interval (None without bootstrap)
    ci_level: float | None = None  # nominal coverage of alpha_ci
    alpha_boot_se: float | None = None  # bootstrap standard deviation of alpha

    def predict(self, t) -> np.ndarray:
        return np.exp(self.log_c) * np.asarray(t, dtype=np.float64) ** (-self.alpha)


def geometric_mean(x, axis: int | None = 0) -> np.ndarray:
    """``exp(mean(ln x))`` along ``axis``; every entry must be positive (a zero makes it meaningless)."""
    x = np.asarray(x, dtype=np.float64)
    if np.any(~(x > 0)):
        raise ValueError("geometric_mean needs strictly positive, finite values")
    return np.exp(np.mean(np.log(x), axis=axis))


def log_grid(t, t_lo: float, t_hi: float, n: int) -> np.ndarray:
    """Indices into the increasing array ``t`` of about ``n`` points spaced evenly in ``ln t`` over
    ``[t_lo, t_hi]`` (each the nearest available ``t``; duplicates removed, so fewer when ``t`` is sparse)."""
    t = np.asarray(t, dtype=np.float64)
    check_int("n", n, minimum=2)
    check_float("t_lo", t_lo, minimum=0.0, strict_minimum=True)
    check_float("t_hi", t_hi, minimum=t_lo, strict_minimum=True)
    if t.ndim != 1 or np.any(np.diff(t) <= 0) or t[0] <= 0:
        raise ValueError("t must be a strictly increasing 1-d array of positive values")
    inside = np.flatnonzero((t >= t_lo) & (t <= t_hi))
    if inside.size < 2:
        raise ValueError(f"window [{t_lo}, {t_hi}] holds fewer than 2 points of t")
    lt = np.log(t[inside])
    targets = np.linspace(lt[0], lt[-1], n)
    pos = np.searchsorted(lt, targets).clip(1, lt.size - 1)
    nearest = np.where(np.abs(lt[pos - 1] - targets) <= np.abs(lt[pos] - targets), pos - 1, pos)
    return inside[np.unique(nearest)]


def _ols_slopes(x: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Slopes and intercepts of least-squares lines of each row of ``Y`` (m, n) on ``x`` (n,)."""
    xm = x.mean()
    dx = x - xm
    slope = (Y - Y.mean(axis=-1, keepdims=True)) @ dx / (dx @ dx)  # (m,)
    intercept = Y.mean(axis=-1) - slope * xm
    return slope, intercept


def fit_power_law(t, y, window: tuple[float, float], n_points: int = 64) -> PowerLawFit:
    """Fit ``y = c t^(-alpha)`` over ``window`` on a log grid of ``n_points`` (no uncertainty)."""
    t = np.asarray(t, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if y.shape != t.shape:
        raise ValueError(f"y must have the shape of t {t.shape}, got {y.shape}")
    idx = log_grid(t, window[0], window[1], n_points)
    if np.any(~(y[idx] > 0)):
        raise ValueError("fit_power_law needs strictly positive, finite y in the window")
    x, ly = np.log(t[idx]), np.log(y[idx])
    slope, intercept = _ols_slopes(x, ly[None])
    resid = ly - (intercept[0] + slope[0] * x)
    return PowerLawFit(
        alpha=float(-slope[0]),
        log_c=float(intercept[0]),
        window=(float(t[idx[0]]), float(t[idx[-1]])),
        n_points=int(idx.size),
        rms_residual=float(np.sqrt(np.mean(resid**2))),
    )


def bootstrap_power_law(
    t,
    Y,
    window: tuple[float, float],
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    rng: np.random.Generator,
    n_points: int = 64,
) -> PowerLawFit:
    """Fit the geometric mean over the rows of ``Y`` (samples, t) and bootstrap the rows for a CI.

    Each bootstrap replicate draws ``n`` rows with replacement (``n`` = number of rows), takes their
    geometric mean and refits on the same grid; ``alpha_ci`` is the ``(1 -/+ level)/2`` percentile
    interval of the replicates' alphas, ``alpha_boot_se`` their standard deviation.
    """
    t = np.asarray(t, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim != 2 or Y.shape[1] != t.size:
        raise ValueError(f"Y must have shape (samples, {t.size}), got {Y.shape}")
    check_int("n_boot", n_boot, minimum=1)
    check_float("level", level, minimum=0.0, maximum=1.0, strict_minimum=True)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    idx = log_grid(t, window[0], window[1], n_points)
    logY = np.log(Y[:, idx])  # (n, k)
    if not np.all(np.isfinite(logY)):
        raise ValueError("bootstrap_power_law needs strictly positive, finite Y in the window")
    x = np.log(t[idx])
    gm_log = logY.mean(axis=0)  # ln of the geometric mean on the grid
    slope, intercept = _ols_slopes(x, gm_log[None])
    resid = gm_log - (intercept[0] + slope[0] * x)
    n = Y.shape[0]
    draws = rng.integers(0, n, size=(n_boot, n))  # (n_boot, n)
    boot_logmean = logY[draws].mean(axis=1)  # (n_boot, k)
    slopes, _ = _ols_slopes(x, boot_logmean)
    alphas = -slopes
    q = (1.0 - level) / 2.0
    lo, hi = np.quantile(alphas, [q, 1.0 - q])
    return PowerLawFit(
        alpha=float(-slope[0]),
        log_c=float(intercept[0]),
        window=(float(t[idx[0]]), float(t[idx[-1]])),
        n_points=int(idx.size),
        rms_residual=float(np.sqrt(np.mean(resid**2))),
        alpha_ci=(float(lo), float(hi)),
        ci_level=float(level),
        alpha_boot_se=float(alphas.std(ddof=1)) if n_boot > 1 else 0.0,
    )


def local_exponent(t, y, *, n_grid: int = 48, half_width: float = 0.35, t_range: tuple[float, float] | None = None):
    """``alpha(t) = -d ln y / d ln t`` on a log grid: ``(t_grid, alpha)``.

    At each of ``n_grid`` points spaced evenly in ``ln t`` (over ``t_range``, default all of ``t``)
    the slope of the least-squares line of ``ln y`` on ``ln t`` over the samples with
    ``|ln t - ln t0| <= half_width`` is taken (all samples, not only grid points, so the smoothing
    uses every measurement). Points whose window would cross the ends of ``t`` are dropped, so the
    estimate is always centred; windows holding fewer than 3 samples give NaN. Exact for
    ``y = c t^(-alpha)``.
    """
    t = np.asarray(t, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if y.shape != t.shape or t.ndim != 1:
        raise ValueError(f"t and y must be 1-d arrays of the same shape, got {t.shape} and {y.shape}")
    if np.any(~(y > 0)):
        raise ValueError("local_exponent needs strictly positive, finite y")
    check_int("n_grid", n_grid, minimum=1)
    check_float("half_width", half_width, minimum=0.0, strict_minimum=True)
    lt, ly = np.log(t), np.log(y)
    lo, hi = (lt[0], lt[-1]) if t_range is None else (np.log(t_range[0]), np.log(t_range[1]))
    lo, hi = max(lo, lt[0] + half_width), min(hi, lt[-1] - half_width)
    if hi < lo:
        raise ValueError(f"t spans too little for half_width={half_width} in ln t")
    centres = np.linspace(lo, hi, n_grid)
    slack = 1e-12 * max(1.0, float(np.abs(lt).max()))  # window edges that land on a sample keep it
    a = np.searchsorted(lt, centres - half_width - slack, side="left")
    b = np.searchsorted(lt, centres + half_width + slack, side="right")
    slope = np.full(n_grid, np.nan)
    for i in range(n_grid):
        if b[i] - a[i] < 3:  # too sparse here (small t on an integer grid): no estimate
            continue  # centred sums per window: no cancellation in S_xx - S_x^2/n
        x, v = lt[a[i] : b[i]], ly[a[i] : b[i]]
        dx = x - x.mean()
        slope[i] = dx @ (v - v.mean()) / (dx @ dx)
    return np.exp(centres), -slope


def local_exponent_exact_grid(t, y) -> tuple[np.ndarray, np.ndarray]:
    """Unsmoothed centred differences ``-(ln y_{i+1} - ln y_{i-1}) / (ln t_{i+1} - ln t_{i-1})``."""
    t = np.asarray(t, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    lt, ly = np.log(t), np.log(y)
    return t[1:-1], -(ly[2:] - ly[:-2]) / (lt[2:] - lt[:-2])


def hill_tail_index(x, top: float) -> float:
    """Hill's estimate of the tail index ``alpha`` of ``P(X > t) ~ t^-alpha L(t)`` from the ``k = round(top n)``
    largest of ``n`` positive samples: ``1 / alpha = (1/k) sum_{i<=k} ln(X_(i) / X_(k+1))``, with ``X_(1) >= X_(2)
    >= ...``. For an exact Pareto tail above ``X_(k+1)`` it is the maximum-likelihood estimate (``k / alpha_hat``
    is Gamma(k, alpha)-distributed: ``alpha_hat`` has relative standard error about ``1/sqrt(k)``); a slowly varying
    ``L`` adds a bias that falls as ``top`` does. ``alpha < 1``: no finite mean; a Gaussian-tailed X gives a large
    index that grows with ``n / k`` (about ``2 ln(n / k)``)."""
    x = np.asarray(x, dtype=np.float64).ravel()
    check_float("top", top, minimum=0.0, maximum=0.5, strict_minimum=True)
    if x.size == 0 or not np.all(np.isfinite(x)) or x.min() <= 0:
        raise ValueError("x must be non-empty, finite and strictly positive")
    k = int(round(top * x.size))
    if k < 2:
        raise ValueError(f"top x len(x) must give at least 2 tail samples, got {top} x {x.size}")
    tail = np.sort(x)[-(k + 1) :]  # X_(k+1), then the k largest
    return float(1.0 / np.mean(np.log(tail[1:] / tail[0])))
