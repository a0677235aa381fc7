"""The committed ledger judged again: every verdict follows from its stored band, and none that last-bit rounding
of another CPU could flip is shown as a pass or a fail.

Two CPUs (an EPYC and a Xeon) gave different verdicts for the same claims from float rounding alone
(``floor_float32_exponent``, ``looped_gaussian_tied_gdpp``). Here every evaluated comparison in
``figures/claims.json`` is judged again from its stored fields with the measurement perturbed by
``analysis.claims.evidence.rounding_step`` (``ROUNDING_RTOL`` relative, 4x the largest relative move a change of float32
summation order made in this workbench, at most a tenth of the claim's band); each claim whose verdict changes is
listed, and each must be recorded ``unstable``.
"""

import json

import pytest

from analysis.claims.evidence import ROUNDING_RTOL, STABLE_AT, rounding_step
from analysis.claims.ledger import (
    Claim,
    band_width,
    claim_stability,
    finding_counts,
    reference_scale,
    unique_claims,
    verdict_function,
)
from analysis.core.paths import REPO

LEDGER = REPO / "figures" / "claims.json"


@pytest.fixture(scope="module")
def committed() -> list[Claim]:
    data = json.loads(LEDGER.read_text())
    return [Claim.from_dict(c) for nb in data["notebooks"].values() for c in nb["claims"]]  # validates each


def _judged(claims):
    return [c for c in claims if c.stability is not None]


def test_every_stored_verdict_follows_from_its_band(committed):
    judged = _judged(committed)
    assert len(judged) > 100
    for c in judged:
        assert verdict_function(c)(c.measured) == c.stability["verdict"], f"{c.context}/{c.name}"
        assert claim_stability(c) == c.stability, f"{c.context}/{c.name}"  # stability recomputed from the file


def test_verdicts_rounding_could_flip_are_unstable(committed, capsys):
    flips = []
    for c in _judged(committed):
        if c.measured is None:
            continue
        f = verdict_function(c)
        delta = rounding_step(c.measured, reference_scale(c), band_width(c))
        if any(f(c.measured + s * delta) != c.stability["verdict"] for s in (-1, 1)):
            flips.append(c)
    with capsys.disabled():
        print(
            f"\n{len(flips)} committed claim(s) change verdict under the rounding step ({ROUNDING_RTOL:g} relative, "
            "at most a tenth of the band):"
        )
        for c in unique_claims(flips):
            print(f"  {c.context}/{c.name}: {c.stability['verdict']} at {c.measured:.10g} ({c.status})")
    assert all(c.status == "unstable" for c in flips), [
        f"{c.context}/{c.name}" for c in flips if c.status != "unstable"
    ]


def test_unstable_and_fail_triage_are_consistent(committed):
    for c in committed:
        if c.stability is not None:
            assert (c.status == "unstable") == (c.stability["value"] < STABLE_AT), f"{c.context}/{c.name}"
    counts = finding_counts(committed)
    assert counts["bug"] == 0  # a failing identity would have stopped make figures
    fails = [c for c in unique_claims(committed) if c.status == "fail"]
    assert sum(counts.values()) == len(fails)
    by_name = {(c.context, c.name): c for c in committed}
    for c in fails:
        if c.finding["kind"] == "regime":  # it names hypothesis claims of its own run that fail
            for ref in c.finding["claims"]:
                assert by_name[(c.context, ref)].status in ("fail", "deviation"), f"{c.context}/{c.name} -> {ref}"
