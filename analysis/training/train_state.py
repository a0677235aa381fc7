"""A run's resumable partial state: the weights, the optimiser tensors, the data generator's state and the history,
packed as tensors (safetensors) plus JSON, never pickle, and restored from the cache's partial area.

The trainer (:mod:`analysis.training.train_loop`) writes it every ``checkpoint_every`` updates and on Ctrl-C; a run
that was interrupted resumes from it and finishes with the same bits as an uninterrupted run.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch

from analysis.training.checkpoints import history_from_json, history_to_json
from analysis.training.train_config import RESERVED_HISTORY, TrainConfig

log = logging.getLogger(__name__)


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
