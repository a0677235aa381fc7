"""What a training run is given and what it returns: :class:`TrainConfig` (the optimiser, the schedule, the data
seed), :class:`TrainResult`, and the presets the probes and recipes train with (:func:`tiny_lm_preset`,
:func:`probe_lm_train_config`).

The schedule and the optimiser a config names are in :mod:`analysis.training.optim`; what fixes a run's numbers
and what its history records, in :mod:`analysis.training.train_loop`; caching, resuming and snapshots, in
:mod:`analysis.training.train_run`.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
import torch

from analysis.core.config import BaseConfig, param
from analysis.core.validation import check_float, check_int
from analysis.data.corpus import CorpusSpec
from analysis.data.tasks import CorpusLM
from analysis.zoo.model import ModelConfig, TinyTransformer

Schedule = Literal["cosine", "constant"]
Optimizer = Literal["adamw", "adam", "sgd", "muon"]
SCHEDULES = typing.get_args(Schedule)
OPTIMIZERS = typing.get_args(Optimizer)
RESERVED_HISTORY = ("step", "loss", "lr", "grad_norm", "eval_step", "eval_loss")
MAX_BETA = 0.999999  # a moment decay rate of 1 never forgets (Adam's bias correction divides by zero)


@dataclass(frozen=True)
class TrainConfig(BaseConfig):
    """How a run trains (the optimiser, the schedule, the data seed); see :mod:`analysis.training.optim` for the
    schedule and the optimiser, :mod:`analysis.training.train_loop` for what the seeds fix.

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
    optimizer: Optimizer = param(
        "adamw", "adamw | adam | sgd | muon (Muon on the blocks' matrices, AdamW on the rest: analysis.training.muon)"
    )
    muon_lr: float = param(0.02, "peak learning rate of muon's matrices (the schedule's, times muon_lr / lr)",
                           omit_at_default=True)  # fmt: skip
    muon_momentum: float = param(0.95, "muon's Nesterov momentum", minimum=0.0, maximum=MAX_BETA, omit_at_default=True)

    def validate(self) -> None:
        """The field checks, then the strict bounds and the rules between fields."""
        super().validate()
        check_float("lr", self.lr, minimum=0.0, strict_minimum=True)
        check_float("eps", self.eps, minimum=0.0, strict_minimum=True)
        check_float("muon_lr", self.muon_lr, minimum=0.0, strict_minimum=True)
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
