"""The learning-rate schedule and the optimiser a :class:`~analysis.training.train_config.TrainConfig` names.

One update at step ``s = 0 .. steps-1`` uses the learning rate

    warm-up   (s < W):   lr(s) = lr * (s + 1) / W
    cosine    (s >= W):  lr(s) = lr_min + (lr - lr_min) * (1 + cos(pi * p)) / 2,
                         p = (s - W) / max(1, steps - 1 - W),   lr_min = min_lr_ratio * lr

so the first update already moves (lr / W), the peak ``lr`` is reached at ``s = W - 1`` and held at
``s = W``, and the last update uses exactly ``lr_min``. ``schedule="constant"`` keeps ``lr`` after the
warm-up. Weight decay is applied to every parameter with two or more dimensions (all weight
matrices, including the token/position embeddings and the read-out, as in nanoGPT) and never to
vectors (norm gains, biases): decaying a gain pulls the normalised stream towards zero, which is a
different model, not a regulariser. With ``optimizer="adamw"`` the decay is decoupled (Loshchilov &
Hutter); with ``"adam"`` and ``"sgd"`` it is the classical L2 term added to the gradient; ``"muon"`` trains the
blocks' matrices with Muon and the rest with AdamW (:mod:`analysis.training.muon`).
Gradients are clipped by their global L2 norm when ``grad_clip > 0``; the recorded ``grad_norm`` is
always the norm before clipping.
"""

from __future__ import annotations

import math

import torch

from analysis.training.train_config import TrainConfig
from analysis.zoo.parameterisation import lr_multipliers


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


def set_lr(opt: torch.optim.Optimizer, lr: float) -> None:
    """Every group of ``opt`` at ``lr``, times the group's ``lr_mult`` where it has one (muP's per-parameter rates)."""
    for g in opt.param_groups:
        g["lr"] = lr * g["lr_mult"] if "lr_mult" in g else lr


def make_optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    """Two parameter groups, in ``named_parameters`` order: matrices (decayed) and vectors (not); for ``"muon"``
    the groups of :func:`analysis.training.muon.muon_optimizer`. Under muP or depth-muP
    (``ModelConfig.parameterisation``) each group also carries its ``lr_mult``
    (:func:`analysis.zoo.parameterisation.lr_multipliers`), which the trainer multiplies the schedule's rate by."""
    mults = lr_multipliers(model, cfg.optimizer)
    if cfg.optimizer == "muon":
        from analysis.training.muon import muon_optimizer

        return muon_optimizer(model, cfg)
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if all(m == 1.0 for m in mults.values()):
        groups = [
            {"params": [p for _, p in named if p.dim() >= 2], "weight_decay": cfg.weight_decay},
            {"params": [p for _, p in named if p.dim() < 2], "weight_decay": 0.0},
        ]
    else:  # muP / depth-muP: one group per (decayed?, multiplier), in order of first appearance
        keyed: dict[tuple[bool, float], list] = {}
        for n, p in named:
            keyed.setdefault((p.dim() >= 2, mults[n]), []).append(p)
        groups = [
            {"params": ps, "weight_decay": cfg.weight_decay if decayed else 0.0, "lr_mult": m}
            for (decayed, m), ps in keyed.items()
        ]
    # foreach=False: the same per-parameter loop on every device, so the arithmetic is the same.
    if cfg.optimizer == "adamw":
        return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, foreach=False)
    if cfg.optimizer == "adam":
        return torch.optim.Adam(groups, lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, foreach=False)
    return torch.optim.SGD(groups, lr=cfg.lr, momentum=cfg.momentum, foreach=False)
