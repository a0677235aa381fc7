"""Theory of signal propagation (analysis/theory/signal_propagation.py): closed forms and metrics.

Exact identities are checked to float64 round-off; Monte Carlo checks use |mc - theory| <= 4 SE (SE
the sample standard error, fixed seeds, so deterministic; a correct formula fails a fresh seed with
probability ~6e-5).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from analysis.theory import signal_propagation as th

Z = 4.0


@pytest.mark.parametrize("scale", [1.0, 0.5, 1 / math.sqrt(7), 0.1, 2.0])
def test_gelu_second_moment_closed_form_matches_quadrature(scale):
    # quadrature with epsrel 1e-13 on a smooth integrand: agreement to 1e-10 relative is ample
    assert th.gelu_second_moment(scale) == pytest.approx(th.gelu_second_moment_quad(scale), rel=1e-10)


def test_gelu_second_moment_at_unit_scale_is_one_third_plus():
    # s = 1: 1/4 + arcsin(1/2)/(2 pi) = 1/3, last term 1/(2 pi sqrt 3); a few ulps of round-off
    assert th.gelu_second_moment(1.0) == pytest.approx(1 / 3 + 1 / (2 * math.pi * math.sqrt(3)), rel=1e-14)


def test_gelu_second_moment_monte_carlo_with_torch_gelu():
    # the closed form is for the exact (erf) GELU that the model uses (F.gelu default)
    z = torch.randn(400_000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    for s in (1.0, 0.5):
        v = F.gelu(s * z).pow(2)
        mc, se = v.mean().item(), v.std().item() / math.sqrt(v.numel())
        assert abs(mc - th.gelu_second_moment(s)) <= Z * se


def test_attention_branch_moment_limits():
    B, H, T, d = 2, 3, 5, 8
    # orthogonal tokens of squared norm d and uniform causal attention: a_t = 1/(t+1)
    u = (torch.eye(d, dtype=torch.float64)[:T] * math.sqrt(d)).expand(B, T, d)
    t1 = torch.arange(1, T + 1, dtype=torch.float64)
    pattern = (torch.ones(T, T, dtype=torch.float64).tril() / t1[:, None]).expand(B, H, T, T)
    a = th.attention_branch_moment(pattern, u)
    torch.testing.assert_close(a, (1 / t1).expand(B, T), rtol=0, atol=1e-15)
    # identical tokens: a_t = |u|^2/d = 1 for any pattern (rows sum to one)
    same = torch.full((B, T, d), 1.0, dtype=torch.float64)
    rnd = torch.softmax(torch.randn(B, H, T, T, generator=torch.Generator().manual_seed(1), dtype=torch.float64), -1)
    torch.testing.assert_close(th.attention_branch_moment(rnd, same), torch.ones(B, T, dtype=torch.float64))


def test_attention_branch_moment_is_the_expectation_over_value_and_output_weights():
    # Monte Carlo over W_v ~ N(0, 1/d), W_o ~ N(0, 1/(H dh)) with the pattern and inputs fixed
    gen = torch.Generator().manual_seed(2)
    T, d, H = 4, 8, 2
    dh = d // H
    u = torch.randn(1, T, d, generator=gen, dtype=torch.float64)
    u = (u - u.mean(-1, keepdim=True)) / u.std(-1, unbiased=False, keepdim=True)  # LayerNorm output
    pattern = torch.softmax(torch.randn(1, H, T, T, generator=gen, dtype=torch.float64), -1)
    n = 20_000
    Wv = torch.randn(n, H * dh, d, generator=gen, dtype=torch.float64) / math.sqrt(d)
    Wo = torch.randn(n, d, H * dh, generator=gen, dtype=torch.float64) / math.sqrt(H * dh)
    v = torch.einsum("nkd,td->ntk", Wv, u[0]).view(n, T, H, dh)  # (n, T, H, dh)
    z = torch.einsum("htj,njhe->nthe", pattern[0], v).reshape(n, T, H * dh)  # (n, T, H dh)
    out = torch.einsum("ndk,ntk->ntd", Wo, z)  # (n, T, d)
    sq = out.pow(2).mean(-1)  # (n, T)
    mc, se = sq.mean(0), sq.std(0) / math.sqrt(n)
    theory = th.attention_branch_moment(pattern, u)[0]
    assert ((mc - theory).abs() <= Z * se).all()


def test_moment_laws_and_envelope():
    lower, upper = th.pre_ln_envelope(1.0, 10)
    g = th.gelu_second_moment(1.0)
    np.testing.assert_allclose(lower, 1 + g * np.arange(11), rtol=1e-15)
    np.testing.assert_allclose(upper, 1 + (1 + g) * np.arange(11), rtol=1e-15)
    lo_s, up_s = th.pre_ln_envelope(1.0, 4, ln_scaling=True)
    assert np.all(np.diff(lo_s) < np.diff(lower)[:4] + 1e-15) and np.all(up_s >= lo_s)
    np.testing.assert_allclose(np.diff(up_s - lo_s), [1, 1 / 2, 1 / 3, 1 / 4], rtol=1e-14)
    np.testing.assert_array_equal(th.peri_ln_moment(1.0, 3), [1, 3, 5, 7])
    np.testing.assert_array_equal(th.peri_ln_moment(0.5, 2, mlp=False), [0.5, 1.5, 2.5])
    np.testing.assert_allclose(th.pre_ln_moment(2.0, [0.5, 0.25], [1.0, 1.0]), [2.0, 3.5, 4.75])
    with pytest.raises(ValueError, match="layer"):
        th.ln_scaling_factor(0)


def test_layernorm_square_mean_matches_torch():
    x = torch.randn(16, 32, generator=torch.Generator().manual_seed(3), dtype=torch.float64) * 0.01
    y = F.layer_norm(x, (32,), eps=1e-5)
    expect = th.layernorm_square_mean(x.var(-1, unbiased=False).numpy(), 1e-5)
    np.testing.assert_allclose(y.pow(2).mean(-1).numpy(), expect, rtol=1e-12)


def test_rank_residual_and_composite_norm():
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(3, 6, 5, generator=gen, dtype=torch.float64)
    m = torch.tensor([[1.0, -2.0], [3.0, 4.0]], dtype=torch.float64)
    # |M|_1 = max col sum = 6, |M|_inf = max row sum = 7
    assert th.composite_norm(m).item() == pytest.approx(math.sqrt(42), rel=1e-15)
    rank_one = torch.ones(6, 1, dtype=torch.float64) * torch.randn(1, 5, generator=gen, dtype=torch.float64)
    assert th.rank_residual(rank_one).item() <= 1e-15
    torch.testing.assert_close(th.rank_residual(7.5 * x), th.rank_residual(x), rtol=1e-13, atol=0)
    assert (th.rank_residual(x) > 0.1).all()


def test_token_cosine_and_angular_distance():
    a = torch.tensor([1.0, 0.0], dtype=torch.float64)
    b = torch.tensor([0.0, 2.0], dtype=torch.float64)
    assert th.angular_distance(a, a).item() == pytest.approx(0.0, abs=1e-7)  # arccos near 1: sqrt(eps)
    assert th.angular_distance(a, -a).item() == pytest.approx(1.0, rel=1e-15)
    assert th.angular_distance(a, b).item() == pytest.approx(0.5, rel=1e-15)
    same = torch.ones(2, 4, 3, dtype=torch.float64)
    torch.testing.assert_close(th.mean_token_cosine(same), torch.ones(2, dtype=torch.float64))
    ortho = torch.eye(3, dtype=torch.float64)[None]
    torch.testing.assert_close(th.mean_token_cosine(ortho), torch.zeros(1, dtype=torch.float64))


def test_dong_bound_recursion_and_decrement_growth():
    layers = np.arange(5)
    r = th.dong_bound(0.8, 0.9, layers)
    np.testing.assert_allclose(r[1:], 0.9 * r[:-1] ** 3, rtol=1e-12)
    growth, n = th.log_decrement_growth(r)
    assert n >= 1 and growth > 0
    expo = 0.8 * 0.5 ** np.arange(10)  # exponential decay: constant log-decrement
    g, n = th.log_decrement_growth(expo)
    assert n == 8 and abs(g) < 1e-12
    assert math.isnan(th.log_decrement_growth(np.full(5, 1e-16))[0])


def test_loglog_slope_exact_power_law():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    slope, se = th.loglog_slope(x, 3 * x**-0.5)
    assert slope == pytest.approx(-0.5, abs=1e-12) and se < 1e-12
    with pytest.raises(ValueError):
        th.loglog_slope(x[:2], x[:2])


# ------------------------------------------------------------------------------------------------
# no norm (section 8) and DeepNorm (section 9)
# ------------------------------------------------------------------------------------------------


def test_no_norm_mlp_moment_is_gelu_moment_at_sqrt_q_and_tends_to_half():
    for q in (1e-3, 0.5, 1.0, 7.0, 1e4):
        # same closed form, vectorised: a few ulps
        assert th.no_norm_mlp_moment(q) == pytest.approx(th.gelu_second_moment(math.sqrt(q)), rel=1e-13)
    # G(q)/q -> 1/2 with a q^(-3/2) correction (the q^(-1/2) and q^(-1) terms cancel): ten times q, the gap
    # shrinks by 10^(-3/2); 2% covers the next order (relative q^(-1/2) = 1e-2 at q = 1e4); larger q would
    # drown the gap in the arcsine's round-off near 1 (~ sqrt(q) * 1e-16)
    gaps = [abs(th.no_norm_mlp_moment(q) / q - 0.5) for q in (1e4, 1e5)]
    assert gaps[1] / gaps[0] == pytest.approx(10**-1.5, rel=0.02)
    # G(q)/q increases from 1/4 to 1/2 (what the rigorous lower bound needs), on a log grid
    q = np.logspace(-6, 4, 400)
    ratio = th.no_norm_mlp_moment(q) / q
    assert np.all(np.diff(ratio) > 0) and ratio[0] > 0.25 and ratio[-1] < 0.5


def test_no_norm_growth_factor_is_the_asymptotic_ratio_of_the_iterate():
    m = th.no_norm_moment(1.0, 60)  # reaches q ~ 1e10: correction ~ 1/q
    assert m[-1] / m[-2] == pytest.approx(th.no_norm_growth_factor(0.0), rel=1e-6)
    m1 = th.no_norm_moment(1.0, 40, kappa=1.0)
    assert m1[-1] / m1[-2] == pytest.approx(th.no_norm_growth_factor(1.0), rel=1e-6)
    m0 = th.no_norm_moment(2.0, 30, mlp=False, kappa=0.5)
    np.testing.assert_allclose(m0, 2.0 * 1.5 ** np.arange(31), rtol=1e-13)


def test_no_norm_mlp_block_monte_carlo():
    # one skip + MLP block without norm at our fan-in init: E|x + W_out gelu(W_in x)|^2/d = q + G(q)
    # exactly for fixed x (cross term has mean zero over W_out); float64 Monte Carlo over the weights
    gen = torch.Generator().manual_seed(5)
    d, n = 16, 8000
    for q in (0.3, 4.0):
        x = torch.randn(d, generator=gen, dtype=torch.float64)
        x = x / x.norm() * math.sqrt(q * d)  # |x|^2 / d = q
        W_in = torch.randn(n, 4 * d, d, generator=gen, dtype=torch.float64) / math.sqrt(d)
        W_out = torch.randn(n, d, 4 * d, generator=gen, dtype=torch.float64) / math.sqrt(4 * d)
        y = x + torch.einsum("nij,nj->ni", W_out, F.gelu(W_in @ x))  # (n, d)
        sq = y.pow(2).mean(-1)
        mc, se = sq.mean().item(), sq.std().item() / math.sqrt(n)
        assert abs(mc - float(th.no_norm_block_step(q))) <= Z * se


def test_no_norm_lower_bound_holds_for_a_deep_mlp_stack():
    # an L-block MLP-only stack without norm: E m_L >= (5/4)^L m_0 at any width, and at width 64 the
    # mean-field iterate is within 4 SE + 5% of the Monte Carlo (fluctuations of q are O(1/sqrt(d)) per block;
    # 5% is their second-order effect over 4 blocks, ~ L * 2/d)
    gen = torch.Generator().manual_seed(6)
    L, n, d = 4, 400, 64
    x = torch.randn(n, d, generator=gen, dtype=torch.float64)
    m0 = x.pow(2).mean().item()
    for _ in range(L):
        W_in = torch.randn(n, 4 * d, d, generator=gen, dtype=torch.float64) / math.sqrt(d)
        W_out = torch.randn(n, d, 4 * d, generator=gen, dtype=torch.float64) / math.sqrt(4 * d)
        x = x + torch.einsum("nij,nj->ni", W_out, F.gelu(torch.einsum("nij,nj->ni", W_in, x)))
    sq = x.pow(2).mean(-1)
    mc, se = sq.mean().item(), sq.std().item() / math.sqrt(n)
    assert mc >= float(th.no_norm_lower_bound(m0, L)[-1]) - Z * se
    mf = float(th.no_norm_moment(m0, L)[-1])
    assert abs(mc - mf) <= Z * se + 0.05 * mf


def test_deepnorm_angle_scale_uses_the_model_constants():
    from analysis.zoo.model import ModelConfig

    for L in (1, 6, 48):
        c = ModelConfig(norm="post", deepnorm=True, n_layers=L, vocab_size=8, d_model=8, n_heads=2)
        assert float(th.deepnorm_angle_scale(L)) == pytest.approx(c.deepnorm_beta**2 / c.deepnorm_alpha, rel=1e-14)
    slope, _ = th.loglog_slope(np.array([2.0, 8.0, 32.0]), th.deepnorm_angle_scale(np.array([2.0, 8.0, 32.0])))
    assert slope == pytest.approx(th.DEEPNORM_ANGLE_EXPONENT, abs=1e-12)


# ------------------------------------------------------------------------------------------------
# DeepNorm's update bound (section 10) and LayerNorm on a collapsed stream (section 11)
# ------------------------------------------------------------------------------------------------


def test_deepnorm_update_bound_factors():
    L = np.array([1.0, 2.0, 6.0, 48.0, 1000.0])
    # DeepNorm's design condition: 4 N beta^2 / alpha^2 = 1 at every depth (round-off only)
    np.testing.assert_allclose(th.deepnorm_update_bound(L, True, "sgd"), 1.0, rtol=1e-13)
    np.testing.assert_allclose(th.deepnorm_update_bound(L, False, "sgd"), 4 * L, rtol=1e-13)
    np.testing.assert_allclose(th.deepnorm_update_bound(L, True, "adam"), np.sqrt(2 * L), rtol=1e-13)
    np.testing.assert_allclose(th.deepnorm_update_bound(L, False, "adam"), 2 * math.sqrt(2) * L, rtol=1e-13)
    # the tabulated exponents are the log-log slopes of these factors (exact power laws)
    for (norm, opt), expo in th.UPDATE_BOUND_EXPONENT.items():
        slope, _ = th.loglog_slope(L, th.deepnorm_update_bound(L, norm == "deepnorm", opt))
        assert slope == pytest.approx(expo, abs=1e-12)
    with pytest.raises(ValueError, match="optimiser"):
        th.deepnorm_update_bound(L, True, "lion")


def _layernorm(x: torch.Tensor) -> torch.Tensor:
    return (x - x.mean(-1, keepdim=True)) / x.var(-1, unbiased=False, keepdim=True).sqrt()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_layernorm_residual_gain_is_the_first_order_limit(seed):
    g = torch.Generator().manual_seed(seed)
    xbar = torch.randn(32, generator=g, dtype=torch.float64) + 0.5
    E = torch.randn(8, 32, generator=g, dtype=torch.float64)
    gain = th.layernorm_residual_gain(xbar, E)
    assert 0 < gain < math.inf
    errs = []
    for e in (1e-3, 1e-5):
        X = xbar + e * E  # (T, d) nearly collapsed
        errs.append(abs(float(th.rank_residual(_layernorm(X)) / th.rank_residual(X)) - gain))
    # the remainder is O(e): shrinking e 100-fold shrinks it ~100-fold (>= 30 leaves room for the
    # kinks of the max in the composite norm); at e = 1e-5 it is below 1e-3 relative
    assert errs[1] < errs[0] / 30 + 1e-12
    assert errs[1] < 1e-3 * gain


def test_rank_residual_is_invariant_to_a_global_scale_not_per_token():
    g = torch.Generator().manual_seed(3)
    X = torch.randn(6, 16, generator=g, dtype=torch.float64)
    r = float(th.rank_residual(X))
    assert float(th.rank_residual(7.5 * X)) == pytest.approx(r, rel=1e-14)
    scales = torch.linspace(0.5, 3.0, 6, dtype=torch.float64)[:, None]  # (T, 1) per-token rescaling
    assert abs(float(th.rank_residual(scales * X)) - r) > 1e-3


# ------------------------------------------------------------------------------------------------
# sections 12-13: the growth exponent, the training classifier, the update-bound ratio
# ------------------------------------------------------------------------------------------------


def test_variance_growth_exponent_of_the_sum_rule_is_one():
    # both ends of the Pre-LN envelope add a constant per block: m_l - m_0 = c l exactly, slope 1 to round-off
    for m in th.pre_ln_envelope(1.0, 12):
        p, se = th.variance_growth_exponent(m)
        assert p == pytest.approx(th.PRE_LN_INIT_GROWTH_EXPONENT, abs=1e-12) and se < 1e-12


@pytest.mark.parametrize("p", [0.5, 1.7, 3.0])
def test_variance_growth_exponent_recovers_a_power_law(p):
    layers = np.arange(13, dtype=np.float64)
    m = 2.0 + 0.3 * layers**p  # m_l - m_0 = 0.3 l^p exactly
    got, se = th.variance_growth_exponent(m)
    # direct computation: the least-squares slope by the normal equations
    x, y = np.log(layers[1:]), np.log(m[1:] - m[0])
    direct = ((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum()
    assert got == pytest.approx(direct, abs=1e-12) and got == pytest.approx(p, abs=1e-12)


def test_variance_growth_exponent_of_exponential_growth_exceeds_one_and_skips_non_increases():
    m = 1.5 ** np.arange(13, dtype=np.float64)
    assert th.variance_growth_exponent(m)[0] > 1.0
    # layers at or below m_0 are left out: the same slope as the fit over the remaining layers
    m2 = np.concatenate([[1.0, 0.5, 1.0], 1.0 + np.arange(3, 13, dtype=np.float64) ** 2])
    assert th.variance_growth_exponent(m2)[0] == pytest.approx(2.0, abs=1e-12)
    assert math.isnan(th.variance_growth_exponent(np.array([1.0, 2.0, 0.5, 0.9]))[0])  # < 3 usable layers
    with pytest.raises(ValueError, match="m must be"):
        th.variance_growth_exponent(np.ones((2, 3)))


def test_stall_margin_and_final_loss():
    assert th.stall_margin(4.0, 3.0) == pytest.approx(th.STALL_FRACTION * 1.0, abs=1e-15)
    for bad in ((3.0, 4.0), (4.0, -0.1), (math.nan, 1.0)):
        with pytest.raises(ValueError, match="unigram_entropy"):
            th.stall_margin(*bad)
    curve = np.arange(100, dtype=np.float64)
    assert th.final_loss(curve) == pytest.approx(curve[-10:].mean(), abs=0)  # the last tenth
    assert th.final_loss(np.array([5.0])) == 5.0
    with pytest.raises(ValueError, match="losses"):
        th.final_loss(np.array([]))


def test_classify_training_on_synthetic_curves():
    floor, margin = 4.0, 0.1
    steps = np.arange(200, dtype=np.float64)
    trained = floor + 0.6 * np.exp(-steps / 20) - 0.5 * (1 - np.exp(-steps / 50))  # ends ~0.5 below the floor
    stalled = floor + 0.6 * np.exp(-steps / 20)  # converges to the context-free loss
    just_above = np.full(200, floor - margin + 1e-9)
    just_above[0] = floor + 1
    just_below = just_above.copy()
    just_below[1:] = floor - margin - 1e-9
    nan_curve = trained.copy()
    nan_curve[150] = np.nan
    rising = floor + 0.6 * np.exp(-steps / 20) + steps / 100  # ends above its start
    assert th.classify_training(trained, floor, margin) == "trained"
    assert th.classify_training(stalled, floor, margin) == "stalled"
    assert th.classify_training(just_above, floor, margin) == "stalled"
    assert th.classify_training(just_below, floor, margin) == "trained"
    assert th.classify_training(nan_curve, floor, margin) == "diverged"
    assert th.classify_training(np.append(trained, np.inf), floor, margin) == "diverged"
    assert th.classify_training(rising, floor, margin) == "diverged"
    assert set(th.TRAINING_OUTCOMES) == {"trained", "stalled", "diverged"}
    with pytest.raises(ValueError, match="losses"):
        th.classify_training(np.array([1.0]), floor, margin)
    with pytest.raises(ValueError, match="margin"):
        th.classify_training(trained, floor, -1.0)


def test_deepnorm_update_ratio_is_two_sqrt_n_for_adam_and_four_n_for_sgd():
    N = np.array([1.0, 12.0, 48.0])
    direct_adam = (2 * math.sqrt(2) * N) / np.sqrt(2 * N)  # Post-LN's 2 sqrt2 N over DeepNorm's sqrt(2N)
    np.testing.assert_allclose(th.deepnorm_update_ratio(N, "adam"), direct_adam, rtol=1e-14)
    np.testing.assert_allclose(th.deepnorm_update_ratio(N, "adam"), 2 * np.sqrt(N), rtol=1e-14)
    np.testing.assert_allclose(th.deepnorm_update_ratio(N, "sgd"), 4 * N, rtol=1e-14)
    with pytest.raises(ValueError, match="optimiser"):
        th.deepnorm_update_ratio(N, "lion")
