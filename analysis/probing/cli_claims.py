"""The command ``python -m probes claims``: the committed claims (per probe, or one probe's, filtered by status, role
or verdict), a probe's declared claims (``--declared``), one paper's scorecard (``--paper``), or the same for a folder
of your own claims (``--folder``); as text or JSON. Read only: nothing runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from analysis.claims.ledger import ROLES
from analysis.core.io import atomic_write_json
from analysis.probing.cli_common import UsageError, _check_file_output, _Parser
from analysis.probing.options import add_options


def _claims(args: list[str]) -> int:
    """``python -m probes claims [NAME ...]``: the committed ledgers, read only (:mod:`analysis.probing.inventory`),
    or with
    ``--declared`` NAME's declared claims (:mod:`analysis.claims.specs`), or with ``--paper`` one paper's scorecard."""
    from analysis.claims.papers import paper
    from analysis.claims.scorecard import format_paper
    from analysis.claims.specs import describe
    from analysis.probing import inventory
    from analysis.probing.registry import declarations_of

    parser = _Parser(prog="python -m probes claims", allow_abbrev=False)
    parser.add_argument("name", nargs="?")
    parser.add_argument("--status")
    parser.add_argument("--role")
    parser.add_argument("--verdict")
    parser.add_argument("--source", action="store_true")
    parser.add_argument("--declared", action="store_true")
    parser.add_argument("--paper")
    parser.add_argument("--folder")
    add_options(parser, "--json", json={"help": "write the claims as JSON to PATH, or stdout for -"})
    ns = parser.parse_args(args)
    if ns.json not in (None, "-"):
        if Path(ns.json).is_dir():
            raise UsageError(f"--json: {ns.json} is a folder; give a file name such as {Path(ns.json) / 'claims.json'}")
        _check_file_output(Path(ns.json), "--json")
    try:
        if ns.folder is not None:
            from analysis.claims.own import folder_scorecard
            from analysis.probing.registry import load_declarations

            load_declarations()  # a workbench ledger in the folder is read with its probe's declarations
            if ns.declared:
                raise ValueError("--folder takes no --declared: a folder's declarations are read with its claims")
            doc = folder_scorecard(ns.folder)  # one line naming the problem when the folder holds no ledger
        if ns.paper is not None:
            if ns.name is not None or ns.status or ns.role or ns.declared:
                raise ValueError(
                    "--paper takes no probe name, --status, --role or --declared: python -m probes claims --paper KEY"
                )
            if ns.folder is None:
                doc = inventory.committed_scorecard()
            rows = next((p for p in doc["papers"] if p["key"] == paper(ns.paper).key), None)
            text = format_paper(doc, ns.paper)
        elif ns.declared:
            if ns.name is None or ns.status:
                raise ValueError(
                    "--declared needs a probe name and takes no --status (nothing has run): "
                    "python -m probes claims NAME --declared [--role R]"
                )
            if ns.role is not None and ns.role not in ROLES:
                raise ValueError(f"--role must be one of {', '.join(ROLES)}, got {ns.role!r}")
            chosen = [s for s in declarations_of(ns.name) if ns.role is None or s.records_as(ns.role)]
            rows, text = [s.to_dict() for s in chosen], describe(chosen, details=ns.source)
        elif ns.name is None:
            claims = inventory.committed_claims(ns.folder)
            if ns.status or ns.role or ns.verdict:
                raise ValueError(
                    "--status, --role and --verdict need a probe name "
                    "(python -m probes claims NAME --verdict disagrees)"
                )
            rows, text = claims, "\n".join(inventory.summary_lines(claims))
            if ns.folder is not None:
                text += f"\nscorecard: {doc['headline']} (python -m probes claims --folder DIR --paper KEY)"
        else:
            claims = inventory.committed_claims(ns.folder)
            rows = inventory.select(claims, ns.name, ns.status, ns.role, ns.verdict)
            text = inventory.format_claims(rows, source=ns.source)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if ns.json == "-":
        sys.stdout.write(json.dumps(rows, indent=2, allow_nan=False) + "\n")
        return 0
    if ns.json:
        atomic_write_json(ns.json, rows)
    print(text or "(no claims)")
    return 0
