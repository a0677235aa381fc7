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
``run(config, model=None, progress=True) -> Result``;
``check_claims(result) -> Ledger`` the probe's claims, reading the result only (its config, arrays, scalars
                and meta); ``run`` records it, and :func:`cached_run` judges every cache hit again with it
                (:func:`judged`), so a claim added or corrected later needs no recompute and no
                ``VERSION`` bump. Optional: without it a hit keeps the ledger stored with it.

A minimal probe module::

    from dataclasses import dataclass
    import numpy as np, xarray as xr
    from analysis.claims.ledger import Claim, Ledger
    from analysis.probing.base import ProbeConfig, Result, param

    NAME = "running_mean"
    DESCRIPTION = "Running mean of i.i.d. draws against its closed form."
    VERSION = "1"
    REQUIRES = None  # pure theory: takes no model

    @dataclass(frozen=True)
    class Config(ProbeConfig):
        SMOKE = {"n": 100}
        n: int = param(10_000, "number of draws", minimum=1)
        seed: int = param(0, "seed of the draws", minimum=0)

    def run(config: Config, model=None, progress: bool = True) -> Result:
        rng = np.random.default_rng(config.seed)
        ...
        led = Ledger(NAME, preset=config.preset_name)
        led.predict("mean", measured=m, expected=0.5, se=1 / np.sqrt(12 * config.n), dof=math.inf,
                    within_run="no model: the draws' Monte Carlo SE is the whole uncertainty", alternative=0.0,
                    hypothesis="draws from a distribution centred at 0", source="...", why="95% band of n draws")
        return Result(probe=NAME, config=config, data=xr.Dataset(...), scalars={"mean": m}, ledger=led)

Config rules. Every field has a default, and **the defaults are the full experiment**: ``SMOKE``
holds the field overrides of the smoke preset (``PRESETS``, derived from it, maps ``"smoke"`` to them and
``"full"`` to none; a config may set ``PRESETS`` itself instead, where ``"full"`` must agree with the
defaults). Fields are declared as in every config of the workbench (:mod:`analysis.core.config`): types
``int``, ``float``, ``bool``, ``str`` (or ``Literal[...]``) and tuples of them, each optionally
``| None``, with :func:`param` giving the help and bounds (``choices``, ``minimum``, ``maximum``,
``min_len``) that the generic validation and the command line use. Construction turns lists into
tuples and ints into floats where a float is declared, then calls :meth:`ProbeConfig.validate`;
override ``validate`` (calling ``super().validate()`` first) for checks across fields. The field
``preset_name`` (``"smoke"`` | ``"full"``) records which preset the config was built from; the
ledger uses it to leave ``requires_full`` claims unevaluated in smoke runs.

Model fields. A probe that builds its own TinyTransformer declares the fields that describe it
(``layers``, ``d_model``, ``heads``, ``mlp``, ``attention``, ``norm``, ``pos``, ``vocab_size``,
``seed`` ...; see ``MODEL_FIELDS``) with :func:`model_param`, and gets its model from
:meth:`ProbeConfig.model_config` (``config.model_config(n_layers=depth, dtype="float64")``).
Validation builds that model config once, so what :class:`~analysis.zoo.model.ModelConfig` refuses
(``heads`` not dividing ``d_model``, an odd RoPE head size) is refused by the probe's config, in
the probe's field names.

Saved results are folders (:meth:`Result.save`): ``data.nc`` (the arrays, netCDF-4 via the netCDF4 library),
``result.json`` (probe, version, config, scalars, claims, meta) and ``manifest.json`` (SHA-256 of
both). Writes are atomic; :meth:`Result.load` refuses a folder whose files do not match the manifest.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shutil
import tempfile
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import xarray as xr

from analysis.claims.ledger import PRESETS as PRESET_NAMES
from analysis.claims.ledger import Claim, Ledger
from analysis.core.config import BaseConfig, FieldSpec, field_specs_of, param
from analysis.core.devices import DEVICES, model_device, resolve_device
from analysis.core.io import (
    atomic_replace_dir,
    atomic_write_json,
    content_hash,
    entry_lock,
    sha256_file,
    to_jsonable,
    touch,
    write_error,
)
from analysis.core.paths import cache_dir
from analysis.core.validation import check_choice
from analysis.probing import registry
from analysis.training.cache import RESULT_KEY_LENGTH
from analysis.training.train import record_checkpoints

if TYPE_CHECKING:
    from analysis.zoo.model import ModelConfig

FORMAT_VERSION = 3  # layout of a saved Result folder (3: claims carry stability and finding); in every cache key
RESULT_FILES = ("data.nc", "result.json")  # the files manifest.json hashes
NETCDF_ENGINE = "netcdf4"
# Option names the command line keeps for itself; no Config field may use them.
RESERVED_FIELDS = frozenset(
    {"preset", "json", "no_progress", "strict", "against_alternatives", "cache", "save", "help", "replicate_seeds"}
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

# The fields several probes use to describe the TinyTransformer they build, defined once here:
# probe field name -> (the ModelConfig field it sets, standard help, standard bounds). A probe
# declares one with ``model_param(name, default)`` (its own default, and its own help, choices or
# bounds where they differ); ``ProbeConfig.model_config`` maps them all to a ModelConfig.
# Only fields meaning exactly the ModelConfig field belong here: a sweep (``depths``), a switch
# standing for several fields (signal_propagation's ``mlp``, ``skip``) or a second model's fields
# (icl_gd's ``garg_*``) stay plain ``param`` fields mapped by the probe itself.
MODEL_FIELDS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "layers": ("n_layers", "transformer blocks L", {"minimum": 1}),
    "d_model": ("d_model", "residual width d", {"minimum": 2}),
    "heads": ("n_heads", "attention heads per layer (must divide d_model)", {"minimum": 1}),
    "mlp": ("d_mlp", "MLP hidden width (0 = attention only)", {"minimum": 0}),
    "attention": ("attention", "attention kernel", {}),
    "norm": ("norm", "norm placement", {}),
    "norm_type": ("norm_type", "norm kind", {}),
    "pos": ("pos", "positional encoding", {}),
    "dtype": ("dtype", "model dtype", {}),
    "vocab_size": ("vocab_size", "token vocabulary", {"minimum": 2}),
    "logit_scale": ("logit_scale", "multiplier of q.k (none: 1/sqrt(d_head))", {}),
    "ssmax_s": ("ssmax_s", "SSMax s (logits times s ln n)", {"minimum": 0.0}),
    "sigmoid_bias": ("sigmoid_bias", "sigmoid attention bias b", {}),
    "init_std": ("init_std", "std of the initial weights (gpt2 init)", {"minimum": 0.0}),
    "seed": ("seed", "seed of the model weights", {"minimum": 0, "maximum": MAX_SEED}),
}


def model_param(name: str, default: Any, help: str | None = None, **bounds: Any) -> Any:
    """A probe field that is also a field of the model the probe builds (see ``MODEL_FIELDS``).

    ``name`` must be the field's own name; it fixes the ModelConfig field the value maps to, and the
    standard help and bounds, which ``help`` and ``bounds`` (``choices``, ``minimum``, ``maximum``)
    replace for this probe. The default is the probe's own (its full experiment)::

        heads: int = model_param("heads", 4)
        attention: str = model_param("attention", "softmax", choices=("softmax", "ssmax"))
    """
    if name not in MODEL_FIELDS:
        raise TypeError(f"model_param: unknown model field {name!r}; known: {', '.join(MODEL_FIELDS)}")
    target, standard_help, standard_bounds = MODEL_FIELDS[name]
    spec = param(default, help or standard_help, **{**standard_bounds, **bounds})
    return field(default=default, metadata={**spec.metadata, "model_field": (name, target)})


def replicates_param(what: str, default: int = 5) -> Any:
    """A part's count of independent replicates: ``what`` says what each one draws afresh (e.g. "random layers
    (weights and tokens)"); their spread is the band of the part's claims (95% Student t). At least 2 (a spread),
    at most 64; the smoke preset runs 2 (unless its ``SMOKE`` says otherwise)::

        sparse_seeds: int = replicates_param("random layers (weights and tokens)")
    """
    return param(
        default,
        f"independent {what}, one replicate seed each; their spread is the claims' 95% t band",
        minimum=2,
        maximum=64,
        smoke=2,
    )


@cache
def _model_fields_of(cls: type) -> dict[str, str]:
    """ModelConfig field -> probe field, for the fields of ``cls`` declared with :func:`model_param`."""
    out = {}
    for f in dataclasses.fields(cls):
        if "model_field" in f.metadata:
            name, target = f.metadata["model_field"]
            if name != f.name:
                raise TypeError(f"{cls.__qualname__}.{f.name} is declared as model_param({name!r}, ...)")
            out[target] = f.name
    return out


@contextmanager
def fields_renamed(names: Mapping[str, str]) -> Iterator[None]:
    """Re-raise a ``ValueError`` from the block with every field name that ``names`` maps replaced.

    A probe builds ModelConfigs from its own fields; ``names`` maps ModelConfig names to the probe's
    (``{"n_heads": "heads"}``), so a rejected model reads as an error about the probe's option
    (``d_model must be divisible by heads ...``). Names are replaced as whole words.
    """
    try:
        yield
    except ValueError as err:
        names = {k: v for k, v in names.items() if k != v}
        if not names:
            raise
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
        raise ValueError(pattern.sub(lambda m: names[m.group(1)], str(err))) from err


@dataclass(frozen=True, kw_only=True)
class ProbeConfig(BaseConfig):
    """Base of every probe's ``Config``: presets, the model fields, and (from
    :class:`analysis.core.config.BaseConfig`) generic validation and the dict round trip.

    Subclasses are ``@dataclass(frozen=True)`` and set the class attribute ``SMOKE``: the fields the smoke
    preset overrides (the full preset is the defaults). ``PRESETS`` is derived from it.
    """

    SMOKE: ClassVar[dict[str, Any]] = {}
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {"smoke": {}, "full": {}}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "SMOKE" in cls.__dict__:
            if "PRESETS" in cls.__dict__:
                raise TypeError(f"{cls.__qualname__} sets both SMOKE and PRESETS: set SMOKE (the smoke overrides)")
            cls.PRESETS = {"smoke": cls.SMOKE, "full": {}}

    # which preset this config was built from; smoke runs leave `requires_full` claims unevaluated
    preset_name: str = param("full", "preset the config was built from", choices=PRESET_NAMES)
    # where models, data and measurements live (analysis.core.devices); left out of to_dict() on the CPU, so
    # every CPU result keeps the cache key it always had
    device: str = param("cpu", "cpu | cuda | auto (CUDA when torch sees a GPU)", choices=DEVICES, omit_at_default=True)

    def validate(self) -> None:
        """Every field against its declaration, then the model the model fields describe (an error
        names the probe's field). Override to add checks across fields (call ``super().validate()``
        first); raise ``ValueError`` naming the field."""
        super().validate()
        if self.model_fields():
            self.model_config()

    # ------------------------------------------------------------------ the model

    @classmethod
    def model_fields(cls) -> dict[str, str]:
        """ModelConfig field -> probe field, for the fields declared with :func:`model_param`."""
        return _model_fields_of(cls)

    def torch_device(self):
        """The ``torch.device`` of the ``device`` field (``auto`` resolved here, on the machine that
        runs); ``cuda`` without a GPU raises ``ValueError`` naming ``device``."""
        return resolve_device(self.device)

    def model_config(self, **overrides: Any) -> ModelConfig:
        """The :class:`~analysis.zoo.model.ModelConfig` of this config's model fields, with ``overrides``
        (ModelConfig names) applied; every other ModelConfig field keeps its default.

        A rejected combination raises ``ValueError`` naming the probe's fields (``heads``, not
        ``n_heads``); :meth:`validate` builds it without overrides, so such configs never exist.
        """
        from analysis.zoo.model import ModelConfig  # late import: torch is needed only with a model

        names = self.model_fields()
        values = {target: getattr(self, name) for target, name in names.items()}
        with fields_renamed({k: v for k, v in names.items() if k not in overrides}):
            return ModelConfig(**{**values, **overrides})

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
        """``PRESETS`` in the order smoke, full, with ``"full"`` filled in as ``{}`` when absent; the smoke preset
        holds every field's declared smoke value (``param(..., smoke=...)``, e.g. :func:`replicates_param`'s 2)
        under the config's own ``SMOKE`` entries."""
        out = {name: dict(cls.PRESETS.get(name, {})) for name in PRESET_NAMES if name in cls.PRESETS or name == "full"}
        if "smoke" in out:
            declared = {f.name: f.metadata["smoke"] for f in dataclasses.fields(cls) if "smoke" in f.metadata}
            out["smoke"] = {**declared, **out["smoke"]}
        return out

    @classmethod
    def field_specs(cls, include_preset: bool = False) -> tuple[FieldSpec, ...]:
        """Every field's spec; ``preset_name`` only when asked (the command line sets it via --preset).
        The probe's own fields come first, then ``device`` (help, error messages and sweeps list them so)."""
        specs = [s for s in field_specs_of(cls) if include_preset or s.name != "preset_name"]
        return tuple(sorted(specs, key=lambda s: s.name == "device"))

    @classmethod
    def _unknown_fields_message(cls, unknown: list[str]) -> str:
        return (
            f"unknown field {unknown[0]!r} for {cls.__module__}.{cls.__qualname__}; "
            f"allowed: {', '.join(['preset_name'] + [s.name for s in cls.field_specs()])}"
        )

    def digest(self) -> str:
        """Content hash of the values (16 hex digits)."""
        return content_hash(self.to_dict())


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
    if getattr(module, "check_claims", None) is not None and not callable(module.check_claims):
        fail("check_claims must be a function check_claims(result) -> Ledger")
    config_cls = getattr(module, "Config", None)
    if not (isinstance(config_cls, type) and issubclass(config_cls, ProbeConfig)):
        fail("Config must be a dataclass subclassing analysis.probing.base.ProbeConfig")
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

    An unknown name raises ``ValueError`` listing the available probes (:mod:`analysis.probing.registry` finds them).
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


# Properties of analysis.zoo.protocol.ProbeModel a requirement may name directly ("input" means input_kind,
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
    :class:`analysis.zoo.protocol.ProbeModel` exposes them, so an adapter around another library's model
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
    device = config.torch_device() if model is None else model_device(model)  # ValueError: cuda without a GPU
    start = time.perf_counter()
    with record_checkpoints() as trained:
        result = module.run(config, model=model, progress=progress)
    elapsed = time.perf_counter() - start
    if not isinstance(result, Result):
        raise TypeError(f"probe {name}: run() must return a analysis.probing.base.Result, got {type(result).__name__}")
    if result.probe != name:
        raise ValueError(f"probe {name}: run() returned a Result for probe {result.probe!r}")
    if not result.version:
        result.version = module.VERSION
    result.meta.setdefault("elapsed_s", elapsed)
    result.meta.setdefault("device", str(device))
    if trained:  # the training runs it used, for `cache prune --keep-figures`
        result.meta.setdefault("checkpoints", sorted(trained))
    return result


def cache_key(module_or_name: Any, config: Any = None) -> str:
    """Content hash of (probe name, probe VERSION, storage format, config values)."""
    module, name = _resolve(module_or_name)
    config = _resolve_config(module, name, config)
    return content_hash(
        {"probe": name, "version": module.VERSION, "format": FORMAT_VERSION, "config": config.to_dict()},
        length=RESULT_KEY_LENGTH,
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
    holding the entry's lock (:func:`analysis.core.io.entry_lock`, beside the entry), and the probe runs
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
        return _judge(module, name, hit)
    with entry_lock(folder):
        if not refresh and (hit := _cached_result(folder, module.Config, name, key, repair=True)) is not None:
            return _judge(module, name, hit)
        result = run_probe(module, config, progress=progress)
        result.meta["cache_key"] = key
        try:
            result.save(folder)
        except OSError as err:
            raise write_error(folder, err, "result cache entry") from err
    return result


def judged(module_or_name: Any, result: Result) -> Result:
    """``result`` with its ledger judged again by today's claims: the probe's ``check_claims(result)``.

    A probe's claims read only its result (config, arrays, scalars, meta), so a result from the cache is
    judged by the claim code of today, not of the day it was computed: adding or correcting a claim needs
    no recompute and no ``VERSION`` bump (``VERSION`` is bumped when the *measurement* changes). A probe
    without ``check_claims`` keeps the stored ledger (brought to today's stability and triage rules by
    :meth:`Result.load`). The result is changed in place and returned.
    """
    module, name = _resolve(module_or_name)
    return _judge(module, name, result)


def _judge(module: Any, name: str, result: Result) -> Result:
    """:func:`judged` for a module already checked against the contract (:func:`cached_run` resolved it)."""
    if result.probe != name:
        raise ValueError(f"cannot judge a result of probe {result.probe!r} with the claims of {name!r}")
    check = getattr(module, "check_claims", None)
    if check is not None:
        result.ledger = check(result)
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
