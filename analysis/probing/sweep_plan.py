"""A sweep's plan: the grid of config values (and seeds) of one probe, validated, with every point's config and
result-cache key (:class:`Plan`, built by :func:`plan`), and the command line's grid syntax (:func:`parse_grid_arg`,
:func:`parse_seeds`). The grid's rules are in :mod:`analysis.probing.sweep` ("The grid", "Validation first")."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analysis.core.config import FieldSpec, renamed_fields
from analysis.probing.config import ProbeConfig
from analysis.probing.contract import _resolve
from analysis.probing.result_cache import cache_key

SEED_FIELD = "seed"


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
    if key in renamed_fields(config_cls):
        raise ValueError(f"{what} {name!r} of probe {probe} is now {renamed_fields(config_cls)[key]!r}")
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
