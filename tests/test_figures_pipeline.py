"""The figure pipeline (`analysis/figures/`, run as `scripts/make_figures.py`) end to end: rendering, failing claims,
failing cells, resume, timeouts.

Every run writes into pytest's temporary folders (``--out`` and ``--build``); the committed
``figures/`` folder is never touched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from analysis.claims.ledger import Ledger
from analysis.core.paths import REPO
from analysis.figures import execution, options

from tier import TIER

SCRIPT = REPO / "scripts" / "make_figures.py"
# one BLAS/OpenMP thread per notebook: on a shared 2-core machine spinning threads double the run time
ENV = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}


def make_figures(*args, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env=ENV,
    )


def write_notebook(path: Path, params: str, *cells: str) -> Path:
    """A notebook whose first code cell (tagged ``parameters``) is ``params``, then ``cells``."""
    nb = nbformat.v4.new_notebook()
    first = nbformat.v4.new_code_cell(params)
    first.metadata["tags"] = ["parameters"]
    nb.cells = [
        nbformat.v4.new_markdown_cell(f"# {path.stem}"),
        first,
        *map(nbformat.v4.new_code_cell, cells),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


PARAMS = 'preset: str = "full"  # smoke | full\nexpected_prefix: str = ""  # sys.prefix the kernel must have'

OK = """\
import sys
# the kernel is this environment's python (make_figures injects our sys.prefix)
assert sys.prefix == expected_prefix, (sys.prefix, expected_prefix)
import matplotlib.pyplot as plt
from analysis.claims.ledger import Ledger
from analysis.notebook.plotting import save_figure, save_ledger
led = Ledger("01_ok", preset=preset)
led.identity("one", measured=1.0, expected=1.0, source="arithmetic", why="exact", figure="ok_line")
fig, ax = plt.subplots()
ax.plot([0, 1], [0, 1])
save_figure(fig, "ok_line", notebook="01_ok", params={"preset": preset}, ledger=led)
save_ledger(led, notebook="01_ok")"""

BAD_CLAIM = """\
from analysis.claims.ledger import Ledger
from analysis.notebook.plotting import save_ledger
led = Ledger("02_badclaim", preset=preset)
led.bound("condition", measured=3.0, bound=1.0, source="theorem")
led.predict("wrong", measured=2.0, expected=1.0, se=0.05, dof=4, alternative=2.0, hypothesis="doubling",
            source="arithmetic", why="95% t band over 5 seeds", scale="the paper's n is larger; knob: n")
led.paper("known_gap", measured=2.0, lo=0.9, hi=1.1, source="paper", diagnosed_by={"condition": "fail"},
          diagnosis="outside the theorem's regime")
led.identity("big_only", measured=2.0, expected=1.0, source="arithmetic", why="exact", requires_full=True)
save_ledger(led, notebook="02_badclaim")"""


# session scope, not module: under pytest-xdist a worker may run other modules' tests between the tests of one
# group, which would tear a module fixture down and run it again
@pytest.fixture(scope="session")
def throwaway(tmp_path_factory):
    """Three notebooks: one fine, one with a failing claim, one whose fourth cell raises."""
    root = tmp_path_factory.mktemp("pipeline")
    nbs = root / "notebooks"
    nbs.mkdir()
    # stamps depend on this stand-in for analysis/ and probes/, so edits there cannot disturb the test
    (root / "src").mkdir()
    (root / "src" / "lib.py").write_text("x = 1\n")
    write_notebook(nbs / "01_ok.ipynb", PARAMS, OK)
    write_notebook(nbs / "02_badclaim.ipynb", PARAMS, BAD_CLAIM)
    write_notebook(nbs / "03_raises.ipynb", PARAMS, "x = 1", "y = x / 0  # deliberate\nprint(y)")
    return root


def _args(root: Path, *extra) -> list:
    return [
        "--preset",
        "smoke",
        "--notebooks",
        root / "notebooks",
        "--out",
        root / "figs",
        "--build",
        root / "build",
        "--sources",
        root / "src",
        "-p",
        "expected_prefix",
        sys.prefix,
        *extra,
    ]


@pytest.fixture(scope="session")
def first_run(throwaway) -> subprocess.CompletedProcess:
    """The throwaway notebooks' first run (the two tests below read it in order, on one xdist worker)."""
    return make_figures(*_args(throwaway))


@pytest.mark.slow
@pytest.mark.xdist_group("throwaway_notebooks")
def test_failures_are_reported(throwaway, first_run):
    root, first = throwaway, first_run
    assert first.returncode == 1, first.stdout + first.stderr
    err = first.stderr
    # the failing cell is named by its index in the committed notebook and its first line
    assert "03_raises.ipynb cell 3 (`y = x / 0  # deliberate`): ZeroDivisionError: division by zero" in err
    # disagreeing claims are listed as findings (a diagnosed deviation too); undecided ones are reported on stdout
    assert "02_badclaim/wrong" in err and "02_badclaim/condition" in err and "findings" in err
    assert "02_badclaim/known_gap" in err and "big_only" not in err
    assert "[N/E ] identity: 02_badclaim/big_only" in first.stdout and "=> undecided" in first.stdout

    figs = root / "figs"
    for name in (
        "ok_line.png",
        "ok_line.svg",
        "ok_line.json",
        "01_ok.claims.json",
        "02_badclaim.claims.json",
        "claims.json",
        "README.md",
    ):
        assert (figs / name).is_file(), name
    claims = json.loads((figs / "claims.json").read_text())
    assert claims["failing"] == ["02_badclaim/condition", "02_badclaim/wrong"] and claims["broken_identities"] == []
    assert claims["summary"] == {
        "pass": 1,
        "fail": 2,
        "deviation": 1,
        "inconclusive": 0,
        "loose": 0,
        "unstable": 0,
        "not_evaluated": 1,
    }
    assert claims["by_role"]["prediction"]["fail"] == 1
    assert (
        claims["findings"] == {"regime": 0, "scale": 1, "refuted": 1, "bug": 0, "scope": 0} and claims["unstable"] == []
    )
    assert claims["by_verdict"]["software"]["agrees"] == 0  # the notebooks' claims are not declared: no row
    gallery = (figs / "README.md").read_text()
    assert (
        "**Claims: 1 agree, 3 disagree (3 with undeclared statements; 0.05 expected by chance among 1 predictions "
        "judged by a 95% band), 1 undecided (1 not evaluated), 0 out of scope.**"
    ) in gallery
    # disagreements first, grouped by what they contradict, each with its reason; then the undecided
    assert gallery.index("## Disagreements") < gallery.index("### Contradicting its statement (3)")
    assert gallery.index("### Contradicting its statement (3)") < gallery.index("## Undecided (1)")
    assert gallery.index("## Undecided (1)") < gallery.index("## 01_ok")
    assert "at this scale only: the paper's n is larger; knob: n" in gallery
    assert "not evaluated at the smoke preset: the full preset evaluates it" in gallery
    # failing predictions, bounds and paper claims are findings: collecting exits 0 unless --strict
    assert make_figures(*_args(root, "--collect-only")).returncode == 0
    assert make_figures(*_args(root, "--collect-only", "--strict")).returncode == 1
    assert "![ok_line](ok_line.png)" in gallery and "## 03_raises" in gallery
    # each notebook's claims, figure by figure, on its own page; the gallery links them and counts verdicts
    page = (figs / "claims" / "01_ok.md").read_text()
    assert "| verdict | tests | claim | statement | why this verdict | paper |" in page
    assert "[claims/01_ok.md](claims/01_ok.md)" in gallery and "| verdict |" not in gallery
    assert not (figs / "claims" / "03_raises.md").exists()  # no ledger, no page
    manifest = json.loads((root / "build" / "manifest.json").read_text())
    assert manifest["total_wall_s"] > 0
    assert {n: r["status"] for n, r in manifest["notebooks"].items()} == {
        "01_ok": "ran",
        "02_badclaim": "ran",
        "03_raises": "failed",
    }
    assert all(r["wall_s"] > 0 for r in manifest["notebooks"].values())
    assert (root / "build" / "notebooks" / "03_raises.ipynb").is_file()  # executed copy, with the traceback


@pytest.mark.slow
@pytest.mark.xdist_group("throwaway_notebooks")
def test_resume_skips_finished_and_reruns_the_failed(throwaway, first_run):
    root, figs = throwaway, throwaway / "figs"
    assert first_run.returncode == 1
    # resume: finished notebooks are skipped, the failed one runs again
    before = (figs / "ok_line.png").stat().st_mtime_ns
    second = make_figures(*_args(root))
    assert second.returncode == 1
    assert "01_ok ... up to date" in second.stdout and "02_badclaim ... up to date" in second.stdout
    assert "03_raises ... FAILED" in second.stdout
    assert (figs / "ok_line.png").stat().st_mtime_ns == before


def _rerun_after(root: Path, change: str) -> subprocess.CompletedProcess:
    """01_ok, up to date (the first run made it; every rerun leaves it so), rebuilt after ``change``: ``force`` (the
    --force flag), ``output`` (its figure edited) or ``sources`` (the library changed). One kernel per test: each
    of the three reruns is a test of its own (see test_resume_key for what else invalidates a stamp)."""
    figs = root / "figs"
    assert "01_ok ... up to date" in make_figures(*_args(root, "--only", "01_ok")).stdout
    if change == "output":
        (figs / "ok_line.svg").write_text("<svg/>")
    elif change == "sources":
        lib = root / "src" / "lib.py"
        lib.write_text(f"x = {int(lib.read_text().split('=')[1]) + 1}\n")
    return make_figures(*_args(root, "--only", "01_ok", *(["--force"] if change == "force" else [])))


@pytest.mark.slow
@pytest.mark.xdist_group("throwaway_notebooks")
@pytest.mark.parametrize("change", ["force", "output", "sources"])
def test_force_an_edited_output_or_changed_sources_rerun(throwaway, first_run, change):
    assert first_run.returncode == 1
    rerun = _rerun_after(throwaway, change)
    assert "01_ok ... ran" in rerun.stdout, rerun.stdout + rerun.stderr
    if change == "output":
        assert (throwaway / "figs" / "ok_line.svg").read_text() != "<svg/>"


# the notebook's time limit: its kernel (a bare one: the cell imports os and time) writes its pid within a few
# seconds of the start, so 10 s leave room on a loaded machine; the thorough tier allows 20 s
TIMEOUT_S = 10 if TIER.fast else 20


@pytest.mark.slow
def test_timeout_kills_the_notebook(tmp_path):
    nbs = tmp_path / "notebooks"
    nbs.mkdir()
    pid_file = tmp_path / "kernel.pid"
    write_notebook(
        nbs / "01_sleep.ipynb",
        'preset: str = "full"  # smoke | full',
        f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)",
    )
    t0 = time.perf_counter()
    res = make_figures(
        "--notebooks",
        nbs,
        "--out",
        tmp_path / "figs",
        "--build",
        tmp_path / "build",
        "--preset",
        "smoke",
        "--timeout",
        TIMEOUT_S,
    )
    assert time.perf_counter() - t0 < 90
    assert res.returncode == 1
    assert "01_sleep.ipynb" in res.stderr and f"timed out after {TIMEOUT_S} s" in res.stderr
    kernel, deadline = int(pid_file.read_text()), time.monotonic() + 30
    while Path(f"/proc/{kernel}").exists() and time.monotonic() < deadline:  # the kernel goes too
        time.sleep(0.2)
    assert not Path(f"/proc/{kernel}").exists() or "Z" in Path(f"/proc/{kernel}/stat").read_text().rsplit(")")[1][:3]


# The committed notebooks the figure-pipeline test renders: every one in the thorough tier; in the fast tier the
# smallest (the overview), since nbval executes every notebook at the smoke preset in the same `make test`.
SMALL_NOTEBOOKS = ("00_overview",)


@pytest.mark.slow
def test_smoke_preset_renders_every_committed_notebook(tmp_path):
    """The committed notebooks regenerate their figures, sidecars, ledgers, claims.json and gallery (the fast tier:
    the small ones, ``SMALL_NOTEBOOKS``)."""
    committed = REPO / "figures"
    snapshot = sorted((p.name, p.stat().st_mtime_ns) for p in committed.iterdir()) if committed.exists() else None
    out, build = tmp_path / "figs", tmp_path / "build"
    notebooks = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert {nb.stem for nb in notebooks} >= set(SMALL_NOTEBOOKS)
    only = []
    if not TIER.every_notebook:
        notebooks = [nb for nb in notebooks if nb.stem in SMALL_NOTEBOOKS]
        only = ["--only", *SMALL_NOTEBOOKS]
    res = make_figures("--preset", "smoke", "--out", out, "--build", build, *only)
    assert res.returncode == 0, res.stdout + res.stderr
    claims = json.loads((out / "claims.json").read_text())
    # a notebook of the user's own claims (analysis.claims.own) saves them into a folder of its own, not the gallery's
    ours = [nb for nb in notebooks if "analysis.claims.own" not in nb.read_text(encoding="utf-8")]
    assert set(claims["notebooks"]) == {nb.stem for nb in ours}
    assert claims["broken_identities"] == []  # failing predictions are findings; identities must hold
    gallery = (out / "README.md").read_text()
    sidecars = [json.loads(p.read_text()) for p in out.glob("*.json") if not p.name.endswith("claims.json")]
    sidecars = [s for s in sidecars if s.get("kind") == "figure"]
    for nb in notebooks:
        assert f"## {nb.stem}" in gallery
    for nb in ours:
        assert Ledger.load(out / f"{nb.stem}.claims.json").preset == "smoke"
    for side in sidecars:
        assert side["preset"] == "smoke"
        for entry in side["files"].values():
            assert (out / entry["path"]).is_file()
        assert f"![{side['figure']}]({side['figure']}.png)" in gallery
    assert {s["notebook"] for s in sidecars} <= {nb.stem for nb in notebooks}
    manifest = json.loads((build / "manifest.json").read_text())
    assert set(manifest["notebooks"]) == {nb.stem for nb in notebooks}
    after = sorted((p.name, p.stat().st_mtime_ns) for p in committed.iterdir()) if committed.exists() else None
    assert after == snapshot, "the committed figures/ folder must not change"


def test_prepare_only_injects_parameters(tmp_path):
    """The copies nbval executes carry the injected preset (and any -p) after the parameters cell."""
    res = make_figures("--preset", "smoke", "--only", "00_overview", "-p", "seed", "3", "--prepare-only", tmp_path)
    assert res.returncode == 0, res.stderr
    nb = nbformat.read(tmp_path / "00_overview.ipynb", as_version=4)
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    i = next(i for i, t in enumerate(tags) if "parameters" in t)
    assert "injected-parameters" in tags[i + 1]
    assert 'preset = "smoke"' in nb.cells[i + 1].source and "seed = 3" in nb.cells[i + 1].source
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


def test_unwritable_output_is_refused_before_any_notebook_runs(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    res = make_figures("--preset", "smoke", "--out", blocker / "figs", "--build", tmp_path / "build")
    assert res.returncode == 2 and "--out: cannot write to" in res.stderr and "is not a folder" in res.stderr
    assert not (tmp_path / "build").exists()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("finding", None, "a fail needs a finding"),
        ("finding", {"kind": "regime", "claims": []}, "regime finding"),
        ("stability", None, "stability must be a record"),
        ("stability", {"method": "resample", "value": "high"}, "stability value"),
        ("verdict", None, "has no verdict (got None; allowed agrees, disagrees, undecided, out_of_scope)"),
    ],
)
def test_malformed_ledger_fails_collection_in_one_line(field, value, message, tmp_path):
    """A saved ledger whose fail has no triage, or whose verdict has no stability, stops make figures (exit 2)
    with one line naming the file and the claim."""
    led = Ledger("01_real", preset="full")
    led.bound("too_big", measured=3.0, bound=1.0, source="theorem", why="exact")
    d = led.to_dict()
    d["claims"][0][field] = value
    nbs, out = tmp_path / "notebooks", tmp_path / "figs"
    nbs.mkdir()
    out.mkdir()
    write_notebook(nbs / "01_real.ipynb", PARAMS, "x = 1")
    (out / "01_real.claims.json").write_text(json.dumps(d))
    res = make_figures("--collect-only", "--notebooks", nbs, "--out", out, "--build", tmp_path / "build")
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "01_real.claims.json" in lines[0] and "claim 01_real/too_big" in lines[0]
    assert message in lines[0]


@pytest.mark.parametrize(
    "args",
    [
        ["--preset", "huge"],
        ["-p", "preset", "full"],
        ["-p", "1x", "2"],
        ["--timeout", "0"],
        ["--only", "99_nope"],
    ],
)
def test_bad_command_line(args, tmp_path):
    res = make_figures(*args, "--out", tmp_path / "figs", "--build", tmp_path / "build")
    assert res.returncode == 2, res.stdout + res.stderr
    assert not (tmp_path / "build").exists()


def test_resume_key(tmp_path):
    """The key changes with the notebook, the parameters, the preset, the sources and the output folder."""
    nb = write_notebook(tmp_path / "01_a.ipynb", PARAMS, "x = 1")

    def key(params=None, out=tmp_path / "figs", source="src", threads=1):
        return execution.resume_key(execution.stamp_inputs(nb, params or {"preset": "smoke"}, out, source, threads))

    k = key()
    assert key() == k
    assert key({"preset": "full"}) != k
    assert key({"preset": "smoke", "seed": 1}) != k
    assert key(source="other") != k
    assert key(out=tmp_path / "elsewhere") != k
    assert key(threads=2) != k
    write_notebook(nb, PARAMS, "x = 2")
    assert key() != k


def test_parameter_values_are_typed():
    parse = options.parse_value
    assert parse("3") == 3 and isinstance(parse("3"), int)
    assert parse("0.5") == 0.5
    assert parse("true") is True and parse("False") is False and parse("None") is None
    assert parse("[1, 2]") == [1, 2]
    assert parse("softmax") == "softmax"


def test_smoke_figures_never_land_in_the_committed_gallery(monkeypatch):
    monkeypatch.delenv("WORKBENCH_FIGURES", raising=False)
    assert options.parse_args(["--preset", "smoke"]).out == (REPO / "build" / "figures-smoke").resolve()
    assert options.parse_args(["--preset", "full"]).out == (REPO / "figures").resolve()
    assert options.parse_args(["--preset", "smoke", "--out", "x"]).out == Path("x").resolve()
    monkeypatch.setenv("WORKBENCH_FIGURES", str(REPO / "build" / "elsewhere"))
    assert options.parse_args(["--preset", "smoke"]).out == (REPO / "build" / "elsewhere").resolve()


def test_plan_threads_and_order(tmp_path, monkeypatch):
    """Kernels never oversubscribe the cores; the selection does not change the thread count; the longest
    notebook (by its last stamp, else by the recorded figures benchmark of the same preset) starts first,
    unknown ones before it."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(execution, "usable_cores", lambda: 4)
    nbs = [tmp_path / f"0{i}_n.ipynb" for i in range(1, 5)]
    stamps = tmp_path / "build" / "stamps"
    stamps.mkdir(parents=True)
    for nb, wall in zip(nbs[:3], (5.0, 50.0, 20.0), strict=True):
        (stamps / f"{nb.stem}.json").write_text(json.dumps({"wall_s": wall}))
    none = lambda name: {}  # noqa: E731  (no figures benchmark recorded)
    jobs, threads, order = execution.plan(nbs, None, tmp_path / "build", recorded=none)
    assert (jobs, threads) == (4, 1)
    assert [nb.stem for nb in order] == ["04_n", "02_n", "03_n", "01_n"]
    # without a stamp, the preset's time in the newest figures benchmark orders it; a stamp comes first
    bench = {"04_n": {"full": 30.0, "smoke": 100.0}, "01_n": {"full": 1000.0}}
    order = execution.plan(nbs, None, tmp_path / "build", "full", recorded=lambda name: bench.get(name, {}))[2]
    assert [nb.stem for nb in order] == ["02_n", "04_n", "03_n", "01_n"]
    order = execution.plan(nbs, None, tmp_path / "build", "smoke", recorded=lambda name: bench.get(name, {}))[2]
    assert [nb.stem for nb in order] == ["04_n", "02_n", "03_n", "01_n"]
    assert execution.plan(nbs[:1], None, tmp_path / "build")[:2] == (1, 1)  # --only: same threads
    assert execution.plan(nbs, 2, tmp_path / "build")[:2] == (2, 2)
    jobs, threads, order = execution.plan(nbs, 1, tmp_path / "build")
    assert (jobs, threads, order) == (1, 4, nbs)  # serial: notebook order
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert execution.plan(nbs, None, tmp_path / "build")[1] == 3
    assert execution.kernel_env(tmp_path, 1)["OMP_NUM_THREADS"] == "3"  # the caller's setting wins


SLEEPER = """\
import json, os, time
from analysis.notebook.plotting import save_ledger
from analysis.claims.ledger import Ledger
name = "{name}"
t0 = time.time()
time.sleep(4)
with open(os.path.join(log_dir, name + ".json"), "w") as f:
    json.dump({{"start": t0, "end": time.time(), "omp": os.environ.get("OMP_NUM_THREADS")}}, f)
led = Ledger(name, preset=preset)
led.identity("one", measured=1.0, expected=1.0, source="arithmetic", why="exact")
save_ledger(led, notebook=name)"""


@pytest.mark.slow
def test_jobs_run_notebooks_at_once(tmp_path):
    """--jobs 2: two notebooks execute concurrently (their run intervals overlap), each kernel with the planned
    thread count, and the manifest and claims come out in notebook order as in a serial run."""
    nbs, logs = tmp_path / "notebooks", tmp_path / "logs"
    nbs.mkdir()
    logs.mkdir()
    (tmp_path / "src").mkdir()
    params = PARAMS + '\nlog_dir: str = ""'
    for name in ("01_a", "02_b"):
        write_notebook(nbs / f"{name}.ipynb", params, SLEEPER.format(name=name))
    env_threads = {k: v for k, v in ENV.items() if k != "OMP_NUM_THREADS"}
    res = subprocess.run(
        [sys.executable, str(SCRIPT), "--preset", "smoke", "--jobs", "2", "--notebooks", nbs,
         "--out", tmp_path / "figs", "--build", tmp_path / "build", "--sources", tmp_path / "src",
         "-p", "log_dir", logs, "-p", "expected_prefix", sys.prefix],
        capture_output=True, text=True, timeout=600, cwd=REPO, env=env_threads,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    a, b = (json.loads((logs / f"{n}.json").read_text()) for n in ("01_a", "02_b"))
    assert a["start"] < b["end"] and b["start"] < a["end"], (a, b)  # the intervals overlap
    manifest = json.loads((tmp_path / "build" / "manifest.json").read_text())
    assert manifest["jobs"] == 2 and list(manifest["notebooks"]) == ["01_a", "02_b"]
    assert a["omp"] == b["omp"] == str(manifest["threads_per_kernel"])
    claims = json.loads((tmp_path / "figs" / "claims.json").read_text())
    assert list(claims["notebooks"]) == ["01_a", "02_b"]


def test_bad_jobs_is_refused(tmp_path):
    res = make_figures("--jobs", "0", "--out", tmp_path / "figs", "--build", tmp_path / "build")
    assert res.returncode == 2 and "--jobs must be an integer >= 1, got 0" in res.stderr
