"""The benchmarks' bookkeeping (bench/): what it reads from a figure run's cache and how it reports a training profile.

The benchmarks' numbers are measured by ``make bench``, never asserted here; these tests check the arithmetic
and the records around them."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest


@pytest.fixture(scope="module")
def bench():
    """The benchmarks' modules (bench/: speed, runs, report), one namespace."""
    from bench import report, speed

    return SimpleNamespace(
        checkpoint_training=speed.checkpoint_training,
        bench_train_profile=speed.bench_train_profile,
        bench_hooks=speed.bench_hooks,
        _headline=report._headline,
    )


def _checkpoint(root, key, wall, layers):
    folder = root / "checkpoints" / key
    folder.mkdir(parents=True)
    meta = {"model": {"n_layers": layers, "d_model": 8}, "train": {"steps": 5, "batch_size": 2}}
    if wall is not None:
        meta["wall_time"] = wall
    (folder / "meta.json").write_text(json.dumps(meta))


def test_checkpoint_training_sums_and_ranks_every_checkpoint(bench, tmp_path):
    walls = {"a": 3.25, "b": 10.0, "c": None, "d": 0.5}  # c: a checkpoint written without its wall time
    for i, (key, wall) in enumerate(walls.items()):
        _checkpoint(tmp_path, key, wall, layers=i + 1)
    out = bench.checkpoint_training(tmp_path, top=2)
    assert out["checkpoints"] == 4
    assert out["total_wall_s"] == pytest.approx(sum(w for w in walls.values() if w is not None), abs=0.1)
    assert [r["key"] for r in out["largest"]] == ["b", "a"]
    assert out["largest"][0]["model"] == "L=2 d=8 softmax" and out["largest"][0]["steps"] == 5
    assert bench.checkpoint_training(tmp_path / "empty") == {"checkpoints": 0, "total_wall_s": 0, "largest": []}


def test_train_profile_is_consistent_and_reported(bench):
    r = bench.bench_train_profile(steps=2)
    # the floor is the step's FLOPs at the peak measured in the same run; the speed-up bound is their ratio
    assert r["floor_ms"] == pytest.approx(1000 * r["step_gflop"] / r["gemm_peak_1_thread_gflops"])
    assert r["max_speedup"] == pytest.approx(r["ms_per_step"] / r["floor_ms"])
    assert r["of_peak"] == pytest.approx(1 / r["max_speedup"])
    assert r["gflops"] == pytest.approx(r["step_gflop"] / (r["ms_per_step"] / 1000))
    assert set(r["time_share"]) == {"matmul", "attention", "other"}
    assert math.isclose(sum(r["time_share"].values()), 1.0) and min(r["time_share"].values()) >= 0
    # 3x the forward's matrix-product FLOPs of the model notebook 03 trains (8 layers, width 64, 16 x 128 tokens)
    d, m, L, B, T, V, H = 64, 256, 8, 16, 128, 256, 2
    dense = 2 * B * T * (4 * d * d + 2 * d * m) * L + 2 * B * T * d * V
    attention = 2 * 2 * B * (T * (T + 1) // 2) * H * (d // H) * L
    assert r["step_gflop"] == pytest.approx(3 * (dense + attention) / 1e9)
    rows = bench._headline({"train_profile": r})  # markdown table rows
    assert any(row.startswith(f"| figure training step, 1 thread (ms) | {r['ms_per_step']:.1f} |") for row in rows)
    assert any(row.startswith(f"| the same at the 1-thread GEMM peak (ms) | {r['floor_ms']:.1f} |") for row in rows)


def test_figure_runs_report_their_training_share(bench):
    figures = {
        "preset": "full",
        "cold_cache_wall_s": 100.0,
        "exit_code": 0,
        "per_notebook_s": {},
        "training": {"checkpoints": 3, "total_wall_s": 60.0, "largest": []},
    }
    rows = bench._headline({"figures": {"full": figures}})
    assert rows[:2] == [
        "| make figures PRESET=full, cold cache (s) | 100 | exit 0 |",
        "|   of which training, summed over its checkpoints (s, one thread each) | 60 | 3 checkpoints |",
    ]


def test_test_tiers_report_wall_and_cpu_time(bench):
    fast = {"tier": "fast", "command": "make test", "wall_s": 480.4, "cpu_s": 901.6, "exit_code": 0,
            "summary": ["2143 passed in 350.00s", "153 passed in 88.00s"], "log": "build/bench-test.log"}  # fmt: skip
    old = {"pytest_wall_s": 3600.0, "exit_code": 0, "summary": "2128 passed"}  # a record from before the tiers
    rows = bench._headline({"tests": fast, "tests_thorough": {**fast, "tier": "thorough", "exit_code": 1}})
    assert rows[:2] == [
        "| make test, fast tier, wall (s); CPU (s) | 480; 902 | exit 0: 2143 passed in 350.00s; 153 passed in 88.00s |",
        "| make test, thorough tier, wall (s); CPU (s) | 480; 902 | exit 1: 2143 passed in 350.00s; 153 passed in "
        "88.00s |",
    ]
    assert bench._headline({"tests": old})[0] == "| pytest tests/ (s) | 3600 | 2128 passed |"


def test_hook_benchmark_measures_the_floor_of_holding_its_buffers(bench):
    r = bench.bench_hooks(rounds=2)
    # the floor is the cost of writing and keeping the cache's distinct buffers against recycling them
    assert r["retention_s"] == pytest.approx(r["retain_buffers"]["median_s"] - r["reuse_buffers"]["median_s"])
    assert r["retention_floor_ratio"] == pytest.approx(1 + r["retention_s"] / r["no_hooks"]["median_s"])
    # L=4 d=128 T=256 B=4: every layer's (4, 4, 256, 256) scores and pattern are among the buffers it holds
    assert r["cached_buffers"]["mb"] > 4 * 2 * 4 * 4 * 256 * 256 * 4 / 2**20
    assert r["cached_buffers"]["count"] >= 4 * 2
    rows = bench._headline({"hooks": r, "hooks_malloc": r})
    floor = f"{r['retention_floor_ratio']:.2f} (measured {r['cache_everything_over_plain']:.2f})"
    assert sum(f"| {floor} |" in row for row in rows) == 2
