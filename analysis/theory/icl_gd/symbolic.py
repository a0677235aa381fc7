r"""Sympy: brute-force expectations that check the closed forms of :mod:`.closed_forms` exactly."""

from __future__ import annotations

import math

import sympy as sp

from analysis.theory.icl_gd.closed_forms import _fourth_moment_trace, _one_step_loss


def sympy_symbols() -> dict[str, sp.Symbol]:
    """The symbols used by the sympy helpers: eta, sigma, w_std, v, m4, d, N (all positive)."""
    names = ("eta", "sigma", "w_std", "v", "m4", "d", "N")
    return {n: sp.Symbol(n, positive=True) for n in names}


def _gauss_moment(p: int) -> int:
    return 0 if p % 2 else math.prod(range(p - 1, 0, -2))  # (p-1)!! for even p


def sympy_one_step_loss_bruteforce(
    d: int, N: int, *, L: sp.Matrix | None = None, gamma: sp.Matrix | None = None, query_noise: bool = True
) -> sp.Expr:
    """E[(eta x_q^T Gamma h - y_q)^2] by expanding the polynomial and replacing each monomial by its moment.

    Independent of every closed form in this module: x coordinates are independent with
    E x^2 = v, E x^4 = m4 (``L`` None) or x = L z with z standard normal (Gaussian with Sigma = L L^T);
    w = w_std u, u and the noises standard normal. Use small d, N (d = N = 3 takes ~1 s).
    """
    sy = sympy_symbols()
    eta, sigma, w_std, v, m4 = (sy[k] for k in ("eta", "sigma", "w_std", "v", "m4"))
    u = sp.symbols(f"u0:{d}")
    eps = sp.symbols(f"e0:{N + 1}")
    if L is None:
        xs = [sp.symbols(f"x{i}_0:{d}") for i in range(N + 1)]
        x_vecs = [sp.Matrix(r) for r in xs]
        x_vars = [s for r in xs for s in r]
    else:
        zs = [sp.symbols(f"z{i}_0:{d}") for i in range(N + 1)]
        x_vecs = [sp.Matrix(L) * sp.Matrix(r) for r in zs]
        x_vars = [s for r in zs for s in r]
    G = sp.eye(d) if gamma is None else sp.Matrix(gamma)
    w = sp.Matrix(u) * w_std
    y = [(w.T * x_vecs[i])[0] + sigma * eps[i] for i in range(N)]
    h = sum((y[i] * x_vecs[i] for i in range(N)), sp.zeros(d, 1)) / N
    x_q = x_vecs[N]
    y_q = (w.T * x_q)[0] + (sigma * eps[N] if query_noise else 0)
    err = eta * (x_q.T * G * h)[0] - y_q
    gens = list(x_vars) + list(u) + list(eps)
    poly = sp.Poly(sp.expand(err**2), *gens)
    n_x = len(x_vars)
    total = sp.Integer(0)
    for powers, coeff in poly.terms():
        m = sp.Integer(1)
        for j, p in enumerate(powers):
            if p == 0:
                continue
            if j >= n_x or L is not None:
                m *= _gauss_moment(p)
            elif p % 2:
                m = 0
            elif p == 2:
                m *= v
            elif p == 4:
                m *= m4
            else:
                raise ValueError(f"moment of order {p} of a coordinate is not defined here")
            if m == 0:
                break
        total += coeff * m
    return sp.expand(total)


def sympy_one_step_loss_closed_form(
    d: int, N: int, *, L: sp.Matrix | None = None, gamma: sp.Matrix | None = None, query_noise: bool = True
) -> sp.Expr:
    """The closed form used numerically (:func:`_one_step_loss`), evaluated in sympy (same code path)."""
    sy = sympy_symbols()
    eta, sigma, w_std, v, m4 = (sy[k] for k in ("eta", "sigma", "w_std", "v", "m4"))
    G = eta * (sp.eye(d) if gamma is None else sp.Matrix(gamma))
    if L is None:
        Sigma = v * sp.eye(d)
        trF = _fourth_moment_trace("uniform", Sigma, v, m4)
    else:
        Sigma = sp.Matrix(L) * sp.Matrix(L).T
        trF = _fourth_moment_trace("anisotropic", Sigma)
    return sp.expand(_one_step_loss(G, Sigma, trF, sp.Integer(N), sigma, w_std, int(query_noise)))


def sympy_eta_star_independent() -> sp.Expr:
    """eta* for independent coordinates (v, m4), symbolic in d, N, sigma, w_std (for notebooks)."""
    sy = sympy_symbols()
    d, N, v, m4, sigma, w = (sy[k] for k in ("d", "N", "v", "m4", "sigma", "w_std"))
    return v / ((1 - 1 / N) * v**2 + ((d - 1) * v**2 + m4) / N + sigma**2 * v / (N * w**2))
