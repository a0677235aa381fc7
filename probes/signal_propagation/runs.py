"""The probe's measurements as parts (:mod:`analysis.probing.parts`), in the order they run: the sweep over
placements and
depths (or one passed model), rank collapse, DeepNorm's update, the trained extras (gate ``trained``) and the
attention phase diagram (gate ``phase``); :func:`finish` adds the run's attributes and scalars. The claims are
parts too (:data:`probes.signal_propagation.claims.CLAIM_PARTS`), after these."""

from __future__ import annotations

import numpy as np
import torch
import xarray as xr

from analysis.claims.evidence import replicate_seed
from analysis.claims.ledger import Ledger
from analysis.core.progress import bar
from analysis.probing.base import ModelIncompatibleError, Result
from analysis.probing.parts import Context, Part
from analysis.theory import signal_propagation as th
from analysis.zoo import protocol
from probes.signal_propagation import phase
from probes.signal_propagation.claims import record_claims
from probes.signal_propagation.config import (
    COLLAPSE_VARIANTS,
    JACOBIAN_BATCHES,
    JACOBIAN_SAMPLES,
    MASKS,
    NAME,
    PARAMS,
    PRE_LIKE,
    UPDATE_NORMS,
    UPDATE_SAMPLES,
    Config,
)
from probes.signal_propagation.models import batch, build, corpus_batches, fixed_loss
from probes.signal_propagation.statistics import _dataset, measure, param_names
from probes.signal_propagation.trained import _trained_extras
from probes.signal_propagation.updates import collapse_curve, update_pieces


def measure_sweep(ctx: Context) -> None:
    """Every placement x depth x initialisation's statistics (:func:`statistics.measure`); with a passed model,
    that model's (:func:`run_model`)."""
    if not ctx.own_model:
        passed = run_model(ctx.config, ctx.model, ctx.progress)
        _store(ctx, passed.data)
        ctx.scalars.update(passed.scalars)
        return
    cfg = ctx.config
    norms, depths = list(cfg.norms), sorted(cfg.depths)
    S = cfg.n_samples
    if cfg.data == "corpus":  # byte-level models (model_vocab), untrained (Config.validate)
        batches = corpus_batches(cfg, build(cfg, norms[0], depths[0], cfg.seed))
    else:
        batches = [batch(cfg, s) for s in range(S)]
    jobs = [(i, n, j, L, s) for i, n in enumerate(norms) for j, L in enumerate(depths) for s in range(S)]
    measured = {}
    for i, norm, j, L, s in bar(jobs, desc=NAME, progress=ctx.progress):
        model_ = build(cfg, norm, L, replicate_seed(cfg.seed, s), progress=False)
        inputs, targets = batches[s]
        measured[i, j, s] = measure(
            model_,
            inputs,
            targets,
            mlp=not cfg.attn_only,
            pre_like=norm in PRE_LIKE,
            jacobian=cfg.jacobian and s < JACOBIAN_SAMPLES,
            no_norm=norm == "none",
            seed=cfg.seed,
        )
    _store(ctx, _dataset(norms, depths, S, PARAMS, measured))


def measure_collapse(ctx: Context) -> None:
    """Rank collapse at depth ``collapse_depth`` of every variant under both masks (at initialisation only:
    NaN in a trained run)."""
    if not ctx.own_model:
        return
    cfg, S = ctx.config, ctx.config.n_samples
    collapse = np.full((len(COLLAPSE_VARIANTS), len(MASKS), cfg.collapse_depth + 1, S), np.nan)
    if not cfg.trained:
        for v, variant in enumerate(COLLAPSE_VARIANTS):
            for k, mask in enumerate(MASKS):
                for s in range(S):
                    collapse[v, k, :, s] = collapse_curve(cfg, variant, mask, s)
    ctx.data["collapse_residual"] = xr.DataArray(
        collapse,
        dims=("variant", "mask", "cpos", "sample"),
        coords={
            "variant": list(COLLAPSE_VARIANTS),
            "mask": list(MASKS),
            "cpos": np.arange(cfg.collapse_depth + 1),
            "sample": np.arange(S),
        },
    )


def measure_updates(ctx: Context) -> None:
    """DeepNorm's model update after one SGD or Adam step and its pieces per sublayer (at initialisation only:
    NaN in a trained run)."""
    if not ctx.own_model:
        return
    cfg = ctx.config
    depths = sorted(cfg.depths)
    SU = min(UPDATE_SAMPLES, cfg.n_samples)
    Lmax = max(depths)
    upd = np.full((len(UPDATE_NORMS), len(depths), len(th.OPTIMISERS), SU), np.nan)
    step = np.full((len(UPDATE_NORMS), len(depths), len(th.OPTIMISERS), Lmax, 2, SU), np.nan)
    effect = np.full_like(step, np.nan)
    if not cfg.trained:
        for i, norm in enumerate(UPDATE_NORMS):
            for j, L in enumerate(depths):
                for k, opt in enumerate(th.OPTIMISERS):
                    for s in range(SU):
                        upd[i, j, k, s], step[i, j, k, :L, :, s], effect[i, j, k, :L, :, s] = update_pieces(
                            cfg, norm, L, s, opt
                        )
    ucoords = {
        "update_norm": list(UPDATE_NORMS),
        "depth": depths,
        "optimiser": list(th.OPTIMISERS),
        "usample": np.arange(SU),
    }
    ctx.data["update_size"] = xr.DataArray(upd, dims=("update_norm", "depth", "optimiser", "usample"), coords=ucoords)
    udims = ("update_norm", "depth", "optimiser", "layer", "sublayer", "usample")
    ctx.data["update_step"] = xr.DataArray(step, dims=udims, coords=ucoords)
    ctx.data["update_effect"] = xr.DataArray(effect, dims=udims, coords=ucoords)


class _Sink:
    """What :func:`trained._trained_extras` writes into: the run's arrays and attributes."""

    def __init__(self, ctx: Context):
        self._ctx, self.attrs = ctx, ctx.attrs

    def __setitem__(self, name: str, value: xr.DataArray) -> None:
        self._ctx.data[name] = value


def measure_trained(ctx: Context) -> None:
    """DeepNet's stability runs and the Curse of Depth's trained measurements (gate ``trained``)."""
    if ctx.own_model:
        _trained_extras(ctx.config, _Sink(ctx))


def measure_phase(ctx: Context) -> None:
    """The attention phase diagram at initialisation (gate ``phase``; builds its own models)."""
    if ctx.own_model:
        _store(ctx, phase.run(ctx.config, ctx.progress))


def finish(ctx: Context) -> None:
    """The zoo run's attributes and its scalars (the numbers the claims read, :func:`claims.record_claims`)."""
    if not ctx.own_model:
        return
    ctx.attrs["gelu_second_moment"] = th.gelu_second_moment(1.0)
    ctx.attrs["trained"] = int(ctx.config.trained)
    ctx.attrs["source"] = "zoo"
    data = xr.Dataset(ctx.data, coords=ctx.coords, attrs=ctx.attrs)
    run = Result(probe=NAME, config=ctx.config, data=data, scalars=ctx.scalars, meta=ctx.meta)
    ctx.scalars.update(record_claims(run, Ledger(NAME, preset=ctx.config.preset_name)))  # the claims' numbers


def _store(ctx: Context, ds: xr.Dataset) -> None:
    """A measured Dataset's arrays, coordinates and attributes into the run's (attributes must not conflict)."""
    for name, var in ds.data_vars.items():
        ctx.data[name] = var
    for name, coord in ds.coords.items():
        ctx.coords.setdefault(name, coord)
    for key, value in ds.attrs.items():
        if key in ctx.attrs and ctx.attrs[key] != value:
            raise ValueError(f"attribute {key!r} measured twice with different values")
        ctx.attrs[key] = value


MEASURE_PARTS = (
    Part(
        "sweep",
        "statistics across depth of every norm placement (or of a passed model)",
        measure_sweep,
        fields=("norms", "depths", "n_samples", "data", "attn_only", "jacobian"),
    ),
    Part(
        "collapse",
        "rank collapse of pure attention and its variants at init",
        measure_collapse,
        fields=("collapse_depth",),
    ),
    Part("updates", "DeepNorm's model update after one step, per sublayer, at init", measure_updates),
    Part("trained", "DeepNet stability and the Curse of Depth after training", measure_trained, gate="trained"),
    Part("phase", "the attention phase diagram at init (Giorlandino & Goldt 2026)", measure_phase, gate="phase"),
)


def run_model(config: Config, model, progress: bool = True) -> Result:
    """The per-layer statistics of one passed token model (causal or bidirectional, any library).

    Batches: ``n_samples`` batches of ``batch_size`` sequences of ``seq_len`` tokens, Markov ids within
    the model's vocabulary or corpus text in its own tokenizer (``config.data``). The arrays keep the
    sweep's layout with ``norm = ["model"]``, ``depth = [n_layers]`` and ``sample`` indexing the data
    batches (the weights are fixed), so a notebook plots them with the zoo's. Gradients are those of
    :func:`fixed_loss`, per weight matrix for our parameter names, else per layer in total. Only the
    measurements are recorded (scalars): no theory or paper claim is made about a passed model, and
    the zoo sweep's claims are not evaluated.
    """
    cfg = config
    if cfg.phase.enabled:
        raise ValueError("phase needs the zoo sweep (no passed model): the phase diagram builds its own models")
    protocol.describe(model)  # a ProbeModel, or a ValueError naming what is missing
    if model.input_kind != "tokens":
        raise ValueError(f"signal_propagation needs a token model (input_kind 'tokens'), got {model.input_kind!r}")
    protocol.check_length(model, cfg.seq_len, "seq_len")
    V = protocol.vocab_size(model)
    if cfg.data == "corpus":
        batches = corpus_batches(cfg, model)
    else:
        if V is None:
            raise ModelIncompatibleError(
                "data='markov' needs the model's vocabulary size (analysis.zoo.protocol.vocab_size)"
            )
        batches = [batch(cfg, s, vocab=V) for s in range(cfg.n_samples)]
    L = int(model.n_layers)
    mlp = "blocks.0.hook_mlp_out" in set(model.hook_names())
    was_training = bool(getattr(model, "training", False))
    if hasattr(model, "eval"):
        model.eval()  # no dropout: the statistics of the deterministic forward pass
    measured, loss_kind = {}, ""
    try:
        for s, (inputs, targets) in enumerate(bar(batches, desc=NAME, progress=progress)):
            m = measure(
                model,
                inputs,
                targets,
                mlp=mlp,
                pre_like=False,
                jacobian=cfg.jacobian and s < JACOBIAN_BATCHES,
                seed=cfg.seed,
            )
            measured[0, 0, s] = m
        with torch.no_grad():
            out = model(batches[0][0][:1])
        loss_kind = fixed_loss(out, batches[0][1][:1], V, cfg.seed)[1]
    finally:
        if was_training and hasattr(model, "train"):
            model.train()
    data = _dataset(["model"], [L], cfg.n_samples, param_names(model), measured)
    data.attrs |= {
        "source": "passed model",
        "model_type": type(model).__name__,
        "causal": int(bool(model.causal)),
        "data": cfg.data,
        "loss_kind": loss_kind,
        "trained": -1,
    }
    r = data["rank_residual"].sel(norm="model", depth=L).mean("sample").values  # (L + 1,)
    cos = data["token_cosine"].sel(norm="model", depth=L).mean("sample").values
    scalars = {
        "n_layers": L,
        "causal": bool(model.causal),
        "loss": float(data["loss"].mean()),
        "rank_residual_first": float(r[0]),
        "rank_residual_last": float(r[-1]),
        "rank_residual_last_over_first": float(r[-1] / r[0]),
        "rank_residual_min": float(np.min(r)),
        "token_cosine_first": float(cos[0]),
        "token_cosine_last": float(cos[-1]),
    }
    led = Ledger(NAME, preset=cfg.preset_name)
    return Result(probe=NAME, config=cfg, data=data, scalars=scalars, ledger=led)
