"""The ledger's comparisons: ``close``, ``bound``, ``within`` and ``manual``, and a claim not evaluated.

Each checks a measurement against the claim's expected value, bound or range (float64, inclusive boundaries), or
records a qualitative verdict the caller decided (identities and paper claims only), then records it
(:class:`analysis.claims.recording._Recording`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from analysis.claims.bands import _alternative, _population
from analysis.claims.findings import _triage
from analysis.claims.recording import _Recording
from analysis.claims.records import _RELATION_OPS, RELATIONS, ROLES, Claim
from analysis.claims.values import _as_finite_float, _as_measured, _finite, _float_to_json, _fmt, _to_float
from analysis.core.validation import check_choice, check_float

_UNSET = object()  # Ledger.bound's measured when a population gives it


class _Comparisons(_Recording):
    """The comparisons of :class:`analysis.claims.ledger.Ledger` (the roles' methods call them)."""

    def close(
        self,
        name: str,
        *,
        role: str,
        measured: Any,
        expected: Any,
        rtol: float = 0.0,
        atol: float = 0.0,
        alternative: Any = None,
        hypothesis: str | None = None,
        source: str,
        why: str = "",
        seed: str | None = None,
        requires_full: bool = False,
        diagnosed_by: Mapping[str, str] | None = None,
        diagnosis: str = "",
        statement: str | None = None,
        figure: str | None = None,
        triage: dict | None = None,
        _extra_tolerance: dict | None = None,
    ) -> Claim:
        """Check ``|measured - expected| <= atol + rtol * |expected|`` (float64, inclusive)."""
        check_choice("role", role, ROLES)
        expected_f = _as_finite_float("expected", expected)
        m = _as_measured(measured)
        atol_f = _to_float("atol", atol)
        if math.isfinite(atol_f) or role != "prediction":  # a prediction's NaN se is a failed measurement
            check_float("atol", atol_f, minimum=0.0)
        check_float("rtol", rtol, minimum=0.0)
        width = atol_f + rtol * abs(expected_f)
        ok = _finite(m) and math.isfinite(width)
        outcome = abs(m - expected_f) <= width if ok else None
        alt = None
        if isinstance(alternative, dict):
            alt = dict(alternative)
        elif alternative is not None or hypothesis is not None:
            alt = _alternative(alternative, hypothesis)
        if alt is not None:
            alt["consistent"] = bool(abs(m - alt["value"]) <= width) if ok else None
            if ok and abs(alt["value"] - expected_f) <= width:  # the band cannot tell the two apart
                alt["consistent"] = True
        if statement is None:
            statement = f"{name} = {_fmt(expected_f)} (rtol {_fmt(rtol)}, atol {_fmt(atol_f)})"
        return self._record(
            name,
            role=role,
            kind="close",
            expected=expected_f,
            measured=m,
            tolerance={"rtol": float(rtol), "atol": _float_to_json(atol_f), **(_extra_tolerance or {})},
            outcome=outcome,
            alternative=alt,
            triage=triage,
            source=source,
            why=why,
            seed=seed,
            requires_full=requires_full,
            diagnosed_by=diagnosed_by,
            diagnosis=diagnosis,
            statement=statement,
            figure=figure,
        )

    def bound(
        self,
        name: str,
        *,
        measured: Any = _UNSET,
        bound: Any,
        relation: str = "<=",
        role: str = "bound",
        tightness: float | None = None,
        population: Any = None,
        source: str,
        why: str = "",
        seed: str | None = None,
        requires_full: bool = False,
        diagnosed_by: Mapping[str, str] | None = None,
        diagnosis: str = "",
        regime: Iterable[str] | None = None,
        scale: str | None = None,
        statement: str | None = None,
        figure: str | None = None,
    ) -> Claim:
        """Check ``measured <relation> bound`` (float64). For role ``bound`` the tightness is
        measured / bound (``<=``, ``<``) or bound / measured (``>=``, ``>``) when both are positive;
        pass ``tightness`` where another ratio is the meaningful one (``why`` says which).

        ``population`` (instead of ``measured``): the values of every case the bound is checked on (each row, layer,
        update or seed), as a theorist reads a bound: the measurement is their worst case, and the record keeps how
        many cases there are, the fraction that hold and the tightness of the median case beside the worst's
        (``tolerance["population"]``; a non-finite case makes the worst case unmeasured, never holding)."""
        check_choice("role", role, ROLES)
        if role == "prediction":
            raise ValueError("role 'prediction' needs an alternative: use Ledger.predict or Ledger.direction")
        bound_f = _as_finite_float("bound", bound)
        check_choice("relation", relation, RELATIONS)
        summary = None
        if population is not None:
            if measured is not _UNSET:
                raise ValueError("give measured or population, not both: a population's measurement is its worst case")
            measured, summary = _population(population, bound_f, relation)
        elif measured is _UNSET:
            raise ValueError("bound needs measured (a value) or population (the values of every case)")
        m = _as_measured(measured)
        outcome = None if not _finite(m) else _RELATION_OPS[relation](m, bound_f)
        given_tightness = tightness is not None
        if role == "bound" and tightness is None and _finite(m) and m > 0 and bound_f > 0:
            tightness = m / bound_f if relation in ("<=", "<") else bound_f / m
        if statement is None:
            statement = f"{name} {relation} {_fmt(bound_f)}"
        return self._record(
            name,
            role=role,
            kind="bound",
            expected=bound_f,
            measured=m,
            tolerance={
                "relation": relation,
                "tightness_given": given_tightness,
                **({"population": summary} if summary is not None else {}),
            },
            outcome=outcome,
            tightness=None if tightness is None else float(tightness),
            triage=_triage(name, regime, scale),
            source=source,
            why=why,
            seed=seed,
            requires_full=requires_full,
            diagnosed_by=diagnosed_by,
            diagnosis=diagnosis,
            statement=statement,
            figure=figure,
        )

    def within(
        self,
        name: str,
        *,
        role: str,
        measured: Any,
        lo: Any,
        hi: Any,
        source: str,
        why: str = "",
        seed: str | None = None,
        requires_full: bool = False,
        diagnosed_by: Mapping[str, str] | None = None,
        diagnosis: str = "",
        regime: Iterable[str] | None = None,
        scale: str | None = None,
        statement: str | None = None,
        figure: str | None = None,
    ) -> Claim:
        """Check ``lo <= measured <= hi`` (float64, both ends included)."""
        check_choice("role", role, ROLES)
        if role == "prediction":
            raise ValueError("role 'prediction' needs an alternative: use Ledger.predict or Ledger.direction")
        lo_f = _as_finite_float("lo", lo)
        hi_f = _as_finite_float("hi", hi)
        if lo_f > hi_f:
            raise ValueError(f"lo must be <= hi, got lo={lo_f!r}, hi={hi_f!r}")
        m = _as_measured(measured)
        outcome = None if not _finite(m) else lo_f <= m <= hi_f
        if statement is None:
            statement = f"{name} in [{_fmt(lo_f)}, {_fmt(hi_f)}]"
        return self._record(
            name,
            role=role,
            kind="within",
            expected=[lo_f, hi_f],
            measured=m,
            tolerance={},
            outcome=outcome,
            triage=_triage(name, regime, scale),
            source=source,
            why=why,
            seed=seed,
            requires_full=requires_full,
            diagnosed_by=diagnosed_by,
            diagnosis=diagnosis,
            statement=statement,
            figure=figure,
        )

    def manual(
        self,
        name: str,
        *,
        role: str,
        passed: bool,
        source: str,
        statement: str,
        measured: Any = None,
        why: str = "",
        seed: str | None = None,
        requires_full: bool = False,
        figure: str | None = None,
    ) -> Claim:
        """A qualitative verdict the caller decided: identities (a structural equality) and paper
        claims only; a prediction or bound must be a number compared with a number."""
        check_choice("role", role, ("identity", "paper"))
        if not isinstance(passed, bool):
            raise ValueError(f"passed must be true or false, got {passed!r}")
        m = None if measured is None else _as_measured(measured)
        outcome = None if (m is not None and not _finite(m)) else passed
        return self._record(
            name,
            role=role,
            kind="manual",
            expected=None,
            measured=m,
            tolerance={},
            outcome=outcome,
            source=source,
            why=why,
            seed=seed,
            requires_full=requires_full,
            diagnosed_by=None,
            diagnosis="",
            statement=statement,
            figure=figure,
        )

    def not_evaluated(
        self,
        name: str,
        *,
        role: str,
        source: str,
        reason: str,
        seed: str | None = None,
        statement: str | None = None,
        figure: str | None = None,
    ) -> Claim:
        """Record a claim this run does not check (``reason`` says why); status ``not_evaluated``."""
        check_choice("role", role, ROLES)
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError(f"reason must be a non-empty string, got {reason!r}")
        role, _, declared = self._declared(name, role, None)
        claim = self._make(
            name,
            role=role,
            **declared,
            kind="manual",
            expected=None,
            measured=None,
            tolerance={},
            status="not_evaluated",
            outcome=None,
            source=source,
            why=reason,
            seed=seed,
            statement=statement or f"not evaluated: {reason}",
            figure=figure,
        )
        return self.add(claim)
