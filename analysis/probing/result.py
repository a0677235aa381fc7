"""A probe's result: :class:`Result` (labelled arrays, scalars, the config that ran, its claims), its saved folder
and JSON, and :func:`result_difference` between two results.

Saved results are folders (:meth:`Result.save`): ``data.nc`` (the arrays, netCDF-4 via the netCDF4 library),
``result.json`` (probe, version, config, scalars, claims, meta) and ``manifest.json`` (SHA-256 of
both). Writes are atomic; :meth:`Result.load` refuses a folder whose files do not match the manifest
(:class:`CorruptResultError`). ``FORMAT_VERSION``, the layout of that folder, is part of every result-cache key
(:func:`analysis.probing.result_cache.cache_key`).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from analysis.claims.ledger import Claim, Ledger
from analysis.core.io import atomic_replace_dir, atomic_write_json, sha256_file, to_jsonable
from analysis.probing.config import ProbeConfig
from analysis.probing.contract import get

FORMAT_VERSION = 3  # layout of a saved Result folder (3: claims carry stability and finding); in every cache key
RESULT_FILES = ("data.nc", "result.json")  # the files manifest.json hashes
NETCDF_ENGINE = "netcdf4"


class CorruptResultError(ValueError):
    """A saved result whose files are missing, unreadable or do not match their manifest."""


@dataclass(eq=False)
class Result:
    """What a probe run produced: labelled arrays, scalars, the config that ran, and its claims.

    ``data`` holds the arrays (dims such as ``layer``, ``t``, ``seed``, with coordinates);
    ``scalars`` maps names to a float, int, bool or str; ``ledger`` holds the theory checks, with
    ``context == probe`` and the config's preset. ``meta`` is free-form JSON-safe information
    (the framework adds ``elapsed_s`` and, for cached runs, ``cache_key``).

    ``data`` is stored as netCDF-4: variable and coordinate values may be numbers, bools or
    strings; attributes (``attrs``) must be strings, numbers or lists of numbers (not dicts or
    bools). Build results with the probe's own ``NAME`` and ``config`` and a ledger made with
    ``Ledger(NAME, preset=config.preset_name)``.
    """

    probe: str
    config: ProbeConfig
    data: xr.Dataset = field(default_factory=xr.Dataset)
    scalars: dict[str, Any] = field(default_factory=dict)
    ledger: Ledger | None = None  # None -> an empty ledger for (probe, config.preset_name)
    version: str = ""  # the probe's VERSION (filled in by run_probe when empty)
    meta: dict[str, Any] = field(default_factory=dict)
    from_cache: bool = False  # set by cached_run on a cache hit; never saved

    def __post_init__(self) -> None:
        if not isinstance(self.config, ProbeConfig):
            raise ValueError(f"config must be a ProbeConfig, got {type(self.config).__name__}")
        if not isinstance(self.data, xr.Dataset):
            raise ValueError(f"data must be an xarray.Dataset, got {type(self.data).__name__}")
        if self.ledger is None:
            self.ledger = Ledger(self.probe, preset=self.config.preset_name)
        if self.ledger.preset != self.config.preset_name:
            raise ValueError(
                f"ledger preset {self.ledger.preset!r} must match config.preset_name {self.config.preset_name!r}"
            )
        self.scalars = {str(k): _as_scalar(k, v) for k, v in self.scalars.items()}

    @property
    def checks(self) -> list[Claim]:
        """The ledger's claims."""
        return self.ledger.claims

    @property
    def preset(self) -> str:
        return self.config.preset_name

    def identical(self, other: Result) -> bool:
        """Same probe, version, config, scalars, arrays (values, dims, coords, attrs) and claims."""
        return (
            self.probe == other.probe
            and self.version == other.version
            and self.config == other.config
            and _scalars_equal(self.scalars, other.scalars)
            and self.data.identical(other.data)
            and self.ledger.to_dict() == other.ledger.to_dict()
        )

    # ------------------------------------------------------------------ persistence

    def save(self, path: str | os.PathLike) -> Path:
        """Write the result to folder ``path`` (replaced atomically if it exists)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
        try:
            self.data.to_netcdf(tmp / "data.nc", engine=NETCDF_ENGINE)
            record = {
                "format": FORMAT_VERSION,
                "probe": self.probe,
                "version": self.version,
                "config": self.config.to_dict(),
                "scalars": {k: _scalar_to_json(v) for k, v in self.scalars.items()},
                "ledger": self.ledger.to_dict(),
                "meta": to_jsonable(self.meta),
            }
            atomic_write_json(tmp / "result.json", record)
            manifest = {
                "format": FORMAT_VERSION,
                "files": {name: sha256_file(tmp / name) for name in RESULT_FILES},
            }
            atomic_write_json(tmp / "manifest.json", manifest)
            for name in ("data.nc", "result.json", "manifest.json"):
                os.chmod(tmp / name, 0o644)  # temporary files are created private (0600)
            os.chmod(tmp, 0o755)
            atomic_replace_dir(tmp, path)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return path

    @classmethod
    def load(cls, path: str | os.PathLike, config_cls: type[ProbeConfig] | None = None) -> Result:
        """Read a folder written by :meth:`save`, checking it against its manifest.

        ``config_cls`` defaults to the registered probe's ``Config``. Raises
        :class:`CorruptResultError` when a file is missing, altered or unreadable.
        """
        path = Path(path)
        try:
            with open(path / "manifest.json", encoding="utf-8") as f:
                manifest = json.load(f)
            if sorted(manifest["files"]) != sorted(RESULT_FILES):  # every file is hashed, none skipped
                raise CorruptResultError(
                    f"{path / 'manifest.json'} lists {sorted(manifest['files'])}, need {sorted(RESULT_FILES)}"
                )
            for name, digest in manifest["files"].items():
                if sha256_file(path / name) != digest:
                    raise CorruptResultError(f"{path / name} does not match its manifest hash")
            with open(path / "result.json", encoding="utf-8") as f:
                record = json.load(f)
            if record.get("format") != FORMAT_VERSION:
                raise CorruptResultError(f"{path} has format {record.get('format')!r}, need {FORMAT_VERSION}")
            data = xr.load_dataset(path / "data.nc", engine=NETCDF_ENGINE).drop_encoding()
        except CorruptResultError:
            raise
        except (OSError, KeyError, TypeError, AttributeError, ValueError, RuntimeError) as e:
            raise CorruptResultError(f"cannot read result folder {path}: {type(e).__name__}: {e}") from e
        if config_cls is None:
            config_cls = get(record["probe"]).Config
        return cls(
            probe=record["probe"],
            config=config_cls.from_dict(record["config"]),
            data=data,
            scalars={k: _scalar_from_json(v) for k, v in record["scalars"].items()},
            ledger=Ledger.from_dict(record["ledger"]).rejudged(),  # today's stability and triage rules
            version=record["version"],
            meta=record["meta"],
        )

    def to_json_dict(self) -> dict[str, Any]:
        """Everything as plain JSON: probe, version, config, scalars, arrays (nested lists with
        their dims), coordinates, checks (the claims as dicts) and their tally.

        Non-finite numbers follow :func:`analysis.core.io.to_jsonable`: NaN -> null, +-inf -> "inf"/"-inf".
        """
        return to_jsonable(
            {
                "probe": self.probe,
                "version": self.version,
                "preset": self.preset,
                "config": self.config.to_dict(),
                "scalars": dict(self.scalars),
                "arrays": {
                    name: {"dims": list(var.dims), "values": var.values, "attrs": dict(var.attrs)}
                    for name, var in self.data.data_vars.items()
                },
                "coords": {
                    name: {"dims": list(var.dims), "values": var.values} for name, var in self.data.coords.items()
                },
                "checks": [c.to_dict() for c in self.ledger.claims],
                "check_summary": self.ledger.summary(),
                "meta": self.meta,
            }
        )

    def summary(self) -> str:
        """A few lines for people: scalars, array shapes, the check tally and every claim."""
        head = f"probe {self.probe} (preset {self.preset}, version {self.version or '?'})"
        if "elapsed_s" in self.meta:
            head += f", {self.meta['elapsed_s']:.2f} s"
        if self.from_cache:
            head += ", from cache"
        lines = [head]
        for look in self.meta.get("sequential", ()):  # analysis.probing.sequential: a look taken for undecided claims
            moved = ", ".join(f"{f} {look['from'][f]} -> {n}" for f, n in look["to"].items())
            lines.append(f"sequential design: {moved} ({len(look['undecided'])} claim(s) undecided)")
        if self.scalars:
            lines.append("scalars:")
            width = max(len(k) for k in self.scalars)
            lines += [f"  {k:<{width}} = {_fmt_scalar(v)}" for k, v in self.scalars.items()]
        if self.data.data_vars:
            shapes = [
                f"{name}({', '.join(f'{d}={n}' for d, n in zip(var.dims, var.shape, strict=True))})"
                for name, var in self.data.data_vars.items()
            ]
            lines.append("arrays: " + ", ".join(shapes))
        lines.append(self.ledger.report().replace(f"{self.ledger.context} ({self.preset}): ", "checks: ", 1))
        return "\n".join(lines)

    def __repr__(self) -> str:
        tally = ", ".join(f"{v} {k}" for k, v in self.ledger.summary().items() if v)
        return (
            f"Result(probe={self.probe!r}, preset={self.preset!r}, scalars={len(self.scalars)}, "
            f"checks: {tally or 'none'})"
        )


def _as_scalar(name: Any, value: Any) -> float | int | bool | str:
    """Python float/int/bool/str of a scalar (numpy and 0-d torch values via ``.item()``)."""
    if type(value) not in (bool, int, float, str) and hasattr(value, "item"):  # numpy/torch scalars
        try:
            value = value.item()
        except (ValueError, RuntimeError):
            pass
    if not isinstance(value, bool | int | float | str):
        raise ValueError(
            f"scalar {name!r} must be a number or a string (arrays go in data), got {type(value).__name__}"
        )
    return value


def _scalar_to_json(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return {"nonfinite": "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")}
    return v


def _scalar_from_json(v: Any) -> Any:
    if isinstance(v, dict):
        return float(v["nonfinite"])
    return v


def _scalars_equal(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if a.keys() != b.keys():
        return False
    for k in a:
        x, y = a[k], b[k]
        both_nan = isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y)
        if not (both_nan or (type(x) is type(y) and x == y)):
            return False
    return True


def _fmt_scalar(v: Any) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def result_difference(
    a: Result, b: Result, names: Sequence[str], select: Mapping[str, Any] | None = None
) -> dict[str, float]:
    """Largest relative difference ``max|a - b| / max(max|b|, tiny)`` of each named array of two results.

    Used to show that a probe measures the same numbers on two models that compute the same function
    (e.g. a Hugging Face GPT-2 and our zoo model carrying its weights). ``select`` picks coordinates
    first (``{"dtype": "float64"}``). NaN must sit at the same places in both, else the difference is inf;
    an array with no finite entry at all gives NaN (nothing was compared).
    """
    out = {}
    for name in names:
        if name not in a.data or name not in b.data:
            raise ValueError(f"array {name!r} is not in both results (have {sorted(a.data.data_vars)})")
        xa, xb = a.data[name], b.data[name]
        if select:
            keys = {k: v for k, v in select.items() if k in xa.dims}
            xa, xb = xa.sel(keys), xb.sel(keys)
        va, vb = np.asarray(xa.values, dtype=np.float64), np.asarray(xb.values, dtype=np.float64)
        if va.shape != vb.shape:
            raise ValueError(f"array {name!r} has shape {va.shape} in one result and {vb.shape} in the other")
        fa, fb = np.isfinite(va), np.isfinite(vb)
        if not np.array_equal(fa, fb) or not np.array_equal(va[~fa], vb[~fb], equal_nan=True):
            out[name] = math.inf
            continue
        scale = max(float(np.max(np.abs(vb[fb]))) if fb.any() else 0.0, np.finfo(np.float64).tiny)
        out[name] = float(np.max(np.abs(va[fa] - vb[fb]))) / scale if fa.any() else math.nan
    return out
