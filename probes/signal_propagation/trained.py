"""The trained runs of the probe: DeepNet's stability runs, the Curse-of-Depth runs, held-out losses, layer
ablations and the deep half's share."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch
import xarray as xr

from analysis.claims.evidence import replicate_seed
from analysis.core.devices import model_device
from analysis.theory import signal_propagation as th
from analysis.training.train import TrainConfig, train
from analysis.zoo.hooks import hooks, resid_names, run_with_cache
from analysis.zoo.model import TinyTransformer
from probes.signal_propagation.claims_growth import _mlp_terms
from probes.signal_propagation.config import Config
from probes.signal_propagation.models import batch, build, model_config, task, train_config

STABILITY_NORMS = ("post", "deepnorm")


STABILITY_BATCH = 16  # sequences per update of a stability run (half the probe's recipe: cost)


STABILITY_DTYPE = "float32"  # training precision of the stability runs (speed; no closed form is compared exactly)


CURSE_NORMS = ("pre", "ln_scaling")


HELD_OUT = 128  # held-out Markov sequences of the variance profiles and layer ablations (the same for every model)


def stability_train_config(cfg: Config) -> TrainConfig:
    """The probe's training recipe (:func:`train_config`: AdamW without weight decay, i.e. Adam, peak rate 3e-3,
    cosine decay, clipping at 1) with the warm-up removed, ``stability_steps`` updates of ``STABILITY_BATCH``."""
    return TrainConfig(
        steps=cfg.stability.steps,
        batch_size=STABILITY_BATCH,
        lr=train_config(cfg).lr,
        warmup_steps=0,
        weight_decay=0.0,
        seed=cfg.seed,
    )


def stability_run(cfg: Config, norm: str, sample: int) -> tuple[np.ndarray, float]:
    """One Post-LN or DeepNorm run at ``stability_depth`` without warm-up (cached): its training-loss curve
    and the relative change of the final stream after the first update,
    ``|x_L(theta_1) - x_L(theta_0)| / |x_L(theta_0)|`` on the sample's batch (the one-step model update of
    theory section 10 at the training rate)."""
    seed = replicate_seed(cfg.seed, sample)
    mcfg = dataclasses.replace(model_config(cfg, norm, cfg.stability.depth, seed), dtype=STABILITY_DTYPE)
    res = train(mcfg, task(cfg), stability_train_config(cfg), device=cfg.torch_device(), progress=False, snapshots=(1,))
    inputs = batch(cfg, sample)[0].to(cfg.torch_device())
    name = resid_names(cfg.stability.depth)[-1]
    with torch.no_grad():
        x0 = run_with_cache(TinyTransformer(mcfg, device=cfg.torch_device()), inputs, names=[name])[1][name].double()
        x1 = run_with_cache(res.snapshot_model(1), inputs, names=[name])[1][name].double()
    return np.asarray(res.history["loss"], dtype=np.float64), float((x1 - x0).norm() / x0.norm())


def held_out(cfg: Config) -> tuple[torch.Tensor, torch.Tensor]:
    """``HELD_OUT`` Markov sequences from a generator used for nothing else (not the training stream)."""
    gen = torch.Generator().manual_seed(cfg.seed * 1_000_003 + 999_983)
    return task(cfg).sample(HELD_OUT, gen)


@torch.no_grad()
def ablated_loss(model, inputs: torch.Tensor, targets: torch.Tensor, layer: int | None = None) -> float:
    """Mean next-token cross-entropy with block ``layer`` removed (its output replaced by its input: the
    block's residual contribution zeroed), or of the whole model (``layer=None``)."""
    if layer is None:
        return float(torch.nn.functional.cross_entropy(model(inputs).flatten(0, 1), targets.flatten()))
    if not 0 <= layer < model.n_layers:
        raise ValueError(f"layer must be in [0, {model.n_layers}), got {layer!r}")
    seen: list[torch.Tensor] = []

    def keep(x: torch.Tensor, name: str) -> None:
        seen.append(x)

    def skip(x: torch.Tensor, name: str) -> torch.Tensor:
        return seen[-1]

    with hooks(model, [(f"blocks.{layer}.hook_resid_pre", keep), (f"blocks.{layer}.hook_resid_post", skip)]):
        logits = model(inputs)
    return float(torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten()))


def sum_rule_at_init(cfg: Config, norm: str, depth: int, sample: int, inputs: torch.Tensor) -> np.ndarray:
    """(depth + 1,) the Pre-LN sum rule ``m_0 + sum_l (a_l + g_l)`` (theory sections 1-3) of the untrained model
    of the same seed on ``inputs``: ``a_l`` from its attention patterns and normalised inputs, ``g_l`` in closed
    form; what the stream's growth would be if training kept the initialisation's law."""
    model = TinyTransformer(model_config(cfg, norm, depth, replicate_seed(cfg.seed, sample)), device=cfg.torch_device())
    first = resid_names(depth, "depth")[0]
    names = [first] + [f"blocks.{l}.{h}" for l in range(depth) for h in ("attn.hook_pattern", "ln1.hook_normalized")]
    with torch.no_grad():
        _, c = run_with_cache(model, inputs.to(model_device(model)), names=names)
    a = [
        th.attention_branch_moment(c[f"blocks.{l}.attn.hook_pattern"], c[f"blocks.{l}.ln1.hook_normalized"])
        .mean()
        .item()
        for l in range(depth)
    ]
    return th.pre_ln_moment(c[first].double().pow(2).mean().item(), np.array(a), _mlp_terms(cfg, norm, depth))


def curse_measure(cfg: Config, norm: str, sample: int) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """A trained model of the deepest depth (the sweep's own checkpoint for samples it has): its residual
    second moments ``m_l`` (L + 1,) on the held-out batch, the loss increase when each block is removed
    (L,), its held-out loss, and the same seed's sum rule at initialisation (:func:`sum_rule_at_init`)."""
    L = max(cfg.depths)
    model = build(cfg, norm, L, replicate_seed(cfg.seed, sample))
    inputs, targets = (t.to(model_device(model)) for t in held_out(cfg))
    names = resid_names(L, "depth")
    with torch.no_grad():
        _, c = run_with_cache(model, inputs, names=names)
    m = np.array([c[n].double().pow(2).mean().item() for n in names])
    base = ablated_loss(model, inputs, targets)
    inc = np.array([ablated_loss(model, inputs, targets, l) - base for l in range(L)])
    return m, inc, base, sum_rule_at_init(cfg, norm, L, sample, inputs)


def deep_share(increase: np.ndarray) -> float:
    """Share of the deep half in the layer-ablation damage, per block: ``D / (D + S)`` with ``D`` the mean
    loss increase over blocks ``L//2 .. L-1`` and ``S`` over ``1 .. L//2 - 1`` (block 0, the only one reading
    the raw embedding, is left out). 1/2: every block equally important. NaN when ``D + S <= 0`` or ``L < 4``."""
    inc = np.asarray(increase, dtype=np.float64)
    L = inc.size
    if L < 4:
        return math.nan
    deep, shallow = inc[L // 2 :].mean(), inc[1 : L // 2].mean()
    total = deep + shallow
    return float(deep / total) if np.isfinite(total) and total > 0 else math.nan


def _trained_extras(cfg: Config, data: xr.Dataset) -> None:
    """The trained run's stability runs and Curse-of-Depth measurements, added to ``data`` in place."""
    S = cfg.stability.seeds
    loss = np.full((len(STABILITY_NORMS), S, cfg.stability.steps), np.nan)
    upd = np.full((len(STABILITY_NORMS), S), np.nan)
    for i, norm in enumerate(STABILITY_NORMS):
        for s in range(S):
            loss[i, s], upd[i, s] = stability_run(cfg, norm, s)
    sc = {"stab_norm": list(STABILITY_NORMS), "stab_seed": np.arange(S)}
    data["stab_loss"] = xr.DataArray(
        loss, dims=("stab_norm", "stab_seed", "stab_step"), coords=sc | {"stab_step": np.arange(cfg.stability.steps)}
    )
    data["stab_update"] = xr.DataArray(upd, dims=("stab_norm", "stab_seed"), coords=sc)
    data.attrs["unigram_entropy"] = task(cfg).unigram_entropy
    data.attrs["entropy_rate"] = task(cfg).entropy_rate
    norms = [n for n in CURSE_NORMS if n in cfg.norms]
    if not norms:
        return
    L, C = max(cfg.depths), cfg.curse_seeds
    m = np.full((len(norms), L + 1, C), np.nan)
    inc = np.full((len(norms), L, C), np.nan)
    base = np.full((len(norms), C), np.nan)
    rule = np.full_like(m, np.nan)
    for i, norm in enumerate(norms):
        for s in range(C):
            m[i, :, s], inc[i, :, s], base[i, s], rule[i, :, s] = curse_measure(cfg, norm, s)
    cc = {"curse_norm": norms, "curse_seed": np.arange(C)}
    data["curse_resid_var"] = xr.DataArray(
        m, dims=("curse_norm", "cpos_trained", "curse_seed"), coords=cc | {"cpos_trained": np.arange(L + 1)}
    )
    data["curse_sum_rule_init"] = xr.DataArray(
        rule, dims=("curse_norm", "cpos_trained", "curse_seed"), coords=cc | {"cpos_trained": np.arange(L + 1)}
    )
    data["curse_ablation"] = xr.DataArray(
        inc, dims=("curse_norm", "clayer", "curse_seed"), coords=cc | {"clayer": np.arange(L)}
    )
    data["curse_loss"] = xr.DataArray(base, dims=("curse_norm", "curse_seed"), coords=cc)
