"""Declared studies, from Python: the :class:`Study` declaration, a probe's studies (:func:`studies`,
:func:`get_study`), every run's config (:func:`study_configs`), running a study through the result cache
(:func:`run_study`, giving a :class:`StudyResult`), and the helpers a study's ``combine`` and ``claims`` use
(:func:`replicates_by`, :func:`tagged_ledger`, :func:`designs_ledger`). What a study declares is described in
:mod:`analysis.probing.studies`."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from analysis.claims.ledger import Ledger
from analysis.probing.contract import _resolve
from analysis.probing.replicates import Replicates, replicate_configs
from analysis.probing.result import Result
from analysis.probing.result_cache import cache_key, cached_run
from analysis.probing.sweep import plan, run_configs, sweep, sweep_results

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
        groups.setdefault(r.config.value_of(field), []).append(r)
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
