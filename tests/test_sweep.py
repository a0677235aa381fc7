"""``analysis.probing.sweep`` and ``python -m probes sweep``: grids over config fields, serially and on Dask.

Everything here is real: a real LocalCluster of worker processes, a real ``dask scheduler`` and ``dask
worker`` on 127.0.0.1, a real SIGKILL of the command mid-sweep. The probe of most tests lives in a
file written to a temporary folder and is found through ``WORKBENCH_PROBES`` (as in ``test_cli.py``),
so subprocesses and worker processes import it too; it can sleep, fail on purpose, and append one line
per execution to the file named by ``SWEEPFAKE_LOG`` (how the resume test counts executions). The
bit-for-bit comparison of a cluster sweep with a serial one uses the real ``prompt_forgetting`` probe.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import probes
from analysis.core.paths import REPO
from analysis.probing import cli
from analysis.probing.sweep import local_client, parse_grid_arg, parse_seeds, write_netcdf

from tier import TIER

PROBE_SOURCE = textwrap.dedent(
    '''
    """Random draws through a random linear map, their running sum and two claims (a sweep test probe)."""

    from __future__ import annotations

    import os
    import time
    from dataclasses import dataclass

    import numpy as np
    import torch
    import xarray as xr

    from analysis.claims.ledger import Ledger
    from analysis.probing.base import ProbeConfig, Result, param

    NAME = "sweepfake"
    VERSION = "1"
    REQUIRES = None


    @dataclass(frozen=True)
    class Config(ProbeConfig):
        PRESETS = {"smoke": {"n": 4}, "full": {}}

        n: int = param(6, "number of draws", minimum=1)
        scale: float = param(1.0, "multiplies every draw", minimum=0.0)
        dims: tuple[int, ...] = param(
            (1, 2), "list-valued field; its items make an array without coordinate", minimum=1
        )
        extra_claim: bool = param(False, "also make the claim 'extra'")
        fail_at: int | None = param(None, "raise when n equals this", minimum=1)
        sleep: float = param(0.0, "seconds to sleep first", minimum=0.0)
        seed: int = param(0, "seed of the draws", minimum=0)

        def validate(self) -> None:
            super().validate()
            if len(self.dims) > self.n:
                raise ValueError(f"dims (length {len(self.dims)}) must not be longer than n ({self.n})")


    def run(config: Config, model=None, progress: bool = True) -> Result:
        log = os.environ.get("SWEEPFAKE_LOG")
        if log:
            with open(log, "a") as f:
                f.write(f"start n={config.n} seed={config.seed} pid={os.getpid()}\\n")
        time.sleep(config.sleep)
        if config.fail_at == config.n:
            raise RuntimeError(f"planted failure at n={config.n}\\n(a second line)")
        g = torch.Generator().manual_seed(config.seed)
        a = torch.randn(config.n, 16, generator=g, dtype=torch.float64)
        w = torch.randn(16, 16, generator=g, dtype=torch.float64)
        x = (a @ w).sum(1).numpy() * config.scale / 16
        partial = np.cumsum(x)
        shape_varies = ("k",) if config.n % 2 else ("k", "two")
        data = xr.Dataset(
            {
                "x": ("k", x),
                "partial": ("k", partial),
                "positive": ("k", x > 0),
                "count": ("k", np.arange(config.n)),
                "dims_echo": ("slot", np.asarray(config.dims, dtype=np.int64)),
                "shape_varies": (shape_varies, np.zeros([config.n] + ([2] if len(shape_varies) == 2 else []))),
                "per_seed": ("seed", np.asarray([config.seed * 10.0])),
            },
            coords={"k": np.arange(1, config.n + 1), "seed": [config.seed]},
        )
        led = Ledger(NAME, preset=config.preset_name)
        led.identity("sum_is_last_partial", measured=float(x.sum()), expected=float(partial[-1]),
                     atol=1e-12 * (1 + abs(float(partial[-1]))), source="summation", why="a few roundings")
        se = float(config.scale / np.sqrt(config.n))
        led.predict("mean_near_zero", measured=float(x.mean()), expected=0.0, se=se, dof=float("inf"),
                    within_run="no model: the draws' own sampling error", alternative=100.0,
                    hypothesis="draws centred at 100", source="symmetry", why="95% band of the draws' mean")
        if config.extra_claim:
            led.identity("extra", measured=1.0, expected=1.0, source="none", why="exact")
        scalars = {"total": float(partial[-1]), "n": config.n, "label": f"n{config.n}", "big": bool(partial[-1] > 0),
                   "threads": torch.get_num_threads()}
        return Result(probe=NAME, config=config, data=data, scalars=scalars, ledger=led)
    '''
)

NOSEED_SOURCE = textwrap.dedent(
    '''
    """A probe without a seed field (for --seeds errors)."""

    from dataclasses import dataclass

    from analysis.probing.base import ProbeConfig, Result, param

    NAME = "sweepnoseed"
    VERSION = "1"
    REQUIRES = None


    @dataclass(frozen=True)
    class Config(ProbeConfig):
        PRESETS = {"smoke": {}, "full": {}}
        n: int = param(3, "a number", minimum=1)


    def run(config, model=None, progress=True):
        return Result(probe=NAME, config=config, scalars={"n": config.n})
    '''
)


@pytest.fixture(scope="module")
def probe_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sweep_probe")
    (folder / "sweepfake.py").write_text(PROBE_SOURCE)
    (folder / "sweepnoseed.py").write_text(NOSEED_SOURCE)
    return folder


@pytest.fixture
def fake(probe_dir, monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(probe_dir))
    monkeypatch.setenv("WORKBENCH_PROBES", "sweepfake,sweepnoseed")
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TQDM_DISABLE", "1")
    monkeypatch.delenv("SWEEPFAKE_LOG", raising=False)
    return probes.get("sweepfake")


def sub_env(probe_dir, tmp_path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(probe_dir), str(REPO)]),
        "WORKBENCH_PROBES": "sweepfake,sweepnoseed",
        "WORKBENCH_CACHE": str(tmp_path / "cache"),
        "TQDM_DISABLE": "1",
        **extra,
    }


def entries(results: Path, probe: str = "sweepfake") -> list[Path]:
    """The finished entries of ``probe`` in a result cache folder (``cache_root``, or ``$WORKBENCH_CACHE/results``)."""
    folder = results / probe
    return sorted(p for p in folder.iterdir() if not p.name.startswith(".")) if folder.exists() else []


def log_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


# ---------------------------------------------------------------------- parsing


def test_parse_seeds():
    assert parse_seeds("0-4") == (0, 1, 2, 3, 4)
    assert parse_seeds("0,2,5") == (0, 2, 5)
    assert parse_seeds(" 0-2, 7 ") == (0, 1, 2, 7)
    for bad in ("", "3-1", "x", "1,1", "-1", "0-2,2", "1.5"):
        with pytest.raises(ValueError, match="--seeds"):
            parse_seeds(bad)


def test_parse_grid_values_with_the_fields_own_parser(fake):
    C = fake.Config
    assert parse_grid_arg(C, "n=1,2,3") == ("n", [1, 2, 3])
    assert parse_grid_arg(C, "scale=1,2.5e-1") == ("scale", [1.0, 0.25])
    assert parse_grid_arg(C, "dims=1,2;4") == ("dims", [(1, 2), (4,)])  # a list per grid value
    assert parse_grid_arg(C, "fail-at=none,3") == ("fail_at", [None, 3])
    assert parse_grid_arg(C, "extra_claim=TRUE,false") == ("extra_claim", [True, False])
    with pytest.raises(ValueError, match="--grid n: --n must be an integer"):
        parse_grid_arg(C, "n=1,two")


# ---------------------------------------------------------------------- the Dataset


def test_dataset_layout(fake, tmp_path):
    grid = {"n": [3, 4], "dims": [(1,), (1, 2, 3)], "extra_claim": [False, True]}
    ds = probes.sweep("sweepfake", grid, preset="smoke", seeds=[0, 2], cache_root=tmp_path / "c", progress=False)
    gdims = ("n", "dims", "extra_claim", "seed")
    assert ds["total"].dims == gdims
    assert ds["n"].values.tolist() == [3, 4] and ds["seed"].values.tolist() == [0, 2]
    assert ds["dims"].values.tolist() == ["1", "1,2,3"]  # list-valued field: its values as strings
    assert ds["extra_claim"].dtype == bool
    # a scalar equals the point's own run
    one = probes.run_probe(fake, fake.Config.preset("smoke", n=4, dims=(1, 2, 3), extra_claim=True, seed=2))
    assert ds["total"].sel(n=4, dims="1,2,3", extra_claim=True, seed=2).item() == one.scalars["total"]
    assert ds["label"].dtype.kind == "U" and ds["label"].sel(n=3).values.ravel().tolist() == ["n3"] * 8
    assert ds["big"].dtype == np.float64 and ds["threads"].values.ravel().tolist() == [1.0] * 16
    # a scalar named like a dimension is renamed
    assert "scalar__n" in ds and ds["scalar__n"].sel(n=4).values.ravel().tolist() == [4.0] * 8
    assert json.loads(ds.attrs["renamed"]) == {"dim seed": "point__seed", "scalar n": "scalar__n"}
    # arrays: grid dims + their own, coordinates joined over the points (NaN where a point has none)
    assert ds["data__x"].dims == gdims + ("k",) and ds["k"].values.tolist() == [1, 2, 3, 4]
    assert np.isnan(ds["data__x"].sel(n=3, k=4)).all() and not np.isnan(ds["data__x"].sel(n=4)).any()
    np.testing.assert_array_equal(ds["data__x"].sel(n=4, dims="1", extra_claim=True, seed=2), one.data["x"].values)
    assert ds["data__count"].dtype == np.float64  # int, padded -> float64 with NaN
    assert ds["data__positive"].dtype == np.float64
    # a dim without coordinate whose length differs: padded at the end, positions as coordinate
    assert ds["slot"].values.tolist() == [0, 1, 2]
    echo = ds["data__dims_echo"].sel(n=3, extra_claim=False, seed=0)
    assert echo.sel(dims="1").values.tolist()[0] == 1 and np.isnan(echo.sel(dims="1").values[1:]).all()
    assert echo.sel(dims="1,2,3").values.tolist() == [1, 2, 3]
    # dims differing between points: skipped; an array dim named like a grid dim: renamed
    assert "data__shape_varies" not in ds and "shape_varies" in json.loads(ds.attrs["skipped_arrays"])
    assert ds["data__per_seed"].dims == gdims + ("point__seed",)
    # claims: a status per point; "" where the point made no such claim
    assert set(ds["claim__sum_is_last_partial"].values.ravel()) == {"pass"}
    assert set(ds["claim__extra"].sel(extra_claim=False).values.ravel()) == {""}
    assert set(ds["claim__extra"].sel(extra_claim=True).values.ravel()) == {"pass"}
    # per point: failed, error, config, cache_key; attrs: probe, grid, base config, provenance
    assert not ds["failed"].any() and set(ds["error"].values.ravel()) == {""}
    cfg = json.loads(ds["config"].sel(n=3, dims="1,2,3", extra_claim=False, seed=2).item())
    assert fake.Config.from_dict(cfg) == fake.Config.preset("smoke", n=3, dims=(1, 2, 3), seed=2)
    assert ds["cache_key"].sel(n=3, dims="1", extra_claim=False, seed=0).item() == probes.cache_key(
        fake, fake.Config.preset("smoke", n=3, dims=(1,), seed=0)
    )
    assert ds.attrs["probe"] == "sweepfake" and ds.attrs["probe_version"] == "1" and ds.attrs["preset"] == "smoke"
    assert json.loads(ds.attrs["grid"]) == {
        "n": [3, 4],
        "dims": [[1], [1, 2, 3]],
        "extra_claim": [False, True],
        "seed": [0, 2],
    }
    assert json.loads(ds.attrs["base_config"])["n"] == 4 and ds.attrs["n_points"] == 16
    assert ds.attrs["commit"] and "distributed" in json.loads(ds.attrs["versions"])
    # netCDF round trip, and the Results back from the cache
    back = xr.load_dataset(write_netcdf(ds, tmp_path / "out" / "s.nc"))
    assert back.identical(ds)
    results = probes.sweep_results(ds, cache_root=tmp_path / "c")
    assert len(results) == 16 and all(r.from_cache for r in results)
    assert results[0].config == fake.Config.preset("smoke", n=3, dims=(1,), seed=0)


def test_seed_dim_without_seeds_and_grid_over_seed(fake, tmp_path):
    ds = probes.sweep("sweepfake", {"n": [2, 3]}, preset="smoke", base={"seed": 5}, cache_root=tmp_path, progress=False)
    assert ds["total"].dims == ("n", "seed") and ds["seed"].values.tolist() == [5]
    ds = probes.sweep("sweepfake", {"seed": [1, 0], "n": [2]}, preset="smoke", cache_root=tmp_path, progress=False)
    assert ds["total"].dims == ("seed", "n") and ds["seed"].values.tolist() == [1, 0]


def test_failing_point_is_recorded_and_the_others_complete(fake, tmp_path):
    ds = probes.sweep(
        "sweepfake", {"n": [2, 3, 5]}, preset="smoke", base={"fail_at": 3}, cache_root=tmp_path, progress=False
    )
    assert ds["failed"].values.ravel().tolist() == [False, True, False]
    err = ds["error"].sel(n=3).item()
    assert err == "RuntimeError: planted failure at n=3 (a second line)"
    assert np.isnan(ds["total"].sel(n=3).item()) and not np.isnan(ds["total"].sel(n=[2, 5])).any()
    assert ds["claim__mean_near_zero"].sel(n=3).item() == ""
    assert json.loads(ds.attrs["failed"]) == [{"point": {"n": 3, "seed": 0}, "error": err}]
    assert ds.attrs["n_failed"] == 1
    assert len(entries(tmp_path)) == 2  # none for n=3


def test_failing_point_on_the_command_line_exits_1_naming_it(fake, tmp_path, capsys):
    out = tmp_path / "o.nc"
    rc = cli.main(
        [
            "sweep",
            "sweepfake",
            "--preset",
            "smoke",
            "--grid",
            "n=2,3,5",
            "--fail-at",
            "3",
            "--out",
            str(out),
            "--workers",
            "0",
        ]
    )
    captured = capsys.readouterr()
    assert rc == 1
    assert "1 of 3 point(s) failed" in captured.err
    assert "n=3, seed=0: RuntimeError: planted failure at n=3 (a second line)" in captured.err
    assert "2 computed, 0 from cache, 1 failed" in captured.out
    back = xr.load_dataset(out)
    assert back["failed"].values.ravel().tolist() == [False, True, False]


# ---------------------------------------------------------------------- schedulers


def test_local_cluster_equals_serial_bit_for_bit(fake, tmp_path, monkeypatch):
    """Real probe (torch), 2 worker processes: the Dataset is identical to the serial in-process one."""
    log = tmp_path / "log.txt"
    monkeypatch.setenv("SWEEPFAKE_LOG", str(log))
    grid = {"n_layers": [1, 2]}
    serial = probes.sweep(
        "prompt_forgetting", grid, preset="smoke", seeds=[0, 1], cache_root=tmp_path / "c1", progress=False
    )
    fake_serial = probes.sweep(
        "sweepfake", {"n": [3, 4]}, preset="smoke", seeds=[0, 1], cache_root=tmp_path / "f1", progress=False
    )
    log.unlink()
    with local_client(2) as client:
        par = probes.sweep(
            "prompt_forgetting",
            grid,
            preset="smoke",
            seeds=[0, 1],
            cache_root=tmp_path / "c2",
            client=client,
            progress=False,
        )
        fake_par = probes.sweep(
            "sweepfake",
            {"n": [3, 4]},
            preset="smoke",
            seeds=[0, 1],
            cache_root=tmp_path / "f2",
            client=client,
            progress=False,
        )
    assert par.identical(serial)
    assert fake_par.identical(fake_serial)
    assert par["alpha"].dims == ("n_layers", "seed") and par["data__distance"].dims[:2] == ("n_layers", "seed")
    assert not par["failed"].any() and len(entries(tmp_path / "c2", "prompt_forgetting")) == 4
    pids = {line.split("pid=")[1] for line in log_lines(log)}
    assert len(log_lines(log)) == 4 and str(os.getpid()) not in pids  # the workers ran them
    assert fake_par["threads"].values.ravel().tolist() == [1.0] * 4  # one torch thread per worker


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(port: int, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"dask scheduler exited early ({proc.returncode})")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


def _stop(proc: subprocess.Popen | None) -> None:
    """End a process group this test started (its own session): SIGTERM, then SIGKILL."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=15)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=15)


def test_remote_scheduler_through_the_command_line(fake, probe_dir, tmp_path):
    """`dask scheduler` + one `dask worker` on 127.0.0.1; `python -m probes sweep --scheduler tcp://...`."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    log = tmp_path / "log.txt"
    env = sub_env(probe_dir, tmp_path, SWEEPFAKE_LOG=str(log))
    scheduler = worker = None
    try:
        scheduler = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--no-dashboard",
            ],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        _wait_listening(port, scheduler)
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_worker",
                address,
                "--nworkers",
                "1",
                "--nthreads",
                "1",
                "--no-dashboard",
                "--death-timeout",
                "60",
            ],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        out = tmp_path / "remote.nc"
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "probes",
                "sweep",
                "sweepfake",
                "--preset",
                "smoke",
                "--grid",
                "n=2,3",
                "--seeds",
                "0-1",
                "--scheduler",
                address,
                "--out",
                str(out),
            ],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        stdout, stderr = proc.communicate(timeout=180)
    finally:
        _stop(worker)
        _stop(scheduler)
    assert proc.returncode == 0, stderr
    assert f"on {address}: 4 points" in stdout and "4 computed" in stdout
    pids = {line.split("pid=")[1] for line in log_lines(log)}
    assert len(log_lines(log)) == 4 and len(pids) == 1 and str(proc.pid) not in pids  # the worker ran them
    serial = probes.sweep(
        "sweepfake", {"n": [2, 3]}, preset="smoke", seeds=[0, 1], cache_root=tmp_path / "s", progress=False
    )
    write_netcdf(serial, tmp_path / "serial.nc")
    assert xr.load_dataset(out).identical(xr.load_dataset(tmp_path / "serial.nc"))


def _kill_and_resume(probe_dir, tmp_path, workers: str) -> None:
    psutil = pytest.importorskip("psutil")  # a dependency of distributed
    log = tmp_path / "log.txt"
    cache = tmp_path / "cache" / "results"
    env = sub_env(probe_dir, tmp_path, SWEEPFAKE_LOG=str(log))
    out = tmp_path / "resumed.nc"
    args = [
        sys.executable,
        "-m",
        "probes",
        "sweep",
        "sweepfake",
        "--preset",
        "smoke",
        "--grid",
        "n=2,3,4,5,6,7",
        "--sleep",
        "0.5",
        "--out",
        str(out),
        "--workers",
        workers,
    ]
    proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    children = []
    try:
        end = time.monotonic() + 120
        while len(entries(cache)) < 2 and time.monotonic() < end and proc.poll() is None:
            children = psutil.Process(proc.pid).children(recursive=True) or children
            time.sleep(0.05)
        assert proc.poll() is None, f"the sweep ended before it could be killed: {proc.communicate()}"
        assert len(entries(cache)) >= 2
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        _, alive = psutil.wait_procs(children, timeout=60)  # worker processes go with their client
        assert not alive, f"worker processes outlived the killed client: {alive}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for child in children:  # only if the assertion above failed: never leave our processes behind
            if child.is_running():
                child.kill()
    assert not out.exists()
    finished = {json.loads((e / "result.json").read_text())["config"]["n"] for e in entries(cache)}
    assert 2 <= len(finished) < 6
    before = len(log_lines(log))
    again = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=180)
    assert again.returncode == 0, again.stderr
    rerun = [int(line.split()[1].split("=")[1]) for line in log_lines(log)[before:]]
    assert sorted(rerun) == sorted(set(range(2, 8)) - finished)  # nothing that finished ran again
    assert f"{6 - len(finished)} computed, {len(finished)} from cache" in again.stdout
    clean = probes.sweep(
        "sweepfake",
        {"n": [2, 3, 4, 5, 6, 7]},
        preset="smoke",
        base={"sleep": 0.5},
        cache_root=tmp_path / "clean",
        progress=False,
    )
    write_netcdf(clean, tmp_path / "clean.nc")
    assert xr.load_dataset(out).identical(xr.load_dataset(tmp_path / "clean.nc"))


def test_killed_sweep_resumes_from_the_cache(fake, probe_dir, tmp_path):
    _kill_and_resume(probe_dir, tmp_path, workers="0")


@pytest.mark.slow
def test_killed_local_cluster_sweep_resumes_from_the_cache(fake, probe_dir, tmp_path):
    # a local cluster of worker processes: one in the fast tier (each worker imports torch; two cost a loaded
    # 2-core machine about 10 s more), two in the thorough tier
    _kill_and_resume(probe_dir, tmp_path, workers="1" if TIER.fast else "2")


# ---------------------------------------------------------------------- usage errors: nothing runs


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--grid", "nope=1,2"], "unknown --grid field 'nope' for probe sweepfake; fields: n, scale"),
        (["--grid", "n=1,x"], "--grid n: --n must be an integer >= 1, got 'x'"),
        (["--grid", "n=0,1"], "grid field n: n must be >= 1, got 0"),
        (["--grid", "n="], "--grid n: needs at least one value"),
        (["--grid", "dims=1;;2"], "--grid dims: empty value"),
        (["--grid", "n=2,2"], "grid field n: value 2 is given twice"),
        (["--grid", "n=2", "--grid", "n=3"], "--grid n is given twice"),
        (["--grid", "n=2", "--n", "3"], "n is both swept (--grid) and fixed (--n)"),
        (["--grid", "n=1,2", "--dims", "1,2"], "probe sweepfake at n=1, seed=0: dims (length 2) must not be longer"),
        (["--grid", "n"], "--grid must be FIELD=V1,V2"),
        (["--seeds", "4-2"], "--seeds range '4-2' runs backwards"),
        (["--seeds", "a,b"], "--seeds must be integers >= 0"),
        (["--seeds", "0-1", "--seed", "3"], "--seeds and --seed are both given"),
        (["--seeds", "0", "--grid", "seed=1"], "--seeds and a grid over seed are the same thing"),
        (["--grid", "n=2", "--scheduler", "udp://x:1"], "--scheduler must be local, none or tcp://HOST:PORT"),
        (["--grid", "n=2", "--workers", "two"], "--workers must be an integer >= 0"),
        (["--grid", "n=2", "--preset", "huge"], "preset must be one of"),
        ([], "sweep needs at least one --grid"),
    ],
)
def test_bad_grid_input_exits_2_with_one_line(fake, tmp_path, capsys, args, needle):
    t0 = time.monotonic()
    rc = cli.main(["sweep", "sweepfake", *args, "--out", str(tmp_path / "o.nc")])
    captured = capsys.readouterr()
    assert rc == 2
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1 and needle in captured.err, captured.err
    assert time.monotonic() - t0 < 5  # nothing ran, no cluster started
    assert not (tmp_path / "cache").exists() and not (tmp_path / "o.nc").exists()


def test_seeds_for_a_probe_without_a_seed_field(fake, tmp_path, capsys):
    rc = cli.main(["sweep", "sweepnoseed", "--grid", "n=1,2", "--seeds", "0-1", "--out", str(tmp_path / "o.nc")])
    err = capsys.readouterr().err
    assert rc == 2 and err.strip() == "probes: error: --seeds: probe sweepnoseed has no integer field 'seed' to set"


def test_unwritable_out_exits_2_before_any_work(fake, tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    for out, needle in ((blocker / "o.nc", "is not a folder"), (tmp_path, "is a folder")):
        rc = cli.main(["sweep", "sweepfake", "--grid", "n=2,3", "--out", str(out)])
        err = capsys.readouterr().err
        assert rc == 2 and len(err.strip().splitlines()) == 1 and "--out" in err and needle in err
    assert not (tmp_path / "cache").exists()


def test_bad_input_starts_no_cluster(probe_dir, tmp_path):
    """In a fresh process with the default --scheduler local: exit 2, and dask's distributed never imported."""
    code = (
        "import sys\nfrom analysis.probing import cli\n"
        f"rc = cli.main(['sweep', 'sweepfake', '--grid', 'n=1,x', '--out', {str(tmp_path / 'o.nc')!r}])\n"
        "print(rc, 'distributed' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=sub_env(probe_dir, tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stdout.split() == ["2", "False"], proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "--grid n" in proc.stderr
    assert not (tmp_path / "cache").exists()


# ---------------------------------------------------------------------- progress


def test_progress_bar_and_tqdm_disable(fake, tmp_path, capsys, monkeypatch):
    args = ["sweep", "sweepfake", "--preset", "smoke", "--grid", "n=2,3", "--workers", "0"]
    assert cli.main([*args, "--out", str(tmp_path / "a.nc")]) == 0
    assert capsys.readouterr().err == ""  # TQDM_DISABLE=1 (the fixture)
    monkeypatch.delenv("TQDM_DISABLE")
    assert cli.main([*args, "--out", str(tmp_path / "b.nc")]) == 0
    err = capsys.readouterr().err
    assert "sweep sweepfake" in err and "2/2" in err
    assert cli.main([*args, "--out", str(tmp_path / "c.nc"), "--no-progress"]) == 0
    assert capsys.readouterr().err == ""
