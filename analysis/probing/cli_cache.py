"""The command ``python -m probes cache ls|size|prune``: the workbench cache's entries (kind, key, probe or model,
size, age since last use), their sizes per kind, and pruning them (each atomically, never one in use;
``--older-than DAYS``, ``--keep-figures``). See :mod:`analysis.training.cache` for the entries themselves."""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

from analysis.core.paths import cache_dir, gallery_dir
from analysis.probing.cli_common import UsageError, _Parser
from analysis.training import cache
from analysis.training.cache import KINDS

CACHE_COMMANDS = {
    "ls": "List the cache entries: kind, key, probe or model, size, age (since last use).",
    "size": "Entries and bytes per kind.",
    "prune": "Delete cache entries, each atomically; entries in use by another process are kept.",
}


def _days(text: str) -> float:
    """``--older-than`` value: a finite number of days >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a number of days >= 0, got {text!r}")
    return value


def _cache(args: list[str]) -> int:
    if not args or args[0] not in CACHE_COMMANDS:
        got = f"unknown cache command {args[0]!r}" if args else "cache needs a command"
        raise UsageError(f"{got}; allowed: {', '.join(CACHE_COMMANDS)}")
    command, rest = args[0], args[1:]
    parser = _Parser(prog=f"python -m probes cache {command}", description=CACHE_COMMANDS[command], allow_abbrev=False)
    if command == "prune":
        parser.add_argument(
            "--older-than",
            type=_days,
            metavar="DAYS",
            help="only entries unused (not written or read) for at least DAYS days",
        )
        parser.add_argument(
            "--keep-figures",
            action="store_true",
            help="keep every entry the figures' sidecars name, and what it was computed from",
        )
    try:
        ns = parser.parse_args(rest)
    except SystemExit as e:  # --help
        return int(e.code or 0)
    root = cache_dir()
    keep: set[str] = set()
    if command == "prune" and ns.keep_figures:
        try:
            keep = cache.figure_inputs(gallery_dir())
        except ValueError as e:
            raise UsageError(f"--keep-figures: {e}") from None
    try:
        if command == "ls":
            return _cache_ls(cache.entries(root), root)
        if command == "size":
            return _cache_size(cache.entries(root), root)
        report = cache.prune(root, older_than_days=ns.older_than, keep=keep)
    except OSError as err:  # e.g. a read-only cache
        print(f"probes: error: cache {command}: {' '.join(str(err).split())}", file=sys.stderr)
        return 1
    for entry in report.removed:
        print(f"removed {entry.kind:<10}  {entry.key:<20}  {entry.name or '-'}  {_bytes(entry.size)}")
    freed = _bytes(sum(e.size for e in report.removed))
    parts = [f"removed {len(report.removed)} entries ({freed}) from {root}"]
    if ns.keep_figures:
        parts.append(f"kept {len(report.kept)} used by the figures")
    if ns.older_than is not None:
        parts.append(f"kept {len(report.recent)} used within {ns.older_than:g} days")
    if report.busy:
        parts.append(f"skipped {len(report.busy)} in use by another process")
    print("; ".join(parts))
    return 0


def _cache_ls(found: list, root: Path) -> int:
    if not found:
        print(f"cache {root} is empty")
        return 0
    table = [("kind", "key", "name", "size", "age")]
    table += [(e.kind, e.key or "-", e.name or "-", _bytes(e.size), _age(e.used)) for e in found]
    w = [max(len(row[i]) for row in table) for i in range(4)]
    for kind, key, name, size, age in table:
        print(f"{kind:<{w[0]}}  {key:<{w[1]}}  {name:<{w[2]}}  {size:>{w[3]}}  {age}")
    print(f"{len(found)} entries, {_bytes(sum(e.size for e in found))} in {root}")
    return 0


def _cache_size(found: list, root: Path) -> int:
    rows = []
    for kind in KINDS:
        mine = [e for e in found if e.kind == kind]
        if mine:
            rows.append((kind, str(len(mine)), _bytes(sum(e.size for e in mine))))
    rows.append(("total", str(len(found)), _bytes(sum(e.size for e in found))))
    widths = [max(len(r[i]) for r in [("kind", "entries", "size"), *rows]) for i in range(3)]
    for kind, n, size in [("kind", "entries", "size"), *rows]:
        print(f"{kind:<{widths[0]}}  {n:>{widths[1]}}  {size:>{widths[2]}}")
    print(f"cache folder: {root}")
    return 0


def _bytes(n: float) -> str:
    if n < 1000:
        return f"{n:.0f} B"
    for unit in ("kB", "MB", "GB", "TB"):
        n /= 1000
        if n < 1000 or unit == "TB":
            break
    return f"{n:.1f} {unit}"


def _age(used: float) -> str:
    s = max(0.0, time.time() - used)
    for limit, unit, div in ((120, "s", 1), (7200, "min", 60), (172800, "h", 3600)):
        if s < limit:
            return f"{s / div:.0f} {unit}"
    return f"{s / 86400:.1f} d"
