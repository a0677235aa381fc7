"""Declared studies: the experiment behind a figure, by name, from Python and the command line.

A figure's experiment often spans many runs of one probe (depths x independent seeds, a twin pair, a
prompt-length sweep) and a claim made over all of them. Written in a notebook cell, that design is
invisible to ``python -m probes run`` and to anyone reading the probe. A probe declares it instead, in
``STUDIES`` (a dict name -> :class:`Study`):

* ``base(preset, **params)``: the configuration every run starts from; its keyword parameters are the
  notebook's parameter cell (``seed``, ``layers``...), so the notebook and the command line build the
  same configs (and so reach the same result-cache entries);
* ``grid(preset, base)``: the fields varied, ``{field: values}`` (``seed`` included: independent
  replicate seeds);
* ``combine(results)``: the runs' results, in grid order, into the study's dataset;
* ``claims(combined)``: the study's ledger.

A study of **designs** (runs that are not a product grid: each a set of field overrides, e.g. one family with
its own extension fields, or one depth with the uniform kernel) gives ``designs(preset, base)`` instead of a
grid, ``{tag: {field: value}}``, and ``replicates`` (``{preset: n}``, or ``(preset, config) -> n``): every
design runs at ``n`` independent seeds (:func:`analysis.probing.replicates.replicate_configs`), ``combine`` receives
``{tag: Replicates}`` in the designs' order, and ``claims`` its ledger (:func:`designs_ledger`: each design's own
ledger, tagged).

:func:`run_study` runs every point through the result cache (:func:`analysis.probing.sweep`: serially, or on a
Dask client), so a warm rerun computes nothing and an interrupted study resumes; :func:`study_configs`
gives the configs without running anything. From the command line::

    python -m probes study NAME                  # the probe's studies
    python -m probes study NAME STUDY [--preset smoke|full] [--PARAM VALUE ...] [--json PATH|-]
                                      [--scheduler none|local|tcp://HOST:PORT] [--workers N] [--no-progress]
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from analysis.claims.ledger import Ledger
from analysis.core.io import atomic_write_json, to_jsonable
from analysis.probing.base import Result, _resolve, cache_key, cached_run
from analysis.probing.options import add_options
from analysis.probing.replicates import Replicates, replicate_configs
from analysis.probing.sweep import plan, run_configs, sweep, sweep_results

__all__ = [
    "Study",
    "replicates_by",
    "designs_ledger",
    "tagged_ledger",
    "StudyResult",
    "get_study",
    "parse_study_args",
    "run_study",
    "studies",
    "study_command",
    "study_configs",
    "study_params",
]

PRESETS = ("smoke", "full")


@dataclass(frozen=True)
class Study:
    """One declared cross-run experiment of a probe (module docstring)."""

    name: str
    description: str
    base: Callable[..., Any]
    grid: Callable[[str, Any], Mapping[str, Sequence[Any]]]
    combine: Callable[[Any], Any]
    claims: Callable[[Any], Ledger]
    figure: str | None = None  # the figure drawn from it (its sidecar's inputs are the study's keys)
    designs: Callable[[str, Any], Mapping[str, Mapping[str, Any]]] | None = None  # instead of a grid
    # seeds per design (designs only): {preset: n}, or a function (preset, the design's config) -> n
    replicates: Mapping[str, int] | Callable[[str, Any], int] | None = None

    def __post_init__(self) -> None:
        if (self.grid is None) == (self.designs is None):
            raise ValueError(f"study {self.name}: give exactly one of grid and designs")
        if self.designs is not None and not callable(self.replicates) and set(self.replicates or {}) != set(PRESETS):
            raise ValueError(f"study {self.name}: designs need replicates for every preset {PRESETS}")

    def n_replicates(self, preset: str, config: Any) -> int:
        """The independent seeds of one design at ``preset``."""
        return int(self.replicates(preset, config) if callable(self.replicates) else self.replicates[preset])


@dataclass(frozen=True)
class StudyResult:
    """The runs of a study (grid order), their combination and the ledger judged on it."""

    study: Study
    module: Any
    preset: str
    params: dict[str, Any]
    results: tuple[Result, ...]
    combined: Any
    from_cache: tuple[bool, ...] = field(default=())

    @cached_property
    def ledger(self) -> Ledger:
        return self.study.claims(self.combined)

    @property
    def keys(self) -> list[str]:
        return [cache_key(self.module, r.config) for r in self.results]


def studies(probe: Any) -> dict[str, Study]:
    """The probe's declared studies (an empty dict when it declares none)."""
    module, _ = _resolve(probe)
    return dict(getattr(module, "STUDIES", {}) or {})


def get_study(probe: Any, name: str) -> Study:
    module, probe_name = _resolve(probe)
    known = studies(module)
    if name not in known:
        allowed = ", ".join(sorted(known)) or "(none declared)"
        raise ValueError(f"study must be one of probe {probe_name}'s studies: {allowed}; got {name!r}")
    return known[name]


def study_params(study: Study) -> dict[str, inspect.Parameter]:
    """The study's parameters (its ``base`` factory's keyword parameters after ``preset``), with defaults."""
    ps = list(inspect.signature(study.base).parameters.values())[1:]
    return {p.name: p for p in ps}


def _check_params(study: Study, params: Mapping[str, Any] | None) -> dict[str, Any]:
    params = dict(params or {})
    known = study_params(study)
    for k in params:
        if k not in known:
            raise ValueError(f"study {study.name}: parameter must be one of {', '.join(known)}; got {k!r}")
    return params


def _plan(probe: Any, name: str, preset: str, params: Mapping[str, Any] | None):
    """``(module, study, params, base, grid)``; for a study of designs ``grid`` is ``{tag: [configs]}``."""
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {', '.join(PRESETS)}, got {preset!r}")
    module, _ = _resolve(probe)
    study = get_study(module, name)
    params = _check_params(study, params)
    base = study.base(preset, **params)
    if study.designs is None:  # a parameter the grid varies takes the grid's values (a notebook passes all its
        return module, study, params, base, dict(study.grid(preset, base))  # parameters to each of its studies)
    designs = {}
    for tag, over in study.designs(preset, base).items():
        cfg = base.replace(**over)
        designs[tag] = replicate_configs(module, cfg, study.n_replicates(preset, cfg))
    return module, study, params, base, designs


def _varied(study: Study, preset: str, base: Any, grid: Mapping[str, Any] | None) -> set[str]:
    """The fields a study sets itself (its grid's, or every field a design overrides)."""
    if study.designs is None:
        return set(grid)
    return {f for over in study.designs(preset, base).values() for f in over}


def study_configs(probe: Any, name: str, preset: str = "full", params: Mapping[str, Any] | None = None) -> list:
    """Every run's config, in grid order (designs: each design's replicates in turn), without running anything
    (``ValueError`` on a bad input)."""
    module, study, _params, base, grid = _plan(probe, name, preset, params)
    if study.designs is not None:
        return [c for configs in grid.values() for c in configs]
    return list(plan(module, grid, base=base).configs)


def replicates_by(runs: Sequence[Result], field: str) -> list[Replicates]:
    """The runs of a grid (``field`` outer, seed inner) as one :class:`probes.Replicates` per value of ``field``,
    in the grid's order, each holding its runs in seed order (replicate 0 first): a study's ``combine`` when every
    grid point is a design judged over its independent seeds."""
    if not runs:
        raise ValueError("runs must hold at least one result")
    module, _ = _resolve(runs[0].probe)
    groups: dict[Any, list[Result]] = {}
    for r in runs:
        groups.setdefault(getattr(r.config, field), []).append(r)
    return [Replicates(module, tuple(rs)) for rs in groups.values()]


def tagged_ledger(ledgers: Mapping[str, Ledger]) -> Ledger:
    """One ledger of several, each one's claims tagged with its key (in order): a study's ledger of parts."""
    if not ledgers:
        raise ValueError("ledgers must hold at least one ledger")
    first = next(iter(ledgers.values()))
    led = Ledger(first.context, preset=first.preset)
    for tag, part in ledgers.items():
        led.extend(part, tag=tag)
    return led


def designs_ledger(designs: Mapping[str, Any]) -> Ledger:
    """The ledger of a study of designs: each design's own ledger (judged over its replicates), tagged with the
    design's tag, in the designs' order."""
    return tagged_ledger({tag: r.ledger for tag, r in designs.items()})


def run_study(
    probe: Any,
    name: str,
    preset: str = "full",
    params: Mapping[str, Any] | None = None,
    *,
    client: Any = None,
    progress: bool = True,
    cache_root: str | os.PathLike | None = None,
    threads: int | None = 1,
) -> StudyResult:
    """Run study ``name`` of ``probe`` at ``preset`` with ``params`` (the notebook's parameters), every run
    through the result cache (``client``: None serially, or a ``distributed.Client``; ``threads``: torch
    threads per run, None to leave torch as it is). A run that raises is a bug: ``RuntimeError`` naming it."""
    module, study, params, base, grid = _plan(probe, name, preset, params)
    if study.designs is not None:
        return _run_designs(module, study, preset, params, grid, client, progress, cache_root, threads)
    outcomes: list[dict] = []
    ds = sweep(
        module,
        grid,
        base=base,
        client=client,
        progress=progress,
        cache_root=cache_root,
        threads=threads,
        outcomes=outcomes,
    )
    if bool(ds["failed"].any()):
        raise RuntimeError(f"study {study.name}: failed points {ds.attrs.get('failed')}")
    results = tuple(sweep_results(ds, cache_root=cache_root))
    return _study_result(study, module, preset, params, results, study.combine(list(results)), outcomes)


def _run_designs(module, study, preset, params, designs, client, progress, cache_root, threads) -> StudyResult:
    """:func:`run_study` for a study of designs: every replicate of every design through the result cache."""
    configs = [c for cs in designs.values() for c in cs]
    outcomes = run_configs(module, configs, client=client, progress=progress, cache_root=cache_root, threads=threads)
    failed = [o.get("error") for o in outcomes if not o.get("ok")]
    if failed:
        raise RuntimeError(f"study {study.name}: {len(failed)} failed run(s); first: {failed[0]}")
    grouped = {}
    for tag, cs in designs.items():
        grouped[tag] = Replicates(
            module, tuple(cached_run(module, c, cache_root=cache_root, progress=False) for c in cs)
        )
    results = tuple(r for rep in grouped.values() for r in rep.results)
    return _study_result(study, module, preset, params, results, study.combine(grouped), outcomes)


def _study_result(study, module, preset, params, results, combined, outcomes) -> StudyResult:
    """The :class:`StudyResult` of a finished study (``outcomes``: each run's, in the results' order)."""
    from_cache = tuple(bool(o.get("from_cache")) for o in outcomes)
    return StudyResult(study, module, preset, params, results, combined, from_cache)


# ---------------------------------------------------------------------- command line


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
    from analysis.probing.sweep import local_client, remote_client

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
