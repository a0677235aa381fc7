"""The claims ledger: every comparison between a measurement and what theory (or a paper) predicts.

A probe or notebook records each check it makes in a :class:`Ledger`; the ledger is saved beside the
result and gathered into ``figures/claims.json``. A check is one of

* ``close``  -- ``|measured - expected| <= atol + rtol * |expected|`` (the ``numpy.isclose`` rule,
  asymmetric: the tolerance scales with the *expected* value, which is the theory's number);
* ``bound``  -- ``measured <relation> bound`` with ``relation`` one of ``<=``, ``<``, ``>=``, ``>``;
* ``within`` -- ``lo <= measured <= hi`` (both ends included);
* ``manual`` -- a qualitative check decided by the caller (``passed=True/False``), or a claim that
  was not evaluated at all (:meth:`Ledger.not_evaluated`).

Every comparison is made in float64 and every boundary is inclusive, so ``measured == expected +
atol`` passes. (For ``close`` the difference ``measured - expected`` is itself rounded to float64, so
a value within one rounding step of the boundary may land on either side; tolerances are never that
tight in practice.)

Status of a claim, decided in this order:

1. ``requires_full=True`` under preset ``"smoke"`` -> ``"not_evaluated"``. A smoke run is too small
   for the claim to mean anything, so it is never reported as ``"pass"`` (the measurement, if given,
   is still recorded for information).
2. A non-finite (or missing) measurement -> ``"fail"``, even when a deviation was declared: a NaN
   is a bug, not an expected disagreement with theory.
3. The check passes -> ``"pass"``.
4. The check fails and ``deviation="reason"`` was given -> ``"deviation"`` (expected, reported,
   not fatal). Otherwise -> ``"fail"``.

A declared deviation reason is stored on the claim whether or not the check failed, so a claim that
was expected to deviate but now passes can be spotted (status ``"pass"``, ``deviation_reason`` set).

A claim is identified by ``(context, name)``: recording the same name again in the same context
replaces the earlier claim in place (re-running a notebook cell must not duplicate its claims).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from analysis.io import atomic_write_json
from analysis.validation import check_choice, check_float

STATUSES = ("pass", "fail", "deviation", "not_evaluated")
KINDS = ("close", "bound", "within", "manual")
PRESETS = ("smoke", "full")
RELATIONS = ("<=", "<", ">=", ">")

_RELATION_OPS = {
    "<=": lambda a, b: a <= b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
    ">": lambda a, b: a > b,
}


@dataclass(frozen=True)
class Claim:
    """One recorded check. Plain values only, so it converts to JSON and back without loss."""

    name: str  # unique within `context`, e.g. "eta_star_mc"
    context: str  # the probe or notebook that made the check, e.g. "icl_gd"
    source: str  # where the expected value comes from: a derivation, a paper, a seed
    statement: str  # the claim in words, e.g. "eta_star = 0.1 (rtol 0.05, atol 0)" when not given
    kind: str  # "close" | "bound" | "within" | "manual"
    expected: float | list[float] | None  # the theory value; [lo, hi] for "within"; None for "manual"
    measured: float | None  # what the run measured (float64); None when nothing was measured
    tolerance: dict[str, Any] = field(default_factory=dict)  # {"rtol","atol"} | {"relation"} | {}
    why: str = ""  # why this tolerance / bound / range is the right one
    status: str = "not_evaluated"  # "pass" | "fail" | "deviation" | "not_evaluated"
    deviation_reason: str | None = None  # declared reason a failure is expected (see module docstring)
    figure: str | None = None  # the figure that shows this claim, if any

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict; a non-finite measurement is written as the string "nan", "inf" or "-inf"."""
        d = asdict(self)
        d["measured"] = _float_to_json(self.measured)
        d["tolerance"] = dict(self.tolerance)
        d["expected"] = list(self.expected) if isinstance(self.expected, list | tuple) else self.expected
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Claim:
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"claim has unknown field(s) {sorted(unknown)}; allowed: {sorted(known)}")
        d = dict(d)
        d["measured"] = _float_from_json(d.get("measured"))
        expected = d.get("expected")
        if isinstance(expected, list | tuple):
            d["expected"] = [float(v) for v in expected]
        elif expected is not None:
            d["expected"] = float(expected)
        d["tolerance"] = dict(d.get("tolerance") or {})
        check_choice("status", d.get("status"), STATUSES)
        check_choice("kind", d.get("kind"), KINDS)
        return cls(**d)

    def line(self) -> str:
        """One human-readable line: status, context/name and the numbers behind the verdict."""
        mark = {"pass": "PASS", "fail": "FAIL", "deviation": "DEVN", "not_evaluated": "N/E "}[self.status]
        text = f"[{mark}] {self.context}/{self.name}: {self.statement}"
        if self.measured is not None:
            text += f"; measured {_fmt(self.measured)}"
        if self.status == "deviation" and self.deviation_reason:
            text += f" (deviation: {self.deviation_reason})"
        return text


class Ledger:
    """An ordered collection of :class:`Claim` s made by one probe or notebook.

    ``context`` names the probe or notebook; ``preset`` (``"smoke"`` or ``"full"``) decides whether
    claims marked ``requires_full`` are evaluated.
    """

    def __init__(self, context: str, preset: str = "full", claims: Iterable[Claim] = ()):
        _check_name("context", context)
        check_choice("preset", preset, PRESETS)
        self.context = context
        self.preset = preset
        self._claims: dict[tuple[str, str], Claim] = {}
        self.extend(claims)

    # ------------------------------------------------------------------ recording checks

    def close(
        self,
        name: str,
        *,
        measured: Any,
        expected: Any,
        rtol: float = 0.0,
        atol: float = 0.0,
        source: str,
        why: str = "",
        requires_full: bool = False,
        deviation: str | None = None,
        statement: str | None = None,
        figure: str | None = None,
    ) -> Claim:
        """Check ``|measured - expected| <= atol + rtol * |expected|`` (float64, inclusive)."""
        expected_f = _as_finite_float("expected", expected)
        check_float("rtol", rtol, minimum=0.0)
        check_float("atol", atol, minimum=0.0)
        m = _as_measured(measured)
        passed = None if not _finite(m) else abs(m - expected_f) <= atol + rtol * abs(expected_f)
        if statement is None:
            statement = f"{name} = {_fmt(expected_f)} (rtol {_fmt(rtol)}, atol {_fmt(atol)})"
        return self._record(
            name, kind="close", expected=expected_f, measured=m,
            tolerance={"rtol": float(rtol), "atol": float(atol)}, passed=passed, source=source, why=why,
            requires_full=requires_full, deviation=deviation, statement=statement, figure=figure,
        )  # fmt: skip

    def bound(
        self,
        name: str,
        *,
        measured: Any,
        bound: Any,
        relation: str = "<=",
        source: str,
        why: str = "",
        requires_full: bool = False,
        deviation: str | None = None,
        statement: str | None = None,
        figure: str | None = None,
    ) -> Claim:
        """Check ``measured <relation> bound`` with ``relation`` in ``<=, <, >=, >`` (float64)."""
        bound_f = _as_finite_float("bound", bound)
        check_choice("relation", relation, RELATIONS)
        m = _as_measured(measured)
        passed = None if not _finite(m) else _RELATION_OPS[relation](m, bound_f)
        if statement is None:
            statement = f"{name} {relation} {_fmt(bound_f)}"
        return self._record(
            name, kind="bound", expected=bound_f, measured=m, tolerance={"relation": relation},
            passed=passed, source=source, why=why, requires_full=requires_full, deviation=deviation,
            statement=statement, figure=figure,
        )  # fmt: skip

    def within(
        self,
        name: str,
        *,
        measured: Any,
        lo: Any,
        hi: Any,
        source: str,
        why: str = "",
        requires_full: bool = False,
        deviation: str | None = None,
        statement: str | None = None,
        figure: str | None = None,
    ) -> Claim:
        """Check ``lo <= measured <= hi`` (float64, both ends included)."""
        lo_f = _as_finite_float("lo", lo)
        hi_f = _as_finite_float("hi", hi)
        if lo_f > hi_f:
            raise ValueError(f"lo must be <= hi, got lo={lo_f!r}, hi={hi_f!r}")
        m = _as_measured(measured)
        passed = None if not _finite(m) else lo_f <= m <= hi_f
        if statement is None:
            statement = f"{name} in [{_fmt(lo_f)}, {_fmt(hi_f)}]"
        return self._record(
            name, kind="within", expected=[lo_f, hi_f], measured=m, tolerance={}, passed=passed,
            source=source, why=why, requires_full=requires_full, deviation=deviation,
            statement=statement, figure=figure,
        )  # fmt: skip

    def manual(
        self,
        name: str,
        *,
        passed: bool,
        source: str,
        statement: str,
        measured: Any = None,
        why: str = "",
        requires_full: bool = False,
        deviation: str | None = None,
        figure: str | None = None,
    ) -> Claim:
        """Record a qualitative check whose verdict the caller decided (e.g. "the curve is monotone").

        ``measured`` is optional here (a summary number shown beside the verdict); when given it
        must be finite, like every other measurement.
        """
        if not isinstance(passed, bool):
            raise ValueError(f"passed must be true or false, got {passed!r}")
        m = None if measured is None else _as_measured(measured)
        verdict = None if (m is not None and not _finite(m)) else passed
        return self._record(
            name, kind="manual", expected=None, measured=m, tolerance={}, passed=verdict, source=source,
            why=why, requires_full=requires_full, deviation=deviation, statement=statement, figure=figure,
        )  # fmt: skip

    def not_evaluated(
        self,
        name: str,
        *,
        source: str,
        reason: str,
        statement: str | None = None,
        figure: str | None = None,
    ) -> Claim:
        """Record a claim this run does not check (``reason`` says why); status ``not_evaluated``."""
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError(f"reason must be a non-empty string, got {reason!r}")
        claim = self._make(
            name, kind="manual", expected=None, measured=None, tolerance={}, status="not_evaluated",
            source=source, why=reason, deviation=None, statement=statement or f"not evaluated: {reason}",
            figure=figure,
        )  # fmt: skip
        return self.add(claim)

    # ------------------------------------------------------------------ collection

    def add(self, claim: Claim) -> Claim:
        """Insert ``claim``; one with the same ``(context, name)`` is replaced in place."""
        if not isinstance(claim, Claim):
            raise ValueError(f"claim must be a Claim, got {type(claim).__name__}")
        self._claims[(claim.context, claim.name)] = claim
        return claim

    def extend(self, other: Ledger | Iterable[Claim], *, tag: str | None = None) -> Ledger:
        """Add every claim of another ledger (or an iterable of claims), keeping their contexts.

        A notebook that runs the same probe several times (two models, with and without a bias...)
        passes a ``tag`` per run: the claims' contexts become ``"<context>[<tag>]"``, so runs that
        record claims of the same name do not replace one another.
        """
        if tag is not None:
            _check_name("tag", tag)
        claims = other.claims if isinstance(other, Ledger) else list(other)
        for claim in claims:
            if tag is not None:
                claim = replace(claim, context=f"{claim.context}[{tag}]")
            self.add(claim)
        return self

    @property
    def claims(self) -> list[Claim]:
        return list(self._claims.values())

    @property
    def failed(self) -> list[Claim]:
        return [c for c in self._claims.values() if c.status == "fail"]

    @property
    def ok(self) -> bool:
        """True when no claim has status ``"fail"`` (deviations and not-evaluated claims are fine)."""
        return not self.failed

    def get(self, name: str, context: str | None = None) -> Claim:
        key = (context or self.context, name)
        if key not in self._claims:
            names = [f"{c}/{n}" for c, n in self._claims]
            raise KeyError(f"no claim {key[0]}/{key[1]}; recorded: {names}")
        return self._claims[key]

    def __getitem__(self, name: str) -> Claim:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return (self.context, name) in self._claims

    def __iter__(self) -> Iterator[Claim]:
        return iter(self.claims)

    def __len__(self) -> int:
        return len(self._claims)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Ledger):
            return NotImplemented
        return (self.context, self.preset, self.claims) == (other.context, other.preset, other.claims)

    def __repr__(self) -> str:
        counts = ", ".join(f"{k}={v}" for k, v in self.summary().items())
        return f"Ledger(context={self.context!r}, preset={self.preset!r}, {counts})"

    def summary(self) -> dict[str, int]:
        """Number of claims per status (every status present, zeros included)."""
        counts = dict.fromkeys(STATUSES, 0)
        for claim in self._claims.values():
            counts[claim.status] += 1
        return counts

    def report(self) -> str:
        """Multi-line text: the tally, then one line per claim."""
        counts = ", ".join(f"{v} {k}" for k, v in self.summary().items())
        lines = [f"{self.context} ({self.preset}): {len(self)} claims: {counts}"]
        lines += ["  " + c.line() for c in self.claims]
        return "\n".join(lines)

    # ------------------------------------------------------------------ persistence

    def to_dict(self) -> dict[str, Any]:
        return {
            "context": self.context,
            "preset": self.preset,
            "summary": self.summary(),
            "claims": [c.to_dict() for c in self.claims],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Ledger:
        for key in ("context", "preset", "claims"):
            if key not in d:
                raise ValueError(f"ledger dict is missing {key!r}; needs context, preset, claims")
        return cls(d["context"], d["preset"], [Claim.from_dict(c) for c in d["claims"]])

    def save(self, path: str | os.PathLike) -> Path:
        """Write the ledger as JSON, atomically."""
        return atomic_write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike) -> Ledger:
        with open(path, encoding="utf-8") as f:
            return cls.from_dict(json.load(f))

    # ------------------------------------------------------------------ internals

    def _record(
        self, name, *, passed: bool | None, requires_full: bool, deviation: str | None, **kw
    ) -> Claim:
        """Decide the status (see module docstring for the order of the rules) and store the claim."""
        if not isinstance(requires_full, bool):
            raise ValueError(f"requires_full must be true or false, got {requires_full!r}")
        if deviation is not None and (not isinstance(deviation, str) or not deviation.strip()):
            raise ValueError(f"deviation must be a non-empty reason string or None, got {deviation!r}")
        if requires_full and self.preset == "smoke":
            status = "not_evaluated"
        elif passed is None:  # non-finite or missing measurement
            status = "fail"
        elif passed:
            status = "pass"
        else:
            status = "deviation" if deviation else "fail"
        return self.add(self._make(name, status=status, deviation=deviation, **kw))

    def _make(self, name, *, kind, expected, measured, tolerance, status, source, why, deviation,
              statement, figure) -> Claim:  # fmt: skip
        _check_name("name", name)
        if not isinstance(source, str) or not source.strip():
            raise ValueError(
                f"source must be a non-empty string (a derivation, paper or seed), got {source!r}"
            )
        for fname, value in (("why", why), ("statement", statement)):
            if not isinstance(value, str):
                raise ValueError(f"{fname} must be a string, got {value!r}")
        if figure is not None and not isinstance(figure, str):
            raise ValueError(f"figure must be a string or None, got {figure!r}")
        return Claim(
            name=name, context=self.context, source=source, statement=statement, kind=kind,
            expected=expected, measured=measured, tolerance=tolerance, why=why, status=status,
            deviation_reason=deviation, figure=figure,
        )  # fmt: skip


# ---------------------------------------------------------------------- helpers


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
