"""Muon's orthogonalisation: the quintic Newton–Schulz iteration and the map it applies to singular values.

Muon (seed ``004#16``) replaces a weight matrix's update ``G`` by an approximation of its orthogonal polar factor
``U V^T`` (``G = U S V^T``), computed by ``k`` steps of the odd quintic iteration, from ``X_0 = G / ||G||_F``::

    A = X X^T,   X <- a X + (b A + c A^2) X          (a, b, c) = (3.4445, -4.7750, 2.0315)

Closed forms (derived here; ``tests/test_theory_muon.py`` checks them against the iteration in float64):

* **Singular values map one by one.** With ``X = U S V^T``, ``A = U S^2 U^T`` and the step gives
  ``U phi(S) V^T``, ``phi(s) = a s + b s^3 + c s^5``: the iteration keeps the singular vectors and applies the scalar
  polynomial ``phi`` to each singular value, so ``k`` steps give ``U phi^k(S / ||G||_F) V^T`` exactly (up to float
  rounding). The Frobenius normalisation puts every singular value in ``(0, 1]``.
* **The band it settles in.** ``phi`` rises on ``[0, s*]``, falls on ``[s*, s1]`` and rises again after ``s1``,
  its critical points being the positive roots of ``phi'(s) = a + 3 b s^2 + 5 c s^4``:
  ``s* = sqrt((-3b - sqrt(9b^2 - 20ac)) / (10c))`` and ``s1 = sqrt((-3b + sqrt(9b^2 - 20ac)) / (10c))``. Its largest
  value on ``(0, 1]`` is ``M = phi(s*)`` and its local minimum ``m = phi(s1)``. When ``s* < m < s1 < M`` and
  ``max(phi(m), phi(M)) <= M``, the interval ``[m, M]`` is mapped into itself (on it ``phi`` falls to its minimum
  ``m`` at ``s1``, then rises; its largest value is at an end): once a singular value enters the band, it stays.
  For the quoted coefficients ``[m, M] = [0.6818..., 1.2024...]``: the iteration does not converge to 1, it puts the
  singular values within about ``-32% / +20%`` of it, which is what Muon trades for a cheap, fast polynomial.
* **Who arrives in k steps.** A small singular value grows by about ``a`` per step (``phi(s) ~ a s``); the smallest
  normalised singular value that is inside ``[m, M]`` after ``k`` steps is ``s_k``, the root of ``phi^k(s) = m`` on
  the rising branch (:func:`entry_threshold`), about ``m / a^k``.
"""

from __future__ import annotations

import math

import numpy as np

MUON_COEFFICIENTS = (3.4445, -4.7750, 2.0315)  # (a, b, c) as the seed paper quotes them
MUON_STEPS = 5


def _check(coeffs: tuple[float, float, float]) -> tuple[float, float, float]:
    if len(coeffs) != 3 or not all(isinstance(x, int | float) and math.isfinite(x) for x in coeffs):
        raise ValueError(f"coeffs must be three finite numbers (a, b, c), got {coeffs!r}")
    a, b, c = (float(x) for x in coeffs)
    if not (a > 0 and c > 0 and b < 0 and 9 * b * b - 20 * a * c > 0):
        raise ValueError(
            f"coeffs must give phi(s) = a s + b s^3 + c s^5 a rise then a fall on (0, inf) (a > 0, b < 0, c > 0, "
            f"9 b^2 > 20 a c), got {coeffs!r}"
        )
    return a, b, c


def phi(s, coeffs: tuple[float, float, float] = MUON_COEFFICIENTS):
    """The scalar map of one step on a singular value: ``a s + b s^3 + c s^5`` (float64)."""
    a, b, c = _check(coeffs)
    s = np.asarray(s, dtype=np.float64)
    return a * s + b * s**3 + c * s**5


def phi_iterated(s, steps: int = MUON_STEPS, coeffs: tuple[float, float, float] = MUON_COEFFICIENTS):
    """``phi`` applied ``steps`` times: the singular values after ``steps`` Newton–Schulz steps."""
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
        raise ValueError(f"steps must be an integer >= 0, got {steps!r}")
    out = np.asarray(s, dtype=np.float64)
    for _ in range(steps):
        out = phi(out, coeffs)
    return out


def critical_points(coeffs: tuple[float, float, float] = MUON_COEFFICIENTS) -> tuple[float, float]:
    """``(s*, s1)``: where ``phi`` stops rising and where it stops falling (module docstring)."""
    a, b, c = _check(coeffs)
    root = math.sqrt(9 * b * b - 20 * a * c)
    return math.sqrt((-3 * b - root) / (10 * c)), math.sqrt((-3 * b + root) / (10 * c))


def band(coeffs: tuple[float, float, float] = MUON_COEFFICIENTS) -> tuple[float, float]:
    """``(m, M)``: the interval the iteration maps into itself, ``M = phi(s*)``, ``m = phi(s1)`` (module docstring).
    ``ValueError`` where the coefficients do not make it one."""
    s_star, s1 = critical_points(coeffs)
    top, low = float(phi(s_star, coeffs)), float(phi(s1, coeffs))
    if not s_star < low < s1 < top:
        raise ValueError(
            f"coeffs: need s* < m < s1 < M for an invariant band, got s* = {s_star:.6g}, m = {low:.6g}, "
            f"s1 = {s1:.6g}, M = {top:.6g}"
        )
    ends = float(max(phi(low, coeffs), phi(top, coeffs)))
    if ends > top:
        raise ValueError(f"coeffs: phi leaves [m, M] = [{low:.6g}, {top:.6g}] (reaches {ends:.6g} at an end)")
    return low, top


def entry_threshold(steps: int = MUON_STEPS, coeffs: tuple[float, float, float] = MUON_COEFFICIENTS) -> float:
    """The smallest normalised singular value that is inside the band after ``steps`` steps: the first root of
    ``phi^steps(s) = m`` from 0 (located on a log grid of ``(1e-12, s*]``, then bisected in float64)."""
    low_band, _ = band(coeffs)
    s_star, _ = critical_points(coeffs)
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps!r}")
    grid = np.geomspace(1e-12, s_star, 20_001)
    inside = phi_iterated(grid, steps, coeffs) >= low_band
    if not inside.any():
        raise ValueError(f"steps: no singular value up to s* = {s_star:.6g} reaches the band in {steps} steps")
    first = int(np.argmax(inside))
    lo, hi = (0.0 if first == 0 else float(grid[first - 1])), float(grid[first])
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if float(phi_iterated(mid, steps, coeffs)) >= low_band:
            hi = mid
        else:
            lo = mid
    return hi


def newton_schulz(g, steps: int = MUON_STEPS, coeffs: tuple[float, float, float] = MUON_COEFFICIENTS, eps=1e-7):
    """Muon's iteration on a matrix ``g`` (numpy or torch, any float dtype; computed in that dtype): Frobenius
    normalisation, then ``steps`` quintic steps on the wide orientation (``X X^T`` the smaller Gram matrix)."""
    a, b, c = _check(coeffs)
    if getattr(g, "ndim", None) != 2:
        raise ValueError(f"g must be a matrix (2 dimensions), got shape {getattr(g, 'shape', None)}")
    tall = g.shape[0] > g.shape[1]
    x = g.T if tall else g
    x = x / ((x**2).sum() ** 0.5 + eps)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * (gram @ gram)) @ x
    return x.T if tall else x
