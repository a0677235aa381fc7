"""Power-law fits, bootstrap intervals, local exponents and geometric means (analysis.claims.fitting)."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.claims.fitting import (
    bootstrap_power_law,
    fit_power_law,
    geometric_mean,
    hill_tail_index,
    local_exponent,
    local_exponent_exact_grid,
    log_grid,
)

EPS = np.finfo(np.float64).eps


@pytest.mark.parametrize("alpha", [0.0, 0.37, 1.0, 2.5])
def test_exact_power_law_is_recovered_to_float_precision(alpha):
    t = np.arange(1, 4097, dtype=np.float64)
    y = 2.5 * t ** (-alpha)
    fit = fit_power_law(t, y, (16, 4096))
    # ln y is computed with relative error ~eps per point; an OLS slope over ln t in [2.8, 8.3]
    # amplifies absolute errors ~eps*|ln y| by at most ~1/(spread of ln t) ~ 1: allow 100 eps
    assert abs(fit.alpha - alpha) <= 100 * EPS * max(1.0, alpha)
    assert abs(fit.log_c - np.log(2.5)) <= 1000 * EPS
    assert fit.rms_residual <= 100 * EPS * max(1.0, alpha * np.log(4096))
    assert fit.window == (16.0, 4096.0)
    np.testing.assert_allclose(fit.predict(t), y, rtol=1e-12)


def test_local_exponent_exact_for_power_law_and_tracks_log_corrections():
    t = np.arange(1, 100_001, dtype=np.float64)
    tg, a = local_exponent(t, 7.0 * t**-0.6)
    ok = np.isfinite(a)
    assert ok.sum() >= 40
    assert np.max(np.abs(a[ok] - 0.6)) <= 1e-12  # exact slope of exact data, per-window centred sums
    # y = (ln t)^2 / t: g(x) = ln y = 2 ln x - x (x = ln t), alpha(t) = -g'(x) = 1 - 2/x. The least-squares
    # slope over |x - x0| <= h differs from g'(x0) by at most h^2 (|g''| + |g'''|) = h^2 (2/x^2 + 4/x^3):
    # the samples are uniform in t, hence denser at the right end of the window in x, so g'' enters.
    t2 = t[1:]  # ln 1 = 0
    tg, a = local_exponent(t2, np.log(t2) ** 2 / t2, t_range=(100, 50_000), half_width=0.3)
    expected = 1 - 2 / np.log(tg)
    x = np.log(tg)
    assert np.all(np.abs(a - expected) <= 0.3**2 * (2 / x**2 + 4 / x**3))
    tc, ac = local_exponent_exact_grid(t[100:], (np.log(t) ** 2 / t)[100:])
    assert np.max(np.abs(ac - (1 - 2 / np.log(tc)))) < 1e-4  # centred difference, h = 1/t tiny


def test_log_grid_is_increasing_and_inside_the_window():
    t = np.arange(1, 5000, dtype=np.float64)
    idx = log_grid(t, 10, 4000, 50)
    assert np.all(np.diff(idx) > 0) and t[idx[0]] == 10 and t[idx[-1]] == 4000
    assert 40 <= idx.size <= 50
    with pytest.raises(ValueError, match="t_hi"):
        log_grid(t, 10, 5, 10)
    with pytest.raises(ValueError, match="fewer than 2"):
        log_grid(t, 10.2, 10.5, 10)


def test_geometric_mean_and_validation():
    x = np.array([[1.0, 4.0], [4.0, 1.0]])
    np.testing.assert_allclose(geometric_mean(x, axis=0), [2.0, 2.0], rtol=4 * EPS)
    with pytest.raises(ValueError, match="positive"):
        geometric_mean([1.0, 0.0])
    with pytest.raises(ValueError, match="rng"):
        bootstrap_power_law(np.arange(1.0, 10), np.ones((2, 9)), (1, 9), rng=0)


def test_bootstrap_without_noise_has_zero_width():
    t = np.arange(1, 1001, dtype=np.float64)
    Y = np.exp(np.arange(5.0))[:, None] * t**-0.8  # rows differ only by a constant factor
    fit = bootstrap_power_law(t, Y, (10, 1000), n_boot=50, rng=np.random.default_rng(0))
    assert abs(fit.alpha - 0.8) <= 100 * EPS
    assert fit.alpha_ci[1] - fit.alpha_ci[0] <= 1e-12


def test_bootstrap_interval_coverage_is_roughly_nominal():
    """Rows y_i = c_i t^-(alpha + b_i) e^(noise): the CI for alpha should cover it ~90% of the time."""
    rng = np.random.default_rng(12345)
    t = np.arange(1, 513, dtype=np.float64)
    alpha, reps, n, level = 0.5, 300, 30, 0.9
    hits = 0
    for _ in range(reps):
        b = rng.normal(0.0, 0.05, n)[:, None]  # per-pair exponent
        logY = -(alpha + b) * np.log(t) + rng.normal(0, 0.5, (n, 1)) + rng.normal(0, 0.05, (n, t.size))
        fit = bootstrap_power_law(t, np.exp(logY), (8, 512), n_boot=400, level=level, rng=rng, n_points=24)
        hits += fit.alpha_ci[0] <= alpha <= fit.alpha_ci[1]
    coverage = hits / reps
    se = np.sqrt(level * (1 - level) / reps)  # binomial SE of the coverage estimate (~0.017)
    # percentile bootstrap with n = 30 undercovers by O(1/n) (~0.03): allow that plus 3 SE
    assert level - 0.03 - 3 * se <= coverage <= level + 3 * se, coverage


@pytest.mark.parametrize("alpha", [0.5, 1.0, 3.0])
def test_hill_recovers_a_pareto_index(alpha):
    """An exact Pareto tail: k / alpha_hat is Gamma(k, alpha), so alpha_hat lies within 4/sqrt(k) of alpha."""
    rng = np.random.default_rng(int(alpha * 10))
    x = rng.pareto(alpha, 100_000) + 1.0  # P(X > t) = t^-alpha, t >= 1
    k = 2000
    assert hill_tail_index(x, k / x.size) == pytest.approx(alpha, rel=4 / np.sqrt(k))


def test_hill_sees_a_light_tail_and_is_scale_free():
    rng = np.random.default_rng(0)
    g = np.abs(rng.standard_normal(100_000))
    light = hill_tail_index(g, 0.01)
    assert 2 * np.log(100) * 0.7 < light < 2 * np.log(100) * 1.6  # about 2 ln(n / k) for a Gaussian tail
    assert hill_tail_index(7.5 * g, 0.01) == pytest.approx(light, rel=1e-12)


@pytest.mark.parametrize(
    ("x", "top", "match"),
    [
        (np.ones(10), 0.0, "top must be > 0"),
        (np.ones(10), 0.6, "top must be <= 0.5"),
        (np.array([1.0, -1.0, 2.0]), 0.5, "strictly positive"),
        (np.ones(100), 0.01, "at least 2 tail samples"),
    ],
)
def test_hill_rejects_bad_input(x, top, match):
    with pytest.raises(ValueError, match=match):
        hill_tail_index(x, top)
