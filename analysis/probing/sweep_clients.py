"""Dask clients for a sweep: :func:`local_client` (a ``LocalCluster`` of worker processes on this machine, one per GPU
with ``gpus=True``) and :func:`remote_client` (a running scheduler at ``tcp://HOST:PORT``). See "Schedulers" in
:mod:`analysis.probing.sweep`. ``dask`` and ``distributed`` are imported only when a client is made."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from analysis.probing.sweep_run import GPU_RESOURCE


@contextlib.contextmanager
def local_client(n_workers: int, gpus: bool = False, **cluster_kwargs: Any) -> Iterator[Any]:
    """A ``distributed.Client`` on a fresh ``LocalCluster`` of ``n_workers`` processes, one thread each
    (dashboard off, logs below ERROR silenced); both closed on exit. Worker processes are spawned: a
    script that calls this needs the usual ``if __name__ == "__main__":`` guard.

    ``gpus``: one worker per GPU torch sees (at most ``n_workers``), each declaring the ``GPU`` resource
    and computing on its own GPU, so ``device="cuda"`` points run one per GPU (``ValueError`` when torch
    sees none).

    The workers' statistical profiler (a sample of every thread's stack each 10 ms, for the dashboard) is
    off: the probes' tiny models spend much of their time in Python, where it competes for the GIL."""
    import logging

    import dask
    from distributed import Client, LocalCluster

    kwargs = dict(
        n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.ERROR
    )
    if gpus:
        count = torch.cuda.device_count()
        if not count:
            raise ValueError("device='cuda': torch sees no CUDA device here; allowed: cpu, auto")
        kwargs.update(n_workers=min(n_workers, count), resources={GPU_RESOURCE: 1})
    kwargs.update(cluster_kwargs)
    with dask.config.set({"distributed.worker.profile.enabled": False}):  # the nannies pass it to the workers
        cluster = LocalCluster(**kwargs)
    with cluster, Client(cluster) as client:
        yield client


@contextlib.contextmanager
def remote_client(address: str) -> Iterator[Any]:
    from distributed import Client

    try:
        client = Client(address, timeout=30)
    except (OSError, TimeoutError) as e:
        raise OSError(f"cannot connect to the dask scheduler at {address}: {e}") from e
    try:
        yield client
    finally:
        client.close()
