"""Atomic file writes, content hashes and locks on cache entries.

Nothing the workbench writes is ever half-written: every file goes to a temporary name in the same
folder, is flushed to disk, then renamed over its destination (``os.replace`` is atomic on POSIX).
Content hashes are SHA-256 over canonical JSON, so a key depends on values, never on dict order.
:func:`entry_lock` lets one process compute a cache entry while others wait for it (``fcntl.flock``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import hashlib
import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np


def _to_jsonable(obj: Any) -> Any:
    """Convert dataclasses, tuples, numpy scalars/arrays and paths to plain JSON values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): _to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return _to_jsonable(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, Path):
        return str(obj)
    return obj


def to_jsonable(obj: Any) -> Any:
    """Public form of the converter (non-finite floats become ``None``/``"inf"``/``"-inf"``)."""
    return _to_jsonable(obj)


def canonical_json(obj: Any) -> str:
    """Deterministic JSON text: sorted keys, no whitespace, non-finite floats made explicit."""
    return json.dumps(_to_jsonable(obj), sort_keys=True, separators=(",", ":"), allow_nan=False)


def content_hash(obj: Any, length: int = 16) -> str:
    """SHA-256 of the canonical JSON of ``obj``, truncated to ``length`` hex digits."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:length]


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def atomic_write(path: str | os.PathLike, writer: Callable[[str], None]) -> Path:
    """Call ``writer(tmp_path)`` then atomically move the result to ``path``.

    ``writer`` receives a temporary file name in the destination folder and must create that file.
    If it raises, the temporary file is removed and ``path`` is left untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        writer(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes files private; results and figures are meant to be read
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    def _w(tmp: str) -> None:
        with open(tmp, "wb") as f:
            f.write(data)

    return atomic_write(path, _w)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any, *, indent: int | None = 2) -> Path:
    text = json.dumps(_to_jsonable(obj), indent=indent, sort_keys=True, allow_nan=False)
    return atomic_write_text(path, text + "\n")


def atomic_replace_dir(src: str | os.PathLike, dst: str | os.PathLike) -> Path:
    """Move a fully written folder ``src`` to ``dst``, replacing any previous ``dst``.

    A stale ``dst`` is first renamed aside, so readers never see a folder with mixed contents.
    """
    src, dst = Path(src), Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    old = None
    if dst.exists():
        old = dst.with_name(f".{dst.name}.old-{os.getpid()}")
        if old.exists():
            shutil.rmtree(old)
        os.replace(dst, old)
    os.replace(src, dst)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return dst


def unwritable(folder: str | os.PathLike) -> str | None:
    """Why ``folder`` could not be created or written, or None. Creates nothing: the nearest existing
    ancestor must be a writable folder. Commands call it before any work whose output would be lost."""
    probe = Path(folder).resolve()
    while not probe.exists():
        if probe.parent == probe:
            return "no existing ancestor"
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is not a folder"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{probe} is not writable"
    return None


def lock_path(entry: str | os.PathLike) -> Path:
    """The lock file of a cache entry: ``<folder>/.<name>.lock`` beside it (hidden, never an entry)."""
    entry = Path(entry)
    return entry.parent / f".{entry.name}.lock"


@contextlib.contextmanager
def entry_lock(entry: str | os.PathLike, *, wait: bool = True) -> Iterator[Path]:
    """Hold an exclusive ``fcntl.flock`` on the lock file of ``entry`` (see :func:`lock_path`).

    A process that computes a cache entry holds its lock from the lookup to the final write, so a second
    process asking for the same entry waits, then finds it written. ``wait=False`` raises
    ``BlockingIOError`` at once when another process holds the lock. The lock dies with its process
    (the kernel releases it even after SIGKILL; the empty file it leaves is harmless). The holder
    deletes the lock file on release, so none accumulate; a process that was waiting on the deleted
    file notices (the path no longer names the file it locked) and locks the one there now.
    A lock file that cannot be created raises ``OSError`` naming it (e.g. a read-only cache).
    """
    path = lock_path(entry)
    while True:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise _restated(err, f"cannot create the lock file {path}: {err.strerror or err}") from err
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            try:
                current = os.stat(path).st_ino
            except FileNotFoundError:
                current = None
            if current == os.fstat(fd).st_ino:
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # deleted (or replaced) while we waited: lock the file that is there now
    try:
        yield path
    finally:
        with contextlib.suppress(OSError):
            path.unlink()  # still ours: a waiter that opened it sees it gone and locks a fresh one
        os.close(fd)  # closing the descriptor releases the lock


def touch(path: str | os.PathLike) -> None:
    """Mark a cache entry as used now (its modification time); silently skipped on a read-only cache."""
    try:
        os.utime(path)
    except OSError:
        pass


def write_error(path: str | os.PathLike, err: OSError, what: str = "") -> OSError:
    """``err`` restated as ``OSError`` naming the destination (errno kept: ``ENOSPC``, ``EACCES``...)."""
    reason = err.strerror or str(err)
    if err.errno == errno.ENOSPC:
        reason = f"{reason} (the disk is full)"
    label = f"{what} {path}" if what else str(path)
    return _restated(err, f"cannot write {label}: {reason}")


def _restated(err: OSError, message: str) -> OSError:
    """An ``OSError`` with ``message`` and the errno of ``err`` (so ``PermissionError`` stays one)."""
    return OSError(err.errno, message) if err.errno is not None else OSError(message)
