"""Argument validation shared by every config in the workbench.

Every error names the offending field and what is allowed, so that the same message reads well in a
notebook traceback and as the one line the command line prints before exiting with code 2.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any


def check_choice(field: str, value: Any, allowed: Iterable[Any]) -> None:
    """Raise ``ValueError`` unless ``value`` is one of ``allowed``."""
    allowed = tuple(allowed)
    if value not in allowed:
        raise ValueError(f"{field} must be one of {list(allowed)!r}, got {value!r}")


def check_int(field: str, value: Any, *, minimum: int | None = None, maximum: int | None = None) -> None:
    """Raise ``ValueError`` unless ``value`` is an int (not a bool) in ``[minimum, maximum]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{field} must be an integer, got {value!r}")
    _check_range(field, value, minimum, maximum)


def check_float(
    field: str,
    value: Any,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    strict_minimum: bool = False,
) -> None:
    """Raise ``ValueError`` unless ``value`` is a finite real number in range.

    ``strict_minimum`` makes the lower bound exclusive (``value > minimum``).
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{field} must be a finite number, got {value!r}")
    if strict_minimum and minimum is not None and not value > minimum:
        raise ValueError(f"{field} must be > {minimum}, got {value!r}")
    _check_range(field, value, None if strict_minimum else minimum, maximum)


def check_bool(field: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{field} must be true or false, got {value!r}")


def check_sequence(
    field: str,
    value: Any,
    *,
    item_check=None,
    min_len: int = 1,
    unique: bool = False,
) -> None:
    """Raise ``ValueError`` unless ``value`` is a tuple/list of at least ``min_len`` valid items.

    ``item_check(name, item)`` validates each item; its messages name ``field[i]``.
    """
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ValueError(f"{field} must be a list, got {value!r}")
    if len(value) < min_len:
        raise ValueError(f"{field} must have at least {min_len} item(s), got {len(value)}")
    if item_check is not None:
        for i, item in enumerate(value):
            item_check(f"{field}[{i}]", item)
    if unique:
        check_distinct(field, value)


def check_distinct(field: str, values: Sequence[Any]) -> None:
    """Raise ``ValueError`` if ``values`` repeat (a coordinate that claims and plots select by value)."""
    values = list(values)
    if len(set(values)) != len(values):
        raise ValueError(f"{field} must not repeat, got {values}")


def check_increasing(field: str, values: Sequence[Any], *, at_least: int = 0) -> None:
    """Raise ``ValueError`` unless ``values`` strictly increase (a grid read as a curve) and, with ``at_least``,
    number at least that many."""
    values = list(values)
    if len(values) < at_least or any(b <= a for a, b in zip(values, values[1:], strict=False)):
        more = f" with at least {at_least} values" if at_least else ""
        raise ValueError(f"{field} must be strictly increasing{more}, got {values}")


def _check_range(field: str, value: float, minimum: float | None, maximum: float | None) -> None:
    if minimum is not None and value < minimum:
        raise ValueError(f"{field} must be >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{field} must be <= {maximum}, got {value!r}")
