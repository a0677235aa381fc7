"""Keep freed tensor memory in the process instead of handing it back to the OS (glibc only, opt-in).

Why. A forward pass frees and re-allocates the same large buffers every time: attention patterns
(B·H·T² floats), MLP activations, and with :func:`analysis.zoo.hooks.run_with_cache` every cached tensor of
the previous call. glibc serves requests above its mmap threshold (128 KiB, raised dynamically up to
32 MiB) with fresh ``mmap`` pages and trims the heap top above 128 KiB, so each forward page-faults its
buffers back in: on the hook benchmark's model (L = 4, d = 128, T = 256, B = 4) about 3000 minor faults
per plain forward and 1700 per cache-everything forward, against 100-360 and 25-100 once freed memory
is kept. That is what made caching every hook point 1.26x a plain forward (``bench/run.py --only
hooks``): the hook machinery itself costs 0.14% of a forward.

What. :func:`keep_freed_memory` raises glibc's mmap and trim thresholds (``mallopt``), so freed blocks
stay in the heap for the next allocation. Numbers do not change (allocation never touches values:
``tests/test_allocator.py`` checks outputs bit for bit). The cost is memory: what is freed after a peak
stays with the process until it exits instead of returning to the OS, and a heap block freed at one size
is not always reusable at another, so the peak resident memory can grow (the T = 2048 forward benchmark:
864 MB against 673 MB; the hook benchmark: unchanged). That is why it is opt-in: right for batch processes
(``make figures`` kernels, ``python -m probes``, benchmarks), a choice for a long-lived JupyterLab kernel.

How. Call :func:`keep_freed_memory` early, or set ``WORKBENCH_KEEP_FREED_MEMORY=1`` before the first
``import analysis`` (``make_figures`` sets it for its kernels, the command line for itself). On a C
library other than glibc it does nothing and returns False.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

ENV_VAR = "WORKBENCH_KEEP_FREED_MEMORY"
MAX_LIMIT = 2**31 - 1  # bytes: the largest value mallopt's int argument takes
# the default is the maximum: what the benchmarks measured; a 256 MiB limit removed far fewer page faults (961
# against 5024 per 10 forwards of the test model, and none in one run of the full suite), for reasons not found yet
DEFAULT_LIMIT = MAX_LIMIT
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # <malloc.h>
_state = {"limit": None}


def _glibc():
    try:  # the glibc soname first: ctypes.util.find_library would spawn ldconfig
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "")
        except OSError:
            return None
    return libc if hasattr(libc, "gnu_get_libc_version") else None  # glibc only: mallopt with these meanings


def keep_freed_memory(limit: int = DEFAULT_LIMIT) -> bool:
    """Let glibc keep up to ``limit`` bytes of freed memory (blocks up to ``limit`` come from the heap,
    which is trimmed only above ``limit`` free bytes). Returns True when glibc accepted both settings."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 < limit <= MAX_LIMIT:
        raise ValueError(f"limit must be an integer number of bytes in [1, {MAX_LIMIT}], got {limit!r}")
    libc = _glibc()
    if libc is None:
        return False
    ok = bool(libc.mallopt(_M_MMAP_THRESHOLD, ctypes.c_int(limit))) and bool(
        libc.mallopt(_M_TRIM_THRESHOLD, ctypes.c_int(limit))
    )
    if ok:
        _state["limit"] = limit
    return ok


def kept_limit() -> int | None:
    """The limit :func:`keep_freed_memory` set in this process (None: glibc's defaults)."""
    return _state["limit"]


def apply_from_environment() -> bool:
    """``WORKBENCH_KEEP_FREED_MEMORY``: unset, empty or ``0`` leaves glibc alone; ``1`` keeps up to
    :data:`DEFAULT_LIMIT`; any other positive integer is the limit in bytes."""
    value = os.environ.get(ENV_VAR, "").strip()
    if value in ("", "0"):
        return False
    if not value.isdigit():
        raise ValueError(f"{ENV_VAR} must be 0, 1 or a limit in bytes, got {value!r}")
    return keep_freed_memory(DEFAULT_LIMIT if value == "1" else int(value))
