"""Part ``sigmoid_trained`` (seed 000#17): sigmoid attention (b = -ln T and b = 0) trained beside softmax on the
training sweep's task and seeds."""

from __future__ import annotations

import math

import numpy as np

from analysis.claims.evidence import replicate_seed
from analysis.claims.ledger import Ledger
from analysis.core.progress import bar
from analysis.probing.base import Result
from analysis.probing.parts import Context, each_claim, measured
from analysis.training.train import train
from probes.attention_entropy.config import Config
from probes.attention_entropy.models import model_config
from probes.attention_entropy.shared import (
    band_text,
    train_config,
    training_task,
)
from probes.attention_entropy.training import TrainedSweep

DESCRIPTION = "sigmoid attention trained beside softmax on the training sweep's task and seeds"
GATE = "training"
NEEDS = ("training",)

SIG_VARIANTS = ("softmax", "sigmoid_ln_t", "sigmoid_zero")  # softmax | sigmoid b = -ln T | sigmoid b = 0
SIGMOID_TRAINED_SOURCE = (
    "000#17 (Ramapuram et al. 2024): sigmoid attention with b = -ln n trains to the loss of softmax attention"
)


def sigmoid_trained_sweep(config: Config, tr: dict | None, progress: bool = True) -> dict[str, np.ndarray]:
    """Softmax and sigmoid attention (b = -ln T, T = train_seq_len, and b = 0) on the training sweep's task with its
    model, steps, schedule and seeds at ``sigmoid_lr``: per (variant, seed) the training loss trace and the final
    loss (mean of the last 20 updates, as the sweep's). The softmax runs are the sweep's own when it trained
    ``sigmoid_lr`` without QK-norm (``tr``), else trained here."""
    S, T = config.train.seeds, config.train.steps
    out = {"trace": np.full((len(SIG_VARIANTS), S, T), np.nan)}
    task = training_task(config)
    biases = {"sigmoid_ln_t": -math.log(config.train.seq_len), "sigmoid_zero": 0.0}
    shared = tr is not None and config.sigmoid_lr in config.train.lrs and False in config.qk_norm
    runs = [(v, t) for v in range(len(SIG_VARIANTS)) for t in range(S)]
    for v, t in bar(runs, progress=progress, desc="sigmoid training", leave=False):
        variant, seed = SIG_VARIANTS[v], replicate_seed(config.seed, t)  # the training sweep's seed t
        if variant == "softmax" and shared:
            out["trace"][v, t] = tr["trace_loss"][
                config.qk_norm.index(False), config.train.lrs.index(config.sigmoid_lr), t
            ]
            continue
        cfg = model_config(config, vocab=task.vocab_size, qk_norm=False).replace(seed=seed, attention="softmax")
        if variant != "softmax":
            cfg = cfg.replace(attention="sigmoid", sigmoid_bias=biases[variant])
        res = train(
            cfg, task, train_config(config, config.sigmoid_lr, seed), device=config.torch_device(), progress=False
        )
        out["trace"][v, t] = res.history["loss"]
    out["final_loss"] = out["trace"][..., -20:].mean(-1)
    return out


def sigmoid_trained_arrays(config: Config, st: dict) -> tuple[dict, dict]:
    """``(arrays, coords)`` of :func:`sigmoid_trained_sweep`."""
    data = {
        "sigmoid_trained_trace": (("sig_variant", "train_seed", "step"), st["trace"]),
        "sigmoid_trained_loss": (("sig_variant", "train_seed"), st["final_loss"]),
    }
    coords = {
        "sig_variant": list(SIG_VARIANTS),
        "train_seed": np.arange(config.train.seeds),
        "step": np.arange(config.train.steps),
    }
    return data, coords


def measure(ctx: Context) -> None:
    if ctx.own_model:
        st = sigmoid_trained_sweep(ctx.config, ctx.get(TrainedSweep).runs, progress=ctx.progress)
        data, coords = sigmoid_trained_arrays(ctx.config, st)
        ctx.data.update(data)
        ctx.coords.update(coords)


def claim_sigmoid_trained(led: Ledger, r: Result) -> None:
    """Sigmoid attention (000#17) trained: with b = -ln T its final loss matches softmax's (ratio 1; alternative:
    the b = 0 model's ratio), and the bias lowers the trained loss against b = 0. Seed-paired."""
    ds, config = r.data, r.config
    names = ("sigmoid_trained_loss_ratio", "sigmoid_trained_bias_lowers_loss")
    loss = ds["sigmoid_trained_loss"]
    if not np.isfinite(loss.values).all():
        for name in names:  # both recorded with the loss ratio's source
            led.judge(name, reason="a training run diverged (no loss)", source=SIGMOID_TRAINED_SOURCE)
        return
    soft = loss.sel(sig_variant="softmax").values
    ln_t, zero = loss.sel(sig_variant="sigmoid_ln_t").values, loss.sel(sig_variant="sigmoid_zero").values
    T, S = config.train.seq_len, config.train.seeds
    setting = f"{config.train.data}, {config.train.steps} updates at lr {config.sigmoid_lr:g}, T = {T}"
    led.judge(
        names[0],
        replicates=ln_t / soft,
        expected=1.0,
        alternative=float(np.mean(zero / soft)),
        why=f"{band_text(S)} of the per-seed ratio (each seed trains all three models on the same data)",
        statement=f"{setting}: final loss sigmoid (b = -ln T) / softmax = 1 (mean of the last 20 updates; "
        f"softmax {soft.mean():.4f}, sigmoid {ln_t.mean():.4f}, b = 0 {zero.mean():.4f})",
    )
    led.judge(
        names[1],
        replicates=np.log(zero / ln_t),
        why=f"{band_text(S)} of the paired log ratio",
        statement=f"{setting}: ln(final loss at b = 0 / at b = -ln T) > 0",
    )


claims = each_claim(claim_sigmoid_trained, when=measured("sigmoid_trained_loss"))
