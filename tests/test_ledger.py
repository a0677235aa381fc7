"""The claims ledger: roles, status rules at their boundaries, diagnosis, counting, and the JSON round trip."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from analysis.claims.ledger import LOOSE_BELOW, STATUSES, Claim, Ledger, collect, headline


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
    claim = _ledger().close(
        "c", role="identity", measured=measured, expected=expected, rtol=rtol, atol=atol, source="s"
    )
    assert claim.status == status
    assert claim.kind == "close"
    assert claim.tolerance == {"rtol": rtol, "atol": atol}


def test_close_tolerance_is_relative_to_expected_not_measured():
    # |10 - 5| = 5 <= 0.5 * |10| = 5 passes with expected=10, but 5 > 0.5 * 5 with the roles swapped.
    led = _ledger()
    assert led.close("a", role="identity", measured=5.0, expected=10.0, rtol=0.5, source="s").status == "pass"
    assert led.close("b", role="identity", measured=10.0, expected=5.0, rtol=0.5, source="s").status == "fail"


def test_close_converts_numpy_float32_to_float64():
    claim = _ledger().identity("c", measured=np.float32(0.1), expected=0.1, atol=1e-9, source="s", why="float64")
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
    ],
)
def test_bound_relations_at_boundary(measured, relation, status):
    claim = _ledger().bound("b", measured=measured, bound=4.0, relation=relation, source="paper")
    assert claim.stability["verdict"] == status  # the comparison, inclusive or strict as the relation says
    # within a rounding step of the bound the verdict is one another CPU could flip: unstable, not pass or fail
    assert claim.status == "unstable" and claim.stability["rounding"] is False and claim.stability["value"] == 0.0
    assert claim.expected == 4.0 and claim.finding is None
    assert claim.tolerance == {"relation": relation, "tightness_given": False}


def test_bound_away_from_its_edge_is_stable():
    far = _ledger().bound("b", measured=3.0, bound=4.0, relation=">=", source="paper")
    assert far.status == "fail" and far.stability == {
        "verdict": "fail",
        "rounding": True,
        "method": "rounding",
        "value": 1.0,
    }
    assert far.finding == {"kind": "refuted"}


@pytest.mark.parametrize(
    ("measured", "status"),
    [(0.5, "pass"), (0.75, "pass"), (np.nextafter(0.5, 0.0), "fail"), (np.nextafter(0.75, 1.0), "fail")],
)
def test_within_is_inclusive(measured, status):
    claim = _ledger().within("w", role="paper", measured=measured, lo=0.5, hi=0.75, source="seed")
    assert claim.stability["verdict"] == status and claim.status == "unstable"  # at the edge: rounding decides
    assert claim.expected == [0.5, 0.75]
    inside = _ledger().within("w", role="paper", measured=0.6, lo=0.5, hi=0.75, source="seed")
    assert inside.status == "pass" and inside.stability["value"] == 1.0


def test_within_rejects_empty_interval():
    with pytest.raises(ValueError, match="lo must be <= hi"):
        _ledger().within("w", role="paper", measured=1.0, lo=2.0, hi=1.0, source="s")


# ---------------------------------------------------------------------- roles


def _predict(led, name="p", measured=1.02, **kw):
    args = dict(
        measured=measured,
        expected=1.0,
        alternative=2.0,
        hypothesis="slope 2",
        se=0.02,
        dof=math.inf,
        within_run="a closed form's Monte Carlo check: no model",
        source="derivation",
        why="95% band of the Monte Carlo estimate",
    )
    return led.predict(name, **{**args, **kw})


def test_every_claim_has_a_role_and_prediction_needs_an_alternative():
    led = _ledger()
    with pytest.raises(TypeError):
        led.close("c", measured=1.0, expected=1.0, source="s")  # no role
    with pytest.raises(ValueError, match="role must be one of"):
        led.close("c", role="guess", measured=1.0, expected=1.0, source="s")
    with pytest.raises(ValueError, match="alternative"):
        led.close("c", role="prediction", measured=1.0, expected=1.0, source="s")
    with pytest.raises(ValueError, match="alternative"):
        led.bound("b", role="prediction", measured=1.0, bound=2.0, source="s")
    with pytest.raises(ValueError, match="hypothesis"):
        _predict(led, hypothesis=" ")
    with pytest.raises(ValueError, match="role must be one of"):
        led.manual("m", role="prediction", passed=True, source="s", statement="monotone")


@pytest.mark.parametrize(
    ("measured", "se", "status"),
    [
        (1.02, 0.02, "pass"),  # |1.02 - 1| <= 1.96 x 0.02 and |1.02 - 2| > 0.039: the alternative is excluded
        (1.1, 0.02, "fail"),  # 5 SE outside the band
        (1.5, 0.6, "inconclusive"),  # the band (1.96 x 0.6) holds both 1 and 2
        (1.1, 0.3, "pass"),  # band [0.41, 1.59] excludes 2, and |1.1 - 2| = 0.9 > 0.59: the alternative is excluded
    ],
)
def test_prediction_status(measured, se, status):
    claim = _predict(_ledger(), measured=measured, se=se)
    assert claim.status == status
    assert claim.role == "prediction" and claim.tolerance["se"] == se and claim.tolerance["policy"] == "t95"
    assert claim.tolerance["k"] == pytest.approx(1.959964, abs=1e-6)  # the normal limit of a within-run SE
    assert claim.alternative["value"] == 2.0 and claim.alternative["hypothesis"] == "slope 2"


def test_prediction_with_alternative_inside_the_band_is_never_a_pass():
    claim = _ledger().predict(
        "p",
        measured=1.0,
        expected=1.0,
        alternative=1.05,
        hypothesis="h",
        atol=0.1,
        source="s",
        why="bootstrap half-width",
    )
    assert claim.status == "inconclusive"


def test_prediction_from_a_confidence_interval():
    led = _ledger()
    ok = led.predict(
        "a",
        measured=0.6,
        expected=0.62,
        ci=(0.55, 0.66),
        alternative=1.0,
        hypothesis="alpha 1",
        coverage=0.95,
        source="s",
        why="bootstrap 95% CI",
    )
    assert ok.status == "pass" and ok.kind == "within"
    lo, hi = ok.expected  # the band of measurements consistent with 0.62 given this CI's shape
    assert lo <= ok.measured <= hi and not lo <= 1.0 <= hi
    miss = led.predict(
        "b",
        measured=0.6,
        expected=0.7,
        ci=(0.55, 0.66),
        coverage=0.95,
        alternative=1.0,
        hypothesis="h",
        source="s",
        why="CI",
    )
    assert miss.status == "fail"
    both = led.predict(
        "c",
        measured=0.8,
        expected=0.7,
        ci=(0.2, 1.4),
        coverage=0.95,
        alternative=1.0,
        hypothesis="h",
        source="s",
        why="CI",
    )
    assert both.status == "inconclusive"
    nan = led.predict(
        "d",
        measured=math.nan,
        expected=0.7,
        ci=(math.nan, math.nan),
        coverage=0.95,
        alternative=1.0,
        hypothesis="h",
        source="s",
        why="CI",
    )
    assert nan.status == "fail"


def test_prediction_needs_exactly_one_uncertainty():
    with pytest.raises(ValueError, match="exactly one"):
        _predict(_ledger(), ci=(0.9, 1.1))
    with pytest.raises(TypeError):
        _predict(_ledger(), k=2.0)  # the multiple is the policy's, never the caller's
    with pytest.raises(ValueError, match="dof"):
        _predict(_ledger(), dof=None)
    with pytest.raises(ValueError, match="coverage"):
        _predict(_ledger(), se=None, ci=(0.9, 1.1), coverage=0.99)


def test_nan_standard_error_fails_the_prediction():
    assert _predict(_ledger(), se=math.nan).status == "fail"


@pytest.mark.parametrize(
    ("measured", "sign", "status"),
    [(-0.3, -1, "pass"), (-0.05, -1, "inconclusive"), (0.3, -1, "fail"), (0.3, 1, "pass"), (-0.3, 1, "fail")],
)
def test_direction(measured, sign, status):
    claim = _ledger().direction(
        "d",
        measured=measured,
        sign=sign,
        se=0.05,
        dof=math.inf,
        within_run="no model",
        hypothesis="no effect",
        source="s",
        why="95%",
    )
    assert claim.status == status
    lo, hi = claim.expected
    assert not lo <= 0.0 <= hi  # the alternative always lies outside the band


def test_direction_from_ci_and_against_one():
    led = _ledger()
    assert (
        led.direction(
            "r",
            measured=1.4,
            sign=1,
            alternative=1.0,
            ci=(1.3, 1.8),
            coverage=0.95,
            hypothesis="equal",
            source="s",
            why="CI",
        ).status
        == "pass"
    )
    assert (
        led.direction(
            "s",
            measured=1.2,
            sign=1,
            alternative=1.0,
            ci=(0.5, 1.9),
            coverage=0.95,
            hypothesis="equal",
            source="s",
            why="CI",
        ).status
        == "inconclusive"
    )


@pytest.mark.parametrize(
    ("measured", "bound", "relation", "tightness", "status"),
    [
        (0.5, 1.0, "<=", 0.5, "pass"),
        (0.1, 1.0, "<=", 0.1, "pass"),  # tightness exactly 0.1 is still evidence (but rounding could flip it)
        (0.099, 1.0, "<=", 0.099, "loose"),
        (20.0, 1.0, ">=", 0.05, "loose"),
        (2.0, 1.0, ">=", 0.5, "pass"),
        (2.0, 1.0, "<=", 2.0, "fail"),
        (-1.0, 1.0, "<=", None, "pass"),  # no positive ratio: tightness unknown, not loose
    ],
)
def test_bound_tightness_and_loose(measured, bound, relation, tightness, status):
    claim = _ledger().bound("b", measured=measured, bound=bound, relation=relation, source="s")
    assert claim.stability["verdict"] == status
    assert claim.status == ("unstable" if tightness == 0.1 else status)
    assert claim.tightness == (pytest.approx(tightness) if tightness is not None else None)
    assert LOOSE_BELOW == 0.1


def test_identity_and_paper_roles():
    led = _ledger()
    assert led.identity("i", measured=1e-17, atol=1e-15, source="s", why="rounding").status == "pass"
    bug = led.identity("j", measured=1e-3, atol=1e-15, source="s", why="rounding")
    assert bug.status == "fail" and led.broken == [bug] and not led.ok
    assert led.paper("p", measured=0.6, lo=0.55, hi=0.7, source="seed 000#1").role == "paper"
    with pytest.raises(TypeError):
        led.identity("k", measured=1.0, atol=0.0, source="s", why="x", diagnosed_by={"i": "pass"})


# ---------------------------------------------------------------------- deviations are diagnosed


def test_deviation_needs_an_evaluated_diagnosis_with_the_required_status():
    led = _ledger()
    led.bound("condition", measured=5.0, bound=2.8, relation="<", source="theorem")  # fails: outside the regime
    dev = led.paper(
        "range",
        measured=0.9,
        lo=0.55,
        hi=0.7,
        source="seed",
        diagnosed_by={"condition": "fail"},
        diagnosis="logits too large for the theorem's regime",
    )
    assert dev.status == "deviation"
    wrong = led.paper(
        "range2",
        measured=0.9,
        lo=0.55,
        hi=0.7,
        source="seed",
        diagnosed_by={"condition": "pass"},
        diagnosis="needs the condition to hold",
    )
    assert wrong.status == "fail"  # the diagnosis did not come out as required
    missing = led.paper(
        "range3", measured=0.9, lo=0.55, hi=0.7, source="seed", diagnosed_by={"nowhere": "fail"}, diagnosis="x"
    )
    assert missing.status == "fail"
    # a diagnosis recorded later resolves the claim, and a re-recorded diagnosis re-resolves it
    led.bound("nowhere", measured=3.0, bound=1.0, source="s")
    assert led["range3"].status == "deviation"
    led.bound("nowhere", measured=0.5, bound=1.0, source="s")
    assert led["range3"].status == "fail"
    # a passing claim with a diagnosis is simply a pass
    ok = led.paper(
        "inside", measured=0.6, lo=0.55, hi=0.7, source="seed", diagnosed_by={"condition": "fail"}, diagnosis="x"
    )
    assert ok.status == "pass"


def test_unevaluated_diagnosis_does_not_count():
    led = Ledger("unit", preset="smoke")
    led.bound("condition", measured=5.0, bound=2.8, relation="<", source="t", requires_full=True)
    claim = led.paper(
        "range", measured=0.9, lo=0.55, hi=0.7, source="s", diagnosed_by={"condition": "fail"}, diagnosis="x"
    )
    assert led["condition"].status == "not_evaluated" and claim.status == "fail"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"diagnosed_by": {"c": "fail"}}, "diagnosis text"),
        ({"diagnosed_by": ["c"], "diagnosis": "x"}, "map claim names"),
        ({"diagnosed_by": {"c": "maybe"}, "diagnosis": "x"}, "must be one of"),
        ({"diagnosed_by": {"r": "fail"}, "diagnosis": "x"}, "cannot diagnose itself"),
        ({"diagnosis": "x"}, "needs diagnosed_by"),
    ],
)
def test_bad_diagnoses_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        _ledger().paper("r", measured=1.0, lo=0.0, hi=0.5, source="s", **kwargs)


# ---------------------------------------------------------------------- status rules


def test_requires_full_under_smoke_is_never_pass():
    smoke, full = _ledger("smoke"), _ledger("full")
    for led in (smoke, full):
        led.identity("good", measured=1.0, expected=1.0, source="s", why="x", requires_full=True)
        led.bound("bad", measured=9.0, bound=1.0, source="s", requires_full=True)
    assert [c.status for c in smoke.claims] == ["not_evaluated", "not_evaluated"]
    assert [c.status for c in full.claims] == ["pass", "fail"]
    assert smoke["good"].measured == 1.0  # recorded for information


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, None])
def test_non_finite_measurement_fails(bad):
    led = _ledger()
    assert led.close("c", role="paper", measured=bad, expected=1.0, rtol=1.0, source="s").status == "fail"
    assert led.bound("b", measured=bad, bound=1.0, relation=">=", source="s").status == "fail"
    assert led.within("w", role="paper", measured=bad, lo=-1e300, hi=1e300, source="s").status == "fail"
    assert _predict(led, measured=bad).status == "fail"
    assert led.direction("d", measured=bad, sign=1, se=0.1, dof=4, hypothesis="h", source="s", why="x").status == "fail"
    assert len(led.failed) == 5 and led.ok  # only a failing identity is a bug
    led.identity("i", measured=bad, source="s", why="x")
    assert not led.ok


def test_manual_and_not_evaluated():
    led = _ledger()
    assert led.manual("m1", role="identity", passed=True, source="s", statement="same hook set").status == "pass"
    assert led.manual("m2", role="paper", passed=False, source="s", statement="x").status == "fail"
    ne = led.not_evaluated("n", role="prediction", source="paper", reason="needs 1e6 samples")
    assert ne.status == "not_evaluated" and ne.kind == "manual" and ne.why == "needs 1e6 samples"
    assert led.summary() == {**dict.fromkeys(STATUSES, 0), "pass": 1, "fail": 1, "not_evaluated": 1}


def test_same_name_replaces_in_place_but_other_context_does_not():
    led = _ledger()
    led.identity("a", measured=1.0, expected=2.0, source="s", why="x")
    led.identity("b", measured=1.0, expected=1.0, source="s", why="x")
    led.identity("a", measured=2.0, expected=2.0, source="s", why="x")
    assert [c.name for c in led.claims] == ["a", "b"]
    assert led["a"].status == "pass" and led.summary()["pass"] == 2

    other = Ledger("other", preset="full")
    other.identity("a", measured=0.0, expected=2.0, source="s", why="x")
    led.extend(other)
    assert len(led) == 3
    assert led.get("a", context="other").status == "fail"
    assert led["a"].status == "pass"  # own context by default


def test_summary_and_headline_count_by_role_and_status():
    led = _ledger("smoke")
    assert led.summary() == dict.fromkeys(STATUSES, 0)
    led.identity("i", measured=0.0, source="s", why="x")
    _predict(led, "p")
    _predict(led, "q", measured=1.5, se=0.6)  # inconclusive
    led.bound("t", measured=0.5, bound=1.0, source="s")
    led.bound("l", measured=1e-3, bound=1.0, source="s")
    led.bound("f", measured=2.0, bound=1.0, source="s")
    led.bound("n", measured=0.0, bound=1.0, source="s", requires_full=True)
    expected = {"pass": 3, "fail": 1, "deviation": 0, "inconclusive": 1, "loose": 1, "unstable": 0, "not_evaluated": 1}
    assert led.summary() == expected
    assert led.by_role()["bound"] == {
        "pass": 1,
        "fail": 1,
        "deviation": 0,
        "inconclusive": 0,
        "loose": 1,
        "unstable": 0,
        "not_evaluated": 1,
    }
    # verdicts: i, p, t and l (loose, but it holds) agree; f disagrees; q (both consistent) and n undecided
    assert [led[n].verdict for n in "ipqtlfn"] == ["agrees"] * 2 + ["undecided"] + ["agrees"] * 2 + [
        "disagrees",
        "undecided",
    ]
    text = led.headline()
    assert text.startswith("4 agree, 1 disagree (1 with undeclared statements; ")
    assert text.endswith("2 undecided (1 not evaluated), 0 out of scope")
    # two evaluated two-sided predictions judged by a 95% band: 0.1 disagreements expected by chance alone
    assert "0.1 expected by chance among 2 predictions judged by a 95% band" in text
    report = led.report()
    assert "[FAIL] bound: unit/f" in report and "[INCL] prediction: unit/q" in report


def test_repeated_measurements_under_tags_count_once():
    a = Ledger("probe", preset="full")
    a.identity("x", measured=0.0, source="s", why="x")
    b = Ledger("probe", preset="full")
    b.identity("x", measured=1.0, source="s", why="x")  # another measurement: counted
    nb = collect("notebook", "full", {"run_a": a, "run_a_again": a, "run_b": b})
    assert len(nb) == 3 and len(nb.unique()) == 2
    assert nb.summary()["pass"] == 1 and nb.summary()["fail"] == 1
    assert headline(nb.claims).startswith("1 agree, 1 disagree")


def test_against_alternatives_rejudges_only_predictions():
    led = _ledger()
    _predict(led, "p")  # pass -> fail against the alternative
    _predict(led, "q", measured=1.98)  # fail -> pass against the alternative
    led.direction("d", measured=-0.3, sign=-1, se=0.05, dof=4, hypothesis="flat", source="s", why="x")
    led.bound("b", measured=0.5, bound=1.0, source="s")
    again = led.against_alternatives()
    assert [c.status for c in led.claims] == ["pass", "fail", "pass", "pass"]
    assert [c.status for c in again.claims] == ["fail", "pass", "fail", "pass"]
    assert again["b"] == led["b"]


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
        ({"seed": "paper one"}, "seed must be a seed paper key"),
    ],
)
def test_close_rejects_bad_arguments(kwargs, message):
    args = {"measured": 1.0, "expected": 1.0, "source": "s", "role": "identity", **kwargs}
    with pytest.raises(ValueError, match=message):
        _ledger().close("c", **args)


def test_bad_relation_preset_and_name():
    with pytest.raises(ValueError, match="relation must be one of"):
        _ledger().bound("b", measured=1.0, bound=2.0, relation="=<", source="s")
    with pytest.raises(ValueError, match="preset must be one of"):
        Ledger("x", preset="medium")
    with pytest.raises(ValueError, match="name must be a non-empty string"):
        _ledger().identity(" a", measured=1.0, expected=1.0, source="s", why="x")


# ---------------------------------------------------------------------- persistence


def _mixed_ledger() -> Ledger:
    led = Ledger("rt", preset="smoke")
    led.identity("c", measured=0.101, expected=0.1, rtol=0.05, source="derivation", why="x", figure="fig_a")
    led.bound("b", measured=3.2, bound=4.0, relation="<", source="paper", requires_full=True)
    led.bound("cond", measured=3.2, bound=1.0, source="theorem", seed="000#1")
    led.paper(
        "w",
        measured=0.9,
        lo=0.55,
        hi=0.7,
        source="seed",
        diagnosed_by={"cond": "fail"},
        diagnosis="regime",
        statement="alpha",
    )
    _predict(led, "p")
    led.direction("d", measured=-0.3, sign=-1, ci=(-0.5, -0.1), coverage=0.95, hypothesis="flat", source="s", why="CI")
    led.manual("m", role="identity", passed=True, source="s", statement="same hooks", measured=2.0)
    led.not_evaluated("n", role="bound", source="paper", reason="too slow")
    return led


def test_json_round_trip(tmp_path):
    led = _mixed_ledger()
    assert led["w"].status == "deviation"
    again = Ledger.from_dict(json.loads(json.dumps(led.to_dict(), allow_nan=False)))
    assert again == led
    assert again.claims == led.claims
    path = led.save(tmp_path / "sub" / "claims.json")
    loaded = Ledger.load(path)
    assert loaded == led and loaded.preset == "smoke"
    assert json.loads(path.read_text())["summary"] == led.summary()


def test_json_round_trip_of_non_finite_measurement():
    led = _ledger()
    led.identity("nan", measured=math.nan, expected=1.0, source="s", why="x")
    led.identity("inf", measured=-math.inf, expected=1.0, source="s", why="x")
    d = json.loads(json.dumps(led.to_dict(), allow_nan=False))  # strict JSON: no NaN literals
    assert [c["measured"] for c in d["claims"]] == ["nan", "-inf"]
    again = Ledger.from_dict(d)
    assert math.isnan(again["nan"].measured) and again["inf"].measured == -math.inf
    assert [c.status for c in again.claims] == ["fail", "fail"]


def test_claim_from_dict_rejects_unknown_fields_statuses_and_roles():
    d = _mixed_ledger().claims[0].to_dict()
    with pytest.raises(ValueError, match="unknown field"):
        Claim.from_dict({**d, "colour": "red"})
    with pytest.raises(ValueError, match="status must be one of"):
        Claim.from_dict({**d, "status": "maybe"})
    with pytest.raises(ValueError, match="role must be one of"):
        Claim.from_dict({**d, "role": None})


def test_claims_are_frozen():
    claim = _mixed_ledger().claims[0]
    with pytest.raises(AttributeError):
        claim.status = "pass"


def test_extend_with_tags_keeps_runs_apart():
    a = Ledger("probe", preset="full")
    a.identity("x", measured=1.0, expected=1.0, source="s", why="x")
    b = Ledger("probe", preset="full")
    b.identity("x", measured=2.0, expected=1.0, source="s", why="x")
    nb = Ledger("notebook", preset="full")
    nb.extend(a, tag="run_a").extend(b, tag="run_b")
    assert [(c.context, c.status) for c in nb.claims] == [("probe[run_a]", "pass"), ("probe[run_b]", "fail")]
    untagged = Ledger("notebook", preset="full").extend(a).extend(b)
    assert len(untagged.claims) == 1  # same (context, name): the second run replaces the first
    with pytest.raises(ValueError, match="tag"):
        nb.extend(a, tag=" ")


def test_given_fills_the_keywords_a_call_leaves_out():
    """led.given(...) is a view: its claims go into the ledger with the given seed, figure and requires_full where
    the call leaves them out (a call's own keyword wins, a method that does not take one is not handed it), views
    nest, and a keyword no claim method takes is refused by name."""
    led = Ledger("t", preset="smoke")
    view = led.given(seed="000#1", figure="fig", requires_full=True)
    view.identity("a", measured=0.0, source="s", why="w")
    view.given(figure="other").identity("b", measured=0.0, source="s", why="w", requires_full=False)
    view.not_evaluated("c", role="prediction", source="s", reason="r")  # takes no requires_full
    assert (led["a"].seed, led["a"].figure, led["a"].status) == ("000#1", "fig", "not_evaluated")
    assert (led["b"].seed, led["b"].figure, led["b"].status) == ("000#1", "other", "pass")
    assert led["c"].seed == "000#1" and len(view) == len(led) == 3 and "a" in view and view["a"] is led["a"]
    with pytest.raises(ValueError, match="given: bogus is not a keyword"):
        led.given(bogus=1)


def test_a_bound_over_a_population_reports_its_worst_and_median_case():
    """A theorist reads a bound over every case: the worst decides, the median says how tight it typically is."""
    led = Ledger("pop")
    rows = np.array([[0.2, 0.5, 0.4], [0.9, 0.3, 0.6]])
    c = led.bound("share_bound", population=rows, bound=1.0, source="s", why="each row")
    assert c.measured == 0.9 and c.tightness == 0.9 and c.verdict == "agrees"
    pop = c.tolerance["population"]
    assert pop == {"n": 6, "holding": 1.0, "worst": 0.9, "tightness_median": 0.45}
    assert "holds in all 6 cases" in c.verdict_reason and "0.45 at the median case" in c.verdict_reason
    low = led.bound("floor", population=[2.0, 4.0, 8.0], bound=1.0, relation=">=", source="s", why="w")
    assert low.measured == 2.0 and low.tightness == 0.5 and low.tolerance["population"]["tightness_median"] == 0.25
    # attained in the worst case to rounding: holds, and says it is attained
    reached = led.bound("two_keys", population=[0.5 * (1 + 1e-7), 0.25], bound=0.5, source="s", why="w")
    assert reached.verdict == "agrees" and "attained" in reached.verdict_reason
    miss = led.bound("miss", population=[0.5, 1.5, 0.7], bound=1.0, source="s", why="w")
    assert miss.verdict == "disagrees" and miss.tolerance["population"]["holding"] == pytest.approx(2 / 3)
    unmeasured = led.bound("nan_case", population=[0.5, math.nan], bound=1.0, source="s", why="w")
    assert unmeasured.verdict == "undecided" and unmeasured.tolerance["population"]["holding"] == 0.5


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"population": [0.5], "measured": 0.5}, "give measured or population, not both"),
        ({}, "bound needs measured"),
        ({"population": []}, "population must hold at least one case"),
        ({"population": ["a"]}, "population must be an array of numbers"),
    ],
)
def test_a_bad_population_is_refused_with_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Ledger("pop").bound("b", bound=1.0, source="s", why="w", **kwargs)


def test_an_undecided_criterion_band_says_more_data_does_not_narrow_it():
    led = Ledger("crit")
    c = led.predict(
        "few_spikes",
        measured=0.0,
        expected=0.0,
        atol=0.5,
        alternative=0.25,
        hypothesis="no difference",
        source="s",
        why="fewer than half of the runs",
    )
    assert c.verdict == "undecided" and "more data does not narrow a criterion" in c.verdict_reason
    assert "x as many" not in c.verdict_reason
