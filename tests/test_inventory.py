"""The claims inventory (analysis.probing.inventory, python -m probes claims): the committed ledgers, read only."""

from __future__ import annotations

import json

import pytest

import probes
from analysis.claims.ledger import ROLES, STATUSES, VERDICTS, Ledger
from analysis.notebook.plotting import save_ledger
from analysis.probing import inventory
from analysis.probing.cli import main


def test_probe_of_a_context():
    assert inventory.probe_of("prompt_forgetting[depth_law]") == ("prompt_forgetting", "depth_law")
    assert inventory.probe_of("icl_gd") == ("icl_gd", "")


def test_committed_claims_name_their_probe_and_notebook():
    claims = inventory.committed_claims()
    assert claims, "the committed figures hold claims"
    notebook_only = {"overview", "real_models"}  # ledgers a notebook assembles from several probes' runs
    assert {c["probe"] for c in claims} - notebook_only <= set(probes.available())
    for c in claims:
        assert c["role"] in ROLES and c["status"] in STATUSES and c["statement"] and c["source"], c
        assert c["verdict"] in VERDICTS and c["verdict_reason"], c
        assert c["notebook"][:2].isdigit()


def test_a_ledger_saved_by_a_notebook_is_listed(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_FIGURES", str(tmp_path))
    led = Ledger("toy_probe", preset="full")
    led.identity(
        "sum_is_one",
        measured=1.0,
        expected=1.0,
        atol=1e-12,
        source="algebra",
        why="exact",
        statement="the weights sum to one",
    )
    tagged = Ledger("toy_probe", preset="full")
    tagged.identity(
        "sum_is_one",
        measured=1.5,
        expected=1.0,
        atol=1e-12,
        source="algebra",
        why="exact",
        statement="the weights sum to one",
        seed="000#1",
    )
    from analysis.claims.ledger import collect

    save_ledger(collect("09_toy", "full", {None: led, "wide": tagged}), notebook="09_toy")
    rows = inventory.select(inventory.committed_claims(tmp_path), "toy_probe")
    assert [(r["tag"], r["status"], r["verdict"], r["notebook"]) for r in rows] == [
        ("", "pass", "agrees", "09_toy"),
        ("wide", "fail", "disagrees", "09_toy"),
    ]
    assert inventory.select(inventory.committed_claims(tmp_path), "toy_probe", verdict="agrees")[0]["tag"] == ""
    assert inventory.select(inventory.committed_claims(tmp_path), "toy_probe", status="fail")[0]["seed"] == "000#1"
    text = inventory.format_claims(rows, source=True)
    assert "sum_is_one[wide]" in text and "seed 000#1" in text and "source: algebra" in text
    (tmp_path / "10_broken.claims.json").write_text("{not json")
    with pytest.raises(ValueError, match="10_broken.claims.json: not a readable claims ledger"):
        inventory.committed_claims(tmp_path)


def test_command_line(capsys, tmp_path):
    assert main(["claims"]) == 0
    out = capsys.readouterr().out
    assert "signal_propagation:" in out and "claims (" in out
    assert main(["claims", "signal_propagation", "--role", "identity", "--json", "-"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(r["role"] == "identity" and r["probe"] == "signal_propagation" for r in rows)
    out_file = tmp_path / "c.json"
    assert main(["claims", "icl_gd", "--json", str(out_file)]) == 0
    assert json.loads(out_file.read_text()) and "icl_gd" not in capsys.readouterr().err
    for argv, msg in (
        (["claims", "nope"], "probe must be one with committed claims"),
        (["claims", "icl_gd", "--status", "bad"], "status must be one of pass"),
        (["claims", "--role", "identity"], "--status, --role and --verdict need a probe name"),
        (["claims", "icl_gd", "--verdict", "refuted"], "verdict must be one of agrees"),
        (["claims", "icl_gd", "--json", str(tmp_path / "missing" / "c.json")], "cannot write to"),
    ):
        assert main(argv) == 2
        [line] = capsys.readouterr().err.strip().splitlines()
        assert msg in line, line
