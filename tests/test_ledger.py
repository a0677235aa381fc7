"""The claims ledger: status rules at their boundaries, and the JSON round trip."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from analysis.ledger import STATUSES, Claim, Ledger


def _ledger(preset: str = "full") -> Ledger:
    return Ledger(context="unit", preset=preset)


# ---------------------------------------------------------------------- close


@pytest.mark.parametrize(
    ("measured", "expected", "rtol", "atol", "status"),
    [
        # Values are dyadic so the boundary is exact in float64: |diff| == tolerance passes.
        (1.5, 1.0, 0.5, 0.0, "pass"),
        (np.nextafter(1.5, 2.0), 1.0, 0.5, 0.0, "fail"),
        (0.5, 1.0, 0.5, 0.0, "pass"),
        (0.5 - 2**-50, 1.0, 0.5, 0.0, "fail"),  # 1 - nextafter(0.5, 0) would round back to 0.5
        (0.25, 0.0, 0.0, 0.25, "pass"),
        (-0.25, 0.0, 0.0, 0.25, "pass"),
        (0.5, 0.0, 0.5, 0.25, "fail"),  # rtol scales |expected| = 0, only atol counts
        (2.0, 1.0, 0.5, 0.5, "pass"),  # atol + rtol*|expected| = 1
        (3.0, 3.0, 0.0, 0.0, "pass"),  # exact equality with zero tolerance
    ],
)
def test_close_boundaries(measured, expected, rtol, atol, status):
    claim = _ledger().close("c", measured=measured, expected=expected, rtol=rtol, atol=atol, source="s")
    assert claim.status == status
    assert claim.kind == "close"
    assert claim.tolerance == {"rtol": rtol, "atol": atol}


def test_close_tolerance_is_relative_to_expected_not_measured():
    # |10 - 5| = 5 <= 0.5 * |10| = 5 passes with expected=10, but 5 > 0.5 * 5 with the roles swapped.
    led = _ledger()
    assert led.close("a", measured=5.0, expected=10.0, rtol=0.5, source="s").status == "pass"
    assert led.close("b", measured=10.0, expected=5.0, rtol=0.5, source="s").status == "fail"


def test_close_converts_numpy_float32_to_float64():
    claim = _ledger().close("c", measured=np.float32(0.1), expected=0.1, atol=1e-9, source="s")
    assert type(claim.measured) is float
    # float32(0.1) differs from 0.1 by 1.49e-9: the comparison is done in float64, so atol=1e-9 fails
    assert claim.measured == float(np.float32(0.1))
    assert claim.status == "fail"


# ---------------------------------------------------------------------- bound / within


@pytest.mark.parametrize(
    ("measured", "relation", "status"),
    [
        (4.0, "<=", "pass"),
        (4.0, "<", "fail"),
        (np.nextafter(4.0, 0.0), "<", "pass"),
        (np.nextafter(4.0, 5.0), "<=", "fail"),
        (4.0, ">=", "pass"),
        (4.0, ">", "fail"),
        (np.nextafter(4.0, 5.0), ">", "pass"),
        (3.0, ">=", "fail"),
    ],
)
def test_bound_relations_at_boundary(measured, relation, status):
    claim = _ledger().bound("b", measured=measured, bound=4.0, relation=relation, source="paper")
    assert claim.status == status
    assert claim.expected == 4.0
    assert claim.tolerance == {"relation": relation}


@pytest.mark.parametrize(
    ("measured", "status"),
    [(0.5, "pass"), (0.75, "pass"), (np.nextafter(0.5, 0.0), "fail"), (np.nextafter(0.75, 1.0), "fail")],
)
def test_within_is_inclusive(measured, status):
    claim = _ledger().within("w", measured=measured, lo=0.5, hi=0.75, source="seed")
    assert claim.status == status
    assert claim.expected == [0.5, 0.75]


def test_within_rejects_empty_interval():
    with pytest.raises(ValueError, match="lo must be <= hi"):
        _ledger().within("w", measured=1.0, lo=2.0, hi=1.0, source="s")


# ---------------------------------------------------------------------- status rules


def test_requires_full_under_smoke_is_never_pass():
    smoke, full = _ledger("smoke"), _ledger("full")
    for led in (smoke, full):
        led.close("good", measured=1.0, expected=1.0, source="s", requires_full=True)
        led.bound("bad", measured=9.0, bound=1.0, source="s", requires_full=True)
    assert [c.status for c in smoke.claims] == ["not_evaluated", "not_evaluated"]
    assert [c.status for c in full.claims] == ["pass", "fail"]
    assert smoke["good"].measured == 1.0  # recorded for information


def test_claims_without_requires_full_are_evaluated_under_smoke():
    assert _ledger("smoke").within("w", measured=0.6, lo=0.5, hi=0.7, source="s").status == "pass"


def test_deviation_only_applies_when_the_check_fails():
    led = _ledger()
    failing = led.close("f", measured=2.0, expected=1.0, rtol=0.1, source="s", deviation="finite width")
    passing = led.close("p", measured=1.0, expected=1.0, rtol=0.1, source="s", deviation="finite width")
    assert failing.status == "deviation" and failing.deviation_reason == "finite width"
    assert passing.status == "pass" and passing.deviation_reason == "finite width"
    assert led.failed == [] and led.ok


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, None])
def test_non_finite_measurement_fails_even_with_deviation(bad):
    led = _ledger()
    assert led.close("c", measured=bad, expected=1.0, rtol=1.0, source="s").status == "fail"
    assert led.bound("b", measured=bad, bound=1.0, relation=">=", source="s", deviation="x").status == "fail"
    assert led.within("w", measured=bad, lo=-1e300, hi=1e300, source="s").status == "fail"
    assert len(led.failed) == 3 and not led.ok


def test_non_finite_measurement_under_requires_full_smoke_is_not_evaluated():
    claim = _ledger("smoke").close("c", measured=math.nan, expected=1.0, source="s", requires_full=True)
    assert claim.status == "not_evaluated"


def test_manual_and_not_evaluated():
    led = _ledger()
    assert led.manual("m1", passed=True, source="s", statement="curve is monotone").status == "pass"
    assert led.manual("m2", passed=False, source="s", statement="x", deviation="known").status == "deviation"
    ne = led.not_evaluated("n", source="paper", reason="needs 1e6 samples")
    assert ne.status == "not_evaluated" and ne.kind == "manual" and ne.why == "needs 1e6 samples"
    assert led.summary() == {"pass": 1, "fail": 0, "deviation": 1, "not_evaluated": 1}


def test_same_name_replaces_in_place_but_other_context_does_not():
    led = _ledger()
    led.close("a", measured=1.0, expected=2.0, source="s")
    led.close("b", measured=1.0, expected=1.0, source="s")
    led.close("a", measured=2.0, expected=2.0, source="s")
    assert [c.name for c in led.claims] == ["a", "b"]
    assert led["a"].status == "pass" and led.summary()["pass"] == 2

    other = Ledger("other", preset="full")
    other.close("a", measured=0.0, expected=2.0, source="s")
    led.extend(other)
    assert len(led) == 3
    assert led.get("a", context="other").status == "fail"
    assert led["a"].status == "pass"  # own context by default


def test_summary_counts_every_status():
    led = _ledger("smoke")
    assert led.summary() == dict.fromkeys(STATUSES, 0)
    led.close("p", measured=1.0, expected=1.0, source="s")
    led.close("f", measured=0.0, expected=1.0, source="s")
    led.close("d", measured=0.0, expected=1.0, source="s", deviation="why not")
    led.close("n", measured=0.0, expected=1.0, source="s", requires_full=True)
    assert led.summary() == {"pass": 1, "fail": 1, "deviation": 1, "not_evaluated": 1}
    assert [c.name for c in led.failed] == ["f"]
    report = led.report()
    assert "1 fail" in report and "[FAIL] unit/f" in report and "(deviation: why not)" in report


# ---------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"expected": math.nan}, "expected must be finite"),
        ({"expected": "1"}, "expected must be a real number"),
        ({"rtol": -0.1}, "rtol must be >= 0"),
        ({"atol": math.inf}, "atol must be a finite number"),
        ({"source": ""}, "source must be a non-empty string"),
        ({"measured": "0.5"}, "measured must be a real number"),
        ({"measured": True}, "measured must be a real number"),
        ({"requires_full": "yes"}, "requires_full must be true or false"),
        ({"deviation": ""}, "deviation must be a non-empty reason"),
    ],
)
def test_close_rejects_bad_arguments(kwargs, message):
    args = {"measured": 1.0, "expected": 1.0, "source": "s", **kwargs}
    with pytest.raises(ValueError, match=message):
        _ledger().close("c", **args)


def test_bad_relation_preset_and_name():
    with pytest.raises(ValueError, match="relation must be one of"):
        _ledger().bound("b", measured=1.0, bound=2.0, relation="=<", source="s")
    with pytest.raises(ValueError, match="preset must be one of"):
        Ledger("x", preset="medium")
    with pytest.raises(ValueError, match="name must be a non-empty string"):
        _ledger().close(" a", measured=1.0, expected=1.0, source="s")


# ---------------------------------------------------------------------- persistence


def _mixed_ledger() -> Ledger:
    led = Ledger("rt", preset="smoke")
    led.close("c", measured=0.101, expected=0.1, rtol=0.05, source="derivation", why="3 SE", figure="fig_a")
    led.bound("b", measured=3.2, bound=4.0, relation="<", source="paper", requires_full=True)
    led.within("w", measured=0.9, lo=0.55, hi=0.7, source="seed", deviation="small model", statement="alpha")
    led.manual("m", passed=True, source="s", statement="monotone", measured=2.0)
    led.not_evaluated("n", source="paper", reason="too slow")
    return led


def test_json_round_trip(tmp_path):
    led = _mixed_ledger()
    again = Ledger.from_dict(json.loads(json.dumps(led.to_dict(), allow_nan=False)))
    assert again == led
    assert again.claims == led.claims
    path = led.save(tmp_path / "sub" / "claims.json")
    loaded = Ledger.load(path)
    assert loaded == led and loaded.preset == "smoke"
    assert json.loads(path.read_text())["summary"] == led.summary()


def test_json_round_trip_of_non_finite_measurement():
    led = _ledger()
    led.close("nan", measured=math.nan, expected=1.0, source="s")
    led.close("inf", measured=-math.inf, expected=1.0, source="s")
    d = json.loads(json.dumps(led.to_dict(), allow_nan=False))  # strict JSON: no NaN literals
    assert [c["measured"] for c in d["claims"]] == ["nan", "-inf"]
    again = Ledger.from_dict(d)
    assert math.isnan(again["nan"].measured) and again["inf"].measured == -math.inf
    assert [c.status for c in again.claims] == ["fail", "fail"]


def test_claim_from_dict_rejects_unknown_fields_and_statuses():
    d = _mixed_ledger().claims[0].to_dict()
    with pytest.raises(ValueError, match="unknown field"):
        Claim.from_dict({**d, "colour": "red"})
    with pytest.raises(ValueError, match="status must be one of"):
        Claim.from_dict({**d, "status": "maybe"})


def test_claims_are_frozen():
    claim = _mixed_ledger().claims[0]
    with pytest.raises(AttributeError):
        claim.status = "pass"


def test_extend_with_tags_keeps_runs_apart():
    a = Ledger("probe", preset="full")
    a.close("x", measured=1.0, expected=1.0, source="s")
    b = Ledger("probe", preset="full")
    b.close("x", measured=2.0, expected=1.0, source="s")
    nb = Ledger("notebook", preset="full")
    nb.extend(a, tag="run_a").extend(b, tag="run_b")
    assert [(c.context, c.status) for c in nb.claims] == [("probe[run_a]", "pass"), ("probe[run_b]", "fail")]
    untagged = Ledger("notebook", preset="full").extend(a).extend(b)
    assert len(untagged.claims) == 1  # same (context, name): the second run replaces the first
    with pytest.raises(ValueError, match="tag"):
        nb.extend(a, tag=" ")
