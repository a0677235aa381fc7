#!/usr/bin/env python
"""Build the results as a static site with Jupyter Book 2 (MyST): ``make book``.

    python scripts/make_book.py [--figures DIR] [--executed DIR] [--out DIR] [--stage-only]

Reads what ``make figures`` left -- the gallery ``figures/`` (``papers.json``, the ``<notebook>.claims.json``
ledgers, each figure's PNG and JSON sidecar) and the executed notebooks ``build/notebooks/<notebook>.ipynb`` --
and writes a MyST project into ``build/book/`` (never into ``figures/`` or ``notebooks/``):

* ``index.md``: the per-paper scorecard (:func:`analysis.claims.scorecard.table`), each paper linking to its section;
* ``papers.md``: a section per paper (label ``paper-<key>``): its statements, verdicts, lines, figures, notebooks;
* ``notebooks/<notebook>.ipynb``: the executed copy, outputs and all, with a note cell after its title (MyST runs no
  kernel); without ``build/notebooks/<notebook>.ipynb``, ``notebooks/<notebook>.md`` says that the notebook has not
  been executed since the checkout and shows its committed figures (the build says so in one line);
* ``figures/<notebook>-figures.md``: each figure (label ``fig-<figure>``) with its image, caption, provenance (commit,
  preset, parameters, inputs, versions) and the claims it checks, each linking to its paper's section.

Then ``jupyter book build --html`` renders it into ``build/book/_build/html`` with the site template ``book/theme/``
(standard-library Python, no download: mystmd's default theme is fetched from GitHub, unreachable here); the links
are relative, so ``index.html`` opens from files or from any HTTP server (``python -m http.server -d ...``).

Exit status: 0 built; 1 the build failed (one line, the log in ``build/book/build.log``); 2 something it needs is
missing (no ``figures/papers.json``: run ``make figures`` first; no Node.js >= 18; no jupyter-book), one line.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from analysis.claims import scorecard
from analysis.core.paths import BUILD, NOTEBOOKS, REPO
from analysis.figures import execution, gallery

THEME = REPO / "book" / "theme"
TITLE = "Transformer theory workbench"
NODE = 18  # Jupyter Book 2 runs on Node.js 18 or later
STAGED = ("myst.yml", "index.md", "papers.md", "notebooks", "figures", "assets", "_theme", "_build", "build.log")
MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|$~^&:=-])")


class BookError(Exception):
    """Something the book needs is missing: ``main`` prints this one line and exits 2."""


# Markdown helpers
def md(text: Any) -> str:
    """``text`` as literal MyST markdown on one line (every markdown/MyST character escaped)."""
    return MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def code(text: Any) -> str:
    """``text`` as inline code (a fence longer than any backtick run inside it)."""
    text = " ".join(str(text).split())
    fence = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def label(kind: str, name: str) -> str:
    """A MyST label: ``label("paper", "000#1") == "paper-000-1"``, ``label("fig", "ae_x") == "fig-ae-x"``."""
    return f"{kind}-" + re.sub(r"[^a-z0-9]+", "-", str(name).lower()).strip("-")


def ref(kind: str, name: str, targets: set[str]) -> str:
    """A link to the section labelled ``label(kind, name)`` when ``name`` is in ``targets``, else the name as code."""
    return f"[{md(name)}](#{label(kind, name)})" if name in targets else code(name)


# What make figures left
def load(figures: Path) -> dict[str, Any]:
    """The gallery: ``papers`` (papers.json), ``names`` (notebooks with a ledger or a figure), and
    :func:`analysis.figures.gallery.collect`'s ``figures`` (sidecars per notebook) and ``ledgers``; ``figure_of``
    maps a claim's ``(context, name)`` to the figure that shows it."""
    path = figures / "papers.json"
    if not path.is_file():
        raise BookError(f"no {execution.display_path(path)}: run make figures first")
    try:
        papers = json.loads(path.read_text())
    except ValueError as e:
        raise BookError(f"{execution.display_path(path)} is not JSON ({e}): run make figures again") from None
    names = {p.name[: -len(".claims.json")] for p in figures.glob("*.claims.json")}
    for sidecar in figures.glob("*.json"):
        meta = execution.read_json_object(sidecar)
        if meta.get("kind") == "figure" and meta.get("notebook"):
            names.add(meta["notebook"])
    try:
        collected = gallery.collect([Path(n) for n in sorted(names)], figures)
    except gallery.LedgerError as e:
        raise BookError(str(e)) from None
    shown = {m["figure"] for figs in collected["figures"].values() for m in figs}
    claims = [c for led in collected["ledgers"].values() if led is not None for c in led.claims]
    figure_of = {(c.context, c.name): c.figure for c in claims if c.figure in shown}
    keys = {p["key"] for p in papers.get("papers", [])}
    return {"papers": papers, "names": sorted(names), **collected, "figure_of": figure_of, "shown": shown, "keys": keys}


def notebook_title(name: str, notebook: Path) -> str:
    """The first heading of a notebook's first markdown cell, else its name."""
    try:
        cells = [c for c in json.loads(notebook.read_text())["cells"] if c.get("cell_type") == "markdown"]
    except (OSError, ValueError, KeyError, TypeError):
        return name
    first = "".join(cells[0].get("source", [])) if cells else ""
    return next((line[2:].strip() for line in first.splitlines() if line.startswith("# ")), name)


def page_of(name: str, book: dict[str, Any]) -> str:
    """A notebook's page, relative to the book's root: the executed notebook, else the fallback page."""
    return f"notebooks/{name}.ipynb" if name in book["executed"] else f"notebooks/{name}.md"


def front(title: str) -> list[str]:
    return ["---", f"title: {json.dumps(title)}", "---", ""]


# Pages
INTRO = (
    "Generated by `make book` from `figures/papers.json` (written by `make figures`): every paper whose statements the "
    "notebooks check, with its statements counted by verdict. A paper's name leads to its statements, their verdicts "
    "and the figures that show them; a figure's page gives its provenance and the claims it checks."
)


def scorecard_page(book: dict[str, Any]) -> str:
    """``index.md``: the scorecard table (one row per paper, linking to its section), then the notebooks."""
    papers = book["papers"]
    rows = scorecard.table(papers)
    for i, p in enumerate(papers["papers"], start=2):  # link each paper's key to its section in papers.md
        rows[i] = rows[i].replace(f"`{p['key']}`", f"[{code(p['key'])}](#{label('paper', p['key'])})", 1)
    lines = [*front("Scorecard"), INTRO, "", f"**{md(papers.get('headline', ''))}.** {md(papers.get('rule', ''))}"]
    lines += ["", *rows, "", "## Notebooks", "", "| notebook | claims | figures |", "|---|---|---|"]
    for name in book["names"]:
        led, figs = book["ledgers"].get(name), book["figures"].get(name, [])
        note = "" if name in book["executed"] else " (not executed since the checkout)"
        claims = md(led.headline()) if led else "no ledger"
        lines.append(
            f"| [{md(name)}]({page_of(name, book)}){note} | {claims} | [{len(figs)}](figures/{name}-figures.md) |"
        )
    return "\n".join(lines) + "\n"


def shown_in(st: dict[str, Any], book: dict[str, Any]) -> str:
    """Links to the figures that show a statement's claims, and to the notebooks of its claims without one."""
    figs, nbs = [], []
    for x in st["claims"]:
        context, _, name = x["claim"].rpartition("/")
        fig = book["figure_of"].get((context, name))
        if fig and fig not in figs:
            figs.append(fig)
        elif not fig and x.get("notebook") and x["notebook"] not in nbs:
            nbs.append(x["notebook"])
    return ", ".join([ref("fig", f, book["shown"]) for f in figs] + [f"[{md(n)}]({page_of(n, book)})" for n in nbs])


def papers_page(book: dict[str, Any]) -> str:
    """``papers.md``: per paper its line, scope checks, notebooks and figures, and a table of its statements."""
    lines = front("Papers, statements and verdicts")
    for p in book["papers"]["papers"]:
        s = p["scope"]
        notebooks = ", ".join(f"[{md(n)}]({page_of(n, book)})" for n in p.get("notebooks", [])) or "none"
        figures = ", ".join(ref("fig", f, book["shown"]) for f in p.get("figures", [])) or "none"
        lines += [f"({label('paper', p['key'])})=", f"## {code(p['key'])} {md(p['paper'])}", "", md(p["summary"]), ""]
        scope = f"Scope checks: {s['met']} met, {s['not_met']} not met, {s['undecided']} undecided."
        lines += [f"**{md(p['line'])}.** {scope}", "", f"Notebooks: {notebooks}. Figures: {figures}.", ""]
        lines += ["| verdict | statement | tests | in one line | shown in |", "|---|---|---|---|---|"]
        for st in p["statements"]:
            cells = [st["verdict"], md(st["statement"]), md(", ".join(st["tests"])), md(st["line"]), shown_in(st, book)]
            lines.append(f"| {' | '.join(cells)} |")
        lines.append("")
    return "\n".join(lines)


def claims_table(claims: list[Any], keys: set[str]) -> list[str]:
    """The gallery's claims table (same columns), escaped for MyST, each paper linking to its section."""
    rows = ["| verdict | tests | claim | statement | why this verdict | paper |", "|---|---|---|---|---|---|"]
    for c in claims:
        paper = ref("paper", c.paper, keys) if c.paper else ""
        where = f"{code(f'{c.context}/{c.name}')} ({c.role})"
        rows.append(
            f"| {c.verdict} | {c.tests or ''} | {where} | {md(c.statement)} | {md(c.verdict_reason)} | {paper} |"
        )
    return rows


def provenance(meta: dict[str, Any], name: str, book: dict[str, Any]) -> list[str]:
    """A figure's provenance as a two-column table: notebook, commit, preset, parameters, inputs, versions, files."""
    items = lambda key: sorted((meta.get(key) or {}).items())  # noqa: E731
    files = [f"{code(f['path'])} (sha256 {code(f.get('sha256', '')[:12])})" for _, f in items("files")]
    rows = {
        "notebook": f"[{md(name)}](../{page_of(name, book)})",
        "commit": code(meta.get("commit") or "unknown"),
        "preset": code(meta.get("preset") or (meta.get("params") or {}).get("preset") or "unknown"),
        "parameters": ", ".join(code(f"{k} = {json.dumps(v)}") for k, v in items("params")) or "none",
        "inputs": ", ".join(code(f"{k} = {v}") for k, v in items("inputs")) or "none",
        "versions": ", ".join(f"{md(k)} {md(v)}" for k, v in items("versions")) or "unknown",
        "files": ", ".join(files) or "none",
    }
    return ["| provenance | |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows.items())]


def figure_image(meta: dict[str, Any]) -> str | None:
    """The file the page shows for a figure: its PNG, else its first file."""
    files = meta.get("files") or {}
    entry = files.get("png") or next(iter(files.values()), None)
    return entry.get("path") if entry else None


def figures_page(name: str, book: dict[str, Any]) -> str:
    """``figures/<notebook>-figures.md``: each figure with its image, caption, provenance and claims."""
    led, figs = book["ledgers"].get(name), book["figures"].get(name, [])
    claims = led.claims if led is not None else []
    lines = [*front(f"Figures of {name}"), f"The committed figures of [{md(name)}](../{page_of(name, book)})"]
    lines[-1] += " (`figures/`), each with its provenance and the claims it checks.\n"
    for meta in figs:
        fig, image = meta["figure"], figure_image(meta)
        mine = [c for c in claims if c.figure == fig]
        lines += [f"({label('fig', fig)})=", f"## {md(fig)}", ""]
        if image:
            lines += [f":::{{figure}} ../assets/{image}", f":alt: {md(fig)}", md(meta.get("caption") or fig), ":::", ""]
        lines += [*provenance(meta, name, book), ""]
        if mine:
            lines += [f"Claims it checks ({gallery.verdict_counts(mine)}):", "", *claims_table(mine, book["keys"])]
        lines += ["" if mine else "No claim checks this figure.", ""]
    rest = [c for c in claims if c.figure not in {m["figure"] for m in figs}]
    if rest:
        lines += [f"## Other claims of {md(name)}", "", *claims_table(rest, book["keys"]), ""]
    return "\n".join(lines)


def executed_notebook(name: str, source: Path, book: dict[str, Any]) -> dict[str, Any]:
    """The executed notebook with one markdown cell added after its title: what the page is, and its figures."""
    nb = json.loads(source.read_text())
    figs = ", ".join(ref("fig", m["figure"], book["shown"]) for m in book["figures"].get(name, []))
    params = ((nb.get("metadata") or {}).get("papermill") or {}).get("parameters") or {}  # injected by make figures
    params = ", ".join(code(f"{k} = {json.dumps(v)}") for k, v in sorted(params.items())) or "none recorded"
    note = (
        f":::{{note}} Executed notebook\nThe copy of `notebooks/{name}.ipynb` that `make figures` executed "
        f"(`build/notebooks/{name}.ipynb`; parameters {params}), outputs as saved: building this book runs no kernel. "
        f"Its figures, with provenance and claims: {figs or 'none'} ([all](../figures/{name}-figures.md)).\n:::"
    )
    cells = nb.get("cells", [])
    for c in cells:  # cell ids become anchors, which MyST wants unique across the book
        if c.get("id"):
            c["id"] = f"{name}-{c['id']}"[:64]
    first = cells[0] if cells else {}
    heading = first.get("cell_type") == "markdown" and "".join(first.get("source", [])).lstrip().startswith("# ")
    cells.insert(int(heading), {"cell_type": "markdown", "id": f"{name}-note"[:64], "metadata": {}, "source": note})
    return nb


def fallback_page(name: str, book: dict[str, Any], title: str) -> str:
    """The page of a notebook without an executed copy: a warning, then its committed figures."""
    lines = [*front(title), ":::{warning} Not executed since the checkout"]
    lines += [
        f"`build/notebooks/{name}.ipynb` is missing: this notebook has not been executed since the checkout, so this "
        "page shows its committed figures instead of the notebook and its outputs (`make figures` executes it).",
        ":::",
        "",
    ]
    for meta in book["figures"].get(name, []):
        image = figure_image(meta)
        lines += [f"![{md(meta['figure'])}](../assets/{image})", ""] if image else []
        lines += [f"{ref('fig', meta['figure'], book['shown'])}: {md(meta.get('caption') or '')}", ""]
    return "\n".join(lines)


def myst_config(book: dict[str, Any]) -> str:
    """``myst.yml``: the table of contents (scorecard, papers, then each notebook with its figures page)."""
    toc = "".join(
        f"        - file: {page_of(n, book)}\n          children:\n            - file: figures/{n}-figures.md\n"
        for n in book["names"]
    )
    return (
        f"version: 1\nproject:\n  title: {json.dumps(TITLE)}\n  toc:\n    - file: index.md\n    - file: papers.md\n"
        f"    - title: Notebooks\n      children:\n{toc}site:\n  template: ./_theme\n"
    )


def stage(figures: Path, executed_dir: Path, out: Path, notebooks: Path = NOTEBOOKS) -> dict[str, Any]:
    """Write the MyST project into ``out``; returns the book (:func:`load`) with ``executed`` and ``missing``
    (notebooks with and without an executed copy)."""
    book = load(figures)
    names = book["names"]
    book["executed"] = {n for n in names if (executed_dir / f"{n}.ipynb").is_file()}
    book["missing"] = [n for n in names if n not in book["executed"]]
    for entry in STAGED:  # only what an earlier run wrote: --out may name a folder that holds other things
        shutil.rmtree(out / entry) if (out / entry).is_dir() else (out / entry).unlink(missing_ok=True)
    for folder in ("notebooks", "figures", "assets"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    shutil.copytree(THEME, out / "_theme")
    (out / "myst.yml").write_text(myst_config(book))
    (out / "index.md").write_text(scorecard_page(book))
    (out / "papers.md").write_text(papers_page(book))
    for name in names:
        images = [i for i in map(figure_image, book["figures"].get(name, [])) if i and (figures / i).is_file()]
        for image in images:
            shutil.copy2(figures / image, out / "assets" / image)
        (out / "figures" / f"{name}-figures.md").write_text(figures_page(name, book))
        if name in book["executed"]:
            nb = executed_notebook(name, executed_dir / f"{name}.ipynb", book)
            (out / "notebooks" / f"{name}.ipynb").write_text(json.dumps(nb, indent=1))
        else:
            title = notebook_title(name, notebooks / f"{name}.ipynb")
            (out / "notebooks" / f"{name}.md").write_text(fallback_page(name, book, title))
    return book


# Building
def check_tools() -> None:
    """Node.js >= 18 and npm on PATH, jupyter-book in this interpreter's environment, else a :class:`BookError`."""
    node = shutil.which("node")
    try:
        version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        major = int(version.lstrip("v").split(".")[0])
    except (OSError, TypeError, ValueError, subprocess.SubprocessError):
        raise BookError(f"node not found (or not answering): Jupyter Book 2 runs on Node.js >= {NODE}") from None
    if major < NODE:
        raise BookError(f"node {version} is too old: Jupyter Book 2 runs on Node.js >= {NODE}")
    if shutil.which("npm") is None:  # mystmd refuses to start without it, though this theme installs nothing
        raise BookError("npm not found: Jupyter Book 2 (mystmd) requires npm >= 8.6 beside node (apt-get install npm)")
    if importlib.util.find_spec("jupyter_book") is None:
        raise BookError("jupyter-book is not installed: pip install -e '.[book]' (make book does it)")


def build(out: Path, timeout: float = 600.0) -> tuple[str | None, list[str]]:
    """``jupyter book build --html`` in ``out``, its output saved to ``out/build.log``: (why it failed or None, the
    problems mystmd reported: its error and warning lines, e.g. a formula KaTeX cannot typeset)."""
    env = {k: v for k, v in os.environ.items() if k not in ("BASE_URL", "READTHEDOCS_CANONICAL_URL")}
    bindir = str(Path(sys.executable).parent)  # the theme's `python3 server.py` runs in this environment
    env.update(PATH=os.pathsep.join([bindir, env.get("PATH", os.defpath)]), HOST="localhost", NO_COLOR="1", CI="1")
    cmd = [sys.executable, "-m", "jupyter_book", "build", "--html"]
    try:
        proc = subprocess.run(cmd, cwd=out, env=env, capture_output=True, text=True, timeout=timeout, input="")
    except subprocess.TimeoutExpired:
        return f"jupyter book build --html took more than {timeout:g} s", []
    log = proc.stdout + proc.stderr
    (out / "build.log").write_text(log)
    problems = [line.strip() for line in log.splitlines() if line.lstrip().startswith(("⛔", "⚠"))]
    pages = [out / "_build" / "html" / "index.html"]
    config = out / "_build" / "html" / "config.json"
    if config.is_file():
        project = json.loads(config.read_text())["projects"][0]
        pages += [out / "_build" / "html" / p["slug"] / "index.html" for p in project["pages"] if p.get("slug")]
    missing = [p for p in pages if not p.is_file()]
    if proc.returncode:
        return f"exit code {proc.returncode}: {(problems or log.strip().splitlines() or [''])[-1]}", problems
    if missing:
        return f"no {execution.display_path(missing[0])} was written", problems
    return None, problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="make_book.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--figures", type=Path, default=REPO / "figures", help="the gallery (default figures/)")
    p.add_argument("--executed", type=Path, default=BUILD / "notebooks", help="executed notebooks (build/notebooks)")
    p.add_argument("--notebooks", type=Path, default=NOTEBOOKS, help="committed notebooks (their titles)")
    p.add_argument("--out", type=Path, default=BUILD / "book", help="the MyST project and its _build/ (build/book)")
    p.add_argument("--stage-only", action="store_true", help="write the MyST project, do not build it")
    args = p.parse_args(argv)
    t0 = time.monotonic()
    try:
        if not args.stage_only:
            check_tools()
        book = stage(args.figures.resolve(), args.executed.resolve(), args.out.resolve(), args.notebooks.resolve())
    except BookError as e:
        print(f"make_book.py: error: {e}", file=sys.stderr)
        return 2
    out = execution.display_path(args.out.resolve())
    if book["missing"]:
        missing = f"{len(book['missing'])} notebook(s) not executed since the checkout ({', '.join(book['missing'])})"
        print(f"book: {missing}: their pages show the committed figures; make figures executes them")
    if args.stage_only:
        print(f"book: MyST project in {out}/ (not built)")
        return 0
    failed, problems = build(args.out.resolve())
    if failed:
        print(f"make_book.py: error: jupyter book build failed: {failed} (log: {out}/build.log)", file=sys.stderr)
        return 1
    if problems:
        print(f"book: mystmd reported {len(problems)} problem(s), the first: {problems[0]} (all in {out}/build.log)")
    n, took = len(book["papers"].get("papers", [])), time.monotonic() - t0
    print(f"book: {n} papers, {len(book['names'])} notebooks in {took:.1f} s: open {out}/_build/html/index.html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
