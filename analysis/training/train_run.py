"""Deterministic training of a ``TinyTransformer`` on a task, cached by content hash, resumable: :func:`train`.

Caching and resuming. The finished model goes into a ``CheckpointCache`` under the key of
``{model, task, train, TRAINER_VERSION}``; a second call with the same configs loads it and runs no
update. Every ``checkpoint_every`` updates the full training state (weights, optimiser tensors, the
data generator's state, history) is written atomically to the cache's partial area; a run that was
interrupted (a crash, or Ctrl-C, which also saves the last completed update) resumes from there and
finishes with the same bits as an uninterrupted run. Two processes asking for the same run at once
do not both train: the one holding the key's lock (``CheckpointCache.lock``, an ``fcntl.flock``)
trains, the other waits for it and loads the entry it wrote.

Snapshots along training. ``train(..., snapshots=(s1, s2, ...))`` also returns the weights after
``s_i`` updates of the same run (``TrainResult.snapshots``, ``snapshot_model(s)``), each cached as its
own entry under the run's key plus ``{"snapshot": s}``. They do not change the run: the same configs
give the same final weights with or without snapshots. A call whose final entry is cached but some
snapshot is not retrains (resuming only from a partial state no later than the first missing
snapshot) and writes the missing ones.

What fixes a run's numbers and what its history records: :mod:`analysis.training.train_loop`; the schedule and
the optimiser: :mod:`analysis.training.optim`; the configs: :mod:`analysis.training.train_config`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np
import torch

from analysis.core.devices import resolve_device, train_key_extra
from analysis.training.checkpoints import CheckpointCache, checkpoint_key, history_from_json, history_to_json
from analysis.training.train_config import TrainConfig, TrainResult
from analysis.training.train_loop import _deterministic, _train_loop
from analysis.zoo.model import ModelConfig, TinyTransformer

log = logging.getLogger(__name__)

# Bump whenever a change to the trainer (this module, train_loop, train_state, optim, train_config) changes the
# numbers a training run produces (update order, schedule, optimiser details, data sampling order...). It is part
# of every cache key, so old checkpoints are then simply not found instead of being silently reused.
TRAINER_VERSION = "1"

# the sets that record_checkpoints() blocks collect training-run keys into (innermost last)
_RECORDERS: ContextVar[tuple[set[str], ...]] = ContextVar("workbench_checkpoint_recorders", default=())


@contextmanager
def record_checkpoints() -> Iterator[set[str]]:
    """Collect the key of every training run that :func:`train` is asked for inside the block.

    The keys are run keys (a run's snapshots share it, see :func:`analysis.training.cache.run_key`), whether the
    weights came from the cache or were trained. Blocks nest: an outer block sees the runs of inner ones.
    ``probes.run_probe`` records them in ``Result.meta["checkpoints"]``, which is how ``python -m probes
    cache prune --keep-figures`` keeps the checkpoints that a figure's results were computed from.
    """
    used: set[str] = set()
    token = _RECORDERS.set((*_RECORDERS.get(), used))
    try:
        yield used
    finally:
        _RECORDERS.reset(token)


def _resolve_cache(cache: CheckpointCache | str | None) -> CheckpointCache | None:
    if cache is None or isinstance(cache, CheckpointCache):
        return cache
    if cache == "default":
        return CheckpointCache()
    raise ValueError(f"cache must be None, 'default' or a CheckpointCache, got {cache!r}")


def train(
    model_cfg: ModelConfig,
    task,
    train_cfg: TrainConfig,
    *,
    device: str | torch.device = "cpu",
    cache: CheckpointCache | str | None = "default",
    progress: bool = True,
    resume: bool = True,
    callback: Callable[[int, torch.nn.Module, dict[str, float]], dict | None] | None = None,
    callback_id: str | None = None,
    snapshots: Iterable[int] = (),
) -> TrainResult:
    """Train ``TinyTransformer(model_cfg)`` on ``task`` with ``train_cfg``, or load it from ``cache``.

    ``cache``: a ``CheckpointCache``, ``"default"`` (the workbench cache) or ``None`` (no caching, no
    resuming). ``resume=False`` discards any partial state and starts from update 0.

    ``callback(step, model, metrics)`` is called once per update, after the backward pass and before
    the optimiser moves the weights: ``model`` holds the weights after ``step`` updates (the ones the
    loss in ``metrics = {"loss", "lr", "grad_norm"}`` was measured on) and its ``.grad`` fields hold
    the unclipped gradients. It runs under ``torch.no_grad()``, must not modify the model, and may
    return a dict of scalars, recorded in the history under their names (NaN at steps where a name
    is absent). Its values cannot be recomputed from a cached entry, so a run with a callback reads
    the cache only when ``callback_id`` names the callback (the id is part of the key; change it when
    the callback changes); without an id it always trains and does not touch the cache.

    ``snapshots``: update counts ``0 <= s <= steps`` whose weights are returned too (see the module
    docstring); ``TrainResult.snapshots`` maps each to its state dict.
    """
    if not isinstance(model_cfg, ModelConfig):
        raise ValueError(f"model_cfg must be a ModelConfig, got {type(model_cfg).__name__}")
    if not isinstance(train_cfg, TrainConfig):
        raise ValueError(f"train_cfg must be a TrainConfig, got {type(train_cfg).__name__}")
    t0 = time.perf_counter()
    cache = _resolve_cache(cache)
    if callback is not None and callback_id is None:
        cache = None
    task_cfg = task.config()
    device = resolve_device(device)
    extra = {**({} if callback_id is None else {"callback": callback_id}), **(train_key_extra(device) or {})} or None
    key = checkpoint_key(model_cfg, task_cfg, train_cfg, trainer_version=TRAINER_VERSION, extra=extra)
    for used in _RECORDERS.get():
        used.add(key)
    snap_steps = _check_snapshots(snapshots, train_cfg.steps)
    snap_keys = {
        s: checkpoint_key(
            model_cfg, task_cfg, train_cfg, trainer_version=TRAINER_VERSION, extra=dict(extra or {}, snapshot=s)
        )
        for s in snap_steps
    }
    meta_base = {
        "model": model_cfg.to_dict(),
        "task": task_cfg,
        "train": train_cfg.to_dict(),
        "trainer_version": TRAINER_VERSION,
        "callback_id": callback_id,
    }

    def fit(have: dict[int, dict[str, torch.Tensor]]) -> TrainResult:
        missing = tuple(s for s in snap_steps if s not in have)
        with _deterministic():
            model, history, resumed_from, taken = _train_loop(
                model_cfg,
                task,
                train_cfg,
                device,
                cache,
                key,
                progress,
                resume,
                callback,
                missing,
                lambda s, state: (
                    s == train_cfg.steps  # the final weights are the run's own entry
                    or _save_state(cache, snap_keys[s], state, dict(meta_base, snapshot_step=s))
                ),
            )
        wall = time.perf_counter() - t0
        meta = dict(meta_base, history=history_to_json(history), wall_time=wall, resumed_from=resumed_from)
        if cache is not None:
            cache.save(key, model, meta)
            cache.remove_partial(key)
        return TrainResult(model.eval(), history, False, key, wall, resumed_from, meta, {**have, **taken})

    if cache is None:
        return fit({})
    # A first look without the lock (entries are replaced whole, and a read-only cache still serves its
    # entries); on a miss, look again holding the key's lock: another process may have just trained it.
    found = _lookup(cache, key, snap_keys, model_cfg, train_cfg.steps, device, t0, repair=False)
    if isinstance(found, TrainResult):
        return found
    with cache.lock(key):
        found = _lookup(cache, key, snap_keys, model_cfg, train_cfg.steps, device, t0, repair=True)
        if isinstance(found, TrainResult):
            return found
        return fit(found)


def _lookup(
    cache: CheckpointCache,
    key: str,
    snap_keys: dict[int, str],
    model_cfg: ModelConfig,
    steps: int,
    device,
    t0: float,
    repair: bool,
) -> TrainResult | dict[int, dict[str, torch.Tensor]]:
    """The cached run when its final entry and every snapshot are there; else the snapshots found."""
    hit = cache.load(key, device=device, repair=repair)
    if hit is not None and "history" not in hit[1]:
        if repair:
            log.warning("checkpoint cache: entry %s has no training history; retraining", key)
        hit = None
    final = None if hit is None else hit[0]
    snaps = {s: (final if s == steps else _load_state(cache, k, device, repair)) for s, k in snap_keys.items()}
    if hit is not None and all(v is not None for v in snaps.values()):
        state, meta = hit
        model = TinyTransformer(model_cfg, device=device)
        model.load_state_dict(state, strict=True)
        history = history_from_json(meta["history"])
        return TrainResult(model.eval(), history, True, key, time.perf_counter() - t0, 0, meta, snaps)
    have = {s: v for s, v in snaps.items() if v is not None}
    missing = [s for s in snap_keys if s not in have]
    if missing and repair:
        log.info("checkpoint cache: snapshots %s of %s are missing; training to take them", missing, key)
    return have


def _check_snapshots(snapshots: Iterable[int], steps: int) -> tuple[int, ...]:
    if isinstance(snapshots, (str, bytes)) or not isinstance(snapshots, Iterable):
        raise ValueError(f"snapshots must be a sequence of update counts, got {snapshots!r}")
    out = []
    for s in snapshots:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or not 0 <= int(s) <= steps:
            raise ValueError(f"snapshots must be integers in [0, steps = {steps}], got {s!r}")
        out.append(int(s))
    return tuple(sorted(set(out)))


def _load_state(cache: CheckpointCache, key: str, device, repair: bool = True) -> dict[str, torch.Tensor] | None:
    hit = cache.load(key, device=device, repair=repair)
    return None if hit is None else hit[0]


def _save_state(cache: CheckpointCache | None, key: str, state: dict[str, torch.Tensor], meta: dict) -> None:
    if cache is not None:
        with cache.lock(key):  # a snapshot is its own entry: `prune` must not take it half-written
            cache.save_state(key, state, meta)
