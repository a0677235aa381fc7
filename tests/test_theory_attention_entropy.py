"""Theory of attention entropy (float64): Gaussian-logit entropy, dilution, SSMax, sigmoid, entropy bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.theory import attention_entropy as th

QUAD_TOL = 1e-7  # trapezoid quadrature: errors measured ~1e-8 at n <= 4096, s <= 6 (see the docstring)


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_entropy_from_logits_equals_entropy_of_softmax():
    rng = np.random.default_rng(0)
    x = 3.0 * rng.standard_normal((5, 40))
    np.testing.assert_allclose(th.softmax_entropy_from_logits(x), th.entropy(_softmax(x)), rtol=1e-12, atol=1e-12)
    x[:, 10:] = -np.inf  # hidden keys: the entropy of the first 10
    np.testing.assert_allclose(th.softmax_entropy_from_logits(x), th.entropy(_softmax(x[:, :10])), rtol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 17, 1000])
def test_exact_gaussian_entropy_special_cases(n):
    assert th.gaussian_entropy_exact(n, 0.0) == pytest.approx(math.log(n), abs=1e-15)
    if n == 1:
        assert th.gaussian_entropy_exact(1, 2.0) == 0.0
    if n == 2:  # independent route: one-dimensional integral over the gap
        for s in (0.3, 1.0, 3.0):
            assert th.gaussian_entropy_exact(2, s) == pytest.approx(th.two_key_entropy(s), abs=QUAD_TOL)


@pytest.mark.parametrize(("n", "s"), [(8, 0.7), (64, 2.0), (512, 3.0), (32, 5.0)])
def test_exact_gaussian_entropy_matches_monte_carlo(n, s):
    rng = np.random.default_rng(n)
    mean, se = th.gaussian_entropy_mc(n, s, reps=600, rng=rng)
    # 5 standard errors: a false failure has probability ~6e-7; the quadrature error is far below SE
    assert abs(th.gaussian_entropy_exact(n, s) - mean) <= 5 * se + QUAD_TOL


def test_small_scale_expansion():
    # H = ln n - (1/2) * sample variance + O(s^4) (third cumulant of a Gaussian is 0); E[sample var] = s^2 (n-1)/n
    for n in (4, 100):
        s = 0.02
        expected = math.log(n) - 0.5 * s**2 * (n - 1) / n
        assert th.gaussian_entropy_exact(n, s) == pytest.approx(expected, abs=10 * s**4 + QUAD_TOL)


def test_lln_law_and_its_first_correction():
    s = 0.6
    c1 = s**2 * math.exp(s**2) - 0.5 * math.expm1(s**2)  # coefficient of 1/n (delta method)
    errs = []
    for n in (256, 1024, 4096):
        ex = th.gaussian_entropy_exact(n, s)
        errs.append(abs(ex - th.lln_entropy(n, s)))
        # next order is O(e^{2 s^2} / n^2): n * (exact - lln) -> c1 with relative error ~ e^{s^2} / n
        assert n * (ex - th.lln_entropy(n, s)) == pytest.approx(c1, rel=8 * math.exp(s**2) / n)
        assert abs(ex - th.lln_entropy_second_order(n, s)) < abs(ex - th.lln_entropy(n, s))
    assert errs[0] > errs[1] > errs[2]  # the LLN law is approached as n grows


def test_breakdown_and_freezing():
    n = 1024
    s_b, s_f = float(th.breakdown_scale(n)), float(th.freezing_scale(n))
    assert th.partition_fluctuation(n, s_b) == pytest.approx(1 - 1 / n)  # (e^{ln n} - 1)/n
    assert th.lln_entropy(n, s_f) == pytest.approx(0.0, abs=1e-12)  # the LLN law hits 0 at freezing
    h_f = th.gaussian_entropy_exact(n, s_f)
    assert h_f > 0.5  # ... where the true entropy is still O(1), not 0
    # deep past freezing: the LLN law is negative, the exact entropy stays in (0, ln n)
    h = [th.gaussian_entropy_exact(n, s) for s in (0.5, 1.0, 2.0, s_b, s_f, 2 * s_f)]
    assert all(0 < a < math.log(n) for a in h)
    assert all(a > b for a, b in zip(h, h[1:], strict=False))  # entropy decreases with the logit scale
    # in the LLN regime (eps << 1) the law is accurate to O(eps)
    assert abs(th.gaussian_entropy_exact(n, 0.5) - th.lln_entropy(n, 0.5)) < 2 * th.partition_fluctuation(n, 0.5)
    # at the breakdown the leading law is off by O(1)
    assert abs(th.gaussian_entropy_exact(n, s_f) - th.lln_entropy(n, s_f)) > 0.5


def test_planted_weights_are_softmax_of_the_planted_vector():
    g = 1.3
    for n in (1, 2, 7, 300):
        x = np.zeros(n)
        x[0] = g
        assert th.planted_weight_softmax(n, g) == pytest.approx(_softmax(x)[0], rel=1e-13)
        x_ss = x * 0.8 * math.log(n)
        assert th.planted_weight_ssmax(n, g, 0.8) == pytest.approx(_softmax(x_ss)[0], rel=1e-13)
    assert th.planted_weight_softmax(50, 0.0) == pytest.approx(1 / 50)
    assert th.planted_weight_ssmax(50, 3.0, 0.0) == pytest.approx(1 / 50)


def test_ssmax_fading_stops_iff_sg_at_least_one():
    n = np.array([1e2, 1e4, 1e8, 1e16])
    # s g = 1: n / (2n - 1) exactly, -> 1/2
    np.testing.assert_allclose(th.planted_weight_ssmax(n, 2.0, 0.5), n / (2 * n - 1), rtol=1e-12)
    assert th.planted_weight_ssmax_limit(2.0, 0.5) == 0.5
    below, above = th.planted_weight_ssmax(n, 1.8, 0.5), th.planted_weight_ssmax(n, 2.2, 0.5)
    assert np.all(np.diff(below) < 0) and below[-1] < 1e-1 and th.planted_weight_ssmax_limit(1.8, 0.5) == 0.0
    assert np.all(np.diff(above) > 0) and above[-1] > 0.9 and th.planted_weight_ssmax_limit(2.2, 0.5) == 1.0
    # below the threshold it fades like n^{sg - 1}, with relative correction n^{sg - 1} (from the 1 in 1 + ...)
    assert np.all(np.abs(below * n ** (1 - 0.9) - 1.0) <= 2 * n ** (0.9 - 1))
    # softmax fades like e^g / n whatever g
    # relative correction (e^g - 1)/n from e^g + n - 1
    assert np.all(np.abs(th.planted_weight_softmax(n, 2.0) * n / math.exp(2.0) - 1) <= 2 * math.exp(2.0) / n)


def test_sigmoid_weight_is_independent_of_n():
    w = th.planted_weight_sigmoid(np.array([1, 10, 1e6]), 1.5, -0.5)
    np.testing.assert_allclose(w, 1 / (1 + math.exp(-1.0)), rtol=1e-15)
    with pytest.raises(ValueError, match="kernel"):
        th.planted_weight("linear", 3, 1.0)


def test_max_weight_bound_and_its_equality_case():
    rng = np.random.default_rng(1)
    M, n = 1.5, 64
    x = rng.uniform(-M, M, (200, n))
    assert np.all(_softmax(x).max(-1) <= th.max_weight_bound(n, M) * (1 + 1e-12))
    x_eq = np.full(n, -M)
    x_eq[0] = M  # one key at +M, the rest at -M: equality
    assert _softmax(x_eq)[0] == pytest.approx(th.max_weight_bound(n, M), rel=1e-13)


def test_entropy_lower_bounds_hold():
    rng = np.random.default_rng(2)
    for n in (2, 30, 500):
        x = rng.standard_normal((100, n)) * rng.uniform(0.1, 6.0, (100, 1))
        R = x.max(-1) - x.min(-1)
        H = th.softmax_entropy_from_logits(x)
        b = th.entropy_lower_bound_range(n, R)
        assert np.all(H >= b - 1e-12)
        assert np.all(b >= th.entropy_lower_bound_elementary(n, R / 2) - 1e-12)  # sharper than ln n - 2M
    # equality of the min-entropy step: two keys
    x = np.array([0.0, 2.0])
    assert th.entropy_lower_bound_range(2, 2.0) == pytest.approx(-math.log(_softmax(x).max()), rel=1e-13)


def test_spectral_bound_holds_on_random_projections():
    rng = np.random.default_rng(3)
    d, dh, n, c = 16, 4, 200, 0.5
    for scale in (0.3, 1.0, 3.0):
        Wq, Wk = scale * rng.standard_normal((dh, d)), scale * rng.standard_normal((dh, d))
        x = rng.standard_normal((n, d))
        logits = c * (x @ Wq.T) @ (x @ Wk.T).T  # (n, n)
        sigma = np.linalg.norm(Wq.T @ Wk, 2)
        xn = np.linalg.norm(x, axis=-1)
        H = th.softmax_entropy_from_logits(logits)
        bound = th.spectral_entropy_bound(n, sigma, c, xn, xn.max())
        assert np.all(H >= bound - 1e-12)


def test_planted_log_slope_is_the_derivative_and_tends_to_the_fading_rate():
    n = np.geomspace(3, 1e7, 30)
    h = 1e-5  # central difference in ln n: error O(h^2 * third derivative) ~ 1e-10
    for kernel, s_ in (("softmax", 1.0), ("ssmax", 0.3), ("ssmax", 0.5), ("ssmax", 0.8), ("sigmoid", 1.0)):
        w = lambda m, k=kernel, s_=s_: th.planted_weight(k, m, 2.0, ssmax_s=s_)  # noqa: E731
        numeric = (np.log(w(n * math.exp(h))) - np.log(w(n * math.exp(-h)))) / (2 * h)
        np.testing.assert_allclose(th.planted_log_slope(kernel, n, 2.0, ssmax_s=s_), numeric, atol=1e-8)
    for sg in (0.4, 0.7, 1.0, 1.3, 2.0):
        local = th.planted_log_slope("ssmax", np.array([1e12]), 2.0, ssmax_s=sg / 2.0)[0]
        # correction of relative size n^{-|sg-1|} (1/(2n) at sg = 1)
        assert abs(local - th.ssmax_fade_rate(sg)) <= abs(sg - 1) * 1e12 ** (-abs(sg - 1)) + 1e-11
    assert th.planted_log_slope("softmax", np.array([1e9]), 2.0)[0] == pytest.approx(-1.0, abs=2 * math.exp(2) / 1e9)
    with pytest.raises(ValueError, match="kernel"):
        th.planted_log_slope("linear", 3, 1.0)


def test_least_squares_slope_lies_within_the_local_slopes():
    """The probe's fitted fading rate is judged by the range of the exact local slope over the window."""
    n = np.unique(np.geomspace(40, 4096, 25).round())
    for sg in (0.5, 0.9, 1.0, 1.5):
        w = th.planted_weight_ssmax(n, 2.0, sg / 2.0)
        fit = np.polyfit(np.log(n), np.log(w), 1)[0]
        local = th.planted_log_slope("ssmax", n, 2.0, ssmax_s=sg / 2.0)
        assert local.min() - 1e-12 <= fit <= local.max() + 1e-12


# ---------------------------------------------------------------------------------------------
# sigmoid attention: a row's total weight at initialisation


@pytest.mark.parametrize("s", [0.0, 0.3, 1.0, 2.5])
@pytest.mark.parametrize("n", [2, 64, 1024])
def test_sigmoid_row_total_with_zero_bias_is_half_the_keys(n, s):
    # sigma(x) + sigma(-x) = 1 and the Gaussian is symmetric: exactly n/2 for every s
    assert th.sigmoid_row_total(n, s, 0.0) == pytest.approx(n / 2, rel=1e-12)


@pytest.mark.parametrize("b", [-math.log(1024), -2.0, 0.7])
def test_sigmoid_row_total_without_spread_is_n_sigma_b(b):
    n = 1024
    assert th.sigmoid_row_total(n, 0.0, b) == pytest.approx(n / (1 + math.exp(-b)), rel=1e-13)
    if b == -math.log(n):
        assert th.sigmoid_row_total(n, 0.0, b) == pytest.approx(n / (n + 1), rel=1e-13)


def test_sigmoid_row_total_small_spread_expansion():
    # n E sigma(sZ + b) = n [sigma(b) + sigma''(b) s^2 / 2] + O(s^4)
    n, b = 256, -math.log(256)
    sig = 1 / (1 + math.exp(-b))
    d2 = sig * (1 - sig) * (1 - 2 * sig)
    for s in (0.05, 0.1):
        err = th.sigmoid_row_total(n, s, b) - n * (sig + d2 * s**2 / 2)
        assert abs(err) < 3 * n * s**4 * abs(d2)  # the next term is O(s^4), same size of derivative


@pytest.mark.parametrize(("s", "b"), [(1.0, -math.log(1024)), (2.0, -math.log(64)), (0.6, 1.5)])
def test_sigmoid_row_total_matches_monte_carlo(s, b):
    n, m = 1024, 400_000
    rng = np.random.default_rng(17)
    x = rng.standard_normal(m) * s + b
    sig = 1 / (1 + np.exp(-x))
    mc, se = n * sig.mean(), n * sig.std(ddof=1) / math.sqrt(m)
    assert abs(th.sigmoid_row_total(n, s, b) - mc) < 5 * se


def test_sigmoid_row_total_broadcasts():
    n = np.array([10, 100])[:, None]
    s = np.array([0.5, 1.0, 1.5])[None, :]
    out = th.sigmoid_row_total(n, s, -np.log(n))
    assert out.shape == (2, 3)
    assert out[1, 2] == pytest.approx(th.sigmoid_row_total(100, 1.5, -math.log(100)), rel=1e-15)


# ---------------------------------------------------------------------------------------------
# Many n at once, large s, rows (the nonlinearity comparison, 004#30)


@pytest.mark.parametrize("s", [0.0, 0.4, 3.0, 12.0])
def test_exact_many_equals_one_n_at_a_time(s):
    ns = np.array([1, 2, 3, 9, 32])
    got = th.gaussian_entropy_exact_many(ns, s)
    want = [th.gaussian_entropy_exact(int(n), s) for n in ns]
    np.testing.assert_allclose(got, want, atol=QUAD_TOL)


def test_top_gap_density_two_keys_and_monte_carlo():
    # n = 2: the gap |z1 - z2| is |N(0, 2)|, density 1 / sqrt(pi) at 0
    assert float(th.top_gap_density(2)) == pytest.approx(1.0 / math.sqrt(math.pi), rel=1e-10)
    rng = np.random.default_rng(3)
    z = np.sort(rng.standard_normal((400_000, 8)), axis=1)
    gap = z[:, -1] - z[:, -2]
    h = 0.02
    mc = np.mean(gap < h) / h  # density at 0 (the density's slope moves it by O(h))
    assert float(th.top_gap_density(8)) == pytest.approx(mc, rel=0.05)


@pytest.mark.parametrize("n", [2, 8, 32])
def test_large_s_form_against_monte_carlo_and_quadrature(n):
    rng = np.random.default_rng(n)
    for s in (100.0, 1000.0):
        mean, se = th.gaussian_entropy_mc(n, s, 100_000, rng)
        # leading order: relative correction O(1/s), below 1 % at s >= 100 (n <= 32)
        assert float(th.gaussian_entropy_large_s(n, s)) == pytest.approx(mean, abs=4 * se + 0.01 * mean)
    # at the switch the two forms agree to a few per cent (the quadrature is accurate there)
    at = th.S_ASYMPTOTIC
    assert float(th.gaussian_entropy_large_s(n, at)) == pytest.approx(th.gaussian_entropy_exact(n, at), rel=0.05)
    np.testing.assert_allclose(th.gaussian_entropy([n], 2 * at), th.gaussian_entropy_large_s(n, 2 * at))


def test_entropy_rows_against_direct_quadrature_and_its_branches():
    rng = np.random.default_rng(1)
    n = rng.integers(1, 33, 40)
    s = np.exp(rng.uniform(math.log(th.S_SMALL * 1.1), math.log(th.S_ASYMPTOTIC * 0.9), 40))
    want = [th.gaussian_entropy_exact(int(a), float(b)) for a, b in zip(n, s, strict=True)]
    np.testing.assert_allclose(th.gaussian_entropy_rows(n, s), want, atol=1e-3)  # spline in ln s on 61 points
    small = th.gaussian_entropy_rows([16], [th.S_SMALL / 2])
    assert float(small[0]) == pytest.approx(th.gaussian_entropy_exact(16, th.S_SMALL / 2), abs=1e-7)
    big = th.gaussian_entropy_rows([16, 1], [3 * th.S_ASYMPTOTIC, 100.0])
    np.testing.assert_allclose(big, [float(th.gaussian_entropy_large_s(16, 3 * th.S_ASYMPTOTIC)), 0.0])
    with pytest.raises(ValueError, match="s must be"):
        th.gaussian_entropy_rows([4], [math.nan])


def test_mean_normalised_entropy_and_gaussian_kurtosis():
    ns = np.arange(2, 10)
    want = np.mean([th.gaussian_entropy_exact(int(n), 1.3) / math.log(n) for n in ns])
    assert th.mean_normalised_gaussian_entropy(ns, 1.3) == pytest.approx(want, abs=QUAD_TOL)
    assert th.mean_normalised_gaussian_entropy(ns, 0.0) == pytest.approx(1.0, abs=1e-15)
    with pytest.raises(ValueError, match="n must be >= 2"):
        th.mean_normalised_gaussian_entropy([1, 2], 1.0)
    rng = np.random.default_rng(5)
    for n in (3, 12):
        x = rng.standard_normal((200_000, n))
        d = x - x.mean(1, keepdims=True)
        g2 = (d**4).mean(1) / (d**2).mean(1) ** 2 - 3.0
        se = g2.std() / math.sqrt(g2.size)
        assert g2.mean() == pytest.approx(float(th.sample_kurtosis_gaussian(n)), abs=4 * se)


# ---------------------------------------------------------------------------------------------
# A trained planted key (retrieval, 000#6)


@pytest.mark.parametrize("s", [None, 0.3, 1.2])
def test_retrieval_weight_is_the_softmax_weight_of_the_row(s):
    """At the sampled number of distractors the formula is the softmax (or SSMax) weight of the row itself."""
    rng = np.random.default_rng(1)
    B, m = 6, 23
    planted, distractors, own = rng.normal(3.0, 1.0, B), rng.normal(0.0, 2.0, (B, m)), rng.normal(1.0, 1.0, B)
    logits = np.concatenate([planted[:, None], distractors, own[:, None]], axis=1)  # (B, K), K = m + 2
    a = 1.0 if s is None else float(th.ssmax_factor(m + 2, s))
    direct = _softmax(a * logits)[:, 0]
    got = th.retrieval_weight(m, planted[:, None] - distractors, (planted - own)[:, None], a)
    np.testing.assert_allclose(got, direct, rtol=1e-13)
    # no fixed keys: the plain softmax of planted and distractors
    np.testing.assert_allclose(
        th.retrieval_weight(m, planted[:, None] - distractors, np.zeros((B, 0)), a),
        _softmax(a * logits[:, :-1])[:, 0],
        rtol=1e-13,
    )


@pytest.mark.parametrize("g", [0.5, 2.0, 9.0])
def test_retrieval_weight_with_one_gap_is_the_planted_closed_form(g):
    ns = np.array([2, 10, 100, 5000])
    s = 0.7
    for n in ns:
        one = np.array([g])
        assert th.retrieval_weight(n - 1, one, np.zeros(0), 1.0) == pytest.approx(
            float(th.planted_weight_softmax(n, g)), rel=1e-13
        )
        a = float(th.ssmax_factor(n, s))
        assert th.retrieval_weight(n - 1, one, np.zeros(0), a) == pytest.approx(
            float(th.planted_weight_ssmax(n, g, s)), rel=1e-13
        )


def test_effective_gap_gives_the_same_weight_and_large_gaps_do_not_overflow():
    rng = np.random.default_rng(2)
    gaps = rng.normal(4.0, 1.5, 40)
    for a, m in ((1.0, 500), (2.5, 7)):
        eff = th.effective_gap(gaps, a)
        assert th.retrieval_weight(m, gaps, np.zeros(0), a) == pytest.approx(
            th.retrieval_weight(m, np.array([eff]), np.zeros(0), a), rel=1e-13
        )
        assert eff <= gaps.mean() + 1e-12  # log-mean-exp of -a d >= mean of -a d (Jensen)
    huge = np.array([900.0, 1000.0])
    w = th.retrieval_weight(10, huge, np.array([800.0]), 1.0)
    assert w == 1.0 and np.isfinite(th.effective_gap(huge, 1.0))
    assert th.retrieval_weight(0, gaps, np.zeros(0), 1.0) == 1.0  # no distractor, no fixed key


def test_retrieval_weight_refuses_bad_input():
    with pytest.raises(ValueError, match="m must be"):
        th.retrieval_weight(-1, np.array([1.0]), np.zeros(0), 1.0)
    with pytest.raises(ValueError, match="at least one distractor"):
        th.retrieval_weight(5, np.zeros(0), np.zeros(0), 1.0)
