"""The README and the pages of docs/ say what is true.

* Every Python block runs as written, each in a fresh namespace (a reader pastes one block at a time), with the
  test session's own cache (```py blocks are shown, not run: they need a cluster).
* Every relative Markdown link resolves to a file or folder of the repository, and a ``#anchor`` to a heading of
  the Markdown page it names; every repository path quoted in inline code exists.
* Every ``make TARGET`` quoted is a target of the Makefile, every ``python -m probes COMMAND`` quoted is a command
  of the command line, and ``make help`` lists every target of the Makefile, one line each.
* The README is the newcomer's tour, in order (install, a smoke tour, exploring, your own claim, regenerating
  everything, where things are), short, and it points to the index of docs/, which points to every page.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from analysis.core.paths import REPO

README = REPO / "README.md"
DOCS = REPO / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
TEXT = {page: page.read_text(encoding="utf-8") for page in PAGES}
BLOCKS = [(page, block) for page in PAGES for block in re.findall(r"```python\n(.*?)```", TEXT[page], flags=re.S)]
# Quoted in the README before they exist: another change adds them (remove a name once its file is committed).
PENDING: set[str] = set()


def _name(page: Path) -> str:
    return page.relative_to(REPO).as_posix()


def _prose(text: str) -> str:
    """The text without its fenced code blocks (where a link is code, not a link)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def _code(text: str) -> list[str]:
    """Every line of a fenced block and every inline code span: where commands are quoted."""
    fenced = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M)
    lines = [line for block in fenced for line in block.splitlines()]
    return lines + re.findall(r"`([^`\n]+)`", _prose(text))


def _links(text: str) -> list[str]:
    return re.findall(r"!?\[[^\]]*\]\(([^)\s]+)\)", _prose(text))


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", _prose(page.read_text(encoding="utf-8")), flags=re.M)}


def _makefile_targets() -> set[str]:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    phony = set(re.search(r"^\.PHONY:(.*)$", text, flags=re.M).group(1).split())
    rules = set(re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", text, flags=re.M))
    return phony | rules


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 3


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs(index, monkeypatch):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    page, block = BLOCKS[index]
    code = compile(block, f"{_name(page)} python block {index}", "exec")
    exec(code, {"__name__": f"readme_block_{index}"})  # noqa: S102 - the README is our own text


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_relative_links_resolve(page):
    broken = []
    for link in _links(TEXT[page]):
        if re.match(r"[a-z][a-z+.-]*:", link):  # https:, mailto: ...: not ours to check offline
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
            broken.append(f"{link}: no heading #{anchor} in {_name(target)}")
    assert not broken, f"{_name(page)}: " + "; ".join(broken)


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_quoted_paths_exist(page):
    top = "analysis|probes|scripts|tests|bench|notebooks|docs|figures"
    quoted = {
        token
        for span in re.findall(r"`([^`\n]+)`", _prose(TEXT[page]))
        for token in span.split()
        if re.fullmatch(rf"({top})/[\w./-]*", token)
    }
    missing = sorted(p for p in quoted - PENDING if not (REPO / p).exists())
    assert not missing, f"{_name(page)} quotes paths that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_quoted_make_targets_exist(page):
    targets = _makefile_targets()
    quoted = {m for line in _code(TEXT[page]) for m in re.findall(r"(?:^|[\s;&|(])make ([a-z][\w-]*)", line)}
    assert quoted - targets == set(), f"{_name(page)} quotes make targets the Makefile lacks"


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_quoted_probes_commands_exist(page):
    from analysis.probing import cli

    commands = set(re.findall(r"python -m probes ([a-z]+)", cli.__doc__))
    assert {"list", "run", "claims"} <= commands
    quoted = {m for line in _code(TEXT[page]) for m in re.findall(r"python -m probes ([a-z]+)", line)}
    assert quoted - commands == set(), f"{_name(page)} quotes commands that python -m probes lacks"


def test_make_help_lists_every_target():
    if shutil.which("make"):
        out = subprocess.run(
            ["make", "-s", "--no-print-directory", "help"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout
    else:  # the echo lines of the help recipe
        recipe = re.search(r"^help:\n((?:\t.*\n)+)", (REPO / "Makefile").read_text(encoding="utf-8"), flags=re.M)
        out = "\n".join(re.findall(r'^\t@echo "(.*)"$', recipe.group(1), flags=re.M))
    listed = [line.split()[1] for line in out.splitlines() if line.startswith("make ")]
    assert len(listed) == len(set(listed)), "a target listed twice"
    assert set(listed) == _makefile_targets()


@pytest.mark.skipif(not shutil.which("make"), reason="make is not installed")
@pytest.mark.parametrize("value", ["figures", "./figures/", "{repo}/figures"])
def test_make_lab_refuses_to_write_into_the_committed_gallery(value):
    """A lab whose WORKBENCH_FIGURES names the committed figures/ would overwrite it: one line, exit 2, nothing run."""
    env = {**os.environ, "WORKBENCH_FIGURES": value.format(repo=REPO)}
    res = subprocess.run(
        ["make", "-s", "--no-print-directory", "-o", ".venv/.installed", "lab"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert res.returncode == 2 and "JupyterLab" not in res.stdout
    assert "would let notebooks overwrite the committed figures/" in res.stderr.splitlines()[0]


def test_readme_is_the_tour():
    text = TEXT[README]
    assert len(text.encode()) < 12_000, "the README is one page: details belong in docs/"
    sections = re.findall(r"^## (.+)$", text, flags=re.M)
    order = ["Install", "Five minutes", "Exploring", "Checking your own claim", "Regenerating everything", "Where"]
    starts = [next(i for i, s in enumerate(sections) if s.startswith(want)) for want in order]
    assert starts == sorted(starts), sections
    body = dict(zip(sections, re.split(r"^## .+$", text, flags=re.M)[1:], strict=True))
    assert "make install" in body[sections[starts[0]]]
    assert "make figures PRESET=smoke" in body[sections[starts[1]]]
    assert "make lab" in body[sections[starts[2]]]
    assert "analysis.claims.own" in body[sections[starts[3]]]
    for command in ("make figures", "make test", "make test-thorough", "make bench"):
        assert command in body[sections[starts[4]]]


def test_smoke_figures_go_where_the_readme_says(monkeypatch, tmp_path):
    from analysis.figures.options import parse_args

    monkeypatch.delenv("WORKBENCH_FIGURES", raising=False)
    args = parse_args(["--preset", "smoke", "--prepare-only", str(tmp_path)])
    folder = args.out.relative_to(REPO.resolve()).as_posix()
    assert folder == "build/figures-smoke"
    assert f"`{folder}/`" in TEXT[README]


def test_docs_index_points_to_every_page():
    assert "docs/README.md" in _links(TEXT[README])
    index = DOCS / "README.md"
    linked = {(DOCS / link.partition("#")[0]).resolve() for link in _links(TEXT[index])}
    unlisted = [_name(p) for p in PAGES if p not in (README, index) and p.resolve() not in linked]
    assert not unlisted, f"docs/README.md does not link {unlisted}"
