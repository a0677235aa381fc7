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

__all__ = ["BaseConfig", "FieldSpec", "check_not_renamed", "field_specs_of", "param", "renamed_fields"]


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


@cache
def renamed_fields(cls: type) -> dict[str, str]:
    """Former name -> field name, for every field of config class ``cls`` declared with ``param(..., formerly=...)``."""
    return {old: s.name for s in field_specs_of(cls) for old in s.formerly}


def check_not_renamed(cls: type, names) -> None:
    """``TypeError`` naming the new field if any of ``names`` is a former name of a field of ``cls``."""
    renamed = renamed_fields(cls)
    old = next((n for n in names if n in renamed), None)
    if old is not None:
        spec = next(s for s in field_specs_of(cls) if s.name == renamed[old])
        raise TypeError(f"{cls.__name__}: field {old!r} is now {spec.name!r} ({spec.help})")


@dataclass(frozen=True)
class BaseConfig:
    """Base of every config: normalisation and validation from the field declarations, dict round trip.

    Subclasses are ``@dataclass(frozen=True)``; override :meth:`validate` (calling
    ``super().validate()`` first) for checks across fields.
    """

    # An int given for a float field becomes a float. The model and trainer configs keep ints as
    # given: their to_dict() keys stored checkpoints, and a converted value would change the key.
    FLOATS_FROM_INTS: ClassVar[bool] = True

    def __new__(cls, *args: Any, **kwargs: Any):
        # the generated __init__ would say only "unexpected keyword argument": name the field's new name instead
        check_not_renamed(cls, kwargs)
        return super().__new__(cls)

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
        check_not_renamed(cls, values)
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
            out[spec.name] = to_jsonable(value)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]):
        """The config with the values of ``d`` (as :meth:`to_dict` gives them); unknown names are refused (a
        former name with a ``TypeError`` naming the new one)."""
        cls._check_names(d)
        return cls(**d)


def _same_value(a: Any, b: Any) -> bool:
    """Equal with the same Python type (1 and 1.0 differ in a stored key's JSON, so 1 is not the default 1.0)."""
    return type(a) is type(b) and a == b
