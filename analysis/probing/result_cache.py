"""Running a probe and the result cache.

:func:`run_probe` runs a probe with the framework's checks around it (its model against ``REQUIRES``, what ``run``
returns, the elapsed time and device in ``meta``). :func:`cached_run` serves a probe's result from the
content-addressed result cache (``<cache_dir()>/results/<probe>/<key>/``, key from :func:`cache_key`), else runs and
stores it; a corrupt entry is reported, removed and recomputed, and every hit is judged again by today's claims
(:func:`judged`).
"""

from __future__ import annotations

import os
import shutil
import time
import warnings
from pathlib import Path
from typing import Any

from analysis.core.devices import model_device
from analysis.core.io import content_hash, entry_lock, touch, write_error
from analysis.core.paths import cache_dir
from analysis.probing.config import ProbeConfig
from analysis.probing.contract import _resolve, _resolve_config, check_model_compat
from analysis.probing.result import FORMAT_VERSION, CorruptResultError, Result
from analysis.training.cache import RESULT_KEY_LENGTH
from analysis.training.train import record_checkpoints


def run_probe(module_or_name: Any, config: Any = None, model: Any = None, progress: bool = True) -> Result:
    """Run a probe with the framework's checks around it.

    ``config`` is a ``Config``, a preset name, a dict of field values, or None (the defaults). A
    ``model``, if given, is checked against the probe's ``REQUIRES`` first. The result's version
    and ``meta["elapsed_s"]`` are filled in.
    """
    module, name = _resolve(module_or_name)
    config = _resolve_config(module, name, config)
    if model is not None:
        check_model_compat(name, model, module.REQUIRES)
    device = config.torch_device() if model is None else model_device(model)  # ValueError: cuda without a GPU
    start = time.perf_counter()
    with record_checkpoints() as trained:
        result = module.run(config, model=model, progress=progress)
    elapsed = time.perf_counter() - start
    if not isinstance(result, Result):
        raise TypeError(f"probe {name}: run() must return a analysis.probing.base.Result, got {type(result).__name__}")
    if result.probe != name:
        raise ValueError(f"probe {name}: run() returned a Result for probe {result.probe!r}")
    if not result.version:
        result.version = module.VERSION
    result.meta.setdefault("elapsed_s", elapsed)
    result.meta.setdefault("device", str(device))
    if trained:  # the training runs it used, for `cache prune --keep-figures`
        result.meta.setdefault("checkpoints", sorted(trained))
    return result


def cache_key(module_or_name: Any, config: Any = None) -> str:
    """Content hash of (probe name, probe VERSION, storage format, config values)."""
    module, name = _resolve(module_or_name)
    config = _resolve_config(module, name, config)
    return content_hash(
        {"probe": name, "version": module.VERSION, "format": FORMAT_VERSION, "config": config.to_dict()},
        length=RESULT_KEY_LENGTH,
    )


def results_cache_dir() -> Path:
    return cache_dir() / "results"


def cached_run(
    module_or_name: Any,
    config: Any = None,
    cache_root: str | os.PathLike | None = None,
    progress: bool = True,
    refresh: bool = False,
) -> Result:
    """The probe's result for ``config``, from the cache when present, else run and stored.

    Entries live in ``<cache_root or cache_dir()/"results">/<probe>/<key>/`` with ``key`` from
    :func:`cache_key`. A corrupt entry (files not matching the manifest, unreadable, or saved for
    another key) is reported with a warning, removed and recomputed. ``refresh=True`` recomputes
    regardless. Runs through the cache never take a model: the config must determine everything.

    Two processes asking for the same entry at once compute it once: a miss is looked up again while
    holding the entry's lock (:func:`analysis.core.io.entry_lock`, beside the entry), and the probe runs
    and is saved under that lock. A hit needs no lock (entries are replaced whole), so a read-only
    cache serves what it holds; a miss there raises ``OSError`` naming the lock file before any
    computation. A hit refreshes the entry folder's modification time (its last use, for
    ``python -m probes cache prune --older-than``).
    """
    module, name = _resolve(module_or_name)
    config = _resolve_config(module, name, config)
    key = cache_key(module, config)
    folder = Path(cache_root) if cache_root is not None else results_cache_dir()
    folder = folder / name / key
    if not refresh and (hit := _cached_result(folder, module.Config, name, key, repair=False)) is not None:
        return _judge(module, name, hit)
    with entry_lock(folder):
        if not refresh and (hit := _cached_result(folder, module.Config, name, key, repair=True)) is not None:
            return _judge(module, name, hit)
        result = run_probe(module, config, progress=progress)
        result.meta["cache_key"] = key
        try:
            result.save(folder)
        except OSError as err:
            raise write_error(folder, err, "result cache entry") from err
    return result


def judged(module_or_name: Any, result: Result) -> Result:
    """``result`` with its ledger judged again by today's claims: the probe's ``check_claims(result)``.

    A probe's claims read only its result (config, arrays, scalars, meta), so a result from the cache is
    judged by the claim code of today, not of the day it was computed: adding or correcting a claim needs
    no recompute and no ``VERSION`` bump (``VERSION`` is bumped when the *measurement* changes). A probe
    without ``check_claims`` keeps the stored ledger (brought to today's stability and triage rules by
    :meth:`Result.load`). The result is changed in place and returned.
    """
    module, name = _resolve(module_or_name)
    return _judge(module, name, result)


def _judge(module: Any, name: str, result: Result) -> Result:
    """:func:`judged` for a module already checked against the contract (:func:`cached_run` resolved it)."""
    if result.probe != name:
        raise ValueError(f"cannot judge a result of probe {result.probe!r} with the claims of {name!r}")
    check = getattr(module, "check_claims", None)
    if check is not None:
        result.ledger = check(result)
    return result


def _cached_result(folder: Path, config_cls: type[ProbeConfig], name: str, key: str, repair: bool) -> Result | None:
    """The verified entry in ``folder``, or None. A damaged one is left alone unless ``repair`` (then it is
    reported and deleted); without the lock it may just be being replaced by another process."""
    if not folder.exists():
        return None
    try:
        result = Result.load(folder, config_cls=config_cls)
        if result.meta.get("cache_key") != key or result.probe != name:
            raise CorruptResultError(f"{folder} was saved for another key or probe")
    except CorruptResultError as e:
        if repair:
            warnings.warn(f"recomputing corrupt cache entry: {e}", RuntimeWarning, stacklevel=3)
            shutil.rmtree(folder, ignore_errors=True)
        return None
    touch(folder)
    result.from_cache = True
    return result
