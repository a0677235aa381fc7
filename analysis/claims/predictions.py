"""The ledger's four roles: an identity, a prediction (a number or a sign) with its alternative, and a paper's range.

A prediction's tolerance is the measurement's own uncertainty under the one band policy (:mod:`analysis.claims.bands`,
:mod:`analysis.claims.evidence`), and it names the value a competing hypothesis predicts; a bound is a comparison of
its own (:meth:`analysis.claims.comparisons._Comparisons.bound`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from analysis.claims.bands import (
    _alternative,
    _check_coverage,
    _ci,
    _family_why,
    _looks_why,
    _t95_band,
    _within_run,
)
from analysis.claims.comparisons import _Comparisons
from analysis.claims.evidence import COVERAGE
from analysis.claims.findings import _triage
from analysis.claims.records import FAR, Claim
from analysis.claims.values import _as_finite_float, _as_measured, _finite, _float_to_json, _fmt


class _Predictions(_Comparisons):
    """The roles of :class:`analysis.claims.ledger.Ledger`: identity, predict, direction, paper."""

    def identity(
        self,
        name: str,
        *,
        measured: Any,
        expected: Any = 0.0,
        atol: float = 0.0,
        rtol: float = 0.0,
        source: str,
        why: str,
        seed: str | None = None,
        requires_full: bool = False,
        statement: str | None = None,
        figure: str | None = None,
    ) -> Claim:
        """Exact algebra or a software equality: ``|measured - expected| <= atol + rtol |expected|``,
        the tolerance being float precision (``why`` says which roundings it covers)."""
        return self.close(
            name,
            role="identity",
            measured=measured,
            expected=expected,
            atol=atol,
            rtol=rtol,
            source=source,
            why=why,
            seed=seed,
            requires_full=requires_full,
            statement=statement,
            figure=figure,
        )

    def predict(
        self,
        name: str,
        *,
        expected: Any,
        alternative: Any,
        hypothesis: str,
        measured: Any = None,
        replicates: Any = None,
        se: Any = None,
        dof: Any = None,
        ci: Any = None,
        coverage: float | None = None,
        within_run: str | None = None,
        family: int | None = None,
        atol: float | None = None,
        rtol: float = 0.0,
        source: str,
        why: str,
        seed: str | None = None,
        requires_full: bool = False,
        diagnosed_by: Mapping[str, str] | None = None,
        diagnosis: str = "",
        regime: Iterable[str] | None = None,
        scale: str | None = None,
        statement: str | None = None,
        figure: str | None = None,
    ) -> Claim:
        """A derived number against a measurement, with the measurement's own uncertainty under the one band
        policy (:mod:`analysis.claims.evidence`: 95% coverage, Student-t multiples).

        The uncertainty is given as exactly one of:

        * ``replicates``: the values of independent replicates (seeds); the measurement is their mean, the
          band ``t(95%, n - 1) x SE``;
        * ``se`` with ``dof``: a standard error over replicates (``dof = n - 1``), or a within-run SE with
          ``within_run`` saying why the quantity is deterministic given the model (``dof``: its degrees of
          freedom, ``math.inf`` for many draws); the band is ``t(95%, dof) x se``;
        * ``ci`` with ``coverage=0.95``: a 95% confidence interval ``(lo, hi)`` of the measurement (pass
          iff it contains ``expected``), over replicates or ``within_run``;
        * ``atol``/``rtol``: a criterion band (a stated tolerance that is not a measurement's uncertainty,
          e.g. "within 5%"); ``why`` says where it comes from.

        ``family``: the claim is a law over ``family`` cases recorded at the one nearest to failing; its
        band is then at the Sidak per-case coverage (:func:`analysis.claims.evidence.family_coverage`) so that the
        family keeps 95% (an SE band only: a given CI cannot be widened).

        ``alternative`` is the value the competing ``hypothesis`` predicts; the measurement is judged
        against it with the same uncertainty, and a claim consistent with both is ``inconclusive``.
        ``regime`` (claims of this ledger that measure the theorem's hypotheses) and ``scale`` (how the
        paper's setting is larger, and which knob reaches it) triage a fail (:class:`Claim` ``finding``).
        """
        given = sum(x is not None for x in (replicates, se, ci, atol))
        if given != 1:
            raise ValueError(
                "predict needs exactly one of replicates, se (with dof), ci (with coverage) or atol (a criterion)"
            )
        if family is not None and (ci is not None or atol is not None):
            raise ValueError("family needs an SE band (replicates, or se with dof): a CI or a criterion cannot widen")
        why = _family_why(why, family)
        alt = _alternative(alternative, hypothesis)
        e = _as_finite_float("expected", expected)
        triage = _triage(name, regime, scale)
        common = dict(
            source=source,
            why=why,
            seed=seed,
            requires_full=requires_full,
            diagnosed_by=diagnosed_by,
            diagnosis=diagnosis,
            triage=triage,
            figure=figure,
        )
        if ci is not None:
            self._no_looks(name, "a CI")
            return self._predict_ci(name, measured, e, ci, coverage, within_run, alt, statement, common)
        if atol is not None:
            if within_run is not None or dof is not None or coverage is not None:
                raise ValueError("a criterion band (atol/rtol) takes no within_run, dof or coverage")
            self._no_looks(name, "a criterion band")
            extra = {"policy": "criterion"}
            m = _as_measured(measured)
        else:
            looks = self._looks(name, within_run)
            m, atol, extra = _t95_band(measured, replicates, se, dof, within_run, coverage, family, looks)
            why = _looks_why(why, looks, family)
            rtol = 0.0
        return self.close(
            name,
            role="prediction",
            measured=m,
            expected=e,
            atol=atol,
            rtol=rtol,
            alternative=alt,
            statement=statement,
            _extra_tolerance=extra,
            **common,
        )

    def _predict_ci(self, name, measured, e, ci, coverage, within_run, alt, statement, common) -> Claim:
        """:meth:`predict` from a 95% CI ``(lo, hi)`` of the measurement: pass iff it contains ``e``."""
        m = _as_measured(measured)
        lo, hi = _ci(ci)
        _check_coverage(coverage)
        ok = _finite(m) and math.isfinite(lo) and math.isfinite(hi)
        band = [e - (hi - m), e + (m - lo)] if ok else [e, e]
        outcome = (lo <= e <= hi) if ok else None
        alt["consistent"] = (lo <= alt["value"] <= hi) if ok else None
        tol = {"policy": "ci95", "coverage": COVERAGE, "center": e, "ci": [_float_to_json(lo), _float_to_json(hi)]}
        tol["within_run"] = _within_run(within_run)
        return self._record(
            name,
            role="prediction",
            kind="within",
            expected=band,
            measured=m,
            tolerance=tol,
            outcome=outcome,
            alternative=alt,
            statement=statement or f"{name}: {_fmt(e)} inside the measurement's 95% CI",
            **common,
        )

    def direction(
        self,
        name: str,
        *,
        sign: int,
        hypothesis: str,
        measured: Any = None,
        alternative: float = 0.0,
        replicates: Any = None,
        se: Any = None,
        dof: Any = None,
        ci: Any = None,
        coverage: float | None = None,
        within_run: str | None = None,
        family: int | None = None,
        source: str,
        why: str,
        seed: str | None = None,
        requires_full: bool = False,
        diagnosed_by: Mapping[str, str] | None = None,
        diagnosis: str = "",
        regime: Iterable[str] | None = None,
        scale: str | None = None,
        statement: str | None = None,
        figure: str | None = None,
    ) -> Claim:
        """A predicted sign: the measurement lies on the ``sign`` side (+1 above, -1 below) of the
        alternative (default 0, "no effect"), its 95% uncertainty excluding it. The uncertainty is given as
        in :meth:`predict` (``replicates``, ``se`` with ``dof``, or ``ci`` with ``coverage``), and ``family``
        as there (a sign in every one of ``family`` cases, recorded at the worst).

        Use it where theory fixes a direction but not a number (a slope's sign, a ratio above 1 with
        ``alternative=1``); where it fixes a number, use :meth:`predict`.
        """
        if sign not in (1, -1):
            raise ValueError(f"sign must be 1 or -1, got {sign!r}")
        if sum(x is not None for x in (replicates, se, ci)) != 1:
            raise ValueError("direction needs exactly one of replicates, se (with dof) or ci (with coverage)")
        alt = _alternative(alternative, hypothesis)
        a = alt["value"]
        triage = _triage(name, regime, scale)
        why = _family_why(why, family)
        if ci is not None:
            if family is not None:
                raise ValueError("family needs an SE band (replicates, or se with dof): a CI cannot widen")
            self._no_looks(name, "a CI")
            m = _as_measured(measured)
            lo, hi = _ci(ci)
            _check_coverage(coverage)
            near = (m - lo) if sign > 0 else (hi - m)  # distance from the estimate to the CI's end facing a
            tol: dict[str, Any] = {
                "policy": "ci95",
                "coverage": COVERAGE,
                "ci": [_float_to_json(lo), _float_to_json(hi)],
            }
            consistent = lo <= a <= hi
        else:
            looks = self._looks(name, within_run)
            m, near, tol = _t95_band(measured, replicates, se, dof, within_run, coverage, family, looks)
            why = _looks_why(why, looks, family)
            consistent = _finite(m) and abs(m - a) <= near
        tol["within_run"] = _within_run(within_run)
        ok = _finite(m) and math.isfinite(near) and near >= 0
        edge = a + sign * near if ok else a
        band = [edge, FAR] if sign > 0 else [-FAR, edge]
        outcome = (band[0] <= m <= band[1]) if ok else None
        alt["consistent"] = bool(consistent) if ok else None
        alt["one_sided"] = True  # a measurement whose uncertainty straddles the alternative is inconclusive
        statement = statement or f"{name} {'>' if sign > 0 else '<'} {_fmt(a)} beyond its uncertainty"
        return self._record(
            name,
            role="prediction",
            kind="within",
            expected=band,
            measured=m,
            tolerance={**tol, "sign": sign},
            outcome=outcome,
            alternative=alt,
            source=source,
            why=why,
            seed=seed,
            requires_full=requires_full,
            diagnosed_by=diagnosed_by,
            diagnosis=diagnosis,
            triage=triage,
            statement=statement,
            figure=figure,
        )

    def paper(
        self,
        name: str,
        *,
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
        """A measurement against a range a paper measured in another setting."""
        return self.within(
            name,
            role="paper",
            measured=measured,
            lo=lo,
            hi=hi,
            source=source,
            why=why,
            seed=seed,
            requires_full=requires_full,
            diagnosed_by=diagnosed_by,
            diagnosis=diagnosis,
            regime=regime,
            scale=scale,
            statement=statement,
            figure=figure,
        )
