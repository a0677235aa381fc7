"""Muon's Newton–Schulz iteration (analysis.theory.muon): the singular-value map, its band and who enters it, against
the matrix iteration and brute force, in float64."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from analysis.theory import muon as M


def _matrix(shape, singular_values, seed=0):
    rng = np.random.default_rng(seed)
    u, _ = np.linalg.qr(rng.normal(size=(shape[0], shape[0])))
    v, _ = np.linalg.qr(rng.normal(size=(shape[1], shape[1])))
    k = min(shape)
    return (u[:, :k] * np.asarray(singular_values)) @ v[:, :k].T, u[:, :k], v[:, :k]


@pytest.mark.parametrize("shape", [(8, 8), (12, 5), (5, 12)])
@pytest.mark.parametrize("steps", [1, 3, 5])
def test_the_iteration_applies_phi_to_each_singular_value_and_keeps_the_vectors(shape, steps):
    k = min(shape)
    s = np.geomspace(0.02, 1.0, k)[::-1] * 3.0  # any scale: the Frobenius norm is divided out
    g, u, v = _matrix(shape, s, seed=steps)
    out = M.newton_schulz(g, steps, eps=0.0)
    expected = (u * M.phi_iterated(s / np.linalg.norm(g), steps)) @ v.T
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-12)


def test_critical_points_are_where_phi_turns():
    a, b, c = M.MUON_COEFFICIENTS
    s_star, s1 = M.critical_points()
    for s in (s_star, s1):
        assert abs(a + 3 * b * s**2 + 5 * c * s**4) < 1e-12
    second = lambda s: 6 * b * s + 20 * c * s**3  # noqa: E731
    assert second(s_star) < 0 < second(s1)


def test_the_band_is_what_brute_force_finds():
    m, top = M.band()
    s = np.linspace(0.0, 1.0, 2_000_001)
    assert M.phi(s).max() == pytest.approx(top, rel=1e-9)  # the largest value on (0, 1]
    inside = np.linspace(m, top, 2_000_001)
    mapped = M.phi(inside)
    assert mapped.min() == pytest.approx(m, rel=1e-9) and mapped.max() <= top + 1e-12  # [m, M] into itself
    many = M.phi_iterated(np.linspace(1e-3, 1.0, 200_001), 40)
    assert many.min() >= m - 1e-12 and many.max() <= top + 1e-12  # and everything ends up in it


def test_who_enters_the_band_in_k_steps():
    m, top = M.band()
    a = M.MUON_COEFFICIENTS[0]
    thresholds = [M.entry_threshold(k) for k in range(1, 7)]
    for k, t in enumerate(thresholds, start=1):
        assert M.phi_iterated(t * (1 - 1e-9), k) < m <= M.phi_iterated(t, k) + 1e-12
        after = M.phi_iterated(np.geomspace(t, 1.0, 200_001), k)
        assert after.min() >= m - 1e-12 and after.max() <= top + 1e-12, k
    ratios = np.array(thresholds[1:]) / np.array(thresholds[:-1])
    assert abs(ratios[-1] - 1 / a) < 1e-3  # a small singular value grows by about a per step


def test_muon_in_float32_and_bfloat16_lands_in_the_band_up_to_its_rounding():
    m, top = M.band()
    s = np.geomspace(2 * M.entry_threshold(5), 1.0, 16) * np.sqrt(16)  # all enter within five steps
    g, _, _ = _matrix((16, 24), s, seed=7)
    for dtype, tol in ((torch.float32, 1e-4), (torch.bfloat16, 0.05)):
        out = M.newton_schulz(torch.tensor(g, dtype=dtype))
        sv = torch.linalg.svdvals(out.double())
        assert sv.min() >= m - tol and sv.max() <= top + tol, (dtype, sv.min(), sv.max())


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="coeffs must be three finite numbers"):
        M.phi(0.5, (1.0, 2.0))
    with pytest.raises(ValueError, match="a rise then a fall"):
        M.band((1.0, 1.0, 1.0))
    with pytest.raises(ValueError, match="steps must be an integer >= 0"):
        M.phi_iterated(0.5, -1)
    with pytest.raises(ValueError, match="g must be a matrix"):
        M.newton_schulz(np.ones(4))
