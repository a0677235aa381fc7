"""Looped linear attention as multi-step GD (analysis/theory/looped.py): closed forms against brute force.

Every comparison is between two independent float64 computations (eigenvalue closed form against the
GD recursion of analysis.theory.icl_gd, the structured recursion against GD, GD++ and the LSA token
forward pass); tolerances are float64 round-off with a margin for the powers of (1 - eta lambda).
Monte Carlo checks use 4 standard errors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from analysis.theory import icl_gd as th
from analysis.theory import looped as lp

RTOL = 1e-9  # relative round-off allowance: T <= 12 products of d x d matrices, condition numbers < 1e3


def _x(B=64, N=12, d=4, seed=0):
    return np.random.default_rng(seed).standard_normal((B, N, d))


@pytest.mark.parametrize("noise", [0.0, 0.7])
@pytest.mark.parametrize("N", [3, 12])  # N < d: singular S (untouched components), N > d: full rank
def test_gd_weight_error_matches_gd_recursion(noise, N):
    x = _x(N=N)
    eta = 0.6
    loops = [1, 2, 5, 9]
    closed = lp.gd_weight_error(x, eta, loops, noise=noise, w_std=1.3)
    for j, T in enumerate(loops):
        A = th.GD(eta=eta, steps=T).linear_map(x).numpy()
        brute = lp.linear_map_error(A, x, noise=noise, w_std=1.3)
        np.testing.assert_allclose(closed[:, j], brute, rtol=RTOL, atol=1e-12)


def test_linear_map_error_matches_monte_carlo():
    """E|A y - w*|^2 over drawn w* and label noise, per fixed context, against the exact formula."""
    rng = np.random.default_rng(1)
    x = _x(B=3, N=8, d=3, seed=2)
    A = th.GD(eta=0.5, steps=3).linear_map(x).numpy()
    exact = lp.linear_map_error(A, x, noise=0.5, w_std=1.0)
    n = 40000
    for b in range(3):
        w = rng.standard_normal((n, 3))
        y = w @ x[b].T + 0.5 * rng.standard_normal((n, 8))
        sq = ((y @ A[b].T - w) ** 2).sum(-1)
        assert abs(sq.mean() - exact[b]) <= 4 * sq.std(ddof=1) / math.sqrt(n)


def test_looped_maps_reduce_to_gd_and_gdpp():
    x = _x(N=10, d=3)
    N, d, K = 10, 3, 6
    eta, gamma = 0.7, 0.3
    gd = lp.looped_lsa_maps(x, np.zeros((d, d)), -eta / N, np.eye(d), K)
    pp = lp.looped_lsa_maps(x, -gamma / N * np.eye(d), -eta / N, np.eye(d), K)
    for k in range(1, K + 1):
        ref_gd = th.GD(eta=eta, steps=k).linear_map(x).numpy()
        ref_pp = th.GDPlusPlus(eta=(eta,) * k, gamma=(gamma,) * k).linear_map(x).numpy()
        np.testing.assert_allclose(gd[k - 1], ref_gd, rtol=RTOL, atol=1e-12)
        np.testing.assert_allclose(pp[k - 1], ref_pp, rtol=RTOL, atol=1e-12)


def test_looped_maps_match_lsa_token_forward():
    """General structured weights (random U_xx, M_xx): the map against the LSA forward pass of
    analysis.theory.icl_gd applied loops times (the same layer), read at basis queries."""
    rng = np.random.default_rng(3)
    B, N, d, K = 16, 9, 3, 4
    x = _x(B=B, N=N, d=d, seed=4)
    y = rng.standard_normal((B, N))
    U_xx, M_xx = 0.05 * rng.standard_normal((d, d)), np.eye(d) + 0.2 * rng.standard_normal((d, d))
    u_yy = -0.08
    D = d + 1
    W_V, W_K = np.eye(D), np.eye(D)
    P = np.zeros((D, D))
    P[:d, :d], P[d, d] = U_xx, u_yy
    W_Q = np.zeros((D, D))
    W_Q[:d, :d] = M_xx
    layer = {"W_K": W_K, "W_Q": W_Q, "W_V": W_V, "P": P}
    maps = lp.looped_lsa_maps(x, U_xx, u_yy, M_xx, K)
    for k in range(1, K + 1):
        for j in range(d):
            xq = np.tile(np.eye(d)[j], (B, 1))
            pred = th.LinearSelfAttention([layer] * k)(x, y, xq).numpy()
            np.testing.assert_allclose(pred, np.einsum("bn,bn->b", maps[k - 1][:, j], y), rtol=1e-9, atol=1e-12)
    parts = lp.structured_parts(layer)
    assert parts["residual"] == 0.0
    np.testing.assert_array_equal(parts["U_xx"], U_xx)
    np.testing.assert_array_equal(parts["M_xx"], M_xx)


def test_structured_parts_of_constructions():
    d, N, eta = 4, 10, 0.8
    parts = lp.structured_parts(th.gd_lsa_weights(d, eta, N))
    assert parts["residual"] == 0.0 and not parts["U_xx"].any()
    np.testing.assert_allclose(lp.step_matrix(parts, N), eta * np.eye(d), rtol=1e-15)
    pp = lp.structured_parts(th.gdpp_lsa_stack(d, [eta], [0.3], N)[0])
    np.testing.assert_allclose(pp["U_xx"], -0.3 / N * np.eye(d), rtol=1e-15)
    bad = dict(th.gd_lsa_weights(d, eta, N))
    bad["P"] = bad["P"].copy()
    bad["P"][0, d] = 0.1  # a y -> x write: outside the structured blocks
    assert lp.structured_parts(bad)["residual"] > 0


def test_error_falls_at_the_per_prompt_rate():
    """Noiseless: err_T <= w_std^2 d rho^(2T), and the ratio err_{T+1}/err_T tends to rho^2."""
    x = _x(B=32, N=20, d=4, seed=5)
    eta = 0.5
    rho = lp.per_prompt_rate(x, eta)
    err = lp.gd_weight_error(x, eta, list(range(0, 41)))
    assert np.all(err <= 4 * rho[:, None] ** (2 * np.arange(41)) * (1 + 1e-12))
    np.testing.assert_allclose(err[:, 40] / err[:, 39], rho**2, rtol=0.05)
    np.testing.assert_allclose(err[:, 0], 4.0, rtol=1e-15)  # T = 0: w_0 = 0, error |w*|^2 = d


def test_singular_context_leaves_components():
    x = _x(B=8, N=2, d=4, seed=6)
    eta = 1.0 / float(lp.context_spectrum(x).max())  # below 2 / lambda_max for every prompt
    err = lp.gd_weight_error(x, eta, [400])
    np.testing.assert_allclose(err[:, 0], 2.0, rtol=1e-9)  # the d - N = 2 null directions
    assert np.all(lp.per_prompt_rate(x, eta) == 1.0)


def test_mp_rate_best_step_and_large_d():
    r = lp.mp_rate(0.25)
    assert r["rho"] == pytest.approx(2 * 0.5 / 1.25, rel=1e-14)
    for e in (0.97 * r["eta"], 1.03 * r["eta"]):
        assert lp.mp_rate(0.25, e)["rho"] > r["rho"]
    # a large isotropic Gaussian context: the extreme eigenvalues of S near the MP edges
    x = torch.randn(1, 3200, 800, generator=torch.Generator().manual_seed(0), dtype=torch.float64).numpy()
    lam = lp.context_spectrum(x)[0]
    assert lam[0] == pytest.approx(r["lambda_min"], rel=0.1)
    assert lam[-1] == pytest.approx(r["lambda_max"], rel=0.1)
    with pytest.raises(ValueError, match="ratio"):
        lp.mp_rate(1.5)


def test_best_constant_step_is_a_minimum():
    x = _x(B=200, N=20, d=5, seed=7)
    eta, val = lp.best_constant_step(x, 4)
    grid = np.linspace(0.05, 1.5, 300)
    vals = [lp.gd_weight_error(x, e, [4]).mean() for e in grid]
    assert val <= min(vals) * (1 + 1e-9)
    assert abs(eta - grid[int(np.argmin(vals))]) <= 2 * (grid[1] - grid[0])


def test_validation():
    with pytest.raises(ValueError, match="x_ctx"):
        lp.gd_weight_error(np.zeros((3, 4)), 0.1, [1])
    with pytest.raises(ValueError, match="A must have shape"):
        lp.linear_map_error(np.zeros((2, 3, 3)), _x(B=2, N=4, d=3))
    with pytest.raises(ValueError, match="U_xx"):
        lp.looped_lsa_maps(_x(B=2, N=4, d=3), np.zeros((2, 2)), 0.1, np.eye(3), 2)
