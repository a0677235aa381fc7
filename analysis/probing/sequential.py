"""The sequential design: a claim undecided at one look is run again at its next, up to its declared budget.

A claim whose band holds both its prediction and the alternative is not evidence either way, and the remedy is
more seeds, not a grey-zone label. A declaration (:class:`analysis.claims.specs.ClaimSpec`) may name ``looks``, the
replicate counts at which the claim is judged (the last its budget), and ``replicates``, the config field that
counts them. :func:`decided_run` runs a configuration through the result cache, and while some claim with a
sequential design is undecided at a look that is not its last, runs the configuration again with that field
raised to the claim's next look (every field to the largest next look its claims ask for). The result returned
is the last one, its ledger judged at the replicate counts it reached; ``meta["sequential"]`` records each
look taken and the claims that asked for it.

Each look's band is at the per-look coverage of :func:`analysis.claims.evidence.sequential_coverage` (the ledger applies
it from the declaration), so a claim's chance of excluding a true value at any look stays 5%, the one error
rate of the workbench. A configuration whose count is not a look of the claim (a smoke run, a user's own count)
is judged as it is: the design applies to the schedule it declares. Every look goes through the result cache,
and trained models through the checkpoint cache, so the next look trains only the seeds it adds and a warm
rerun computes nothing.
"""

from __future__ import annotations

import os
from typing import Any

from analysis.claims.evidence import next_look
from analysis.claims.specs import declarations
from analysis.probing.base import Result, _resolve, _resolve_config, cached_run, run_probe

__all__ = ["decided_run", "next_looks"]


def next_looks(name: str, result: Result) -> dict[str, tuple[int, list[str]]]:
    """``{config field: (next replicate count, [claims asking for it])}`` for the undecided claims of ``result``
    (of probe ``name``) whose sequential design has a look after the one the run is at; empty when none."""
    decl = declarations(name)
    if decl is None:
        return {}
    out: dict[str, tuple[int, list[str]]] = {}
    for claim in result.ledger.claims:
        if claim.verdict != "undecided" or claim.status == "not_evaluated":
            continue
        spec = decl.lookup(claim.name)
        if spec is None or not spec.looks:
            continue
        n = result.config.value_of(spec.replicates)
        nxt = next_look(spec.looks, n)
        if nxt is None:
            continue
        current, names = out.get(spec.replicates, (nxt, []))
        out[spec.replicates] = (max(current, nxt), [*names, f"{claim.context}/{claim.name}"])
    return out


def decided_run(
    module_or_name: Any,
    config: Any = None,
    cache_root: str | os.PathLike | None = None,
    progress: bool = True,
    cache: bool = True,
) -> Result:
    """``config``'s result after the sequential design of its claims (module docstring): through the result cache
    (:func:`analysis.probing.base.cached_run`), or, with ``cache=False``, computed afresh at every look."""
    module, name = _resolve(module_or_name)
    config = _resolve_config(module, name, config)

    def run(c: Any) -> Result:
        return (
            cached_run(module, c, cache_root=cache_root, progress=progress)
            if cache
            else run_probe(module, c, progress=progress)
        )

    result = run(config)
    taken: list[dict[str, Any]] = []
    while todo := next_looks(name, result):
        changes = {field: n for field, (n, _) in todo.items()}
        taken.append(
            {
                "from": {f: result.config.value_of(f) for f in changes},
                "to": changes,
                "undecided": sorted(c for _, cs in todo.values() for c in cs),
            }
        )
        result = run(result.config.replace(**changes))
    if taken:
        result.meta["sequential"] = taken
    return result
