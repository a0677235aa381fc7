"""The options the subcommands of ``python -m probes`` share (``run``, ``sweep``, ``study``, ``claims``): one
declaration and one help text each, so every subcommand spells and explains them alike."""

from __future__ import annotations

import argparse
from typing import Any

OPTIONS: dict[str, dict[str, Any]] = {
    "--preset": dict(default="full", metavar="smoke|full", help="smoke | full (default: full, the field defaults)"),
    "--json": dict(metavar="PATH|-", help="write the result as JSON to PATH, or stdout for -"),
    "--scheduler": dict(
        default="local",
        metavar="local|none|tcp://HOST:PORT",
        help="local: a LocalCluster of processes (default); none: serially in this process; "
        "tcp://HOST:PORT: a running dask scheduler",
    ),
    "--workers": dict(metavar="N", help="local workers (default: min(points, CPU cores)); 0: serially"),
    "--no-progress": dict(action="store_true", help="no progress bars"),
}


def add_options(parser: argparse.ArgumentParser | Any, *names: str, **changes: dict[str, Any]) -> None:
    """Add the shared options ``names`` (``"--json"``, ...) to ``parser`` (or an argument group); ``changes`` maps
    an option's name without its dashes (``scheduler``, ``no_progress``) to the keywords it takes differently in
    this subcommand."""
    for name in names:
        parser.add_argument(name, **{**OPTIONS[name], **changes.get(name[2:].replace("-", "_"), {})})
