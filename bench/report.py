"""A machine's record as Markdown: the headline rows, the ratio table, every run's results."""

from __future__ import annotations

import json


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
