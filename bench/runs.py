"""The benchmarks of whole runs: make figures from a cold cache, the test tiers, a real model, a Dask sweep, the
explorers."""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from analysis.core.paths import REPO
from analysis.zoo.hooks import run_with_cache
from bench.common import interleaved, summary, timeit
from bench.speed import checkpoint_training


def _figures(preset: str) -> dict:
    """Wall time of the figure pipeline for one preset, into a scratch folder with a cold cache
    (every model is trained, every probe computed), plus the per-notebook times of its manifest."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "WORKBENCH_CACHE": str(Path(tmp) / "cache"), "TQDM_DISABLE": "1"}
        t0 = time.perf_counter()
        proc = subprocess.run(
            [
                sys.executable,
                "scripts/make_figures.py",
                "--preset",
                preset,
                "--out",
                str(Path(tmp) / "fig"),
                "--build",
                str(Path(tmp) / "build"),
                "--force",
            ],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - t0
        training = checkpoint_training(Path(tmp) / "cache")
        manifest_path = Path(tmp) / "build" / "manifest.json"
        per_nb = {}
        if manifest_path.exists():
            manifest = json.loads(manifest_path.read_text())
            per_nb = {k: round(v.get("wall_s") or 0.0, 1) for k, v in manifest.get("notebooks", {}).items()}
    return {
        "preset": preset,
        "cold_cache_wall_s": wall,
        "exit_code": proc.returncode,
        "per_notebook_s": per_nb,
        "training": training,
    }


def bench_figures() -> dict:
    """`make figures PRESET=smoke` and `PRESET=full` from a cold cache (goals: 3 and 20 minutes on 2 cores)."""
    return {"smoke": _figures("smoke"), "full": _figures("full")}


def bench_figures_smoke() -> dict:
    return _figures("smoke")


def _test_tier(tier: str) -> dict:
    """Wall and CPU time (this process's children: pytest, its xdist workers, the notebook kernels) of the test
    suite at one tier, run as `make test` / `make test-thorough` runs it (lint and the browser install included),
    from a cold test cache; the pytest summary lines of its two pytest runs (tests, then nbval). The run's whole
    output goes to ``build/bench-<target>.log`` as it comes (its ``--durations`` table included)."""
    import resource

    target = {"fast": "test", "thorough": "test-thorough"}[tier]
    env = {**os.environ, "TQDM_DISABLE": "1", "MPLBACKEND": "agg"}
    log = REPO / "build" / f"bench-{target}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.run(["make", "-s", target], env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    summaries = [ln.strip("= ") for ln in lines if re.search(r"\d+ (passed|failed)", ln)]
    return {
        "tier": tier,
        "command": f"make {target}",
        "wall_s": wall,
        "cpu_s": cpu,
        "exit_code": proc.returncode,
        "summary": summaries,
        "log": str(log.relative_to(REPO)),
    }


def bench_tests() -> dict:
    """`make test`: the fast tier (goal: 10 minutes of wall time on 2 cores after the install)."""
    return _test_tier("fast")


def bench_tests_thorough() -> dict:
    """`make test-thorough`: the thorough tier (goal: under 60 minutes on 2 cores)."""
    return _test_tier("thorough")


def bench_hf() -> dict:
    """The Hugging Face adapter on the pretrained MiniLM encoder (float32, no grad): tokens/s of our
    hook-carrying eager attention against transformers' own eager and SDPA attention, interleaved."""
    import transformers

    from analysis.zoo.hf import HFModel, minilm_dir

    ours = HFModel.from_pretrained(minilm_dir())
    stock = {
        impl: transformers.AutoModel.from_pretrained(
            minilm_dir(), local_files_only=True, attn_implementation=impl
        ).eval()
        for impl in ("eager", "sdpa")
    }
    x = torch.randint(1000, 20000, (4, 512), generator=torch.Generator().manual_seed(0))
    variants = {
        "adapter_no_hooks": lambda: ours(x),
        "adapter_cache_patterns": lambda: run_with_cache(ours, x, names="blocks.*.attn.hook_pattern"),
        "transformers_eager": lambda: stock["eager"](input_ids=x),
        "transformers_sdpa": lambda: stock["sdpa"](input_ids=x),
    }
    with torch.no_grad():
        times = interleaved(variants, 7)
    out = {"config": "all-MiniLM-L6-v2, T=512 B=4 float32"}
    for name, v in times.items():
        out[name] = {**summary(v), "tokens_per_s": x.numel() / statistics.median(v)}
    return out


# 16 points of about 5 s each on one free core (smoke preset, depths up to 16): a LocalCluster pays ~4 s to start and
# each fresh worker ~5 s to import torch and the probe and warm up, so shorter points cannot show the parallel gain
SWEEP_ARGS = [
    "signal_propagation",
    "--preset",
    "smoke",
    "--depths",
    "1,2,4,8,16",
    "--grid",
    "n_heads=2,4",
    "--seeds",
    "0-7",
]

_SWEEP_THREADS = """
import sys, time
import probes
from analysis.probing.sweep import write_netcdf
t0 = time.perf_counter()
ds = probes.sweep("signal_propagation", {"n_heads": [2, 4]}, preset="smoke", seeds=range(8),
                  base={"depths": (1, 2, 4, 8, 16)}, progress=False, threads=None)
print(f"sweep wall {time.perf_counter() - t0:.3f}")
write_netcdf(ds, sys.argv[1])
"""


def _parallel_capacity() -> dict:
    """How many cores this machine gives us right now: a pure-Python loop alone, then two copies at once
    (capacity = 2 x alone / together: 2.0 on two idle cores, 1.0 when others keep one core busy)."""
    code = (
        "import time\nt = time.perf_counter()\ns = 0\nfor i in range(20_000_000):\n    s += i\n"
        "print(time.perf_counter() - t)"
    )
    alone = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout)
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    together = max(float(p.communicate()[0]) for p in procs)
    return {"alone_s": alone, "two_at_once_s": together, "capacity_cores": 2 * alone / together}


def _sweep_run(label: str, cmd: list[str], tmp: Path) -> dict:
    """One sweep in a fresh process with a fresh, empty cache: wall time of the whole command (start-up,
    imports, cluster start and shutdown included) and the sweep's own wall time as it reports it."""
    env = {**os.environ, "WORKBENCH_CACHE": str(tmp / f"cache-{label}"), "TQDM_DISABLE": "1"}
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise RuntimeError(f"sweep {label} failed: {proc.stderr.strip().splitlines()[-1:]}")
    found = re.findall(r"(?:; |sweep wall )([0-9.]+)(?: s)?\n", proc.stdout)
    return {"command_wall_s": wall, "sweep_wall_s": float(found[-1]) if found else None, "load_avg_1min_before": load}


def bench_sweep() -> dict:
    """`python -m probes sweep` over 16 smoke points of signal_propagation (depths 1-16; heads 2, 4 x seeds 0-7), each
    mode in a fresh process with a fresh cache (nothing cached): serially in-process (one torch thread per
    point, the sweep's rule), on a LocalCluster of 2 worker processes (one thread each), and, for
    reference, serially with torch's default threads (the API with threads=None). The outputs of the
    first two must be identical (bit for bit); the speed-up is serial / 2 workers, whole command."""
    import tempfile

    import xarray as xr

    out = {
        "config": "signal_propagation --preset smoke --depths 1,2,4,8,16 --grid n_heads=2,4 --seeds 0-7 (16 points)",
        "cores_visible": os.cpu_count(),
        "parallel_capacity_before": _parallel_capacity(),
    }
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        base = [sys.executable, "-m", "probes", "sweep", *SWEEP_ARGS]
        out["serial"] = _sweep_run("serial", [*base, "--workers", "0", "--out", str(tmp / "serial.nc")], tmp)
        out["local_2_workers"] = _sweep_run("local2", [*base, "--workers", "2", "--out", str(tmp / "local2.nc")], tmp)
        out["serial_torch_default_threads"] = _sweep_run(
            "threads", [sys.executable, "-c", _SWEEP_THREADS, str(tmp / "threads.nc")], tmp
        )
        out["identical_serial_local"] = bool(
            xr.load_dataset(tmp / "serial.nc").identical(xr.load_dataset(tmp / "local2.nc"))
        )
    out["speedup_command"] = out["serial"]["command_wall_s"] / out["local_2_workers"]["command_wall_s"]
    out["speedup_sweep"] = out["serial"]["sweep_wall_s"] / out["local_2_workers"]["sweep_wall_s"]
    out["load_avg_1min_after"] = os.getloadavg()[0]
    out["parallel_capacity_after"] = _parallel_capacity()
    return out


def bench_explorers() -> dict:
    """One knob change of each notebook explorer: the compute function plus the PNG it draws (goal: well
    under a second). Explorers of cached probe results use the smoke preset's (computed once beforehand)."""
    from analysis.notebook import explorers
    from companions import explorers as probe_explorers

    made = {
        "entropy": (explorers.explore_entropy(static=True), {"scale": 1.5}),
        "eta_star": (explorers.explore_eta_star(static=True), {"N": 40}),
        "readout": (explorers.explore_readout(static=True), {"d_key": 32}),
        "conv_heads": (explorers.explore_conv_heads(static=True), {"K": 6}),
        "relay": (probe_explorers.explore_relay("smoke", static=True), {"L": 4}),
        "rank_collapse": (probe_explorers.explore_rank_collapse("smoke", static=True), {"mask": "causal"}),
        "collapse": (probe_explorers.explore_collapse("smoke", static=True), {"alpha": 0.5}),
        "parameterisation": (probe_explorers.explore_parameterisation("smoke", static=True), {"optimizer": "sgd"}),
    }
    return {
        name: timeit(lambda ex=ex, over=over: ex.png(**over), repeats=5, warmup=1) for name, (ex, over) in made.items()
    }
