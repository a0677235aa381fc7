"""The per-paper scorecard (analysis.claims.scorecard): statements grouped across runs, the statement rule, the table,
one paper's text and its command line (python -m probes claims --paper KEY)."""

from __future__ import annotations

import json
import math

import pytest

from analysis.claims import scorecard, specs
from analysis.claims.ledger import Ledger
from analysis.claims.specs import ClaimSpec, declare
from analysis.core.paths import REPO
from analysis.probing.cli import main

STATEMENT = "«the offset decays as a power of t»"


@pytest.fixture
def ledger():
    """One declared probe's claims in three tagged runs: the law agrees in two, is out of scope in one."""
    name = "card_probe"
    declare(
        name,
        ClaimSpec("hyp", tests="paper", comparison="scope", paper="000#1", statement="bounded logits"),
        ClaimSpec(
            "law", tests="derivation", comparison="prediction", paper="000#1", statement=STATEMENT, scope=("hyp",)
        ),
        ClaimSpec(
            "other",
            tests="paper",
            comparison="bound",
            paper="dong2021",
            statement="rank falls",
            scope="by construction",
        ),
    )
    runs = {}
    for tag, measured, h in (("a", 1.0, 0.5), ("b", 1.01, 0.6), ("c", 2.5, 2.0)):
        led = Ledger(name)
        led.bound("hyp", measured=h, bound=1.0, source="s")
        led.predict(
            "law",
            measured=measured,
            expected=1.0,
            alternative=3.0,
            hypothesis="h",
            se=0.1,
            dof=math.inf,
            within_run="no model",
            source="s",
            why="w",
        )
        runs[tag] = led
    led = Ledger(name)
    led.bound("other", measured=2.0, bound=1.0, source="s")
    runs["d"] = led
    from analysis.claims.ledger import collect

    yield collect("nb", "full", runs)
    specs._REGISTRY.pop(name, None)


def test_statements_group_their_runs_and_follow_the_rule(ledger):
    doc = scorecard.scorecard(ledger.claims, lambda c: specs.spec_for(c.context, c.name))
    by_key = {p["key"]: p for p in doc["papers"]}
    seed = by_key["000#1"]
    (st,) = seed["statements"]  # three runs of one statement make one statement
    assert st["statement"] == STATEMENT and len(st["claims"]) == 3
    assert st["counts"] == {"agrees": 2, "disagrees": 0, "undecided": 0, "out_of_scope": 1}
    assert st["verdict"] == "agrees" and st["line"] == "agrees at tiny scale in 2 of 3 claims (1 out of scope)"
    assert seed["scope"] == {"met": 2, "not_met": 1, "undecided": 0}
    dong = by_key["dong2021"]
    assert dong["statements"][0]["verdict"] == "disagrees"
    assert dong["line"] == "1 disagree (with papers' results)"
    assert doc["headline"] == "2 papers, 2 statements: 1 agree, 1 disagree, 0 undecided, 0 out of scope"
    assert "disagrees when any of its claims disagrees" in doc["rule"]  # papers.json states its rule
    rows = scorecard.table(doc)
    assert len(rows) == 4 and rows[2].startswith("| `000#1` The prompt-forgetting")


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        (["agrees", "disagrees", "out_of_scope"], "disagrees"),
        (["agrees", "undecided"], "agrees"),
        (["undecided", "out_of_scope"], "undecided"),
        (["out_of_scope"], "out_of_scope"),
    ],
)
def test_statement_rule(verdicts, expected):
    assert scorecard.statement_verdict(verdicts) == expected


def test_one_paper_as_text_and_an_unknown_one_refused(ledger):
    doc = scorecard.scorecard(ledger.claims, lambda c: specs.spec_for(c.context, c.name))
    text = scorecard.format_paper(doc, "000#1")
    assert text.splitlines()[1] == "  1 of 1 statements agree at tiny scale; 1 scope checks not met"
    assert "out_of_scope  card_probe[c]/law: outside the theorem's hypotheses: hyp fails" in text
    with pytest.raises(ValueError, match="no claims test paper '000#2'"):
        scorecard.format_paper(doc, "000#2")


def test_claims_paper_prints_the_committed_scorecard(capsys):
    doc = json.loads((REPO / "figures" / "papers.json").read_text())
    key = max(doc["papers"], key=lambda p: p["claims"])["key"]
    assert main(["claims", "--paper", key]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{key}: ") and "scope checks:" in out
    assert main(["claims", "--paper", "999#1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "paper must be a key" in err


def test_the_gallery_has_the_scorecard_table_and_a_section_per_paper(ledger):
    """The figures' README: the per-paper table, then each paper's line, statements and figure links."""
    from analysis.figures.gallery import _paper_sections

    doc = scorecard.scorecard(ledger.claims, lambda c: specs.spec_for(c.context, c.name))
    text = "\n".join(_paper_sections(doc))
    assert text.startswith("### `000#1` The prompt-forgetting")
    assert f"- **agrees** (derivation; 3 claims): {STATEMENT} — agrees at tiny scale in 2 of 3 claims" in text
    assert "### `dong2021` Dong et al. 2021" in text


def test_an_at_scale_finding_not_reproduced_small_is_quoted_with_its_trend():
    from analysis.claims.scorecard import paper_line, statement_line

    reason = "contradicts the paper's own result: measured 0.11; at this scale only: the gap falls 0.08 per doubling"
    claims = [{"verdict": "disagrees", "tests": "paper", "reason": reason}]
    line = statement_line("disagrees", claims)
    assert line.startswith("not reproduced at tiny scale in 1 of 1 claims (papers' results)")
    assert line.endswith("at this scale only: the gap falls 0.08 per doubling")
    plain = statement_line("disagrees", [{"verdict": "disagrees", "tests": "paper", "reason": "measured 0.11"}])
    assert plain.startswith("disagrees in 1 of 1 claims")
    statements = [{"verdict": "disagrees", "line": line, "claims": claims}]
    assert "1 of them not reproduced at tiny scale only" in paper_line(statements, {})
