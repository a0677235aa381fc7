"""Gathering the notebooks' claims: ``claims.json``, the gallery ``README.md`` with its per-paper scorecard, and
each notebook's claims page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from analysis.claims import scorecard
from analysis.claims.ledger import (
    STATUSES,
    TESTED,
    VERDICTS,
    Claim,
    Ledger,
    count_by_role,
    count_by_verdict,
    finding_counts,
    headline,
    unique_claims,
)
from analysis.core.io import (
    atomic_write_json,
    atomic_write_text,
)
from analysis.figures.execution import display_path, read_json_object
from analysis.figures.options import (
    CLAIMS_DIR,
    OWN_CLAIMS,
)


# ----------------------------------------------------------------------------------------------
# Claims and gallery
# ----------------------------------------------------------------------------------------------
def collect(notebooks: list[Path], out: Path) -> dict[str, Any]:
    """Gather each notebook's ledger and figure sidecars from ``out`` (notebook order, then file name)."""
    figures: dict[str, list[dict[str, Any]]] = {nb.stem: [] for nb in notebooks}
    for sidecar in sorted(out.glob("*.json")):
        meta = read_json_object(sidecar)
        if meta.get("kind") == "figure" and meta.get("notebook") in figures:
            figures[meta["notebook"]].append(meta)
    ledgers: dict[str, Ledger | None] = {}
    for nb in notebooks:
        path = out / f"{nb.stem}.claims.json"
        try:
            if path.is_file():
                _check_verdicts(read_json_object(path))
            ledgers[nb.stem] = Ledger.load(path) if path.is_file() else None
        except ValueError as err:  # a missing or malformed field (stability, finding, ...): one line naming the claim
            raise LedgerError(f"{display_path(path)}: {err}") from None
    return {"figures": figures, "ledgers": ledgers}


def _check_verdicts(ledger: dict[str, Any]) -> None:
    """Refuse a saved ledger whose records lack a verdict (saved by an older engine)."""
    for c in ledger.get("claims", []):
        where = f"claim {c.get('context')}/{c.get('name')}"
        if c.get("verdict") not in VERDICTS:
            raise ValueError(
                f"{where} has no verdict (got {c.get('verdict')!r}; allowed {', '.join(VERDICTS)}): the ledger was "
                "saved before verdicts; run its notebook again"
            )


class LedgerError(ValueError):
    """A saved ledger that breaks the evidence rules (``make figures`` exits 2 with this one line)."""


def _all_claims(ledgers: dict[str, Ledger | None]) -> list[Claim]:
    return [c for led in ledgers.values() if led is not None for c in led.claims]


def tally(ledgers: dict[str, Ledger | None]) -> dict[str, int]:
    """Unique claims per status over every notebook (a measurement shown in two places counts once)."""
    counts = dict.fromkeys(STATUSES, 0)
    for c in unique_claims(_all_claims(ledgers)):
        counts[c.status] += 1
    return counts


def claims_document(ledgers: dict[str, Ledger | None]) -> dict[str, Any]:
    claims = unique_claims(_all_claims(ledgers))
    return {
        "headline": headline(claims),
        "summary": tally(ledgers),
        "by_role": count_by_role(claims),
        "by_verdict": count_by_verdict(claims),
        "failing": [f"{c.context}/{c.name}" for c in claims if c.status == "fail"],
        "findings": finding_counts(claims),
        "unstable": [f"{c.context}/{c.name}" for c in claims if c.status == "unstable"],
        "broken_identities": [f"{c.context}/{c.name}" for c in claims if c.status == "fail" and c.role == "identity"],
        "notebooks": {name: led.to_dict() for name, led in ledgers.items() if led is not None},
    }


def papers_document(ledgers: dict[str, Ledger | None]) -> dict[str, Any]:
    """The per-paper scorecard (:mod:`analysis.claims.scorecard`) of the notebooks' claims, each claim's statement
    read from its probe's declaration."""
    from analysis.claims.specs import spec_for
    from analysis.probing.registry import load_declarations

    load_declarations()
    where = {(c.context, c.name): name for name, led in ledgers.items() if led is not None for c in led.claims}
    return scorecard.scorecard(_all_claims(ledgers), lambda c: spec_for(c.context, c.name), where)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _claims_table(claims: list[Claim]) -> list[str]:
    """The claims of one figure or notebook: verdict, what it tests, statement, and the verdict's reason (which holds
    the measurement and what it is judged against)."""
    rows = ["| verdict | tests | claim | statement | why this verdict | paper |", "|---|---|---|---|---|---|"]
    for c in claims:
        rows.append(
            f"| {c.verdict} | {c.tests or ''} | `{_cell(c.context)}/{_cell(c.name)}` ({c.role}) | {_cell(c.statement)} "
            f"| {_cell(c.verdict_reason)} | {f'`{c.paper}`' if c.paper else ''} |"
        )
    return rows


def _claims_list(claims: list[Claim]) -> list[str]:
    """One line per claim (the notebooks' tables hold the statements): where, what it tests, why this verdict."""
    return [
        f"- `{_cell(c.context)}/{_cell(c.name)}` ({c.tests or 'undeclared'}): {_cell(c.verdict_reason)}" for c in claims
    ]


def _paper_sections(papers: dict[str, Any]) -> list[str]:
    """One short section per paper: its line, each statement with its verdict, and links to its figures."""
    lines = []
    for p in papers["papers"]:
        lines += [f"### `{p['key']}` {_cell(p['paper'])}", "", p["summary"], "", f"**{p['line']}.**", ""]
        for st in p["statements"]:
            n = len(st["claims"])
            lines.append(
                f"- **{st['verdict']}** ({', '.join(st['tests'])}; {n} claim{'s' if n != 1 else ''}): "
                f"{_cell(st['statement'])} — {_cell(st['line'])}"
            )
        if p["figures"]:
            lines += ["", "Figures: " + ", ".join(f"[{f}]({f}.png)" for f in p["figures"])]
        lines.append("")
    return lines


def gallery(notebooks: list[Path], collected: dict[str, Any]) -> str:
    """The ``README.md`` of the figures folder. Deterministic: no dates, no wall times."""
    ledgers, figures = collected["ledgers"], collected["figures"]
    papers = collected.get("papers")
    lines = [
        "# Figures",
        "",
        "Generated by `make figures` (`python scripts/make_figures.py`); do not edit by hand.",
        "Each figure has a JSON sidecar with its provenance (commit, parameters, package versions, inputs);",
        "`claims.json` holds every claim checked by the probes, `papers.json` the scorecard per paper. Each claim is",
        "declared (`analysis/claims/specs.py`) with the paper statement it tests and what it tests: `paper` (the",
        "paper's own result), `derivation` (our closed form for the paper's setting), `toy_model` (a solvable",
        "model a paper proposes) or `software` (an identity of our code). Its verdict comes from its evidence at one",
        "error rate (a 95% band): `agrees`, `disagrees` (saying what it contradicts), `undecided` (saying what would",
        "decide it) or `out_of_scope` (a scope check of its run, a measured hypothesis of the theorem, fails:",
        "exploration, never counted against the paper). Unique claims are counted once.",
        "",
        f"**Claims: {headline(_all_claims(ledgers))}.**",
        "",
    ]
    if papers and papers["papers"]:
        lines += [
            "## Per paper",
            "",
            f"**{papers['headline']}.** A statement disagrees when any of its claims does, else agrees when any",
            "does (`analysis/claims/scorecard.py`); `python -m probes claims --paper KEY` prints one paper's "
            "statements and",
            "claims.",
            "",
            *scorecard.table(papers),
            "",
            *_paper_sections(papers),
        ]
    unique = unique_claims(_all_claims(ledgers))
    disagreeing = [c for c in unique if c.verdict == "disagrees"]
    if disagreeing:
        lines += [
            "## Disagreements",
            "",
            "Findings (and, for identities, bugs), reported with their numbers and grouped by what they contradict;",
            "the figures are still built.",
            "",
        ]
        for tests in ("software", "paper", "toy_model", "derivation", None):
            mine = [c for c in disagreeing if c.tests == tests]
            if mine:
                lines += [f"### Contradicting {TESTED[tests]} ({len(mine)})", "", *_claims_list(mine), ""]
    for verdict, title, text in (
        (
            "undecided",
            "Undecided",
            "The evidence cannot separate the statement from its alternative (or was not "
            "evaluated); each says what would decide it.",
        ),
        (
            "out_of_scope",
            "Out of scope",
            "A scope check of the run fails: the run is outside the theorem's "
            "hypotheses, and the measurement is shown as exploration.",
        ),
    ):
        mine = [c for c in unique if c.verdict == verdict and c.role != "scope"]
        if mine:
            lines += [f"## {title} ({len(mine)})", "", text, "", *_claims_list(mine), ""]
    for nb in notebooks:
        name = nb.stem
        led, figs = ledgers[name], figures[name]
        lines += [f"## {name}", ""]
        if led is None and not figs:
            own = "analysis.claims.own" in nb.read_text(encoding="utf-8")
            lines += [OWN_CLAIMS if own else "_Not rendered yet._", ""]
            continue
        params = figs[0]["params"] if figs else ({"preset": led.preset} if led else {})
        shown = ", ".join(f"`{k}={json.dumps(v)}`" for k, v in sorted(params.items()))
        lines += [f"Notebook `{display_path(nb)}`; parameters: {shown}.", ""]
        if led is not None:
            lines += [f"Claims: {led.headline()}.", ""]
            lines += [
                f"Every claim, figure by figure, with its statement and why its verdict: [{CLAIMS_DIR}/{name}.md]"
                f"({CLAIMS_DIR}/{name}.md).",
                "",
            ]
        else:
            lines += ["_No claims ledger saved (call `save_ledger`)._", ""]
        claims = led.claims if led is not None else []
        for meta in figs:
            fig = meta["figure"]
            image = meta["files"].get("png", next(iter(meta["files"].values()), {})).get("path", "")
            lines += [f"### {fig}", "", f"![{fig}]({image})", ""]
            if meta.get("caption"):
                lines += [meta["caption"], ""]
            mine = [c for c in claims if c.figure == fig]
            if mine:
                lines += [f"Claims ([table]({CLAIMS_DIR}/{name}.md#{fig})): {verdict_counts(mine)}.", ""]
    return "\n".join(lines).rstrip() + "\n"


def verdict_counts(claims: list[Claim]) -> str:
    """``"3 agree, 1 disagrees"``: the claims counted by verdict, in :data:`VERDICTS` order (those present)."""
    words = {
        "agrees": ("agrees", "agree"),
        "disagrees": ("disagrees", "disagree"),
        "undecided": ("undecided",) * 2,
        "out_of_scope": ("out of scope",) * 2,
    }
    counts = {v: sum(c.verdict == v for c in claims) for v in VERDICTS}
    return ", ".join(f"{n} {words[v][n != 1]}" for v, n in counts.items() if n)


def claims_page(nb: Path, collected: dict[str, Any]) -> str | None:
    """``claims/<notebook>.md``: the notebook's claims, figure by figure, each with its verdict, what it tests, its
    statement and why its verdict (None for a notebook without a ledger). Deterministic."""
    name = nb.stem
    led, figs = collected["ledgers"][name], collected["figures"][name]
    if led is None:
        return None
    lines = [
        f"# Claims of {name}",
        "",
        f"Generated by `make figures` from `{display_path(nb)}`; the figures are in "
        f"[the gallery](../README.md#{name}).",
        "",
        f"Claims: {led.headline()}.",
        "",
    ]
    for meta in figs:
        fig = meta["figure"]
        mine = [c for c in led.claims if c.figure == fig]
        if mine:
            lines += [f"## {fig}", "", *_claims_table(mine), ""]
    shown_figs = {m["figure"] for m in figs}
    rest = [c for c in led.claims if c.figure not in shown_figs]
    if rest:
        lines += [f"## Other claims of {name}", "", *_claims_table(rest), ""]
    return "\n".join(lines).rstrip() + "\n"


def write_claims_pages(notebooks: list[Path], collected: dict[str, Any], out: Path) -> None:
    """Write every notebook's :func:`claims_page` into ``out/claims/`` and drop the pages of notebooks without one."""
    folder = out / CLAIMS_DIR
    folder.mkdir(exist_ok=True)
    pages = {nb.stem: claims_page(nb, collected) for nb in notebooks}
    for name, text in pages.items():
        if text is not None:
            atomic_write_text(folder / f"{name}.md", text)
    for page in folder.glob("*.md"):
        if pages.get(page.stem) is None:
            page.unlink(missing_ok=True)


def write_collection(notebooks: list[Path], out: Path) -> list[Claim]:
    """Write ``claims.json`` and ``README.md`` into ``out``; return the failing claims (unique)."""
    collected = collect(notebooks, out)
    collected["papers"] = papers_document(collected["ledgers"])
    atomic_write_json(out / "claims.json", claims_document(collected["ledgers"]))
    atomic_write_json(out / "papers.json", collected["papers"])
    write_claims_pages(notebooks, collected, out)
    atomic_write_text(out / "README.md", gallery(notebooks, collected))
    led_values = [led for led in collected["ledgers"].values() if led is not None]
    claims = unique_claims(c for led in led_values for c in led.claims)
    print(f"claims: {headline(claims)}")
    for c in claims:
        if c.verdict in ("undecided", "out_of_scope") and c.role != "scope":
            print("  " + c.line())
    return [c for c in claims if c.verdict == "disagrees"]
