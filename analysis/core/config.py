"""Typed configs: one machinery for the model, the trainer and the probes.

A config is a frozen dataclass subclassing :class:`BaseConfig`. Each field is declared with its type
and :func:`param` (a default, a line of help, and bounds), and the base class turns those
declarations into validation, a dict round trip and -- for the probes' command line -- parsing and
help text::

    from typing import Literal

    @dataclass(frozen=True)
    class Sweep(BaseConfig):
        norm: Literal["pre", "post"] = param("pre", "norm placement")
        depths: tuple[int, ...] = param((1, 2, 4), "numbers of blocks L", minimum=1)
        betas: tuple[float, float] = param((0.9, 0.999), "Adam decay rates", minimum=0.0, maximum=0.999999)
        scale: float | None = param(None, "multiplier of q.k (None: 1/sqrt(d_head))")

        def validate(self) -> None:       # checks across fields only; the base checks each field
            super().validate()
            if max(self.depths) > 32 and self.norm == "post":
                raise ValueError("depths must stay <= 32 with norm 'post' (Post-LN diverges)")

Supported annotations: ``int``, ``float``, ``bool``, ``str`` and ``Literal[...]`` of strings (the
allowed values; the same as ``param(..., choices=...)``); tuples of those, either of any length
(``tuple[int, ...]``, at least ``min_len`` items, 1 unless given) or of a fixed length
(``tuple[float, float]``); each optionally ``| None``. Every field needs a default.

Validation. Constructing a config normalises the values (lists become tuples; with
``FLOATS_FROM_INTS`` an int given for a float field becomes a float), checks every field against its
type, choices and inclusive ``minimum``/``maximum`` (of each item, for tuples), then runs
:meth:`BaseConfig.validate`, which subclasses extend with checks across fields. Every error is a
``ValueError`` whose message starts with the field's name -- the same text reads well in a traceback
and as the one line the command line prints.

Serialisation. :meth:`BaseConfig.to_dict` gives the values in field order as JSON-safe data (tuples
as lists); :meth:`BaseConfig.from_dict` and :meth:`BaseConfig.replace` refuse unknown field names.
Content hashes of ``to_dict()`` key the checkpoint and result caches, so a field's name, default and
JSON form are part of every stored key: change them only together with a version bump.

Fields renamed later. A field's name is its only name: ``to_dict()`` writes it, so renaming a field moves every
key stored under its config (rename together with a version bump). ``param(..., formerly="old_name")`` records a
name the field had until the last release; a config built, replaced or read with that name raises ``TypeError``
naming the new one (and the command line answers ``--old-name`` with one line naming ``--new-name``).

Nested parts. A probe made of parts nests one config per part: a :class:`PartConfig` subclass naming its part
(``PART = "sparse"``), declared in the probe's config with :func:`part`, its on/off field (if any) with
:func:`switch`::

    @dataclass(frozen=True)
    class Sparse(PartConfig):
        PART = "sparse"
        enabled: bool = switch(True, "measure sparsemax's isolation of a planted key")
        keys: tuple[int, ...] = param((16, 64), "keys n each row sees", minimum=2)

    @dataclass(frozen=True)
    class Probe(BaseConfig):
        seed: int = param(0, "seed")
        sparse: Sparse = part(Sparse)

Code reads ``config.sparse.keys``. Everything that names fields by string -- :meth:`BaseConfig.field_specs`,
:meth:`~BaseConfig.to_dict`, :meth:`~BaseConfig.from_dict`, :meth:`~BaseConfig.replace`, presets, the command line,
sweeps and error messages -- uses the flat names generated from the nesting: ``sparse_keys`` (``--sparse-keys``) and,
for the switch, the part's name alone (``sparse``, ``--sparse``; a part whose switch selects what it runs, ``laws:
tuple[str, ...] = switch(("gaussian",), ...)``, spells it the same way: ``--looped gaussian``). The constructor takes
either (``Probe(sparse_keys=(8, 32))`` or ``Probe(sparse=Sparse(keys=(8, 32)))``); :meth:`BaseConfig.value_of` reads a
value by flat name. ``to_dict()`` is flat, so nesting the fields of an existing config leaves its keys as they were.
A part with ``FLAT = True`` keeps its fields' own names (a probe's model fields, ``config.model.n_layers``, spelled
``n_layers`` and ``--n-layers`` as the model config's field).

Fields added later. A field declared with ``param(..., omit_at_default=True)`` is left out of
:meth:`BaseConfig.to_dict` while it holds its default, and :meth:`BaseConfig.from_dict` fills it in
when absent. Adding such a field therefore leaves the dict (and every cache key) of each existing
config as it was; only configs that set it to something else get a new key. Use it for every field
added to a config whose ``to_dict()`` keys stored entries (the model and trainer configs).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, ClassVar

from analysis.core.fields import FieldSpec, field_specs_of
from analysis.core.io import to_jsonable

__all__ = [
    "BaseConfig",
    "FieldSpec",
    "PartConfig",
    "check_not_renamed",
    "field_specs_of",
    "param",
    "part",
    "renamed_fields",
    "switch",
]


def param(
    default: Any,
    help: str,
    *,
    choices: tuple | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
    min_len: int | None = None,
    omit_at_default: bool = False,
    formerly: str | tuple[str, ...] = (),
    smoke: Any = dataclasses.MISSING,
) -> Any:
    """A config field with the metadata the generic validation and the command line use.

    ``choices`` lists the allowed values (of each item, for tuple fields; a ``Literal`` annotation
    says the same); ``minimum``/``maximum`` bound numbers inclusively (each item, for tuple
    fields); ``min_len`` is the shortest allowed tuple (1 unless given). ``omit_at_default`` leaves
    the field out of ``to_dict()`` while it holds ``default`` (a field added after configs were
    stored: their keys stay as they were; see the module docstring). ``formerly`` names the field
    had until the last release (refused with a ``TypeError`` naming the field). ``smoke`` is the field's value in
    a probe's smoke preset, declared beside its default (``analysis.probing.base.ProbeConfig.presets``: the config's
    ``SMOKE`` entries win).
    """
    meta: dict[str, Any] = {"help": help}
    if omit_at_default:
        meta["omit_at_default"] = True
    if formerly:
        meta["formerly"] = (formerly,) if isinstance(formerly, str) else tuple(formerly)
    if choices is not None:
        meta["choices"] = tuple(choices)
    if minimum is not None:
        meta["minimum"] = minimum
    if maximum is not None:
        meta["maximum"] = maximum
    if min_len is not None:
        meta["min_len"] = min_len
    if smoke is not dataclasses.MISSING:
        meta["smoke"] = smoke
    return field(default=default, metadata=meta)


def switch(default: Any, help: str, **kwargs: Any) -> Any:
    """The field that turns a part on or off, in a :class:`PartConfig`; its flat name is the part's name. Either
    ``enabled: bool``, or a selection under its own name (``laws: tuple[str, ...]``: the laws the part runs on,
    none: off)."""
    spec = param(default, help, **kwargs)
    return field(default=default, metadata={**spec.metadata, "switch": True})


def part(cls: type[PartConfig]) -> Any:
    """A field holding the nested config of one part (``cls``, whose ``PART`` is the field's name); its default is
    ``cls()``, the part's declared defaults."""
    return field(default=cls(), metadata={"part": cls})


@cache
def renamed_fields(cls: type) -> dict[str, str]:
    """Former name -> field name, for every field of config class ``cls`` declared with ``param(..., formerly=...)``."""
    return {old: s.name for s in field_specs_of(cls) for old in s.formerly}


def check_not_renamed(cls: type, names) -> None:
    """``TypeError`` naming the new field if any of ``names`` is a former name of a field of ``cls``."""
    renamed = renamed_fields(cls)
    current = {f.name for f in dataclasses.fields(cls)}  # a part's attribute may share a former flat name ("lr")
    old = next((n for n in names if n in renamed and n not in current), None)
    if old is not None:
        spec = next(s for s in field_specs_of(cls) if s.name == renamed[old])
        raise TypeError(f"{cls.__name__}: field {old!r} is now {spec.name!r} ({spec.help})")


@cache
def _parts_of(cls: type) -> dict[str, type]:
    """Field name -> part config class, for the fields of ``cls`` declared with :func:`part`."""
    return {f.name: f.metadata["part"] for f in dataclasses.fields(cls) if "part" in f.metadata}


@cache
def _nested_paths(cls: type) -> dict[str, tuple[str, ...]]:
    """Flat name -> (part, attribute), for the fields of the parts nested in ``cls``."""
    return {s.name: s.attrs for s in field_specs_of(cls) if s.nested}


def _nest(cls: type, values: Mapping[str, Any], base: Any = None) -> dict[str, Any]:
    """``values`` by flat name -> constructor arguments of ``cls``: each nested part's flat values applied to the
    part given whole, else to ``base``'s part (:meth:`BaseConfig.replace`), else to the part's defaults."""
    parts, paths = _parts_of(cls), _nested_paths(cls)
    out: dict[str, Any] = {}
    changes: dict[str, dict[str, Any]] = {}
    for name, value in values.items():
        if name in parts and isinstance(value, parts[name]):
            out[name] = value
        elif name in paths:
            part_name, attr = paths[name]
            changes.setdefault(part_name, {})[attr] = value
        else:
            out[name] = value
    for part_name, attrs in changes.items():
        given = out.get(part_name, getattr(base, part_name) if base is not None else parts[part_name]())
        out[part_name] = dataclasses.replace(given, **attrs)
    return out


class _ConfigType(type):
    """Builds a config with nested parts from flat names, and answers a renamed field with its new name (the
    generated ``__init__`` would say only "unexpected keyword argument")."""

    def __call__(cls, *args: Any, **kwargs: Any):
        check_not_renamed(cls, kwargs)
        if _parts_of(cls):
            kwargs = _nest(cls, kwargs)
        return super().__call__(*args, **kwargs)


@dataclass(frozen=True)
class BaseConfig(metaclass=_ConfigType):
    """Base of every config: normalisation and validation from the field declarations, dict round trip.

    Subclasses are ``@dataclass(frozen=True)``; override :meth:`validate` (calling
    ``super().validate()`` first) for checks across fields.
    """

    # An int given for a float field becomes a float. The model and trainer configs keep ints as
    # given: their to_dict() keys stored checkpoints, and a converted value would change the key.
    FLOATS_FROM_INTS: ClassVar[bool] = True

    def __post_init__(self) -> None:
        for spec in field_specs_of(type(self)):
            if spec.nested:  # a nested part normalised and checked its own fields
                continue
            value = spec.normalise(getattr(self, spec.attrs[0]), self.FLOATS_FROM_INTS)
            object.__setattr__(self, spec.attrs[0], value)
        self.validate()

    def validate(self) -> None:
        """Check every field against its type and metadata. Override to add checks across fields
        (call ``super().validate()`` first); raise ``ValueError`` naming the field."""
        for spec in field_specs_of(type(self)):
            if not spec.nested:
                spec.check(getattr(self, spec.attrs[0]))
        for name, part_cls in _parts_of(type(self)).items():  # a part given whole is the part's own config
            value = getattr(self, name)
            if not isinstance(value, part_cls):
                raise ValueError(
                    f"{name} must be a {part_cls.__name__} config (or set its fields by their flat names), "
                    f"got {value!r}"
                )

    @classmethod
    def field_specs(cls) -> tuple[FieldSpec, ...]:
        """Every field's spec, in declaration order (a nested part's fields in its place, under flat names)."""
        return field_specs_of(cls)

    @classmethod
    def field_names(cls) -> list[str]:
        """The flat field names in declaration order (TypeError for an unsupported declaration)."""
        return [s.name for s in field_specs_of(cls)]

    @classmethod
    def _check_names(cls, values: Mapping[str, Any]) -> None:
        check_not_renamed(cls, values)
        unknown = [k for k in values if k not in cls.field_names()]
        if unknown:
            raise ValueError(cls._unknown_fields_message(unknown))

    @classmethod
    def _unknown_fields_message(cls, unknown: list[str]) -> str:
        return f"unknown {cls.__name__} field(s) {sorted(unknown)}; allowed: {sorted(cls.field_names())}"

    def value_of(self, name: str) -> Any:
        """The value of the field of flat name ``name`` (``sparse_keys``: ``self.sparse.keys``)."""
        spec = next((s for s in field_specs_of(type(self)) if s.name == name), None)
        if spec is None:
            raise ValueError(self._unknown_fields_message([name]))
        return self._at(spec.attrs)

    def _at(self, attrs: tuple[str, ...]) -> Any:
        value: Any = self
        for attr in attrs:
            value = getattr(value, attr)
        return value

    def replace(self, **changes: Any):
        """A copy with ``changes`` (by flat name, or a nested part whole) applied, validated again."""
        self._check_names([k for k in changes if k not in _parts_of(type(self))])
        return dataclasses.replace(self, **_nest(type(self), changes, base=self))

    def to_dict(self) -> dict[str, Any]:
        """The values in field order, JSON-safe (tuples become lists); a field declared with
        ``omit_at_default=True`` is left out while it holds its default."""
        out = {}
        for spec in field_specs_of(type(self)):
            value = self._at(spec.attrs)
            if spec.omit_at_default and _same_value(value, spec.default):
                continue
            out[spec.name] = to_jsonable(value)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]):
        """The config with the values of ``d`` (as :meth:`to_dict` gives them); unknown names are refused (a
        former name with a ``TypeError`` naming the new one)."""
        cls._check_names(d)
        return cls(**d)


@dataclass(frozen=True)
class PartConfig(BaseConfig):
    """The config of one part of a probe, nested in the probe's config with :func:`part` (see the module
    docstring). ``PART`` is the part's name: the field that holds it, and the prefix of its fields' flat names. Its
    checks (``validate``) name fields by their flat names (:meth:`flat`), as the command line spells them."""

    PART: ClassVar[str] = ""
    # True: the part's fields keep their own names on the command line and in to_dict() (a probe's model fields,
    # named as the ModelConfig's: config.model.n_layers is --n-layers)
    FLAT: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not getattr(cls, "PART", ""):
            raise TypeError(f"{cls.__qualname__}: set PART, the name of the part (the field that nests it)")

    @classmethod
    def flat(cls, attr: str) -> str:
        """The flat name of field ``attr``: ``<part>_<attr>``, ``<part>`` for the switch, ``attr`` with ``FLAT``."""
        return next(s.name for s in field_specs_of(cls) if s.attrs == (attr,))


def _same_value(a: Any, b: Any) -> bool:
    """Equal with the same Python type (1 and 1.0 differ in a stored key's JSON, so 1 is not the default 1.0)."""
    return type(a) is type(b) and a == b
