"""The linear relay model, its closed form and asymptotics, the bound's shape and the cancelling bias."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.theory import prompt_forgetting as pf

EPS = np.finfo(np.float64).eps


@pytest.mark.parametrize(("P", "L"), [(1, 1), (1, 3), (2, 2), (3, 4), (4, 3)])
def test_closed_form_equals_recursion_exactly(P, L):
    T = 25
    rec = pf.relay_offsets_exact(P, L, T)
    assert rec == [pf.relay_offset_closed_form_exact(P, L, t) for t in range(1, T + 1)]
    # float64: every term positive, relative error <= ~L T eps per recursion/closed form
    exact = np.array([float(x) for x in rec])
    np.testing.assert_allclose(pf.relay_offsets(P, L, T), exact, rtol=4 * L * T * EPS)
    np.testing.assert_allclose(pf.relay_offsets_closed_form(P, L, T), exact, rtol=4 * L * T * EPS)


def test_prompt_positions_and_sympy_form():
    P, L = 3, 4
    assert np.all(pf.relay_offsets(P, L, P) == 2.0**L)  # M maps constants to themselves
    t, expr = pf.relay_closed_form_sympy(2, 2)
    import sympy as sp

    assert sp.simplify(expr - (2 * sp.harmonic(t) + 3) / t) == 0  # by hand: (1/t) sum_s [2 + H_t - H_(s-1)]
    for tv in (3, 7, 20):
        assert sp.Rational(expr.subs(t, tv)) == pf.relay_offset_closed_form_exact(2, 2, tv)


@pytest.mark.parametrize(("P", "L"), [(1, 1), (2, 2), (4, 3), (8, 4)])
def test_asymptotic_polynomial_and_limit(P, L):
    q = pf.relay_asymptotic_poly(P, L)
    assert abs(q[-1] - pf.relay_limit(L)) <= 4 * EPS  # leading coefficient 1/(L-1)!
    if L > 1:  # second coefficient = first correction (L - psibar)/(L-2)! of the ratio
        assert abs(q[-2] - pf.relay_ratio_first_correction(P, L)) <= 64 * EPS * max(1.0, abs(q[-2]))
    T = 1_000_000
    delta = pf.relay_offsets(P, L, T)
    for t in (10_000, 100_000, 1_000_000):
        rel = abs(delta[t - 1] / pf.relay_asymptotic(P, L, t) - 1)
        # neglected: H_t - ln t - gamma = 1/(2t) + O(t^-2) and H^(m)_t - zeta(m) = O(t^(1-m)); each of the
        # at most L factors errs by <= (L + P)/t relative -> L (L + P)/t, plus float64 rounding (L T eps)
        assert rel <= L * (L + P) / t + 4 * L * T * EPS, (t, rel)
    # the ratio converges to 1/(L-1)! at the rate the expansion predicts: after the 1/ln t term the rest
    # is O(1/ln^2 t), bounded by the remaining coefficients of Q
    t = np.array([1e3, 1e4, 1e5, 1e6])
    ratio = delta[t.astype(int) - 1] * t / (P * np.log(t) ** (L - 1))
    x = np.log(t)
    first = pf.relay_limit(L) + pf.relay_ratio_first_correction(P, L) / x
    rest = sum(abs(q[i]) / x ** (L - 1 - i) for i in range(L - 2)) if L > 2 else 0.0
    assert np.all(np.abs(ratio - first) <= rest + L * (L + P) / t * ratio + 1e-12)
    if L > 1:  # monotone approach from above towards the limit
        assert np.all(np.diff(np.abs(ratio - pf.relay_limit(L))) < 0)


def test_local_exponents():
    P, L = 4, 3
    t = np.arange(1, 200_001, dtype=np.float64)
    delta = pf.relay_offsets(P, L, t.size)
    tt = t[1000:-1]
    exact = -(np.log(delta[1001:]) - np.log(delta[999:-2])) / (np.log(t[1001:]) - np.log(t[999:-2]))
    asym = pf.relay_local_exponent_asymptotic(P, L, tt)
    # the asymptotic form neglects O(1/t) terms; the centred difference errs by O(1/t^2)
    assert np.max(np.abs(exact - asym)) <= 10.0 * L * (L + P) / tt.min()
    assert np.all(asym < 1) and np.all(np.diff(asym) > 0)  # rises towards 1 from below
    b = pf.bound_local_exponent(L, tt)
    np.testing.assert_allclose(b, 1 - (L - 1) / np.log(tt), rtol=0, atol=4 * EPS)
    # both approach 1 like (L-1)/ln t: their gap is O(1/ln^2 t)
    assert np.all(np.abs(asym - b) * np.log(tt) ** 2 <= 4 * L**2 + abs(pf.relay_ratio_first_correction(P, L)) * 4)
    assert np.all(pf.relay_local_exponent_asymptotic(P, 1, tt) == 1.0)


def test_matrix_relay_reduces_to_scalar_and_matches_its_closed_form():
    rng = np.random.default_rng(0)
    P, T, d = 3, 40, 4
    ones = pf.relay_vector_offsets(np.ones((P, 1)), [np.ones((1, 1))] * 3, T)
    for L in range(1, 4):
        np.testing.assert_allclose(ones[L - 1, :, 0], pf.relay_offsets(P, L, T), rtol=8 * L * T * EPS)
    mats = [rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(3)]
    delta0 = rng.normal(size=(P, d))
    out = pf.relay_vector_offsets(delta0, mats, T)
    E = pf.elementary_products(mats)
    u = np.arange(1, T + 1, dtype=np.float64)
    Hm = np.vstack([np.zeros(3), np.cumsum(1.0 / u[:, None] ** np.arange(1, 4), axis=0)])
    for t in range(P + 1, T + 1):
        pred = np.zeros(d)
        for s in range(1, P + 1):
            p = [Hm[t, m] - Hm[s - 1, m] for m in range(3)]
            for k in range(1, 4):
                pred += pf.complete_homogeneous(k - 1, p) * (E[k] @ delta0[s - 1])
        # sums of O(T) terms of size O(1): allow 64 T eps relative to the largest entry
        assert np.max(np.abs(out[-1, t - 1] - pred / t)) <= 64 * T * EPS * np.abs(pred / t).max()
    # one layer: exactly |A sum_s delta0_s| / t after the prompt (alpha = 1)
    one = pf.relay_vector_offsets(delta0, mats[:1], T)[0]
    norm = np.linalg.norm(one[P:], axis=1) * np.arange(P + 1, T + 1)
    np.testing.assert_allclose(norm, np.linalg.norm(mats[0] @ delta0.sum(0)), rtol=16 * T * EPS)


def test_cancel_bias_keeps_uniform_share_constant():
    P = 5
    t = np.arange(1, 5000)
    for share in (None, 0.3, 0.9):
        b = pf.cancel_bias(P, t, share)
        s = pf.uniform_prompt_share(P, t, b)
        want = pf.default_share(P) if share is None else share
        np.testing.assert_allclose(s[t > P], want, rtol=16 * EPS)
        assert np.all(b[t <= P] == 0)
    assert abs(pf.cancel_bias(P, P + 1)[()]) <= 4 * EPS  # the default share needs no bias at the first token
    np.testing.assert_allclose(pf.cancel_bias(P, t[t > P]), np.log(t[t > P] - P), rtol=4 * EPS, atol=8 * EPS)
    with pytest.raises(ValueError, match="share"):
        pf.cancel_bias(P, t, 1.0)


def test_prompt_share_bound_and_bound_shape():
    P, B = 4, 0.7
    t = np.arange(P + 1, 2000)
    bound = pf.prompt_share_bound(P, t, B)
    rng = np.random.default_rng(1)
    for _ in range(20):  # random logits in [-B, B]: the share never exceeds the bound
        logits = rng.uniform(-B, B, size=t.max())
        w = np.exp(logits)
        share = np.cumsum(w)[P - 1] / np.cumsum(w)[t - 1]
        assert np.all(share <= bound * (1 + 8 * EPS))
    # the extreme logits (+B on the prompt, -B after) attain it
    w = np.where(np.arange(t.max()) < P, math.exp(B), math.exp(-B))
    np.testing.assert_allclose(np.cumsum(w)[P - 1] / np.cumsum(w)[t - 1], bound, rtol=1e-12)
    np.testing.assert_allclose(pf.bound_shape(P, 3, t), P * np.log(t) ** 2 / t, rtol=4 * EPS)
    with pytest.raises(ValueError, match="L"):
        pf.bound_shape(P, 0, t)


def test_window_alpha_of_relay_and_bound():
    """L = 1 is exactly 1/t; the bound's OLS slope lies between its end-point local exponents; depth lowers it."""
    P, lo, hi = 8, 24.0, 2000
    # Delta^1_t = P/t and P/t exactly: a pure power law, float64 fit error only
    assert abs(pf.relay_alpha_window(P, 1, lo, hi) - 1.0) < 1e-12
    assert abs(pf.bound_alpha_window(P, 1, lo, hi) - 1.0) < 1e-12
    prev = 1.0
    for L in (2, 3, 4):
        a_bound = pf.bound_alpha_window(P, L, lo, hi)
        # OLS slope = positively weighted mean of the local slope, which increases with t
        assert pf.bound_local_exponent(L, lo) <= a_bound <= pf.bound_local_exponent(L, hi)
        a_relay = pf.relay_alpha_window(P, L, lo, hi)
        assert a_relay < prev  # each layer adds a power of ln t: the window exponent falls
        prev = a_relay
    with pytest.raises(ValueError, match="t_lo"):
        pf.relay_alpha_window(P, 2, float(P), hi)  # the window must start in the continuation
