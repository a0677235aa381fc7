"""Closed forms of representational collapse and over-squashing, against direct float64 computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from analysis.theory import representational_collapse as rc

# float64 closed forms against direct sums of <= a few thousand terms: relative error <= n * eps ~ 1e-12
RTOL = 1e-10


def _rng(seed=0):
    return np.random.default_rng(seed)


def test_repeat_last_uniform_and_softmax_gap_are_exact():
    rng = _rng()
    for n in (1, 5, 300):
        v = rng.normal(size=(n, 4))
        direct = np.vstack([v, v[-1:]]).mean(0) - v.mean(0)
        np.testing.assert_allclose(rc.repeat_last_gap_uniform(v), direct, rtol=RTOL, atol=1e-15)
        s = rng.normal(size=n)
        s2 = np.append(s, s[-1])  # same query, a copy of the last key: same logit

        def soft(logits, vals):
            w = np.exp(logits - logits.max())
            return w @ vals / w.sum()

        direct = soft(s2, np.vstack([v, v[-1:]])) - soft(s, v)
        np.testing.assert_allclose(rc.repeat_last_gap_softmax(s, v), direct, rtol=1e-9, atol=1e-15)


def test_repeat_last_gap_is_order_one_over_n_for_bounded_logits():
    """|gap| * (n+1) stays within [e^-2B, e^2B] |v_n - y|: the Theta(1/n) claim with its constant."""
    rng = _rng(1)
    B = 1.0
    for n in (10, 100, 1000):
        s = rng.uniform(-B, B, size=n)
        v = rng.normal(size=(n, 3))
        gap = np.linalg.norm(rc.repeat_last_gap_softmax(s, v)) * (n + 1)
        w = np.exp(s - s.max())
        y = w @ v / w.sum()
        base = np.linalg.norm(v[-1] - y)
        assert math.exp(-2 * B) * base * (n + 1) / (n + math.exp(2 * B)) <= gap <= math.exp(2 * B) * base


def test_counting_and_early_token_uniform_gaps():
    rng = _rng(2)
    u, z = rng.normal(size=3), rng.normal(size=3)
    for k in (1, 7, 500):
        a = np.vstack([np.tile(u, (k, 1)), z])
        b = np.vstack([np.tile(u, (k + 1, 1)), z])
        np.testing.assert_allclose(rc.counting_gap_uniform(k, u, z), b.mean(0) - a.mean(0), rtol=1e-8, atol=1e-16)
    v = rng.normal(size=(50, 3))
    v2 = v.copy()
    v2[3] += np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(rc.early_gap_uniform(50, v[3] - v2[3]), v.mean(0) - v2.mean(0), rtol=RTOL)


@pytest.mark.parametrize("L", [1, 2, 3])
def test_counting_two_state_equals_the_linear_stack_and_decays_as_k_minus_2(L):
    rng = _rng(3)
    d = 4
    mats = [rng.normal(size=(d, d)) / math.sqrt(d) for _ in range(L)]
    u, z = rng.normal(size=d), rng.normal(size=d)
    for k in (1, 4, 33):
        seq = np.vstack([np.tile(u, (k, 1)), z])
        np.testing.assert_allclose(rc.counting_two_state(k, u, z, mats), rc.linear_stack(seq, mats)[-1], rtol=1e-9)
    c = rc.counting_leading_constant(u, z, mats)
    errs = []
    for k in (1000, 2000, 4000):
        gap = rc.counting_two_state(k + 1, u, z, mats) - rc.counting_two_state(k, u, z, mats)
        errs.append(abs(np.linalg.norm(gap) * (k + 1) * (k + 2) / c - 1))
    if L == 1:
        # linear in p: (k+1)(k+2)|gap| = |G'(0)| exactly; the gap is a difference of O(1) states, so its
        # rounding error is ~ eps |Z| (k+1)(k+2) ~ 1e-16 * 1.6e7 relative
        assert max(errs) < 1e-7
        return
    # the polynomial in p = 1/(k+1) gives a relative error O(1/k): doubling k halves it (within 10%:
    # the next order is O(1/k^2), i.e. a 1e-3 relative change of the ratio at k = 1000)
    assert errs[0] < 0.05
    for e0, e1 in zip(errs[:-1], errs[1:], strict=True):
        assert 0.45 < e1 / e0 < 0.55


@pytest.mark.parametrize("L", [1, 2, 3, 4])
def test_path_count_closed_form_equals_matrix_power(L):
    n = 40
    np.testing.assert_allclose(rc.path_sensitivity(n, L), rc.path_sensitivity_matrix(n, L), rtol=1e-11)


def test_path_count_profile_flat_for_one_layer_and_decreasing_for_deeper():
    n = 200
    s1 = rc.path_sensitivity(n, 1)
    np.testing.assert_allclose(s1[:-1], 1.0 / n, rtol=1e-14)
    for L in (2, 3):
        s = rc.path_sensitivity(n, L)[:-1]
        assert np.all(np.diff(s) < 0), "earlier tokens have more paths"
        # leading behaviour: (1/n) (L + C(L,2) ln(n/i) + ...) >= (1/n) L
        assert np.all(s >= L / n * (1 - 1e-12))


def test_linear_stack_sensitivity_equals_autograd():
    rng = _rng(4)
    n, d, L = 30, 3, 3
    mats = [rng.normal(size=(d, d)) / math.sqrt(d) for _ in range(L)]
    h0 = torch.tensor(rng.normal(size=(n, d)), requires_grad=True)
    h = h0
    t = torch.arange(1, n + 1, dtype=torch.float64)[:, None]
    for A in mats:
        h = h + (torch.cumsum(h, 0) / t) @ torch.tensor(A).T
    J = torch.stack([torch.autograd.grad(h[-1, j], h0, retain_graph=True)[0] for j in range(d)])  # (d, n, d)
    R = rc.linear_stack_sensitivity(n, mats)  # (n, d, d)
    np.testing.assert_allclose(R, J.permute(1, 0, 2).numpy(), rtol=1e-10, atol=1e-14)
    # with A = I the blocks are the path count times I
    R_id = rc.linear_stack_sensitivity(n, [np.eye(d)] * L)
    np.testing.assert_allclose(R_id[:, 0, 0], rc.path_sensitivity(n, L), rtol=1e-12)


def test_resolution_and_collapse_length():
    n = np.array([1, 2, 4, 8, 16])
    dist = np.array([1.0, 1e-3, 1e-5, 1e-9, 1e-12])
    norm = np.ones(5)
    assert rc.collapse_length(n, dist, norm, "float16") == 4  # eps16 = 2^-10 ~ 9.8e-4
    assert rc.collapse_length(n, dist, norm, "float32") == 8
    assert math.isnan(rc.collapse_length(n, dist, norm, "float64"))
    assert rc.collapse_length(n, np.array([1e-9, 1.0, 1e-9, 1e-9, 1e-9]), norm, "float32") == 4  # must stay below
    with pytest.raises(ValueError, match="dtype"):
        rc.resolution("int8", 1.0)
    assert rc.predicted_slope("counting", "none") == 2.0
    assert rc.predicted_slope("counting", "rope", separators=True) == 1.0
    assert math.isnan(rc.predicted_slope("repeat_last", "learned"))


def test_rope_shifts_every_offset_so_the_repeat_gap_decays_as_n_to_minus_one_half():
    """Item 7: geometric mean over 16 draws of |y' - y| on n = 32..2048, fitted exponent near 1/2.

    ln|gap| of one draw has an O(1) spread (a sum of ~n random terms: chi-like), so the mean of 16 logs
    has SE ~0.25 per point; over ln(64) = 4.2 of range the fitted exponent's SE is ~0.05: 0.15 is 3 SE.
    """
    rng = _rng(5)
    ns = np.array([32, 128, 512, 2048])
    dh = 16
    gaps = []
    for n in ns:
        logs = [
            math.log(rc.rope_repeat_gap(rng.normal(size=dh), rng.normal(size=(n, dh)), rng.normal(size=(n, dh))))
            for _ in range(16)
        ]
        gaps.append(math.exp(np.mean(logs)))
    assert abs(rc.fitted_exponent(ns, gaps) - 0.5) < 0.15
    # one draw against a direct float64 computation of the two softmax outputs (the formula's own pieces)
    q, k, v = rng.normal(size=4), rng.normal(size=(3, 4)), rng.normal(size=(3, 4))

    def rot(x, m):  # RoPE by hand for dh = 4: pairs (0,1) angle m, (2,3) angle m / 100
        out = x.copy()
        for j, f in ((0, 1.0), (2, 0.01)):
            c, s_ = math.cos(m * f), math.sin(m * f)
            out[j], out[j + 1] = x[j] * c - x[j + 1] * s_, x[j] * s_ + x[j + 1] * c
        return out

    def attend(m):
        kk, vv = np.vstack([k, k[-1:]])[:m], np.vstack([v, v[-1:]])[:m]
        logit = np.array([rot(kk[i], i + 1) @ rot(q, m) for i in range(m)]) / 2.0
        w = np.exp(logit - logit.max())
        return w @ vv / w.sum()

    assert rc.rope_repeat_gap(q, k, v) == pytest.approx(float(np.linalg.norm(attend(4) - attend(3))), rel=1e-12)


def test_depth_predictions_follow_the_path_count():
    grid = np.array([16, 32, 64, 128, 256, 512, 1024])
    for fam, one in (("repeat_last", 1.0), ("counting", 2.0)):
        np.testing.assert_array_equal(rc.predicted_depth_slopes(fam, "none", 3, grid), one)
    p = rc.predicted_depth_slopes("early_token", "none", 3, grid)
    assert p[0] == pytest.approx(1.0, abs=1e-12)  # one layer: exactly 1/n
    assert np.all(np.diff(p) < 0)  # each layer relays the offset: (ln n)^(l-1)/n decays more slowly
    # the depth-2 path count is (2 + H_n - H_{p}) / n for p = 0: its fitted exponent, directly
    H = np.array([np.sum(1.0 / np.arange(1, n + 1)) for n in grid])
    assert p[1] == pytest.approx(rc.fitted_exponent(grid, (2 + H) / grid), rel=1e-12)
    assert math.isnan(rc.predicted_depth_slopes("counting", "learned", 2, grid)[0])
    assert rc.floor_exponent(True) == (0.0, 0.5) and rc.floor_exponent(False) == (0.0, 0.0)


def test_extrapolated_collapse_inverts_the_power_law_and_interval_brackets_it():
    """n* solves D(n_a) (n*/n_a)^-alpha = eps|h| exactly; the interval holds n* for every alpha in the CI."""
    n_a, alpha = 1024.0, 1.3
    for ratio in (0.2, 1.01, 40.0):
        n_star = float(rc.extrapolated_collapse(n_a, ratio, alpha))
        np.testing.assert_allclose(ratio * (n_star / n_a) ** -alpha, 1.0, rtol=1e-12)
        ci = (1.1, 1.5)
        lo, hi = rc.collapse_interval(n_a, ratio, ci)
        inside = rc.extrapolated_collapse(n_a, ratio, np.linspace(*ci, 41))
        assert lo <= inside.min() * (1 + 1e-12) and inside.max() <= hi * (1 + 1e-12)
        np.testing.assert_allclose([lo, hi], [inside.min(), inside.max()], rtol=1e-12)
        # a level uncertainty widens the interval on both sides; the grid step only upwards
        lo2, hi2 = rc.collapse_interval(n_a, ratio, ci, log_se=0.1, grid_ratio=1.5)
        assert lo2 < lo and hi2 > 1.5 * hi
        np.testing.assert_allclose(rc.collapse_interval(n_a, ratio, ci, grid_ratio=1.5)[1], 1.5 * hi, rtol=1e-12)
    assert float(rc.extrapolated_collapse(2.0, 10.0, 1e-9)) == pytest.approx(math.exp(709.0))  # capped, finite
    with pytest.raises(ValueError, match="alpha_ci"):
        rc.collapse_interval(n_a, 2.0, (1.5, 1.1))
    with pytest.raises(ValueError, match="positive"):
        rc.extrapolated_collapse(n_a, 2.0, 0.0)
