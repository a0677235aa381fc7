"""The speed benchmarks of the library: a forward pass against the GEMM peak, hooks, training against its
profile, the in-context regression run against its JAX anchor, a long continuation."""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from analysis.core.devices import synchronize
from analysis.core.paths import REPO
from analysis.zoo.allocator import kept_limit
from analysis.zoo.hooks import run_with_cache
from analysis.zoo.model import ModelConfig, TinyTransformer
from bench import common
from bench.common import forward_flops, gemm_peak_variant, interleaved, summary, synced, timeit


def bench_forward(rounds: int = 5) -> dict:
    """Forward at L = 4, d = 256, T = 2048 (batch 1), float32, no grad, against the machine's GEMM peak
    measured in the same rounds: materialised patterns (the path hooks see), the same while caching
    every layer's pattern, and the fused kernel (SDPA)."""
    B, T = 1, 2048
    cfg = ModelConfig(n_layers=4, d_model=256, n_heads=4, vocab_size=256, pos="rope", max_len=T)
    model = TinyTransformer(cfg, device=common.DEVICE).eval()
    x = torch.randint(0, 256, (B, T), generator=torch.Generator().manual_seed(0)).to(common.DEVICE)
    gemm, gemm_flops = gemm_peak_variant()

    def run(fused: bool, names: str | None = None):
        def fn():
            model.allow_fused = fused
            return model(x) if names is None else run_with_cache(model, x, names=names)

        return synced(fn)

    variants = {
        "materialised": run(False),
        "materialised_cache_patterns": run(False, "blocks.*.attn.hook_pattern"),
        "fused": run(True),
        "gemm_peak": gemm,
    }
    with torch.no_grad():
        times = interleaved(variants, rounds)
    model.allow_fused = False
    flops = forward_flops(cfg, B, T)
    peak = gemm_flops / statistics.median(times["gemm_peak"]) / 1e9
    out = {"config": f"L=4 d=256 H=4 T={T} B={B} float32 rope, {rounds} interleaved rounds", "flops": flops}
    out["device"] = str(common.DEVICE)
    out["gemm_peak"] = {**summary(times["gemm_peak"]), "gflops": peak, "config": "2048^3 float32 torch.mm"}
    for name in ("materialised", "materialised_cache_patterns", "fused"):
        med = statistics.median(times[name])
        gflops = flops["total"] / med / 1e9
        out[name] = {**summary(times[name]), "tokens_per_s": B * T / med, "gflops": gflops, "of_peak": gflops / peak}
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
    res = train(model_cfg, task, short, device=common.DEVICE, cache=None, progress=False)
    synchronize(common.DEVICE)
    wall = time.perf_counter() - t0
    assert isinstance(short, TrainConfig) and len(res.history["loss"]) == steps
    return {
        "config": (
            f"tiny_lm_preset: L={model_cfg.n_layers} d={model_cfg.d_model} batch={short.batch_size} "
            f"seq={getattr(task, 'seq_len', '?')}"
        ),
        "steps": steps,
        "device": str(common.DEVICE),
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
                res = train(icl.model_config(cfg, 1), t, tcfg, device=common.DEVICE, cache=None, progress=False)
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
    times = interleaved(variants, rounds)
    out = {
        "config": f"d={cfg.d} N={cfg.n_context} batch={cfg.train.batch_size} {cfg.x_dist} one LSA layer, Adam, float32",
        "steps": steps,
        "rounds": rounds,
        "probe_steps": cfg.train.steps,
        "device": str(common.DEVICE),
    }
    for name, v in times.items():
        out[name] = {**summary(v), "ms_per_step": 1000 * statistics.median(v) / steps}
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
    env = {**os.environ, "TQDM_DISABLE": "1"}
    out = {"config": "prompt_forgetting full preset, L=2, d=64, 8 pairs, float32"}
    for T in (4096, 8192, 16384):
        proc = subprocess.run(
            [sys.executable, "-c", _LONG_RUN, str(T)], env=env, cwd=REPO, capture_output=True, text=True
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
