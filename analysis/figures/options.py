"""The figure pipeline's command line: its options, the notebooks it selects and what happened to each."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.core.io import (
    unwritable,
)
from analysis.core.paths import BUILD, NOTEBOOKS, REPO, gallery_dir
from analysis.core.provenance import SOURCE_TREES

NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"
PRESETS = ("smoke", "full")
# a notebook of the user's own claims (analysis.claims.own) saves them into a folder of its own, never into the gallery
OWN_CLAIMS = (
    "_Its claims are yours: it saves its ledger, figures and scorecard into its own folder (parameter `folder`, "
    "default `build/your_claims/`; `python -m probes claims --folder DIR`), never into this gallery._"
)
SKIP_TAGS = {"injected-parameters", "papermill-error-cell-tag"}  # cells papermill adds to the executed copy
STAMP_VERSION = 1  # bump when the meaning of a stamp changes
CLAIMS_DIR = "claims"  # figures/claims/<notebook>.md: every claim of a notebook, figure by figure


@dataclass
class NotebookRun:
    """What happened to one notebook in this run (one entry of the manifest)."""

    name: str  # e.g. "00_overview"
    path: str  # the notebook file
    status: str = "pending"  # "ran" | "up to date" | "failed" | "pending"
    wall_s: float | None = None  # seconds spent executing (for "up to date": the run that made the stamp)
    key: str = ""  # resume key (hash of the notebook's inputs)
    error: str | None = None  # one-line failure message
    outputs: list[str] = field(default_factory=list)  # files it wrote into the output folder
    executed: str | None = None  # executed copy under build/notebooks/
    log: str | None = None  # papermill's log


# ----------------------------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------------------------
def parse_value(text: str) -> Any:
    """A ``-p`` value: JSON when it parses (``1``, ``0.5``, ``true``, ``[1, 2]``), ``True``/``False``/
    ``None`` as in Python, otherwise the string itself."""
    python_words = {"True": True, "False": False, "None": None}
    if text in python_words:
        return python_words[text]
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="make_figures.py",
        description="Execute the notebooks with papermill and regenerate figures, claims.json and the gallery.",
    )
    p.add_argument("--preset", choices=PRESETS, default="full", help="injected into every notebook (default full)")
    p.add_argument(
        "-p",
        "--param",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="extra parameter injected into every notebook (value parsed as JSON, else a string)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="figures folder (default: $WORKBENCH_FIGURES, else <repo>/figures for the full preset and "
        "build/figures-<preset> for any other, so that smoke figures never replace the committed gallery)",
    )
    p.add_argument("--notebooks", type=Path, default=NOTEBOOKS, help="folder of NN_*.ipynb notebooks")
    p.add_argument("--build", type=Path, default=BUILD, help="folder for executed notebooks, logs, stamps")
    p.add_argument("--only", nargs="+", default=None, metavar="NAME", help="run only these notebooks (by name)")
    p.add_argument("--force", action="store_true", help="re-run notebooks even when up to date")
    p.add_argument(
        "--sources",
        nargs="+",
        type=Path,
        default=[REPO / t for t in SOURCE_TREES],
        metavar="DIR",
        help="source trees whose change makes every notebook out of date (default: analysis probes)",
    )
    p.add_argument("--timeout", type=float, default=7200.0, help="seconds allowed per notebook (default 7200)")
    p.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=None,
        help="notebooks executed at once (default: the usable CPU cores, at most the number of notebooks); "
        "each kernel gets cores // jobs torch threads",
    )
    p.add_argument(
        "--prepare-only",
        type=Path,
        default=None,
        metavar="DIR",
        help="write parameterised copies of the notebooks into DIR without executing them",
    )
    p.add_argument("--collect-only", action="store_true", help="only gather claims and rewrite the gallery")
    p.add_argument("--strict", action="store_true", help="exit 1 if any claim fails (default: only identities)")
    return p


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    params: dict[str, Any] = {"preset": args.preset}
    for name, value in args.param:
        if not name.isidentifier():
            parser.error(f"-p: parameter name must be a Python identifier, got {name!r}")
        if name == "preset":
            parser.error("-p: set the preset with --preset smoke|full")
        params[name] = parse_value(value)
    args.params = params
    if args.timeout <= 0:
        parser.error(f"--timeout must be > 0 seconds, got {args.timeout}")
    if args.jobs is not None and args.jobs < 1:
        parser.error(f"--jobs must be an integer >= 1, got {args.jobs}")
    if not args.notebooks.is_dir():
        parser.error(f"--notebooks: no such folder {args.notebooks}")
    if args.out is None:
        committed = args.preset == "full" or os.environ.get("WORKBENCH_FIGURES")
        args.out = gallery_dir() if committed else BUILD / f"figures-{args.preset}"
    args.out = args.out.resolve()
    args.build = args.build.resolve()
    if args.prepare_only is None:  # refuse before any notebook runs: a run whose output cannot land is lost
        for option, folder in (("--out", args.out), ("--build", args.build)):
            problem = unwritable(folder)
            if problem:
                parser.error(f"{option}: cannot write to {folder}: {problem}")
    return args


def discover(folder: Path, only: list[str] | None) -> tuple[list[Path], list[Path]]:
    """All ``NN_*.ipynb`` in ``folder`` (sorted) and the subset selected by ``--only``."""
    notebooks = sorted(folder.glob(NOTEBOOK_GLOB))
    if only is None:
        return notebooks, notebooks
    by_name = {nb.stem: nb for nb in notebooks}
    unknown = [n for n in only if n.removesuffix(".ipynb") not in by_name]
    if unknown:
        print(
            f"make_figures.py: error: --only: no notebook named {unknown}; available: {sorted(by_name)}",
            file=sys.stderr,
        )
        raise SystemExit(2)
    return notebooks, [by_name[n.removesuffix(".ipynb")] for n in only]
