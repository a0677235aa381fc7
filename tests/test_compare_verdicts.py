"""scripts/compare_verdicts.py: a run at another seed against the committed ledger, claim by claim."""

from __future__ import annotations

import json
import subprocess
import sys

from analysis.core.paths import REPO
from analysis.probing import inventory

SCRIPT = REPO / "scripts" / "compare_verdicts.py"


def test_a_changed_verdict_is_counted_and_named(tmp_path):
    committed = [c for c in inventory.committed_claims() if c["probe"] == "softmax_alternatives" and not c["tag"]]
    checks = [dict(c) for c in committed[:3]]
    flipped = "disagrees" if checks[0]["verdict"] != "disagrees" else "agrees"
    checks[0] |= {"verdict": flipped, "verdict_reason": "flipped for the test"}
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"probe": "softmax_alternatives", "checks": checks}))
    out = subprocess.run([sys.executable, SCRIPT, run], capture_output=True, text=True, check=True).stdout
    assert out.startswith("3 evaluated claims compared, 1 changed verdict")
    assert f"softmax_alternatives/{checks[0]['name']}: {committed[0]['verdict']} -> {flipped}" in out
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    res = subprocess.run([sys.executable, SCRIPT, bad], capture_output=True, text=True)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "not a probe run's JSON" in res.stderr
