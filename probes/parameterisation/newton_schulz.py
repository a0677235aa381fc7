"""Part ``newton_schulz`` (seed 004#16): Muon's quintic Newton-Schulz iteration with the quoted coefficients on
``ns_draws`` Gaussian matrices of every shape (rows, cols) from ``ns_sizes``, in float64: its output's singular values
against the closed form ``phi^5`` of the input's normalised ones (the iteration keeps the singular vectors), and, for
every singular value at least the five-step entry threshold ``s_5``, inside the band ``[m, M]`` that ``phi`` maps
into itself (:mod:`analysis.theory.muon`)."""

from __future__ import annotations

import numpy as np

from analysis.claims.ledger import Ledger
from analysis.probing.base import MAX_SEED, Result
from analysis.probing.parts import Context, each_claim
from analysis.theory import muon as mt
from analysis.training.train import derived_seed
from probes.parameterisation.config import MUON_SOURCE

DESCRIPTION = "Muon's Newton-Schulz map: singular values phi^5 of the normalised ones, inside [m, M] above s_5"
FIELDS = ("ns_sizes", "ns_draws")
FIGURE = "param_newton_schulz"
EPS = 1e-7  # the iteration's normalisation G / (|G|_F + EPS)


def shapes(sizes: tuple[int, ...]) -> list[tuple[int, int]]:
    """Every (rows, cols) pair of ``sizes``: square, wide and tall matrices."""
    return [(r, c) for r in sizes for c in sizes]


def measure(ctx: Context) -> None:
    """Per matrix, every singular value in (``ns_in``: normalised), out (``ns_out``) and the closed form
    (``ns_law``: phi^5 of the input's, sorted as the output's), concatenated over shapes and draws (``ns_value``),
    with the matrix each belongs to."""
    c = ctx.config
    rng = np.random.default_rng(derived_seed(c.seed, "newton_schulz") % MAX_SEED)
    s_in, s_out, matrix = [], [], []
    k = 0
    for rows, cols in shapes(c.ns.sizes):
        for _ in range(c.ns.draws):
            g = rng.standard_normal((rows, cols))
            x = mt.newton_schulz(g, eps=EPS)
            s_in.append(np.linalg.svd(g, compute_uv=False) / (np.sqrt((g**2).sum()) + EPS))
            s_out.append(np.linalg.svd(x, compute_uv=False))
            matrix.append(np.full(len(s_in[-1]), k))
            k += 1
    s_in_all = np.concatenate(s_in)
    ctx.data["ns_in"] = (("ns_value",), s_in_all)
    ctx.data["ns_out"] = (("ns_value",), np.concatenate(s_out))
    # the closed form of each matrix's singular values, in the SVD's order (largest first: phi is not monotone)
    law = [np.sort(mt.phi_iterated(v))[::-1] for v in s_in]
    ctx.data["ns_law"] = (("ns_value",), np.concatenate(law))
    ctx.data["ns_matrix"] = (("ns_value",), np.concatenate(matrix))
    ctx.scalars["ns_band_low"], ctx.scalars["ns_band_high"] = mt.band()
    ctx.scalars["ns_entry_threshold"] = mt.entry_threshold()


def claim_singular_value_map(led: Ledger, r: Result) -> None:
    """The iteration's singular values are phi^5 of the normalised input's, to float64 rounding."""
    d = r.data
    out, law = d["ns_out"].values, d["ns_law"].values
    led.judge(
        "newton_schulz_singular_value_map",
        measured=float(np.abs(out - law).max()),
        expected=0.0,
        atol=1e-9,
        why="float64 rounding of five steps of 5 x 5 products and two SVDs (values of order 1)",
        statement=f"Muon's five quintic steps, coefficients {mt.MUON_COEFFICIENTS}: every output singular value is "
        f"phi^5 of the input's over |G|_F ({len(out)} values, {int(d['ns_matrix'].values.max()) + 1} matrices)",
    )


def claim_band(led: Ledger, r: Result) -> None:
    """Every singular value at least s_5 lands in [m, M] after five steps: lower and upper bound over the population."""
    d, s = r.data, r.scalars
    entered = d["ns_in"].values >= s["ns_entry_threshold"]
    out = d["ns_out"].values[entered]
    share = f"{entered.sum()} of {entered.size} singular values at least s_5 = {s['ns_entry_threshold']:.4g}"
    for name, relation, bound in (
        ("newton_schulz_band_low", ">=", s["ns_band_low"]),
        ("newton_schulz_band_high", "<=", s["ns_band_high"]),
    ):
        led.judge(
            name,
            population=out,
            bound=float(bound),
            why=f"every output singular value whose normalised input is at least s_5 ({share})",
            statement=f"after Muon's five Newton-Schulz steps every singular value from at least s_5 is {relation} "
            f"{bound:.4f} (the band [m, M] = [phi(s1), phi(s*)] phi maps into itself; {MUON_SOURCE})",
        )


claims = each_claim(claim_singular_value_map, claim_band)
