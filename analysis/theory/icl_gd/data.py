"""The data law as the theory uses it: float64 numpy draws of :mod:`analysis.data.regression_data`.

There is one law and one sampler (:class:`analysis.data.regression_data.RegressionLaw`), shared with the
training task :class:`analysis.data.tasks.LinearRegressionTask`; this module builds it from the theory's
arguments ``(d, x_dist, sigma, Sigma, w_std)`` and gives its exact second moment.
"""

from __future__ import annotations

import numpy as np

from analysis.core.validation import check_float, check_int
from analysis.data.regression_data import InputLaw, RegressionBatch, RegressionLaw
from analysis.theory.icl_gd._common import ArrayLike


def geometric_spectrum(d: int, cond: float) -> np.ndarray:
    """Eigenvalues geometrically spaced from ``cond`` times the smallest to the smallest, mean 1.

    lambda_k proportional to cond^{-k/(d-1)}, k = 0..d-1, rescaled so tr Sigma = d (the same signal
    variance w_std^2 tr Sigma as the isotropic Gaussian). ``cond`` = lambda_max / lambda_min.
    """
    check_int("d", d, minimum=1)
    check_float("cond", cond, minimum=1.0)
    if d == 1:
        return np.ones(1)
    lam = float(cond) ** (-np.arange(d) / (d - 1))
    return lam * d / lam.sum()


def input_law(d: int, x_dist: str, Sigma: ArrayLike | None = None) -> InputLaw:
    """The input law: ``gaussian`` N(0, I), ``uniform`` U(-1/2, 1/2)^d, or ``anisotropic`` N(0, Sigma)
    with ``Sigma`` a (d, d) PSD matrix or a (d,) spectrum (a diagonal Sigma)."""
    return InputLaw.of(d, x_dist, Sigma)


def second_moment(d: int, x_dist: str, Sigma: ArrayLike | None = None) -> np.ndarray:
    """E[x x^T] for the input law: I, I/12, or ``Sigma`` (a (d, d) PSD matrix or a (d,) spectrum)."""
    return input_law(d, x_dist, Sigma).covariance


def regression_law(
    d: int, x_dist: str, sigma: float, Sigma: ArrayLike | None = None, w_std: float = 1.0, link: str = "linear"
) -> RegressionLaw:
    """The regression law: inputs from :func:`input_law`, w ~ N(0, w_std^2 I), label noise ``sigma``,
    responses ``g(w.x)`` with the link ``g`` of ``link`` (``linear`` or ``relu``)."""
    check_float("sigma", sigma, minimum=0.0)
    check_float("w_std", w_std, minimum=0.0)
    return RegressionLaw(input_law(d, x_dist, Sigma), noise_std=sigma, w_std=w_std, link=link)


def sample_regression(
    n_tasks: int,
    d: int,
    N: int,
    x_dist: str,
    sigma: float,
    rng: np.random.Generator,
    Sigma: ArrayLike | None = None,
    w_std: float = 1.0,
    link: str = "linear",
) -> RegressionBatch:
    """Draw ``n_tasks`` independent tasks of ``N`` examples (numpy float64) from :func:`regression_law`.

    The one sampler, :meth:`analysis.data.regression_data.RegressionLaw.sample`, with a numpy generator.
    """
    check_int("n_tasks", n_tasks, minimum=1)
    check_int("N", N, minimum=1)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return regression_law(d, x_dist, sigma, Sigma, w_std, link).sample(n_tasks, N, rng)
