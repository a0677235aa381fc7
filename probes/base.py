"""The probe framework: configs, results, the result cache and model compatibility checks.

A probe measures something in a (tiny) transformer and compares it with what theory predicts. Each
probe is one module in ``probes/`` with this contract (checked by :func:`validate_probe`):

``NAME``        the probe's name, equal to its module name (``"icl_gd"``);
``DESCRIPTION`` one line for ``python -m probes list`` (defaults to the docstring's first line);
``VERSION``     a string bumped whenever the probe's numbers change; part of the cache key;
``REQUIRES``    what the probe needs from a model passed in, e.g. ``{"causal": True, "input": "tokens"}``
                (a tuple value lists the allowed values), ``{}`` for any model, ``None`` when the
                probe never takes one (see :func:`check_model_compat`);
``Config``      a frozen dataclass subclassing :class:`ProbeConfig`, with ``PRESETS``;
``run(config, model=None, progress=True) -> Result``.

A minimal probe module::

    from dataclasses import dataclass
    import numpy as np, xarray as xr
    from analysis.ledger import Claim, Ledger
    from probes.base import ProbeConfig, Result, param

    NAME = "running_mean"
    DESCRIPTION = "Running mean of i.i.d. draws against its closed form."
    VERSION = "1"
    REQUIRES = None  # pure theory: takes no model

    @dataclass(frozen=True)
    class Config(ProbeConfig):
        PRESETS = {"smoke": {"n": 100}, "full": {}}
        n: int = param(10_000, "number of draws", minimum=1)
        seed: int = param(0, "seed of the draws", minimum=0)

    def run(config: Config, model=None, progress: bool = True) -> Result:
        rng = np.random.default_rng(config.seed)
        ...
        led = Ledger(NAME, preset=config.preset_name)
        led.predict("mean", measured=m, expected=0.5, se=1 / np.sqrt(12 * config.n), k=5, alternative=0.0,
                    hypothesis="draws from a distribution centred at 0", source="...", why="5 SE of n draws")
        return Result(probe=NAME, config=config, data=xr.Dataset(...), scalars={"mean": m}, ledger=led)

Config rules. Every field has a default, and **the defaults are the full experiment**: ``PRESETS``
maps ``"smoke"`` (required) and ``"full"`` (optional, must agree with the defaults) to field
overrides. Supported field types: ``int``, ``float``, ``bool``, ``str``, ``tuple[int, ...]``,
``tuple[float, ...]``, ``tuple[str, ...]``, ``tuple[bool, ...]``, each optionally ``| None``. Declare
fields with :func:`param` so that the command line can document and check them generically
(``help``, ``choices``, ``minimum``, ``maximum``, ``min_len``). ``__post_init__`` turns lists into
tuples and ints into floats where a float is declared, then calls :meth:`ProbeConfig.validate`;
override ``validate`` (calling ``super().validate()`` first) for checks across fields. The field
``preset_name`` (``"smoke"`` | ``"full"``) records which preset the config was built from; the
ledger uses it to leave ``requires_full`` claims unevaluated in smoke runs.

Saved results are folders (:meth:`Result.save`): ``data.nc`` (the arrays, netCDF-4 via the netCDF4 library),
``result.json`` (probe, version, config, scalars, claims, meta) and ``manifest.json`` (SHA-256 of
both). Writes are atomic; :meth:`Result.load` refuses a folder whose files do not match the manifest.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import tempfile
import time
import types
import typing
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import xarray as xr

from analysis.io import (
    atomic_replace_dir,
    atomic_write_json,
    content_hash,
    entry_lock,
    sha256_file,
    to_jsonable,
    touch,
    write_error,
)
from analysis.ledger import PRESETS as PRESET_NAMES
from analysis.ledger import Claim, Ledger
from analysis.paths import cache_dir
from analysis.train import record_checkpoints
from analysis.validation import check_bool, check_choice, check_float, check_int, check_sequence
from probes import registry

FORMAT_VERSION = 2  # layout of a saved Result folder; part of every cache key
RESULT_FILES = ("data.nc", "result.json")  # the files manifest.json hashes
NETCDF_ENGINE = "netcdf4"
# Option names the command line keeps for itself; no Config field may use them.
RESERVED_FIELDS = frozenset(
    {"preset", "json", "no_progress", "strict", "against_alternatives", "cache", "save", "help"}
)

_MISSING = dataclasses.MISSING
# Largest seed a config accepts: probes derive further seeds from it (offsets, products such as
# seed * 1_000_003) and torch.Generator.manual_seed takes nothing past 2**64 - 1.
MAX_SEED = 2**31 - 1


class CorruptResultError(ValueError):
    """A saved result whose files are missing, unreadable or do not match their manifest."""


class ModelIncompatibleError(ValueError):
    """A model passed to a probe lacks what the probe needs (causal attention, a hook point, a
    vocabulary...). The command line reports it as a usage error (exit 2, one line); any other
    exception from a probe is a bug and keeps its traceback."""


# ======================================================================= configs


def param(
    default: Any,
    help: str,
    *,
    choices: tuple | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
    min_len: int | None = None,
) -> Any:
    """A config field with the metadata the generic validation and the command line use.

    ``choices`` lists the allowed values (of each item, for tuple fields); ``minimum``/``maximum``
    bound numbers inclusively (each item, for tuple fields); ``min_len`` is the shortest allowed
    tuple (1 unless given).
    """
    meta: dict[str, Any] = {"help": help}
    if choices is not None:
        meta["choices"] = tuple(choices)
    if minimum is not None:
        meta["minimum"] = minimum
    if maximum is not None:
        meta["maximum"] = maximum
    if min_len is not None:
        meta["min_len"] = min_len
    return field(default=default, metadata=meta)


_SCALAR_TYPES = {int: "int", float: "float", bool: "bool", str: "str"}


@dataclass(frozen=True)
class FieldSpec:
    """What the framework knows about one config field (resolved from its type and metadata)."""

    name: str  # python name, e.g. "n_layers"
    base: type  # int | float | bool | str: the scalar type, or the item type of a tuple
    is_seq: bool  # tuple[base, ...]
    optional: bool  # `| None` allowed
    default: Any
    help: str
    choices: tuple | None
    minimum: float | None
    maximum: float | None
    min_len: int

    @property
    def option(self) -> str:
        """The command-line option, e.g. ``--n-layers``."""
        return "--" + self.name.replace("_", "-")

    @property
    def type_name(self) -> str:
        name = _SCALAR_TYPES[self.base]
        name = f"list[{name}]" if self.is_seq else name
        return f"{name} | none" if self.optional else name

    def allowed(self) -> str:
        """What values are allowed, in words (for help and error messages)."""
        if self.choices is not None:
            what = ("one of " if not self.is_seq else "values from ") + ", ".join(
                map(_fmt_value, self.choices)
            )
        elif self.is_seq:
            what = {int: "integers", float: "numbers", bool: "true/false values", str: "strings"}[self.base]
        else:
            what = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}[self.base]
        lo, hi = self.minimum, self.maximum
        if lo is not None and hi is not None:
            what += f" in [{_fmt_value(lo)}, {_fmt_value(hi)}]"
        elif lo is not None:
            what += f" >= {_fmt_value(lo)}"
        elif hi is not None:
            what += f" <= {_fmt_value(hi)}"
        if self.is_seq:
            what = f"a comma-separated list of {what}" + (
                f" (at least {self.min_len})" if self.min_len > 1 else ""
            )
        if self.optional:
            what += ", or none"
        return what

    def check(self, value: Any) -> None:
        """Raise ``ValueError`` naming the field unless ``value`` is allowed."""
        if value is None:
            if not self.optional:
                raise ValueError(f"{self.name} must be {self.allowed()}, got None")
            return
        if self.is_seq:
            check_sequence(self.name, value, item_check=self._check_item, min_len=self.min_len)
            if not isinstance(value, tuple):
                raise ValueError(f"{self.name} must be a tuple, got {type(value).__name__}")
        else:
            self._check_item(self.name, value)

    def _check_item(self, label: str, value: Any) -> None:
        if self.base is bool:
            check_bool(label, value)
        elif self.base is int:
            check_int(label, value, minimum=self.minimum, maximum=self.maximum)
        elif self.base is float:
            check_float(label, value, minimum=self.minimum, maximum=self.maximum)
        elif not isinstance(value, str):
            raise ValueError(f"{label} must be a string, got {value!r}")
        if self.choices is not None:
            check_choice(label, value, self.choices)

    def parse(self, text: str) -> Any:
        """Parse a command-line string into a value of this field's type (not yet range-checked).

        Booleans are ``true``/``false``; lists are comma-separated (an empty string is an empty
        list); ``none`` gives ``None`` for optional fields.
        """
        if self.optional and text.strip().lower() == "none":
            return None
        if self.is_seq:
            items = [t.strip() for t in text.split(",")] if text.strip() else []
            return tuple(self._parse_item(t, text) for t in items)
        return self._parse_item(text, text)

    def _parse_item(self, item: str, whole: str) -> Any:
        try:
            if self.base is bool:
                low = item.strip().lower()
                if low not in ("true", "false"):
                    raise ValueError
                return low == "true"
            if self.base is int:
                return int(item)
            if self.base is float:
                return float(item)
        except ValueError:
            raise ValueError(f"{self.option} must be {self.allowed()}, got {whole!r}") from None
        return item


def _resolve_type(cls: type, name: str, tp: Any) -> tuple[type, bool, bool]:
    """(base, is_seq, optional) for a supported annotation; TypeError otherwise."""
    optional = False
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) != 1 or len(typing.get_args(tp)) != 2:
            raise TypeError(f"{cls.__name__}.{name}: unions other than `X | None` are not supported")
        optional, tp, origin = True, args[0], typing.get_origin(args[0])
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis and args[0] in _SCALAR_TYPES:
            return args[0], True, optional
    elif tp in _SCALAR_TYPES:
        return tp, False, optional
    raise TypeError(
        f"{cls.__name__}.{name}: unsupported type {tp!r}; use int, float, bool, str, "
        "tuple[int, ...], tuple[float, ...], tuple[str, ...], tuple[bool, ...], optionally `| None`"
    )


@cache
def _field_specs(cls: type) -> tuple[FieldSpec, ...]:
    hints = typing.get_type_hints(cls)
    specs = []
    for f in dataclasses.fields(cls):
        if f.default is _MISSING:
            raise TypeError(f"{cls.__name__}.{f.name} needs a default (the defaults are the full experiment)")
        base, is_seq, optional = _resolve_type(cls, f.name, hints[f.name])
        meta = f.metadata
        specs.append(
            FieldSpec(
                name=f.name,
                base=base,
                is_seq=is_seq,
                optional=optional,
                default=f.default,
                help=meta.get("help", ""),
                choices=meta.get("choices"),
                minimum=meta.get("minimum"),
                maximum=meta.get("maximum"),
                min_len=meta.get("min_len", 1),
            )  # fmt: skip
        )
    return tuple(specs)


@dataclass(frozen=True, kw_only=True)
class ProbeConfig:
    """Base of every probe's ``Config``: presets, generic validation, dict round trip.

    Subclasses are ``@dataclass(frozen=True)`` and set the class attribute ``PRESETS``.
    """

    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {"smoke": {}, "full": {}}

    # which preset this config was built from; smoke runs leave `requires_full` claims unevaluated
    preset_name: str = param("full", "preset the config was built from", choices=PRESET_NAMES)

    def __post_init__(self) -> None:
        for spec in _field_specs(type(self)):
            value = getattr(self, spec.name)
            object.__setattr__(self, spec.name, _normalise(spec, value))
        self.validate()

    def validate(self) -> None:
        """Check every field against its type and metadata. Override to add checks across fields
        (call ``super().validate()`` first); raise ``ValueError`` naming the field."""
        for spec in _field_specs(type(self)):
            spec.check(getattr(self, spec.name))

    # ------------------------------------------------------------------ construction

    @classmethod
    def preset(cls, name: str, **overrides: Any):
        """The config of preset ``name`` (``"smoke"`` or ``"full"``), then ``overrides`` applied."""
        check_choice("preset", name, tuple(k for k in PRESET_NAMES if k in cls.presets()))
        values = {**cls.presets()[name], **overrides, "preset_name": name}
        cls._check_names(values)
        return cls(**values)

    @classmethod
    def presets(cls) -> dict[str, dict[str, Any]]:
        """``PRESETS`` in the order smoke, full, with ``"full"`` filled in as ``{}`` when absent."""
        return {
            name: dict(cls.PRESETS.get(name, {}))
            for name in PRESET_NAMES
            if name in cls.PRESETS or name == "full"
        }

    @classmethod
    def field_specs(cls, include_preset: bool = False) -> tuple[FieldSpec, ...]:
        """Every field's spec; ``preset_name`` only when asked (the command line sets it via --preset)."""
        return tuple(s for s in _field_specs(cls) if include_preset or s.name != "preset_name")

    @classmethod
    def field_names(cls) -> list[str]:
        return [s.name for s in _field_specs(cls)]

    @classmethod
    def _check_names(cls, values: Mapping[str, Any]) -> None:
        unknown = [k for k in values if k not in cls.field_names()]
        if unknown:
            raise ValueError(
                f"unknown field {unknown[0]!r} for {cls.__module__}.{cls.__qualname__}; "
                f"allowed: {', '.join(cls.field_names())}"
            )

    def replace(self, **changes: Any):
        """A copy with ``changes`` applied (validated again)."""
        self._check_names(changes)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (tuples become lists)."""
        return {name: to_jsonable(getattr(self, name)) for name in self.field_names()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]):
        cls._check_names(d)
        return cls(**d)

    def digest(self) -> str:
        """Content hash of the values (16 hex digits)."""
        return content_hash(self.to_dict())


def _normalise(spec: FieldSpec, value: Any) -> Any:
    """Lists -> tuples; ints -> floats where a float is declared (bools are left to fail validation)."""

    def item(v: Any) -> Any:
        if spec.base is float and isinstance(v, int) and not isinstance(v, bool):
            return float(v)
        return v

    if value is None:
        return None
    if spec.is_seq and isinstance(value, list | tuple):
        return tuple(item(v) for v in value)
    return item(value)


def _fmt_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


# ======================================================================= results


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
                f"ledger preset {self.ledger.preset!r} must match config.preset_name "
                f"{self.config.preset_name!r}"
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
                raise CorruptResultError(f"{path / 'manifest.json'} lists {sorted(manifest['files'])}, "
                                         f"need {sorted(RESULT_FILES)}")  # fmt: skip
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
            ledger=Ledger.from_dict(record["ledger"]),
            version=record["version"],
            meta=record["meta"],
        )

    def to_json_dict(self) -> dict[str, Any]:
        """Everything as plain JSON: probe, version, config, scalars, arrays (nested lists with
        their dims), coordinates, checks (the claims as dicts) and their tally.

        Non-finite numbers follow :func:`analysis.io.to_jsonable`: NaN -> null, +-inf -> "inf"/"-inf".
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
                    name: {"dims": list(var.dims), "values": var.values}
                    for name, var in self.data.coords.items()
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
        return f"Result(probe={self.probe!r}, preset={self.preset!r}, scalars={len(self.scalars)}, checks: {tally or 'none'})"


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


# ======================================================================= probes: contract, running, cache


def validate_probe(module: Any, name: str) -> None:
    """Raise ``ValueError`` unless ``module`` satisfies the probe contract (see module docstring)."""

    def fail(what: str) -> None:
        raise ValueError(f"probe module {name!r}: {what}")

    if getattr(module, "NAME", None) != name:
        fail(f"NAME must be {name!r}, got {getattr(module, 'NAME', None)!r}")
    if not description(module):
        fail("needs DESCRIPTION (one line) or a module docstring")
    version = getattr(module, "VERSION", None)
    if not isinstance(version, str) or not version:
        fail(f"VERSION must be a non-empty string, got {version!r}")
    requires = getattr(module, "REQUIRES", _MISSING)
    if requires is not None and not isinstance(requires, dict):
        fail(f"REQUIRES must be a dict (or None for probes that take no model), got {requires!r}")
    if not callable(getattr(module, "run", None)):
        fail("needs a function run(config, model=None, progress=True) -> Result")
    config_cls = getattr(module, "Config", None)
    if not (isinstance(config_cls, type) and issubclass(config_cls, ProbeConfig)):
        fail("Config must be a dataclass subclassing probes.base.ProbeConfig")
    if not dataclasses.is_dataclass(config_cls) or not config_cls.__dataclass_params__.frozen:
        fail("Config must be decorated with @dataclass(frozen=True)")
    try:
        names = config_cls.field_names()
    except TypeError as e:
        fail(str(e))
    clash = sorted(RESERVED_FIELDS & set(names))
    if clash:
        fail(f"Config field(s) {clash} clash with command-line options {sorted(RESERVED_FIELDS)}")
    bad_presets = sorted(set(config_cls.PRESETS) - set(PRESET_NAMES))
    if bad_presets or "smoke" not in config_cls.PRESETS:
        fail(f"PRESETS must have 'smoke' (and optionally 'full') only, got {sorted(config_cls.PRESETS)}")
    try:
        default = config_cls()
        full = config_cls.preset("full")
        config_cls.preset("smoke")
    except (TypeError, ValueError) as e:
        fail(f"Config defaults or presets are invalid: {e}")
    if default != full:
        fail("PRESETS['full'] must agree with the field defaults (the defaults are the full experiment)")


def description(module: Any) -> str:
    """The probe's one-line description: ``DESCRIPTION`` or the docstring's first line."""
    text = getattr(module, "DESCRIPTION", None) or (getattr(module, "__doc__", None) or "")
    return text.strip().splitlines()[0].strip() if text.strip() else ""


def get(name: str) -> Any:
    """The probe module called ``name`` (imported on first use and checked against the contract).

    An unknown name raises ``ValueError`` listing the available probes (:mod:`probes.registry` finds them).
    """
    module = registry.registered(name)
    if module is not None:  # checked when it was registered
        return module
    module = registry.find(name)
    validate_probe(module, name)
    return module


def register(name: str, module: Any) -> Any:
    """Make ``module`` available as probe ``name`` (replacing any earlier registration)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"probe name must be a Python identifier, got {name!r}")
    validate_probe(module, name)
    registry.add(name, module)
    return module


def unregister(name: str) -> None:
    """Forget a probe added with :func:`register` (no error if it was not registered)."""
    registry.remove(name)


# Properties of analysis.protocol.ProbeModel a requirement may name directly ("input" means input_kind,
# whose values "tokens" | "vectors" match ModelConfig.input). Other keys are read from the model's config.
_PROTOCOL_KEYS = {
    "n_layers": "n_layers",
    "causal": "causal",
    "input": "input_kind",
    "input_kind": "input_kind",
}


def _model_value(model: Any, key: str) -> tuple[bool, Any]:
    """(found, value) of requirement ``key``: a ProbeModel property, else a field of ``model.cfg``/``.config``."""
    if key in _PROTOCOL_KEYS and hasattr(model, _PROTOCOL_KEYS[key]):
        return True, getattr(model, _PROTOCOL_KEYS[key])
    for attr in ("cfg", "config"):
        cfg = getattr(model, attr, None)
        if cfg is not None and hasattr(cfg, key):
            return True, getattr(cfg, key)
    return False, None


def check_model_compat(probe_name: str, model: Any, requires: dict[str, Any] | None) -> None:
    """Raise ``ValueError`` unless ``model`` has what the probe ``requires``.

    ``requires`` maps a property to the value it must have, or to a tuple/list/set of allowed
    values: ``{"causal": True, "input": "tokens", "norm": ("pre", "post")}``. ``n_layers``,
    ``causal`` and ``input`` (= ``input_kind``) are read from the model itself, as
    :class:`analysis.protocol.ProbeModel` exposes them, so an adapter around another library's model
    qualifies; any other key is a field of the model's config (``model.cfg`` or ``model.config``).
    ``requires=None`` means the probe takes no model at all.
    """
    if requires is None:
        raise ModelIncompatibleError(
            f"probe {probe_name} does not take a model (it builds what it needs from its config)"
        )
    problems = []
    for key, want in requires.items():
        allowed = tuple(want) if isinstance(want, tuple | list | set | frozenset) else (want,)
        want_text = f"{key}={allowed[0]!r}" if len(allowed) == 1 else f"{key} in {list(allowed)!r}"
        found, have = _model_value(model, key)
        if not found:
            problems.append(f"{want_text} ({type(model).__name__} exposes no {key!r}, nor does its config)")
        elif have not in allowed:
            problems.append(f"{want_text} (got {have!r})")
    if problems:
        raise ModelIncompatibleError(f"probe {probe_name} needs a model with " + "; ".join(problems))


def _resolve(module_or_name: Any) -> tuple[Any, str]:
    if isinstance(module_or_name, str):
        return get(module_or_name), module_or_name
    name = getattr(module_or_name, "NAME", None)
    if not isinstance(name, str):
        raise ValueError(f"expected a probe name or module with NAME, got {module_or_name!r}")
    validate_probe(module_or_name, name)
    return module_or_name, name


def _resolve_config(module: Any, name: str, config: Any) -> ProbeConfig:
    if config is None:
        return module.Config()
    if isinstance(config, str):
        return module.Config.preset(config)
    if isinstance(config, Mapping):
        return module.Config.from_dict(config)
    if not isinstance(config, module.Config):
        raise ValueError(f"config for probe {name} must be a {name}.Config, got {type(config).__name__}")
    return config


def run_probe(module_or_name: Any, config: Any = None, model: Any = None, progress: bool = True) -> Result:
    """Run a probe with the framework's checks around it.

    ``config`` is a ``Config``, a preset name, a dict of field values, or None (the defaults). A
    ``model``, if given, is checked against the probe's ``REQUIRES`` first. The result's version
    and ``meta["elapsed_s"]`` are filled in.
    """
    module, name = _resolve(module_or_name)
    config = _resolve_config(module, name, config)
    if model is not None:
        check_model_compat(name, model, module.REQUIRES)
    start = time.perf_counter()
    with record_checkpoints() as trained:
        result = module.run(config, model=model, progress=progress)
    elapsed = time.perf_counter() - start
    if not isinstance(result, Result):
        raise TypeError(f"probe {name}: run() must return a probes.base.Result, got {type(result).__name__}")
    if result.probe != name:
        raise ValueError(f"probe {name}: run() returned a Result for probe {result.probe!r}")
    if not result.version:
        result.version = module.VERSION
    result.meta.setdefault("elapsed_s", elapsed)
    if trained:  # the training runs it used, for `cache prune --keep-figures`
        result.meta.setdefault("checkpoints", sorted(trained))
    return result


def cache_key(module_or_name: Any, config: Any = None) -> str:
    """Content hash of (probe name, probe VERSION, storage format, config values)."""
    module, name = _resolve(module_or_name)
    config = _resolve_config(module, name, config)
    return content_hash(
        {"probe": name, "version": module.VERSION, "format": FORMAT_VERSION, "config": config.to_dict()},
        length=20,
    )


def results_cache_dir() -> Path:
    return cache_dir() / "results"


def cached_run(
    module_or_name: Any,
    config: Any = None,
    cache_root: str | os.PathLike | None = None,
    progress: bool = True,
    refresh: bool = False,
) -> Result:
    """The probe's result for ``config``, from the cache when present, else run and stored.

    Entries live in ``<cache_root or cache_dir()/"results">/<probe>/<key>/`` with ``key`` from
    :func:`cache_key`. A corrupt entry (files not matching the manifest, unreadable, or saved for
    another key) is reported with a warning, removed and recomputed. ``refresh=True`` recomputes
    regardless. Runs through the cache never take a model: the config must determine everything.

    Two processes asking for the same entry at once compute it once: a miss is looked up again while
    holding the entry's lock (:func:`analysis.io.entry_lock`, beside the entry), and the probe runs
    and is saved under that lock. A hit needs no lock (entries are replaced whole), so a read-only
    cache serves what it holds; a miss there raises ``OSError`` naming the lock file before any
    computation. A hit refreshes the entry folder's modification time (its last use, for
    ``python -m probes cache prune --older-than``).
    """
    module, name = _resolve(module_or_name)
    config = _resolve_config(module, name, config)
    key = cache_key(module, config)
    folder = Path(cache_root) if cache_root is not None else results_cache_dir()
    folder = folder / name / key
    if not refresh and (hit := _cached_result(folder, module.Config, name, key, repair=False)) is not None:
        return hit
    with entry_lock(folder):
        if not refresh and (hit := _cached_result(folder, module.Config, name, key, repair=True)) is not None:
            return hit
        result = run_probe(module, config, progress=progress)
        result.meta["cache_key"] = key
        try:
            result.save(folder)
        except OSError as err:
            raise write_error(folder, err, "result cache entry") from err
    return result


def _cached_result(folder: Path, config_cls: type[ProbeConfig], name: str, key: str, repair: bool) -> Result | None:
    """The verified entry in ``folder``, or None. A damaged one is left alone unless ``repair`` (then it is
    reported and deleted); without the lock it may just be being replaced by another process."""
    if not folder.exists():
        return None
    try:
        result = Result.load(folder, config_cls=config_cls)
        if result.meta.get("cache_key") != key or result.probe != name:
            raise CorruptResultError(f"{folder} was saved for another key or probe")
    except CorruptResultError as e:
        if repair:
            warnings.warn(f"recomputing corrupt cache entry: {e}", RuntimeWarning, stacklevel=3)
            shutil.rmtree(folder, ignore_errors=True)
        return None
    touch(folder)
    result.from_cache = True
    return result


def result_difference(a: Result, b: Result, names: Sequence[str], select: Mapping[str, Any] | None = None) -> dict[str, float]:
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
