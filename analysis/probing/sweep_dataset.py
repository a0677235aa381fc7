"""A sweep's Dataset: the points' outcomes gathered into one xarray Dataset over the grid (:func:`_assemble`: the
scalars, the arrays stacked and joined over the points' coordinates, the claims' statuses, each point's error, config
and cache key, the attrs and the provenance), and :func:`write_netcdf`, which writes it atomically. The layout is
described in :mod:`analysis.probing.sweep` ("The Dataset")."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from analysis.core.config import FieldSpec
from analysis.core.io import atomic_write, to_jsonable
from analysis.probing.result import NETCDF_ENGINE
from analysis.probing.sweep_plan import Plan, _fmt
from analysis.probing.sweep_run import one_line

SWEEP_FORMAT = 1  # layout of the Dataset; recorded in its attrs
RESERVED_VARS = ("failed", "error", "config", "cache_key")  # per-point variables of every sweep


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


def write_netcdf(ds: xr.Dataset, path: str | os.PathLike) -> Path:
    """Write ``ds`` to ``path`` atomically (netCDF-4: a temporary file in the same folder, then ``os.replace``)."""
    return atomic_write(path, lambda tmp: ds.to_netcdf(tmp, engine=NETCDF_ENGINE))
