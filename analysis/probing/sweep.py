"""Parameter sweeps: one probe over a grid of config values (and seeds), serially or on Dask.

::

    python -m probes sweep NAME [--preset smoke|full] --grid FIELD=V1,V2,... [--grid ...] [--seeds 0-4]
                                [--FIELD VALUE ...] --out PATH.nc [--scheduler local|none|tcp://HOST:PORT]
                                [--workers N] [--no-progress]

From Python (serial and in-process unless a ``distributed.Client`` is passed)::

    import probes
    ds = probes.sweep("prompt_forgetting", {"layers": [1, 2, 3]}, preset="smoke", seeds=range(3))
    ds["alpha"].mean("seed")                       # a scalar of the Result, over the grid
    runs = probes.sweep_results(ds)                # the points' Results (from the result cache)

**The grid.** ``grid`` maps config fields to the values to sweep; the points are every combination
(the Cartesian product, in the order the fields are given, the last varying fastest). ``seeds`` sets
the probe's ``seed`` field (an ``int`` field called ``seed``; every probe of this package has one)
and becomes the last dimension; a grid over ``seed`` itself is the same thing at its own position.
``base`` fixes other fields: a dict of field values applied to the preset, or a ``Config`` of the
probe (then ``preset`` is the config's own). On the command line ``--grid FIELD=V1,V2`` parses each
value with the field's own parser (booleans ``true``/``false``, ``none`` for optional fields); a
**list-valued** field (``tuple[...]``) takes its grid values separated by ``;`` and each value's
items by ``,`` as for ``run`` (``--grid depths='1,2;4,8,16'`` is two points, ``(1, 2)`` and
``(4, 8, 16)``; quote the ``;`` from the shell). ``--seeds`` takes ``0-4`` (inclusive), ``0,2,5``
or a mix (``0-2,7``). Fixed fields are set as for ``run``: ``--field-name VALUE``.

**Validation first.** Every point's ``Config`` is built (and validated, cross-field checks included)
and the output folder checked before anything runs or a cluster starts: an unknown field, a bad or
duplicate value, an empty list, a bad ``--seeds`` or an unwritable ``--out`` raises ``ValueError``
(the command line: exit 2 and one line naming the field or option and what is allowed).

**Each point is one** :func:`probes.cached_run` (the content-addressed result cache, of the process
that runs the point: ``WORKBENCH_CACHE`` or ``.cache/`` unless ``cache_root`` is given), so a sweep
killed midway and started again recomputes nothing that finished. Torch runs with ``threads`` threads
(default 1) while a point computes, in every execution mode, so a sweep gives bit-identical numbers
serially, on a local cluster or on remote workers of the same machine type (``threads=None`` leaves
torch's setting alone, as a hand-written loop would). A point whose probe raises is recorded with its
one-line error (``failed`` and ``error`` below); the other points still run, and :func:`sweep`
returns normally (the command line then exits 1, naming the failed points).

**The Dataset.** Its dimensions are the grid fields, in the order given, then ``seed`` (always there
for a probe with a ``seed`` field: length 1, the config's seed, when no seeds were asked for), with
the values as coordinates (a list-valued field, or a field given ``none``, has its values as strings
written as on the command line: ``"1,2"``, ``"none"``). Variables:

* every **scalar** of the Results under its own name, ``float64`` over the grid with NaN where a point
  failed or lacks it (booleans as 0/1); a scalar holding strings is a string variable with ``""``
  there. A scalar whose name is already a dimension, coordinate or one of the variables below is
  called ``scalar__<name>``.
* every **array** of ``Result.data`` as ``data__<name>``: the grid dims followed by the array's own
  dims and coordinates. Coordinates that differ between points are joined (outer join: the union of
  the values, NaN where a point has none); a dimension without coordinate whose length differs is
  padded at the end and gets positions ``0..n-1`` as coordinate. An array whose dims (names and
  order) differ between points is skipped and listed in ``attrs["skipped_arrays"]``. Integer and
  boolean arrays keep their dtype when every point has every value, else become ``float64`` with NaN.
  An array dim named like a grid dimension is renamed ``point__<dim>``. Per-point Dataset attrs are
  not kept (the scalars carry the numbers); array attrs come from the first point.
* ``claim__<name>``: the status of each ledger claim (``pass``, ``fail``, ``inconclusive``...; ``""``
  where the point failed or made no such claim). Claims of another context are named
  ``claim__<context>.<name>``.
* ``failed`` (bool), ``error`` (the one-line error, ``""`` if none), ``config`` (the resolved config
  of the point as JSON) and ``cache_key`` (its result-cache key).

``attrs`` (numbers and strings, dicts JSON-encoded): ``probe``, ``probe_version``, ``preset``,
``grid`` (the swept values per dim), ``base_config`` (the config every point starts from), ``failed``
(a list of ``{"point", "error"}``), ``n_points``, ``n_failed``, ``skipped_arrays``, ``renamed``,
``torch_threads`` (0: left alone), ``commit`` and ``versions`` (:mod:`analysis.core.provenance`, with dask
and distributed), ``sweep_format``. Nothing in it depends on how or where it ran, so the same sweep
gives an identical Dataset serially and on a cluster, killed and resumed or not. The command line
writes it atomically as netCDF-4 (a temporary file in the same folder, then ``os.replace``).

**Schedulers.** ``client=None`` runs the points one after another in this process. Pass a
``distributed.Client`` to run them on its workers: :func:`local_client` starts a
``LocalCluster(n_workers, threads_per_worker=1, processes=True)`` on this machine (what
``--scheduler local`` does, with ``--workers`` defaulting to min(points, CPU cores); ``--workers 0`` or
``--scheduler none`` runs serially); ``--scheduler tcp://HOST:PORT`` connects to a running scheduler.
Workers import the probe by name: local workers are processes of this machine with its environment
(``PYTHONPATH``, ``WORKBENCH_PROBES``, ``WORKBENCH_CACHE``); remote workers need the project installed
(``pip install -e .``) and, to resume and share results, a cache folder they all see (a shared file
system, set with ``WORKBENCH_CACHE`` or ``cache_root``). Probes added with :func:`probes.register`
exist only in this process, so they sweep serially only.

**Where it lives.** This module holds the public functions (:func:`sweep`, :func:`run_configs`,
:func:`sweep_results`) and re-exports the rest: the grid and its validation in :mod:`analysis.probing.sweep_plan`,
running the points in :mod:`analysis.probing.sweep_run`, the Dask clients in :mod:`analysis.probing.sweep_clients`,
the Dataset and :func:`write_netcdf` in :mod:`analysis.probing.sweep_dataset`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from analysis.probing.config import ProbeConfig
from analysis.probing.contract import _resolve
from analysis.probing.result_cache import cache_key, cached_run
from analysis.probing.sweep_clients import local_client, remote_client  # noqa: F401
from analysis.probing.sweep_dataset import (  # noqa: F401
    RESERVED_VARS,
    SWEEP_FORMAT,
    _assemble,
    _claim_var,
    _claim_variables,
    _coord,
    _inner_coords,
    _point_datasets,
    _point_variables,
    _provenance_attrs,
    _scalar_variables,
    _stack,
    write_netcdf,
)
from analysis.probing.sweep_plan import (  # noqa: F401
    SEED_FIELD,
    Plan,
    _first_duplicate,
    _fmt,
    _grid_allowed,
    _normalised,
    _spec_of,
    parse_grid_arg,
    parse_seeds,
    plan,
    seed_spec,
)
from analysis.probing.sweep_run import (  # noqa: F401
    ERROR_CHARS,
    GPU_RESOURCE,
    _bind_gpu,
    _check_gpu_workers,
    _on_gpu,
    _run_client,
    _run_point,
    _run_serial,
    _torch_threads,
    needs_gpu,
    one_line,
)

__all__ = [
    "local_client",
    "parse_grid_arg",
    "parse_seeds",
    "plan",
    "run_configs",
    "sweep",
    "sweep_results",
    "write_netcdf",
]

# the options of `python -m probes sweep` (analysis.probing.cli_sweep): a config field of one of these names gets no
# --FIELD option there (it can still be swept with --grid)
SWEEP_OPTIONS = frozenset({"preset", "grid", "seeds", "out", "scheduler", "workers", "no_progress", "help"})


def sweep(
    name: Any,
    grid: Mapping[str, Sequence[Any]],
    preset: str | None = None,
    seeds: Sequence[int] | str | None = None,
    *,
    base: Mapping[str, Any] | ProbeConfig | None = None,
    client: Any = None,
    progress: bool = True,
    cache_root: str | os.PathLike | None = None,
    threads: int | None = 1,
    outcomes: list | None = None,
) -> xr.Dataset:
    """Run probe ``name`` at every point of ``grid`` (x ``seeds``) and gather the results in one Dataset.

    ``preset`` is ``"smoke"`` or ``"full"`` (default: ``full``, or the preset of a ``Config`` given as
    ``base``); ``base`` fixes other fields (a dict, or a ``Config`` of the probe). ``client``: None runs
    serially in this process, or a ``distributed.Client``. ``cache_root`` is the result cache of every
    point (default: each worker's own, ``WORKBENCH_CACHE``). ``threads``: torch threads while a point
    runs (None: leave torch alone). Every point is validated before any runs (``ValueError``); a point
    that fails is recorded in the Dataset, never raised. See the module docstring for the layout.
    ``outcomes``, if a list, receives one dict per point (``ok``, ``from_cache``, ``error``...).
    """
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be an integer >= 1 or None, got {threads!r}")
    p = plan(name, grid, preset=preset, seeds=seeds, base=base)
    root = None if cache_root is None else str(Path(cache_root).resolve())
    if client is None:
        got = _run_serial(p, root, threads, progress)
    else:
        got = _run_client(p, client, root, threads, progress)
    if outcomes is not None:
        outcomes[:] = got
    ds = _assemble(p, got)
    ds.attrs.update(_provenance_attrs(threads))
    return ds


def run_configs(
    name: Any,
    configs: Sequence[ProbeConfig],
    *,
    client: Any = None,
    progress: bool = True,
    cache_root: str | os.PathLike | None = None,
    threads: int | None = 1,
) -> list[dict]:
    """Run a list of configs of one probe (not a product grid: e.g. a study's designs x their replicates) as
    :func:`sweep` runs its points, each through the result cache, serially or on ``client``; returns one outcome
    dict per config (``ok``, ``from_cache``, ``error``...), in order. Nothing is raised for a failed point."""
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be an integer >= 1 or None, got {threads!r}")
    module, probe_name = _resolve(name)
    configs = list(configs)
    if not configs:
        raise ValueError("configs must hold at least one config")
    for c in configs:
        if not isinstance(c, module.Config):
            raise ValueError(f"configs must be {probe_name}.Config values, got {type(c).__name__}")
    p = Plan(
        module,
        probe_name,
        dims=["point"],
        values={"point": list(range(len(configs)))},
        base=configs[0],
        configs=configs,
        keys=[cache_key(module, c) for c in configs],
    )
    root = None if cache_root is None else str(Path(cache_root).resolve())
    return (
        _run_serial(p, root, threads, progress) if client is None else _run_client(p, client, root, threads, progress)
    )


def sweep_results(ds: xr.Dataset, cache_root: str | os.PathLike | None = None) -> list:
    """The :class:`probes.Result` of every point of a sweep that did not fail, in grid order.

    Each comes from the result cache (recomputed serially if the entry is gone), with the torch
    threads the sweep used.
    """
    module, _ = _resolve(ds.attrs["probe"])
    threads = int(ds.attrs.get("torch_threads", 0)) or None
    flat_failed = np.asarray(ds["failed"].values).ravel()
    results = []
    for text, bad in zip(np.asarray(ds["config"].values).ravel(), flat_failed, strict=True):
        if bad:
            continue
        cfg = module.Config.from_dict(json.loads(str(text)))
        with _torch_threads(threads):
            results.append(cached_run(module, cfg, cache_root=cache_root, progress=False))
    return results
