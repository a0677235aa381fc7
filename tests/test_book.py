"""The book (``make book``, scripts/make_book.py): MyST pages generated from a small gallery, and the static site that
Jupyter Book 2 builds from them, opened in headless Chromium.

The gallery is made here: a ``papers.json`` with one paper, one notebook's claims ledger, one figure (PNG and JSON
sidecar) and one executed notebook with outputs. The page tests need nothing but Python; the site test builds the
book with ``jupyter book build --html`` (the ``book`` extra and Node.js) and drives Debian's chromium as
tests/test_browser.py does, skipping with the reason where either is missing.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import http.server
import importlib.util
import json
import re
import struct
import sys
import threading
import time
import zlib
from pathlib import Path

import pytest

from analysis.claims.ledger import Claim, Ledger
from analysis.core.paths import REPO

NAME = "99_demo"  # the fixture notebook
STATEMENT = "|x| <= 2*y_1 on [0, 1] for {L-1} (eta* ~ 1)"  # markdown and MyST characters that must stay text


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


make_book = _load("make_book_under_test", REPO / "scripts" / "make_book.py")
theme = _load("book_theme_under_test", REPO / "book" / "theme" / "server.py")


def png(width: int = 40, height: int = 24, rgb: tuple[int, int, int] = (200, 60, 40)) -> bytes:
    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def write_gallery(root: Path) -> dict[str, Path]:
    """figures/ (papers.json, a ledger, a figure and its sidecar), executed/ (the executed notebook), notebooks/."""
    figures, executed, notebooks = root / "figures", root / "executed", root / "notebooks"
    for folder in (figures, executed, notebooks):
        folder.mkdir(parents=True)
    claim = Claim(
        name="fx_exact", context="demo", role="identity", source="derivation", statement=STATEMENT, kind="close",
        expected=0.0, measured=0.0, tolerance={"atol": 1.0, "rtol": 0.0}, status="pass", figure="fx_demo",
        tests="software", paper="fx#1", verdict="agrees", verdict_reason="exact to float rounding", outcome=True,
    )  # fmt: skip
    Ledger(NAME, "smoke", [claim]).save(figures / f"{NAME}.claims.json")
    image = png()
    (figures / "fx_demo.png").write_bytes(image)
    sidecar = {
        "kind": "figure", "figure": "fx_demo", "notebook": NAME, "caption": "A red rectangle, the demo's only figure.",
        "commit": "0123456789abcdef", "preset": "smoke", "params": {"preset": "smoke", "seed": 3},
        "inputs": {"demo_result": "feedc0ffee"}, "versions": {"numpy": "2.0"}, "claims": [claim.to_dict()],
        "files": {"png": {"path": "fx_demo.png", "sha256": hashlib.sha256(image).hexdigest()}},
    }  # fmt: skip
    (figures / "fx_demo.json").write_text(json.dumps(sidecar))
    counts = {"agrees": 1, "disagrees": 0, "undecided": 0, "out_of_scope": 0}
    statement = {
        "statement": STATEMENT, "tests": ["software"], "comparisons": ["close"], "verdict": "agrees",
        "line": "agrees at tiny scale in 1 of 1 claims", "counts": counts,
        "claims": [{"claim": "demo/fx_exact", "tests": "software", "verdict": "agrees", "reason": "exact",
                    "notebook": NAME}],
    }  # fmt: skip
    paper = {
        "key": "fx#1", "paper": "Fixture paper", "summary": "A paper made for the test.", "seed": True,
        "statements": [statement], "counts": counts, "claims": 1, "scope": {"met": 0, "not_met": 0, "undecided": 0},
        "figures": ["fx_demo"], "notebooks": [NAME], "line": "1 of 1 statements agree at tiny scale",
    }  # fmt: skip
    doc = {"format": 1, "rule": "The demo rule.", "headline": "1 papers, 1 statements: 1 agree", "papers": [paper]}
    (figures / "papers.json").write_text(json.dumps(doc))
    title = {"cell_type": "markdown", "id": "title", "metadata": {}, "source": "# 99 · Demo notebook\n\nIt has $x^2$."}
    outputs = [
        {"output_type": "stream", "name": "stdout", "text": "hello from the kernel\n"},
        {"output_type": "display_data", "metadata": {},
         "data": {"image/png": base64.b64encode(image).decode(), "text/plain": "<Figure>"}},
    ]  # fmt: skip
    cell = {
        "cell_type": "code",
        "id": "run",
        "metadata": {},
        "execution_count": 1,
        "source": "demo()",
        "outputs": outputs,
    }
    nb = {"cells": [title, cell], "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
          "language": "python"}}, "nbformat": 4, "nbformat_minor": 5}  # fmt: skip
    (executed / f"{NAME}.ipynb").write_text(json.dumps(nb))
    bare = dict(nb, cells=[title, dict(cell, outputs=[], execution_count=None)])
    (notebooks / f"{NAME}.ipynb").write_text(json.dumps(bare))
    return {"figures": figures, "executed": executed, "notebooks": notebooks}


def tree_hash(folder: Path) -> str:
    return hashlib.sha256(b"".join(p.name.encode() + p.read_bytes() for p in sorted(folder.rglob("*")))).hexdigest()


# ----------------------------------------------------------------------------------------------
# Pages (no Node, no browser)
# ----------------------------------------------------------------------------------------------
def test_markdown_helpers():
    assert make_book.label("paper", "000#1") == "paper-000-1"
    assert make_book.label("fig", "ae_planted") == "fig-ae-planted"
    assert make_book.md("a|b *c* [d](e) $x$ <b>") == r"a\|b \*c\* \[d\]\(e\) \$x\$ \<b\>"
    assert make_book.code("x = `y`") == "`` x = `y` ``" and make_book.code("plain") == "`plain`"
    assert make_book.ref("fig", "fx_demo", {"fx_demo"}) == r"[fx\_demo](#fig-fx-demo)"
    assert make_book.ref("fig", "gone", {"fx_demo"}) == "`gone`"  # a figure without a page: named, not linked


def test_pages_from_a_small_gallery(tmp_path):
    paths = write_gallery(tmp_path)
    before = {k: tree_hash(v) for k, v in paths.items()}
    out = tmp_path / "book"
    book = make_book.stage(paths["figures"], paths["executed"], out, paths["notebooks"])
    assert book["executed"] == {NAME} and book["missing"] == []
    assert {k: tree_hash(v) for k, v in paths.items()} == before  # the gallery and notebooks are only read

    myst = (out / "myst.yml").read_text()
    assert f"file: notebooks/{NAME}.ipynb" in myst and f"file: figures/{NAME}-figures.md" in myst
    assert "template: ./_theme" in myst and (out / "_theme" / "server.py").is_file()
    index = (out / "index.md").read_text()
    assert 'title: "Scorecard"' in index
    assert (
        "| [`fx#1`](#paper-fx-1) Fixture paper | 1 | 1 | 0 | 0 | 0 | 1 of 1 statements agree at tiny scale |" in index
    )
    assert f"[99\\_demo](notebooks/{NAME}.ipynb)" in index
    papers = (out / "papers.md").read_text()
    assert "(paper-fx-1)=" in papers and "## `fx#1` Fixture paper" in papers
    assert f"| agrees | {make_book.md(STATEMENT)} | software |" in papers and r"[fx\_demo](#fig-fx-demo)" in papers
    figures = (out / "figures" / f"{NAME}-figures.md").read_text()
    assert "(fig-fx-demo)=" in figures and ":::{figure} ../assets/fx_demo.png" in figures
    assert "A red rectangle, the demo's only figure." in figures
    for text in ("`0123456789abcdef`", "`smoke`", "`seed = 3`", "`demo_result = feedc0ffee`", "numpy 2.0"):
        assert text in figures, text
    assert f"| agrees | software | `demo/fx_exact` (identity) | {make_book.md(STATEMENT)} |" in figures
    assert "[fx\\#1](#paper-fx-1)" in figures and "1 agrees" in figures
    assert (out / "assets" / "fx_demo.png").read_bytes() == (paths["figures"] / "fx_demo.png").read_bytes()
    nb = json.loads((out / "notebooks" / f"{NAME}.ipynb").read_text())
    assert [c["cell_type"] for c in nb["cells"]] == ["markdown", "markdown", "code"]  # the note after the title
    assert "Executed notebook" in nb["cells"][1]["source"] and "(#fig-fx-demo)" in nb["cells"][1]["source"]
    assert nb["cells"][2]["outputs"][0]["text"] == "hello from the kernel\n"  # outputs as executed


def test_a_notebook_not_executed_falls_back_to_its_figures(tmp_path, capsys):
    paths = write_gallery(tmp_path)
    (paths["executed"] / f"{NAME}.ipynb").unlink()
    out = tmp_path / "book"
    args = ["--figures", paths["figures"], "--executed", paths["executed"], "--notebooks", paths["notebooks"]]
    assert make_book.main([*map(str, args), "--out", str(out), "--stage-only"]) == 0
    said = capsys.readouterr().out.strip().splitlines()
    assert len([line for line in said if "not executed since the checkout" in line]) == 1 and NAME in said[0]
    page = (out / "notebooks" / f"{NAME}.md").read_text()
    assert 'title: "99 \\u00b7 Demo notebook"' in page  # the committed notebook's title
    assert "has not been executed since the checkout" in page and "](../assets/fx_demo.png)" in page
    assert f"file: notebooks/{NAME}.md" in (out / "myst.yml").read_text()
    assert not (out / "notebooks" / f"{NAME}.ipynb").exists()


def test_missing_inputs_are_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert make_book.main(["--figures", str(empty), "--out", str(tmp_path / "b"), "--stage-only"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "papers.json: run make figures first" in err[0]
    paths = write_gallery(tmp_path / "g")
    monkeypatch.setenv("PATH", str(tmp_path))  # no node, no npm
    assert make_book.main(["--figures", str(paths["figures"]), "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("make_book.py: error: node not found")
    assert not (tmp_path / "b").exists()  # refused before anything was written


def test_theme_renders_page_json():
    """The site template turns MyST's page JSON into HTML with links relative to the page."""
    config = {"projects": [{"title": "T", "index": "index", "pages": [{"slug": "nb", "title": "NB", "level": 1}]}]}
    tree = {"type": "root", "children": [
        {"type": "heading", "depth": 2, "html_id": "sec", "children": [{"type": "text", "value": "A < B"}]},
        {"type": "paragraph", "children": [
            {"type": "crossReference", "url": "/", "html_id": "paper-x", "children": [{"type": "text", "value": "P"}]},
            {"type": "link", "url": "/nb", "children": [{"type": "text", "value": "notebook"}]},
            {"type": "inlineMath", "value": "x", "html": "<span class=\"katex\">x</span>"}]},
        {"type": "image", "url": "/fig-123.png", "alt": "fig"},
        {"type": "table", "children": [{"type": "tableRow", "children": [
            {"type": "tableCell", "children": [{"type": "text", "value": "disagrees"}]}]}]},
        {"type": "block", "kind": "notebook-code", "children": [
            {"type": "code", "value": "print(1)"},
            {"type": "outputs", "children": [
                {"type": "output", "jupyter_data": {"output_type": "stream", "name": "stdout", "text": "\x1b[1mok\n"}},
                {"type": "output", "jupyter_data": {"output_type": "display_data", "data": {
                    "image/png": {"path": "/abc.png", "content_type": "image/png"}}}},
                {"type": "output", "jupyter_data": {"output_type": "display_data", "data": {
                    "text/html": {"path": "/big.txt", "content_type": "text/html"}}}}]}]}]}  # fmt: skip
    page = theme.page_html({"frontmatter": {"title": "NB"}, "mdast": tree}, config, "nb", lambda p: f"<b>{p}</b>")
    assert "</head >" in page and "</head>" not in page  # mystmd's index.html redirect script is not injected
    assert '<h2 id="sec">A &lt; B' in page and '<a href="../index.html#paper-x">P</a>' in page
    assert '<a href="../nb/index.html">notebook</a>' in page and '<span class="katex">x</span>' in page
    assert '<img src="../build/fig-123.png" alt="fig">' in page and '<td class="verdict disagrees">' in page
    assert '<pre class="output stream stdout">ok\n</pre>' in page and 'src="../build/abc.png"' in page
    assert "<b>/big.txt</b>" in page  # an externalised output is read back and inlined
    assert 'href="myst-theme.css"' in theme.page_html({"mdast": tree}, config, "index")  # the index is the root
    assert theme.favicon()[:4] == b"\x00\x00\x01\x00"


# ----------------------------------------------------------------------------------------------
# The built site in a real browser
# ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The fixture gallery built with ``jupyter book build --html``: the html folder (skips without the tools)."""
    try:
        make_book.check_tools()
    except make_book.BookError as e:
        pytest.skip(f"cannot build the book here: {e}")
    root = tmp_path_factory.mktemp("book")
    paths = write_gallery(root)
    args = ["--figures", paths["figures"], "--executed", paths["executed"], "--notebooks", paths["notebooks"]]
    t0 = time.monotonic()
    assert make_book.main([*map(str, args), "--out", str(root / "book")]) == 0, (
        root / "book" / "build.log"
    ).read_text()
    print(f"book test: jupyter book build of the fixture in {time.monotonic() - t0:.1f} s")
    html = root / "book" / "_build" / "html"
    log = (root / "book" / "build.log").read_text()
    assert "⛔" not in log and "⚠" not in log, log  # the generated pages raise no MyST error or warning
    return html


@pytest.mark.slow
def test_every_link_and_image_of_the_site_resolves(site):
    """Each relative href and src of every page names a file of the site, and each #anchor an id of its page."""
    pages = sorted(site.rglob("index.html"))
    ids = {p: set(re.findall(r'id="([^"]+)"', p.read_text())) for p in pages}
    checked = 0
    for page in pages:
        for url in re.findall(r'(?:href|src)="([^"]*)"', page.read_text()):
            path, _, anchor = html.unescape(url).partition("#")
            if path.startswith(("http:", "https:", "data:")):
                continue
            target = (page.parent / path).resolve() if path else page
            assert target.is_file(), f"{page.relative_to(site)}: {url} names no file"
            assert not anchor or target.name != "index.html" or anchor in ids[target], f"{page}: {url}"
            checked += 1
    assert len(pages) == 4 and checked > 20  # the scorecard, papers, the notebook and its figures page


@pytest.fixture(scope="module")
def served(site):
    """The built site on a local HTTP server (127.0.0.1, a free port): its base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser(site, tmp_path_factory):
    from test_browser import CHROMEDRIVER, CHROMIUM, CHROMIUM_FLAGS, _browser_or_skip

    _browser_or_skip()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-book')}")
    drv = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    drv.set_page_load_timeout(30)
    try:
        yield drv
    finally:
        drv.quit()


def _text(drv) -> str:
    return drv.execute_script("return document.body.innerText")


def _loaded_images(drv, selector: str) -> int:
    images = f"[...document.querySelectorAll({json.dumps(selector)})]"
    return drv.execute_script(f"return {images}.filter(i => i.complete && i.naturalWidth > 0).length")


@pytest.mark.browser
@pytest.mark.slow
def test_site_renders_in_chromium(site, served, browser):
    from selenium.webdriver.common.by import By

    browser.get(f"{served}/index.html")
    text = _text(browser)
    assert "Scorecard" in text and "1 of 1 statements agree at tiny scale" in text and "Fixture paper" in text
    browser.find_element(By.LINK_TEXT, "fx#1").click()  # the scorecard's paper leads to its statements
    assert browser.current_url.endswith("/papers/index.html#paper-fx-1")
    assert STATEMENT in _text(browser) and "agrees" in _text(browser)

    browser.find_element(By.LINK_TEXT, "fx_demo").click()  # the statement's figure: image, caption, provenance, claim
    assert browser.current_url.endswith("#fig-fx-demo")
    text = _text(browser)
    for shown in ("A red rectangle", "0123456789abcdef", "seed = 3", "demo_result = feedc0ffee", "demo/fx_exact"):
        assert shown in text, shown
    assert STATEMENT in text and "exact to float rounding" in text
    assert _loaded_images(browser, "figure img") == 1

    browser.get(f"{served}/demo/index.html")  # the executed notebook, outputs and all
    text = _text(browser)
    assert "99 · Demo notebook" in text and "hello from the kernel" in text and "Executed notebook" in text
    assert _loaded_images(browser, ".output img") == 1

    browser.get((site / "demo-figures" / "index.html").as_uri())  # the same site opened from files
    assert "fx_demo" in _text(browser) and _loaded_images(browser, "figure img") == 1
