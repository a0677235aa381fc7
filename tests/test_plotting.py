"""Figure output: byte-identical re-renders and provenance in every format's own metadata field."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from analysis.claims.ledger import Ledger  # noqa: E402
from analysis.core.io import sha256_file  # noqa: E402
from analysis.core.provenance import PACKAGES, git_commit, tree_hash  # noqa: E402
from analysis.notebook import plotting  # noqa: E402

PARAMS = {"preset": "smoke", "seed": 7, "n_layers": 3}
INPUTS = {"checkpoint": "0123abcd", "result": "feedbeef"}
DC = "{http://purl.org/dc/elements/1.1/}"
ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")


def _render(out, params=PARAMS, name="decay", formats=("png", "svg")):
    """One figure in the house style: a measured power law, its band and the theory line."""
    with matplotlib.rc_context():
        plotting.use_style()
        fig, ax = plotting.subplots()
        t = np.arange(1, 41, dtype=float)
        measured = t**-0.6 * (1 + 0.05 * np.sin(t))
        plotting.band(ax, t, measured * 0.9, measured * 1.1, color=plotting.MEASURED)
        ax.plot(t, measured, color=plotting.MEASURED, label="measured")
        plotting.theory_line(ax, t, t**-0.6, r"theory $t^{-0.6}$")
        plotting.loglog(ax)
        ax.set_xlabel("t")
        ax.legend()
        led = Ledger("nb_test", preset="smoke")
        led.close("alpha", role="identity", measured=0.6, expected=0.6, rtol=0.01, source="test", figure=name)
        led.close("other", role="identity", measured=1.0, expected=1.0, source="test")
        paths = plotting.save_figure(
            fig,
            name,
            notebook="nb_test",
            params=params,
            ledger=led,
            inputs=INPUTS,
            caption="a power law",
            formats=formats,
            out_dir=out,
        )
        plt.close(fig)
    return paths


@pytest.fixture(scope="module")
def twice(tmp_path_factory):
    a = _render(tmp_path_factory.mktemp("a"))
    b = _render(tmp_path_factory.mktemp("b"))
    return a, b


def test_rerender_gives_identical_bytes(twice):
    a, b = twice
    assert set(a) == {"png", "svg", "json"}
    for fmt in ("png", "svg", "json"):
        assert a[fmt].read_bytes() == b[fmt].read_bytes(), f"{fmt} differs between two renders"


def test_different_parameters_give_different_files(tmp_path, twice):
    c = _render(tmp_path, params={**PARAMS, "seed": 8})
    a, _ = twice
    for fmt in ("png", "svg", "json"):
        assert a[fmt].read_bytes() != c[fmt].read_bytes(), f"{fmt} does not record the parameters"


def _check_record(rec, name="decay"):
    assert rec["figure"] == name and rec["notebook"] == "nb_test"
    assert rec["params"] == PARAMS and rec["preset"] == "smoke" and rec["seed"] == 7
    assert rec["inputs"] == INPUTS
    assert rec["caption"] == "a power law"
    assert set(rec["versions"]) == {"python", *PACKAGES}
    assert rec["commit"] == git_commit()
    assert not ISO_DATE.search(json.dumps(rec)), "provenance must not hold a timestamp"


def test_png_text_chunks_hold_provenance(twice):
    chunks = plotting.read_png_text(twice[0]["png"])
    assert "Date" not in chunks and "Creation Time" not in chunks
    assert chunks["Title"] == "nb_test/decay"
    assert chunks["Source"] == git_commit()
    _check_record(json.loads(chunks["Provenance"]))


def test_svg_metadata_holds_provenance(twice):
    root = ET.parse(twice[0]["svg"]).getroot()
    meta = root.find("{http://www.w3.org/2000/svg}metadata")
    assert meta is not None
    work = meta.find(".//{http://creativecommons.org/ns#}Work")
    assert work.find(f"{DC}date") is None, "SVG must not carry a date"
    assert work.find(f"{DC}source").text == git_commit()
    assert work.find(f"{DC}identifier").text == "nb_test"
    _check_record(json.loads(work.find(f"{DC}description").text))
    assert not ISO_DATE.search(twice[0]["svg"].read_text())


def test_sidecar(twice):
    paths = twice[0]
    side = json.loads(paths["json"].read_text())
    _check_record(side)
    assert side["kind"] == "figure"
    for fmt in ("png", "svg"):
        entry = side["files"][fmt]
        assert entry["path"] == f"decay.{fmt}"
        assert entry["sha256"] == sha256_file(paths[fmt])
    # only the claims tagged with this figure are copied
    assert [c["name"] for c in side["claims"]] == ["alpha"]
    assert side["claims"][0]["status"] == "pass"


def test_pdf_is_reproducible_too(tmp_path):
    a = _render(tmp_path / "a", formats=("pdf",))
    b = _render(tmp_path / "b", formats=("pdf",))
    assert a["pdf"].read_bytes() == b["pdf"].read_bytes()
    assert b"CreationDate" not in a["pdf"].read_bytes()


def test_save_ledger(tmp_path):
    led = Ledger("nb_test", preset="smoke")
    led.close("x", role="identity", measured=2.0, expected=1.0, source="test")
    path = plotting.save_ledger(led, notebook="nb_test", out_dir=tmp_path)
    assert path == tmp_path / "nb_test.claims.json"
    assert Ledger.load(path) == led


def test_default_folder_is_workbench_figures(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_FIGURES", str(tmp_path))
    with matplotlib.rc_context():
        fig, _ = plt.subplots()
        paths = plotting.save_figure(fig, "empty", notebook="nb_test", params={"preset": "full"})
        plt.close(fig)
    assert paths["png"].parent == tmp_path and (tmp_path / "empty.json").is_file()


def test_an_exploring_run_never_writes_the_committed_gallery_and_says_where_it_writes(tmp_path, monkeypatch, capsys):
    """Without WORKBENCH_FIGURES (JupyterLab, papermill by hand) figures and ledgers go to the scratch gallery."""
    from analysis.core import paths

    monkeypatch.delenv("WORKBENCH_FIGURES", raising=False)
    monkeypatch.setattr(paths, "EXPLORE", tmp_path / "explore")
    monkeypatch.setattr(plotting, "_TOLD", False)
    committed = sorted((p.name, p.stat().st_mtime_ns) for p in paths.GALLERY.iterdir())
    assert paths.figures_dir() == tmp_path / "explore" and paths.gallery_dir() == paths.GALLERY.resolve()
    with matplotlib.rc_context():
        fig, _ = plt.subplots()
        out = plotting.save_figure(fig, "pf_explore", notebook="03_prompt_forgetting", params={"preset": "smoke"})
        plt.close(fig)
    led = Ledger("nb_test", preset="smoke")
    ledger_path = plotting.save_ledger(led, notebook="03_prompt_forgetting")
    assert out["png"].parent == tmp_path / "explore" and ledger_path.parent == tmp_path / "explore"
    told = capsys.readouterr().out
    assert told.count("exploring: figures and claims go to the scratch gallery") == 1  # said once, not per figure
    assert sorted((p.name, p.stat().st_mtime_ns) for p in paths.GALLERY.iterdir()) == committed
    monkeypatch.setenv("WORKBENCH_FIGURES", str(tmp_path / "named"))  # asking for a folder by name
    assert paths.figures_dir() == paths.gallery_dir() == tmp_path / "named" and not paths.exploring()


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"name": "../escape"}, "name"),
        ({"name": "has space"}, "name"),
        ({"notebook": "a/b"}, "notebook"),
        ({"params": {"seed": 1}}, "preset"),
        ({"params": {"preset": "medium"}}, "preset"),
        ({"params": {"preset": "smoke", "f": object()}}, "params"),
        ({"inputs": {"checkpoint": 3}}, "inputs"),
        ({"formats": ("png", "jpg")}, "formats"),
        ({"formats": ("png", "png")}, "formats must not repeat"),
        ({"caption": None}, "caption"),
    ],
)
def test_save_figure_rejects_bad_arguments(tmp_path, kwargs, field):
    args = {"name": "ok", "notebook": "nb", "params": {"preset": "smoke"}, **kwargs}
    fig, _ = plt.subplots()
    try:
        with pytest.raises(ValueError, match=field):
            plotting.save_figure(fig, args.pop("name"), out_dir=tmp_path, **args)
    finally:
        plt.close(fig)
    assert not list(tmp_path.iterdir()), "nothing is written when the arguments are invalid"


def test_style_file():
    keys = [
        ln.split(":", 1)[0].strip()
        for ln in plotting.STYLE.read_text().splitlines()
        if ln.strip() and not ln.lstrip().startswith("#")
    ]
    assert "backend" not in keys, "the backend is set by configuration (MPLBACKEND=agg), not by the style"
    assert "svg.hashsalt" in keys
    with matplotlib.rc_context():
        plotting.use_style()
        assert matplotlib.rcParams["svg.hashsalt"]
        colors = [c["color"].upper().lstrip("#") for c in matplotlib.rcParams["axes.prop_cycle"]]
        assert colors == [c.upper().lstrip("#") for c in plotting.CYCLE]
        assert tuple(matplotlib.rcParams["figure.figsize"]) == plotting.FIGSIZE["single"]


def test_house_helpers():
    with matplotlib.rc_context():
        plotting.use_style()
        fig, ax = plotting.subplots(size="wide")
        x = np.array([1.0, 2.0, 4.0])
        (measured,) = ax.plot(x, 1 / x)
        poly = plotting.band(ax, x, 0.9 / x, 1.1 / x)
        line = plotting.theory_line(ax, x, 1 / x, "1/x")
        assert line.get_linestyle() == "--" and line.get_zorder() > measured.get_zorder() > poly.get_zorder()
        assert line.get_color() == plotting.THEORY
        plotting.loglog(ax)
        assert ax.get_xscale() == ax.get_yscale() == "log"
        assert tuple(fig.get_size_inches()) == plotting.FIGSIZE["wide"]
        with pytest.raises(ValueError, match="lo and hi"):
            plotting.band(ax, x, x, x[:2])
        with pytest.raises(ValueError, match="size"):
            plotting.subplots(size="huge")
        plt.close(fig)


def test_tree_hash_tracks_sources_only(tmp_path):
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    h0 = tree_hash(["pkg"], base=tmp_path)
    (tmp_path / "pkg" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    assert tree_hash(["pkg"], base=tmp_path) == h0
    (tmp_path / "pkg" / "a.py").write_text("x = 2\n")
    assert tree_hash(["pkg"], base=tmp_path) != h0


def test_git_commit_format():
    assert re.fullmatch(r"([0-9a-f]{40}|no-commit)(-dirty)?|unknown", git_commit())
