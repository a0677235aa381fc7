"""analysis/zoo/allocator.py: keeping freed memory changes page faults, never numbers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from analysis.core.paths import REPO
from analysis.zoo import allocator

GLIBC = allocator._glibc() is not None

# a forward and a cache-everything forward, repeated in rounds; prints the digest of every output and the
# minor page faults of each round. One round's count is noisy (heap layout varies from run to run: a kept-memory
# round can still fault 4096 pages in while the heap grows, a default round can happen to fault none), so the
# test compares the sum over every round after the first. The cached attention matrices (3 x 4 x 1024 x 1024
# float32, 48 MiB) are larger than glibc's largest dynamic mmap threshold (32 MiB on 64-bit): by default they are
# mmapped and faulted in again every forward whatever the heap's history. With matrices of 4 MiB (T = 256) glibc's
# own threshold adaptation sometimes kept them too, and one fresh-clone suite run saw 3072 kept against 4640
# default faults.
SCRIPT = """
import hashlib, json, resource, torch
from analysis.zoo.allocator import kept_limit
from analysis.zoo.hooks import run_with_cache
from analysis.zoo.model import ModelConfig, TinyTransformer
torch.set_num_threads(1)
model = TinyTransformer(ModelConfig(n_layers=2, d_model=64, n_heads=4, vocab_size=64)).eval()
x = torch.randint(0, 64, (3, 1024), generator=torch.Generator().manual_seed(0))
h = hashlib.sha256()
with torch.no_grad():
    faults = []
    for _ in range(4):
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(2):
            h.update(model(x).numpy().tobytes())
            _, cache = run_with_cache(model, x, names=None)
            for name in sorted(cache):
                h.update(cache[name].numpy().tobytes())
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
print(json.dumps({"digest": h.hexdigest(), "faults": faults, "limit": kept_limit()}))
"""


def _run(value: str) -> dict:
    env = {**os.environ, allocator.ENV_VAR: value, "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not GLIBC, reason="the setting is glibc's (mallopt); elsewhere keep_freed_memory returns False")
def test_same_numbers_fewer_page_faults():
    default, kept = _run("0"), _run("1")
    assert default["limit"] is None and kept["limit"] == allocator.DEFAULT_LIMIT
    assert kept["digest"] == default["digest"]  # every output and cached activation, bit for bit
    # the mechanism: freed buffers are reused instead of mmapped and page-faulted back in
    # (sums over rounds 2-4 of 2 forwards each)
    assert sum(kept["faults"][1:]) * 2 < sum(default["faults"][1:]), (kept, default)


def test_bad_limit_and_bad_environment_are_refused(monkeypatch):
    for bad in (0, -1, 2**31, 1.5, True, "1"):
        with pytest.raises(ValueError, match="limit must be an integer number of bytes"):
            allocator.keep_freed_memory(bad)
    monkeypatch.setenv(allocator.ENV_VAR, "yes")
    with pytest.raises(ValueError, match="WORKBENCH_KEEP_FREED_MEMORY must be 0, 1 or a limit in bytes, got 'yes'"):
        allocator.apply_from_environment()
    monkeypatch.setenv(allocator.ENV_VAR, "0")
    assert allocator.apply_from_environment() is False


@pytest.mark.skipif(not GLIBC, reason="glibc only")
def test_the_command_line_keeps_freed_memory_unless_told_otherwise():
    """``python -m probes`` opts in for itself and its workers (probes/__main__.py); an explicit 0 is respected."""
    code = (
        "import os, sys; from analysis.probing import cli; from analysis.zoo.allocator import kept_limit; "
        "cli.main(['list']); a = (os.environ.get('WORKBENCH_KEEP_FREED_MEMORY'), kept_limit()); "
        "cli.keep_freed_memory_for_this_process(); "
        "print(*a, os.environ.get('WORKBENCH_KEEP_FREED_MEMORY'), kept_limit())"
    )
    # main() alone changes nothing (tests and notebooks call it in-process); python -m probes opts in
    for env_value, expected in ((None, f"None None 1 {allocator.DEFAULT_LIMIT}"), ("0", "0 None 0 None")):
        env = {k: v for k, v in os.environ.items() if k != allocator.ENV_VAR}
        if env_value is not None:
            env[allocator.ENV_VAR] = env_value
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split("\n")[-2] == expected
