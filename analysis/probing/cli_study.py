"""The command ``python -m probes study NAME [STUDY ...]``: the listing of a probe's studies, the parsing of a study's
options and parameters (:func:`parse_study_args`: every value checked and every config built before anything runs;
a bad input is a ``ValueError`` of one line, which :mod:`analysis.probing.cli` reports with exit 2) and the run with
its summary or JSON (:func:`study_command`)."""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from analysis.core.io import atomic_write_json, to_jsonable
from analysis.probing.cli_common import renamed_option
from analysis.probing.options import add_options
from analysis.probing.study_runs import (
    PRESETS,
    Study,
    _plan,
    _varied,
    get_study,
    run_study,
    studies,
    study_configs,
    study_params,
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # a usage error: one line, exit 2 (analysis.probing.cli)
        raise ValueError(message)


def _listing(module: Any, probe_name: str) -> str:
    known = studies(module)
    if not known:
        return f"probe {probe_name} declares no studies"
    lines = [f"studies of probe {probe_name} (python -m probes study {probe_name} STUDY [--preset smoke|full]):"]
    for st in known.values():
        params = ", ".join(f"{p.name}={p.default!r}" for p in study_params(st).values())
        fig = f"; figure {st.figure}" if st.figure else ""
        lines.append(f"  {st.name}: {st.description} (parameters: {params or 'none'}{fig})")
    return "\n".join(lines)


def _parse_param(study: Study, p: inspect.Parameter, text: str) -> Any:
    kind = type(p.default) if p.default is not inspect.Parameter.empty else str
    try:
        if kind is bool:
            if text.lower() not in ("true", "false"):
                raise ValueError
            return text.lower() == "true"
        return kind(text)
    except ValueError:
        raise ValueError(
            f"study {study.name}: --{p.name.replace('_', '-')} must be a {kind.__name__}, got {text!r}"
        ) from None


def parse_study_args(module: Any, probe_name: str, args: Sequence[str]) -> dict[str, Any] | str:
    """The parsed ``study`` command (``ValueError``, one line, on any bad input), or the listing text when
    no study is named. Every value is checked and the configs built before anything runs."""
    if not args or args[0] in ("-h", "--help"):
        return _listing(module, probe_name)
    study = get_study(module, args[0])
    parser = _Parser(prog=f"python -m probes study {probe_name} {study.name}", allow_abbrev=False)
    scheduler = {
        "default": "none",
        "metavar": "none|local|tcp://HOST:PORT",
        "help": "none: serially in this process (default); local: a LocalCluster of processes; tcp://HOST:PORT: a "
        "running dask scheduler",
    }
    add_options(
        parser,
        *("--preset", "--json", "--scheduler", "--workers", "--no-progress"),
        preset={"choices": PRESETS},
        scheduler=scheduler,
        workers={"type": int},
    )
    params = study_params(study)
    for p in params.values():
        parser.add_argument("--" + p.name.replace("_", "-"), dest=f"param__{p.name}", metavar="VALUE")
    ns, extra = parser.parse_known_args(list(args[1:]))
    if extra:
        if renamed := renamed_option(module.Config, extra[0], allowed=params):
            raise ValueError(f"{renamed}, for study {study.name}")
        allowed = ", ".join("--" + n.replace("_", "-") for n in params)
        raise ValueError(f"unknown option {extra[0].split('=')[0]} for study {study.name}; its parameters: {allowed}")
    values = {}
    for p in params.values():
        text = getattr(ns, f"param__{p.name}")
        if text is not None:
            values[p.name] = _parse_param(study, p, text)
    _m, _s, _p, base, grid = _plan(module, study.name, ns.preset, values)
    sets = _varied(study, ns.preset, base, grid)
    varied = sorted((set(values) & sets) - {"seed"})  # the grid's seeds derive from the given seed
    if varied:  # an option the user typed would be replaced by the grid's values without a word
        option = "--" + varied[0].replace("_", "-")
        raise ValueError(
            f"study {study.name} varies {varied[0]} itself (it sets: {', '.join(sorted(sets))}); drop {option}"
        )
    configs = study_configs(module, study.name, ns.preset, values)  # validates every point
    if ns.workers is not None and (ns.workers < 1 or ns.scheduler != "local"):
        raise ValueError("--workers must be an integer >= 1 and goes with --scheduler local")
    return {
        "module": module,
        "probe": probe_name,
        "study": study,
        "preset": ns.preset,
        "params": values,
        "json": ns.json,
        "scheduler": ns.scheduler,
        "workers": ns.workers,
        "progress": not ns.no_progress,
        "n_points": len(configs),
    }


def study_command(parsed: dict[str, Any]) -> int:
    """Run a parsed ``study`` command: the summary and the ledger (or the JSON with ``--json -``); exit 1 when
    an identity failed (a bug), else 0 (failing predictions are findings)."""
    from analysis.probing.sweep_clients import local_client, remote_client

    kwargs = dict(preset=parsed["preset"], params=parsed["params"], progress=parsed["progress"])
    t0 = time.perf_counter()
    scheduler = parsed["scheduler"]
    if scheduler == "none":
        res = run_study(parsed["module"], parsed["study"].name, **kwargs)
        where = "serially"
    else:
        workers = parsed["workers"] or max(1, min(parsed["n_points"], os.cpu_count() or 1))
        cluster = local_client(workers) if scheduler == "local" else remote_client(scheduler)
        where = f"on a local cluster of {workers} worker(s)" if scheduler == "local" else f"on {scheduler}"
        with cluster as client:
            res = run_study(parsed["module"], parsed["study"].name, client=client, **kwargs)
    wall = time.perf_counter() - t0
    led = res.ledger
    payload = to_jsonable(
        {
            "probe": parsed["probe"],
            "study": res.study.name,
            "preset": res.preset,
            "params": res.params,
            "keys": res.keys,
            "configs": [r.config.to_dict() for r in res.results],
            "checks": [c.to_dict() for c in led.claims],
            "check_summary": led.summary(),
        }
    )
    if parsed["json"] == "-":
        sys.stdout.write(json.dumps(payload, indent=2, allow_nan=False) + "\n")
    else:
        if parsed["json"]:
            atomic_write_json(parsed["json"], payload)
        cached = sum(res.from_cache)
        print(
            f"study {parsed['probe']} {res.study.name} (preset {res.preset}) {where}: {len(res.results)} runs, "
            f"{len(res.results) - cached} computed, {cached} from cache; {wall:.1f} s"
        )
        print(led.report())
        if parsed["json"]:
            print(f"wrote {parsed['json']}")
    broken = led.broken
    if broken:
        print(f"{len(broken)} identity claim(s) failed (a bug): {', '.join(c.name for c in broken)}", file=sys.stderr)
        return 1
    return 0
