"""Compare the verdicts of probe runs at another seed with the committed ledger's: how many evaluated claims change.

Usage (from the repository root)::

    python -m probes run softmax_alternatives --preset full --seed 1000 --json build/reseed/softmax_alternatives.json
    python scripts/compare_verdicts.py build/reseed/*.json [--committed figures]

Each JSON is a ``python -m probes run ... --json`` output; its claims are matched by name with the committed
claims of the same probe in its untagged context (the probe's own preset run, as the notebooks record it). Claims
not evaluated in either are left out. Prints the count, the transition table and one line per changed verdict; exit
code 2 with one line for a file that is not a run's JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis.probing import inventory  # noqa: E402


def compare(runs: list[dict[str, Any]], committed: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"compared", "transitions": {(before, after): n}, "changed": [lines]}`` over every run's claims."""
    transitions: Counter = Counter()
    changed = []
    for run in runs:
        probe = run["probe"]
        base = {c["name"]: c for c in committed if c["probe"] == probe and not c["tag"]}
        for c in run["checks"]:
            old = base.get(c["name"])
            if old is None or "not_evaluated" in (c["status"], old["status"]):
                continue
            transitions[(old["verdict"], c["verdict"])] += 1
            if old["verdict"] != c["verdict"]:
                changed.append(f"{probe}/{c['name']}: {old['verdict']} -> {c['verdict']} ({c['verdict_reason']})")
    return {"compared": sum(transitions.values()), "transitions": dict(transitions), "changed": changed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="python -m probes run ... --json outputs")
    parser.add_argument("--committed", type=Path, default=None, help="folder of the committed ledgers (figures/)")
    ns = parser.parse_args(argv)
    runs = []
    for path in ns.runs:
        try:
            run = json.loads(path.read_text())
            run["probe"], run["checks"]  # noqa: B018  (the two fields a run's JSON has)
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"compare_verdicts: error: {path}: not a probe run's JSON ({type(e).__name__})", file=sys.stderr)
            return 2
        runs.append(run)
    out = compare(runs, inventory.committed_claims(ns.committed))
    n_changed = len(out["changed"])
    print(f"{out['compared']} evaluated claims compared, {n_changed} changed verdict")
    for (a, b), n in sorted(out["transitions"].items()):
        print(f"  {a:>13} -> {b:<13} {n}")
    for line in out["changed"]:
        print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
