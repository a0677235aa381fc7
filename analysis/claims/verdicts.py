"""A claim's verdict: what its evidence says about the statement it tests, and the verdict's text.

:func:`verdict_of` gives ``agrees``, ``disagrees`` (saying what it contradicts, :data:`TESTED`), ``undecided``
(saying what would decide it, :func:`what_would_decide` and :func:`samples_to_decide`) or ``out_of_scope`` (a scope
check of its run fails), from the comparison at the one error rate (:func:`comparison_outcome`; a bound attained to
float rounding holds, :func:`attained`).
"""

from __future__ import annotations

import math

from analysis.claims.evidence import ROUNDING_RTOL
from analysis.claims.records import FAR, LOOSE_BELOW, Claim
from analysis.claims.stability import band_width
from analysis.claims.values import _finite, _float_from_json, _fmt

TESTED = {
    "paper": "the paper's own result",
    "derivation": "our derivation for the paper's setting",
    "toy_model": "the paper's toy model",
    "software": "our software (a bug)",
    None: "its statement",
}


def comparison_outcome(claim: Claim) -> str:
    """What the comparison alone says at the one error rate (:data:`analysis.claims.evidence.COVERAGE`, the band as
    recorded): ``"agrees"``, ``"disagrees"``, ``"undecided"`` (the band holds both the prediction and the
    alternative, or the measurement is not finite) or ``"not_evaluated"``. An ``unstable`` claim is judged by its
    band like any other (near the band's edge is still inside or outside it); a bound attained to float rounding
    holds (:func:`attained`)."""
    status = claim.status
    if status == "not_evaluated":
        return "not_evaluated"
    if status == "unstable":
        status = claim.stability["verdict"]
    if status in ("pass", "loose"):
        return "agrees"
    if status == "inconclusive":
        return "undecided"
    if attained(claim):
        return "agrees"
    if claim.outcome is None and claim.role != "identity":
        return "undecided"  # a non-finite measurement: a numerical failure of the run, not evidence
    return "disagrees"


def attained(claim: Claim) -> bool:
    """True for a bound whose measurement equals it to float rounding (:data:`analysis.claims.evidence.ROUNDING_RTOL`
    relative): a bound attained exactly holds."""
    if claim.kind != "bound" or not _finite(claim.measured) or not isinstance(claim.expected, int | float):
        return False
    m, b = float(claim.measured), float(claim.expected)
    return abs(m - b) <= ROUNDING_RTOL * max(abs(m), abs(b))


def verdict_of(claim: Claim, lookup) -> tuple[str, str]:
    """``(verdict, reason)``: what the evidence says about the statement ``claim`` tests, from its stored fields
    and the scope checks of its run (``lookup(name)``: the claim of that name in the same context, or None).

    * a scope check (role ``"scope"``): ``agrees`` when the run meets the hypothesis, ``out_of_scope`` when it does
      not (never a disagreement), ``undecided`` when its band cannot say;
    * any other claim: ``out_of_scope`` when its declaration puts the run outside the statement's hypotheses by
      construction (``triage["outside"]``) or a scope check it names (``triage["regime"]``) fails in its run (the
      measurement is exploration, not evidence about the paper); otherwise its comparison's outcome:
      ``agrees``; ``disagrees``, saying what it contradicts (``tests``), unless a scope check it needs is itself
      undecided or absent (then ``undecided``); ``undecided``, saying what would decide it.
    """
    if claim.status == "not_evaluated":
        if claim.kind == "manual" and claim.measured is None:
            return "undecided", f"not evaluated: {claim.why}" if claim.why else "not evaluated by this run"
        return "undecided", "not evaluated at the smoke preset: the full preset evaluates it"
    outcome = comparison_outcome(claim)
    if claim.role == "scope":
        if outcome == "agrees":
            return "agrees", f"the run meets this hypothesis of the theorem: {_agree_text(claim)}"
        if outcome == "disagrees":
            return "out_of_scope", (
                f"the run is outside this hypothesis of the theorem (measured {_fmt(claim.measured)}, "
                f"needs {_against_text(claim)}): the claims that need it are out of scope"
            )
        return "undecided", what_would_decide(claim)
    if claim.triage.get("outside"):
        return "out_of_scope", (
            f"outside the statement's hypotheses by construction ({claim.triage['outside']}); measured "
            f"{_fmt(claim.measured)} ({outcome} with {_against_text(claim)}), shown as exploration"
        )
    refs = list(claim.triage.get("regime", []))
    checks = {ref: lookup(ref) for ref in refs}
    failing = [r for r, h in checks.items() if h is not None and comparison_outcome(h) == "disagrees"]
    if failing:
        return "out_of_scope", (
            f"outside the theorem's hypotheses: {', '.join(failing)} fails in this run; the measurement is "
            "exploration, not evidence about the paper"
        )
    if outcome == "agrees":
        return "agrees", _agree_text(claim)
    if outcome == "undecided":
        return "undecided", what_would_decide(claim)
    if claim.role == "identity":
        return "disagrees", f"a bug: the identity fails (measured {_fmt(claim.measured)}, {_against_text(claim)})"
    unsettled = [r for r, h in checks.items() if h is None or comparison_outcome(h) != "agrees"]
    if unsettled:
        return "undecided", (
            f"misses {_against_text(claim)} (measured {_fmt(claim.measured)}), but its scope check(s) "
            f"{', '.join(unsettled)} are not decided in this run: deciding them decides whether the miss counts"
        )
    text = f"contradicts {TESTED.get(claim.tests, TESTED[None])}: measured {_fmt(claim.measured)}"
    text += f", {_against_text(claim)}"
    alt = claim.alternative
    if alt and claim.role == "prediction":
        text += (
            f"; the alternative ({alt['hypothesis']}) is consistent"
            if alt.get("consistent")
            else "; the alternative is excluded too"
        )
    if claim.status == "deviation":
        text += f"; diagnosed: {claim.diagnosis}"
    if claim.triage.get("scale"):
        text += f"; at this scale only: {claim.triage['scale']}"
    return "disagrees", text


def what_would_decide(claim: Claim) -> str:
    """For an undecided claim: why its evidence cannot decide, and how many times the replicates or draws would
    (the band narrows as one over the square root of their number), where the band says; for a claim with a
    sequential design, whether its next look runs or its budget is spent."""
    if not _finite(claim.measured):
        return f"the measurement is not finite ({_fmt(claim.measured)}): a numerical failure of the run, not evidence"
    factor = samples_to_decide(claim)
    alt = claim.alternative or {}
    n = claim.tolerance.get("n")  # the replicates behind a t band (None for a within-run SE or a CI)
    if claim.tolerance.get("policy") == "criterion":  # a stated tolerance: more data does not narrow it
        return (
            f"its criterion band ({_against_text(claim)}) holds both the statement and the alternative "
            f"({alt.get('hypothesis', 'its alternative')}, {_fmt(alt.get('value'))}): more data does not narrow a "
            "criterion; a direct comparison of the two (a band over the difference) would decide it"
        )
    if factor is None:
        if alt and isinstance(claim.expected, int | float) and alt.get("value") == claim.expected:
            return "prediction and alternative coincide: no amount of data separates them"
        text = "its band holds both the statement and its alternative; a narrower band would decide it"
    else:
        unit = "independent seeds" if isinstance(n, int) else "samples (draws or inputs)"
        now = f" ({n} now, about {math.ceil(n * factor)} needed)" if isinstance(n, int) else ""
        text = (
            f"the band holds both the statement and the alternative ({alt.get('hypothesis', 'its alternative')}): "
            f"about {factor:.2g}x as many {unit}{now} would separate them"
        )
    looks = claim.tolerance.get("looks")
    if looks and n == looks[-1]:
        text += f"; its sequential design's budget ({n} seeds, looks {', '.join(map(str, looks))}) is spent"
    elif looks and n in looks:
        text += f"; its sequential design runs it again at {looks[looks.index(n) + 1]} seeds (probes.decided_run)"
    return text


def samples_to_decide(claim: Claim) -> float | None:
    """How many times the replicates or draws would narrow the band of an undecided prediction enough to exclude
    one of prediction and alternative (None when the band or the separation is not a number)."""
    w, alt = band_width(claim), claim.alternative
    if w is None or not alt or not w > 0 or claim.tolerance.get("policy") == "criterion":
        return None
    a, tol = float(alt["value"]), claim.tolerance
    if "sign" in tol:  # a predicted sign: the band must leave the alternative at the measured effect
        sep = abs(float(claim.measured) - a)
    elif isinstance(claim.expected, int | float):
        sep = abs(float(claim.expected) - a) / 2
    elif tol.get("center") is not None:
        sep = abs(float(tol["center"]) - a) / 2
    else:
        return None
    if not sep > 0:
        return None
    return max((w / sep) ** 2, 1.0)


def _agree_text(claim: Claim) -> str:
    if claim.kind == "bound":
        pop = claim.tolerance.get("population")
        cases = f" in all {pop['n']} cases" if pop else ""
        if attained(claim) and claim.status != "pass":
            rounding = f"float rounding (relative {ROUNDING_RTOL:g})"
            text = (
                f"holds in all {pop['n']} cases, attained to {rounding} at the worst ({_against_text(claim)})"
                if pop
                else f"the bound is attained to {rounding} ({_against_text(claim)})"
            )
        else:
            text = f"holds{cases} ({_against_text(claim)})"
            t = claim.tightness
            if t is not None and math.isfinite(t):
                text += f", tightness {t:.3g}" + (" at the worst case" if pop else "")
                if t < LOOSE_BELOW:
                    text += f": loose (below {LOOSE_BELOW}), true but weak evidence"
        if pop and pop.get("tightness_median") is not None:
            text += f", {pop['tightness_median']:.3g} at the median case"
        return text
    if claim.role == "identity":
        return "exact to float rounding"
    if claim.role == "paper":
        return f"inside the paper's range ({_against_text(claim)})"
    alt = claim.alternative
    if alt:
        return f"inside its band ({_against_text(claim)}); the alternative ({alt['hypothesis']}) excluded"
    return f"inside its band ({_against_text(claim)})"


def _against_text(claim: Claim) -> str:
    tol, e = claim.tolerance, claim.expected
    if claim.kind == "bound" and isinstance(e, int | float):
        return f"bound {tol.get('relation', '')} {_fmt(e)}"
    if claim.kind == "close" and isinstance(e, int | float):
        w = (_float_from_json(tol.get("atol")) or 0.0) + float(tol.get("rtol", 0.0)) * abs(e)
        return f"expected {_fmt(e)} +- {_fmt(w)}"
    if "sign" in tol and claim.alternative:
        return f"sign {'+' if tol['sign'] > 0 else '-'} against {_fmt(claim.alternative['value'])}"
    if tol.get("policy") == "ci95" and "center" in tol:
        lo, hi = (_float_from_json(x) for x in tol["ci"])
        return f"{_fmt(float(tol['center']))} in the 95% interval [{_fmt(lo)}, {_fmt(hi)}]"
    if isinstance(e, list) and len(e) == 2:
        lo, hi = (_fmt(x) if abs(x) < FAR else ("-inf" if x < 0 else "inf") for x in e)
        return f"range [{lo}, {hi}]"
    return "its criterion"
