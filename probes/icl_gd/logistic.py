"""In-context classification by a looped softmax layer (seed 000#33), the ``lg_*`` part of the ``icl_gd`` probe.

Protocol (theory: :mod:`analysis.theory.logistic_icl`, data: :mod:`analysis.data.logistic_data`):

1. Construction: the one-head softmax layer of :func:`analysis.theory.logistic_icl.construction_weights`
   (float64) applied once to every GD iterate w_0 .. w_(T-1) of ``lg_eval`` prompts reproduces the next
   iterate of normalised GD on the log-mean-exp loss (identity, per-step rounding bound).
2. Training: ``lg_seeds`` one-layer softmax models (same shape, free weights, query hidden as a key; replicate
   seeds of :func:`seeds`, replicate 0 is ``seed``) trained through :func:`analysis.training.train.train` (cached) on
   :class:`analysis.data.logistic_data.OneStepGDTask`: supervised by one GD step from iterates w of norm up to
   ``lg_radius``.
3. Looping: each trained layer, in float64, looped T = 1..``lg_loops`` times from w_0 = 0 with the zoo's
   weight-tied looping (``ModelConfig.loops``), against T steps of GD on the same ``lg_eval`` held-out
   prompts: the cosine of the query's w-slot with w_T, per prompt; and the uniform-attention alternative's
   cosine cos(w_T, z_bar) on the same prompts.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from analysis.claims.evidence import replicate_seeds
from analysis.claims.ledger import Ledger
from analysis.data.logistic_data import ClassificationLaw, OneStepGDTask, query_hidden_bias, tokens
from analysis.probing.base import Result
from analysis.probing.parts import Context, each_claim
from analysis.theory import logistic_icl as th
from analysis.training.train import TrainConfig, derived_seed, train
from analysis.zoo.model import ModelConfig, TinyTransformer
from probes.icl_gd.models import adam_cosine, torch_threads

DESCRIPTION = "in-context classification by a looped softmax layer against normalised GD"
GATE = "logistic"
FIELDS = ("logistic_seeds", "logistic_loops", "threads")

SOURCE = "analysis/theory/logistic_icl.py"
CRITERION = 0.99  # issue 17: the looped layer tracks T-step normalised GD with cosine >= 0.99 for T <= 10
CLAIM_LOOPS = (2, 5, 10)  # T = 1 is the alternative's own direction (GD's first step is eta z_bar)


def seeds(c) -> list[int]:
    """The replicate seeds of the ``lg_seeds`` trained layers (:func:`analysis.claims.evidence.replicate_seeds`)."""
    return replicate_seeds(c.seed, c.logistic.seeds)


def model_config(d: int, seed: int, loops: int = 1, dtype: str = "float32") -> ModelConfig:
    """One softmax head of width d on tokens of width 2d: no norm, no MLP, no read-out, full attention, unit
    logit scale; small initial weights."""
    return ModelConfig(
        input="embedded",
        d_in=2 * d,
        output="none",
        vocab_size=2,
        d_model=2 * d,
        n_layers=1,
        n_heads=1,
        d_head=d,
        d_mlp=0,
        norm="none",
        attention="softmax",
        logit_scale=1.0,
        causal=False,
        init="gpt2",
        init_std=0.02,
        loops=loops,
        dtype=dtype,
        seed=seed,
    )


def train_config(c, seed: int) -> TrainConfig:
    return adam_cosine(
        c.logistic.steps,
        c.logistic.batch_size,
        c.logistic.lr,
        seed,
        warmup_steps=min(50, c.logistic.steps),
        min_lr_ratio=0.01,
    )


def task(c) -> OneStepGDTask:
    return OneStepGDTask(d=c.logistic.d, n=c.logistic.n, eta=c.logistic.eta, w_radius=c.logistic.radius)


def construction_model(d: int, eta: float, loops: int = 1) -> TinyTransformer:
    model = TinyTransformer(model_config(d, 0, loops=loops, dtype="float64"))
    W = th.construction_weights(d, eta)
    with torch.no_grad():
        for name, value in W.items():
            getattr(model.blocks[0].attn, name).weight.copy_(torch.as_tensor(value))
    return model.eval()


def looped(model: TinyTransformer, loops: int) -> TinyTransformer:
    """A float64 copy of a one-layer ``model`` applied ``loops`` times with the same weights."""
    copy = TinyTransformer(model.config.replace(loops=loops, dtype="float64"))
    copy.load_state_dict({k: v.to("cpu", torch.float64) for k, v in model.state_dict().items()})
    return copy.eval()


def query_w(model: TinyTransformer, Z: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The query's w-slot after ``model`` on tokens (Z, w), float64 (B, d)."""
    x = tokens(torch.as_tensor(Z), torch.as_tensor(w))
    with torch.no_grad():
        out = model(x, attn_bias=query_hidden_bias(x.shape[1]))
    return out[:, -1, Z.shape[-1] :].numpy()


def measure_classification(c, progress: bool, data: dict, scalars: dict, coords: dict, device) -> None:
    d, n, eta, T = c.logistic.d, c.logistic.n, c.logistic.eta, c.logistic.loops
    rng = np.random.default_rng(derived_seed(c.seed, "lg_eval"))
    Z, w_star = ClassificationLaw(d, n).sample(c.logistic.eval, rng)
    it = th.gd_iterates(Z, eta, T)  # (T + 1, B, d)
    # 1. the construction, one application per GD step
    one = construction_model(d, eta)
    err = np.stack([np.linalg.norm(query_w(one, Z, it[t]) - it[t + 1], axis=-1) for t in range(T)])
    bound = np.stack([th.step_rounding_bound(Z, it[t], eta) for t in range(T)])
    scalars.update(lg_construction_err=float(err.max()), lg_construction_ratio=float((err / bound).max()))
    # 2-3. trained layers, looped
    S = c.logistic.seeds
    cos = np.full((S, T), np.nan)
    rel = np.full((S, T), np.nan)
    worst = np.full((S, T), np.nan)
    loss = np.full(S, np.nan)
    for s, seed in enumerate(seeds(c)):
        res = train(model_config(d, seed), task(c), train_config(c, seed), device=device, progress=progress)
        loss[s] = float(res.history["loss"][-1])
        for t in range(1, T + 1):
            w = query_w(looped(res.model, t), Z, np.zeros_like(w_star))
            ct = th.cosine(w, it[t])
            cos[s, t - 1], worst[s, t - 1] = ct.mean(), ct.min()
            rel[s, t - 1] = float(np.mean(np.linalg.norm(w - it[t], axis=-1) / np.linalg.norm(it[t], axis=-1)))
    alt = th.mean_direction_cosine(Z, it)[1:]  # (T, B)
    coords["lg_seed"] = np.asarray(seeds(c), dtype=np.int64)
    coords["lg_loop"] = np.arange(1, T + 1, dtype=np.int64)
    data["lg_cos"] = (("lg_seed", "lg_loop"), cos)
    data["lg_cos_min"] = (("lg_seed", "lg_loop"), worst)
    data["lg_rel_err"] = (("lg_seed", "lg_loop"), rel)
    data["lg_alt_cos"] = (("lg_loop",), alt.mean(axis=1))
    data["lg_alt_cos_se"] = (("lg_loop",), alt.std(axis=1, ddof=1) / math.sqrt(alt.shape[1]))
    data["lg_gd_cos_wstar"] = (("lg_loop",), th.cosine(it[1:], w_star[None]).mean(axis=1))
    data["lg_train_loss"] = (("lg_seed",), loss)


def claims_classification(led: Ledger, r: Result) -> None:
    ds, s, c = r.data, r.scalars, r.config
    if "lg_construction_err" not in s:
        return
    led.judge(
        "lg_construction_is_normalised_gd",
        measured=s["lg_construction_ratio"],
        expected=0.0,
        atol=1.0,
        why="float64: the per-prompt, per-step rounding bound of step_rounding_bound (the unit of the measurement)",
        statement="one softmax head applied to w_t gives w_(t+1) of normalised GD "
        f"(d = {c.logistic.d}, n = {c.logistic.n}, eta = {c.logistic.eta:g}, t < {c.logistic.loops}; "
        f"worst of {c.logistic.eval} prompts, in units of the rounding bound)",
    )
    if "lg_cos" not in ds:
        return
    cos, alt = ds["lg_cos"], ds["lg_alt_cos"]
    S = int(ds.sizes["lg_seed"])
    for T in CLAIM_LOOPS:
        if T > c.logistic.loops:
            continue
        per_seed = cos.sel(lg_loop=T).values
        led.judge(
            f"lg_looped_tracks_gd_T{T}",
            measured=float(per_seed.min()),
            expected=1.0,
            atol=1.0 - CRITERION,
            alternative=float(alt.sel(lg_loop=T)),
            why=f"band = issue 17's criterion; the worst of {S} training seeds' mean cosine over "
            f"{c.logistic.eval} prompts",
            statement=f"a softmax layer trained on one normalised-GD step, looped {T} times from w = 0: "
            f"cos(w_T, T-step GD) >= {CRITERION}",
        )


def measure(ctx: Context) -> None:
    """Part ``logistic`` (gate ``lg``): :func:`measure_classification` on ``threads`` torch threads."""
    c = ctx.config
    with torch_threads(c.threads):
        measure_classification(c, ctx.progress, ctx.data, ctx.scalars, ctx.coords, c.torch_device())


claims = each_claim(claims_classification)
