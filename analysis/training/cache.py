"""What the workbench cache holds, and pruning it (``python -m probes cache ls | size | prune``).

Layout under :func:`analysis.core.paths.cache_dir` (env ``WORKBENCH_CACHE``), one *entry* per line::

    results/<probe>/<key>/       result      probes.cached_run: data.nc, result.json, manifest.json
    checkpoints/<key>/           checkpoint  analysis.training.train.train: weights and meta (snapshots too)
    checkpoints/partial/<key>/   partial     resumable state of an unfinished training run
    corpus/<key>/                corpus      analysis.data.corpus.build_corpus: the text and its meta
    <any of these>/.<key>.<...>  temp        what a killed write (or prune) left: never read, only deleted
    anything else                other       listed, never deleted

Lock files (``.<key>.lock``, :func:`analysis.core.io.entry_lock`) are not entries.

**Last use** is an entry's modification time: writing an entry sets it, and every cache hit
(``cached_run``, ``CheckpointCache.load``, ``build_corpus``) refreshes it, so ``prune --older-than DAYS`` removes what
nothing has written or read for DAYS days; ``os.utime`` on the folder sets it by hand. (Access times
are not used: most file systems are mounted ``relatime`` or ``noatime``.)

**Pruning** removes one entry at a time, each while holding its lock taken without waiting: an entry
that a process is computing or writing is skipped and reported as in use. A folder is first renamed to
a hidden name, then deleted, so a reader sees the whole entry or none of it; a prune killed half-way
leaves a ``temp`` leftover that the next prune deletes.

**Figures.** Each figure's JSON sidecar (``figures/<name>.json``, :func:`analysis.notebook.plotting.save_figure`)
records in ``inputs`` the keys it was computed from (``probes.cache_key(...)``; also hashes of configs
that name no entry). ``--keep-figures`` keeps every entry those keys name and, transitively, what the
kept entries were computed from: the checkpoints a result's ``meta`` names (``meta["checkpoints"]``,
every training run the probe asked for, recorded by ``probes.run_probe`` through
:func:`analysis.training.train.record_checkpoints`; any string there equal to a checkpoint key counts), every
snapshot of a kept training run, and the corpus whose text a kept checkpoint was trained on (its task's
``corpus_sha256``). ``build/manifest.json`` and the
resume stamps of ``scripts/make_figures.py`` record file hashes and timings, no cache keys.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.core.io import entry_lock
from analysis.core.paths import cache_dir
from analysis.training.checkpoints import checkpoint_key

KINDS = ("result", "checkpoint", "partial", "corpus", "temp", "other")
RESULT_KEY_LENGTH = 20  # hex digits of a probe result's key (probes.cache_key)
_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True)
class Entry:
    """One item of the cache (see the module docstring for the kinds)."""

    kind: str
    key: str  # the content hash naming it ("" for other)
    name: str  # probe (result); task and model (checkpoint); source (corpus); "" when unknown
    path: Path
    size: int  # bytes, every file inside
    used: float  # last use: modification time, seconds since the epoch
    lock: Path  # the entry whose lock guards it (a partial state shares its training run's)
    aliases: frozenset[str] = field(default=frozenset(), repr=False)  # ids naming it: key, run key, text hash
    refs: frozenset[str] = field(default=frozenset(), repr=False)  # ids of what it was computed from


def entries(root: str | os.PathLike | None = None) -> list[Entry]:
    """Every entry under ``root`` (default :func:`analysis.core.paths.cache_dir`), in folder order."""
    root = Path(root) if root is not None else cache_dir()
    if not root.is_dir():
        return []
    out: list[Entry] = []
    for child in sorted(root.iterdir()):
        if child.name == "results" and child.is_dir():
            for probe in sorted(child.iterdir()):
                if probe.is_dir() and not probe.name.startswith("."):
                    out += _scan(probe, "result", probe.name)
                else:
                    out.append(_other(probe))
        elif child.name == "checkpoints" and child.is_dir():
            out += _scan(child, "checkpoint")
        elif child.name == "corpus" and child.is_dir():
            out += _scan(child, "corpus")
        else:
            out.append(_other(child))
    return out


def _scan(folder: Path, kind: str, name: str = "", lock_folder: Path | None = None) -> list[Entry]:
    lock_folder = lock_folder or folder
    out: list[Entry] = []
    for p in sorted(folder.iterdir()):
        if p.name.startswith(".") and p.name.endswith(".lock"):
            continue
        if p.name.startswith("."):  # .<key>.<random>.tmp, .<key>.old-<pid>, .<key>.<random>.del
            key = p.name[1:].split(".", 1)[0]
            out.append(Entry("temp", key, name, p, _size(p), _mtime(p), lock_folder / key))
        elif kind == "checkpoint" and p.name == "partial" and p.is_dir():
            out += _scan(p, "partial", lock_folder=folder)
        elif p.is_dir() and not p.is_symlink() and _is_key(p.name):
            aliases, refs, label = _describe(kind, p, name)
            out.append(
                Entry(
                    kind,
                    p.name,
                    label,
                    p,
                    _size(p),
                    _mtime(p),
                    lock_folder / p.name,
                    frozenset({p.name} | aliases),
                    frozenset(refs),
                )
            )
        else:
            out.append(_other(p))
    return out


def _other(p: Path) -> Entry:
    return Entry("other", "", p.name, p, _size(p), _mtime(p), p)


def _is_key(name: str) -> bool:
    return bool(name) and set(name) <= _HEX


def _size(p: Path) -> int:
    if p.is_symlink() or not p.is_dir():
        return _lstat(p).st_size if p.exists() or p.is_symlink() else 0
    total = 0
    for dirpath, _, files in os.walk(p):
        total += sum(_lstat(Path(dirpath) / f).st_size for f in files)
    return total


def _lstat(p: Path) -> os.stat_result:
    try:
        return p.lstat()
    except FileNotFoundError:  # deleted while we looked
        return os.stat_result((0,) * 10)


def _mtime(p: Path) -> float:
    return _lstat(p).st_mtime


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _describe(kind: str, folder: Path, name: str) -> tuple[set[str], set[str], str]:
    """(aliases, refs, name) of an entry, from its JSON side; a damaged one keeps only its key."""
    if kind == "result":
        record = _read_json(folder / "result.json")
        meta = record.get("meta") if isinstance(record, dict) else None
        return set(), set(_strings(meta)), name
    if kind == "corpus":
        meta = _read_json(folder / "meta.json")
        if not isinstance(meta, dict):
            return set(), set(), ""
        source = meta.get("text", {}).get("source", "") if isinstance(meta.get("text"), dict) else ""
        return {str(meta.get("sha256", ""))} - {""}, set(), str(source)
    if kind == "partial":
        state = _read_json(folder / "state.json")
        step = state.get("step") if isinstance(state, dict) else None
        return set(), set(), f"after {step} updates" if step is not None else ""
    meta = _read_json(folder / "meta.json")
    if not isinstance(meta, dict):
        return set(), set(), ""
    task, model = meta.get("task") or {}, meta.get("model") or {}
    label = " ".join(
        str(v)
        for v in (
            task.get("kind") or task.get("name"),
            f"L{model['n_layers']}" if "n_layers" in model else None,
            f"d{model['d_model']}" if "d_model" in model else None,
            model.get("attention"),
            f"snapshot@{meta['snapshot_step']}" if "snapshot_step" in meta else None,
        )
        if v
    )
    refs = {str(task["corpus_sha256"])} if isinstance(task, dict) and task.get("corpus_sha256") else set()
    return {run_key(meta)} - {""}, refs, label


def run_key(meta: dict) -> str:
    """The key of the training run a checkpoint entry belongs to (its own key, unless it is a snapshot)."""
    try:
        extra = None if meta.get("callback_id") is None else {"callback": meta["callback_id"]}
        return checkpoint_key(
            meta["model"], meta["task"], meta["train"], trainer_version=meta["trainer_version"], extra=extra
        )
    except (KeyError, TypeError, ValueError):
        return ""


def _strings(obj: Any) -> Iterable[str]:
    """Every string value inside nested dicts and lists."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


# ---------------------------------------------------------------------------------------------- figures


def figure_inputs(folder: str | os.PathLike) -> set[str]:
    """Every value recorded under ``inputs`` by the figure sidecars (``kind == "figure"``) in ``folder``.

    Raises ``ValueError`` naming the file when a ``*.json`` there cannot be read: pruning must not
    guess what a figure it cannot read depends on.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"no figures folder at {folder}")
    keys: set[str] = set()
    for path in sorted(folder.glob("*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise ValueError(f"cannot read {path}: {err}") from None
        if isinstance(record, dict) and record.get("kind") == "figure":
            keys.update(_strings(record.get("inputs")))
    return keys


def kept_by(found: list[Entry], ids: set[str]) -> list[Entry]:
    """The entries named by ``ids`` and, transitively, every entry they were computed from."""
    ids, kept = set(ids), {}
    changed = True
    while changed:
        changed = False
        for e in found:
            if e.path not in kept and e.kind not in ("temp", "other") and e.aliases & ids:
                kept[e.path] = e
                ids |= e.refs | e.aliases
                changed = True
    return list(kept.values())


# ---------------------------------------------------------------------------------------------- prune


@dataclass
class PruneReport:
    removed: list[Entry] = field(default_factory=list)
    kept: list[Entry] = field(default_factory=list)  # used by a figure
    recent: list[Entry] = field(default_factory=list)  # used more recently than --older-than
    busy: list[Entry] = field(default_factory=list)  # locked by a process computing or writing it


def prune(
    root: str | os.PathLike | None = None,
    *,
    older_than_days: float | None = None,
    keep: Iterable[str] = (),
    now: float | None = None,
) -> PruneReport:
    """Delete the cache's entries (all kinds but ``other``), each atomically under its lock.

    ``older_than_days``: only entries last used at least that long ago (see the module docstring).
    ``keep``: ids (keys) whose entries, and what they were computed from, stay (:func:`kept_by`).
    """
    if older_than_days is not None and not (isinstance(older_than_days, int | float) and older_than_days >= 0):
        raise ValueError(f"older_than_days must be a number of days >= 0, got {older_than_days!r}")
    now = time.time() if now is None else now
    found = entries(root)
    protected = {e.path for e in kept_by(found, set(keep))}
    report = PruneReport()
    for e in found:
        if e.kind == "other":
            continue
        if e.path in protected:
            report.kept.append(e)
        elif older_than_days is not None and now - e.used < older_than_days * 86400:
            report.recent.append(e)
        else:
            try:
                with entry_lock(e.lock, wait=False):
                    _remove(e)
            except BlockingIOError:
                report.busy.append(e)
                continue
            report.removed.append(e)
    return report


def _remove(e: Entry) -> None:
    path = e.path
    if e.kind != "temp" and path.is_dir():  # out of readers' sight in one rename, then deleted
        trash = path.with_name(f".{e.key}.{os.getpid()}-{secrets.token_hex(4)}.del")
        try:
            os.rename(path, trash)
        except FileNotFoundError:
            return
        path = trash
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
