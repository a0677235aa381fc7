"""Config fields: :class:`FieldSpec` (what the framework knows about one field: its type, bounds, help, and how
it is checked, parsed from the command line and normalised) and :func:`field_specs_of`, which resolves every field
of a config class from its annotation and its :func:`analysis.core.config.param` metadata. The supported
annotations are listed in :mod:`analysis.core.config`.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from functools import cache
from typing import Any

from analysis.core.validation import check_bool, check_choice, check_float, check_int, check_sequence

NO_SMOKE: Any = type("NoSmoke", (), {"__repr__": lambda self: "NO_SMOKE"})()  # FieldSpec.smoke: none declared
_SCALAR_TYPES = {int: "int", float: "float", bool: "bool", str: "str"}
_ITEM_WORDS = {int: "integers", float: "numbers", bool: "true/false values", str: "strings"}
_SCALAR_WORDS = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


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
    formerly: tuple[str, ...] = ()  # names it had until the last release: refused, with a message naming this one
    path: tuple[str, ...] = ()  # attributes from the config to the value: ("sparse", "keys") in a nested part
    smoke: Any = NO_SMOKE  # the value in a probe's smoke preset where declared (param(..., smoke=...))

    @property
    def attrs(self) -> tuple[str, ...]:
        """The attribute path from the config to the value (``(name,)`` for a field of the config itself)."""
        return self.path or (self.name,)

    @property
    def nested(self) -> bool:
        """A field of a part config nested in the config (its own construction checked it)."""
        return len(self.attrs) > 1

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
    """Every field of config class ``cls``, resolved, in declaration order, each under its flat name.

    A field declared with ``metadata["part"]`` holds a nested part config (``analysis.core.config.part``): its fields
    follow in its place, each named ``<part>_<field>`` (its switch, ``metadata["switch"]``, named ``<part>`` alone:
    ``enabled``, or a selection such as the laws the part runs on) with the attribute path to reach it. The fields of a
    part config class itself (``PART`` set) carry the same flat names, so that its own checks name the field as the
    command line spells it. The fields of a part with ``FLAT = True`` (a probe's model: ``n_layers``) keep their own
    names; it has no switch.
    """
    hints = typing.get_type_hints(cls)
    prefix = getattr(cls, "PART", None)
    keep_names = getattr(cls, "FLAT", False)  # a part whose fields keep their own names (the model's: n_layers)
    specs = []
    for f in dataclasses.fields(cls):
        if f.default is dataclasses.MISSING:
            raise TypeError(f"{cls.__name__}.{f.name} needs a default")
        meta = f.metadata
        if "part" in meta:
            part_cls = meta["part"]
            if getattr(part_cls, "PART", None) != f.name:
                raise TypeError(f"{cls.__name__}.{f.name} nests {part_cls.__name__}, whose PART must be {f.name!r}")
            specs.extend(dataclasses.replace(s, path=(f.name, *s.attrs)) for s in field_specs_of(part_cls))
            continue
        kind = _resolve_type(cls, f.name, hints[f.name])
        if kind.choices is not None and "choices" in meta:
            raise TypeError(f"{cls.__name__}.{f.name}: give the choices once, as a Literal or as choices=")
        if meta.get("switch") and (
            prefix is None or keep_names or (kind.base is bool and not kind.is_seq) != (f.name == "enabled")
        ):
            raise TypeError(
                f"{cls.__name__}.{f.name}: a switch is a part config's field, its bool one named 'enabled' (a "
                "selection, e.g. the laws the part runs on, has its own name)"
            )
        name = f.name if prefix is None or keep_names else prefix if meta.get("switch") else f"{prefix}_{f.name}"
        min_len = kind.length if kind.length is not None else meta.get("min_len", 1)
        specs.append(
            FieldSpec(
                name=name,
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
                formerly=meta.get("formerly", ()),
                path=(f.name,) if name != f.name else (),
                smoke=meta.get("smoke", NO_SMOKE),
            )
        )
    names = [s.name for s in specs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise TypeError(f"{cls.__name__}: flat field name(s) {twice} given twice (a field and a nested part's)")
    old = [o for s in specs for o in s.formerly]
    clashes = sorted({o for o in old if old.count(o) > 1} | (set(old) & set(names)))
    if clashes:
        raise TypeError(f"{cls.__name__}: former name(s) {clashes} given twice or still a field's name")
    return tuple(specs)


def _fmt_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
