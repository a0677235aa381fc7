"""Deterministic training of a ``TinyTransformer`` on a task, cached by content hash, resumable.

What fixes the result. The initial weights are a function of ``model_cfg.seed`` (the model draws them
itself); the training batches are a function of ``train_cfg.seed`` (one ``torch.Generator`` used for
nothing else); the held-out evaluation batches come from the task's ``eval_batches`` or, failing
that, from a second generator whose seed is derived from ``train_cfg.seed``. The global RNG is never
touched. Training runs with ``torch.use_deterministic_algorithms(True)`` (the previous setting is
restored afterwards), so the same configs give bitwise-identical weights on the same machine with the
same torch build and thread count (floating-point reductions may be ordered differently elsewhere).

Optimisation. One update at step ``s = 0 .. steps-1`` uses the learning rate

    warm-up   (s < W):   lr(s) = lr * (s + 1) / W
    cosine    (s >= W):  lr(s) = lr_min + (lr - lr_min) * (1 + cos(pi * p)) / 2,
                         p = (s - W) / max(1, steps - 1 - W),   lr_min = min_lr_ratio * lr

so the first update already moves (lr / W), the peak ``lr`` is reached at ``s = W - 1`` and held at
``s = W``, and the last update uses exactly ``lr_min``. ``schedule="constant"`` keeps ``lr`` after the
warm-up. Weight decay is applied to every parameter with two or more dimensions (all weight
matrices, including the token/position embeddings and the read-out, as in nanoGPT) and never to
vectors (norm gains, biases): decaying a gain pulls the normalised stream towards zero, which is a
different model, not a regulariser. With ``optimizer="adamw"`` the decay is decoupled (Loshchilov &
Hutter); with ``"adam"`` and ``"sgd"`` it is the classical L2 term added to the gradient.
Gradients are clipped by their global L2 norm when ``grad_clip > 0``; the recorded ``grad_norm`` is
always the norm before clipping.

History. ``step`` counts updates already applied: the loss recorded at ``step = s`` is the training
loss of the weights after ``s`` updates, on the batch that update ``s`` then uses; ``eval_step = k``
means the held-out loss after ``k`` updates (evaluated at ``k = 0, eval_every, 2 eval_every, ...`` and
at ``k = steps``).

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
"""

from __future__ import annotations

import inspect
import itertools
import logging
import math
import time
import typing
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
import torch

from analysis.core.config import BaseConfig, param
from analysis.core.devices import resolve_device, train_key_extra
from analysis.core.io import content_hash
from analysis.core.progress import bar as progress_bar
from analysis.core.validation import check_float, check_int
from analysis.data.corpus import CorpusSpec
from analysis.data.tasks import CorpusLM
from analysis.training.checkpoints import CheckpointCache, checkpoint_key, history_from_json, history_to_json
from analysis.zoo.model import ModelConfig, TinyTransformer

log = logging.getLogger(__name__)

# Bump whenever a change to this file changes the numbers a training run produces (update order,
# schedule, optimiser details, data sampling order...). It is part of every cache key, so old
# checkpoints are then simply not found instead of being silently reused.
TRAINER_VERSION = "1"

Schedule = Literal["cosine", "constant"]
Optimizer = Literal["adamw", "adam", "sgd"]
SCHEDULES = typing.get_args(Schedule)
OPTIMIZERS = typing.get_args(Optimizer)
RESERVED_HISTORY = ("step", "loss", "lr", "grad_norm", "eval_step", "eval_loss")
MAX_BETA = 0.999999  # a moment decay rate of 1 never forgets (Adam's bias correction divides by zero)

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


@dataclass(frozen=True)
class TrainConfig(BaseConfig):
    """How a run trains (the optimiser, the schedule, the data seed); see the module docstring.

    ``to_dict()`` keys cached checkpoints (with the model and task configs and ``TRAINER_VERSION``),
    so names, order and defaults are fixed; ints given for float fields are kept as ints.
    """

    FLOATS_FROM_INTS: ClassVar[bool] = False

    steps: int = param(1000, "number of optimiser updates", minimum=1)
    batch_size: int = param(64, "sequences per update", minimum=1)
    lr: float = param(1e-3, "peak learning rate (> 0)")
    weight_decay: float = param(
        0.0, "decay on parameters with dim >= 2 (decoupled for adamw, L2 otherwise)", minimum=0.0
    )
    betas: tuple[float, float] = param(
        (0.9, 0.999), "Adam moment decay rates (unused by sgd)", minimum=0.0, maximum=MAX_BETA
    )
    eps: float = param(1e-8, "Adam denominator epsilon (> 0; unused by sgd)")
    momentum: float = param(0.0, "heavy-ball momentum of sgd (unused by adam/adamw)", minimum=0.0, maximum=MAX_BETA)
    warmup_steps: int = param(0, "linear warm-up length W <= steps: lr * (s + 1) / W for s < W", minimum=0)
    schedule: Schedule = param("cosine", "after warm-up: cosine decay to min_lr_ratio * lr | constant")
    min_lr_ratio: float = param(0.1, "final learning rate of the cosine, as a fraction of lr", minimum=0.0, maximum=1.0)
    grad_clip: float = param(1.0, "clip the global gradient L2 norm to this value; 0 = no clipping", minimum=0.0)
    seed: int = param(
        0, "seeds the data stream (and the derived held-out data); model init uses model_cfg.seed", minimum=0
    )
    eval_every: int = param(0, "held-out loss every this many updates (and at the end); 0 = never", minimum=0)
    eval_batches: int = param(
        4,
        "held-out batches per evaluation (at most; a task's eval_batches may give fewer); >= 1 when eval_every",
        minimum=0,
    )
    checkpoint_every: int = param(0, "save a resumable partial state every this many updates; 0 = never", minimum=0)
    optimizer: Optimizer = param("adamw", "adamw | adam | sgd")

    def validate(self) -> None:
        """The field checks, then the strict bounds and the rules between fields."""
        super().validate()
        check_float("lr", self.lr, minimum=0.0, strict_minimum=True)
        check_float("eps", self.eps, minimum=0.0, strict_minimum=True)
        check_int("warmup_steps", self.warmup_steps, maximum=self.steps)
        if self.eval_every:
            check_int("eval_batches", self.eval_batches, minimum=1)


@dataclass
class TrainResult:
    model: TinyTransformer  # trained model, in eval mode
    history: dict[str, np.ndarray]  # step, loss, lr, grad_norm, eval_step, eval_loss, callback scalars
    from_cache: bool  # True when the weights were loaded and no update ran
    key: str  # cache key of {model, task, train, trainer version}
    wall_time: float  # seconds spent in this call
    resumed_from: int = 0  # updates restored from a partial state (0: trained from the start)
    meta: dict = field(default_factory=dict, repr=False)  # the cache entry's meta (configs, versions)
    snapshots: dict[int, dict[str, torch.Tensor]] = field(default_factory=dict, repr=False)  # step -> weights

    def snapshot_model(self, step: int) -> TinyTransformer:
        """A ``TinyTransformer`` (eval mode) holding the weights after ``step`` updates of this run."""
        if step not in self.snapshots:
            raise ValueError(f"step {step!r} is not a snapshot of this run; taken: {sorted(self.snapshots)}")
        model = TinyTransformer(self.model.config, device=next(self.model.parameters()).device)
        model.load_state_dict(self.snapshots[step], strict=True)
        return model.eval()

    @property
    def final_loss(self) -> float:
        """Held-out loss after the last update if evaluated, else the last training loss."""
        if len(self.history.get("eval_loss", ())):
            return float(self.history["eval_loss"][-1])
        return float(self.history["loss"][-1])


# ------------------------------------------------------------------------------------------------
# Schedule and optimiser
# ------------------------------------------------------------------------------------------------
def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate of update ``step`` (0-based); see the module docstring for the formula."""
    W = cfg.warmup_steps
    if step < W:
        return cfg.lr * (step + 1) / W
    if cfg.schedule == "constant":
        return cfg.lr
    lr_min = cfg.min_lr_ratio * cfg.lr
    p = min(1.0, (step - W) / max(1, cfg.steps - 1 - W))
    return lr_min + (cfg.lr - lr_min) * 0.5 * (1.0 + math.cos(math.pi * p))


def make_optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    """Two parameter groups, in ``named_parameters`` order: matrices (decayed) and vectors (not)."""
    decay = [p for _, p in model.named_parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for _, p in model.named_parameters() if p.requires_grad and p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": cfg.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    # foreach=False: the same per-parameter loop on every device, so the arithmetic is the same.
    if cfg.optimizer == "adamw":
        return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, foreach=False)
    if cfg.optimizer == "adam":
        return torch.optim.Adam(groups, lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, foreach=False)
    return torch.optim.SGD(groups, lr=cfg.lr, momentum=cfg.momentum, foreach=False)


def derived_seed(seed: int, purpose: str) -> int:
    """A 63-bit seed for ``purpose`` derived from ``seed`` (independent streams per purpose)."""
    return int(content_hash({"seed": seed, "purpose": purpose}), 16) & ((1 << 63) - 1)


# ------------------------------------------------------------------------------------------------
# Resumable state: everything as tensors (safetensors) + JSON, never pickle
# ------------------------------------------------------------------------------------------------
def _pack_state(
    model: torch.nn.Module, opt: torch.optim.Optimizer, gen_state: torch.Tensor, done: int, history: dict
) -> tuple[dict[str, torch.Tensor], dict]:
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    tensors["data_generator"] = gen_state
    sd = opt.state_dict()
    scalars: dict[str, dict[str, Any]] = {}
    for idx, pstate in sd["state"].items():
        for name, value in pstate.items():
            if isinstance(value, torch.Tensor):
                tensors[f"optim.{idx}.{name}"] = value
            else:
                scalars.setdefault(str(idx), {})[name] = value
    state = {
        "step": done,
        "history": history_to_json({k: np.asarray(v) for k, v in history.items()}),
        "optim_param_groups": sd["param_groups"],
        "optim_scalars": scalars,
    }
    return tensors, state


def _unpack_state(
    tensors: dict[str, torch.Tensor], state: dict, model: torch.nn.Module, opt: torch.optim.Optimizer
) -> tuple[torch.Tensor, int, dict]:
    model.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")}, strict=True)
    opt_state: dict[int, dict[str, Any]] = {}
    for name, value in tensors.items():
        if name.startswith("optim."):
            _, idx, pname = name.split(".", 2)
            opt_state.setdefault(int(idx), {})[pname] = value
    for idx, values in state["optim_scalars"].items():
        opt_state.setdefault(int(idx), {}).update(values)
    groups = state["optim_param_groups"]
    for g in groups:  # JSON turned tuples into lists
        if "betas" in g:
            g["betas"] = tuple(g["betas"])
    opt.load_state_dict({"state": opt_state, "param_groups": groups})
    history = {k: list(v) for k, v in history_from_json(state["history"]).items()}
    return tensors["data_generator"], int(state["step"]), history


# ------------------------------------------------------------------------------------------------
# Training
# ------------------------------------------------------------------------------------------------
def _resolve_cache(cache: CheckpointCache | str | None) -> CheckpointCache | None:
    if cache is None or isinstance(cache, CheckpointCache):
        return cache
    if cache == "default":
        return CheckpointCache()
    raise ValueError(f"cache must be None, 'default' or a CheckpointCache, got {cache!r}")


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


def _restore_partial(
    cache, key, resume: bool, snap_steps: tuple[int, ...], cfg: TrainConfig, model, opt, gen, device
) -> tuple[int, dict[str, list], list[str]]:
    """Load the partial state of ``key`` into ``model``, ``opt`` and ``gen`` when there is a usable one.

    Returns ``(done, history, callback_names)``: the updates already applied (0 when starting afresh),
    the history so far and the callback metric names in it. ``resume=False`` discards any partial state;
    one taken after the first snapshot still missing is not used (the snapshot could not be taken).
    """
    hist: dict[str, list] = {name: [] for name in RESERVED_HISTORY}
    if cache is None:
        return 0, hist, []
    if not resume:
        cache.remove_partial(key)
        return 0, hist, []
    partial = cache.load_partial(key, device=device)
    if partial is not None and snap_steps and int(partial[1].get("step", 0)) > snap_steps[0]:
        log.info("partial state of %s is past the first snapshot (%d); training from update 0", key, snap_steps[0])
        partial = None
    if partial is None:
        return 0, hist, []
    gen_state, done, hist = _unpack_state(*partial, model, opt)
    gen.set_state(gen_state.cpu())
    log.info("resuming training %s from update %d of %d", key, done, cfg.steps)
    return done, hist, [k for k in hist if k not in RESERVED_HISTORY]


def _gradient_step(
    step: int, cfg: TrainConfig, model, task, opt, params, gen, device, dtype, callback
) -> tuple[dict[str, float], dict[str, float]]:
    """Everything of update ``step`` before the optimiser moves the weights: set the learning rate, draw
    the batch, backward, the gradient norm, the callback (its metrics checked) and the clipping.

    Returns ``(metrics, callback_metrics)``; the weights, the optimiser state and the history are unchanged.
    """
    lr = lr_at(step, cfg)
    for g in opt.param_groups:
        g["lr"] = lr
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


# ------------------------------------------------------------------------------------------------
# Presets
# ------------------------------------------------------------------------------------------------
def probe_lm_train_config(steps: int, seed: int) -> TrainConfig:
    """The short LM training the probes give their own tiny models (prompt forgetting, representational
    collapse): AdamW, batch 16, peak lr 3e-3 after a warm-up of min(50, steps/5), weight decay 0.01."""
    return TrainConfig(
        steps=steps, batch_size=16, lr=3e-3, warmup_steps=min(50, steps // 5), weight_decay=0.01, seed=seed
    )


def tiny_lm_preset(seed: int = 0) -> tuple[ModelConfig, Any, TrainConfig]:
    """``(model_cfg, task, train_cfg)`` of a small character-level LM on the standard-library corpus.

    3 pre-LN layers of width 128 (4 heads of 32, MLP 512, RoPE, GPT-2 init), context 64, batch 16,
    1500 AdamW updates (peak lr 3e-3, 100 warm-up steps, cosine to 3e-4, weight decay 0.1, clip 1).
    It sees about 1.5M tokens, a little over one pass of the ~0.95M-token train split. Chosen to finish
    in about two minutes on 2 CPU cores (~65 ms per update when the cores are free) while ending far
    below the corpus's unigram entropy, the loss of any model that ignores context; the measured
    numbers are in the benchmark records, not here. RoPE rather than learned positions: it trained
    faster here, and the model can be run on prompts longer than the training context.
    ``seed`` sets both the initial weights and the data stream.
    """
    task = CorpusLM(seq_len=64, corpus=CorpusSpec(encoding="char"))
    model_cfg = ModelConfig(
        vocab_size=task.vocab_size,
        d_model=128,
        n_layers=3,
        n_heads=4,
        pos="rope",
        max_len=64,
        norm="pre",
        init="gpt2",
        seed=seed,
    )
    train_cfg = TrainConfig(
        steps=1500,
        batch_size=16,
        lr=3e-3,
        warmup_steps=100,
        schedule="cosine",
        min_lr_ratio=0.1,
        weight_decay=0.1,
        betas=(0.9, 0.99),
        grad_clip=1.0,
        seed=seed,
        eval_every=250,
        eval_batches=8,
        checkpoint_every=250,
    )
    return model_cfg, task, train_cfg
