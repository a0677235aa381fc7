"""What every benchmark shares: the machine it runs on, the device, timing by repeats and interleaved rounds,
the GEMM peak and a forward pass's FLOPs."""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

from analysis.core.devices import synchronize
from analysis.zoo.model import ModelConfig

RESULTS = Path(__file__).resolve().parent / "results"
DEVICE = torch.device("cpu")  # --device: where forward, train and icl run (GPU checks: bench/gpu_check.sh)
DEVICE_BENCHES = ("forward", "train", "icl")


def synced(fn: Callable[[], object]) -> Callable[[], object]:
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
    return summary(times)


def interleaved(variants: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
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


def summary(v: list[float]) -> dict:
    return {"median_s": statistics.median(v), "min_s": min(v), "max_s": max(v), "repeats": len(v)}


def gemm_peak_variant(n: int = 2048) -> tuple[Callable[[], object], float]:
    """A float32 (n x n) @ (n x n) product with torch's threads and its FLOPs: the machine's GEMM peak."""
    a, b = (torch.randn(n, n, generator=torch.Generator().manual_seed(s)).to(DEVICE) for s in (1, 2))
    return synced(lambda: torch.mm(a, b)), 2.0 * n**3


def forward_flops(cfg: ModelConfig, B: int, T: int) -> dict:
    """Matrix-product FLOPs (2 per multiply-add) of one forward: q, k, v, o projections, the MLP and the head,
    and attention's q k^T and pattern v over the pairs a causal model needs (T (T+1) / 2 per head; the
    whole-matrix kernel computes all T^2 and masks half, which the count does not credit)."""
    d, m = cfg.d_model, cfg.mlp_width
    dense = 2 * B * T * (4 * d * d + 2 * d * m) * cfg.n_layers + 2 * B * T * d * cfg.vocab_size
    pairs = T * (T + 1) // 2 if cfg.causal else T * T
    attention = 2 * 2 * B * pairs * cfg.n_heads * cfg.head_size * cfg.n_layers
    return {"dense": dense, "attention": attention, "total": dense + attention}
