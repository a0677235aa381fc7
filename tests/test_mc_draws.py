"""Monte Carlo checks of closed forms draw as many samples as their tolerance needs.

A claim whose only uncertainty is Monte Carlo over draws with no model behind it (its declaration's ``within_run``
says "no model" or "no weights") can always be decided by drawing more. Its draw count is enough when the band can
never hold both the prediction and its alternative: the band's half-width is at most half their separation, so the
claim is decided whatever the draws give (``analysis.claims.ledger.samples_to_decide`` <= 1). Checked on the committed
full-preset ledgers: a config that lowers a draw count below what its claim needs fails here, naming the factor."""

from __future__ import annotations

import json

import pytest

from analysis.claims.ledger import Claim, band_width
from analysis.core.paths import GALLERY

MC = ("no model", "no weights")


def _mc_checks() -> list[Claim]:
    out = []
    for path in sorted(GALLERY.glob("*.claims.json")):
        for d in json.loads(path.read_text())["claims"]:
            c = Claim.from_dict(d)
            wr = c.tolerance.get("within_run") or ""
            if c.role == "prediction" and c.alternative and wr.startswith(MC) and c.status != "not_evaluated":
                out.append(c)
    return out


CHECKS = _mc_checks()


def test_there_are_monte_carlo_checks():
    assert len(CHECKS) >= 10, [c.name for c in CHECKS]


@pytest.mark.parametrize("claim", CHECKS, ids=lambda c: f"{c.context}/{c.name}")
def test_draws_suffice_to_separate_prediction_from_alternative(claim):
    w = band_width(claim)
    assert w is not None and w > 0, f"{claim.name}: no finite band ({claim.tolerance})"
    a = float(claim.alternative["value"])
    centre = float(claim.expected) if isinstance(claim.expected, int | float) else float(claim.measured)
    sep = abs(centre - a) if "sign" in claim.tolerance else abs(centre - a) / 2
    factor = (w / sep) ** 2
    assert factor <= 1.0, (
        f"{claim.context}/{claim.name}: its band (half-width {w:.3g}) can hold both the prediction and the alternative "
        f"({a:.6g}): about {factor:.2g}x as many draws are needed"
    )
    assert claim.verdict in ("agrees", "disagrees", "out_of_scope"), claim.verdict_reason
