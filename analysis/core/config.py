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

Fields renamed later. ``param(..., key="old_name")`` keeps a renamed field's stored name: ``to_dict()`` writes
it under ``key`` (so every cache key stays as it was) and ``from_dict()`` reads either name.

Fields added later. A field declared with ``param(..., omit_at_default=True)`` is left out of
:meth:`BaseConfig.to_dict` while it holds its default, and :meth:`BaseConfig.from_dict` fills it in
when absent. Adding such a field therefore leaves the dict (and every cache key) of each existing
config as it was; only configs that set it to something else get a new key. Use it for every field
added to a config whose ``to_dict()`` keys stored entries (the model and trainer configs).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, ClassVar

from analysis.core.io import to_jsonable
from analysis.core.validation import check_bool, check_choice, check_float, check_int, check_sequence

_SCALAR_TYPES = {int: "int", float: "float", bool: "bool", str: "str"}
_ITEM_WORDS = {int: "integers", float: "numbers", bool: "true/false values", str: "strings"}
_SCALAR_WORDS = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def param(
    default: Any,
    help: str,
    *,
    choices: tuple | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
    min_len: int | None = None,
    omit_at_default: bool = False,
    key: str | None = None,
    smoke: Any = dataclasses.MISSING,
) -> Any:
    """A config field with the metadata the generic validation and the command line use.

    ``choices`` lists the allowed values (of each item, for tuple fields; a ``Literal`` annotation
    says the same); ``minimum``/``maximum`` bound numbers inclusively (each item, for tuple
    fields); ``min_len`` is the shortest allowed tuple (1 unless given). ``omit_at_default`` leaves
    the field out of ``to_dict()`` while it holds ``default`` (a field added after configs were
    stored: their keys stay as they were; see the module docstring). ``key`` is the name the field has in
    ``to_dict()`` when it differs from the attribute's (a field renamed after configs were stored under its old
    name: the stored keys stay as they were; ``from_dict`` takes either name). ``smoke`` is the field's value in
    a probe's smoke preset, declared beside its default (``analysis.probing.base.ProbeConfig.presets``: the config's
    ``SMOKE`` entries win).
    """
    meta: dict[str, Any] = {"help": help}
    if omit_at_default:
        meta["omit_at_default"] = True
    if key is not None:
        meta["key"] = key
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


@dataclass(frozen=True)
class FieldSpec:
    """What the framework knows about one config field (resolved from its type and metadata)."""

    name: str  # python name, e.g. "n_layers"
    base: type  # int | float | bool | str: the scalar type, or the item type of a tuple
    is_seq: bool  # a tuple of base
    optional: bool  # `| None` allowed
    default: Any
    help: str
    choices: tuple | None
    minimum: float | None
    maximum: float | None
    min_len: int  # shortest tuple
    max_len: int | None = None  # longest tuple (fixed-length tuples: == min_len)
    omit_at_default: bool = False  # left out of to_dict() while at its default (a field added later)
    key: str = ""  # its name in to_dict() (and so in every stored key): the field's name unless renamed since

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
            what = ("one of " if not self.is_seq else "values from ") + ", ".join(map(_fmt_value, self.choices))
        else:
            what = (_ITEM_WORDS if self.is_seq else _SCALAR_WORDS)[self.base]
        lo, hi = self.minimum, self.maximum
        if lo is not None and hi is not None:
            what += f" in [{_fmt_value(lo)}, {_fmt_value(hi)}]"
        elif lo is not None:
            what += f" >= {_fmt_value(lo)}"
        elif hi is not None:
            what += f" <= {_fmt_value(hi)}"
        if self.is_seq:
            what = f"a comma-separated list of {what}"
            if self.max_len is not None and self.max_len == self.min_len:
                what += f" (exactly {self.min_len})"
            elif self.min_len > 1:
                what += f" (at least {self.min_len})"
        if self.optional:
            what += ", or none"
        return what

    def check(self, value: Any) -> None:
        """Raise ``ValueError`` naming the field unless ``value`` is allowed."""
        if value is None:
            if not self.optional:
                raise ValueError(f"{self.name} must be {self.allowed()}, got None")
            return
        if not self.is_seq:
            self._check_item(self.name, value)
            return
        check_sequence(self.name, value, min_len=self.min_len)
        if self.max_len is not None and len(value) > self.max_len:
            exactly = "exactly" if self.max_len == self.min_len else "at most"
            raise ValueError(f"{self.name} must have {exactly} {self.max_len} items, got {list(value)!r}")
        for i, item in enumerate(value):
            self._check_item(f"{self.name}[{i}]", item)
        if not isinstance(value, tuple):
            raise ValueError(f"{self.name} must be a tuple, got {type(value).__name__}")

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

    def normalise(self, value: Any, floats_from_ints: bool) -> Any:
        """Lists -> tuples; with ``floats_from_ints`` ints -> floats where a float is declared (bools
        are left to fail validation). Anything else is returned unchanged for :meth:`check` to judge."""

        def item(v: Any) -> Any:
            if floats_from_ints and self.base is float and isinstance(v, int) and not isinstance(v, bool):
                return float(v)
            return v

        if value is None:
            return None
        if self.is_seq and isinstance(value, list | tuple):
            return tuple(item(v) for v in value)
        return item(value)


class _Resolved(typing.NamedTuple):
    base: type
    choices: tuple | None
    is_seq: bool = False
    optional: bool = False
    length: int | None = None  # fixed tuple length


def _resolve_item(tp: Any) -> tuple[type, tuple | None] | None:
    """(scalar type, choices) of a scalar or ``Literal`` annotation; None when unsupported."""
    if tp in _SCALAR_TYPES:
        return tp, None
    if typing.get_origin(tp) is typing.Literal:
        values = typing.get_args(tp)
        kinds = {type(v) for v in values}
        if len(kinds) == 1 and next(iter(kinds)) in _SCALAR_TYPES:
            return next(iter(kinds)), tuple(values)
    return None


def _resolve_type(cls: type, name: str, tp: Any) -> _Resolved:
    """What a supported annotation means (see the module docstring); TypeError otherwise."""
    optional = False
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) != 1 or len(typing.get_args(tp)) != 2:
            raise TypeError(f"{cls.__name__}.{name}: unions other than `X | None` are not supported")
        optional, tp = True, args[0]
    if typing.get_origin(tp) is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis and (item := _resolve_item(args[0])):
            return _Resolved(*item, is_seq=True, optional=optional)
        items = [_resolve_item(a) for a in args]
        if args and all(items) and len(set(items)) == 1:
            return _Resolved(*items[0], is_seq=True, optional=optional, length=len(args))
    elif item := _resolve_item(tp):
        return _Resolved(*item, optional=optional)
    raise TypeError(
        f"{cls.__name__}.{name}: unsupported type {tp!r}; use int, float, bool, str or Literal[...], a tuple of "
        "them (tuple[int, ...] or fixed-length tuple[float, float]), optionally `| None`"
    )


@cache
def field_specs_of(cls: type) -> tuple[FieldSpec, ...]:
    """Every field of config class ``cls``, resolved, in declaration order."""
    hints = typing.get_type_hints(cls)
    specs = []
    for f in dataclasses.fields(cls):
        if f.default is dataclasses.MISSING:
            raise TypeError(f"{cls.__name__}.{f.name} needs a default")
        kind = _resolve_type(cls, f.name, hints[f.name])
        meta = f.metadata
        if kind.choices is not None and "choices" in meta:
            raise TypeError(f"{cls.__name__}.{f.name}: give the choices once, as a Literal or as choices=")
        min_len = kind.length if kind.length is not None else meta.get("min_len", 1)
        specs.append(
            FieldSpec(
                name=f.name,
                base=kind.base,
                is_seq=kind.is_seq,
                optional=kind.optional,
                default=f.default,
                help=meta.get("help", ""),
                choices=kind.choices if kind.choices is not None else meta.get("choices"),
                minimum=meta.get("minimum"),
                maximum=meta.get("maximum"),
                min_len=min_len,
                max_len=kind.length,
                omit_at_default=bool(meta.get("omit_at_default", False)),
                key=meta.get("key", f.name),
            )
        )
    keys = [s.key for s in specs]
    clashes = sorted(
        {k for k in keys if keys.count(k) > 1}
        | ({s.key for s in specs if s.key != s.name} & {s.name for s in specs if s.key == s.name})
    )
    if clashes:
        raise TypeError(f"{cls.__name__}: fields share the stored key(s) {clashes} (param key= must be unique)")
    return tuple(specs)


@dataclass(frozen=True)
class BaseConfig:
    """Base of every config: normalisation and validation from the field declarations, dict round trip.

    Subclasses are ``@dataclass(frozen=True)``; override :meth:`validate` (calling
    ``super().validate()`` first) for checks across fields.
    """

    # An int given for a float field becomes a float. The model and trainer configs keep ints as
    # given: their to_dict() keys stored checkpoints, and a converted value would change the key.
    FLOATS_FROM_INTS: ClassVar[bool] = True

    def __post_init__(self) -> None:
        for spec in field_specs_of(type(self)):
            value = spec.normalise(getattr(self, spec.name), self.FLOATS_FROM_INTS)
            object.__setattr__(self, spec.name, value)
        self.validate()

    def validate(self) -> None:
        """Check every field against its type and metadata. Override to add checks across fields
        (call ``super().validate()`` first); raise ``ValueError`` naming the field."""
        for spec in field_specs_of(type(self)):
            spec.check(getattr(self, spec.name))

    @classmethod
    def field_specs(cls) -> tuple[FieldSpec, ...]:
        """Every field's spec, in declaration order."""
        return field_specs_of(cls)

    @classmethod
    def field_names(cls) -> list[str]:
        """The field names in declaration order (TypeError for an unsupported declaration)."""
        return [s.name for s in field_specs_of(cls)]

    @classmethod
    def _check_names(cls, values: Mapping[str, Any]) -> None:
        unknown = [k for k in values if k not in cls.field_names()]
        if unknown:
            raise ValueError(cls._unknown_fields_message(unknown))

    @classmethod
    def _unknown_fields_message(cls, unknown: list[str]) -> str:
        return f"unknown {cls.__name__} field(s) {sorted(unknown)}; allowed: {sorted(cls.field_names())}"

    def replace(self, **changes: Any):
        """A copy with ``changes`` applied (validated again)."""
        self._check_names(changes)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The values in field order, JSON-safe (tuples become lists); a field declared with
        ``omit_at_default=True`` is left out while it holds its default."""
        out = {}
        for spec in field_specs_of(type(self)):
            value = getattr(self, spec.name)
            if spec.omit_at_default and _same_value(value, spec.default):
                continue
            out[spec.key] = to_jsonable(value)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]):
        """The config with the values of ``d`` (as :meth:`to_dict` gives them: a renamed field under its stored
        ``key``; its new name is taken too); unknown names are refused."""
        renamed = {s.key: s.name for s in field_specs_of(cls) if s.key != s.name}
        values = {renamed.get(k, k): v for k, v in d.items()}
        if len(values) != len(d):
            raise ValueError(f"a renamed field is given under both names: {sorted(set(d) & set(renamed.values()))}")
        cls._check_names(values)
        return cls(**values)


def _same_value(a: Any, b: Any) -> bool:
    """Equal with the same Python type (1 and 1.0 differ in a stored key's JSON, so 1 is not the default 1.0)."""
    return type(a) is type(b) and a == b


def _fmt_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
