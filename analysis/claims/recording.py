"""How the ledger records a claim: the status, stability and declared fields of a new record, and the resolution of
diagnoses, findings and verdicts across the claims present.

:class:`_Recording` is the base of :class:`analysis.claims.ledger.Ledger` that every claim method records through
(:meth:`_Recording._record`, :meth:`_Recording._make`); it reads the probe's declarations
(:mod:`analysis.claims.specs`) and keeps the ledger's claims resolved (:meth:`_Recording._resolve`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from analysis.claims.evidence import STABLE_AT
from analysis.claims.findings import _diagnosis, _status, finding_of
from analysis.claims.records import Claim
from analysis.claims.specs import RECORDED_AS, declarations, spec_for
from analysis.claims.stability import claim_stability
from analysis.claims.values import _check_name
from analysis.claims.verdicts import verdict_of


class _Recording:
    """The ledger's internals (:class:`analysis.claims.ledger.Ledger` holds ``context``, ``preset``, ``_claims`` and
    :meth:`~analysis.claims.ledger.Ledger.add`)."""

    def _record(
        self,
        name,
        *,
        role: str,
        outcome: bool | None,
        requires_full: bool,
        diagnosed_by: Mapping[str, str] | None,
        diagnosis: str,
        alternative=None,
        tightness=None,
        triage: dict | None = None,
        **kw,
    ) -> Claim:
        """Decide the status (module docstring), the stability of the verdict, and store the claim."""
        if not isinstance(requires_full, bool):
            raise ValueError(f"requires_full must be true or false, got {requires_full!r}")
        if role == "prediction" and not alternative:
            raise ValueError(f"prediction {name!r} must name an alternative (value and hypothesis)")
        role, triage, declared = self._declared(name, role, triage)
        diag = _diagnosis(name, role, diagnosed_by, diagnosis)
        skipped = requires_full and self.preset == "smoke"
        status = "not_evaluated" if skipped else _status(role, outcome, alternative, tightness)
        claim = self._make(
            name,
            role=role,
            status=status,
            outcome=None if skipped else outcome,
            alternative=alternative,
            tightness=tightness,
            triage=triage,
            **declared,
            **diag,
            **kw,
        )
        if not skipped and role != "identity" and claim.kind != "manual":
            record = claim_stability(claim)
            claim = replace(claim, stability=record, status="unstable" if record["value"] < STABLE_AT else status)
        return self.add(claim)

    def _make(
        self,
        name,
        *,
        role,
        kind,
        expected,
        measured,
        tolerance,
        status,
        outcome,
        source,
        why,
        seed,
        statement,
        figure,
        alternative=None,
        tightness=None,
        diagnosed_by=(),
        diagnosis_requires=None,
        diagnosis="",
        triage=None,
        tests=None,
        paper=None,
    ) -> Claim:
        _check_name("name", name)
        if not isinstance(source, str) or not source.strip():
            raise ValueError(f"source must be a non-empty string (a derivation, paper or seed), got {source!r}")
        for fname, value in (("why", why), ("statement", statement)):
            if not isinstance(value, str):
                raise ValueError(f"{fname} must be a string, got {value!r}")
        if seed is not None and (not isinstance(seed, str) or "#" not in seed):
            raise ValueError(f"seed must be a seed paper key like '000#1', got {seed!r}")
        if figure is not None and not isinstance(figure, str):
            raise ValueError(f"figure must be a string or None, got {figure!r}")
        return Claim(
            name=name,
            context=self.context,
            role=role,
            source=source,
            statement=statement,
            kind=kind,
            expected=expected,
            measured=measured,
            tolerance=tolerance,
            why=why,
            status=status,
            seed=seed,
            alternative=alternative,
            tightness=tightness,
            diagnosed_by=list(diagnosed_by),
            diagnosis_requires=dict(diagnosis_requires or {}),
            diagnosis=diagnosis,
            outcome=outcome,
            figure=figure,
            triage=dict(triage or {}),
            tests=tests,
            paper=paper,
        )

    def _looks(self, name: str, within_run: str | None) -> tuple[int, ...]:
        """The declared looks of claim ``name`` (:class:`analysis.claims.specs.ClaimSpec`), () without a sequential
        design;
        a within-run SE is not a band over seeds, so a declared design refuses it."""
        spec = spec_for(self.context, name)
        looks = spec.looks if spec is not None else ()
        if looks and within_run is not None:
            raise ValueError(
                f"claim {name!r} declares looks over seeds: its band must come from replicates, not a within-run SE"
            )
        return looks

    def _no_looks(self, name: str, what: str) -> None:
        if self._looks(name, None):
            raise ValueError(
                f"claim {name!r} declares looks over seeds: {what} cannot take the per-look coverage; pass replicates"
            )

    def _declared(self, name: str, role: str, triage: dict | None) -> tuple[str, dict | None, dict[str, Any]]:
        """The role, triage and declared fields of claim ``name`` as its probe declares it
        (:mod:`analysis.claims.specs`): a scope check is recorded with role ``"scope"``, its declared scope checks join
        the triage's ``regime``. A context without declarations (a user's own ledger, a test's) is unchanged; in a
        probe that declares its claims an undeclared claim, or one recorded against its declaration, is refused."""
        probe = self.context.split("[", 1)[0]
        decl = declarations(probe)
        if decl is None:
            return role, triage, {}
        spec = decl.lookup(name)
        if spec is None:
            raise ValueError(
                f"claim {name!r} of {probe!r} is not declared: add a ClaimSpec for it to the probe's declarations"
            )
        allowed = RECORDED_AS[spec.comparison] + (("scope",) if spec.comparison == "scope" else ())
        if role not in allowed:
            raise ValueError(
                f"claim {name!r} of {probe!r} is declared a {spec.comparison!r} comparison (recorded as "
                f"{' or '.join(allowed)}), but recorded as {role!r}"
            )
        if spec.comparison == "scope":
            role = "scope"
        refs = list((triage or {}).get("regime", []))
        refs += [r for r in spec.scope_checks if r not in refs]
        if refs:
            triage = {**(triage or {}), "regime": refs}
        if spec.outside:
            triage = {**(triage or {}), "outside": spec.scope}
        return role, triage, {"tests": spec.tests, "paper": spec.paper}

    def _resolve(self) -> None:
        """Decide every failed, diagnosed claim: ``deviation`` when each diagnosing claim of its
        context is present, evaluated and has the required status, else ``fail`` (to a fixed point:
        a diagnosing claim may itself be a deviation). Then triage every fail
        (:func:`analysis.claims.findings.finding_of`)."""
        for _ in range(len(self._claims) + 1):
            changed = False
            for key, c in self._claims.items():
                if (
                    c.outcome is not False
                    or not c.diagnosed_by
                    or c.status in ("not_evaluated", "inconclusive", "unstable")
                ):
                    continue
                ok = all(
                    (c.context, ref) in self._claims and self._claims[(c.context, ref)].status == need
                    for ref, need in c.diagnosis_requires.items()
                )
                status = "deviation" if ok else "fail"
                if status != c.status:
                    self._claims[key] = replace(c, status=status)
                    changed = True
            if not changed:
                break
        for key, c in self._claims.items():
            found = finding_of(c, lambda ref, c=c: self._claims.get((c.context, ref)))
            if found != c.finding:
                self._claims[key] = replace(c, finding=found)
        for key, c in self._claims.items():
            verdict, reason = verdict_of(c, lambda ref, c=c: self._claims.get((c.context, ref)))
            if (verdict, reason) != (c.verdict, c.verdict_reason):
                self._claims[key] = replace(c, verdict=verdict, verdict_reason=reason)
