"""Claims declared as data (analysis.claims.specs): bad declarations refused at import, records stamped as declared, and
verdicts from evaluated evidence (analysis.claims.ledger.verdict_of): scope, rounding, power and what a miss
contradicts."""

from __future__ import annotations

import json
import math

import pytest

from analysis.claims import specs
from analysis.claims.ledger import VERDICTS, Ledger, samples_to_decide
from analysis.claims.specs import ClaimSpec, declare
from analysis.core.paths import REPO

PAPER = dict(tests="derivation", comparison="prediction", paper="000#1", statement="a statement")


@pytest.fixture
def probe():
    """A throwaway probe context with declarations, removed afterwards."""
    name = "spec_probe"
    yield name
    specs._REGISTRY.pop(name, None)


@pytest.mark.parametrize(
    ("fields", "missing"),
    [
        ({"comparison": "prediction", "paper": "000#1", "statement": "s", "scope": "x"}, "missing field tests"),
        ({"tests": "paper", "paper": "000#1", "statement": "s", "scope": "x"}, "missing field comparison"),
        ({"tests": "paper", "comparison": "prediction", "statement": "s", "scope": "x"}, "missing field paper"),
        ({"tests": "paper", "comparison": "prediction", "paper": "000#1", "scope": "x"}, "missing field statement"),
        ({"tests": "paper", "comparison": "prediction", "paper": "000#1", "statement": "s"}, "missing field scope"),
        ({**PAPER, "paper": "999#9", "scope": "x"}, "paper must be a key"),
        ({**PAPER, "tests": "theory", "scope": "x"}, "tests must be one of"),
        ({**PAPER, "comparison": "identity", "scope": "x"}, "a software identity has tests 'software'"),
        ({**PAPER, "comparison": "scope", "scope": ("h",)}, "a scope check is itself a hypothesis"),
    ],
)
def test_a_bad_declaration_is_refused_with_one_line_naming_claim_and_field(fields, missing):
    with pytest.raises(ValueError) as err:
        ClaimSpec("my_claim", **fields)
    text = str(err.value)
    assert missing in text and "'my_claim'" in text and "\n" not in text


def test_identities_and_scope_checks_need_no_scope_and_identities_no_paper():
    ClaimSpec("same", tests="software", comparison="identity", statement="two forms agree")
    ClaimSpec("hyp", tests="paper", comparison="scope", paper="000#1", statement="bounded logits")


def test_templates_match_filled_names_and_exact_names_win(probe):
    decl = declare(
        probe,
        ClaimSpec("alpha_L{depth}", **PAPER, scope="by construction"),
        ClaimSpec("alpha_L1", **{**PAPER, "tests": "paper"}, scope="by construction"),
    )
    assert decl.lookup("alpha_L12").name == "alpha_L{depth}"
    assert decl.lookup("alpha_L1").tests == "paper"
    assert decl.lookup("alpha_") is None and decl.lookup("beta_L1") is None


def test_declare_refuses_duplicates_and_scope_names_that_are_not_scope_checks(probe):
    one = ClaimSpec("a", **PAPER, scope="by construction")
    with pytest.raises(ValueError, match="declared twice"):
        declare(probe, one, one)
    with pytest.raises(ValueError, match="is not a declared claim with comparison 'scope'"):
        declare(probe, ClaimSpec("b", **PAPER, scope=("a",)), one)


def _declared_probe(probe):
    return declare(
        probe,
        ClaimSpec("hyp", tests="derivation", comparison="scope", paper="000#1", statement="logits bounded"),
        ClaimSpec("law", **PAPER, scope=("hyp",)),
        ClaimSpec("ident", tests="software", comparison="identity", statement="exact"),
    )


def _law(led, measured=1.0, **kw):
    return led.predict(
        "law",
        measured=measured,
        expected=1.0,
        alternative=3.0,
        hypothesis="the other law",
        se=0.1,
        dof=math.inf,
        within_run="a closed form's Monte Carlo check: no model",
        source="derivation",
        why="95% band of the Monte Carlo estimate",
        **kw,
    )


def _hyp(led, measured):
    return led.bound("hyp", measured=measured, bound=1.0, source="derivation")


def test_records_are_stamped_as_declared_and_an_undeclared_claim_is_refused(probe):
    _declared_probe(probe)
    led = Ledger(probe)
    c = _law(led)
    assert (c.tests, c.paper, c.triage["regime"]) == ("derivation", "000#1", ["hyp"])
    assert _hyp(led, 0.5).role == "scope"
    with pytest.raises(ValueError, match="claim 'other' of 'spec_probe' is not declared"):
        led.identity("other", measured=0.0, source="s", why="w")
    with pytest.raises(ValueError, match="declared a 'identity' comparison"):
        led.bound("ident", measured=0.0, bound=1.0, source="s")
    tagged = Ledger(f"{probe}[run]")  # a tagged context is the same probe
    assert _law(tagged).tests == "derivation"


def test_a_failing_scope_check_makes_its_claims_out_of_scope_never_a_disagreement(probe):
    _declared_probe(probe)
    led = Ledger(probe)
    _law(led, measured=2.0)  # misses its band: would disagree
    assert led["law"].verdict == "undecided"  # its scope check is not recorded yet
    _hyp(led, 2.0)  # the run is outside the hypothesis
    assert led["hyp"].verdict == "out_of_scope" and led["law"].verdict == "out_of_scope"
    assert "hyp fails in this run" in led["law"].verdict_reason
    _hyp(led, 0.5)  # inside: the miss now counts against our derivation
    assert led["hyp"].verdict == "agrees" and led["law"].verdict == "disagrees"
    assert led["law"].verdict_reason.startswith("contradicts our derivation for the paper's setting")
    assert "the alternative is excluded too" in led["law"].verdict_reason


def test_an_exactly_attained_bound_agrees():
    led = Ledger("unit")
    b = 1.0 / 3.0
    c = led.bound("attained", measured=b * (1 + 1e-12), bound=b, source="s")
    assert c.verdict == "agrees" and "attained to float rounding" in c.verdict_reason
    assert led.bound("over", measured=b * 1.01, bound=b, source="s").verdict == "disagrees"


def test_a_grey_zone_claim_is_judged_by_its_band_and_undecided_says_what_would_decide():
    led = Ledger("unit")
    kw = dict(expected=0.0, alternative=1.0, hypothesis="h", dof=math.inf, within_run="no model", source="s", why="w")
    edge = led.predict("edge", measured=0.19, se=0.1, **kw)  # inside a 0.196 band, close to its edge
    assert edge.status == "unstable" and edge.verdict == "agrees"
    both = led.predict("both", measured=0.5, se=0.4, **kw)  # the band (+-0.78) holds 0 and 1
    assert both.verdict == "undecided"
    # half-width 0.784 against half the separation 0.5: (0.784 / 0.5)^2 = 2.46 times the draws
    assert samples_to_decide(both) == pytest.approx((1.96 * 0.4 / 0.5) ** 2, rel=1e-3)
    assert "about 2.5x as many samples" in both.verdict_reason
    nan = led.predict("nan", measured=float("nan"), se=0.1, **kw)
    assert nan.verdict == "undecided" and "not finite" in nan.verdict_reason


def test_a_not_evaluated_claim_is_undecided_with_its_reason():
    led = Ledger("unit", preset="smoke")
    c = led.bound("b", measured=0.5, bound=1.0, source="s", requires_full=True)
    assert c.verdict == "undecided" and "smoke preset" in c.verdict_reason
    n = led.not_evaluated("n", role="paper", source="s", reason="needs a pretrained network")
    assert n.verdict_reason == "not evaluated: needs a pretrained network"


def test_verdicts_survive_the_json_round_trip(probe):
    _declared_probe(probe)
    led = Ledger(probe)
    _law(led, measured=2.0)
    _hyp(led, 2.0)
    back = Ledger.from_dict(json.loads(json.dumps(led.to_dict())))
    assert back == led and {c.verdict for c in back} <= set(VERDICTS)


def test_every_committed_claim_is_declared_and_carries_a_verdict():
    """The committed ledgers (make figures) against today's declarations: every claim resolves to one whose
    comparison fits its role, and says what it tests and what its evidence decided."""
    from analysis.probing.registry import load_declarations

    load_declarations()
    data = json.loads((REPO / "figures" / "claims.json").read_text())
    problems = []
    for nb, ledger in data["notebooks"].items():
        for c in ledger["claims"]:
            spec = specs.spec_for(c["context"], c["name"])
            where = f"{nb}: {c['context']}/{c['name']}"
            if spec is None:
                problems.append(f"undeclared {where}")
                continue
            if c["role"] not in specs.RECORDED_AS[spec.comparison] + ("scope",) * (spec.comparison == "scope"):
                problems.append(f"role {c['role']} against comparison {spec.comparison}: {where}")
            if c.get("verdict") not in VERDICTS or c.get("tests") != spec.tests:
                problems.append(f"verdict {c.get('verdict')!r}, tests {c.get('tests')!r}: {where}")
    assert not problems, "\n".join(problems[:20])


def test_claims_declared_lists_a_probes_declarations_without_running(capsys):
    from analysis.probing.cli import main

    assert main(["claims", "prompt_forgetting", "--declared", "--role", "scope", "--json", "-"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and {r["comparison"] for r in rows} == {"scope"}
    assert main(["claims", "icl_gd", "--declared", "--source"]) == 0
    out = capsys.readouterr().out
    assert "    scope: " in out and "(000#26)" in out
    assert main(["claims", "nope", "--declared"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "probe must be one that declares its claims" in err


def test_the_committed_ledger_keeps_the_verdict_rules():
    """The rules a theorist relies on, over figures/claims.json: a scope check never disagrees; no claim of a run
    whose scope check fails disagrees; an agreeing prediction's alternative lies outside its band; a disagreement
    says what it contradicts and an undecided claim what would decide it."""
    data = json.loads((REPO / "figures" / "claims.json").read_text())
    claims = [c for ledger in data["notebooks"].values() for c in ledger["claims"]]
    problems = []
    for c in claims:
        where = f"{c['context']}/{c['name']}"
        if c["role"] == "scope" and c["verdict"] == "disagrees":
            problems.append(f"a scope check disagrees: {where}")
        mine = set(c["triage"].get("regime", []))
        outside = [s for s in claims if s["context"] == c["context"] and s["name"] in mine]
        if c["verdict"] == "disagrees" and any(s["verdict"] == "out_of_scope" for s in outside):
            problems.append(f"disagrees outside its scope: {where}")
        if c["verdict"] == "disagrees" and not c["verdict_reason"].startswith(("contradicts", "a bug")):
            problems.append(f"a disagreement that does not say what it contradicts: {where}")
        if c["verdict"] == "undecided" and not c["verdict_reason"]:
            problems.append(f"undecided without what would decide it: {where}")
        if c["role"] == "prediction" and c["verdict"] == "agrees":
            alt = c["alternative"]
            assert alt and not alt["consistent"], where
    assert not problems, "\n".join(problems[:20])


def test_every_referenced_seed_key_is_a_registered_paper():
    """REFERENCES.md and analysis.claims.papers list the same seed papers (an alias resolves to its first key)."""
    import re

    from analysis.claims.papers import PAPERS, paper

    keys = set(re.findall(r"`(\d{3}#\d+)`", (REPO / "REFERENCES.md").read_text(encoding="utf-8")))
    assert keys and all(paper(k).seed for k in keys)
    assert {k for k, p in PAPERS.items() if p.seed} <= keys


def test_a_run_declared_outside_the_hypotheses_is_out_of_scope_whatever_it_measures(probe):
    declare(probe, ClaimSpec("law", **PAPER, scope="not met: the law needs i.i.d. logits; a pretrained network's"))
    led = Ledger(probe)
    for measured in (1.0, 2.0):  # agreeing or not, the statement is not tested here
        c = _law(led, measured=measured)
        assert c.verdict == "out_of_scope" and "by construction (not met: the law needs" in c.verdict_reason
    assert "(disagrees with expected 1" in c.verdict_reason
