"""Running a sweep's points: each one through the result cache (:func:`_run_point`, which never raises: a failing
point is returned as its one-line error), with ``threads`` torch threads, serially in this process
(:func:`_run_serial`) or on the workers of a ``distributed.Client`` (:func:`_run_client`), where a ``device="cuda"``
point runs on a worker that declares the ``GPU`` resource, one point per GPU."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import torch

from analysis.core.progress import bar
from analysis.probing import registry
from analysis.probing.contract import get
from analysis.probing.result_cache import cached_run
from analysis.probing.sweep_plan import Plan

ERROR_CHARS = 500  # a point's error message is cut to this many characters
GPU_RESOURCE = "GPU"  # the Dask worker resource a device="cuda" point needs one of


@contextlib.contextmanager
def _torch_threads(n: int | None) -> Iterator[None]:
    """Torch uses ``n`` threads inside (restored after); ``None`` leaves it alone."""
    if n is None:
        yield
        return
    old = torch.get_num_threads()
    if old != n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if torch.get_num_threads() != old:
            torch.set_num_threads(old)


def one_line(err: BaseException) -> str:
    """``Type: message`` on one line, at most ``ERROR_CHARS`` characters."""
    text = f"{type(err).__name__}: {' '.join(str(err).split())}".rstrip(": ")
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 3] + "..."


def _run_point(probe: Any, config: dict[str, Any], cache_root: str | None, threads: int | None) -> dict[str, Any]:
    """Run one point through the result cache; never raises (an error is returned as one line).

    ``probe`` is a name (workers look it up in their registry) or, serially, the module itself.
    """
    try:
        if isinstance(probe, str):
            module = get(probe)
        else:
            module = probe
        cfg = module.Config.from_dict(config)
        if _on_gpu(cfg):
            _bind_gpu()
        with _torch_threads(threads):
            result = cached_run(module, cfg, cache_root=cache_root, progress=False)
        return {
            "ok": True,
            "scalars": dict(result.scalars),
            "data": result.data,
            "claims": [(c.context, c.name, c.status) for c in result.ledger.claims],
            "broken": [c.name for c in result.ledger.broken],
            "cache_key": result.meta.get("cache_key"),
            "from_cache": bool(result.from_cache),
        }
    except Exception as e:  # a failing point is recorded; the sweep goes on
        return {"ok": False, "error": one_line(e)}


def _bind_gpu() -> None:
    """On a Dask worker named by an integer (a ``LocalCluster``'s workers are 0, 1, ...) that declares the
    ``GPU`` resource, make GPU ``name % count`` torch's current device, so a local cluster of one worker per
    GPU runs one point per GPU. Workers started by hand pick their GPU with ``CUDA_VISIBLE_DEVICES``."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):  # not on a worker
        return
    count = torch.cuda.device_count()
    if count and worker.state.total_resources.get(GPU_RESOURCE, 0) >= 1 and isinstance(worker.name, int):
        torch.cuda.set_device(worker.name % count)


def _on_gpu(cfg: Any) -> bool:
    return getattr(cfg, "device", "cpu") == "cuda"


def needs_gpu(p: Plan) -> bool:
    """Whether any point asks for ``device="cuda"`` (those run only on workers with the ``GPU`` resource)."""
    return any(_on_gpu(cfg) for cfg in p.configs)


def _check_gpu_workers(client: Any) -> None:
    workers = client.scheduler_info().get("workers", {})
    if not any(w.get("resources", {}).get(GPU_RESOURCE, 0) >= 1 for w in workers.values()):
        raise ValueError(
            f"device='cuda' points run one per GPU on workers that declare the {GPU_RESOURCE} resource, and none of "
            f"the {len(workers)} worker(s) does: start each GPU worker with `dask worker ADDRESS --nthreads 1 "
            f"--resources {GPU_RESOURCE}=1` (CUDA_VISIBLE_DEVICES=i for GPU i)"
        )


def _run_serial(p: Plan, cache_root: str | None, threads: int | None, progress: bool) -> list[dict]:
    outcomes = []
    with bar(total=len(p.configs), progress=progress, desc=f"sweep {p.name}", unit="point") as pbar:
        for cfg in p.configs:
            outcomes.append(_run_point(p.module, cfg.to_dict(), cache_root, threads))
            pbar.update()
    return outcomes


def _run_client(p: Plan, client: Any, cache_root: str | None, threads: int | None, progress: bool) -> list[dict]:
    from distributed import as_completed

    if registry.registered(p.name) is not None:
        raise ValueError(
            f"probe {p.name} was added with probes.register(): it exists in this process only; "
            "sweep it with client=None or make it importable (WORKBENCH_PROBES)"
        )
    if needs_gpu(p):
        _check_gpu_workers(client)
    token = uuid.uuid4().hex[:8]
    futures = {}
    for i, cfg in enumerate(p.configs):
        gpu = {"resources": {GPU_RESOURCE: 1}} if _on_gpu(cfg) else {}
        fut = client.submit(
            _run_point,
            p.name,
            cfg.to_dict(),
            cache_root,
            threads,
            pure=False,
            key=f"sweep-{p.name}-{token}-{i}",
            **gpu,
        )
        futures[fut] = i
    outcomes: list[dict | None] = [None] * len(p.configs)
    try:
        with bar(total=len(p.configs), progress=progress, desc=f"sweep {p.name}", unit="point") as pbar:
            for fut in as_completed(list(futures)):
                i = futures[fut]
                try:
                    outcomes[i] = fut.result()
                except Exception as e:  # the worker died (KilledWorker), the task could not be sent...
                    outcomes[i] = {"ok": False, "error": one_line(e)}
                fut.release()
                pbar.update()
    finally:
        pending = [f for f in futures if not f.done()]
        if pending:  # interrupted: do not leave work queued on a shared scheduler
            client.cancel(pending)
    return outcomes  # type: ignore[return-value]
