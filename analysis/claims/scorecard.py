"""The per-paper scorecard: for each paper, its checkable statements, the claims that test each, and their verdicts.

Built from the claims of every notebook's ledger (each counted once, :func:`analysis.claims.ledger.unique_claims`) and
their declarations (:mod:`analysis.claims.specs`): a claim belongs to the paper its declaration names, and to the
statement its declaration quotes, so the contexts and tags that repeat one inequality make one statement. A
statement's verdict summarises its claims' by one rule, stated here once:

* ``disagrees`` when any of its claims disagrees (the line says in how many, and what is contradicted);
* else ``agrees`` when any agrees (claims out of scope or undecided beside them are counted in the line);
* else ``undecided`` when any is undecided (the line says what would decide the first);
* else ``out_of_scope``: every run was outside the statement's hypotheses.

Scope checks are not statements: they are counted per paper as runs inside or outside the hypotheses.
``make figures`` writes the scorecard to ``figures/papers.json`` and its table to the top of
``figures/README.md``; ``python -m probes claims --paper KEY`` prints one paper's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from analysis.claims.ledger import DISAGREES_WITH, VERDICTS, Claim, unique_claims
from analysis.claims.papers import PAPERS, paper

FORMAT = 1  # bump when the layout of papers.json changes
# the statement rule of the module docstring, as papers.json states it
RULE = (
    "A statement disagrees when any of its claims disagrees; else agrees when any agrees (claims out of scope or "
    "undecided beside them are counted in its line); else is undecided when any is undecided; else is out of scope "
    "(every run was outside the statement's hypotheses). Scope checks are not statements."
)


def statement_verdict(verdicts: Iterable[str]) -> str:
    """A statement's verdict from its claims' verdicts (module docstring's rule)."""
    vs = list(verdicts)
    for v in ("disagrees", "agrees", "undecided"):
        if v in vs:
            return v
    return "out_of_scope"


def scorecard(
    claims: Iterable[Claim],
    declared: Callable[[Claim], Any | None],
    notebook_of: Mapping[tuple[str, str], str] | None = None,
) -> dict[str, Any]:
    """The scorecard document: ``{"format", "rule", "headline", "papers": [...]}``, papers in registry order.

    ``declared(claim)`` gives a claim's declaration (:func:`analysis.claims.specs.spec_for`), or None for a claim no
    probe declares (left out: it belongs to no paper's statement); ``notebook_of[(context, name)]`` the notebook
    that shows it."""
    notebook_of = notebook_of or {}
    by_paper: dict[str, dict[str, Any]] = {}
    for c in unique_claims(claims):
        spec = declared(c)
        if spec is None or c.paper is None or c.verdict is None:
            continue
        key = paper(c.paper).key
        entry = by_paper.setdefault(key, {"statements": {}, "scope": dict.fromkeys(VERDICTS, 0), "figures": set()})
        if c.figure:
            entry["figures"].add(c.figure)
        where = notebook_of.get((c.context, c.name))
        if where:
            entry.setdefault("notebooks", set()).add(where)
        if c.role == "scope":
            entry["scope"][c.verdict] += 1
            continue
        st = entry["statements"].setdefault(
            spec.statement, {"statement": spec.statement, "tests": set(), "claims": [], "comparisons": set()}
        )
        st["tests"].add(c.tests)
        st["comparisons"].add(spec.comparison)
        st["claims"].append(
            {"claim": f"{c.context}/{c.name}", "tests": c.tests, "verdict": c.verdict, "reason": c.verdict_reason}
            | ({"notebook": where} if where else {})
        )
    papers_out = []
    for key in PAPERS:
        if key not in by_paper:
            continue
        entry = by_paper[key]
        statements = []
        for st in entry["statements"].values():
            verdicts = [x["verdict"] for x in st["claims"]]
            verdict = statement_verdict(verdicts)
            statements.append(
                {
                    "statement": st["statement"],
                    "tests": sorted(st["tests"]),
                    "comparisons": sorted(st["comparisons"]),
                    "verdict": verdict,
                    "line": statement_line(verdict, st["claims"]),
                    "counts": {v: verdicts.count(v) for v in VERDICTS},
                    "claims": st["claims"],
                }
            )
        counts = {v: sum(s["verdict"] == v for s in statements) for v in VERDICTS}
        papers_out.append(
            {
                "key": key,
                "paper": PAPERS[key].short,
                "summary": PAPERS[key].summary,
                "seed": PAPERS[key].seed,
                "statements": statements,
                "counts": counts,
                "claims": sum(len(s["claims"]) for s in statements),
                "scope": {
                    "met": entry["scope"]["agrees"],
                    "not_met": entry["scope"]["out_of_scope"],
                    "undecided": entry["scope"]["undecided"],
                },
                "figures": sorted(entry["figures"]),
                "notebooks": sorted(entry.get("notebooks", ())),
                "line": paper_line(statements, entry["scope"]),
            }
        )
    n_st = sum(len(p["statements"]) for p in papers_out)
    totals = {v: sum(p["counts"][v] for p in papers_out) for v in VERDICTS}
    headline = (
        f"{len(papers_out)} papers, {n_st} statements: {totals['agrees']} agree, {totals['disagrees']} disagree, "
        f"{totals['undecided']} undecided, {totals['out_of_scope']} out of scope"
    )
    return {"format": FORMAT, "rule": RULE, "headline": headline, "papers": papers_out}


def statement_line(verdict: str, claims: list[dict[str, Any]]) -> str:
    """One line for a statement: its verdict in words with the counts behind it."""
    n = len(claims)
    count = {v: sum(x["verdict"] == v for x in claims) for v in VERDICTS}
    rest = [f"{count[v]} {v.replace('_', ' ')}" for v in VERDICTS if count[v] and v != verdict]
    tail = f" ({', '.join(rest)})" if rest else ""
    if verdict == "disagrees":
        missing = [x for x in claims if x["verdict"] == "disagrees"]
        against = " and ".join(sorted({DISAGREES_WITH[x["tests"]] for x in missing}))
        scales = [_scale_note(x["reason"]) for x in missing]
        if all(scales):  # an at-scale finding re-run small: what the run says about the way to the paper's scale
            return (
                f"not reproduced at tiny scale in {count['disagrees']} of {n} claims ({against}); at this scale only: "
                f"{scales[0]}{tail}"
            )
        return f"disagrees in {count['disagrees']} of {n} claims, with {against}{tail}"
    if verdict == "agrees":
        return f"agrees at tiny scale in {count['agrees']} of {n} claims{tail}"
    if verdict == "undecided":
        first = next(x for x in claims if x["verdict"] == "undecided")
        return f"undecided in {count['undecided']} of {n} claims: {first['reason']}{tail}"
    return f"outside the statement's hypotheses in every run ({n} claims)"


SCALE_NOTE = (
    "; at this scale only: "  # how a disagreement's reason quotes its scale (analysis.claims.ledger.verdict_of)
)


def _scale_note(reason: str) -> str:
    """The scale note of a disagreement's reason (how the paper's setting is larger, and the measured trend toward
    it), or "" when it has none."""
    return reason.split(SCALE_NOTE, 1)[1] if SCALE_NOTE in reason else ""


def paper_line(statements: list[dict[str, Any]], scope: Mapping[str, int]) -> str:
    """One line a theorist can quote for a paper: its statements by verdict, what the disagreements contradict,
    and how many runs were outside its hypotheses."""
    n = len(statements)
    count = {v: sum(s["verdict"] == v for s in statements) for v in VERDICTS}
    parts = []
    if count["agrees"]:
        parts.append(f"{count['agrees']} of {n} statements agree at tiny scale")
    if count["disagrees"]:
        against = sorted(
            {DISAGREES_WITH[x["tests"]] for s in statements for x in s["claims"] if x["verdict"] == "disagrees"}
        )
        small = sum(
            s["verdict"] == "disagrees" and s["line"].startswith("not reproduced at tiny scale") for s in statements
        )
        note = f"; {small} of them not reproduced at tiny scale only, the trend quoted" if small else ""
        parts.append(f"{count['disagrees']} disagree (with {' and '.join(against)}{note})")
    if count["undecided"]:
        parts.append(f"{count['undecided']} undecided")
    if count["out_of_scope"]:
        parts.append(f"{count['out_of_scope']} outside their hypotheses in every run")
    text = "; ".join(parts) if parts else "no statement checked"
    if scope.get("out_of_scope"):
        text += f"; {scope['out_of_scope']} scope checks not met"
    return text


def table(doc: Mapping[str, Any]) -> list[str]:
    """The scorecard as a markdown table, one row per paper."""
    rows = [
        "| paper | statements | agree | disagree | undecided | out of scope | in one line |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in doc["papers"]:
        c = p["counts"]
        name = p["paper"].replace("|", "\\|")
        rows.append(
            f"| `{p['key']}` {name} | {len(p['statements'])} | {c['agrees']} | {c['disagrees']} | {c['undecided']} "
            f"| {c['out_of_scope']} | {p['line']} |"
        )
    return rows


def format_paper(doc: Mapping[str, Any], key: str) -> str:
    """One paper's scorecard as text: its line, then each statement with its verdict and claims."""
    want = paper(key).key
    for p in doc["papers"]:
        if p["key"] == want:
            break
    else:
        known = ", ".join(q["key"] for q in doc["papers"])
        raise ValueError(f"--paper: no claims test paper {key!r} in the scorecard; papers with claims: {known}")
    lines = [f"{p['key']}: {p['summary']}", f"  {p['line']}"]
    s = p["scope"]
    lines.append(f"  scope checks: {s['met']} met, {s['not_met']} not met, {s['undecided']} undecided")
    if p["figures"]:
        lines.append(f"  figures: {', '.join(p['figures'])}")
    for st in p["statements"]:
        lines += ["", f"[{st['verdict']}] {st['statement']}", f"  tests: {', '.join(st['tests'])}; {st['line']}"]
        for x in st["claims"]:
            lines.append(f"    {x['verdict']:<13} {x['claim']}: {x['reason']}")
    return "\n".join(lines)
