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
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import itertools
import json
import os
import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import xarray as xr

from analysis.core.io import atomic_write, to_jsonable
from analysis.core.progress import bar
from analysis.probing import registry
from analysis.probing.base import NETCDF_ENGINE, FieldSpec, ProbeConfig, _resolve, cache_key, cached_run, get

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

SWEEP_FORMAT = 1  # layout of the Dataset; recorded in its attrs
SEED_FIELD = "seed"
RESERVED_VARS = ("failed", "error", "config", "cache_key")  # per-point variables of every sweep
ERROR_CHARS = 500  # a point's error message is cut to this many characters
GPU_RESOURCE = "GPU"  # the Dask worker resource a device="cuda" point needs one of


# ======================================================================= the plan: every point, validated


@dataclass
class Plan:
    """A validated sweep: the dims with their values and every point's config, in grid (C) order."""

    module: Any
    name: str
    dims: list[str]  # grid fields in the order given, then "seed"
    values: dict[str, list[Any]]  # dim -> the values swept (typed)
    base: ProbeConfig  # the config every point starts from
    configs: list[ProbeConfig] = field(default_factory=list)  # one per point, C order over dims
    keys: list[str] = field(default_factory=list)  # their result-cache keys

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(self.values[d]) for d in self.dims)

    def points(self) -> Iterator[tuple[tuple[int, ...], dict[str, Any]]]:
        """(index, {dim: value}) of every point, in the order of ``configs``."""
        for index in itertools.product(*(range(n) for n in self.shape)):
            yield index, {d: self.values[d][i] for d, i in zip(self.dims, index, strict=True)}

    def label(self, point: Mapping[str, Any]) -> str:
        return ", ".join(f"{d}={_fmt(v)}" for d, v in point.items())


def _fmt(value: Any) -> str:
    """A value as the command line writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, tuple | list):
        return ",".join(_fmt(v) for v in value)
    return str(value)


def seed_spec(config_cls: type[ProbeConfig]) -> FieldSpec | None:
    """The probe's seed field (an ``int`` field called ``seed``), or None."""
    for spec in config_cls.field_specs():
        if spec.name == SEED_FIELD and spec.base is int and not spec.is_seq:
            return spec
    return None


def parse_seeds(text: str) -> tuple[int, ...]:
    """``"0-4"`` (inclusive), ``"0,2,5"`` or a mix (``"0-2,7"``) -> seeds, in the order written.

    Raises ``ValueError`` naming ``--seeds`` for anything else: an empty list, a range running
    backwards, a negative or non-integer seed, or a seed given twice.
    """
    allowed = "integers >= 0 as a range A-B (inclusive) or a comma-separated list, e.g. 0-4 or 0,2,5"
    items = [t.strip() for t in str(text).split(",")]
    seeds: list[int] = []
    for item in items:
        m = re.fullmatch(r"(\d+)\s*-\s*(\d+)", item)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if hi < lo:
                raise ValueError(f"--seeds range {item!r} runs backwards; allowed: {allowed}")
            seeds.extend(range(lo, hi + 1))
        elif re.fullmatch(r"\d+", item):
            seeds.append(int(item))
        else:
            raise ValueError(f"--seeds must be {allowed}, got {text!r}")
    dup = _first_duplicate(seeds)
    if dup is not None:
        raise ValueError(f"--seeds gives seed {dup} twice, got {text!r}")
    return tuple(seeds)


def _first_duplicate(values: Sequence[Any]) -> Any:
    seen: list[Any] = []
    for v in values:
        if any(type(v) is type(s) and v == s for s in seen):
            return v
        seen.append(v)
    return None


def _spec_of(config_cls: type[ProbeConfig], name: str, probe: str, what: str = "field") -> FieldSpec:
    specs = {s.name: s for s in config_cls.field_specs()}
    key = name.replace("-", "_")
    if key not in specs:
        hint = " (set it with --preset)" if key == "preset_name" else ""
        raise ValueError(f"unknown {what} {name!r} for probe {probe}{hint}; fields: {', '.join(specs)}")
    return specs[key]


def parse_grid_arg(config_cls: type[ProbeConfig], text: str, probe: str = "") -> tuple[str, list[Any]]:
    """One ``--grid FIELD=V1,V2,...`` -> (field, values), each value parsed by the field's own parser.

    A list-valued field separates its grid values with ``;`` (each a comma-separated list).
    """
    if "=" not in text:
        raise ValueError(f"--grid must be FIELD=V1,V2,... (a list-valued field: FIELD=A,B;C,D), got {text!r}")
    name, _, rest = text.partition("=")
    spec = _spec_of(config_cls, name.strip(), probe, what="--grid field")
    sep = ";" if spec.is_seq else ","
    if not rest.strip():
        raise ValueError(f"--grid {spec.name}: needs at least one value; allowed: {_grid_allowed(spec)}")
    values = []
    for item in rest.split(sep):
        if not item.strip():
            raise ValueError(f"--grid {spec.name}: empty value in {rest!r}; allowed: {_grid_allowed(spec)}")
        try:
            values.append(spec.parse(item.strip()))
        except ValueError as e:
            raise ValueError(f"--grid {spec.name}: {e}") from None
    return spec.name, values


def _grid_allowed(spec: FieldSpec) -> str:
    if spec.is_seq:
        return f"grid values separated by ';', each {spec.allowed()}"
    return f"comma-separated values, each {spec.allowed()}"


def _normalised(spec: FieldSpec, value: Any) -> Any:
    """Lists -> tuples and ints -> floats for float fields (what a Config does to a value)."""

    def item(v: Any) -> Any:
        return float(v) if spec.base is float and isinstance(v, int) and not isinstance(v, bool) else v

    if value is None:
        return None
    if spec.is_seq and isinstance(value, list | tuple):
        return tuple(item(v) for v in value)
    return item(value)


def plan(
    probe: Any,
    grid: Mapping[str, Sequence[Any]],
    preset: str | None = None,
    seeds: Sequence[int] | str | None = None,
    base: Mapping[str, Any] | ProbeConfig | None = None,
) -> Plan:
    """Validate a sweep and build every point's config (``ValueError`` naming the field otherwise)."""
    module, name = _resolve(probe)
    config_cls: type[ProbeConfig] = module.Config
    if isinstance(base, ProbeConfig):
        if not isinstance(base, config_cls):
            raise ValueError(f"base must be a {name}.Config or a dict of field values, got {type(base).__name__}")
        if preset is not None and preset != base.preset_name:
            raise ValueError(f"preset {preset!r} disagrees with the base config's preset {base.preset_name!r}")
        base_cfg = base
    else:
        overrides = dict(base or {})
        if "preset_name" in overrides:
            raise ValueError("base cannot set preset_name; pass preset='smoke' or 'full'")
        base_cfg = config_cls.preset("full" if preset is None else preset, **overrides)
    if not isinstance(grid, Mapping):
        raise ValueError(f"grid must be a dict of field -> values, got {type(grid).__name__}")
    values: dict[str, list[Any]] = {}
    for raw_name, raw_values in grid.items():
        spec = _spec_of(config_cls, str(raw_name), name, what="grid field")
        if spec.name in values:
            raise ValueError(f"grid field {spec.name} is given twice")
        if isinstance(raw_values, str) or not isinstance(raw_values, Sequence | range | np.ndarray):
            raise ValueError(f"grid field {spec.name}: values must be a list, got {raw_values!r}")
        vals = [_normalised(spec, v.item() if isinstance(v, np.generic) else v) for v in raw_values]
        if not vals:
            raise ValueError(f"grid field {spec.name}: needs at least one value; allowed: {spec.allowed()}")
        for v in vals:
            try:
                spec.check(v)
            except ValueError as e:
                raise ValueError(f"grid field {spec.name}: {e}") from None
        dup = _first_duplicate(vals)
        if dup is not None:
            raise ValueError(f"grid field {spec.name}: value {_fmt(dup)} is given twice")
        values[spec.name] = vals
    sspec = seed_spec(config_cls)
    if seeds is not None:
        if sspec is None:
            raise ValueError(f"--seeds: probe {name} has no integer field {SEED_FIELD!r} to set")
        if SEED_FIELD in values:
            raise ValueError("--seeds and a grid over seed are the same thing; give one of them")
        seed_list = list(parse_seeds(seeds) if isinstance(seeds, str) else seeds)
        if not seed_list:
            raise ValueError("--seeds needs at least one seed")
        for s in seed_list:
            sspec.check(s.item() if isinstance(s, np.generic) else s)
        dup = _first_duplicate(seed_list)
        if dup is not None:
            raise ValueError(f"--seeds gives seed {dup} twice")
        values[SEED_FIELD] = [int(s) for s in seed_list]
    elif sspec is not None and SEED_FIELD not in values:
        values[SEED_FIELD] = [getattr(base_cfg, SEED_FIELD)]  # a length-1 seed dim: the config's seed
    out = Plan(module=module, name=name, dims=list(values), values=values, base=base_cfg)
    for _, point in out.points():
        try:
            cfg = base_cfg.replace(**point)
        except ValueError as e:
            raise ValueError(f"probe {name} at {out.label(point)}: {e}") from None
        out.configs.append(cfg)
        out.keys.append(cache_key(module, cfg))
    return out


# ======================================================================= running the points


@contextlib.contextmanager
def _torch_threads(n: int | None) -> Iterator[None]:
    """Torch uses ``n`` threads inside (restored after); ``None`` leaves it alone."""
    if n is None:
        yield
        return
    old = torch.get_num_threads()
    if old != n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if torch.get_num_threads() != old:
            torch.set_num_threads(old)


def one_line(err: BaseException) -> str:
    """``Type: message`` on one line, at most ``ERROR_CHARS`` characters."""
    text = f"{type(err).__name__}: {' '.join(str(err).split())}".rstrip(": ")
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 3] + "..."


def _run_point(probe: Any, config: dict[str, Any], cache_root: str | None, threads: int | None) -> dict[str, Any]:
    """Run one point through the result cache; never raises (an error is returned as one line).

    ``probe`` is a name (workers look it up in their registry) or, serially, the module itself.
    """
    try:
        if isinstance(probe, str):
            module = get(probe)
        else:
            module = probe
        cfg = module.Config.from_dict(config)
        if _on_gpu(cfg):
            _bind_gpu()
        with _torch_threads(threads):
            result = cached_run(module, cfg, cache_root=cache_root, progress=False)
        return {
            "ok": True,
            "scalars": dict(result.scalars),
            "data": result.data,
            "claims": [(c.context, c.name, c.status) for c in result.ledger.claims],
            "broken": [c.name for c in result.ledger.broken],
            "cache_key": result.meta.get("cache_key"),
            "from_cache": bool(result.from_cache),
        }
    except Exception as e:  # a failing point is recorded; the sweep goes on
        return {"ok": False, "error": one_line(e)}


def _bind_gpu() -> None:
    """On a Dask worker named by an integer (a ``LocalCluster``'s workers are 0, 1, ...) that declares the
    ``GPU`` resource, make GPU ``name % count`` torch's current device, so a local cluster of one worker per
    GPU runs one point per GPU. Workers started by hand pick their GPU with ``CUDA_VISIBLE_DEVICES``."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):  # not on a worker
        return
    count = torch.cuda.device_count()
    if count and worker.state.total_resources.get(GPU_RESOURCE, 0) >= 1 and isinstance(worker.name, int):
        torch.cuda.set_device(worker.name % count)


def _on_gpu(cfg: Any) -> bool:
    return getattr(cfg, "device", "cpu") == "cuda"


def needs_gpu(p: Plan) -> bool:
    """Whether any point asks for ``device="cuda"`` (those run only on workers with the ``GPU`` resource)."""
    return any(_on_gpu(cfg) for cfg in p.configs)


def _check_gpu_workers(client: Any) -> None:
    workers = client.scheduler_info().get("workers", {})
    if not any(w.get("resources", {}).get(GPU_RESOURCE, 0) >= 1 for w in workers.values()):
        raise ValueError(
            f"device='cuda' points run one per GPU on workers that declare the {GPU_RESOURCE} resource, and none of "
            f"the {len(workers)} worker(s) does: start each GPU worker with `dask worker ADDRESS --nthreads 1 "
            f"--resources {GPU_RESOURCE}=1` (CUDA_VISIBLE_DEVICES=i for GPU i)"
        )


def _run_serial(p: Plan, cache_root: str | None, threads: int | None, progress: bool) -> list[dict]:
    outcomes = []
    with bar(total=len(p.configs), progress=progress, desc=f"sweep {p.name}", unit="point") as pbar:
        for cfg in p.configs:
            outcomes.append(_run_point(p.module, cfg.to_dict(), cache_root, threads))
            pbar.update()
    return outcomes


def _run_client(p: Plan, client: Any, cache_root: str | None, threads: int | None, progress: bool) -> list[dict]:
    from distributed import as_completed

    if registry.registered(p.name) is not None:
        raise ValueError(
            f"probe {p.name} was added with probes.register(): it exists in this process only; "
            "sweep it with client=None or make it importable (WORKBENCH_PROBES)"
        )
    if needs_gpu(p):
        _check_gpu_workers(client)
    token = uuid.uuid4().hex[:8]
    futures = {}
    for i, cfg in enumerate(p.configs):
        gpu = {"resources": {GPU_RESOURCE: 1}} if _on_gpu(cfg) else {}
        fut = client.submit(
            _run_point,
            p.name,
            cfg.to_dict(),
            cache_root,
            threads,
            pure=False,
            key=f"sweep-{p.name}-{token}-{i}",
            **gpu,
        )
        futures[fut] = i
    outcomes: list[dict | None] = [None] * len(p.configs)
    try:
        with bar(total=len(p.configs), progress=progress, desc=f"sweep {p.name}", unit="point") as pbar:
            for fut in as_completed(list(futures)):
                i = futures[fut]
                try:
                    outcomes[i] = fut.result()
                except Exception as e:  # the worker died (KilledWorker), the task could not be sent...
                    outcomes[i] = {"ok": False, "error": one_line(e)}
                fut.release()
                pbar.update()
    finally:
        pending = [f for f in futures if not f.done()]
        if pending:  # interrupted: do not leave work queued on a shared scheduler
            client.cancel(pending)
    return outcomes  # type: ignore[return-value]


@contextlib.contextmanager
def local_client(n_workers: int, gpus: bool = False, **cluster_kwargs: Any) -> Iterator[Any]:
    """A ``distributed.Client`` on a fresh ``LocalCluster`` of ``n_workers`` processes, one thread each
    (dashboard off, logs below ERROR silenced); both closed on exit. Worker processes are spawned: a
    script that calls this needs the usual ``if __name__ == "__main__":`` guard.

    ``gpus``: one worker per GPU torch sees (at most ``n_workers``), each declaring the ``GPU`` resource
    and computing on its own GPU, so ``device="cuda"`` points run one per GPU (``ValueError`` when torch
    sees none).

    The workers' statistical profiler (a sample of every thread's stack each 10 ms, for the dashboard) is
    off: the probes' tiny models spend much of their time in Python, where it competes for the GIL."""
    import logging

    import dask
    from distributed import Client, LocalCluster

    kwargs = dict(
        n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.ERROR
    )
    if gpus:
        count = torch.cuda.device_count()
        if not count:
            raise ValueError("device='cuda': torch sees no CUDA device here; allowed: cpu, auto")
        kwargs.update(n_workers=min(n_workers, count), resources={GPU_RESOURCE: 1})
    kwargs.update(cluster_kwargs)
    with dask.config.set({"distributed.worker.profile.enabled": False}):  # the nannies pass it to the workers
        cluster = LocalCluster(**kwargs)
    with cluster, Client(cluster) as client:
        yield client


# ======================================================================= the Dataset


def _coord(spec: FieldSpec, vals: list[Any]) -> np.ndarray:
    """Coordinate values of a grid dim: typed, or strings as written on the command line for lists/None."""
    if spec.is_seq or any(v is None for v in vals):
        return np.array([_fmt(v) for v in vals], dtype=str)
    if spec.base is bool:
        return np.array(vals, dtype=bool)
    if spec.base is int:
        return np.array(vals, dtype=np.int64)
    if spec.base is float:
        return np.array(vals, dtype=np.float64)
    return np.array(vals, dtype=str)


def _claim_var(context: str, name: str, probe: str) -> str:
    full = name if context == probe else f"{context}.{name}"
    return "claim__" + re.sub(r"[^A-Za-z0-9_.\-]", "_", full)


def _stack(
    name: str,
    datasets: dict[int, xr.Dataset],
    good: list[int],
    n_points: int,
    union: dict[str, Any],
    shape: tuple[int, ...],
    dims: list[str],
    index_of: list[tuple[int, ...]],
) -> tuple:
    """(dims, values, attrs) of array ``name`` stacked over the grid, reindexed to the union coordinates."""
    present = [i for i in good if name in datasets[i].data_vars]
    first = datasets[present[0]][name]
    target = {dim: union[dim] for dim in first.dims if dim in union}
    padded = any(
        dim not in datasets[i][name].indexes or not datasets[i][name].indexes[dim].equals(idx)
        for i in present
        for dim, idx in target.items()
    )
    missing = padded or len(present) < n_points
    if first.dtype.kind in "US":
        fill: Any = ""
    elif first.dtype.kind in "biuf":
        fill = np.nan if missing else 0
    else:
        raise TypeError(f"dtype {first.dtype} is not a number, bool or string")
    as_float = missing and first.dtype.kind in "biu"
    inner_shape = tuple(len(target[dim]) if dim in target else first.sizes[dim] for dim in first.dims)
    if first.dtype.kind in "US":
        out = np.full(shape + inner_shape, "", dtype=object)
    else:
        out = np.full(shape + inner_shape, fill, dtype=np.float64 if as_float else first.dtype)
    for i in present:
        da = datasets[i][name]
        if as_float:
            da = da.astype(np.float64)
        if padded:
            da = da.reindex(target, fill_value=fill)
        out[index_of[i]] = da.values
    if first.dtype.kind in "US":
        out = out.astype(str)
    return (dims + list(first.dims), out, dict(first.attrs))


def _point_datasets(p: Plan, outcomes: list[dict], good: list[int], renamed: dict[str, str]):
    """The good points' Datasets, ready to stack: dims that clash with grid dims renamed ``point__<dim>``,
    arrays whose dims differ between points dropped (returned in ``skipped``), dims without coordinate
    whose length differs given positions. Returns (datasets, names of the arrays to stack, skipped)."""
    datasets: dict[int, xr.Dataset] = {}
    for i in good:
        d = outcomes[i]["data"]
        clash = {dim: f"point__{dim}" for dim in d.dims if dim in p.dims}
        if clash:
            renamed.update({f"dim {k}": v for k, v in clash.items()})
            d = d.rename(clash)
        d = d.copy()
        d.attrs = {}  # per-point Dataset attrs are not kept (the scalars carry the numbers)
        datasets[i] = d
    array_dims: dict[str, set[tuple]] = {}
    for d in datasets.values():
        for name, var in d.data_vars.items():
            array_dims.setdefault(name, set()).add(tuple(var.dims))
    skipped = {
        name: "dims differ between points: " + " vs ".join(str(list(t)) for t in sorted(ds_))
        for name, ds_ in array_dims.items()
        if len(ds_) > 1
    }
    names = [n for n in array_dims if n not in skipped]
    for i, d in datasets.items():
        datasets[i] = d.drop_vars([n for n in skipped if n in d.data_vars])
    # dims without coordinate whose length differs: positions as coordinate (padded at the end)
    sizes: dict[str, set[int]] = {}
    for d in datasets.values():
        for dim, n in d.sizes.items():
            sizes.setdefault(dim, set()).add(n)
    for i, d in datasets.items():
        positional = {dim: np.arange(d.sizes[dim]) for dim in d.dims if dim not in d.indexes and len(sizes[dim]) > 1}
        if positional:
            datasets[i] = d.assign_coords(positional)
    return datasets, names, skipped


def _inner_coords(datasets: dict[int, xr.Dataset]) -> tuple[dict[str, Any], dict[str, xr.Variable], list[str]]:
    """The union of every indexed dim's values over the points (outer join), the non-index coordinates
    every point has alike, and the names of those that differ (dropped)."""
    union: dict[str, Any] = {}
    if datasets:
        aligned = xr.align(*[d.drop_vars(list(d.data_vars)) for d in datasets.values()], join="outer")
        for a in aligned:
            for dim, idx in a.indexes.items():
                union.setdefault(dim, idx)
    inner: dict[str, xr.Variable] = {}
    dropped: list[str] = []
    for d in datasets.values():
        for cname, c in d.coords.items():
            if cname in d.indexes or cname in dropped:
                continue
            if cname in inner and not inner[cname].identical(c.variable):
                dropped.append(cname)
                del inner[cname]
            elif cname not in inner:
                inner[cname] = c.variable
    return union, inner, dropped


def _scalar_variables(p: Plan, outcomes: list[dict], taken: set[str], renamed: dict[str, str]) -> dict[str, tuple]:
    """Every scalar of the points' Results over the grid (float64, NaN where absent; strings as given)."""
    index_of = [idx for idx, _ in p.points()]
    names: list[str] = []
    for o in outcomes:
        if o["ok"]:
            names += [k for k in o["scalars"] if k not in names]
    variables = {}
    for sname in names:
        vals = [o["scalars"].get(sname) if o["ok"] else None for o in outcomes]
        as_str = any(isinstance(v, str) for v in vals)
        out = np.full(p.shape, "" if as_str else np.nan, dtype=object if as_str else np.float64)
        for i, v in enumerate(vals):
            if v is not None:
                out[index_of[i]] = (v if isinstance(v, str) else _fmt(v)) if as_str else float(v)
        var = sname if sname not in taken else f"scalar__{sname}"
        if var != sname:
            renamed[f"scalar {sname}"] = var
        variables[var] = (p.dims, out.astype(str) if as_str else out, {})
    return variables


def _claim_variables(p: Plan, outcomes: list[dict]) -> dict[str, tuple]:
    """``claim__<name>``: each claim's status over the grid ('' where a point lacks it)."""
    index_of = [idx for idx, _ in p.points()]
    statuses: dict[str, np.ndarray] = {}
    for i, o in enumerate(outcomes):
        if not o["ok"]:
            continue
        for c, n, status in o["claims"]:
            var = _claim_var(c, n, p.name)
            statuses.setdefault(var, np.full(p.shape, "", dtype=object))[index_of[i]] = status
    return {var: (p.dims, out.astype(str), {}) for var, out in statuses.items()}


def _point_variables(p: Plan, outcomes: list[dict]) -> tuple[dict[str, tuple], list[dict]]:
    """Per point: ``failed``, ``error``, ``config`` (JSON) and ``cache_key``; and the list of failures."""
    failed = np.zeros(p.shape, dtype=bool)
    error, config, keys = (np.full(p.shape, "", dtype=object) for _ in range(3))
    failures = []
    for i, (idx, point) in enumerate(p.points()):
        config[idx] = json.dumps(p.configs[i].to_dict(), sort_keys=True)
        keys[idx] = p.keys[i]
        if not outcomes[i]["ok"]:
            failed[idx] = True
            error[idx] = outcomes[i]["error"]
            failures.append({"point": to_jsonable(point), "error": outcomes[i]["error"]})
    dims = p.dims
    variables = {
        "failed": (dims, failed, {"description": "the point's probe raised (see error)"}),
        "error": (dims, error.astype(str), {"description": "the point's one-line error, '' if none"}),
        "config": (dims, config.astype(str), {"description": "the point's resolved config (JSON)"}),
        "cache_key": (dims, keys.astype(str), {"description": "the point's result-cache key"}),
    }
    return variables, failures


def _assemble(p: Plan, outcomes: list[dict]) -> xr.Dataset:
    """One Dataset from the points' outcomes (see the module docstring for its layout)."""
    dims = p.dims
    specs = {s.name: s for s in p.module.Config.field_specs()}
    index_of = [idx for idx, _ in p.points()]
    good = [i for i, o in enumerate(outcomes) if o["ok"]]
    coords: dict[str, Any] = {d: _coord(specs[d], p.values[d]) for d in dims}
    renamed: dict[str, str] = {}
    variables: dict[str, tuple] = {}
    datasets, names, skipped = _point_datasets(p, outcomes, good, renamed)
    union, inner_coords, dropped_coords = _inner_coords(datasets)
    for name in names:
        try:
            variables["data__" + name] = _stack(name, datasets, good, len(outcomes), union, p.shape, dims, index_of)
        except (ValueError, TypeError, KeyError) as e:  # e.g. a dim indexed at some points only
            skipped[name] = one_line(e)
    for dim, idx in union.items():
        vals = np.asarray(idx.values)
        coords[dim] = vals.astype(str) if vals.dtype == object and all(isinstance(v, str) for v in vals) else vals
    coords.update({k: v for k, v in inner_coords.items() if not any(dim in dims for dim in v.dims)})
    taken = set(dims) | set(coords) | {dim for v in variables.values() for dim in v[0]} | set(RESERVED_VARS)
    variables.update(_scalar_variables(p, outcomes, taken, renamed))
    variables.update(_claim_variables(p, outcomes))
    point_vars, failures = _point_variables(p, outcomes)
    variables.update(point_vars)
    ds = xr.Dataset({k: xr.Variable(v[0], v[1], v[2]) for k, v in variables.items()}, coords=coords)
    renamed.update({f"coord {c}": "dropped (differs between points)" for c in dropped_coords})
    ds.attrs.update(
        {
            "sweep_format": SWEEP_FORMAT,
            "probe": p.name,
            "probe_version": p.module.VERSION,
            "preset": p.base.preset_name,
            "grid": json.dumps({d: to_jsonable(p.values[d]) for d in dims}),
            "base_config": json.dumps(p.base.to_dict(), sort_keys=True),
            "n_points": len(outcomes),
            "n_failed": len(failures),
            "failed": json.dumps(failures),
            "skipped_arrays": json.dumps(skipped, sort_keys=True),
            "renamed": json.dumps(renamed, sort_keys=True),
        }
    )
    return ds


def _provenance_attrs(threads: int | None) -> dict[str, Any]:
    from analysis.core.provenance import git_commit, package_versions

    versions = dict(package_versions())
    for pkg in ("dask", "distributed"):
        try:
            versions[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            versions[pkg] = "absent"
    return {
        "torch_threads": 0 if threads is None else int(threads),
        "commit": git_commit(),
        "versions": json.dumps(versions, sort_keys=True),
    }


# ======================================================================= public API


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


def write_netcdf(ds: xr.Dataset, path: str | os.PathLike) -> Path:
    """Write ``ds`` to ``path`` atomically (netCDF-4: a temporary file in the same folder, then ``os.replace``)."""
    return atomic_write(path, lambda tmp: ds.to_netcdf(tmp, engine=NETCDF_ENGINE))


# ======================================================================= command line

SWEEP_OPTIONS = frozenset({"preset", "grid", "seeds", "out", "scheduler", "workers", "no_progress", "help"})


@contextlib.contextmanager
def remote_client(address: str) -> Iterator[Any]:
    from distributed import Client

    try:
        client = Client(address, timeout=30)
    except (OSError, TimeoutError) as e:
        raise OSError(f"cannot connect to the dask scheduler at {address}: {e}") from e
    try:
        yield client
    finally:
        client.close()
