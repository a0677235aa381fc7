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
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis.core.devices import resolve_device  # noqa: E402
from analysis.core.io import atomic_write_json, atomic_write_text  # noqa: E402
from bench import common  # noqa: E402
from bench.report import render_markdown  # noqa: E402
from bench.runs import (  # noqa: E402
    bench_explorers,
    bench_figures,
    bench_figures_smoke,
    bench_hf,
    bench_sweep,
    bench_tests,
    bench_tests_thorough,
)
from bench.speed import (  # noqa: E402
    bench_forward,
    bench_hooks,
    bench_icl,
    bench_long_continuation,
    bench_train,
    bench_train_profile,
)

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
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name, "--device", common.DEVICE.type]
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
        help=f"where {', '.join(common.DEVICE_BENCHES)} run (the others always on the CPU); default cpu",
    )
    parser.add_argument("--worker", choices=sorted(BENCHES), help=argparse.SUPPRESS)  # one benchmark, JSON out
    args = parser.parse_args(argv)
    try:
        common.DEVICE = resolve_device(args.device)
    except ValueError as e:
        parser.error(str(e))
    if args.device != "cpu" and not set(args.only or BENCHES) <= set(common.DEVICE_BENCHES):
        parser.error(f"--device {args.device} applies to --only {' '.join(common.DEVICE_BENCHES)}")
    if args.render:
        for path in sorted(common.RESULTS.glob("*.json")):
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
    mach = common.machine()
    slug = "".join(ch if ch.isalnum() else "-" for ch in f"{mach['cpu']}-{mach['torch_threads']}t").strip("-").lower()
    path = common.RESULTS / f"{slug}.json"
    record = json.loads(path.read_text()) if path.exists() else {"runs": []}
    record["runs"].append({"machine": mach, "commit": commit, "results": results})
    atomic_write_json(path, record)
    atomic_write_text(common.RESULTS / f"{slug}.md", render_markdown(record))
    print(f"[bench] recorded in {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
