"""The deterministic training loop: the updates of one run from update 0 or from a partial state, with its held-out
evaluations, callback metrics, snapshots and partial saves; the forward pass, loss and evaluation it uses.

What fixes the result. The initial weights are a function of ``model_cfg.seed`` (the model draws them
itself); the training batches are a function of ``train_cfg.seed`` (one ``torch.Generator`` used for
nothing else); the held-out evaluation batches come from the task's ``eval_batches`` or, failing
that, from a second generator whose seed is derived from ``train_cfg.seed``. The global RNG is never
touched. Training runs with ``torch.use_deterministic_algorithms(True)`` (the previous setting is
restored afterwards), so the same configs give bitwise-identical weights on the same machine with the
same torch build and thread count (floating-point reductions may be ordered differently elsewhere).

History. ``step`` counts updates already applied: the loss recorded at ``step = s`` is the training
loss of the weights after ``s`` updates, on the batch that update ``s`` then uses; ``eval_step = k``
means the held-out loss after ``k`` updates (evaluated at ``k = 0, eval_every, 2 eval_every, ...`` and
at ``k = steps``).

The schedule and the optimiser are in :mod:`analysis.training.optim`, the resumable state in
:mod:`analysis.training.train_state`; :func:`analysis.training.train_run.train` runs this loop on a cache miss.
"""

from __future__ import annotations

import inspect
import itertools
import logging
import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from analysis.core.io import content_hash
from analysis.core.progress import bar as progress_bar
from analysis.training.optim import lr_at, make_optimizer, set_lr
from analysis.training.train_config import RESERVED_HISTORY, TrainConfig
from analysis.training.train_state import _pack_state, _restore_partial
from analysis.zoo.model import TinyTransformer

log = logging.getLogger(__name__)


def derived_seed(seed: int, purpose: str) -> int:
    """A 63-bit seed for ``purpose`` derived from ``seed`` (independent streams per purpose)."""
    return int(content_hash({"seed": seed, "purpose": purpose}), 16) & ((1 << 63) - 1)


def _eval_data(task, cfg: TrainConfig, device, dtype) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The held-out batches, drawn once: the first ``cfg.eval_batches`` of the task's own
    ``eval_batches`` if it has them, else batches from a generator seeded by ``derived_seed``."""
    if cfg.eval_every == 0:
        return []
    if hasattr(task, "eval_batches"):
        accepted = inspect.signature(task.eval_batches).parameters
        kwargs = {"device": device, "dtype": dtype, "max_batches": cfg.eval_batches}
        kwargs = {k: v for k, v in kwargs.items() if k in accepted}
        batches: Iterable = task.eval_batches(cfg.batch_size, **kwargs)
        return list(itertools.islice(batches, cfg.eval_batches))
    gen = torch.Generator().manual_seed(derived_seed(cfg.seed, "eval"))
    return [task.sample(cfg.batch_size, gen, device=device, dtype=dtype) for _ in range(cfg.eval_batches)]


def forward(model: torch.nn.Module, task, x: torch.Tensor) -> torch.Tensor:
    """The model's output on a batch, with the task's attention bias if it defines one.

    A task may define ``attn_bias(T, device, dtype) -> Tensor | None`` (e.g. in-context regression
    hiding the query token from itself); since the bias is part of the task, its ``config()`` and so
    the cache key already cover it.
    """
    make_bias = getattr(task, "attn_bias", None)
    if make_bias is None:
        return model(x)
    p = next(model.parameters())
    return model(x, attn_bias=make_bias(x.shape[1], p.device, p.dtype))


def training_loss(model: torch.nn.Module, task, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The loss an update differentiates: the task's ``fused_loss(model, x, y)`` when it defines one and
    it applies to ``model`` (it returns None otherwise), else ``task.loss(forward(model, task, x), y)``.

    A fused loss is the same function computed by a hand-written path (e.g. :mod:`analysis.zoo.fused_lsa`);
    it agrees with the plain one to float rounding, not bit for bit, so a task that has one must name
    it in its ``config()``, which puts it in the checkpoint key.
    """
    fused = getattr(task, "fused_loss", None)
    if fused is not None:
        loss = fused(model, x, y)
        if loss is not None:
            return loss
    return task.loss(forward(model, task, x), y)


@torch.no_grad()
def evaluate(model: torch.nn.Module, task, batches: list[tuple[torch.Tensor, torch.Tensor]]) -> float:
    """Mean loss of ``model`` over ``batches``: per-batch mean losses weighted by batch size."""
    was_training = model.training
    model.eval()
    dev = next(model.parameters()).device
    losses = [float(task.loss(forward(model, task, x.to(dev)), y.to(dev))) for x, y in batches]
    sizes = [len(x) for x, _ in batches]
    model.train(was_training)
    return float(np.average(losses, weights=sizes)) if losses else math.nan


def _as_float(name: str, value: Any) -> float:
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(f"callback metric {name!r} must be a scalar, got shape {tuple(value.shape)}")
        return float(value.item())
    return float(value)


@contextmanager
def _deterministic() -> Iterator[None]:
    """Deterministic torch kernels inside the block (the previous settings restored after it).

    Deterministic mode also fills every new tensor with NaN (``torch.utils.deterministic.
    fill_uninitialized_memory``), so that a kernel reading memory it never wrote cannot make results depend
    on what was there before. Nothing the trainer runs reads such memory: the weights trained with the
    filling and without it are equal bit for bit (``tests/test_train.py``, every token mixer, the fused LSA
    path, and both optimisers), and a read would have shown as NaN in every trained number. So the block
    switches the filling off: it wrote every activation and gradient twice, 3-6% of a step (notebook 03's
    costliest training: 122 -> 118 ms per step, one thread)."""
    prev_det = torch.are_deterministic_algorithms_enabled()
    prev_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    prev_fill = torch.utils.deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(True)
    torch.utils.deterministic.fill_uninitialized_memory = False
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(prev_det, warn_only=prev_warn)
        torch.utils.deterministic.fill_uninitialized_memory = prev_fill


def _gradient_step(
    step: int, cfg: TrainConfig, model, task, opt, params, gen, device, dtype, callback
) -> tuple[dict[str, float], dict[str, float]]:
    """Everything of update ``step`` before the optimiser moves the weights: set the learning rate, draw
    the batch, backward, the gradient norm, the callback (its metrics checked) and the clipping.

    Returns ``(metrics, callback_metrics)``; the weights, the optimiser state and the history are unchanged.
    """
    lr = lr_at(step, cfg)
    set_lr(opt, lr)
    x, y = task.sample(cfg.batch_size, gen, device=device, dtype=dtype)
    loss = training_loss(model, task, x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    grads = [p.grad for p in params if p.grad is not None]
    grad_norm = torch.nn.utils.get_total_norm(grads, norm_type=2.0, foreach=False)
    metrics = {"loss": float(loss.item()), "lr": lr, "grad_norm": float(grad_norm.item())}
    extra = {}
    if callback is not None:
        with torch.no_grad():
            extra = callback(step, model, dict(metrics)) or {}
        for name in extra:
            if name in RESERVED_HISTORY:
                raise ValueError(f"callback metric name {name!r} is reserved ({list(RESERVED_HISTORY)})")
        extra = {name: _as_float(name, value) for name, value in extra.items()}
    if cfg.grad_clip > 0:
        torch.nn.utils.clip_grads_with_norm_(params, cfg.grad_clip, grad_norm, foreach=False)
    return metrics, extra


def _record(
    hist: dict[str, list], extra_names: list[str], step: int, metrics: dict[str, float], extra: dict[str, float]
) -> None:
    """Append update ``step`` to the history; a callback name seen for the first time gets NaN before."""
    hist["step"].append(step)
    for name in ("loss", "lr", "grad_norm"):
        hist[name].append(metrics[name])
    for name in extra:
        if name not in hist:  # first appearance: NaN for the steps before
            hist[name] = [math.nan] * (len(hist["step"]) - 1)
            extra_names.append(name)
    for name in extra_names:
        hist[name].append(extra.get(name, math.nan))


def _train_loop(
    model_cfg,
    task,
    cfg: TrainConfig,
    device,
    cache,
    key,
    progress,
    resume,
    callback,
    snap_steps: tuple[int, ...] = (),
    on_snapshot=None,
):
    model = TinyTransformer(model_cfg, device=device)
    model.train()
    # nothing probes while we train: softmax attention may take the fused kernel (hooks attached by a
    # callback still get materialised patterns); switched off again before the model is returned
    model.allow_fused = True
    dtype = model_cfg.torch_dtype
    opt = make_optimizer(model, cfg)
    params = [p for p in model.parameters() if p.requires_grad]
    gen = torch.Generator().manual_seed(cfg.seed)  # the data stream; used for nothing else
    eval_data = _eval_data(task, cfg, device, dtype)

    done, hist, extra_names = _restore_partial(cache, key, resume, snap_steps, cfg, model, opt, gen, device)
    resumed_from = saved = done  # `done`: updates applied so far
    gen_done = gen.get_state()  # the data stream's position after `done` updates
    taken: dict[int, dict[str, torch.Tensor]] = {}

    def snapshot(step: int) -> None:  # the weights after `step` updates
        if step in snap_steps and step not in taken:
            taken[step] = {k: v.detach().clone() for k, v in model.state_dict().items()}
            if on_snapshot is not None:
                on_snapshot(step, taken[step])

    def save_partial() -> None:
        nonlocal saved
        tensors, state = _pack_state(model, opt, gen_done, done, hist)
        cache.save_partial(key, tensors, state)
        saved = done

    def maybe_eval(step: int) -> None:
        due = step % cfg.eval_every == 0 or step == cfg.steps
        if due and not (hist["eval_step"] and hist["eval_step"][-1] == step):  # not already done before a resume
            value = evaluate(model, task, eval_data)
            hist["eval_step"].append(step)
            hist["eval_loss"].append(value)

    bar = progress_bar(total=cfg.steps, initial=done, progress=progress, desc="train", leave=False)
    in_update = False  # True while weights, optimiser, history and `done` may disagree
    try:
        for step in range(done, cfg.steps):
            snapshot(step)
            if cfg.eval_every:
                maybe_eval(step)
            metrics, extra = _gradient_step(step, cfg, model, task, opt, params, gen, device, dtype, callback)

            in_update = True
            opt.step()
            _record(hist, extra_names, step, metrics, extra)
            done, gen_done = step + 1, gen.get_state()
            in_update = False

            bar.update(1)
            if progress:
                bar.set_postfix(loss=f"{metrics['loss']:.4f}", refresh=False)
            if cache is not None and cfg.checkpoint_every and done % cfg.checkpoint_every == 0 and done < cfg.steps:
                save_partial()
        snapshot(cfg.steps)
        if cfg.eval_every:
            maybe_eval(cfg.steps)
    except KeyboardInterrupt:
        # Ctrl-C: keep every completed update. Outside `in_update` the weights, the optimiser and the
        # history describe `done` updates and `gen_done` is the data stream's position after them.
        if cache is not None and cfg.checkpoint_every and not in_update and done > saved:
            save_partial()
            log.warning("training interrupted after %d updates; state saved, the same call resumes", done)
        raise
    finally:
        bar.close()
        model.allow_fused = False

    history = {
        name: np.asarray(values, dtype=np.int64 if name in ("step", "eval_step") else np.float64)
        for name, values in hist.items()
    }
    return model, history, resumed_from, taken
