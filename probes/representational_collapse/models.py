"""Shared recipe of the representational-collapse probe: the models (float64 and every low-precision copy), the
passed model's vocabulary, positions and length limit, and the run's context (:func:`prepare`)."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from analysis.core.devices import model_device
from analysis.data import tasks
from analysis.probing.base import ModelIncompatibleError
from analysis.probing.parts import Context
from analysis.training.train import probe_lm_train_config, train
from analysis.zoo import protocol
from analysis.zoo.hooks import run_with_cache
from analysis.zoo.model import DTYPES, ModelConfig, TinyTransformer
from probes.representational_collapse.config import Config


def seq_bound(config: Config) -> int:
    """Longest sequence the protocol builds (sets ``max_len`` of learned positions)."""
    n = config.max_len + 2
    return n + ((n - 1) // config.separator_every if config.separator_every else 0)


def model_config(config: Config) -> ModelConfig:
    """The TinyTransformer this config measures (untrained weights from ``seed``), float32: the model fields,
    with learned positions as long as the longest sequence the protocol builds."""
    return config.model_config(
        input="tokens",
        output="lm",
        dtype="float32",
        max_len=max(seq_bound(config), config.sens.len, config.train.seq_len)
        if config.model.pos == "learned"
        else 1024,
    )


def train_config(config: Config):
    return probe_lm_train_config(config.train.steps, config.seed)


def build_models(config: Config, model=None, progress: bool = True) -> tuple[dict, dict]:
    """``({dtype: model}, info)`` for float64 and every requested dtype.

    Untrained own models are built from the config with its ``dtype`` field (the float64 draws rounded);
    a trained or passed-in model is copied and cast (its weights rounded).
    """
    names = ("float64",) + tuple(config.dtypes)
    info: dict = {}
    if model is None and not config.trained:
        cfg = model_config(config)
        return {dt: TinyTransformer(cfg.replace(dtype=dt), device=config.torch_device()).eval() for dt in names}, info
    if model is None:
        task = tasks.MarkovLanguage(vocab_size=config.model.vocab_size, seq_len=config.train.seq_len, seed=config.seed)
        res = train(model_config(config), task, train_config(config), device=config.torch_device(), progress=progress)
        model = res.model
        info = {"train_loss": res.final_loss, "checkpoint": res.key, "from_cache": res.from_cache}
    else:
        info = {"model": protocol.describe(model)}
        check_length(config, model)
    return {dt: copy.deepcopy(model).to(DTYPES[dt]).eval() for dt in names}, info


def check_length(config: Config, model) -> None:
    """``ValueError`` naming ``max_len`` (and ``sens_len``) if the model's position limit is shorter."""
    limit, n = protocol.max_positions(model), seq_bound(config)
    if limit is not None and n > limit:
        raise ModelIncompatibleError(
            f"max_len={config.max_len} builds sequences of {n} tokens but the model has {limit} positions; "
            f"use max_len <= {config.max_len - (n - limit)}"
        )
    protocol.check_length(model, config.sens.len, "sens_len")


def model_vocab(config: Config, model=None) -> int:
    """Token ids the pairs draw from: ``config.model.vocab_size`` for own models, else the model's own."""
    v = protocol.vocab_size(model) if model is not None else config.model.vocab_size
    if not isinstance(v, int) or v < 4:
        raise ModelIncompatibleError(f"the model must embed at least 4 token ids, got vocab_size={v}")
    return v


def model_pos(config: Config, model=None) -> str:
    """Positional encoding the predictions use: ``config.model.pos`` for own models; a passed model with a
    position limit has learned absolute positions, one without is taken to use ``config.model.pos``."""
    if model is not None and protocol.max_positions(model) is not None:
        return "learned"
    return config.model.pos


def protocol_width(model) -> int:
    """Residual width ``d``: the last axis of ``hook_embed`` on a one-token input."""
    with torch.no_grad():
        _, cache = run_with_cache(
            model, torch.zeros(1, 1, dtype=torch.long, device=model_device(model)), names=["hook_embed"]
        )
    return int(cache["hook_embed"].shape[-1])


@dataclass(frozen=True)
class Models:
    """What every part of a run measures: the models by dtype (float64 first), the token ids the pairs draw from
    and the positional encoding the predictions assume."""

    models: dict
    vocab: int
    pos: str

    @property
    def dtypes(self) -> list[str]:
        return list(self.models)


def prepare(ctx: Context) -> None:
    """Puts the run's :class:`Models`; the training loss as a scalar, the rest of the model's description in
    ``ctx.meta``."""
    config, model = ctx.config, ctx.model
    models, info = build_models(config, model, progress=ctx.progress)
    shared = Models(models=models, vocab=model_vocab(config, model), pos=model_pos(config, model))
    ctx.put(shared)
    if "train_loss" in info:
        ctx.scalars["train_loss"] = float(info["train_loss"])
    ctx.meta.update({k: v for k, v in info.items() if k != "train_loss"})
    ctx.meta["pos_assumed"] = shared.pos
    ctx.meta["own_model"] = ctx.own_model
