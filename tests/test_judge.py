"""Ledger.judge: a declared claim's one call. The declaration carries what does not change from run to run; the call
carries the run's evidence; the record is the one the comparison's own method makes from both."""

from __future__ import annotations

import math

import pytest

from analysis.claims import specs
from analysis.claims.ledger import Ledger, judged_as
from analysis.claims.specs import ClaimSpec, declare

COMMON = dict(paper="000#1", statement="a statement", scope="by construction", figure="fig_a", full=True,
              source="theory item 1")  # fmt: skip


@pytest.fixture
def probe():
    name = "judge_probe"
    declare(
        name,
        ClaimSpec("exact", tests="software", comparison="identity", statement="two forms agree", source="item 0"),
        ClaimSpec("slope", tests="derivation", comparison="prediction", hypothesis="no trend", **COMMON),
        ClaimSpec("grows", tests="paper", comparison="sign", sign=1, hypothesis="no growth", **COMMON),
        ClaimSpec("below", tests="derivation", comparison="bound", relation="<=", **COMMON),
        ClaimSpec("in_range", tests="paper", comparison="range", **COMMON),
        ClaimSpec("unsigned", tests="paper", comparison="sign", hypothesis="h", **COMMON),
    )
    yield name
    specs._REGISTRY.pop(name, None)


def test_judge_records_what_the_comparisons_own_method_records(probe):
    """The same claim recorded by judge and by the method with every keyword spelled out: identical records."""
    a, b = Ledger(probe, "full"), Ledger(probe, "full")
    pairs = [
        (a.judge("slope", measured=1.02, expected=1.0, se=0.01, dof=math.inf, within_run="a closed form",
                 alternative=0.0, why="w"),
         b.predict("slope", measured=1.02, expected=1.0, se=0.01, dof=math.inf, within_run="a closed form",
                   alternative=0.0, hypothesis="no trend", source="theory item 1", why="w", seed="000#1",
                   figure="fig_a", requires_full=True)),
        (a.judge("grows", replicates=[0.5, 0.7, 0.6], why="w"),
         b.direction("grows", replicates=[0.5, 0.7, 0.6], sign=1, hypothesis="no growth", source="theory item 1",
                     why="w", seed="000#1", figure="fig_a", requires_full=True)),
        (a.judge("below", population=[0.2, 0.9], bound=1.0, why="w"),
         b.bound("below", population=[0.2, 0.9], bound=1.0, relation="<=", source="theory item 1", why="w",
                 seed="000#1", figure="fig_a", requires_full=True)),
        (a.judge("in_range", measured=0.3, lo=0.2, hi=0.5),
         b.paper("in_range", measured=0.3, lo=0.2, hi=0.5, source="theory item 1", seed="000#1", figure="fig_a",
                 requires_full=True)),
        (a.judge("exact", measured=1e-17, why="rounding"),
         b.identity("exact", measured=1e-17, source="item 0", why="rounding")),
    ]  # fmt: skip
    for got, want in pairs:
        assert got == want
    assert a.judge("slope", reason="needs the planted model").status == "not_evaluated"


def test_judge_lets_a_run_word_its_own_source_and_hypothesis(probe):
    c = Ledger(probe).judge("grows", replicates=[0.5, 0.7, 0.6], why="w", hypothesis="flat at this depth")
    assert c.alternative["hypothesis"] == "flat at this depth"


@pytest.mark.parametrize(
    ("name", "evidence", "message"),
    [
        ("undeclared", {"measured": 1.0}, "judge takes a declared claim: 'undeclared' has no ClaimSpec"),
        ("slope", {"measured": 1.0, "colour": "red"}, "colour is not evidence"),
        ("unsigned", {"replicates": [1.0, 2.0]}, "a sign claim declares its sign"),
    ],
)
def test_a_bad_judge_call_is_refused_with_one_line(probe, name, evidence, message):
    with pytest.raises(ValueError, match=message) as err:
        Ledger(probe).judge(name, **evidence)
    assert "\n" not in str(err.value)


def test_a_missing_constant_names_the_declaration_field():
    name = "judge_bare"
    declare(name, ClaimSpec("p", tests="paper", comparison="prediction", paper="000#1", statement="s", scope="x"))
    try:
        with pytest.raises(ValueError, match="declare source and hypothesis in its ClaimSpec"):
            Ledger(name).judge("p", measured=1.0, expected=1.0, alternative=0.0, atol=0.1, why="w")
    finally:
        specs._REGISTRY.pop(name, None)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"comparison": "sign", "sign": 2}, "sign must be 1"),
        ({"comparison": "prediction", "sign": 1}, "sign is for a sign claim"),
        ({"comparison": "bound", "relation": "=="}, "relation must be one of"),
        ({"comparison": "bound", "figure": "a b"}, "figure must be a figure's name"),
        ({"comparison": "bound", "full": "yes"}, "full must be true or false"),
    ],
)
def test_bad_constants_are_refused_at_declaration(fields, message):
    with pytest.raises(ValueError, match=message):
        ClaimSpec("c", tests="paper", paper="000#1", statement="s", scope="x", **fields)


def test_the_evidence_says_how_a_scope_check_was_measured():
    spec = ClaimSpec("hyp", tests="paper", comparison="scope", paper="000#1", statement="s")
    assert judged_as(spec, {"bound": 1.0, "measured": 0.5})[0] == "bound"
    assert judged_as(spec, {"lo": 0.0, "hi": 1.0, "measured": 0.5})[0] == "paper"
    assert judged_as(spec, {"expected": 0.0, "alternative": 1.0})[0] == "predict"


def test_a_run_may_decide_the_constants_it_must(probe):
    """A run-dependent sign, figure or full-preset need overrides the declaration's."""
    c = Ledger(probe, "smoke").judge(
        "slope", replicates=[-0.5, -0.7, -0.6], sign=-1, figure=None, requires_full=False, why="w"
    )
    assert c.tolerance["sign"] == -1 and c.figure is None and c.status != "not_evaluated"


def test_a_declared_within_run_reason_goes_with_a_within_run_band_only():
    name = "judge_within"
    declare(
        name,
        ClaimSpec("mc", tests="derivation", comparison="prediction", paper="000#1", statement="s", scope="x",
                  source="theory", hypothesis="h", within_run="a closed form checked by Monte Carlo"),
    )  # fmt: skip
    try:
        led = Ledger(name)
        mc = led.judge("mc", measured=1.0, se=0.01, dof=math.inf, expected=1.0, alternative=2.0, why="draws")
        assert mc.tolerance["within_run"] == "a closed form checked by Monte Carlo"
        seeds = led.judge("mc", replicates=[1.0, 1.1, 0.9], expected=1.0, alternative=2.0, why="seeds")
        assert seeds.tolerance["within_run"] is None
    finally:
        specs._REGISTRY.pop(name, None)


def test_a_band_mapping_is_evidence_and_cannot_repeat_the_call(probe):
    band = {"measured": 1.02, "se": 0.01, "dof": math.inf, "within_run": "a closed form"}
    a = Ledger(probe).judge("slope", band=band, expected=1.0, alternative=0.0, why="w")
    b = Ledger(probe).judge("slope", **band, expected=1.0, alternative=0.0, why="w")
    assert a == b
    with pytest.raises(ValueError, match="band must be a mapping of evidence that the call does not also give"):
        Ledger(probe).judge("slope", band=band, measured=1.0, expected=1.0, alternative=0.0, why="w")
