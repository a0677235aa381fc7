"""Plain-value checks and conversions of the claims ledger: names, real numbers and their JSON form.

A claim (:class:`analysis.claims.records.Claim`) holds plain values only, so it converts to JSON and back without
loss: a measurement is a float64 (Python, numpy and torch scalars are accepted; bools and strings refused), and a
non-finite one is written as the string ``"nan"``, ``"inf"`` or ``"-inf"`` (JSON has no infinity) and read back.
"""

from __future__ import annotations

import math
from typing import Any

from analysis.core.validation import check_choice


def _dof_json(dof: float) -> float | str:
    return "inf" if math.isinf(dof) else float(dof)


def _dof_from_json(x: Any) -> float | None:
    if x is None:
        return None
    return math.inf if x == "inf" else float(x)


def _check_name(field_name: str, value: Any) -> None:
    if not isinstance(value, str) or not value or value != value.strip():
        raise ValueError(f"{field_name} must be a non-empty string without surrounding spaces, got {value!r}")


def _to_float(field_name: str, value: Any) -> float:
    """float64 value of a Python/numpy/torch scalar; bools and strings are rejected."""
    if isinstance(value, bool | str | bytes) or value is None:
        raise ValueError(f"{field_name} must be a real number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{field_name} must be a real number (a scalar), got {value!r}") from None


def _as_finite_float(field_name: str, value: Any) -> float:
    x = _to_float(field_name, value)
    if not math.isfinite(x):
        raise ValueError(f"{field_name} must be finite, got {x!r}")
    return x


def _as_measured(value: Any) -> float | None:
    """A measurement may be None or non-finite (the claim then fails); anything else must be a number."""
    return None if value is None else _to_float("measured", value)


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def _fmt(x: float | None) -> str:
    return "None" if x is None else f"{x:.6g}"


def _float_to_json(x: float | None) -> float | str | None:
    if x is None or math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def _float_from_json(x: Any) -> float | None:
    if x is None:
        return None
    if isinstance(x, str):
        check_choice("measured", x, ("nan", "inf", "-inf"))
    return float(x)
