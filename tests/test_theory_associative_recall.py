"""analysis/theory/associative_recall.py against Monte Carlo and exact algebra (never a typed-in number)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from analysis.theory import associative_recall as th
from analysis.zoo.recurrent import favor_projection, momentum_delta_scan, positive_random_features, recurrent_scan

K = 5  # standard errors of a Monte Carlo comparison


@pytest.mark.parametrize(("n", "d"), [(1, 4), (4, 16), (16, 16), (40, 8)])
@pytest.mark.parametrize("values", ["unit", "gaussian"])
def test_additive_readout_error_matches_monte_carlo(n, d, values):
    err = th.mc_additive_readout_error(n, d, 6, 20_000, np.random.default_rng(n * 100 + d), values=values)
    expected = th.additive_readout_error(n, d)
    se = err.std(ddof=1) / np.sqrt(err.size)
    assert abs(err.mean() - expected) <= K * se + 1e-15


def test_sphere_overlap_second_moment_is_one_over_d():
    rng = np.random.default_rng(1)
    for d in (2, 5, 16):
        a, b = th.unit_vectors(rng, (200_000,), d), th.unit_vectors(rng, (200_000,), d)
        c2 = (a * b).sum(-1) ** 2
        assert abs(c2.mean() - 1.0 / d) <= K * c2.std() / np.sqrt(c2.size)


def test_the_mixer_state_is_the_outer_product_memory():
    rng = np.random.default_rng(2)
    keys, vals = th.unit_vectors(rng, (3, 7), 8), th.unit_vectors(rng, (3, 7), 5)
    k, v = torch.from_numpy(keys)[:, None], torch.from_numpy(vals)[:, None]
    _, S = recurrent_scan(k, k, v)
    assert np.allclose(S[:, 0].numpy(), np.einsum("rnv,rnk->rvk", vals, keys), atol=1e-14)


def test_delta_readout_with_orthonormal_keys_is_the_exponential_blend():
    rng = np.random.default_rng(3)
    d, n = 6, 4
    basis = np.linalg.qr(rng.standard_normal((d, d)))[0][:, :n].T  # orthonormal rows
    order = [0, 1, 2, 0, 3, 0]  # key 0 written three times
    betas = rng.uniform(0.1, 1.9, len(order))
    writes = rng.standard_normal((len(order), 3))
    S = np.zeros((3, d))
    for j, beta, w in zip(order, betas, writes, strict=True):
        S = S + beta * np.outer(w - S @ basis[j], basis[j])
    mine = [i for i, j in enumerate(order) if j == 0]
    assert np.allclose(S @ basis[0], th.delta_orthonormal_readout(betas[mine], writes[mine]), atol=1e-13)
    # beta = 1: exact overwrite; additive: the sum
    assert np.allclose(th.delta_orthonormal_readout(np.ones(3), writes[mine]), writes[mine][-1], atol=1e-15)
    add = sum(np.outer(w, basis[j]) for j, w in zip(order, writes, strict=True))
    assert np.allclose(add @ basis[0], th.additive_overwrite_readout(writes[mine]), atol=1e-13)


def _favor_terms(x, y, m_total, seed):
    """m_total i.i.d. terms Z_i = exp(w.(x+y) - (|x|^2+|y|^2)/2) through the mixer's own feature map."""
    proj = favor_projection(x.size, m_total, seed)
    px = positive_random_features(torch.from_numpy(x), proj).numpy()
    py = positive_random_features(torch.from_numpy(y), proj).numpy()
    return px * py * m_total


def test_favor_estimator_is_unbiased_with_the_performer_variance():
    rng = np.random.default_rng(4)
    x, y = 0.6 * th.unit_vectors(rng, (), 5), 0.7 * th.unit_vectors(rng, (), 5)
    m, reps = 8, 40_000
    est = _favor_terms(x, y, m * reps, seed=9).reshape(reps, m).mean(1)
    assert abs(est.mean() - th.softmax_kernel(x, y)) <= K * est.std() / np.sqrt(reps)
    dev2 = (est - est.mean()) ** 2
    assert abs(dev2.mean() - th.favor_variance(x, y, m)) <= K * dev2.std() / np.sqrt(reps)
    assert abs(dev2.mean() - th.trig_variance(x, y, m)) > K * dev2.std() / np.sqrt(reps)  # the alternative differs


def test_trig_variance_matches_monte_carlo_of_the_trig_estimator():
    rng = np.random.default_rng(5)
    x, y = 0.6 * th.unit_vectors(rng, (), 4), 0.5 * th.unit_vectors(rng, (), 4)
    m, reps = 4, 50_000
    w = rng.standard_normal((reps, m, 4))
    est = np.exp((x @ x + y @ y) / 2) * np.cos(w @ (x - y)).mean(1)
    assert abs(est.mean() - th.softmax_kernel(x, y)) <= K * est.std() / np.sqrt(reps)
    dev2 = (est - est.mean()) ** 2
    assert abs(dev2.mean() - th.trig_variance(x, y, m)) <= K * dev2.std() / np.sqrt(reps)


def test_favor_row_mse_constant_matches_monte_carlo_at_large_m():
    rng = np.random.default_rng(6)
    d, n, m, reps = 4, 6, 1024, 1500
    q, keys = 0.5 * th.unit_vectors(rng, (), d), 0.5 * th.unit_vectors(rng, (n,), d)
    p = np.exp(keys @ q) / np.exp(keys @ q).sum()
    w = rng.standard_normal((reps, m, d))
    phi_q = np.exp(w @ q - q @ q / 2)  # (reps, m)
    phi_k = np.exp(np.einsum("rmd,nd->rmn", w, keys) - (keys * keys).sum(-1) / 2)  # (reps, m, n)
    a_hat = (phi_q[..., None] * phi_k).mean(1)  # (reps, n)
    mse = ((a_hat / a_hat.sum(-1, keepdims=True) - p) ** 2).sum(-1) * m
    c = th.favor_row_mse_constant(q, keys)
    assert abs(mse.mean() - c) <= K * mse.std() / np.sqrt(reps)  # m MSE = c + O(1/m): below 5 SE at m = 1024
    assert np.allclose(th.favor_row_rms(q, keys, np.array([4, 16])), np.sqrt(c / np.array([4, 16])))


@pytest.mark.parametrize("scale", [0.5, 1.0])
def test_softmax_over_gaussian_tokens_tends_to_the_linear_limit_at_the_predicted_rate(scale):
    """Item 5: self-normalised importance sampling around M a; n E|o - M a|^2 -> e^{|a|^2}(|M|_F^2 + |M a|^2)."""
    rng = np.random.default_rng(7)
    d = 4
    M = rng.standard_normal((3, d)) / np.sqrt(d)
    a = scale * th.unit_vectors(rng, (), d)
    C = th.linearisation_mse_constant(M, a)
    for n in (256, 1024):
        mse, se = th.mc_linearisation_mse(M, a, n, 4000, rng)
        # the O(n^-2) remainder is ~ e^{2|a|^2} / n relative: below 4 SE here
        assert abs(n * mse - C) < 4 * n * se + C * np.exp(2 * scale**2) / n, (n, n * mse, C)
    # the competing constant (effective sample size n) is smaller by more than the tilt factor e^{|a|^2}
    assert C / th.linearisation_mse_iid(M) > np.exp(scale**2)


def test_linearisation_limit_is_the_tilted_mean():
    """E[e^{a.x} x] / E[e^{a.x}] = a for x ~ N(0, I): the weighted mean over many tokens approaches M a."""
    rng = np.random.default_rng(3)
    M, a = np.eye(3), np.array([0.4, -0.3, 0.2])
    x = rng.standard_normal((400_000, 3))
    w = np.exp(x @ a)
    est = (w[:, None] * x).sum(0) / w.sum()
    assert np.allclose(est, th.linearisation_limit(M, a), atol=6e-3)
    assert np.allclose(th.linearisation_limit(2 * M, np.stack([a, -a])), [2 * a, -2 * a])


@pytest.mark.parametrize(("b", "mu"), [(0.5 / 16, 0.9), (0.5 / 16, 0.5), (0.2, 0.3)])
def test_momentum_overlap_is_the_mean_of_the_scan(b, mu):
    """Item 6 is exact in expectation: the scan's mean overlap over many key sequences matches the recurrence
    within its Monte Carlo error at every step."""
    d, T, B = 8, 40, 4000
    g = torch.Generator().manual_seed(11)
    W = torch.randn(d, d, generator=g, dtype=torch.float64)
    k = torch.randn(B, T, d, generator=g, dtype=torch.float64)
    k = k / k.norm(dim=-1, keepdim=True)
    E = momentum_delta_scan(k, k @ W.T, beta=b * d, mu=mu) - W
    per = ((E * E[:, :1]).sum((-1, -2)) / (W * W).sum()).numpy()  # (B, T + 1)
    se = per.std(0, ddof=1) / np.sqrt(B)
    r = th.momentum_overlap(b, mu, T)
    assert (np.abs(per.mean(0) - r) <= 5 * se + 1e-12).all()


def test_momentum_recurrence_roots_regions_and_limits():
    b, T = 0.05, 60
    np.testing.assert_allclose(th.momentum_overlap(b, 0.0, T), th.first_order_overlap(b, T), rtol=1e-13)
    for mu in (0.3, 0.9):  # closed form through the roots: r_t = A l1^t + B l2^t with r_0 = 1, r_1 = 1 - b
        l1, l2 = th.momentum_roots(b, mu)
        A = ((1 - b) - l2) / (l1 - l2)
        t = np.arange(T + 1)
        np.testing.assert_allclose(th.momentum_overlap(b, mu, T), (A * l1**t + (1 - A) * l2**t).real, atol=1e-12)
    assert th.momentum_oscillates(b, 0.9) and not th.momentum_oscillates(b, 0.3)
    assert th.momentum_overlap(b, 0.9, T).min() < 0 < th.momentum_overlap(b, 0.3, T).min()
    assert abs(th.momentum_roots(b, 0.9)[0]) == pytest.approx(np.sqrt(0.9), rel=1e-12)  # complex: modulus sqrt(mu)
    # the same total memory as the first-order picture at the larger step b / (1 - mu)
    long = th.momentum_overlap(b, 0.9, 4000).sum()
    assert long == pytest.approx(th.first_order_overlap(b / 0.1, 4000).sum(), rel=1e-9)
    with pytest.raises(ValueError, match="mu"):
        th.momentum_overlap(b, 1.5, T)


@pytest.mark.parametrize("mu", [0.0, 0.5, 0.9])
def test_momentum_second_moment_is_the_mean_square_error_of_the_scan(mu):
    """The second-moment map of item 6 is exact: the scan's mean |E_t|^2 over many key sequences matches it."""
    d, T, B, beta = 8, 40, 4000, 0.4
    g = torch.Generator().manual_seed(12)
    W = torch.randn(d, d, generator=g, dtype=torch.float64)
    k = torch.randn(B, T, d, generator=g, dtype=torch.float64)
    k = k / k.norm(dim=-1, keepdim=True)
    E = momentum_delta_scan(k, k @ W.T, beta=beta, mu=mu) - W
    per = ((E * E).sum((-1, -2)) / (W * W).sum()).numpy()
    se = per.std(0, ddof=1) / np.sqrt(B)
    a = th.momentum_second_moment(beta, d, mu, T)
    assert (np.abs(per.mean(0) - a) <= 5 * se + 1e-12).all()


def test_momentum_second_moment_limits_and_its_own_instability():
    d, beta, T = 16, 0.5, 50
    # mu = 0: the delta rule's contraction 1 - beta (2 - beta)/d per write
    rate0 = 1 - beta * (2 - beta) / d
    np.testing.assert_allclose(th.momentum_second_moment(beta, d, 0.0, T), rate0 ** np.arange(T + 1), rtol=1e-12)
    assert th.momentum_second_moment_rate(beta, d, 0.0) == pytest.approx(rate0, rel=1e-12)
    # mu = 0.9: the mean contracts (|roots| = sqrt(mu)) while the second moment grows
    assert max(abs(x) for x in th.momentum_roots(beta / d, 0.9)) < 1 < th.momentum_second_moment_rate(beta, d, 0.9)
    a = th.momentum_second_moment(beta, d, 0.9, 400)
    assert a[400] / a[399] == pytest.approx(th.momentum_second_moment_rate(beta, d, 0.9), rel=1e-6)
    assert (th.momentum_second_moment(beta, d, 0.5, T) >= th.momentum_overlap(beta / d, 0.5, T) ** 2 - 1e-15).all()


# --- item 7: an additive memory with a global decay ------------------------------------------------------------


def test_decayed_readout_error_matches_monte_carlo_item_by_item():
    rng = np.random.default_rng(12)
    n, dk, gamma, draws = 24, 8, 0.9, 20_000
    keys, vals = th.unit_vectors(rng, (draws, n), dk), th.unit_vectors(rng, (draws, n), dk)
    weights = gamma ** np.arange(n - 1, -1, -1, dtype=np.float64)
    S = np.einsum("n,rnv,rnk->rvk", weights, vals, keys)
    err = ((np.einsum("rvk,rnk->rnv", S, keys) - vals) ** 2).sum(-1)  # (draws, n)
    law = th.decayed_readout_error(n, dk, gamma)
    se = err.std(axis=0) / np.sqrt(draws)
    assert np.all(np.abs(err.mean(axis=0) - law) < 5 * se)


def test_decayed_readout_error_limits():
    """gamma = 1: item 1's (N - 1)/d_k for every item; the newest item pays only interference, bounded by
    gamma^2/(d_k (1 - gamma^2)) at every N; the mean tends to 1 + 1/(d_k (1 - gamma^2)) as N grows."""
    np.testing.assert_allclose(th.decayed_readout_error(9, 4, 1.0), np.full(9, 2.0), rtol=1e-15)
    bound = 1.0 / (16 * (1 - 0.95**2))
    newest = [th.decayed_readout_error(n, 16, 0.95)[-1] for n in (4, 64, 4096)]
    assert all(a < b < 0.95**2 * bound for a, b in zip(newest, newest[1:], strict=False))
    assert newest[-1] == pytest.approx(0.95**2 * bound, rel=1e-12)
    assert th.decayed_readout_error(4096, 16, 0.95).mean() == pytest.approx(1 + bound, rel=2e-2)
    assert th.decayed_readout_error(1, 16, 0.5)[0] == 0.0


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: th.decayed_readout_error(0, 4, 0.9), "n_pairs must be >= 1"),
        (lambda: th.decayed_readout_error(4, 0, 0.9), "d_key must be >= 1"),
        (lambda: th.decayed_readout_error(4, 4, 1.5), "gamma must be"),
    ],
)
def test_decayed_readout_error_rejects_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
