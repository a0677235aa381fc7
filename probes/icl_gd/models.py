"""Shared recipe of the in-context-regression probe: the regression tasks, the LSA models and their training
recipe, the predictors, the seeded draws, the one-step-GD theory of the run (:func:`prepare`)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from scipy.optimize import minimize_scalar

from analysis.data.regression_data import RegressionBatch, concat_tokens
from analysis.data.tasks import LinearRegressionTask, QuerySlotReadout
from analysis.probing.parts import Context
from analysis.theory import icl_gd as th
from analysis.training.train import TrainConfig
from analysis.zoo import fused_lsa
from analysis.zoo.model import ModelConfig, TinyTransformer
from probes.icl_gd.config import Config, spectrum

FUSED_LSA = "lsa1_query_readout_v1"  # names the fused training path in the checkpoint key (NegYReadoutTask)


def regression_task(cfg: Config, n_points: int | None = None, link: str = "linear") -> LinearRegressionTask:
    """The concat-layout task of the config's law; ``link="relu"`` gives ReLU responses of the same draws."""
    spec = spectrum(cfg)
    return LinearRegressionTask(
        d=cfg.d,
        n_points=cfg.n_context if n_points is None else n_points,
        x_dist=cfg.x_dist,
        spectrum=None if spec is None else tuple(float(v) for v in spec),
        noise_std=cfg.noise,
        layout="concat",
        link=link,
    )


@dataclass(frozen=True)
class NegYReadoutTask(QuerySlotReadout):
    """von Oswald's objective on the concat layout for a model without a read-out (output="none"): the
    :class:`~analysis.data.tasks.QuerySlotReadout` of the wrapped task (prediction minus the query's y-slot, half the
    MSE). With ``hide_query`` the trainer passes :func:`query_key_bias` (``attn_bias``), so every token
    attends to the N context tokens only: von Oswald's architecture, in which K layers of the
    construction are exactly K GD steps.
    """

    hide_query: bool = False  # hide the query token as a key from every row (bias[:, -1] = -inf)

    name = property(lambda self: self.inner.name + "_negy")

    def config(self) -> dict:
        out = {**self.inner.config(), "readout": "neg_query_y_slot", "hide_query": self.hide_query}
        if self.hide_query:  # one-layer LSAs train through the fused path (same loss to rounding): new keys
            out["fused"] = FUSED_LSA
        return out

    def attn_bias(self, T: int, device="cpu", dtype=torch.float32) -> torch.Tensor | None:
        """(T, T) logit bias for :func:`analysis.training.train.forward`, or None when the query is visible."""
        return query_key_bias(T).to(device=device, dtype=dtype) if self.hide_query else None

    def fused_loss(self, model: Any, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor | None:
        """The same loss through :func:`analysis.zoo.fused_lsa.query_readout_loss` (hand-fused forward and
        backward) when the model is one LSA layer and the query is hidden; None otherwise (the trainer then
        runs the model and :meth:`loss`)."""
        if not self.hide_query or not fused_lsa.eligible(model):
            return None
        return fused_lsa.query_readout_loss(model, inputs, targets)


def model_config(cfg: Config, n_layers: int, dtype: str = "float32", seed: int | None = None) -> ModelConfig:
    """von Oswald's LSA stack: identity read-in of the (d+1)-dim tokens, one head of width d+1,
    no MLP, no norm, no read-out, full (non-causal) attention, q.k unscaled for linear attention.
    Small N(0, init_std^2) initial weights: a K-layer LSA is a polynomial of degree 3^K in the tokens,
    and from fan-in init (std 1/sqrt(d+1)) a 2-layer stack starts with losses ~1e5 and trains poorly."""
    D = cfg.d + 1
    return cfg.model_config(  # attention, init_std and seed from the config's model fields
        input="embedded",
        d_in=D,
        output="none",
        vocab_size=2,
        d_model=D,
        n_layers=n_layers,
        n_heads=1,
        d_head=D,
        d_mlp=0,
        norm="none",
        logit_scale=1.0 if cfg.model.attention == "linear" else None,
        causal=False,
        dtype=dtype,
        init="gpt2",
        **({} if seed is None else {"seed": seed}),
    )


def train_config(cfg: Config, n_layers: int = 1, seed: int | None = None) -> TrainConfig:
    """Adam, cosine decay to 10%. One layer: ``steps``/``batch``/``lr``, no warm-up or clipping (von
    Oswald's setting). Deeper stacks (``depth_*``): a higher peak rate after a linear warm-up, clipped.

    Why deep stacks need their own schedule: a K-layer LSA is a polynomial of degree 3^K in the tokens,
    started near its saddle at 0 (small init). At the one-layer rate lr 5e-3 without warm-up they leave it
    slowly and are far from converged after 2000 updates (K = 3 was above K = 2); at 1e-2 to 2e-2 without
    warm-up the first updates overshoot and K >= 3 diverges. With a 100-update warm-up to 1e-2 they
    escape within a few hundred updates; Adam then shows transient loss spikes (sharp directions of the
    deep product) that the cosine decay damps, and 1200 updates end near GD++ loss."""
    seed = cfg.seed if seed is None else seed
    if n_layers == 1:
        return adam_cosine(cfg.train.steps, cfg.train.batch_size, cfg.train.lr, seed)
    warmup = min(cfg.depth.warmup, cfg.depth.steps)
    return adam_cosine(
        cfg.depth.steps, cfg.depth.batch_size, cfg.depth.lr, seed, grad_clip=cfg.depth.clip, warmup_steps=warmup
    )


def adam_cosine(
    steps: int,
    batch_size: int,
    lr: float,
    seed: int,
    *,
    grad_clip: float = 0.0,
    warmup_steps: int = 0,
    min_lr_ratio: float = 0.1,
) -> TrainConfig:
    """The optimiser of every model the probe trains: Adam at peak rate ``lr`` after ``warmup_steps`` of linear
    warm-up, then a cosine decay to ``min_lr_ratio`` of it; the global gradient norm clipped to ``grad_clip`` (0:
    not clipped)."""
    return TrainConfig(
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        optimizer="adam",
        grad_clip=grad_clip,
        warmup_steps=warmup_steps,
        schedule="cosine",
        min_lr_ratio=min_lr_ratio,
        seed=seed,
    )


def query_key_bias(T: int) -> torch.Tensor:
    """(T, T) additive logit bias hiding the last token (the query) as a key from every token."""
    bias = torch.zeros(T, T, dtype=torch.float64)
    bias[:, -1] = -math.inf
    return bias


def lsa_weights_from_model(model: Any) -> list[dict[str, np.ndarray]] | None:
    """Per block the theory module's (W_K, W_Q, W_V, P) read from ``W_k, W_q, W_v, W_o`` (nn.Linear
    weights are (out, in), i.e. already the matrices acting on column tokens); the logit scale is
    folded into W_Q. None for a model without those parameters or with a non-linear kernel."""
    cfg = getattr(model, "config", None)
    if cfg is None or getattr(cfg, "attention", None) != "linear" or getattr(cfg, "n_heads", 0) != 1:
        return None
    sd = model.state_dict()
    out = []
    for layer in range(model.n_layers):
        p = f"blocks.{layer}.attn."
        if p + "W_q.weight" not in sd:
            return None
        W = {
            k: sd[p + f"{n}.weight"].detach().to("cpu", torch.float64).numpy()
            for k, n in (("W_Q", "W_q"), ("W_K", "W_k"), ("W_V", "W_v"), ("P", "W_o"))
        }
        W["W_Q"] = W["W_Q"] * float(cfg.scale)
        out.append(W)
    return out


def model_from_lsa_weights(cfg: Config, stack: Sequence[Mapping[str, np.ndarray]]) -> TinyTransformer:
    """A float64 linear-attention TinyTransformer carrying the given LSA weights (unit logit scale)."""
    model = TinyTransformer(model_config(cfg, len(stack), dtype="float64").replace(attention="linear", logit_scale=1.0))
    with torch.no_grad():
        for layer, W in enumerate(stack):
            attn = model.blocks[layer].attn
            for name, key in (("W_q", "W_Q"), ("W_k", "W_K"), ("W_v", "W_V"), ("W_o", "P")):
                getattr(attn, name).weight.copy_(torch.as_tensor(np.asarray(W[key], dtype=np.float64)))
    return model.eval()


def as_float64(model: TinyTransformer) -> TinyTransformer:
    """A float64 copy of one of our trained models (same config otherwise, same weights), on the CPU wherever
    the model was trained: every measurement of this probe is float64 on the CPU, against float64 closed forms."""
    copy = TinyTransformer(model.config.replace(dtype="float64"))
    copy.load_state_dict({k: v.to("cpu", torch.float64) for k, v in model.state_dict().items()})
    return copy.eval()


@dataclass(frozen=True, eq=False)
class ModelPredictor:
    """A transformer as a predictor with the baselines' signature: yhat = -(query y-slot)."""

    model: Any  # forward(tokens (B, T, d+1), attn_bias) -> (B, T, d+1)
    label: str = "model"  # name in tables
    hide_query: bool = False  # add query_key_bias (von Oswald's keys from the context only)

    @property
    def name(self) -> str:
        return self.label

    def __call__(self, x_ctx, y_ctx, x_q) -> torch.Tensor:
        tokens = concat_tokens(x_ctx, y_ctx, x_q, dtype=torch.float64)  # (B, N+1, d+1), keeps grad to x_q
        bias = query_key_bias(tokens.shape[1]) if self.hide_query else None
        return -self.model(tokens, attn_bias=bias)[:, -1, -1]


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Temporarily use ``n`` intra-op threads (restored afterwards)."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def rng_for(cfg: Config, purpose: str, k: int = 0) -> np.random.Generator:
    tag = sum(ord(c) * 31**i for i, c in enumerate(purpose)) % (2**31)
    return np.random.default_rng([cfg.seed, tag, k])


def sample_batch(cfg: Config, n: int, N: int, purpose: str, link: str = "linear") -> RegressionBatch:
    """``n`` evaluation tasks of ``N`` examples (numpy float64), drawn from the law the models are trained
    on (:func:`regression_task`; the law does not depend on the context length) with a numpy generator
    fixed by the seed, the purpose and N."""
    return regression_task(cfg, link=link).law.sample(n, N, rng_for(cfg, purpose, N))


def sq_err(pred: torch.Tensor, batch: RegressionBatch) -> np.ndarray:
    return (pred.detach().numpy() - batch.y_q) ** 2


def predict(f, batch: RegressionBatch) -> torch.Tensor:
    with torch.no_grad():
        return f(batch.x_ctx, batch.y_ctx, batch.x_q)


def best_gd_eta(batch: RegressionBatch, steps: int, Sigma: np.ndarray, cfg: Config, hi: float) -> tuple[float, float]:
    """Learning rate (one for all steps) minimising the Rao-Blackwellised loss of K-step GD on ``batch``."""

    def loss(eta: float) -> float:
        A = th.GD(eta=float(eta), steps=steps).linear_map(batch.x_ctx)
        return float(th.conditional_loss_linear(A, batch.x_ctx, Sigma, cfg.noise, 1.0).mean())

    res = minimize_scalar(loss, bounds=(0.0, hi), method="bounded", options={"xatol": 1e-6 * hi})
    return float(res.x), float(res.fun)


def untuned_eta(cfg: Config) -> float:
    """The untuned learning rate tr Sigma^2 / tr Sigma^3 (1/v for Sigma = v I): eta* of infinite context
    (S = Sigma), the large-N limit of eta*. The alternative of the eta* claims."""
    S = th.second_moment(cfg.d, cfg.x_dist, spectrum(cfg))
    return float(np.trace(S @ S) / np.trace(S @ S @ S))


def infinite_context_loss(cfg: Config, one: dict, eta: float) -> float:
    """Loss of one GD step at ``eta`` if the context's S = (1/N) sum x x^T were Sigma exactly and its noise
    term vanished: a - 2 b eta + eta^2 tr Sigma^3 (w_std = 1). The alternative of the loss* claims."""
    S = th.second_moment(cfg.d, cfg.x_dist, spectrum(cfg))
    return float(one["a"] - 2 * one["b"] * eta + eta**2 * np.trace(S @ S @ S))


@dataclass(frozen=True)
class OneStepGD:
    """The one-step-GD theory of the configuration (:func:`analysis.theory.icl_gd.one_step_gd_theory`: the optimal
    rate ``eta_star``, its loss ``loss_star``, the loss as a function of the rate ``loss_fn``, ...)."""

    theory: dict


@dataclass(frozen=True)
class Stacks:
    """What the one-layer part leaves for the depth and ridge parts: the trained stacks by depth K (model, history,
    seconds, from the cache), their predictors, the squared-step schedules of GD++ and the one-layer models' numbers
    over seeds."""

    trained: dict
    predictors: Any
    sq_schedules: Any
    one_layer: Any


def prepare(ctx: Context) -> None:
    """Puts the configuration's :class:`OneStepGD` (optimal rate and loss); its scalars."""
    cfg = ctx.config
    one = th.one_step_gd_theory(cfg.d, cfg.n_context, cfg.x_dist, cfg.noise, Sigma=spectrum(cfg))
    ctx.put(OneStepGD(one))
    ctx.scalars.update(
        eta_theory=one["eta_star"],
        loss_gd_theory=one["loss_star"],
        eta_untuned=untuned_eta(cfg),
        loss_gd_untuned=float(one["loss_fn"](untuned_eta(cfg))),
        loss_gd_infinite_context=infinite_context_loss(cfg, one, one["eta_star"]),
    )


def finish(ctx: Context) -> None:
    """``trained_from_cache``: whether every trained model of every part came from the checkpoint cache."""
    cached = [v[3] for v in ctx.get(Stacks).trained.values()] + ctx.scalars.pop("_cached", [])
    ctx.scalars["trained_from_cache"] = all(cached) if ctx.own_model else False
