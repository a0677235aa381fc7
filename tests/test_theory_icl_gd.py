"""Theory of in-context regression as GD (analysis/theory/icl_gd/): exact identities and closed forms.

Monte Carlo tolerances are |mc - theory| <= 4 SE with SE the sample standard error; the seeds are
fixed, so each check is deterministic, and at 4 SE a correct formula would fail with probability
~6e-5 for a fresh seed. Exact identities (construction = GD) use float64 round-off bounds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
import torch

from analysis.theory import icl_gd as T

Z = 4.0  # Monte Carlo tolerance in standard errors
EPS64 = float(np.finfo(np.float64).eps)


def _mc_squared_errors(predictors, batch, query_noise=True):
    """Per-task squared errors of several predictors on one shared batch (common random numbers)."""
    target = batch.y_q if query_noise else (batch.w * batch.x_q).sum(-1)
    with torch.no_grad():
        return [(p(batch.x_ctx, batch.y_ctx, batch.x_q).numpy() - target) ** 2 for p in predictors]


def _mean_se(v):
    return v.mean(), v.std(ddof=1) / math.sqrt(v.size)


def _rotated_sigma(d, cond, seed):
    rng = np.random.default_rng(seed)
    R = np.linalg.qr(rng.standard_normal((d, d)))[0]
    return R @ np.diag(T.geometric_spectrum(d, cond)) @ R.T


# ------------------------------------------------------------------------------------------------
# Sampler and validation
# ------------------------------------------------------------------------------------------------


def test_sampler_shapes_determinism_and_labels():
    a = T.sample_regression(5, 3, 4, "uniform", 0.0, np.random.default_rng(7))
    b = T.sample_regression(5, 3, 4, "uniform", 0.0, np.random.default_rng(7))
    assert a.x_ctx.shape == (5, 4, 3) and a.y_ctx.shape == (5, 4) and a.x_q.shape == (5, 3)
    assert a.y_q.shape == (5,) and a.w.shape == (5, 3) and a.x_ctx.dtype == np.float64
    for field in ("x_ctx", "y_ctx", "x_q", "y_q", "w"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    # noiseless labels are exactly w.x (same float64 ops up to summation order)
    np.testing.assert_allclose(a.y_ctx, np.einsum("bnd,bd->bn", a.x_ctx, a.w), rtol=0, atol=1e-15)
    assert np.all(np.abs(a.x_ctx) <= 0.5)


@pytest.mark.parametrize("x_dist", ["gaussian", "uniform", "anisotropic"])
def test_sampler_second_moment(x_dist):
    d = 3
    Sigma = _rotated_sigma(d, 5.0, 0) if x_dist == "anisotropic" else None
    S = T.second_moment(d, x_dist, Sigma)
    b = T.sample_regression(20000, d, 2, x_dist, 0.0, np.random.default_rng(1), Sigma)
    x = b.x_ctx.reshape(-1, d)
    prod = x[:, :, None] * x[:, None, :]  # (n, d, d)
    se = prod.std(0, ddof=1) / math.sqrt(x.shape[0])
    assert np.all(np.abs(prod.mean(0) - S) <= Z * se)


def test_validation_messages():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="x_dist"):
        T.sample_regression(2, 2, 2, "laplace", 0.0, rng)
    with pytest.raises(ValueError, match="Sigma must be given"):
        T.sample_regression(2, 2, 2, "anisotropic", 0.0, rng)
    with pytest.raises(ValueError, match="Sigma must be None"):
        T.second_moment(2, "gaussian", np.eye(2))
    with pytest.raises(ValueError, match="positive semi-definite"):
        T.second_moment(2, "anisotropic", np.diag([1.0, -1.0]))
    with pytest.raises(ValueError, match="sigma"):
        T.one_step_gd_theory(2, 2, "gaussian", -1.0)
    with pytest.raises(ValueError, match="steps"):
        T.GD(eta=0.1, steps=0)
    with pytest.raises(ValueError, match="one entry per step"):
        T.GD(eta=(0.1, 0.2), steps=3)
    with pytest.raises(ValueError, match="x_ctx"):
        T.GD(0.1)(np.zeros((2, 3, 4)), np.zeros((2, 3)), np.zeros((2, 5)))


# ------------------------------------------------------------------------------------------------
# Baselines
# ------------------------------------------------------------------------------------------------


def test_baselines_basic_identities():
    b = T.sample_regression(40, 4, 7, "gaussian", 0.0, np.random.default_rng(2))
    args = (b.x_ctx, b.y_ctx, b.x_q)
    target = (b.w * b.x_q).sum(-1)
    # noiseless, N >= d: least squares recovers w exactly (up to the conditioning of X)
    np.testing.assert_allclose(T.LeastSquares()(*args).numpy(), target, rtol=0, atol=1e-10)
    # ridge against an explicit numpy solve, and its lam -> 0 limit
    lam = 0.3
    w_r = np.stack([np.linalg.solve(x.T @ x + lam * np.eye(4), x.T @ y) for x, y in zip(b.x_ctx, b.y_ctx, strict=True)])
    np.testing.assert_allclose(T.Ridge(lam)(*args).numpy(), (w_r * b.x_q).sum(-1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(T.Ridge(0.0)(*args).numpy(), target, rtol=0, atol=1e-10)
    assert T.Ridge.bayes_optimal(0.5, 2.0).lam == pytest.approx(0.0625)
    # averaging is one GD step with eta = 1; one step with eta is eta (1/N) sum y_i x_i.x_q
    h = np.einsum("bnd,bn->bd", b.x_ctx, b.y_ctx) / 7
    np.testing.assert_allclose(T.Averaging()(*args).numpy(), (h * b.x_q).sum(-1), rtol=1e-13)
    np.testing.assert_allclose(T.one_step_gd(0.3)(*args).numpy(), 0.3 * (h * b.x_q).sum(-1), rtol=1e-13)
    assert np.all(T.ZeroPredictor()(*args).numpy() == 0.0)
    # k-NN: k = 1 returns the label of the nearest point, k >= N the context mean
    nearest = np.argmin(((b.x_ctx - b.x_q[:, None]) ** 2).sum(-1), axis=1)
    np.testing.assert_array_equal(T.KNN(1)(*args).numpy(), b.y_ctx[np.arange(40), nearest])
    np.testing.assert_allclose(T.KNN(50)(*args).numpy(), b.y_ctx.mean(1), rtol=1e-14)
    names = [
        p.name
        for p in (
            T.ZeroPredictor(),
            T.GD(0.5, 3),
            T.one_step_gd(0.25, np.eye(4)),
            T.Ridge(0.1),
            T.KNN(3),
            T.LeastSquares(),
            T.Averaging(),
        )
    ]
    assert names == [
        "zero",
        "gd3_eta=0.5",
        "pgd1_eta=0.25",
        "ridge_lam=0.1",
        "knn_k=3",
        "least_squares",
        "averaging",
    ]


@pytest.mark.parametrize("gamma", [None, "random"])
def test_gd_linear_map_matches_iteration(gamma):
    rng = np.random.default_rng(3)
    G = np.eye(3) + 0.3 * rng.standard_normal((3, 3)) if gamma else None
    b = T.sample_regression(30, 3, 5, "uniform", 0.1, rng)
    gd = T.GD(eta=(2.0, 1.0, 0.5, 3.0), steps=4, gamma=G)
    via_map = (
        torch.einsum("bdn,bn->bd", gd.linear_map(b.x_ctx), torch.as_tensor(b.y_ctx)) * torch.as_tensor(b.x_q)
    ).sum(-1)
    out = gd(b.x_ctx, b.y_ctx, b.x_q)
    # two orderings of the same K matrix products: round-off ~ K * N * d * eps relative to the scale
    assert torch.max(torch.abs(via_map - out)) <= 1e-12 * torch.max(torch.abs(out))


# ------------------------------------------------------------------------------------------------
# The construction: K stacked LSA layers == K steps of GD, exactly
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layers", [1, 2, 3, 4])
@pytest.mark.parametrize("precond", [False, True])
def test_construction_equals_gd(layers, precond):
    rng = np.random.default_rng(10 + layers)
    d, N = 5, 8
    G = np.eye(d) + 0.2 * rng.standard_normal((d, d)) if precond else None  # non-symmetric on purpose
    etas = [0.9, 0.5, 1.1, 0.7][:layers]
    b = T.sample_regression(64, d, N, "gaussian", 0.2, rng)
    gd = T.GD(eta=tuple(etas), steps=layers, gamma=G)(b.x_ctx, b.y_ctx, b.x_q)
    lsa = T.LinearSelfAttention(T.gd_lsa_stack(d, etas, N, layers, G))(b.x_ctx, b.y_ctx, b.x_q)
    # Same real numbers by the residual recursion in gd_lsa_stack's docstring; the two float64
    # computations differ only by rounding of O(K N d) products and sums: relative error
    # ~ K N d * 1.1e-16 ~ 5e-14, far below 1e-12, while any algebraic slip would be O(1).
    scale = torch.max(torch.abs(gd))
    assert torch.max(torch.abs(gd - lsa)) <= 1e-12 * scale


def test_construction_needs_context_only_keys_beyond_one_layer():
    rng = np.random.default_rng(4)
    d, N = 3, 6
    b = T.sample_regression(32, d, N, "gaussian", 0.0, rng)
    tokens = T.concat_tokens(b.x_ctx, b.y_ctx, b.x_q)
    one = T.gd_lsa_stack(d, 0.8, N, 1)
    two = T.gd_lsa_stack(d, 0.8, N, 2)
    # one layer: the query's value (0, -0) is zero, so including it changes nothing
    a = T.read_prediction(T.lsa_forward(tokens, one, include_query=True))
    assert torch.max(torch.abs(a - T.GD(0.8)(b.x_ctx, b.y_ctx, b.x_q))) <= 1e-12 * torch.max(torch.abs(a))
    # two layers: the query slot now holds -w_1.x_q and would feed back, breaking GD
    gd2 = T.GD(0.8, 2)(b.x_ctx, b.y_ctx, b.x_q)
    wrong = T.read_prediction(T.lsa_forward(tokens, two, include_query=True))
    assert torch.max(torch.abs(wrong - gd2)) > 1e-3 * torch.max(torch.abs(gd2))
    # and the x-parts of all tokens are untouched by the construction
    out = T.lsa_forward(tokens, two)
    assert torch.equal(out[..., :d], tokens[..., :d])


# ------------------------------------------------------------------------------------------------
# Closed forms against sympy brute force (exact) and against Monte Carlo
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d,N", [(1, 1), (2, 2), (3, 2), (2, 3)])
def test_sympy_bruteforce_equals_closed_form_independent_coords(d, N):
    diff = T.sympy_one_step_loss_bruteforce(d, N) - T.sympy_one_step_loss_closed_form(d, N)
    assert sp.simplify(diff) == 0


def test_sympy_bruteforce_equals_closed_form_correlated_gaussian_preconditioned():
    L = sp.Matrix([[1, 0], [sp.Rational(1, 2), 2]])  # Sigma = L L^T, correlated
    G = sp.Matrix([[1, sp.Rational(1, 3)], [0, 2]])  # non-symmetric preconditioner
    for qn in (True, False):
        bf = T.sympy_one_step_loss_bruteforce(2, 2, L=L, gamma=G, query_noise=qn)
        cf = T.sympy_one_step_loss_closed_form(2, 2, L=L, gamma=G, query_noise=qn)
        assert sp.simplify(bf - cf) == 0


def test_symbolic_eta_star_matches_numeric():
    sy = T.sympy_symbols()
    expr = T.sympy_eta_star_independent()
    for d, N, sigma, w_std in [(10, 10, 0.0, 1.0), (3, 20, 0.5, 2.0), (1, 1, 1.0, 0.5)]:
        for x_dist, v, m4 in [("uniform", sp.Rational(1, 12), sp.Rational(1, 80)), ("gaussian", 1, 3)]:
            val = expr.subs({sy["d"]: d, sy["N"]: N, sy["v"]: v, sy["m4"]: m4, sy["sigma"]: sigma, sy["w_std"]: w_std})
            num = T.one_step_gd_theory(d, N, x_dist, sigma, w_std)["eta_star"]
            assert float(val) == pytest.approx(num, rel=1e-14)
    # the isotropic Gaussian result of the literature: eta* = N / (N + d + 1 + sigma^2 / w_std^2)
    th = T.one_step_gd_theory(10, 10, "gaussian", 0.5, 2.0)
    assert th["eta_star"] == pytest.approx(10 / (10 + 10 + 1 + 0.25 / 4), rel=1e-14)
    assert th["loss_star"] == pytest.approx(th["loss_fn"](th["eta_star"]), rel=1e-14)


@pytest.mark.parametrize("x_dist,sigma", [("uniform", 0.0), ("gaussian", 0.0), ("uniform", 0.1), ("anisotropic", 0.5)])
def test_one_step_theory_against_monte_carlo(x_dist, sigma):
    d, N = (10, 10) if x_dist == "uniform" else (5, 8)
    Sigma = _rotated_sigma(d, 10.0, 1) if x_dist == "anisotropic" else None
    th = T.one_step_gd_theory(d, N, x_dist, sigma, 1.0, Sigma)
    etas = [th["eta_star"], 2.0 * th["eta_star"]]  # at eta* and where the c eta^2 term dominates
    b = T.sample_regression(100000, d, N, x_dist, sigma, np.random.default_rng(20), Sigma)
    errs = _mc_squared_errors([T.one_step_gd(e) for e in etas], b)
    for e, err in zip(etas, errs, strict=True):
        mc, se = _mean_se(err)
        assert abs(mc - th["loss_fn"](e)) <= Z * se, (e, mc, se, th["loss_fn"](e))
    if x_dist == "uniform" and sigma == 0.0:
        # power check: the Gaussian fourth moment (m4 = 3 v^2) in place of the uniform one is
        # rejected by this very sample, so the test can tell the two laws apart
        v, m4g = 1 / 12, 3 / 144
        c_wrong = d * v * ((1 - 1 / N) * v**2 + ((d - 1) * v**2 + m4g) / N)
        mc, se = _mean_se(errs[0])
        wrong = th["a"] - 2 * th["b"] * etas[0] + c_wrong * etas[0] ** 2
        assert abs(mc - wrong) > Z * se


def test_wishart_second_moment_identity():
    """E[S A S] = (1 + 1/N) Sigma A Sigma + (1/N) tr(A Sigma) Sigma for Gaussian x, entrywise by MC."""
    d, N = 3, 4
    Sigma = _rotated_sigma(d, 4.0, 2)
    A = np.array([[1.0, 0.3, -0.2], [0.3, 2.0, 0.1], [-0.2, 0.1, 0.5]])
    b = T.sample_regression(60000, d, N, "anisotropic", 0.0, np.random.default_rng(5), Sigma)
    S = np.einsum("bni,bnj->bij", b.x_ctx, b.x_ctx) / N  # (B, d, d)
    SAS = S @ A @ S
    theory = (1 + 1 / N) * Sigma @ A @ Sigma + np.trace(A @ Sigma) / N * Sigma
    se = SAS.std(0, ddof=1) / math.sqrt(SAS.shape[0])
    assert np.all(np.abs(SAS.mean(0) - theory) <= Z * se)


def test_optimal_preconditioner_is_optimal_and_matches_monte_carlo():
    d, N, sigma = 4, 6, 0.5
    Sigma = _rotated_sigma(d, 10.0, 3)
    pre = T.optimal_preconditioner(Sigma, N, sigma)
    G = pre["gamma"]
    assert pre["loss_fn"](G) == pytest.approx(pre["loss_star"], rel=1e-12)
    # stationarity: the loss is quadratic in Gamma, so loss(G + t E) - loss(G) = t^2 q(E) > 0 exactly
    rng = np.random.default_rng(6)
    for _ in range(5):
        E = rng.standard_normal((d, d))
        up, down = pre["loss_fn"](G + 1e-3 * E), pre["loss_fn"](G - 1e-3 * E)
        assert up > pre["loss_star"] and down > pre["loss_star"]
        assert abs(up - down) <= 1e-10 * pre["loss_star"]  # zero first-order term (round-off only)
    # better than the best scalar step, equal to it for Sigma = I
    assert pre["loss_star"] < T.one_step_gd_theory(d, N, "anisotropic", sigma, 1.0, Sigma)["loss_star"]
    iso = T.optimal_preconditioner(np.eye(d), N, sigma)
    th = T.one_step_gd_theory(d, N, "gaussian", sigma)
    np.testing.assert_allclose(iso["gamma"], th["eta_star"] * np.eye(d), rtol=1e-14)
    assert iso["loss_star"] == pytest.approx(th["loss_star"], rel=1e-13)
    # Monte Carlo, direct squared errors, at Gamma* and at a perturbed Gamma
    b = T.sample_regression(100000, d, N, "anisotropic", sigma, np.random.default_rng(7), Sigma)
    G2 = G + 0.2 * rng.standard_normal((d, d))
    errs = _mc_squared_errors([T.one_step_gd(1.0, G), T.one_step_gd(1.0, G2)], b)
    for g, err in zip((G, G2), errs, strict=True):
        mc, se = _mean_se(err)
        assert abs(mc - pre["loss_fn"](g)) <= Z * se


@pytest.mark.parametrize("d,N,sigma", [(5, 20, 0.0), (3, 4, 0.5), (8, 6, 0.2)])
def test_relu_response_one_step_theory_against_monte_carlo(d, N, sigma):
    """ReLU responses, isotropic Gaussian inputs: eta* = N / (N + 2d + 3 + 4 sigma^2), Gamma* = eta* I, and the
    closed-form loss of one least-squares GD step at several rates and at a random Gamma against direct Monte
    Carlo squared errors on one shared batch drawn from the ReLU law."""
    r = T.one_step_gd_relu_theory(d, N, sigma)
    assert r["eta_star"] == pytest.approx(N / (N + 2 * d + 3 + 4 * sigma**2), rel=1e-14)
    assert r["loss_fn"](r["eta_star"]) == pytest.approx(r["loss_star"], rel=1e-13)
    assert r["loss_gamma"](r["eta_star"] * np.eye(d)) == pytest.approx(r["loss_star"], rel=1e-13)
    lin = T.one_step_gd_theory(d, N, "gaussian", sigma)["eta_star"]
    assert r["eta_star"] < lin  # the ReLU's larger fourth moment lowers the best step
    rng = np.random.default_rng(11)
    G = r["eta_star"] * np.eye(d) + 0.1 * rng.standard_normal((d, d))
    assert r["loss_gamma"](G) > r["loss_star"]  # Gamma* = eta* I is the minimiser (strictly convex quadratic)
    b = T.sample_regression(100000, d, N, "gaussian", sigma, np.random.default_rng(12), link="relu")
    preds = [T.one_step_gd(e) for e in (r["eta_star"], lin, 1.0)] + [T.one_step_gd(1.0, G)]
    expect = [r["loss_fn"](e) for e in (r["eta_star"], lin, 1.0)] + [r["loss_gamma"](G)]
    ses = []
    for err, e in zip(_mc_squared_errors(preds, b), expect, strict=True):
        mc, se = _mean_se(err)
        assert abs(mc - e) <= Z * se, (mc, e, se)
        ses.append(se)
    # the linear law's formula at the same eta* is a different number: the check tells the two laws apart
    linear_formula = T.one_step_gd_theory(d, N, "gaussian", sigma)["loss_fn"](r["eta_star"])
    assert abs(linear_formula - r["loss_star"]) > 20 * ses[0]
    mc = T.expected_loss_mc(T.one_step_gd(r["eta_star"]), d, N, "gaussian", sigma, rng, n_tasks=40000, link="relu")
    assert mc["method"] == "monte_carlo" and abs(mc["loss"] - r["loss_star"]) <= Z * mc["se"]


def test_relu_theory_and_law_refuse_bad_input():
    with pytest.raises(ValueError, match="link"):
        T.sample_regression(4, 3, 5, "gaussian", 0.0, np.random.default_rng(0), link="tanh")
    with pytest.raises(ValueError, match="N"):
        T.one_step_gd_relu_theory(3, 0, 0.0)
    with pytest.raises(ValueError, match="shape"):
        T.one_step_gd_relu_theory(3, 5, 0.0)["loss_gamma"](np.eye(2))


@pytest.mark.parametrize(
    "d,N,x_dist,sigma",
    [(4, 10, "gaussian", 0.5), (4, 10, "anisotropic", 0.3), (6, 3, "gaussian", 0.5), (6, 3, "uniform", 0.0)],
)
def test_least_squares_closed_forms_against_monte_carlo(d, N, x_dist, sigma):
    Sigma = _rotated_sigma(d, 5.0, 4) if x_dist == "anisotropic" else None
    theory = T.least_squares_theory(d, N, x_dist, sigma, 1.0, Sigma)
    mc = T.expected_loss_mc(T.LeastSquares(), d, N, x_dist, sigma, np.random.default_rng(8), n_tasks=20000, Sigma=Sigma)
    # sigma = 0, Sigma = v I, N < d: the conditional loss w^2 v (d - N) is the same for every X,
    # so the sample SE is ~0 and the check is exact up to round-off
    assert abs(mc["loss"] - theory) <= Z * mc["se"] + 1e-12 * theory


def test_least_squares_special_cases():
    assert T.least_squares_theory(4, 4, "gaussian", 0.5) == math.inf
    assert T.least_squares_theory(4, 5, "gaussian", 0.5) == math.inf
    assert T.least_squares_theory(6, 5, "gaussian", 0.5) == math.inf
    assert T.least_squares_theory(4, 9, "uniform", 0.5) is None
    assert T.least_squares_theory(4, 9, "uniform", 0.0, query_noise=True) == 0.0
    assert T.least_squares_theory(4, 2, "anisotropic", 0.5, Sigma=[1.0, 2.0, 3.0, 4.0]) is None


def test_rao_blackwell_agrees_with_direct_and_bayes_ridge_is_best():
    d, N, sigma = 5, 6, 0.5
    ridge = T.Ridge.bayes_optimal(sigma)
    rb = T.expected_loss_mc(ridge, d, N, "uniform", sigma, np.random.default_rng(9), n_tasks=10000)
    direct = T.expected_loss_mc(
        ridge, d, N, "uniform", sigma, np.random.default_rng(10), n_tasks=50000, rao_blackwell=False
    )
    assert rb["method"] == "monte_carlo_rb" and direct["method"] == "monte_carlo"
    assert abs(rb["loss"] - direct["loss"]) <= Z * math.hypot(rb["se"], direct["se"])
    # Bayes optimality of the posterior mean: no predictor does better (checked with common samples)
    b = T.sample_regression(30000, d, N, "uniform", sigma, np.random.default_rng(11))
    eta = T.one_step_gd_theory(d, N, "uniform", sigma)["eta_star"]
    e_r, e_g, e_l = _mc_squared_errors([ridge, T.one_step_gd(eta), T.LeastSquares()], b)
    for other in (e_g, e_l):
        mc, se = _mean_se(other - e_r)
        assert mc > -Z * se


def test_baseline_theory_table():
    out = T.baseline_theory(10, 10, "uniform", 0.0, np.random.default_rng(12), n_mc=2000)
    th = T.one_step_gd_theory(10, 10, "uniform", 0.0)
    assert out["zero"]["loss"] == pytest.approx(10 / 12)
    assert out["gd_star"]["eta"] == pytest.approx(th["eta_star"])
    assert out["least_squares"]["loss"] == 0.0 and out["ridge_bayes"]["loss"] == 0.0
    assert "precond_gd_star" not in out and out["knn"]["method"] == "monte_carlo"
    aniso = T.baseline_theory(4, 8, "anisotropic", 0.3, np.random.default_rng(13), Sigma=[1, 2, 3, 4], n_mc=2000)
    assert aniso["precond_gd_star"]["loss"] <= aniso["gd_star"]["loss"]


# ------------------------------------------------------------------------------------------------
# Metrics and fits
# ------------------------------------------------------------------------------------------------


def test_sensitivity_and_metrics():
    d, N, eta = 4, 6, 0.7
    b = T.sample_regression(50, d, N, "gaussian", 0.1, np.random.default_rng(14))
    args = (b.x_ctx, b.y_ctx, b.x_q)
    gd, lsa = T.one_step_gd(eta), T.LinearSelfAttention(T.gd_lsa_weights(d, eta, N))
    h = np.einsum("bnd,bn->bd", b.x_ctx, b.y_ctx) / N
    # one-step GD is linear in x_q with slope w_1 = eta h
    np.testing.assert_allclose(T.sensitivity(gd, *args).numpy(), eta * h, rtol=1e-13)
    m = T.compare_predictors(gd, lsa, *args)
    assert m["preds_diff"] <= 1e-13 and m["model_diff"] <= 1e-13 and m["cos_sensitivity"] == pytest.approx(1.0)
    # averaging differs from GD only by the scale of the slope: cosine 1, model diff |eta - 1| mean |h|
    m = T.compare_predictors(gd, T.Averaging(), *args)
    assert m["cos_sensitivity"] == pytest.approx(1.0, abs=1e-14)
    assert m["model_diff"] == pytest.approx(0.3 * np.linalg.norm(h, axis=1).mean(), rel=1e-12)
    assert m["preds_diff"] == pytest.approx(0.3 * np.abs((h * b.x_q).sum(-1)).mean(), rel=1e-12)
    # k-NN is piecewise constant in x_q: zero slope, cosine 0 by convention
    assert np.all(T.sensitivity(T.KNN(2), *args).numpy() == 0.0)
    assert T.sensitivity_cosine(gd, T.KNN(2), *args) == 0.0
    # least squares with noiseless, N >= d data has slope w exactly
    c = T.sample_regression(20, d, N, "gaussian", 0.0, np.random.default_rng(15))
    np.testing.assert_allclose(T.sensitivity(T.LeastSquares(), c.x_ctx, c.y_ctx, c.x_q).numpy(), c.w, atol=1e-10)


def test_fit_eta_and_preconditioner():
    d, N = 3, 5
    b = T.sample_regression(200, d, N, "uniform", 0.0, np.random.default_rng(16))
    args = (b.x_ctx, b.y_ctx, b.x_q)
    assert T.fit_eta(T.one_step_gd(4.2)(*args), *args) == pytest.approx(4.2, rel=1e-13)
    G = np.array([[2.0, 0.5, 0.0], [0.1, 1.0, -0.3], [0.0, 0.2, 3.0]])
    np.testing.assert_allclose(T.fit_preconditioner(T.one_step_gd(1.0, G)(*args), *args), G, atol=1e-10)
    # the least-squares eta of GD-with-Gamma predictions: sum g p / sum g^2, by hand
    p = T.one_step_gd(1.0, G)(*args).numpy()
    g = (np.einsum("bnd,bn->bd", b.x_ctx, b.y_ctx) / N * b.x_q).sum(-1)
    assert T.fit_eta(p, *args) == pytest.approx((g @ p) / (g @ g), rel=1e-12)
    with pytest.raises(ValueError, match="d\\^2"):
        T.fit_preconditioner(p[:4], b.x_ctx[:4], b.y_ctx[:4], b.x_q[:4])


def test_eta_from_lsa_weights():
    d, N, eta = 4, 7, 0.9
    W = T.gd_lsa_weights(d, eta, N)
    r = T.eta_from_lsa_weights(W, N)
    assert r["eta"] == pytest.approx(eta, rel=1e-14) and r["non_scalar"] == 0.0
    assert r["off_structure"] == 0.0 and r["off_structure_full"] == 0.0
    # invariant under the symmetries of the layer (rescalings and an orthogonal mixing of key space)
    rng = np.random.default_rng(17)
    R = np.linalg.qr(rng.standard_normal((d + 1, d + 1)))[0]
    W2 = {"W_K": 3.0 * R @ W["W_K"], "W_Q": R @ W["W_Q"] / 3.0, "W_V": W["W_V"] / 5.0, "P": 5.0 * W["P"]}
    r2 = T.eta_from_lsa_weights(W2, N)
    assert r2["eta"] == pytest.approx(eta, rel=1e-13) and r2["off_structure"] <= 1e-15
    # a preconditioned layer: gamma read off equals eta Gamma, and predicts like GD with it
    G = np.eye(d) + 0.3 * rng.standard_normal((d, d))
    Wp = T.gd_lsa_weights(d, eta, N, G)
    rp = T.eta_from_lsa_weights(Wp, N)
    np.testing.assert_allclose(rp["gamma"], eta * G, rtol=1e-14)
    assert rp["non_scalar"] > 0.05
    b = T.sample_regression(30, d, N, "gaussian", 0.0, rng)
    np.testing.assert_allclose(
        T.LinearSelfAttention(Wp)(b.x_ctx, b.y_ctx, b.x_q).numpy(),
        T.one_step_gd(1.0, rp["gamma"])(b.x_ctx, b.y_ctx, b.x_q).numpy(),
        rtol=1e-12,
    )
    # off-structure: a y-row x-part r_x = delta e_0 gives exactly |r_x| |B| / (|r| |B|) = delta / |r|
    Wo = {k: v.copy() for k, v in W.items()}
    Wo["W_V"][d, 0] = 0.1  # (P W_V)[d, 0] = eta/N * 0.1
    ro = T.eta_from_lsa_weights(Wo, N)
    assert ro["off_structure"] == pytest.approx(0.1 / math.hypot(0.1, 1.0), rel=1e-13)
    assert ro["eta"] == pytest.approx(eta, rel=1e-14)
    assert [x["eta"] for x in T.eta_from_lsa_weights(T.gd_lsa_stack(d, [0.5, 0.25], N, 2), N)] == pytest.approx(
        [0.5, 0.25]
    )


# ------------------------------------------------------------------------------------------------
# GD++ (von Oswald et al. 2023 Sec. 3) and the fitted K-step schedules
# ------------------------------------------------------------------------------------------------


def test_gdpp_with_zero_gamma_is_plain_gd():
    b = T.sample_regression(64, 4, 6, "gaussian", 0.3, np.random.default_rng(11))
    etas = (0.4, 0.9, 0.6)
    pp = T.GDPlusPlus(eta=etas, gamma=(0.0, 0.0, 0.0))
    gd = T.GD(eta=etas, steps=3)
    with torch.no_grad():
        got, want = pp(b.x_ctx, b.y_ctx, b.x_q), gd(b.x_ctx, b.y_ctx, b.x_q)
    # residual form against weight form: 3 steps of sums of N + d terms of size <= eta |x|^2 |y|
    scale = float(np.abs(b.y_ctx).max()) * (1 + max(etas) * float((b.x_ctx**2).sum(-1).max())) ** 3
    assert float((got - want).abs().max()) <= 3 * 8 * (6 + 4) * EPS64 * scale
    np.testing.assert_allclose(
        pp.linear_map(b.x_ctx).numpy(), gd.linear_map(b.x_ctx).numpy(), rtol=0, atol=3 * 8 * (6 + 4) * EPS64 * scale
    )


def test_gdpp_linear_map_recursion_and_lsa_stack_agree():
    """Three independent implementations: the token recursion, the linear map A(X), the LSA weights."""
    d, N = 3, 5
    b = T.sample_regression(32, d, N, "uniform", 0.1, np.random.default_rng(2))
    eta, gamma = (1.2, 0.7, 0.9), (3.0, -2.0, 0.5)
    pp = T.GDPlusPlus(eta=eta, gamma=gamma)
    stack = T.gdpp_lsa_stack(d, eta, gamma, N)
    with torch.no_grad():
        rec = pp(b.x_ctx, b.y_ctx, b.x_q)
        lin = T.LinearInY.__call__(pp, b.x_ctx, b.y_ctx, b.x_q)
        lsa = T.LinearSelfAttention(stack)(b.x_ctx, b.y_ctx, b.x_q)
    tol = 1e3 * EPS64 * float(rec.abs().max())  # three layers of O(N + d)-term sums in different orders
    assert float((rec - lin).abs().max()) <= tol and float((rec - lsa).abs().max()) <= tol
    # gamma changes the prediction from the second layer on, and the last layer's gamma never does
    assert float((rec - T.GD(eta=eta, steps=3)(b.x_ctx, b.y_ctx, b.x_q)).abs().max()) > 1e-3
    last = T.GDPlusPlus(eta=eta, gamma=gamma[:2] + (-7.0,))(b.x_ctx, b.y_ctx, b.x_q)
    assert torch.equal(last, rec)
    with pytest.raises(ValueError, match="gamma"):
        T.GDPlusPlus(eta=(1.0, 1.0), gamma=(0.0,))


def test_fit_gd_schedule_gdpp_at_least_as_good_and_generalises():
    d, N, K = 4, 6, 2
    S = np.eye(d)
    fit = T.sample_regression(500, d, N, "gaussian", 0.0, np.random.default_rng(3))
    gd = T.fit_gd_schedule(fit.x_ctx, S, 0.0, K, eta0=0.5)
    pp = T.fit_gd_schedule(fit.x_ctx, S, 0.0, K, plus_plus=True, eta0=0.5)
    assert gd["gamma"] == (0.0, 0.0) and pp["gamma"][-1] == 0.0
    assert pp["loss"] <= gd["loss"] * (1 + 1e-9)  # GD is GD++ at gamma = 0: a superset optimised from it
    # the fitted per-step GD is no worse than the best single learning rate (a superset too)
    single = T.fit_gd_schedule(fit.x_ctx, S, 0.0, 1, eta0=0.5)  # sanity: one step has one eta
    assert len(single["eta"]) == 1
    # on fresh tasks (Monte Carlo, paired) GD++ keeps its advantage beyond 4 SE
    held = np.random.default_rng(4)
    diff = []
    for _ in range(1):
        bx = T.sample_regression(4000, d, N, "gaussian", 0.0, held).x_ctx
        a_pp = T.conditional_loss_linear(pp["predictor"].linear_map(bx), bx, S, 0.0, 1.0)
        a_gd = T.conditional_loss_linear(T.GD(eta=gd["eta"], steps=K).linear_map(bx), bx, S, 0.0, 1.0)
        diff.append((a_pp - a_gd).numpy())
    m, se = _mean_se(np.concatenate(diff))
    assert m + Z * se < 0


# ------------------------------------------------------------------------------------------------
# Bayes-optimal ridge against k
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("x_dist", ["gaussian", "uniform"])
def test_ridge_bayes_noiseless_is_exact(x_dist):
    """sigma = 0: min-norm least squares, loss = w^2 v max(d - k, 0); conditional on X it is exact too."""
    d = 5
    v = T.second_moment(d, x_dist)[0, 0]
    for k in (1, 3, 5, 8):
        want = T.ridge_bayes_loss_theory(d, k, 0.0, w_std=1.5, v=v)
        assert want["method"] == "exact"
        b = T.sample_regression(200, d, k, x_dist, 0.0, np.random.default_rng(k), w_std=1.5)
        A = T.Ridge(lam=0.0).linear_map(b.x_ctx)
        got = T.conditional_loss_linear(A, b.x_ctx, v * np.eye(d), 0.0, 1.5).numpy()
        # tr(I - P) with P = pinv(X) X: rank k projection up to pinv round-off ~ eps cond(X)^2
        np.testing.assert_allclose(got, want["loss"], rtol=0, atol=1e-8 * 1.5**2 * v * d)


def test_wishart_trace_inverse_against_monte_carlo():
    d, k = 3, 9
    X = np.random.default_rng(5).standard_normal((20000, k, d))
    tr = np.trace(np.linalg.inv(X.transpose(0, 2, 1) @ X), axis1=1, axis2=2)  # finite variance: k - d - 3 > 0
    m, se = _mean_se(tr)
    assert abs(m - T.wishart_trace_inverse(d, k)) <= Z * se
    assert T.wishart_trace_inverse(3, 4) == math.inf


def test_ridge_bayes_noisy_marchenko_pastur_limit():
    """sigma > 0: the MP value approaches the Monte Carlo Bayes risk as d, k grow at fixed d/k and
    sigma^2/k (relative error O(1/d): 4x the size, well under half the error), and the Bayes risk is
    below least squares' exact finite-k risk."""
    rng = np.random.default_rng(6)
    errs = []
    for d, k, n in ((5, 10, 4000), (20, 40, 1000)):
        sigma = math.sqrt(0.05 * k)  # keeps lam/k = sigma^2/k fixed
        th = T.ridge_bayes_loss_theory(d, k, sigma)
        assert th["method"] == "marchenko_pastur"
        mc = T.expected_loss_mc(T.Ridge.bayes_optimal(sigma), d, k, "gaussian", sigma, rng, n_tasks=n)
        errs.append((abs(mc["loss"] - th["loss"]) / th["loss"], mc["se"] / th["loss"]))
        ls = T.least_squares_theory(d, k, "gaussian", sigma)
        assert mc["loss"] + Z * mc["se"] < ls  # the posterior mean beats least squares
    (e1, s1), (e2, s2) = errs
    assert e2 + Z * s2 < 0.5 * (e1 - Z * s1)
    # s -> 0 the MP trace tends to d/(k - d), the exact inverse-Wishart mean being d/(k - d - 1)
    assert T.marchenko_pastur_trace_inverse(4, 10, 0.0) == pytest.approx(4 / 6, rel=1e-15)
    assert T.marchenko_pastur_trace_inverse(4, 10, 1e-9) == pytest.approx(4 / 6, rel=1e-6)
