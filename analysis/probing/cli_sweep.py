"""The command ``python -m probes sweep NAME``: its parser, the grid, seeds and fixed fields from the command line
(validated as a whole before anything runs), the scheduler and workers, the run (:func:`analysis.probing.sweep.sweep`)
and the summary (exit 1 naming the failed points and failing identities). See :mod:`analysis.probing.sweep`."""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from analysis.core.devices import cuda_available
from analysis.probing.cli_common import UsageError, _check_file_output, _field_options, _Parser, renamed_option
from analysis.probing.options import add_options
from analysis.probing.sweep import SWEEP_OPTIONS
from analysis.probing.sweep import sweep as run_sweep
from analysis.probing.sweep_clients import local_client, remote_client
from analysis.probing.sweep_dataset import write_netcdf
from analysis.probing.sweep_plan import SEED_FIELD, Plan, parse_grid_arg, parse_seeds, plan
from analysis.probing.sweep_run import needs_gpu


def _sweep_parser(module: Any, name: str) -> _Parser:
    parser = _Parser(
        prog=f"python -m probes sweep {name}",
        allow_abbrev=False,
        description=f"Sweep probe {name} over a grid of config values (see analysis.probing.sweep).",
    )
    add_options(parser, "--preset")
    parser.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="FIELD=V1,V2,...",
        help="values of one config field (a list-valued field: FIELD='A,B;C,D'); repeatable",
    )
    parser.add_argument("--seeds", metavar="0-4|0,2,5", help="set the probe's seed field: a range or a list")
    parser.add_argument("--out", required=True, metavar="PATH.nc", help="netCDF file to write (atomically)")
    add_options(parser, "--scheduler", "--workers", "--no-progress")
    group = parser.add_argument_group("fixed config fields (the same for every point)")
    _field_options(group, module, with_default=False, skip=SWEEP_OPTIONS)  # a skipped field can be swept (--grid)
    return parser


def _sweep_plan(module: Any, name: str, ns: argparse.Namespace) -> tuple[dict, dict, tuple | None, Plan]:
    """(fixed fields, grid, seeds, plan) from the parsed command line; UsageError on any bad value."""
    overrides = {}
    for spec in module.Config.field_specs():
        text = getattr(ns, f"field__{spec.name}", None)
        if text is not None:
            try:
                overrides[spec.name] = spec.parse(text)
            except ValueError as e:
                raise UsageError(f"probe {name}: {e}") from None
    grid: dict[str, list[Any]] = {}
    try:
        for text in ns.grid:
            field_name, vals = parse_grid_arg(module.Config, text, name)
            if field_name in grid:
                raise ValueError(f"--grid {field_name} is given twice")
            if field_name in overrides:
                option = "--" + field_name.replace("_", "-")
                raise ValueError(f"{field_name} is both swept (--grid) and fixed ({option}); give one")
            grid[field_name] = vals
        seeds = parse_seeds(ns.seeds) if ns.seeds is not None else None
        if seeds is not None and SEED_FIELD in overrides:
            raise ValueError("--seeds and --seed are both given; give one")
        return overrides, grid, seeds, plan(module, grid, preset=ns.preset, seeds=seeds, base=overrides)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _sweep_where(ns: argparse.Namespace, n_points: int) -> tuple[str, int | None]:
    """(scheduler, local workers) from --scheduler and --workers; UsageError on a bad value."""
    scheduler = ns.scheduler.strip()
    if scheduler not in ("local", "none") and not re.fullmatch(r"(tcp|tls)://[^\s/]+:\d+/?", scheduler):
        raise UsageError(f"--scheduler must be local, none or tcp://HOST:PORT, got {ns.scheduler!r}")
    workers = None
    if ns.workers is not None:
        if not re.fullmatch(r"\d+", ns.workers.strip()):
            raise UsageError(f"--workers must be an integer >= 0, got {ns.workers!r}")
        workers = int(ns.workers)
        if scheduler != "local":
            raise UsageError(f"--workers applies to --scheduler local only, got --scheduler {scheduler}")
    if scheduler == "local" and workers is None:
        workers = max(1, min(n_points, os.cpu_count() or 1))
    return scheduler, workers


def _sweep(module: Any, name: str, args: list[str]) -> int:
    """``python -m probes sweep NAME ...`` (see :mod:`analysis.probing.sweep`): the whole grid is validated, and
    ``--out`` checked, before any point runs or any cluster starts."""
    parser = _sweep_parser(module, name)
    try:
        ns, extra = parser.parse_known_args(args)
    except SystemExit as e:  # --help
        return int(e.code or 0)
    if extra:
        if renamed := renamed_option(module.Config, extra[0]):
            raise UsageError(f"{renamed}, for probe {name} sweep")
        raise UsageError(
            f"unknown option {extra[0].split('=')[0]} for probe {name} sweep; "
            "use --grid FIELD=V1,V2 for fields to sweep, --field-name VALUE for fixed ones"
        )
    if not ns.grid and ns.seeds is None:
        raise UsageError("sweep needs at least one --grid FIELD=V1,V2,... or --seeds")
    overrides, grid, seeds, p = _sweep_plan(module, name, ns)
    scheduler, workers = _sweep_where(ns, len(p.configs))
    if needs_gpu(p) and scheduler in ("local", "none") and not cuda_available():
        raise UsageError("--device cuda: torch sees no CUDA device here; allowed: cpu, auto")
    out = Path(ns.out)
    if out.is_dir():
        raise UsageError(f"--out: {out} is a folder; give a file name such as {out / 'sweep.nc'}")
    _check_file_output(out, "--out")
    outcomes: list[dict] = []
    kwargs = dict(preset=ns.preset, seeds=seeds, base=overrides, progress=not ns.no_progress, outcomes=outcomes)
    t0 = time.perf_counter()
    try:
        if scheduler == "none" or workers == 0:
            where, ds = "serially", run_sweep(module, grid, **kwargs)
        else:
            where = f"on a local cluster of {workers} worker process(es)" if scheduler == "local" else f"on {scheduler}"
            cluster = local_client(workers, gpus=needs_gpu(p)) if scheduler == "local" else remote_client(scheduler)
            with cluster as client:
                ds = run_sweep(module, grid, client=client, **kwargs)
    except OSError as e:  # e.g. the scheduler cannot be reached
        print(f"probes: error: sweep {name}: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    wall = time.perf_counter() - t0
    try:
        write_netcdf(ds, out)
    except OSError as e:
        print(f"probes: error: --out: cannot write {out}: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    return _sweep_report(name, p, outcomes, where, wall, out)


def _sweep_report(name: str, p: Plan, outcomes: list[dict], where: str, wall: float, out: Path) -> int:
    """The summary line; failed points and failing identities on stderr (exit 1), else exit 0."""
    n_points = len(p.configs)
    n_cached = sum(1 for o in outcomes if o.get("ok") and o.get("from_cache"))
    n_failed = sum(1 for o in outcomes if not o.get("ok"))
    print(
        f"sweep {name} (preset {p.base.preset_name}) {where}: {n_points} points over "
        f"{' x '.join(f'{d}={len(p.values[d])}' for d in p.dims)}; {n_points - n_cached - n_failed} computed, "
        f"{n_cached} from cache, {n_failed} failed; {wall:.1f} s"
    )
    print(f"wrote {out}")
    status = 0
    labels = [p.label(point) for _, point in p.points()]
    if n_failed:
        print(f"probes: sweep {name}: {n_failed} of {n_points} point(s) failed:", file=sys.stderr)
        for label, o in zip(labels, outcomes, strict=True):
            if not o.get("ok"):
                print(f"  {label}: {o['error']}", file=sys.stderr)
        status = 1
    broken = [(label, o["broken"]) for label, o in zip(labels, outcomes, strict=True) if o.get("ok") and o["broken"]]
    if broken:
        text = "; ".join(f"{label}: {', '.join(names)}" for label, names in broken)
        print(f"probes: sweep {name}: identity claim(s) failed (a bug) at {text}", file=sys.stderr)
        status = 1
    return status
