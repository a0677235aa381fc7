"""The claims of the attention phase diagram (:mod:`probes.signal_propagation.phase`): layer-1 entropy and
participation against the finite-T yardstick, the token cosine across depth against the finite-T block map."""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from analysis.claims.evidence import seed_z
from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from analysis.theory import attention_phase as ap
from probes.signal_propagation.phase import MAP_REPS, SOURCE, tag

# ================================================================================================ claims

FIGURE = "signal_attention_phase"
# a family holds the cells where the alternative differs from our value by at least this much (each statistic lies
# in [0, 1]: 1% of its range), fixed from theory before any measurement: elsewhere the two cannot be told apart
RESOLUTION = 0.01


def _worst(cells: list[int], diffs: np.ndarray) -> int:
    """The cell (an index into ``cells``' beta axis of ``diffs`` (beta, seed)) nearest to failing: the largest
    |seed mean| / SE; a cell without one (a NaN value: unmeasured) is the worst of all (``np.argmax`` picks NaN)."""
    z = np.abs(seed_z(diffs[cells]))
    return cells[int(np.argmax(z))]


def claims(led: Ledger, r: Result) -> None:
    """Every claim of the phase part (module docstring); nothing when the part did not run."""
    data, sc = r.data, r.scalars
    if "phase_entropy" not in data:
        return
    T = int(data.attrs["phase_tokens"])
    gap = float(np.nanmax(data["phase_identity_gap"].values))
    sc["phase_identity_gap"] = gap
    led.judge(
        "phase_attention_overlap_identity",
        measured=gap,
        atol=1e-12,
        why="float64 round-off of the exact-cosine tokens (a QR frame) and of T-term sums of O(1) products "
        f"(T = {T}); worst row over every p, beta and seed at layer 1",
        statement="layer 1: |sum_j a_ij x_j|^2 / d = p + (1 - p) sum_j a_ij^2 for every row",
    )
    for i, p in enumerate(data.phase_p.values):
        _slope_scalars(data, sc, i, float(p))
        _claim_rows(data, led, sc, i, float(p), T)
        _claim_depth(data, led, sc, i, float(p))


def _slope_scalars(data: xr.Dataset, sc: dict, i: int, p: float) -> None:
    """The entropy slope in beta^2 below beta_c (the T -> oo law's is -1 / beta_c^2 = -(1 - p) / 2): fitted to each
    seed's layer-1 entropies and to its yardstick over the grid's betas below beta_c (at least two)."""
    betas = np.asarray(data.phase_beta.values, dtype=float)
    below = betas < ap.critical_beta(p)
    if below.sum() < 2:
        return
    x = betas[below] ** 2
    meas = data["phase_entropy"].values[i, below, :, 0]  # (beta, seed)
    yard = data["phase_yard_entropy"].values[i, below]
    b_meas = np.polyfit(x, meas, 1)[0]  # (seed,)
    b_yard = np.polyfit(x, yard, 1)[0]
    t = tag(p)
    sc[f"phase_entropy_slope_{t}_measured"] = float(b_meas.mean())
    sc[f"phase_entropy_slope_{t}_se"] = float(b_meas.std(ddof=1) / math.sqrt(b_meas.size))
    sc[f"phase_entropy_slope_{t}_finite_T"] = float(b_yard.mean())
    sc[f"phase_entropy_slope_{t}_limit"] = -1.0 / ap.critical_beta(p) ** 2


def _row_alternative(beta: float, p: float, T: int, quantity: str) -> tuple[float, str]:
    """The competing yardstick of a layer-1 row statistic at (beta, p), relative to ours, and its hypothesis."""
    f = ap.entropy_ratio_finite if quantity == "entropy" else ap.participation_finite
    ours = f(beta, p, T)
    if p > 0:
        return f(beta, 0.0, T) - ours, "the transition is blind to the token cosine: beta_c = sqrt 2 (p = 0's logits)"
    lim = ap.entropy_ratio_limit(beta, p) if quantity == "entropy" else ap.participation_limit(beta, p)
    return float(lim) - ours, "the T -> oo random-energy law holds at this T"


def _claim_rows(data: xr.Dataset, led: Ledger, sc: dict, i: int, p: float, T: int) -> None:
    """Layer-1 entropy and participation against the per-row finite-T yardstick, worst beta of the grid."""
    betas = [float(b) for b in data.phase_beta.values]
    S = data.sizes["phase_seed"]
    for quantity, yard, law in (
        ("entropy", "phase_yard_entropy", "H / ln T"),
        ("participation", "phase_yard_participation", "sum_j a_ij^2"),
    ):
        meas = data[f"phase_{quantity}"].values[i, :, :, 0]  # (beta, seed)
        diffs = meas - data[yard].values[i]
        alts = [_row_alternative(b, p, T, quantity) for b in betas]
        cells = [j for j, (a, _) in enumerate(alts) if abs(a) >= RESOLUTION]
        name = f"phase_{quantity}_finite_T_{tag(p)}"
        if not cells:
            led.judge(
                name,
                source=SOURCE,
                reason=f"at no beta of the grid does the alternative differ from the yardstick by {RESOLUTION:g}",
            )
            continue
        j = _worst(cells, diffs)
        alt, hyp = alts[j]
        sc[f"phase_{quantity}_{tag(p)}_worst_beta"] = betas[j]
        sc[f"phase_{quantity}_{tag(p)}_measured"] = float(meas[j].mean())
        sc[f"phase_{quantity}_{tag(p)}_yardstick"] = float(data[yard].values[i, j].mean())
        led.judge(
            name,
            replicates=[float(v) for v in diffs[j]],
            expected=0.0,
            family=len(cells),
            alternative=alt,
            hypothesis=hyp,
            why=f"95% t band over {S} seeds (weights and token frame) of the paired (measured - yardstick) mean over "
            "the rows of layer 1; the yardstick is the exact finite-T expectation at each row's sigma_i",
            statement=f"p = {p:g}, T = {T}: layer-1 {law} = its finite-T random-energy value (worst beta = "
            f"{betas[j]:g} of {len(cells)}, beta_c = {ap.critical_beta(p):.3g})",
        )


def _claim_depth(data: xr.Dataset, led: Ledger, sc: dict, i: int, p: float) -> None:
    """The token cosine across depth against the finite-T block map, on each side of beta_c."""
    betas = np.asarray(data.phase_beta.values, dtype=float)
    L, S = data.sizes["phase_layer"], data.sizes["phase_seed"]
    bc = ap.critical_beta(p)
    meas = data["phase_cosine"].values[i]  # (beta, seed, pos)
    theory = data["phase_theory_cosine"].values[i]  # (beta, pos)
    sides = (
        (
            "above",
            [j for j, b in enumerate(betas) if b > bc],
            max(L // 2, 1),
            data["phase_collapse_cosine"].values[i],
            "rank collapse whatever beta: the averaging attention of the "
            "T -> oo law below beta_c (sum_j a_ij^2 = sum_j a_ij a_kj = 0)",
        ),
        (
            "below",
            [j for j, b in enumerate(betas) if b < bc],
            L,
            np.full(L + 1, p),
            "depth leaves the token cosine at its input value p",
        ),
    )
    for side, cells, k, alt_curve, hyp in sides:
        name = f"phase_depth_cosine_{side}_{tag(p)}"
        cells = [j for j in cells if abs(alt_curve[k] - theory[j, k]) >= RESOLUTION]
        if not cells:
            led.judge(
                name,
                reason=f"no beta of the grid {side} beta_c = "
                f"{bc:.3g} at p = {p:g} where the alternative differs by {RESOLUTION:g}",
            )
            continue
        diffs = meas[:, :, k] - theory[:, k][:, None]  # (beta, seed)
        j = _worst(cells, diffs)
        se_map = float(data["phase_theory_shared_se"].values[i, j].max())
        sc[f"phase_cosine_{side}_{tag(p)}_measured"] = float(meas[j, :, k].mean())
        sc[f"phase_cosine_{side}_{tag(p)}_theory"] = float(theory[j, k])
        led.judge(
            name,
            replicates=[float(v) for v in diffs[j]],
            expected=0.0,
            family=len(cells),
            alternative=float(alt_curve[k] - theory[j, k]),
            hypothesis=hyp,
            why=f"95% t band over {S} seeds of the paired (measured - map) token cosine after block {k}; the map's "
            f"shared weight is Monte Carlo over {MAP_REPS} row pairs per layer (SE <= {se_map:.1e})",
            statement=f"p = {p:g}: token cosine after {k} post-LN blocks = the finite-T block map, {side} beta_c = "
            f"{bc:.3g} (worst beta = {betas[j]:g} of {len(cells)})",
        )
