"""Part ``training``: tiny LMs trained over learning rates with and without QK-norm: the largest logit and the least
entropy along training, the spectral bound on trained weights, and entropy collapse."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from analysis.claims.evidence import replicate_seed
from analysis.claims.ledger import Ledger
from analysis.core.progress import bar
from analysis.probing.base import Result
from analysis.probing.parts import Context, each_claim, measured
from analysis.training.train import train
from probes.attention_entropy.config import Config
from probes.attention_entropy.models import model_config
from probes.attention_entropy.shared import (
    FLOAT32_ROW,
    band_text,
    measure_rows,
    spectral_bound_rows,
    train_config,
    training_task,
    worst_ratio,
)

DESCRIPTION = "tiny LMs trained over learning rates with and without QK-norm: logit growth and entropy collapse"
GATE = "training"
FIELDS = ("qk_norm", "train_lrs", "train_seeds", "train_steps")


@dataclass(frozen=True)
class TrainedSweep:
    """The trained sweep's runs (:func:`train_sweep`; None with a passed model), for the sigmoid comparison."""

    runs: Any


PROVIDES = (TrainedSweep,)

CALLBACK_ID = "attention_entropy.trace.v2"  # names the training callback (part of the checkpoint key)


def make_trace_callback(probe_batch: torch.Tensor):
    """Callback for :func:`analysis.training.train.train`: per update the largest |logit| and per-head mean H / ln n."""

    def callback(step: int, model, metrics: dict) -> dict:
        was_training = model.training
        model.eval()
        st = measure_rows(model, probe_batch, normalised=True)
        model.train(was_training)
        n = st["n"]  # (L, H, T)
        keep = n[0, 0] >= 2  # rows with a single key have H = 0 = ln 1
        ent_norm = (st["entropy"][..., keep] / np.log(n[..., keep])).mean(-1)  # (L, H)
        out = {"max_logit": float(st["absmax"].max()), "min_ent_norm": float(ent_norm.min())}
        head_max = st["absmax"].max(-1)  # (L, H)
        for (layer, h), v in np.ndenumerate(ent_norm):
            out[f"ent_norm_l{layer}_h{h}"] = float(v)
            out[f"max_logit_l{layer}_h{h}"] = float(head_max[layer, h])
        return out

    return callback


def loss_spikes(loss: np.ndarray, nats: float) -> int:
    """Updates whose loss exceeds the running minimum of the earlier losses by more than ``nats``."""
    run_min = np.minimum.accumulate(loss)
    return int(np.sum(loss[1:] > run_min[:-1] + nats))


def train_sweep(config: Config, progress: bool = True) -> dict[str, np.ndarray]:
    """Every (QK-norm, lr, training seed) run: traces (..., step), per-head traces (..., layer, head, step),
    final per-head entropies, loss spikes, and Zhai et al.'s bound on the trained checkpoint (slack, tightness)."""
    shape = (len(config.qk_norm), len(config.train.lrs), config.train.seeds)
    T = config.train.steps
    out = {k: np.full(shape + (T,), np.nan) for k in ("trace_max_logit", "trace_min_ent_norm", "trace_loss")}
    out["final_ent_norm"] = np.full(shape + (config.model.n_layers, config.model.n_heads), np.nan)
    for key in ("trace_head_max_logit", "trace_head_ent_norm"):
        out[key] = np.full(shape + (config.model.n_layers, config.model.n_heads, T), np.nan)
    out["spectral_slack"] = np.full(shape, np.nan)  # min over rows of H - spectral bound (trained weights)
    out["spectral_tightness"] = np.full(shape, np.nan)  # max over rows of spectral bound / H
    out["spectral_min_bound"] = np.full(shape, np.nan)  # smallest spectral bound / ln n over rows with n >= 2
    out["spikes"] = np.zeros(shape, dtype=np.int64)
    out["final_loss"] = np.full(shape, np.nan)
    task = training_task(config)  # one language; the training seeds vary the weights and the data order
    gen = torch.Generator().manual_seed(config.seed + 104729)  # the probe batch only
    probe_x, _ = task.sample(2, gen)
    runs = [(i, j, t) for i in range(shape[0]) for j in range(shape[1]) for t in range(shape[2])]
    for i, j, t in bar(runs, progress=progress, desc="train sweep", leave=False):
        seed = replicate_seed(config.seed, t)  # training seed t: weights and data order
        cfg = model_config(config, vocab=task.vocab_size, qk_norm=config.qk_norm[i]).replace(
            attention="softmax", seed=seed
        )
        res = train(
            cfg,
            task,
            train_config(config, config.train.lrs[j], seed),
            device=config.torch_device(),
            progress=False,
            callback=make_trace_callback(probe_x),
            callback_id=CALLBACK_ID,
        )
        h = res.history
        out["trace_max_logit"][i, j, t] = h["max_logit"]
        out["trace_min_ent_norm"][i, j, t] = h["min_ent_norm"]
        out["trace_loss"][i, j, t] = h["loss"]
        out["final_ent_norm"][i, j, t] = [
            [h[f"ent_norm_l{la}_h{hd}"][-1] for hd in range(config.model.n_heads)]
            for la in range(config.model.n_layers)
        ]
        for la in range(config.model.n_layers):
            for hd in range(config.model.n_heads):
                out["trace_head_ent_norm"][i, j, t, la, hd] = h[f"ent_norm_l{la}_h{hd}"]
                out["trace_head_max_logit"][i, j, t, la, hd] = h[f"max_logit_l{la}_h{hd}"]
        # Zhai et al.'s bound on the trained checkpoint (None with QK-norm: the bound does not apply)
        spec = spectral_bound_rows(res.model, probe_x[:1])
        if spec is not None:
            ent = measure_rows(res.model, probe_x[:1], normalised=True)["entropy"]  # (L, H, T)
            out["spectral_slack"][i, j, t] = float(np.min((ent - spec)[..., 1:]))  # rows with n >= 2
            out["spectral_tightness"][i, j, t] = worst_ratio(spec[..., 1:], ent[..., 1:])
            out["spectral_min_bound"][i, j, t] = float(np.min(spec[..., 1:] / np.log(np.arange(2, spec.shape[-1] + 1))))
        out["spikes"][i, j, t] = loss_spikes(h["loss"], config.spike_nats)
        out["final_loss"][i, j, t] = float(h["loss"][-20:].mean())
    return out


def training_arrays(config: Config, tr: dict) -> tuple[dict, dict]:
    """``(arrays, coords)`` of the training sweep of :func:`train_sweep`."""
    coords = {
        "qk_norm": list(config.qk_norm),
        "lr": np.asarray(config.train.lrs),
        "train_seed": np.arange(config.train.seeds),
        "step": np.arange(config.train.steps),
    }
    run_dims = ("qk_norm", "lr", "train_seed")
    data = {}
    for name in ("trace_max_logit", "trace_min_ent_norm", "trace_loss"):
        data[name] = ((*run_dims, "step"), tr[name])
    data["final_ent_norm"] = ((*run_dims, "layer", "head"), tr["final_ent_norm"])
    for name in ("trace_head_max_logit", "trace_head_ent_norm"):
        data[name] = ((*run_dims, "layer", "head", "step"), tr[name])
    for name, key in (
        ("trained_spectral_slack", "spectral_slack"),
        ("trained_spectral_tightness", "spectral_tightness"),
        ("trained_spectral_min_bound", "spectral_min_bound"),
        ("loss_spikes", "spikes"),
        ("final_loss", "final_loss"),
    ):
        data[name] = (run_dims, tr[key])
    return data, coords


def measure(ctx: Context) -> None:
    """Own models only (the sweep trains its own LMs: a property of the zoo). Puts the :class:`TrainedSweep`."""
    tr = train_sweep(ctx.config, progress=ctx.progress) if ctx.own_model else None
    ctx.put(TrainedSweep(tr))
    if tr is not None:
        data, coords = training_arrays(ctx.config, tr)
        ctx.data.update(data)
        ctx.coords.update(coords)


def claim_spectral_bound_trained(led: Ledger, r: Result) -> None:
    """Zhai et al. 2023: H >= ln(1 + (n-1) exp(-2 c ||W_q^T W_k|| |x_i| max|x_j|)) on trained checkpoints."""
    ds = r.data
    slack = ds["trained_spectral_slack"].values
    if not np.isfinite(slack).any():  # every run used QK-norm: the bound does not apply
        return
    led.judge(
        "spectral_bound_holds_trained",
        measured=float(np.nanmin(slack)),
        bound=-FLOAT32_ROW,
        tightness=float(np.nanmax(ds["trained_spectral_tightness"].values)),
        why="exact inequality; float32 logits: a relative 1e-6 change of the bounded range R moves "
        "ln(1 + (n-1) e^{-R}) by at most 1e-6 R (n-1) e^{-R} / (1 + (n-1) e^{-R}) << 1e-4; tightness = "
        "the largest bound / H over rows and checkpoints",
        statement="every trained checkpoint without QK-norm (all lrs and seeds), every row of the probe batch: "
        "H >= ln(1 + (n-1) exp(-2 c ||W_q^T W_k|| |x_i| max|x_j|))",
    )


def claim_qknorm(led: Ledger, r: Result) -> None:
    """Wortsman et al. 2023 (Dehghani et al. 2023): QK-norm stops the growth of attention logits, and with it
    the entropy collapse, at a learning rate where the plain model's logits grow. Highest lr, seed-paired."""
    ds, config = r.data, r.config
    if True not in config.qk_norm or False not in config.qk_norm:
        for name in ("qknorm_bounds_logits", "qknorm_keeps_entropy_higher"):
            led.judge(name, reason="needs runs with and without QK-norm")
        return
    top = {"lr": float(ds["lr"].max())}
    plain, normed = ds.sel({**top, "qk_norm": False}), ds.sel({**top, "qk_norm": True})
    log_ratio = np.log(plain["trace_max_logit"].max("step").values / normed["trace_max_logit"].max("step").values)
    gap = normed["trace_min_ent_norm"].isel(step=-1).values - plain["trace_min_ent_norm"].isel(step=-1).values
    for name, replicates, paired, statement in (
        (
            "qknorm_bounds_logits",
            log_ratio,
            "of the per-seed log ratio (each seed trains both models)",
            f"lr = {top['lr']:g}: ln(max |logit| over training without QK-norm / with QK-norm) > 0",
        ),
        (
            "qknorm_keeps_entropy_higher",
            gap,
            "of the paired difference",
            f"lr = {top['lr']:g}: final min head H/ln n with QK-norm - without > 0",
        ),
    ):
        led.judge(
            name,
            replicates=replicates,
            why=f"{band_text(config.train.seeds)} {paired}",
            statement=statement,
        )


def claim_entropy_collapse(led: Ledger, r: Result) -> None:
    """Zhai et al. 2023: attention entropy collapse comes with large learning rates (no QK-norm): the final
    smallest head entropy falls as the lr rises from the lowest to the highest of the sweep."""
    ds, config = r.data, r.config
    name = "entropy_collapse_grows_with_lr"
    if False not in config.qk_norm or len(config.train.lrs) < 2:
        led.judge(name, reason="needs runs without QK-norm at two or more lrs")
        return
    plain = ds.sel(qk_norm=False)["trace_min_ent_norm"].isel(step=-1)  # (lr, train_seed)
    lo, hi = float(ds["lr"].min()), float(ds["lr"].max())
    drop = plain.sel(lr=lo).values - plain.sel(lr=hi).values
    led.judge(
        name,
        replicates=drop,
        why=f"{band_text(config.train.seeds)} of the paired difference (each seed trains at both lrs)",
        statement=f"no QK-norm: final min head H/ln n at lr {lo:g} - at lr {hi:g} > 0",
    )


claims = each_claim(
    claim_spectral_bound_trained, claim_qknorm, claim_entropy_collapse, when=measured("trace_max_logit")
)
