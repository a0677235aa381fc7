"""The ledger's own mutation test: every prediction that passes against its expected value must fail
when judged against its alternative (``python -m probes run NAME --against-alternatives``), for every
probe under the smoke preset. Also: every claim names a role, a verdict and what it tests, every seed key is in
REFERENCES.md, and every claim but a software identity names a paper of analysis.claims.papers."""

from __future__ import annotations

import json
import re

import pytest

import probes
from analysis.claims.ledger import ROLES, VERDICTS
from analysis.claims.papers import paper
from analysis.claims.specs import TESTS
from analysis.core.paths import REPO
from analysis.probing import cli

NAMES = probes.available()


def _run(capsys, name: str, *extra: str) -> dict:
    rc = cli.main(["run", name, "--preset", "smoke", "--no-progress", "--cache", "--json", "-", *extra])
    out = capsys.readouterr().out
    assert rc == 0, f"{name}: exit {rc}"
    return json.loads(out)


@pytest.fixture(scope="module")
def reference_keys() -> set[str]:
    text = (REPO / "REFERENCES.md").read_text(encoding="utf-8")
    return set(re.findall(r"`(\d{3}#\d+)`", text))


@pytest.mark.parametrize("name", NAMES)
def test_predictions_fail_against_their_alternatives(name, capsys, reference_keys):
    # the session's result cache: the second run reads the first's result (and the probe tests' ones)
    plain = _run(capsys, name)["checks"]
    rejudged = _run(capsys, name, "--against-alternatives")["checks"]
    assert [c["name"] for c in plain] == [c["name"] for c in rejudged]
    for c in plain:
        assert c["role"] in ROLES and c["verdict"] in VERDICTS and c["tests"] in TESTS, c["name"]
        if c.get("seed"):
            assert c["seed"] in reference_keys, f"{name}/{c['name']}: seed {c['seed']} not in REFERENCES.md"
        if c["tests"] != "software":
            assert paper(c["paper"]), c["name"]  # a key of analysis.claims.papers (ValueError otherwise)
    passing = [
        (p, r) for p, r in zip(plain, rejudged, strict=True) if p["role"] == "prediction" and p["status"] == "pass"
    ]
    for p, r in passing:
        assert p["alternative"]["hypothesis"], p["name"]
        assert r["status"] == "fail", f"{name}/{p['name']} passes against its alternative {p['alternative']}"
    # everything that is not a prediction is judged as before
    for p, r in zip(plain, rejudged, strict=True):
        if p["role"] != "prediction":
            assert p == r
