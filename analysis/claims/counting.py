"""Counting claims: each measurement once (:func:`unique_claims`), by role, verdict and finding, and the headline.

The headline (:func:`headline`) counts verdicts and states how many disagreements the 95% band alone gives among
the predictions it judged (:func:`chance_text`).
"""

from __future__ import annotations

from collections.abc import Iterable

from analysis.claims import evidence
from analysis.claims.evidence import COVERAGE
from analysis.claims.records import FINDINGS, ROLES, STATUSES, VERDICTS, Claim
from analysis.claims.specs import TESTS


def unique_claims(claims: Iterable[Claim]) -> list[Claim]:
    """``claims`` with repeated measurements (same :meth:`Claim.key`) kept once, first seen."""
    seen: dict[tuple, Claim] = {}
    for c in claims:
        seen.setdefault(c.key(), c)
    return list(seen.values())


def count_by_role(claims: Iterable[Claim]) -> dict[str, dict[str, int]]:
    """Unique claims counted by role, then status (every role and status present)."""
    counts = {role: dict.fromkeys(STATUSES, 0) for role in ROLES}
    for c in unique_claims(claims):
        counts[c.role][c.status] += 1
    return counts


def headline(claims: Iterable[Claim]) -> str:
    """The tally a reader should see first: unique claims by verdict (scope checks apart), the disagreements by
    what they contradict, and how many of them chance alone gives at the rule applied, e.g. "412 agree,
    23 disagree (12 with our derivations, 4 with toy models, 7 with papers' results; 1.9 expected by chance among
    38 predictions judged by a 95% band), 40 undecided (9 not evaluated), 21 out of scope; scope checks: 30 met,
    19 not met, 2 undecided"."""
    unique = unique_claims(claims)
    statements = [c for c in unique if c.role != "scope"]
    verdicts = {v: sum(c.verdict == v for c in statements) for v in VERDICTS}
    parts = [f"{verdicts['agrees']} agree", f"{verdicts['disagrees']} disagree"]
    against = {t: sum(c.verdict == "disagrees" and c.tests == t for c in statements) for t in (*TESTS, None)}
    detail = [f"{n} with {DISAGREES_WITH[t]}" for t, n in against.items() if n]
    chance = chance_text(statements)
    if chance:
        detail.append(chance)
    if detail:
        parts[-1] += f" ({', '.join(detail[:-1]) + '; ' + detail[-1] if len(detail) > 1 else detail[0]})"
    n_e = sum(c.status == "not_evaluated" for c in statements)
    parts.append(f"{verdicts['undecided']} undecided" + (f" ({n_e} not evaluated)" if n_e else ""))
    parts.append(f"{verdicts['out_of_scope']} out of scope")
    text = ", ".join(parts)
    scope = [c for c in unique if c.role == "scope"]
    if scope:
        met = sum(c.verdict == "agrees" for c in scope)
        out = sum(c.verdict == "out_of_scope" for c in scope)
        text += f"; scope checks: {met} met, {out} not met, {len(scope) - met - out} undecided"
    return text


DISAGREES_WITH = {
    "paper": "papers' results",
    "derivation": "our derivations",
    "toy_model": "toy models",
    "software": "our software (bugs)",
    None: "undeclared statements",
}


def chance_text(claims: Iterable[Claim]) -> str:
    """How many disagreements the one error rate gives by chance alone among the predictions judged by a
    measurement's band (two-sided or a sign, :func:`analysis.claims.evidence.chance_fails`), in words ("" when none).
    A true prediction disagrees exactly when its measurement leaves its 95% band, so this is the rate of the rule
    applied; out-of-scope predictions are not judged and not counted."""
    two = one = 0
    for c in unique_claims(claims):
        if c.role != "prediction" or c.verdict not in ("agrees", "disagrees", "undecided"):
            continue
        if c.status == "not_evaluated" or c.tolerance.get("policy") not in ("t95", "ci95"):
            continue
        if "sign" in c.tolerance:
            one += 1
        else:
            two += 1
    if not two + one:
        return ""
    expected = evidence.chance_fails(two, one)
    return f"{expected:.2g} expected by chance among {two + one} predictions judged by a {COVERAGE:.0%} band"


def count_by_verdict(claims: Iterable[Claim]) -> dict[str, dict[str, int]]:
    """Unique claims counted by what they test (``tests``; scope checks as ``"scope"``), then verdict."""
    counts = {t: dict.fromkeys(VERDICTS, 0) for t in (*TESTS, "scope")}
    for c in unique_claims(claims):
        row = "scope" if c.role == "scope" else c.tests
        if row is None or c.verdict is None:
            continue
        counts[row][c.verdict] += 1
    return counts


def finding_counts(claims: Iterable[Claim]) -> dict[str, int]:
    """Unique fails counted by their finding's kind (every kind present)."""
    counts = dict.fromkeys(FINDINGS, 0)
    for c in unique_claims(claims):
        if c.status == "fail" and c.finding:
            counts[c.finding["kind"]] += 1
    return counts
