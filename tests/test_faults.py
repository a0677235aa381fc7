"""Faults with real processes: SIGKILL in the middle of a cache write or of ``make_figures.py``, two
processes asking for the same entry at once, a read-only cache folder, a full disk, an entry edited
by hand.

The processes run ``faultkit``, a module written to a temporary folder (a probe, found through
``WORKBENCH_PROBES``, and a tiny training run); it prints ``computing ...`` on stderr whenever the
probe really computes. A process is killed at a known point: it replaces the cache's writer by one
that writes part of its temporary file, prints ``KILLME`` and sleeps; the test then sends SIGKILL.
Every check compares with an uninterrupted run computed here, never with typed-in numbers.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import probes
from analysis.core import io as aio
from analysis.core.paths import REPO
from analysis.probing.base import Result, cache_key, run_probe
from analysis.training.checkpoints import CheckpointCache

KIT = textwrap.dedent(
    '''
    """Running mean of seeded normal draws, and a tiny training run, for tests/test_faults.py."""

    from __future__ import annotations

    import json
    import os
    import sys
    import time
    from dataclasses import dataclass
    from pathlib import Path

    import numpy as np
    import xarray as xr

    from analysis.claims.ledger import Ledger
    from analysis.probing.base import ProbeConfig, Result, param

    NAME = "faultkit"
    VERSION = "1"
    REQUIRES = None
    DELAY = float(os.environ.get("FAULTKIT_DELAY", "0"))  # seconds per probe run / per training batch


    @dataclass(frozen=True)
    class Config(ProbeConfig):
        PRESETS = {"smoke": {"n": 50}, "full": {}}
        n: int = param(500, "number of draws", minimum=1)
        seed: int = param(0, "seed of the draws", minimum=0)


    def run(config: Config, model=None, progress: bool = True) -> Result:
        print(f"computing faultkit n={config.n}", file=sys.stderr, flush=True)
        time.sleep(DELAY)
        x = np.random.default_rng(config.seed).standard_normal(config.n)
        mean = np.cumsum(x) / np.arange(1, config.n + 1)
        data = xr.Dataset({"x": ("i", x), "running_mean": ("i", mean)}, coords={"i": np.arange(config.n)})
        return Result(probe=NAME, config=config, data=data, scalars={"mean": float(mean[-1])},
                      ledger=Ledger(NAME, preset=config.preset_name))


    class ShiftTask:
        """Target of token t is (t + 3) mod 8."""

        name, input_kind, vocab_size, seq_len, d_in, d_out = "shift", "tokens", 8, 8, 0, 0

        def config(self) -> dict:
            return {"name": self.name, "vocab_size": self.vocab_size, "seq_len": self.seq_len, "shift": 3}

        def sample(self, batch_size, generator, device="cpu", dtype=None):
            import torch

            time.sleep(DELAY)
            x = torch.randint(0, self.vocab_size, (batch_size, self.seq_len), generator=generator)
            return x, (x + 3) % self.vocab_size

        def loss(self, outputs, targets):
            import torch

            return torch.nn.functional.cross_entropy(outputs.flatten(0, 1), targets.flatten())


    def fit(seed: int = 5, cache="default"):
        """12 updates of a one-layer model; a partial state every 4 updates."""
        from analysis.zoo.model import ModelConfig
        from analysis.training.train import TrainConfig, train

        model = ModelConfig(vocab_size=8, d_model=16, n_layers=1, n_heads=2, d_mlp=32, seed=1)
        cfg = TrainConfig(steps=12, batch_size=8, lr=1e-2, warmup_steps=2, seed=seed, eval_every=4,
                          eval_batches=2, checkpoint_every=4)
        return train(model, ShiftTask(), cfg, cache=cache, progress=False)


    def _hang_here() -> None:
        print("KILLME", flush=True)
        time.sleep(600)


    def child(mode: str, *args: str) -> None:
        """What a started process does (``python -c "import faultkit; faultkit.child(...)"``)."""
        import probes

        if mode == "kill-checkpoint-write":  # hang inside the n-th safetensors write, half of it on disk
            import analysis.training.checkpoints as ck

            real, calls = ck.save_file, []

            def save_file(tensors, filename, metadata=None):
                real(tensors, filename, metadata=metadata)
                calls.append(filename)
                if len(calls) == int(args[0]):
                    os.truncate(filename, os.path.getsize(filename) // 2)
                    _hang_here()

            ck.save_file = save_file
            fit()
        elif mode == "kill-result-write":  # hang while result.json is half written in the entry's temp folder
            import analysis.probing.result as pb  # Result.save writes with atomic_write_json
            from analysis.core.io import to_jsonable

            real = pb.atomic_write_json

            def atomic_write_json(path, obj, **kwargs):
                if Path(path).name == "result.json":
                    text = json.dumps(to_jsonable(obj))
                    Path(path).write_text(text[: len(text) // 2])
                    _hang_here()
                return real(path, obj, **kwargs)

            pb.atomic_write_json = atomic_write_json
            probes.cached_run("faultkit", "smoke", progress=False)
        elif mode == "together":  # start when the file args[1] appears, with another process
            what, go = args[0], Path(args[1])
            print("READY", flush=True)
            while not go.exists():
                time.sleep(0.002)
            if what == "result":
                r = probes.cached_run("faultkit", "smoke", progress=False)
                print(json.dumps({"from_cache": r.from_cache, "mean": r.scalars["mean"]}))
            else:
                r = fit()
                print(json.dumps({"from_cache": r.from_cache, "key": r.key}))
        elif mode == "read-only":
            out = {"hit": probes.cached_run("faultkit", "smoke", progress=False).from_cache,
                   "train_hit": fit().from_cache}
            from analysis.probing import cli

            out["prune_rc"] = cli.main(["cache", "prune"])
            other = probes.get("faultkit").Config.preset("smoke", seed=1)
            for name, call in (("miss", lambda: probes.cached_run("faultkit", other)),
                               ("train_miss", lambda: fit(seed=6))):
                try:
                    call()
                    out[name] = None
                except OSError as err:
                    out[name] = [err.errno, str(err)]
            print(json.dumps(out))
        else:
            raise SystemExit(f"unknown mode {mode}")
    '''
)


@pytest.fixture(scope="module")
def kit_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("faultkit")
    (folder / "faultkit.py").write_text(KIT)
    return folder


@pytest.fixture
def kit(kit_dir, tmp_path, monkeypatch):
    """The kit imported here, with this test's own cache (the started processes get the same), training
    on one torch thread like them: the same float reductions, and no threads spinning on a busy machine."""
    monkeypatch.syspath_prepend(str(kit_dir))
    monkeypatch.setenv("WORKBENCH_PROBES", "faultkit")
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TQDM_DISABLE", "1")
    import faultkit

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield faultkit
    torch.set_num_threads(threads)


def child_env(kit_dir: Path, cache: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(kit_dir), str(REPO)]),
        "WORKBENCH_PROBES": "faultkit",
        "WORKBENCH_CACHE": str(cache),
        "TQDM_DISABLE": "1",
        "OMP_NUM_THREADS": "1",
        **extra,
    }


def start(kit_dir: Path, cache: Path, *args: str, prefix: tuple[str, ...] = (), **extra: str) -> subprocess.Popen:
    code = f"import faultkit; faultkit.child(*{list(args)!r})"
    return subprocess.Popen(
        [*prefix, sys.executable, "-c", code],
        env=child_env(kit_dir, cache, **extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_line(proc: subprocess.Popen, marker: str, timeout: float = 120) -> None:
    """Block until ``proc`` prints a line containing ``marker`` (fail if it exits or times out first)."""
    seen = threading.Event()

    def read() -> None:
        for line in iter(proc.stdout.readline, ""):
            if marker in line:
                seen.set()
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    if not seen.is_set():
        proc.kill()
        pytest.fail(f"no {marker!r} from the process (exit {proc.wait()}): {proc.stderr.read()}")


def sigkill(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL


def hidden(folder: Path) -> list[Path]:
    return [p for p in folder.rglob(".*")]


# ---------------------------------------------------------------------- SIGKILL during a cache write


@pytest.mark.parametrize("kill_at_write", [2, 3], ids=["partial-state", "final-entry"])
def test_sigkill_during_checkpoint_write(kit, kit_dir, tmp_path, kill_at_write):
    # writes: partial state after 4 updates, after 8, then the finished entry
    cache_root = tmp_path / "cache"
    proc = start(kit_dir, cache_root, "kill-checkpoint-write", str(kill_at_write))
    wait_for_line(proc, "KILLME")
    sigkill(proc)

    cache = CheckpointCache()
    reference = kit.fit(cache=None)  # uninterrupted, no cache
    key = reference.key
    leftovers = [p for p in hidden(cache_root / "checkpoints") if p.name.endswith(".tmp")]
    assert leftovers, "the process was not killed inside a write"
    assert cache.load(key) is None and cache.list_entries() == []  # a miss, not the half-written weights
    partial = cache.load_partial(key)  # the last complete partial state, never the half-written one
    assert partial is not None and partial[1]["step"] == 4 * (kill_at_write - 1)

    rerun = kit.fit()
    assert not rerun.from_cache and rerun.resumed_from == partial[1]["step"]
    for name, value in reference.model.state_dict().items():
        assert torch.equal(value, rerun.model.state_dict()[name]), name
    assert reference.history.keys() == rerun.history.keys()
    for name in reference.history:
        np.testing.assert_array_equal(reference.history[name], rerun.history[name])
    assert cache.load(key) is not None and kit.fit().from_cache  # the entry verifies and is reused


def test_sigkill_during_result_write(kit, kit_dir, tmp_path, capfd):
    proc = start(kit_dir, tmp_path / "cache", "kill-result-write")
    wait_for_line(proc, "KILLME")
    sigkill(proc)

    config = kit.Config.preset("smoke")
    folder = tmp_path / "cache" / "results" / "faultkit" / cache_key("faultkit", config)
    [temp] = [p for p in folder.parent.iterdir() if p.name.endswith(".tmp")]
    assert (temp / "result.json").is_file() and not folder.exists()  # half written, under a temp name
    capfd.readouterr()
    rerun = probes.cached_run("faultkit", config, progress=False)
    assert not rerun.from_cache and capfd.readouterr().err.count("computing faultkit") == 1
    assert rerun.identical(run_probe("faultkit", config))  # the same numbers as an uninterrupted run
    assert probes.cached_run("faultkit", config).from_cache
    assert Result.load(folder).identical(rerun)


# ---------------------------------------------------------------------- two processes at once


@pytest.mark.parametrize("what", ["result", "checkpoint"])
def test_two_processes_compute_the_same_entry_once(kit, kit_dir, tmp_path, what):
    cache_root, go = tmp_path / "cache", tmp_path / "go"
    # the computation lasts long enough (about 1 s) that, unlocked, both processes would miss and compute
    delay = "1.0" if what == "result" else "0.06"
    procs = [start(kit_dir, cache_root, "together", what, str(go), FAULTKIT_DELAY=delay) for _ in range(2)]
    for p in procs:
        wait_for_line(p, "READY")
    go.touch()
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    reports = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    assert sorted(r["from_cache"] for r in reports) == [False, True]  # one computed, the other reused it
    if what == "result":
        assert sum(err.count("computing faultkit") for _, err in outs) == 1
        config = kit.Config.preset("smoke")
        stored = Result.load(tmp_path / "cache" / "results" / "faultkit" / cache_key("faultkit", config))
        assert stored.identical(run_probe("faultkit", config))
        assert reports[0]["mean"] == reports[1]["mean"] == stored.scalars["mean"]
    else:
        assert reports[0]["key"] == reports[1]["key"]
        assert CheckpointCache().load(reports[0]["key"]) is not None  # the entry verifies
    assert hidden(cache_root) == []  # no temporary folder, no lock file left


# ---------------------------------------------------------------------- read-only folder, full disk


def _read_only_prefix(cache_root: Path) -> tuple[str, ...]:
    """How to start a process that sees ``cache_root`` read-only. Permission bits bind everyone but
    root; for root, a private mount namespace with a read-only bind mount of the folder."""
    if os.geteuid() != 0:
        for dirpath, _, filenames in os.walk(cache_root):
            for name in filenames:
                os.chmod(Path(dirpath) / name, 0o444)
            os.chmod(dirpath, 0o555)
        return ()
    prefix = ("unshare", "-m", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"', str(cache_root))
    works = (
        shutil.which("unshare") is not None
        and subprocess.run(
            [*prefix, "sh", "-c", f'! touch "{cache_root}/x" 2>/dev/null'], capture_output=True
        ).returncode
        == 0
    )
    if not works:
        pytest.skip("running as root without a way to make a folder read-only (unshare -m, mount --bind)")
    return prefix


def test_read_only_cache_serves_hits_and_names_the_path_on_a_miss(kit, kit_dir, tmp_path):
    cache_root = tmp_path / "cache"
    probes.cached_run("faultkit", "smoke", progress=False)
    kit.fit()
    before = sorted(p.relative_to(cache_root) for p in cache_root.rglob("*"))
    try:
        proc = start(kit_dir, cache_root, "read-only", prefix=_read_only_prefix(cache_root))
        out, err = proc.communicate(timeout=180)
    finally:
        for dirpath, _, _ in os.walk(cache_root):
            os.chmod(dirpath, 0o755)
    assert proc.returncode == 0, err
    report = json.loads(out.strip().splitlines()[-1])
    assert report["hit"] is True and report["train_hit"] is True  # reading needs no write access
    for name in ("miss", "train_miss"):
        code, message = report[name]
        assert code in (errno.EACCES, errno.EROFS, errno.EPERM), message
        assert str(cache_root) in message and ".lock" in message, message  # names the path
    assert "computing faultkit" not in err  # refused before computing: nothing lost
    assert report["prune_rc"] == 1  # prune: one line naming the path, exit 1, nothing deleted
    [line] = [ln for ln in err.splitlines() if ln.startswith("probes: error: cache prune: ")]
    assert str(cache_root) in line
    assert sorted(p.relative_to(cache_root) for p in cache_root.rglob("*")) == before


def test_full_disk_during_result_write(kit, tmp_path, monkeypatch):
    import analysis.probing.result as pb  # Result.save writes with atomic_write_json

    def full_disk(path, *args, **kwargs):  # a few bytes into the temporary file, then no space
        def partial(tmp):
            Path(tmp).write_bytes(b"\x00partial")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        return aio.atomic_write(path, partial)

    cache_root, real = tmp_path / "cache", pb.atomic_write_json
    monkeypatch.setattr(pb, "atomic_write_json", full_disk)
    folder = cache_root / "results" / "faultkit" / cache_key("faultkit", kit.Config.preset("smoke"))
    with pytest.raises(OSError, match="disk is full") as info:
        probes.cached_run("faultkit", "smoke", progress=False)
    assert info.value.errno == errno.ENOSPC and str(folder) in str(info.value)
    assert [p for p in cache_root.rglob("*") if not p.is_dir()] == [] and hidden(cache_root) == []
    monkeypatch.setattr(pb, "atomic_write_json", real)
    assert not probes.cached_run("faultkit", "smoke", progress=False).from_cache  # a miss, then it works


def test_full_disk_during_checkpoint_write(kit, tmp_path, monkeypatch):
    import analysis.training.checkpoints as ck

    cache_root = tmp_path / "cache"

    def save_file(tensors, filename, metadata=None):
        Path(filename).write_bytes(b"\x00partial")  # part of the weights, then no space
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(ck, "save_file", save_file)
    with pytest.raises(OSError, match="disk is full") as info:
        kit.fit()
    assert info.value.errno == errno.ENOSPC and str(cache_root / "checkpoints") in str(info.value)
    assert [p for p in cache_root.rglob("*") if not p.is_dir()] == [] and hidden(cache_root) == []


# ---------------------------------------------------------------------- an entry edited by hand


@pytest.mark.parametrize("edit", ["scalar", "scalar_and_manifest"])
def test_hand_edited_result_entry_is_detected_and_rebuilt(kit, tmp_path, edit):
    config = kit.Config.preset("smoke")
    first = probes.cached_run("faultkit", config, progress=False)
    folder = tmp_path / "cache" / "results" / "faultkit" / cache_key("faultkit", config)
    record = json.loads((folder / "result.json").read_text())
    record["scalars"]["mean"] += 1.0  # someone "corrects" a number
    (folder / "result.json").write_text(json.dumps(record, indent=2))
    if edit == "scalar_and_manifest":  # ...and takes the file out of the manifest so that it is not checked
        manifest = json.loads((folder / "manifest.json").read_text())
        del manifest["files"]["result.json"]
        (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.warns(RuntimeWarning, match="recomputing corrupt cache entry"):
        again = probes.cached_run("faultkit", config, progress=False)
    assert not again.from_cache and again.identical(first)
    assert again.scalars["mean"] == first.scalars["mean"] != record["scalars"]["mean"]
    assert probes.cached_run("faultkit", config).from_cache


# ---------------------------------------------------------------------- SIGKILL of make_figures.py

NOTEBOOK_PARAMS = 'preset: str = "full"  # smoke | full'
NOTEBOOK_CELL = """\
import matplotlib.pyplot as plt
from analysis.claims.ledger import Ledger
from analysis.notebook.plotting import save_figure, save_ledger
led = Ledger("01_tiny", preset=preset)
led.identity("one", measured=1.0, expected=1.0, source="arithmetic", why="exact", figure="tiny_a")
for name in ("tiny_a", "tiny_b"):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1 if name == "tiny_a" else 2])
    save_figure(fig, name, notebook="01_tiny", params={"preset": preset}, ledger=led)
save_ledger(led, notebook="01_tiny")"""

# make_figures whose third promoted file hangs half-written in its temporary file (the pipeline is analysis.figures,
# whose promotion writes through execution.atomic_write_bytes)
KILLABLE_MAKE_FIGURES = """\
import os, sys, time
from analysis.figures import cli, execution as mf
from analysis.core.io import atomic_write
real, calls = mf.atomic_write_bytes, []
def atomic_write_bytes(path, data):
    calls.append(path)
    if len(calls) < 3:
        return real(path, data)
    def half(tmp):
        with open(tmp, "wb") as f:
            f.write(data[: len(data) // 2])
        print("KILLME", flush=True)
        time.sleep(600)
    return atomic_write(path, half)
mf.atomic_write_bytes = atomic_write_bytes
sys.exit(cli.main(sys.argv[1:]))
"""


def tiny_notebook(nbs: Path, out: Path, build: Path, cells: list[str]) -> tuple[Path, list[str]]:
    """Write notebook ``01_tiny`` (a parameters cell, then ``cells``) into ``nbs``; return make_figures.py and
    the arguments that run only it, smoke preset, into ``out`` and ``build``."""
    import nbformat

    nbs.mkdir()
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell(NOTEBOOK_PARAMS)
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, *(nbformat.v4.new_code_cell(c) for c in cells)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, nbs / "01_tiny.ipynb")
    args = ["--preset", "smoke", "--only", "01_tiny", "--notebooks", str(nbs), "--out", str(out)]
    return REPO / "scripts" / "make_figures.py", [*args, "--build", str(build), "--sources", str(nbs)]


@pytest.mark.slow
def test_sigkill_of_make_figures_leaves_no_half_written_figure(tmp_path):

    nbs, out, build = tmp_path / "notebooks", tmp_path / "figs", tmp_path / "build"
    script, args = tiny_notebook(nbs, out, build, [NOTEBOOK_CELL])
    env = {**os.environ, "WORKBENCH_CACHE": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}

    proc = subprocess.Popen(
        [sys.executable, "-c", KILLABLE_MAKE_FIGURES, *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_line(proc, "KILLME", timeout=600)
    sigkill(proc)
    staging = build / "staging" / "01_tiny"
    visible = [p for p in out.iterdir() if not p.name.startswith(".")]
    assert len(visible) == 2 and [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
    for p in visible:  # whatever is under its own name is complete: the notebook's file, byte for byte
        assert p.read_bytes() == (staging / p.name).read_bytes(), p.name

    rerun = subprocess.run(
        [sys.executable, str(script), *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert rerun.returncode == 0, rerun.stderr
    assert hidden(out) == []  # the killed run's temporary file is gone
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(
        [
            "01_tiny.claims.json",
            "README.md",
            "claims",
            "claims.json",
            "papers.json",
            *(f"tiny_{x}.{ext}" for x in "ab" for ext in ("json", "png", "svg")),
        ]
    )
    for x in "ab":
        sidecar = json.loads((out / f"tiny_{x}.json").read_text())
        for entry in sidecar["files"].values():
            assert aio.sha256_file(out / entry["path"]) == entry["sha256"]


# a notebook whose first run stops in a cell (after noting its kernel's pid) until it is killed
SLEEPY_CELL = """\
import os, time
flag = os.path.join(os.environ["FAULT_DIR"], "kernel.pid")
if not os.path.exists(flag):
    with open(flag + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.replace(flag + ".tmp", flag)
    time.sleep(600)
"""


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


@pytest.mark.slow
def test_sigkill_of_make_figures_while_a_notebook_runs(tmp_path):
    """SIGKILL of make_figures.py while papermill executes a notebook: papermill and its kernel go with it
    (no orphan keeps computing or writing into the staging folder), the previous figures stay as they
    were, and the rerun executes the notebook again and promotes it."""

    nbs, out, build = tmp_path / "notebooks", tmp_path / "figs", tmp_path / "build"
    script, args = tiny_notebook(nbs, out, build, [SLEEPY_CELL, NOTEBOOK_CELL])
    out.mkdir()
    (out / "tiny_a.json").write_text('{"kind": "figure", "notebook": "01_tiny", "files": {}}')  # an earlier run's
    env = {**os.environ, "WORKBENCH_CACHE": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1", "FAULT_DIR": str(tmp_path)}

    proc = subprocess.Popen(
        [sys.executable, str(script), *args], cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    flag, deadline = tmp_path / "kernel.pid", time.monotonic() + 600
    while not flag.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the notebook never reached its sleep"
        time.sleep(0.2)
    kernel = int(flag.read_text())
    assert _alive(kernel)
    sigkill(proc)
    deadline = time.monotonic() + 60
    while _alive(kernel) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(kernel), "the notebook's kernel outlived make_figures"
    assert sorted(p.name for p in out.iterdir()) == ["tiny_a.json"]  # nothing promoted, nothing removed

    rerun = subprocess.run(
        [sys.executable, str(script), *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert rerun.returncode == 0, rerun.stderr
    assert "01_tiny ... ran" in rerun.stdout
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(
        [
            "01_tiny.claims.json",
            "README.md",
            "claims",
            "claims.json",
            "papers.json",
            *(f"tiny_{x}.{ext}" for x in "ab" for ext in ("json", "png", "svg")),
        ]
    )
