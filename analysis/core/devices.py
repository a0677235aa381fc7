"""Where tensors live: the ``device`` knob of every probe (``cpu`` | ``cuda`` | ``auto``).

``resolve_device("auto")`` is CUDA when torch sees a GPU, else the CPU; ``"cuda"`` without a GPU is a
``ValueError`` naming the field, raised when a run starts (a config naming ``cuda`` may be built on a
machine without a GPU and run on one that has it, e.g. a Dask worker).

What follows the device and what does not:

* **Random draws stay on the CPU.** Every generator of the workbench is a CPU ``torch.Generator`` or a
  numpy one; tasks draw there and move the batch (``task.sample(..., device=...)``), and models are
  initialised on the CPU then moved (:class:`analysis.zoo.model.TinyTransformer`). A seed therefore fixes
  the same data and the same initial weights on every device; only the arithmetic differs.
* **Checkpoints are device-independent files**: safetensors of CPU tensors that load onto any device.
  Their *key* names the device type that trained them when it is not the CPU
  (:func:`train_key_extra`), because GPU kernels round differently: a CPU run never reads weights a
  GPU trained, so CPU numbers do not depend on what a GPU did before. CPU keys are as they always were.
* **Closed forms stay float64 numpy** on the CPU; measurements come back with :func:`to_numpy`.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import torch

DEVICES = ("cpu", "cuda", "auto")


def cuda_available() -> bool:
    return bool(torch.cuda.is_available())


def resolve_device(name: str | torch.device, field: str = "device") -> torch.device:
    """The ``torch.device`` for a config's ``device`` value; ``field`` names the option in errors."""
    if isinstance(name, torch.device):
        return name
    if name not in DEVICES:  # an explicit torch device string ("cuda:1") from library callers
        try:
            return torch.device(name)
        except (RuntimeError, TypeError):
            raise ValueError(f"{field} must be one of {', '.join(DEVICES)}, got {name!r}") from None
    if name == "cpu" or (name == "auto" and not cuda_available()):
        return torch.device("cpu")
    if not cuda_available():
        raise ValueError(f"{field}='cuda' but torch sees no CUDA device here; allowed: cpu, auto")
    # the trainer runs with torch.use_deterministic_algorithms(True), which on CUDA needs a fixed cuBLAS
    # workspace; it must be set before cuBLAS starts (the first GPU matmul of the process)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    return torch.device("cuda", torch.cuda.current_device())


def train_key_extra(device: str | torch.device) -> dict[str, str] | None:
    """What a checkpoint key adds for the device that trains: nothing on the CPU (keys as before),
    ``{"device": "cuda"}`` elsewhere."""
    kind = torch.device(device).type
    return None if kind == "cpu" else {"device": kind}


def to_numpy(t: Any) -> np.ndarray:
    """A tensor (on any device, with or without grad) as a numpy array on the host."""
    if isinstance(t, torch.Tensor):
        return t.detach().cpu().numpy()
    return np.asarray(t)


def synchronize(device: torch.device) -> None:
    """Wait for queued kernels (timing on a GPU); a no-op on the CPU."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def model_device(model: Any) -> torch.device:
    """The device of a model's parameters (the CPU for a model without any)."""
    p = next(iter(model.parameters()), None) if hasattr(model, "parameters") else None
    return torch.device("cpu") if p is None else p.device
