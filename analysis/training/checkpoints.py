"""Content-addressed cache of trained models, and of resumable partial training states.

A trained model is fully determined by four things: the model config (which also fixes the initial
weights through its seed), the task config, the training config (which fixes the data stream through
its seed) and the version of the training code. The cache key is the SHA-256 of the canonical JSON of
exactly these four, so two runs that would produce the same weights share one entry, and changing any
field, or bumping the trainer's version (``analysis.training.train.TRAINER_VERSION``, passed in by the trainer:
this module knows nothing of the training code), gives a new key. Nothing depends on file times.

Layout under the root (default ``analysis.core.paths.cache_dir() / "checkpoints"``)::

    <key>/model.safetensors      weights (safetensors: no pickle, no code execution on load)
    <key>/meta.json              configs, trainer version, history, sha256 of the weights file
    partial/<key>/state.safetensors   resumable state of an unfinished run (weights, optimiser
    partial/<key>/state.json          tensors, data-generator state) and its JSON side

Every folder is written under a temporary name and moved into place whole, so a reader sees either
the old entry or the new one, never a mixture. Every read is verified (the JSON parses, the weights
file has the recorded SHA-256, safetensors can load it); a damaged entry is reported with a warning,
deleted and treated as missing, so the trainer simply trains again. A corrupt entry is never used.

Concurrency: :meth:`CheckpointCache.lock` is an ``fcntl.flock`` on ``.<key>.lock`` beside the entry
(``analysis.core.io.entry_lock``); ``analysis.training.train.train`` holds it from its second lookup to the last
write, so of two processes asking for the same model one trains and the other waits and loads it.
Reading needs no lock (entries are replaced whole), so a read-only cache still serves its entries.
A successful read refreshes the folder's modification time: ``python -m probes cache`` reads it as
the entry's last use.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from analysis.core.io import (
    atomic_replace_dir,
    content_hash,
    entry_lock,
    sha256_file,
    to_jsonable,
    touch,
    write_error,
)
from analysis.core.paths import cache_dir
from analysis.zoo.model import ModelConfig, TinyTransformer

log = logging.getLogger(__name__)

FORMAT_VERSION = 1  # layout of an entry; bump if the files or the meta fields change meaning
WEIGHTS_FILE = "model.safetensors"
META_FILE = "meta.json"
PARTIAL_DIR = "partial"
PARTIAL_TENSORS = "state.safetensors"
PARTIAL_META = "state.json"


def _as_dict(cfg: Any) -> dict:
    """A config dataclass with ``to_dict`` (or already a dict) as a plain JSON-safe dict."""
    if hasattr(cfg, "to_dict"):
        return cfg.to_dict()
    if isinstance(cfg, dict):
        return to_jsonable(cfg)
    raise TypeError(f"expected a config with to_dict() or a dict, got {type(cfg).__name__}")


def checkpoint_key(
    model_cfg: Any,
    task_cfg: dict,
    train_cfg: Any,
    *,
    trainer_version: str,
    extra: Any = None,
) -> str:
    """Content hash of ``{model, task, train, trainer_version}`` (plus ``extra`` when given).

    ``trainer_version`` is the version of the code that trains (``analysis.training.train.TRAINER_VERSION``, or
    the ``trainer_version`` an entry's meta recorded); the trainer passes it in. ``extra`` distinguishes
    runs whose weights agree but whose recorded history differs (e.g. a named training callback); it is
    left out of the hash when ``None`` so ordinary keys do not depend on it.
    """
    payload = {
        "model": _as_dict(model_cfg),
        "task": _as_dict(task_cfg),
        "train": _as_dict(train_cfg),
        "trainer_version": trainer_version,
    }
    if extra is not None:
        payload["extra"] = extra
    return content_hash(payload)


def history_to_json(history: dict[str, np.ndarray]) -> dict[str, list]:
    """History arrays as JSON lists (NaN -> null, +-inf -> "inf"/"-inf", see ``analysis.core.io``)."""
    return {name: to_jsonable(np.asarray(values)) for name, values in history.items()}


def history_from_json(history: dict[str, list]) -> dict[str, np.ndarray]:
    """Inverse of ``history_to_json``: step counters as int64, every other series as float64."""

    def _num(v: Any) -> float:
        if v is None:
            return math.nan
        if isinstance(v, str):
            return float(v)  # "inf" / "-inf"
        return float(v)

    out: dict[str, np.ndarray] = {}
    for name, values in history.items():
        if name in ("step", "eval_step"):
            out[name] = np.asarray(values, dtype=np.int64)
        else:
            out[name] = np.asarray([_num(v) for v in values], dtype=np.float64)
    return out


def _state_for_safetensors(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Detached, contiguous CPU copies: safetensors refuses shared or non-contiguous storage."""
    return {name: t.detach().to("cpu").clone().contiguous() for name, t in tensors.items()}


class CheckpointCache:
    """Verified, atomically written store of trained weights keyed by content hash.

    ``root=None`` uses ``analysis.core.paths.cache_dir() / "checkpoints"`` (``WORKBENCH_CACHE`` moves it).
    """

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = Path(root) if root is not None else cache_dir() / "checkpoints"

    def __repr__(self) -> str:
        return f"CheckpointCache(root={str(self.root)!r})"

    # ------------------------------------------------------------------ keys and paths
    def key(self, model_cfg: Any, task_cfg: dict, train_cfg: Any, *, trainer_version: str, extra: Any = None) -> str:
        """See ``checkpoint_key``."""
        return checkpoint_key(model_cfg, task_cfg, train_cfg, trainer_version=trainer_version, extra=extra)

    def entry_dir(self, key: str) -> Path:
        return self.root / _check_key(key)

    def partial_dir(self, key: str) -> Path:
        return self.root / PARTIAL_DIR / _check_key(key)

    def lock(self, key: str) -> contextlib.AbstractContextManager[Path]:
        """Exclusive lock of ``key`` (entry and partial state) across processes; see the module docstring."""
        return entry_lock(self.entry_dir(key))

    # ------------------------------------------------------------------ finished entries
    def contains(self, key: str) -> bool:
        """True when a complete entry folder exists (not verified; ``load`` verifies)."""
        d = self.entry_dir(key)
        return (d / WEIGHTS_FILE).is_file() and (d / META_FILE).is_file()

    def save(self, key: str, model: torch.nn.Module, meta: dict) -> Path:
        """Write ``model.state_dict()`` and ``meta`` (plus key, sha256, versions) as one entry."""
        return self.save_state(key, model.state_dict(), meta)

    def save_state(self, key: str, state: dict[str, torch.Tensor], meta: dict) -> Path:
        """Write a state dict and ``meta`` (plus key, sha256, versions) as one entry."""
        state = _state_for_safetensors(state)
        meta = dict(meta)
        meta.update(key=key, format_version=FORMAT_VERSION, torch_version=torch.__version__)
        return self._write_pair(self.entry_dir(key), WEIGHTS_FILE, META_FILE, state, meta)

    def load(
        self, key: str, device: str | torch.device = "cpu", *, repair: bool = True
    ) -> tuple[dict[str, torch.Tensor], dict] | None:
        """Verified ``(state_dict, meta)``, or ``None`` if missing or damaged (then it is deleted, with a
        warning; ``repair=False`` leaves it for a caller that will look again under :meth:`lock`)."""
        return self._read_pair(self.entry_dir(key), WEIGHTS_FILE, META_FILE, key, device, repair)

    def load_model(self, key: str, device: str | torch.device = "cpu") -> torch.nn.Module | None:
        """Rebuild the ``TinyTransformer`` of an entry from its config and load its weights (strict).

        Returns the model in eval mode, or ``None`` when the entry is missing or damaged.
        """
        loaded = self.load(key, device)
        if loaded is None:
            return None
        state, meta = loaded
        model = TinyTransformer(ModelConfig.from_dict(meta["model"]), device=device)
        model.load_state_dict(state, strict=True)
        return model.eval()

    def remove(self, key: str) -> None:
        """Delete an entry and any partial state for the same key (missing is fine)."""
        shutil.rmtree(self.entry_dir(key), ignore_errors=True)
        self.remove_partial(key)

    def list_entries(self) -> list[str]:
        """Keys of the complete entries, sorted (temporary and partial folders are skipped)."""
        if not self.root.is_dir():
            return []
        return sorted(
            p.name
            for p in self.root.iterdir()
            if p.is_dir() and not p.name.startswith(".") and p.name != PARTIAL_DIR and self.contains(p.name)
        )

    # ------------------------------------------------------------------ partial (resumable) states
    def save_partial(self, key: str, tensors: dict[str, torch.Tensor], state: dict) -> Path:
        """Atomically replace the resumable state for ``key`` (tensors + JSON-safe ``state``)."""
        state = dict(state)
        state.update(key=key, format_version=FORMAT_VERSION, torch_version=torch.__version__)
        return self._write_pair(
            self.partial_dir(key), PARTIAL_TENSORS, PARTIAL_META, _state_for_safetensors(tensors), state
        )

    def load_partial(self, key: str, device: str | torch.device = "cpu") -> tuple[dict[str, torch.Tensor], dict] | None:
        """Verified ``(tensors, state)`` of an unfinished run, or ``None`` (damaged ones are deleted)."""
        return self._read_pair(self.partial_dir(key), PARTIAL_TENSORS, PARTIAL_META, key, device)

    def has_partial(self, key: str) -> bool:
        return (self.partial_dir(key) / PARTIAL_META).is_file()

    def remove_partial(self, key: str) -> None:
        shutil.rmtree(self.partial_dir(key), ignore_errors=True)

    # ------------------------------------------------------------------ shared machinery
    def _write_pair(
        self, dst: Path, tensor_name: str, meta_name: str, tensors: dict[str, torch.Tensor], meta: dict
    ) -> Path:
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{dst.name}.", suffix=".tmp", dir=dst.parent))
        try:
            os.chmod(tmp, 0o755)  # mkdtemp makes it private (0700); an entry is an ordinary folder
            tensor_path = tmp / tensor_name
            save_file(tensors, str(tensor_path), metadata={"key": str(meta["key"])})
            with open(tensor_path, "rb+") as f:
                os.fsync(f.fileno())
            meta["sha256"] = sha256_file(tensor_path)
            text = json.dumps(to_jsonable(meta), indent=1, sort_keys=True, allow_nan=False) + "\n"
            with open(tmp / meta_name, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            return atomic_replace_dir(tmp, dst)
        except BaseException as err:
            shutil.rmtree(tmp, ignore_errors=True)
            if isinstance(err, OSError):  # a full disk, a read-only folder: say which entry
                raise write_error(dst, err, "checkpoint cache entry") from err
            raise

    def _read_pair(
        self,
        folder: Path,
        tensor_name: str,
        meta_name: str,
        key: str,
        device: str | torch.device,
        repair: bool = True,
    ) -> tuple[dict[str, torch.Tensor], dict] | None:
        if not folder.exists():
            return None
        meta_path, tensor_path = folder / meta_name, folder / tensor_name
        try:
            problem = None
            if not meta_path.is_file() or not tensor_path.is_file():
                problem = "a file is missing"
            else:
                try:
                    meta = json.loads(meta_path.read_text(encoding="utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError) as err:
                    meta, problem = None, f"{meta_name} does not parse ({err})"
                if problem is None and not isinstance(meta, dict):
                    problem = f"{meta_name} is not a JSON object"
                elif problem is None and meta.get("key") != key:
                    problem = f"{meta_name} records key {meta.get('key')!r}"
                elif problem is None and meta.get("format_version") != FORMAT_VERSION:
                    problem = f"format_version {meta.get('format_version')!r} != {FORMAT_VERSION}"
                elif problem is None and sha256_file(tensor_path) != meta.get("sha256"):
                    problem = f"{tensor_name} does not match its recorded sha256"
            if problem is None:
                try:
                    tensors = load_file(str(tensor_path), device=str(device))
                except Exception as err:  # safetensors raises its own error types for bad headers
                    problem = f"{tensor_name} does not load ({type(err).__name__}: {err})"
        except OSError as err:
            problem = f"cannot be read ({err})"
        if problem is not None:
            if not repair:
                log.debug("checkpoint cache: %s is damaged or being replaced (%s)", folder, problem)
                return None
            log.warning("checkpoint cache: %s is damaged (%s); deleting it, it will be recomputed", folder, problem)
            shutil.rmtree(folder, ignore_errors=True)
            return None
        touch(folder)
        return tensors, meta


def _check_key(key: str) -> str:
    """Keys are hex digests; refusing anything else keeps paths inside the cache root."""
    if not isinstance(key, str) or not key or any(c not in "0123456789abcdef" for c in key):
        raise ValueError(f"key must be a lowercase hex digest, got {key!r}")
    return key
