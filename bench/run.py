"""Benchmarks: speed and memory are measured here, never in timed tests.

    make bench                      # all benchmarks, results in bench/results/<machine>.json + RESULTS.md
    python bench/run.py --only forward hooks
    python bench/run.py --only icl --steps 100 --no-record   # one JSON object (ms_per_step, anchor_ms_per_step)

Each benchmark reports the median of several repeats after a warm-up, with the spread, and the
machine it ran on (CPU model, cores torch uses, memory, versions). Results are appended to the
record for this machine, so the history of a machine's numbers stays in the repository. Each benchmark
runs in its own process (its peak resident memory is its own), and what a target compares (ours and the
JAX anchor, the forward and the GEMM peak, hooks and a plain forward) is measured interleaved in the same
run: the ratio table at the top of each record reads the same on any machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis.core.devices import resolve_device, synchronize  # noqa: E402
from analysis.core.io import atomic_write_json, atomic_write_text  # noqa: E402
from analysis.zoo.allocator import kept_limit  # noqa: E402
from analysis.zoo.hooks import run_with_cache  # noqa: E402
from analysis.zoo.model import ModelConfig, TinyTransformer  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
DEVICE = torch.device("cpu")  # --device: where forward, train and icl run (GPU checks: bench/gpu_check.sh)
DEVICE_BENCHES = ("forward", "train", "icl")


def _synced(fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` followed by a wait for the device's queued kernels (so wall times are the work's own on a GPU)."""

    def wrapped():
        out = fn()
        synchronize(DEVICE)
        return out

    return wrapped


def machine() -> dict:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_gb = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores_visible": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "memory_gb": mem_gb,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        **({"gpu": torch.cuda.get_device_name(DEVICE)} if DEVICE.type == "cuda" else {}),
    }


def timeit(fn: Callable[[], object], repeats: int = 7, warmup: int = 2) -> dict:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "repeats": repeats}


def _interleaved(variants: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
    """Wall times of each variant, run round by round in turn (a drift in machine load hits all alike)."""
    for fn in variants.values():
        fn()  # warm-up
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return times


def _summary(v: list[float]) -> dict:
    return {"median_s": statistics.median(v), "min_s": min(v), "max_s": max(v), "repeats": len(v)}


def gemm_peak_variant(n: int = 2048) -> tuple[Callable[[], object], float]:
    """A float32 (n x n) @ (n x n) product with torch's threads and its FLOPs: the machine's GEMM peak."""
    a, b = (torch.randn(n, n, generator=torch.Generator().manual_seed(s)).to(DEVICE) for s in (1, 2))
    return _synced(lambda: torch.mm(a, b)), 2.0 * n**3


def forward_flops(cfg: ModelConfig, B: int, T: int) -> dict:
    """Matrix-product FLOPs (2 per multiply-add) of one forward: q, k, v, o projections, the MLP and the head,
    and attention's q k^T and pattern v over the pairs a causal model needs (T (T+1) / 2 per head; the
    whole-matrix kernel computes all T^2 and masks half, which the count does not credit)."""
    d, m = cfg.d_model, cfg.mlp_width
    dense = 2 * B * T * (4 * d * d + 2 * d * m) * cfg.n_layers + 2 * B * T * d * cfg.vocab_size
    pairs = T * (T + 1) // 2 if cfg.causal else T * T
    attention = 2 * 2 * B * pairs * cfg.n_heads * cfg.head_size * cfg.n_layers
    return {"dense": dense, "attention": attention, "total": dense + attention}


def bench_forward(rounds: int = 5) -> dict:
    """Forward at L = 4, d = 256, T = 2048 (batch 1), float32, no grad, against the machine's GEMM peak
    measured in the same rounds: materialised patterns (the path hooks see), the same while caching
    every layer's pattern, and the fused kernel (SDPA)."""
    B, T = 1, 2048
    cfg = ModelConfig(n_layers=4, d_model=256, n_heads=4, vocab_size=256, pos="rope", max_len=T)
    model = TinyTransformer(cfg, device=DEVICE).eval()
    x = torch.randint(0, 256, (B, T), generator=torch.Generator().manual_seed(0)).to(DEVICE)
    gemm, gemm_flops = gemm_peak_variant()

    def run(fused: bool, names: str | None = None):
        def fn():
            model.allow_fused = fused
            return model(x) if names is None else run_with_cache(model, x, names=names)

        return _synced(fn)

    variants = {
        "materialised": run(False),
        "materialised_cache_patterns": run(False, "blocks.*.attn.hook_pattern"),
        "fused": run(True),
        "gemm_peak": gemm,
    }
    with torch.no_grad():
        times = _interleaved(variants, rounds)
    model.allow_fused = False
    flops = forward_flops(cfg, B, T)
    peak = gemm_flops / statistics.median(times["gemm_peak"]) / 1e9
    out = {"config": f"L=4 d=256 H=4 T={T} B={B} float32 rope, {rounds} interleaved rounds", "flops": flops}
    out["device"] = str(DEVICE)
    out["gemm_peak"] = {**_summary(times["gemm_peak"]), "gflops": peak, "config": "2048^3 float32 torch.mm"}
    for name in ("materialised", "materialised_cache_patterns", "fused"):
        med = statistics.median(times[name])
        gflops = flops["total"] / med / 1e9
        out[name] = {**_summary(times[name]), "tokens_per_s": B * T / med, "gflops": gflops, "of_peak": gflops / peak}
    return out


HOOK_ROUNDS = 80  # rounds of the hook benchmark: its ratio's run-to-run spread was +-0.05 at 25 rounds


def bench_hooks(rounds: int = HOOK_ROUNDS) -> dict:
    """Overhead of the hook machinery: no hooks vs caching the residual stream vs caching everything.

    The variants are interleaved round by round (so drifts in machine load hit all of them alike) and each
    is summarised by its median over the rounds. Two of them measure the floor of caching everything
    without a model: every distinct buffer the cache holds is written and kept to the end of the call
    (``retain_buffers``) or written and freed at once (``reuse_buffers``); their difference,
    ``retention_s``, is what holding those bytes costs in page faults and cache misses, and
    ``retention_floor_ratio = 1 + retention_s / no_hooks`` the ratio a cache with free hook machinery would
    still reach.
    """
    cfg = ModelConfig(n_layers=4, d_model=128, n_heads=4, vocab_size=256)
    model = TinyTransformer(cfg).eval()
    x = torch.randint(0, 256, (4, 256), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        _, cached = run_with_cache(model, x, names=None)
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in cached.values()}
    sizes = [n // 4 for n in storages.values()]  # float32 elements of every distinct buffer the cache holds
    del cached

    def retain():  # the same buffers written and all kept to the end, as the cache keeps them
        kept = [torch.empty(n).fill_(1.0) for n in sizes]
        return len(kept)

    def reuse():  # the same bytes written, each buffer freed before the next (the allocator recycles it)
        for n in sizes:
            torch.empty(n).fill_(1.0)

    variants = {
        "no_hooks": lambda: model(x),
        "cache_resid_post": lambda: run_with_cache(model, x, names="blocks.*.hook_resid_post"),
        "cache_everything": lambda: run_with_cache(model, x, names=None),
        "retain_buffers": retain,
        "reuse_buffers": reuse,
    }
    times: dict[str, list[float]] = {k: [] for k in variants}
    faults = dict.fromkeys(variants, 0)
    with torch.no_grad():
        for fn in variants.values():
            fn()  # warm-up
        for _ in range(rounds):
            for name, fn in variants.items():
                f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
                faults[name] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
    med = {k: statistics.median(v) for k, v in times.items()}
    out = {"config": f"L=4 d=128 H=4 T=256 B=4 float32, {rounds} interleaved rounds"}
    out["keep_freed_memory_limit"] = kept_limit()  # None: glibc's defaults (analysis/zoo/allocator.py)
    out["minor_page_faults_per_forward"] = {k: v / rounds for k, v in faults.items()}
    out["cache_everything_over_plain"] = med["cache_everything"] / med["no_hooks"]
    # what keeping the cache's bytes costs with no model and no hooks: writing them into memory that stays
    # allocated (fresh pages, or heap the caches do not hold) against writing them into one recycled buffer
    out["cached_buffers"] = {"count": len(sizes), "mb": 4 * sum(sizes) / 2**20}
    out["retention_s"] = med["retain_buffers"] - med["reuse_buffers"]
    out["retention_floor_ratio"] = 1 + out["retention_s"] / med["no_hooks"]
    for name, v in times.items():
        out[name] = {
            "median_s": med[name],
            "min_s": min(v),
            "max_s": max(v),
            "overhead_ratio": med[name] / med["no_hooks"],
        }
    # the cost of one idle hook point: a forward pass calls every hook point once
    n_points = len(model.hook_names())
    point = model.blocks[0].hook_resid_pre
    t = torch.zeros(1)
    t0 = time.perf_counter()
    for _ in range(100_000):
        point(t)
    out["idle_hook_point_us"] = (time.perf_counter() - t0) / 100_000 * 1e6
    out["hook_points_per_forward"] = n_points
    out["idle_hook_share_of_forward"] = out["idle_hook_point_us"] * 1e-6 * n_points / med["no_hooks"]
    return out


def bench_train() -> dict:
    """Training steps/s of the tiny LM preset (AdamW, fused attention, batch and width as in the preset)."""
    from analysis.training.train import TrainConfig, tiny_lm_preset, train

    model_cfg, task, train_cfg = tiny_lm_preset()
    steps = 40
    short = train_cfg.replace(steps=steps, warmup_steps=4, eval_every=0, checkpoint_every=0)
    t0 = time.perf_counter()
    res = train(model_cfg, task, short, device=DEVICE, cache=None, progress=False)
    synchronize(DEVICE)
    wall = time.perf_counter() - t0
    assert isinstance(short, TrainConfig) and len(res.history["loss"]) == steps
    return {
        "config": (
            f"tiny_lm_preset: L={model_cfg.n_layers} d={model_cfg.d_model} batch={short.batch_size} "
            f"seq={getattr(task, 'seq_len', '?')}"
        ),
        "steps": steps,
        "device": str(DEVICE),
        "wall_s": wall,
        "steps_per_s": steps / wall,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def bench_icl(steps: int = 200, rounds: int = 3) -> dict:
    """von Oswald et al.'s default ICL run (d = N = 10, batch 2048, one LSA layer, Adam; the icl_gd probe's
    full Config) against our JAX implementation of the same protocol (bench/anchors/icl_jax.py), interleaved:
    each round trains ``steps`` updates with our trainer (fresh run, no cache; the probe's thread count, 1),
    the same with 2 threads, the same through the plain autograd path (no fused loss), then ``steps`` updates
    of the anchor (compiled once, before the rounds; its compile time is reported)."""
    import probes.icl_gd as icl
    from analysis.training.train import train

    sys.path.insert(0, str(Path(__file__).resolve().parent / "anchors"))
    import icl_jax

    @dataclasses.dataclass(frozen=True)
    class PlainTask(icl.NegYReadoutTask):  # the same task without the fused path
        def fused_loss(self, model, inputs, targets):
            return None

    cfg = icl.Config()
    tcfg = icl.train_config(cfg, 1).replace(steps=steps)
    task = icl.NegYReadoutTask(icl.regression_task(cfg), hide_query=cfg.hide_query)
    plain = PlainTask(icl.regression_task(cfg), hide_query=cfg.hide_query)

    def ours(t, threads: int):
        def fn():
            with icl.torch_threads(threads):
                res = train(icl.model_config(cfg, 1), t, tcfg, device=DEVICE, cache=None, progress=False)
            assert len(res.history["loss"]) == steps
            return float(res.history["loss"][-1])

        return fn

    variants = {
        "ours": ours(task, cfg.threads),
        "ours_2_threads": ours(task, 2),
        "ours_autograd": ours(plain, cfg.threads),
    }
    skipped = icl_jax.available()
    anchor = {}
    if skipped is None:
        anchor = icl_jax.Anchor(
            d=cfg.d, n_context=cfg.n_context, batch=cfg.train.batch_size, lr=cfg.train.lr, steps=cfg.train.steps
        )
        variants["anchor"] = lambda: anchor.updates(steps)
    else:
        print(f"[bench] icl: JAX anchor skipped: {skipped}", file=sys.stderr, flush=True)
    times = _interleaved(variants, rounds)
    out = {
        "config": f"d={cfg.d} N={cfg.n_context} batch={cfg.train.batch_size} {cfg.x_dist} one LSA layer, Adam, float32",
        "steps": steps,
        "rounds": rounds,
        "probe_steps": cfg.train.steps,
        "device": str(DEVICE),
    }
    for name, v in times.items():
        out[name] = {**_summary(v), "ms_per_step": 1000 * statistics.median(v) / steps}
    out["ms_per_step"] = out["ours"]["ms_per_step"]
    out["extrapolated_5000_steps_s"] = 5 * out["ms_per_step"]
    if skipped is None:
        out["anchor_ms_per_step"] = out["anchor"]["ms_per_step"]
        out["anchor_compile_s"] = anchor.compile_s
        out["anchor_ms_per_step_with_compile"] = (
            1000 * anchor.compile_s / cfg.train.steps
            + out["anchor_ms_per_step"] * (cfg.train.steps - 1) / cfg.train.steps
        )  # a whole probe-length run (cfg.train.steps updates), compilation included
        out["anchor_jax"] = anchor.version
        out["ours_over_anchor"] = out["ms_per_step"] / out["anchor_ms_per_step"]
        out["ours_over_anchor_with_compile"] = out["ms_per_step"] / out["anchor_ms_per_step_with_compile"]
    else:
        out["anchor_skipped"] = skipped
    out["autograd_over_fused"] = out["ours_autograd"]["ms_per_step"] / out["ms_per_step"]
    return out


_LONG_RUN = """
import json, resource, sys, time
import probes
from analysis.probing.base import run_probe
mod = probes.get("prompt_forgetting")
cfg = mod.Config.preset("full", n_layers=2, d_model=64, cont_len=int(sys.argv[1]))
t0 = time.perf_counter()
r = run_probe(mod, cfg, progress=False)
rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"wall_s": time.perf_counter() - t0, "peak_rss_mb": rss_mb,
                  "alpha": r.scalars["alpha"], "n_pairs": cfg.n_pairs}))
"""


def bench_long_continuation() -> dict:
    """`python -m probes run prompt_forgetting --cont-len T` at L = 2, d = 64 (full preset: 8 pairs), each
    T in a fresh process (peak resident memory of that process), T = 4096, 8192, 16384. Attention runs
    in blocks of query rows, so memory should grow linearly in T (goal at 16384: < 5 min, < 4 GB)."""
    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "TQDM_DISABLE": "1"}
    out = {"config": "prompt_forgetting full preset, L=2, d=64, 8 pairs, float32"}
    for T in (4096, 8192, 16384):
        proc = subprocess.run(
            [sys.executable, "-c", _LONG_RUN, str(T)], env=env, cwd=repo, capture_output=True, text=True
        )
        if proc.returncode:
            raise RuntimeError(f"long-continuation run at T={T} failed: {proc.stderr.strip().splitlines()[-1:]}")
        out[str(T)] = json.loads(proc.stdout.strip().splitlines()[-1])
    Ts = [4096, 8192, 16384]
    mem = [out[str(T)]["peak_rss_mb"] for T in Ts]
    out["peak_rss_mb_per_1k_tokens"] = (mem[2] - mem[0]) / ((Ts[2] - Ts[0]) / 1000)  # slope of a linear law
    out["quadratic_check"] = (mem[2] - mem[1]) / (mem[1] - mem[0])  # 2 if linear in T, 6 if quadratic (T doubling)
    return out


def checkpoint_training(cache_root: Path, top: int = 10) -> dict:
    """What training cost in a figure run: each cached checkpoint's own wall time (its ``meta.json``: the
    seconds its ``train`` call spent, one thread per kernel under ``make_figures``), summed and ranked."""
    rows = []
    for meta_path in sorted(Path(cache_root).glob("checkpoints/*/meta.json")):
        meta = json.loads(meta_path.read_text())
        model, train_cfg = meta.get("model", {}), meta.get("train", {})
        rows.append(
            {
                "key": meta_path.parent.name,
                "wall_s": round(float(meta.get("wall_time") or 0.0), 1),
                "model": f"L={model.get('n_layers')} d={model.get('d_model')} {model.get('attention', 'softmax')}",
                "steps": train_cfg.get("steps"),
                "batch": train_cfg.get("batch_size"),
            }
        )
    rows.sort(key=lambda r: -r["wall_s"])
    return {
        "checkpoints": len(rows),
        "total_wall_s": round(sum(r["wall_s"] for r in rows), 1),
        "largest": rows[:top],
    }


def bench_train_profile(steps: int = 12) -> dict:
    """Where a figure-set training step goes, against the machine's one-thread GEMM peak.

    The configuration is the figure set's costliest training (notebook 03, prompt forgetting: 8 pre-LN layers
    of width 64, byte corpus, batch 16 x 128 tokens, AdamW), on one thread as ``make_figures`` gives each
    kernel at 2 jobs on 2 cores. Reports the step time, its matrix-product FLOPs (3x a forward's: forward, and
    the two products of the backward), the time per operator class from torch's profiler, and
    ``floor_ms``: the step at the GEMM peak. ``measured / floor`` bounds what any rewrite of the step
    could gain without changing the model or the protocol."""
    from torch.profiler import ProfilerActivity, profile

    from analysis.training.train import train
    from probes import prompt_forgetting as pf

    torch.set_num_threads(1)
    cfg = pf.Config.preset("full", n_layers=8, data="corpus", trained=True, train_steps=2000, train_seq_len=128)
    model_cfg, task = pf.model_config(cfg), pf._task(cfg, cfg.train.seq_len)
    short = pf.train_config(cfg).replace(steps=steps, warmup_steps=2, eval_every=0, checkpoint_every=0)
    gemm, gemm_flops = gemm_peak_variant()
    peak = gemm_flops / timeit(gemm, repeats=5)["median_s"] / 1e9
    train(model_cfg, task, short.replace(steps=3), cache=None, progress=False)  # warm-up: allocator, threads
    t0 = time.perf_counter()
    train(model_cfg, task, short, cache=None, progress=False)
    ms = 1000 * (time.perf_counter() - t0) / steps
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        train(model_cfg, task, short.replace(steps=4), cache=None, progress=False)
    classes = {"matmul": 0.0, "attention": 0.0, "other": 0.0}
    for ev in prof.key_averages():
        name = ev.key
        if name in ("aten::mm", "aten::addmm", "aten::bmm", "aten::matmul_backward"):
            classes["matmul"] += ev.self_cpu_time_total
        elif "scaled_dot_product" in name:
            classes["attention"] += ev.self_cpu_time_total
        elif name.startswith("aten::"):
            classes["other"] += ev.self_cpu_time_total
    total = sum(classes.values())
    flops = forward_flops(model_cfg, short.batch_size, cfg.train.seq_len)
    step_flops = 3 * flops["total"]
    floor_ms = 1000 * step_flops / (peak * 1e9)
    return {
        "config": (
            f"notebook 03's L=8 corpus training: d={model_cfg.d_model} H={model_cfg.n_heads} "
            f"batch={short.batch_size}x{cfg.train.seq_len} AdamW, fused attention, 1 thread"
        ),
        "ms_per_step": ms,
        "step_gflop": step_flops / 1e9,
        "gflops": step_flops / (ms / 1000) / 1e9,
        "gemm_peak_1_thread_gflops": peak,
        "of_peak": floor_ms / ms,
        "floor_ms": floor_ms,
        "max_speedup": ms / floor_ms,
        "time_share": {k: v / total for k, v in classes.items()},
        "matmul_gflops": 3 * flops["dense"] / (ms / 1000 * classes["matmul"] / total) / 1e9,
    }


def _figures(preset: str) -> dict:
    """Wall time of the figure pipeline for one preset, into a scratch folder with a cold cache
    (every model is trained, every probe computed), plus the per-notebook times of its manifest."""
    import tempfile

    repo = Path(__file__).resolve().parent.parent
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
            cwd=repo,
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

    repo = Path(__file__).resolve().parent.parent
    target = {"fast": "test", "thorough": "test-thorough"}[tier]
    env = {**os.environ, "TQDM_DISABLE": "1", "MPLBACKEND": "agg"}
    log = repo / "build" / f"bench-{target}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.run(["make", "-s", target], env=env, cwd=repo, stdout=out, stderr=subprocess.STDOUT)
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
        "log": str(log.relative_to(repo)),
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
    times: dict[str, list[float]] = {k: [] for k in variants}
    with torch.no_grad():
        for fn in variants.values():
            fn()
        for _ in range(7):
            for name, fn in variants.items():
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
    out = {"config": "all-MiniLM-L6-v2, T=512 B=4 float32"}
    for name, v in times.items():
        med = statistics.median(v)
        out[name] = {"median_s": med, "min_s": min(v), "max_s": max(v), "tokens_per_s": x.numel() / med}
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
    import re

    env = {**os.environ, "WORKBENCH_CACHE": str(tmp / f"cache-{label}"), "TQDM_DISABLE": "1"}
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True)
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


BENCHES = {
    "explorers": bench_explorers,
    "forward": bench_forward,
    "hooks": bench_hooks,
    "hooks_malloc": bench_hooks,  # the same, its process run with WORKBENCH_KEEP_FREED_MEMORY=1 (see _in_worker)
    "forward_malloc": bench_forward,  # likewise
    "hf": bench_hf,
    "icl": bench_icl,
    "train": bench_train,
    "train_profile": bench_train_profile,
    "train_profile_malloc": bench_train_profile,  # the same with freed memory kept, as the figure kernels run
    "long_continuation": bench_long_continuation,
    "tests": bench_tests,
    "tests_thorough": bench_tests_thorough,
    "figures_smoke": bench_figures_smoke,
    "sweep": bench_sweep,
    "figures": bench_figures,
}


def _rows_speed(results: dict) -> list[tuple[str, str, str]]:
    """Rows of the speed benchmarks: explorers, forward passes, hooks, Hugging Face adapters."""
    rows = []
    for name, t in results.get("explorers", {}).items():
        if name == "memory":  # the benchmark process's peak memory, reported with every benchmark's
            continue
        rows.append((f"explorer {name}, one knob change (ms)", f"{1000 * t['median_s']:.0f}", "compute + PNG"))
    if "forward" in results:
        f = results["forward"]
        rows.append(
            ("forward, materialised patterns (tokens/s)", f"{f['materialised']['tokens_per_s']:.0f}", f["config"])
        )
        rows.append(("forward, fused kernel (tokens/s)", f"{f['fused']['tokens_per_s']:.0f}", f["config"]))
        if "gemm_peak" in f:
            rows.append(("float32 GEMM peak, same rounds (GFLOP/s)", f"{f['gemm_peak']['gflops']:.0f}", "2048^3"))
            for key in ("materialised", "materialised_cache_patterns", "fused"):
                rows.append((f"forward, {key.replace('_', ' ')} (GFLOP/s)", f"{f[key]['gflops']:.1f}", f["config"]))
    if "hooks" in results:
        h = results["hooks"]
        rows.append(
            ("cache resid_post / no hooks (time ratio)", f"{h['cache_resid_post']['overhead_ratio']:.2f}", h["config"])
        )
        rows.append(
            ("cache everything / no hooks (time ratio)", f"{h['cache_everything']['overhead_ratio']:.2f}", h["config"])
        )
        for key, label in (("hooks", "glibc defaults"), ("hooks_malloc", "freed memory kept")):
            if "retention_floor_ratio" in results.get(key, {}):
                r = results[key]
                rows.append(
                    (
                        f"cache everything: the floor of holding its buffers ({label}; time ratio)",
                        f"{r['retention_floor_ratio']:.2f} (measured {r['cache_everything_over_plain']:.2f})",
                        f"{r['cached_buffers']['count']} buffers, {r['cached_buffers']['mb']:.0f} MB written and kept "
                        f"vs recycled: {1000 * r['retention_s']:.2f} ms",
                    )
                )
        if "idle_hook_share_of_forward" in h:
            rows.append(
                (
                    "idle hook points, share of a forward",
                    f"{100 * h['idle_hook_share_of_forward']:.2f}%",
                    f"{h['hook_points_per_forward']} points x {h['idle_hook_point_us']:.2f} us",
                )
            )
    if "hf" in results:
        h = results["hf"]
        for key in ("adapter_no_hooks", "adapter_cache_patterns", "transformers_eager", "transformers_sdpa"):
            rows.append(
                (f"MiniLM forward, {key.replace('_', ' ')} (tokens/s)", f"{h[key]['tokens_per_s']:.0f}", h["config"])
            )
    return rows


def _rows_training(results: dict) -> list[tuple[str, str, str]]:
    """Rows of the training benchmarks: ICL, the trainer, its profile, long continuations."""
    rows = []
    if "icl" in results and "anchor_ms_per_step" in results["icl"]:
        r = results["icl"]
        rows.append(("ICL training, ours (ms/update)", f"{r['ms_per_step']:.2f}", r["config"]))
        rows.append(
            ("ICL training, JAX anchor (ms/update)", f"{r['anchor_ms_per_step']:.2f}", f"jax {r['anchor_jax']}")
        )
        rows.append(
            (
                "ICL training, ours through autograd; with 2 threads (ms/update)",
                f"{r['ours_autograd']['ms_per_step']:.2f}; {r['ours_2_threads']['ms_per_step']:.2f}",
                "no fused loss; fused loss with torch.set_num_threads(2)",
            )
        )
    if "icl" in results:
        r = results["icl"]
        rows.append(
            (
                "ICL-as-GD training, 5000 updates (s, extrapolated)",
                f"{r['extrapolated_5000_steps_s']:.0f}",
                f"{r['config']}; {r['ms_per_step']:.1f} ms/update",
            )
        )
    if "train" in results:
        t = results["train"]
        rows.append(("training (steps/s)", f"{t['steps_per_s']:.1f}", t["config"]))
    for key, kept in (("train_profile", ""), ("train_profile_malloc", ", keeping freed memory")):
        if key not in results:
            continue
        t = results[key]
        share = ", ".join(f"{k} {100 * v:.0f}%" for k, v in t["time_share"].items())
        rows.append(
            (f"figure training step, 1 thread{kept} (ms)", f"{t['ms_per_step']:.1f}", f"{t['config']}; {share}")
        )
        rows.append(
            (
                f"the same at the 1-thread GEMM peak{kept} (ms)",
                f"{t['floor_ms']:.1f}",
                f"{t['step_gflop']:.2f} GFLOP at {t['gemm_peak_1_thread_gflops']:.0f} GFLOP/s; "
                f"matrix products run at {t['matmul_gflops']:.0f}",
            )
        )
    if "long_continuation" in results:
        r = results["long_continuation"]
        for T in ("4096", "8192", "16384"):
            rows.append(
                (
                    f"prompt forgetting at T = {T} (s; peak MB)",
                    f"{r[T]['wall_s']:.0f}; {r[T]['peak_rss_mb']:.0f}",
                    r["config"],
                )
            )
        rows.append(
            (
                "prompt forgetting memory growth (MB per 1k tokens; ratio 2 = linear, 6 = quadratic)",
                f"{r['peak_rss_mb_per_1k_tokens']:.1f}; {r['quadratic_check']:.2f}",
                r["config"],
            )
        )
    return rows


def _rows_runs(results: dict) -> list[tuple[str, str, str]]:
    """Rows of the whole-command benchmarks: the test tiers, sweeps, make figures, and peak memory."""
    rows = []
    for key in ("tests", "tests_thorough"):
        if key in results:
            r = results[key]
            if "wall_s" not in r:  # a record from before the two tiers: pytest alone
                rows.append(("pytest tests/ (s)", f"{r['pytest_wall_s']:.0f}", r["summary"]))
                continue
            rows.append(
                (
                    f"{r['command']}, {r['tier']} tier, wall (s); CPU (s)",
                    f"{r['wall_s']:.0f}; {r['cpu_s']:.0f}",
                    f"exit {r['exit_code']}: " + "; ".join(r["summary"]),
                )
            )
    if "sweep" in results:
        r = results["sweep"]
        rows.append(("sweep, 16 smoke points, serial (s)", f"{r['serial']['command_wall_s']:.1f}", r["config"]))
        rows.append(
            (
                "sweep, 16 smoke points, LocalCluster 2 workers (s)",
                f"{r['local_2_workers']['command_wall_s']:.1f}",
                f"cluster start included; identical to serial: {r['identical_serial_local']}",
            )
        )
        rows.append(
            (
                "sweep speed-up, 2 workers / serial (whole command; sweep only)",
                f"{r['speedup_command']:.2f}; {r['speedup_sweep']:.2f}",
                f"load average before: {r['serial']['load_avg_1min_before']:.1f}, "
                f"{r['local_2_workers']['load_avg_1min_before']:.1f} on {r['cores_visible']} cores"
                + (
                    f"; free cores measured {r['parallel_capacity_before']['capacity_cores']:.2f} before, "
                    f"{r['parallel_capacity_after']['capacity_cores']:.2f} after"
                    if "parallel_capacity_before" in r
                    else ""
                ),
            )
        )
        rows.append(
            (
                "sweep, serial with torch's default threads (s)",
                f"{r['serial_torch_default_threads']['command_wall_s']:.1f}",
                "probes.sweep(..., threads=None)",
            )
        )
    for key in ("figures_smoke", "figures"):
        if key in results:
            r = results[key]
            for sub in [r] if "preset" in r else [r[k] for k in ("smoke", "full") if k in r]:
                rows.append(
                    (
                        f"make figures PRESET={sub['preset']}, cold cache (s)",
                        f"{sub['cold_cache_wall_s']:.0f}",
                        f"exit {sub['exit_code']}",
                    )
                )
                if "training" in sub:
                    tr = sub["training"]
                    rows.append(
                        (
                            "  of which training, summed over its checkpoints (s, one thread each)",
                            f"{tr['total_wall_s']:.0f}",
                            f"{tr['checkpoints']} checkpoints",
                        )
                    )
    for name, res in results.items():
        if isinstance(res, dict) and "memory" in res:
            m = res["memory"]
            rows.append(
                (
                    f"peak resident memory, {name} (MB; largest child)",
                    f"{m['peak_rss_mb']:.0f}; {m['peak_rss_children_mb']:.0f}",
                    "the benchmark's own process (ru_maxrss)",
                )
            )
    return rows


def _headline(results: dict) -> list[str]:
    """One row per measured quantity, for the summary table of a run."""
    rows = _rows_speed(results) + _rows_training(results) + _rows_runs(results)
    return [f"| {a} | {b} | {c} |" for a, b, c in rows]


# (label, how to read it off a run's results, target, True when the value must stay at or below the target)
RATIOS = [
    ("ICL training: ours / JAX anchor (time per update)", lambda r: r["icl"]["ours_over_anchor"], 0.5, True),
    (
        "ICL training: ours / JAX anchor with its compilation (a 2000-update run)",
        lambda r: r["icl"]["ours_over_anchor_with_compile"],
        0.5,
        True,
    ),
    ("forward, materialised patterns / GEMM peak", lambda r: r["forward"]["materialised"]["of_peak"], 0.4, False),
    (
        "forward, materialised, caching every pattern / GEMM peak",
        lambda r: r["forward"]["materialised_cache_patterns"]["of_peak"],
        0.4,
        False,
    ),
    ("forward, fused / GEMM peak", lambda r: r["forward"]["fused"]["of_peak"], 0.6, False),
    (
        "forward, materialised, keeping freed memory / GEMM peak",
        lambda r: r["forward_malloc"]["materialised"]["of_peak"],
        0.4,
        False,
    ),
    (
        "the same, caching every pattern",
        lambda r: r["forward_malloc"]["materialised_cache_patterns"]["of_peak"],
        0.4,
        False,
    ),
    ("forward, fused, keeping freed memory / GEMM peak", lambda r: r["forward_malloc"]["fused"]["of_peak"], 0.6, False),
    ("cache every hook point / plain forward", lambda r: r["hooks"]["cache_everything_over_plain"], 1.1, True),
    (
        "the same, keeping freed memory (analysis.zoo.allocator)",
        lambda r: r["hooks_malloc"]["cache_everything_over_plain"],
        1.1,
        True,
    ),
    (
        "prompt forgetting at T = 16384: peak memory / 4 GB",
        lambda r: r["long_continuation"]["16384"]["peak_rss_mb"] / 4096,
        1.0,
        True,
    ),
]


def ratio_table(results: dict) -> list[str]:
    """The ratios a run measured (ours against the anchor, the peak or the plain forward, each measured in the
    same run), with the issue's targets: these read the same on any machine."""
    lines = []
    for label, get, target, at_most in RATIOS:
        try:
            value = float(get(results))
        except (KeyError, TypeError):
            continue
        met = value <= target if at_most else value >= target
        lines.append(f"| {label} | {value:.3f} | {'<=' if at_most else '>='} {target:g} | {'yes' if met else 'no'} |")
    if not lines:
        return []
    return ["| ratio | measured | target | met |", "|---|---|---|---|", *lines, ""]


def render_markdown(record: dict) -> str:
    lines = [
        "# Benchmark results",
        "",
        "Regenerate with `make bench` (`python bench/run.py --only NAME ...` for a part).",
        "One section per run, newest last; the JSON beside this file holds every number.",
        "",
    ]
    for run in record["runs"]:
        m = run["machine"]
        lines += [f"## {m['cpu']} ({m['torch_threads']} torch threads, {m['memory_gb']} GB), torch {m['torch']}", ""]
        lines += [f"commit `{run['commit']}`, benchmarks: {', '.join(run['results'])}", ""]
        lines += ratio_table(run["results"])
        lines += ["| quantity | value | setting |", "|---|---|---|", *_headline(run["results"]), ""]
        for name, res in run["results"].items():
            lines += [
                f"<details><summary>{name}</summary>",
                "",
                "```json",
                json.dumps(res, indent=1, sort_keys=True),
                "```",
                "",
                "</details>",
                "",
            ]
    return "\n".join(lines)


def _peak_rss_mb() -> dict:
    """Peak resident memory of this process and of its largest finished child (MB, ru_maxrss)."""
    return {
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "peak_rss_children_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    }


def _run_one(name: str, steps: int | None) -> dict:
    kwargs = {"steps": steps} if steps is not None and name == "icl" else {}
    return BENCHES[name](**kwargs)


# glibc's allocator returns freed blocks above its mmap/trim thresholds to the OS, and every forward then
# page-faults fresh memory back in; analysis.zoo.allocator.keep_freed_memory keeps freed memory in the process
# (hooks_malloc measures the hook benchmark so: what the hook overhead owes to the allocator rather than to the
# hook machinery). Every other benchmark runs with glibc's defaults.
MALLOC_TUNED = {"WORKBENCH_KEEP_FREED_MEMORY": "1"}
MALLOC_DEFAULT = {"WORKBENCH_KEEP_FREED_MEMORY": "0"}


def _in_worker(name: str, steps: int | None) -> dict:
    """One benchmark in a fresh process, so that its peak resident memory is its own (``--worker``)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name, "--device", DEVICE.type]
    if steps is not None:
        cmd += ["--steps", str(steps)]
    env = {**os.environ, **(MALLOC_TUNED if name.endswith("_malloc") else MALLOC_DEFAULT)}
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=env)
    if proc.returncode:
        raise RuntimeError(f"benchmark {name} failed (exit {proc.returncode})")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", choices=sorted(BENCHES), help="benchmarks to run (default: all)")
    parser.add_argument("--render", action="store_true", help="only rewrite the Markdown from the JSON records")
    parser.add_argument("--steps", type=int, default=None, help="icl: updates per round (default 200)")
    parser.add_argument(
        "--no-record", action="store_true", help="print one JSON object (the results) and record nothing"
    )
    parser.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        default="cpu",
        help=f"where {', '.join(DEVICE_BENCHES)} run (the others always on the CPU); default cpu",
    )
    parser.add_argument("--worker", choices=sorted(BENCHES), help=argparse.SUPPRESS)  # one benchmark, JSON out
    args = parser.parse_args(argv)
    global DEVICE
    try:
        DEVICE = resolve_device(args.device)
    except ValueError as e:
        parser.error(str(e))
    if args.device != "cpu" and not set(args.only or BENCHES) <= set(DEVICE_BENCHES):
        parser.error(f"--device {args.device} applies to --only {' '.join(DEVICE_BENCHES)}")
    if args.render:
        for path in sorted(RESULTS.glob("*.json")):
            atomic_write_text(path.with_suffix(".md"), render_markdown(json.loads(path.read_text())))
        return 0
    torch.manual_seed(0)
    if args.worker:
        result = _run_one(args.worker, args.steps)
        print(json.dumps({**result, "memory": _peak_rss_mb()}), flush=True)
        return 0
    names = args.only or list(BENCHES)
    results = {}
    for name in names:
        print(f"[bench] {name} ...", file=sys.stderr, flush=True)
        results[name] = _in_worker(name, args.steps)
        if not args.no_record:
            print(json.dumps(results[name], indent=1, sort_keys=True), file=sys.stderr, flush=True)
    if args.no_record:
        print(json.dumps(results[names[0]] if len(names) == 1 else results, sort_keys=True))
        return 0
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    mach = machine()
    slug = "".join(ch if ch.isalnum() else "-" for ch in f"{mach['cpu']}-{mach['torch_threads']}t").strip("-").lower()
    path = RESULTS / f"{slug}.json"
    record = json.loads(path.read_text()) if path.exists() else {"runs": []}
    record["runs"].append({"machine": mach, "commit": commit, "results": results})
    atomic_write_json(path, record)
    atomic_write_text(RESULTS / f"{slug}.md", render_markdown(record))
    print(f"[bench] recorded in {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
