"""Softmax attention at init as a random-energy model (analysis.theory.attention_phase): closed forms against
Monte Carlo, limits and the logit mapping."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.theory import attention_phase as ap
from analysis.theory.attention_entropy import gaussian_entropy_mc


@pytest.mark.parametrize("n,s", [(2, 2.0), (8, 0.5), (64, 1.0), (256, 3.0), (1024, 5.0)])
def test_participation_quadrature_matches_monte_carlo(n, s):
    exact = ap.gaussian_participation_exact(n, s)
    mean, se = ap.gaussian_participation_mc(n, s, 20_000, np.random.default_rng(n))
    assert abs(exact - mean) < 4 * se, (exact, mean, se)


def test_participation_edge_cases():
    assert ap.gaussian_participation_exact(1, 3.0) == 1.0
    assert ap.gaussian_participation_exact(50, 0.0) == pytest.approx(1 / 50)
    # two keys: sum a^2 = (1 + tanh^2(D/2))/2 with D = x1 - x2 ~ N(0, 2 s^2), a 1-D Gaussian integral
    z = np.linspace(-12, 12, 20001)
    w = np.exp(-(z**2) / 2) / math.sqrt(2 * math.pi) * (z[1] - z[0])
    s = 1.3
    two = float(np.sum(w * (1 + np.tanh(math.sqrt(2) * s * z / 2) ** 2) / 2))
    assert ap.gaussian_participation_exact(2, s) == pytest.approx(two, rel=1e-9)
    # a very cold softmax: all the weight on one key
    assert ap.gaussian_participation_exact(16, 60.0) == pytest.approx(1.0, abs=0.05)


def test_critical_beta_and_the_limits():
    assert ap.critical_beta(0.0) == pytest.approx(math.sqrt(2)) and ap.critical_beta(0.5) == pytest.approx(2.0)
    bc = ap.critical_beta(0.3)
    assert ap.entropy_ratio_limit(bc, 0.3) == pytest.approx(0.0, abs=1e-12)
    assert ap.entropy_ratio_limit(0.5 * bc, 0.3) == pytest.approx(0.75)
    assert ap.entropy_ratio_limit(2 * bc, 0.3) == 0.0
    assert ap.participation_limit(2 * bc, 0.3) == pytest.approx(0.5)
    assert ap.participation_limit(0.9 * bc, 0.3) == 0.0 and ap.participation_limit(0.0, 0.3) == 0.0
    np.testing.assert_allclose(ap.logit_std([0.0, 2.0], 0.75, 100), [0.0, 2 * math.sqrt(0.25 * math.log(100))])


def test_finite_T_approaches_the_limits():
    """The yardstick at finite T tends to the T -> oo laws, slowly (the limits are far at T ~ 1e3)."""
    p = 0.2
    bc = ap.critical_beta(p)
    for beta in (0.5 * bc, 0.8 * bc):
        gaps = [
            abs(ap.entropy_ratio_finite(beta, p, T) - ap.entropy_ratio_limit(beta, p)) for T in (10**2, 10**4, 10**6)
        ]
        assert gaps[0] > gaps[1] > gaps[2], gaps
    gaps = [
        abs(ap.participation_finite(2 * bc, p, T) - ap.participation_limit(2 * bc, p)) for T in (10**2, 10**4, 10**6)
    ]
    assert gaps[0] > gaps[1] > gaps[2] and gaps[0] > 0.03, gaps
    below = [ap.participation_finite(0.5 * bc, p, T) for T in (10**2, 10**4, 10**6)]
    assert below[0] > below[1] > below[2] and below[2] < 1e-3  # condensation-free: Sigma a^2 -> 0


def test_finite_entropy_is_the_gaussian_row_expectation():
    beta, p, T = 1.1, 0.4, 128
    s = float(ap.logit_std(beta, p, T))
    mean, se = gaussian_entropy_mc(T, s, 4000, np.random.default_rng(1))
    assert abs(ap.entropy_ratio_finite(beta, p, T) * math.log(T) - mean) < 4 * se


def test_correlated_tokens_have_exact_cosines():
    x = ap.correlated_tokens(20, 32, 0.35, np.random.default_rng(2))
    gram = x @ x.T / 32
    np.testing.assert_allclose(gram, 0.35 + 0.65 * np.eye(20), atol=1e-12)


def test_many_tokens_in_a_narrow_space_have_the_cosine_on_average():
    """T >> d: the Gaussian construction's cosines scatter by O(1/sqrt d) around p; their mean is p."""
    d, T, p = 64, 2000, 0.3
    x = ap.correlated_tokens(T, d, p, np.random.default_rng(5))
    assert x.shape == (T, d)
    np.testing.assert_allclose((x * x).sum(1), d, rtol=1e-12)
    cos = (x @ x.T / d)[np.triu_indices(T, 1)]
    assert abs(cos.mean() - p) < 0.02 and 0.5 / math.sqrt(d) < cos.std() < 2 / math.sqrt(d)


def test_a_row_is_softmax_over_iid_logits_of_the_predicted_spread():
    """Section 1 with real weights: the within-row sample variance of the logits, over independent draws of
    W_q and W_k (fan_in init), is beta^2 (1 - p) ln T |q|^2 / d_h on average (exactly, over W_k)."""
    rng = np.random.default_rng(3)
    T, d, dh, p, beta = 48, 49, 16, 0.6, 1.5
    ratios = []
    for _ in range(150):
        x = ap.correlated_tokens(T, d, p, rng)
        Wq, Wk = rng.standard_normal((2, dh, d)) / math.sqrt(d)
        q, k = x @ Wq.T, x @ Wk.T
        logits = beta * math.sqrt(math.log(T)) * q @ k.T / math.sqrt(dh)
        predicted = beta**2 * (1 - p) * math.log(T) * (q * q).sum(1) / dh
        ratios.append(np.mean(logits.var(axis=1, ddof=1) / predicted))
    ratios = np.array(ratios)
    se = ratios.std(ddof=1) / math.sqrt(len(ratios))
    assert abs(ratios.mean() - 1) < 4 * se and se < 0.02, (ratios.mean(), se)
    # the p-blind alternative (the whole logit variance, beta^2 ln T |q|^2 / d_h) is far outside
    assert abs(ratios.mean() * (1 - p) - 1) > 20 * se


def test_bad_input_names_the_parameter():
    for bad in (-0.1, 1.0, 2.0):
        with pytest.raises(ValueError, match=r"^p \(the tokens' pairwise cosine\) must be in \[0, 1\)"):
            ap.critical_beta(bad)
    with pytest.raises(ValueError, match=r"^beta \(inverse temperature\)"):
        ap.entropy_ratio_limit(-1.0, 0.0)
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match=r"^T \(tokens per row\) must be an integer >= 1"):
            ap.logit_std(1.0, 0.0, bad)
    with pytest.raises(ValueError, match=r"^s \(logit std\)"):
        ap.gaussian_participation_exact(4, -1.0)
    with pytest.raises(ValueError, match=r"^d \(token width\) must be >= T \+ 1 = 21 for exact cosines"):
        ap.correlated_tokens(20, 20, 0.3, np.random.default_rng(0), exact=True)
    with pytest.raises(ValueError, match=r"^d \(token width\) must be an integer >= 1"):
        ap.correlated_tokens(20, 0, 0.3, np.random.default_rng(0))


# ---------------------------------------------------------------------- the post-LN block map


def _ln(x):
    x = x - x.mean(1, keepdims=True)
    return x / x.std(1, keepdims=True)


def _reference_block(x, beta, rng, var_v=0.2, var_w=0.2, var_b=4e-4):
    """One post-LN block as the map assumes it (no output projection, ReLU MLP of width d, unit skips)."""
    T, d = x.shape
    Wq, Wk = rng.standard_normal((2, d, d)) / math.sqrt(d)
    scale = beta * math.sqrt(math.log(T)) / math.sqrt(d)
    s = scale * (x @ Wq.T) @ (x @ Wk.T).T
    p = float((x @ x.T / d)[0, 1])
    sigma = scale * math.sqrt(1 - p) * np.linalg.norm((x @ Wq.T) @ Wk, axis=1)  # section 1, each row's spread
    A = np.exp(s - s.max(1, keepdims=True))
    A /= A.sum(1, keepdims=True)
    Wv = rng.standard_normal((d, d)) * math.sqrt(var_v / d)
    x1 = _ln(A @ (x @ Wv.T + rng.standard_normal(d) * math.sqrt(var_b)) + x)
    W1, W2 = rng.standard_normal((2, d, d)) * math.sqrt(var_w / d)
    b1, b2 = rng.standard_normal((2, d)) * math.sqrt(var_b)
    x2 = _ln(np.maximum(x1 @ W1.T + b1, 0) @ W2.T + b2 + x1)
    off = ~np.eye(T, dtype=bool)
    stats = float((x2 @ x2.T / d)[off].mean()), float((A * A).sum(1).mean()), float((A @ A.T)[off].mean())
    return stats, sigma


def test_arccos_kernel_against_monte_carlo():
    rng = np.random.default_rng(7)
    z1, z2 = rng.standard_normal((2, 400_000))
    for c in (-0.5, 0.0, 0.3, 0.9):
        v = np.maximum(z1, 0) * np.maximum(c * z1 + math.sqrt(1 - c * c) * z2, 0)
        assert abs(2 * v.mean() - ap.relu_arccos_kernel(c)) < 4 * 2 * v.std() / math.sqrt(v.size)
    assert ap.relu_arccos_kernel(1.0) == pytest.approx(1.0) and ap.relu_arccos_kernel(0.0) == pytest.approx(1 / math.pi)


def test_attention_overlaps_are_an_identity_given_the_weights():
    rng = np.random.default_rng(8)
    p = 0.45
    x = ap.correlated_tokens(30, 40, p, rng)
    A = rng.dirichlet(np.full(30, 0.3), size=30)  # any rows summing to 1
    y = A @ x
    q_a, p_a = ap.attention_update(p, 1.0, y2=float((A * A).sum(1)[0]), cross=float(A[0] @ A[1]))
    assert (y[0] @ y[0]) / 40 == pytest.approx(q_a, rel=1e-12)
    assert (y[0] @ y[1]) / 40 == pytest.approx(p_a, rel=1e-12)
    assert ap.attention_update(p, 0.5) == (p, p)  # below beta_c: Y_2 -> 0
    bc = ap.critical_beta(p)
    assert ap.attention_update(p, 2 * bc)[0] == pytest.approx(p + (1 - p) * 0.5)


def test_mlp_update_against_monte_carlo():
    rng = np.random.default_rng(9)
    d, q, p, var_w, var_b = 2000, 1.0, 0.3, 0.5, 0.01
    x = math.sqrt(q) * ap.correlated_tokens(2, d, p, rng)  # two tokens of self-overlap q and cosine p exactly
    p_in = float(x[0] @ x[1] / d)
    qs, ps = [], []
    for _ in range(40):
        W1, W2 = rng.standard_normal((2, d, d)) * math.sqrt(var_w / d)
        b1, b2 = rng.standard_normal((2, d)) * math.sqrt(var_b)
        h = np.maximum(x @ W1.T + b1, 0) @ W2.T + b2
        qs.append(float((h * h).sum(1).mean() / d))
        ps.append(float(h[0] @ h[1] / d))
    q_m, p_m = ap.mlp_update(float((x * x).sum(1).mean() / d), p_in, var_w, var_b)
    for got, want in ((qs, q_m), (ps, p_m)):
        # exact in expectation over the weights at any d, given the two tokens
        assert abs(np.mean(got) - want) < 4 * np.std(got, ddof=1) / math.sqrt(len(got)), (np.mean(got), want)


@pytest.mark.parametrize("beta,p", [(0.5, 0.2), (3.0, 0.6)])
def test_block_map_against_a_monte_carlo_block(beta, p):
    """The map with the block's measured Y_2 and shared weight equals the cosine after a real block (T = 256,
    d = 1024), below and above beta_c; the measured Y_2 is the finite-T participation of section 3."""
    rng = np.random.default_rng(int(10 * beta + 100 * p))
    d = 1024
    blocks = [_reference_block(ap.correlated_tokens(256, d, p, rng), beta, rng) for _ in range(6)]
    runs = np.array([b[0] for b in blocks])
    yard = ap.row_yardsticks(256, np.concatenate([b[1] for b in blocks]))[1].reshape(len(blocks), -1).mean(1)
    cos, y2, cross = runs.mean(0)
    se = runs[:, 0].std(ddof=1) / math.sqrt(len(runs))
    # the map is the d -> oo law (a LayerNorm's feature mean is 0 only there): O(1/d) besides the seeds' error
    assert abs(cos - ap.post_ln_block_map(p, beta, y2=y2, cross=cross)) < 4 * se + 1 / d
    gap = runs[:, 1] - yard  # measured Y_2 minus the per-row finite-T yardstick, paired per block
    assert abs(gap.mean()) < 4 * gap.std(ddof=1) / math.sqrt(len(gap)), gap
    # the attention's effect is measurable: ignoring it (Y_2 = 0) is a different prediction above beta_c
    if beta > ap.critical_beta(p):
        assert abs(cos - ap.post_ln_block_map(p, beta, y2=0.0, cross=cross)) > 4 * se


def test_rank_collapse_below_and_slower_collapse_above():
    below = ap.cosine_across_depth(0.2, 0.5, 40)
    above = ap.cosine_across_depth(0.2, 3.0, 40)
    assert np.all(np.diff(below) > 0) and below[-1] > 0.99
    assert np.all(above[1:16] < below[1:16])  # entropy collapse keeps the outputs apart for a while
    assert ap.post_ln_block_map(1.0, 3.0) == 1.0
    with pytest.raises(ValueError, match="^depth must be an integer >= 0"):
        ap.cosine_across_depth(0.2, 0.5, -1)
    with pytest.raises(ValueError, match=r"^y2 \(participation"):
        ap.attention_update(0.2, 1.0, y2=1.5)
    with pytest.raises(ValueError, match="^var_w must be > 0"):
        ap.mlp_update(1.0, 0.2, 0.0, 0.0)


# ---------------------------------------------------------------------- finite T (section 5)


def test_row_yardsticks_match_the_direct_quadratures():
    sig = np.array([0.0, 0.37, 1.2, 2.9, 4.4])
    h, y2 = ap.row_yardsticks(200, sig)
    for s_, h_, y_ in zip(sig, h, y2, strict=True):
        from analysis.theory.attention_entropy import gaussian_entropy

        assert h_ == pytest.approx(float(gaussian_entropy([200], s_)[0]) / math.log(200), rel=1e-6, abs=1e-9)
        assert y_ == pytest.approx(ap.gaussian_participation_exact(200, s_), rel=1e-6, abs=1e-9)
    with pytest.raises(ValueError, match=r"^sigmas \(logit spreads\)"):
        ap.row_yardsticks(200, [-1.0])
    with pytest.raises(ValueError, match="^T must be >= 2"):
        ap.row_yardsticks(1, [1.0])


def test_shared_weight_limits():
    """rho = 1: both rows are one row, C = sum a^2 (the exact participation within the MC's error); s = 0: 1/n."""
    mean, se = ap.gaussian_shared_weight_mc(64, 1.5, 1.0, 20_000, np.random.default_rng(11))
    assert abs(mean - ap.gaussian_participation_exact(64, 1.5)) < 4 * se
    assert ap.gaussian_shared_weight_mc(40, 0.0, 0.3, 10, np.random.default_rng(0))[0] == pytest.approx(1 / 40)
    # independent rows: E C = n E[a_1] E[b_1] = 1 / n exactly, at any spread
    mean, se = ap.gaussian_shared_weight_mc(32, 2.0, 0.0, 20_000, np.random.default_rng(12))
    assert abs(mean - 1 / 32) < 4 * se
    with pytest.raises(ValueError, match=r"^rho \(the rows' logit correlation\)"):
        ap.gaussian_shared_weight_mc(8, 1.0, 1.5, 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="^reps must be an integer >= 2"):
        ap.gaussian_shared_weight_mc(8, 1.0, 0.5, 1, np.random.default_rng(0))


def test_finite_map_is_the_block_map_with_its_own_statistics():
    """Each step of the finite-T map is post_ln_block_map at the returned Y_2 and C; as T grows it approaches
    the T -> oo map below beta_c (Y_2, C -> 0)."""
    f = ap.cosine_across_depth_finite(
        0.3, 1.0, 4, 128, np.random.default_rng(4), reps=200, var_v=1.0, var_w=1.0, var_b=0.0
    )
    assert f["cosine"].shape == (5,) and f["participation"].shape == f["shared"].shape == (4,)
    for layer in range(4):
        step = ap.post_ln_block_map(
            f["cosine"][layer],
            1.0,
            var_v=1.0,
            var_w=1.0,
            var_b=0.0,
            y2=f["participation"][layer],
            cross=f["shared"][layer],
        )
        assert f["cosine"][layer + 1] == pytest.approx(step, rel=1e-12)
    p, beta = 0.2, 0.4 * ap.critical_beta(0.2)
    limit = ap.cosine_across_depth(p, beta, 3)
    gaps = [
        np.abs(ap.cosine_across_depth_finite(p, beta, 3, T, np.random.default_rng(5), 50)["cosine"] - limit).max()
        for T in (16, 256, 4096)
    ]
    assert gaps[0] > gaps[1] > gaps[2], gaps
    assert ap.cosine_across_depth_finite(0.3, 1.0, 0, 16, np.random.default_rng(0))["cosine"].tolist() == [0.3]
