"""Part ``transfer`` (seed 003#17; Yang et al. 2022): learning-rate transfer across width. For each mixer:optimizer of
``transfer_runs``, standard and muP (base width ``base_d_model``), a 2-layer character LM (RoPE, context 32) of every
width in ``transfer_widths`` is trained ``transfer_steps`` updates at every learning rate of the optimizer's grid
(``transfer_adam_lrs``, ``transfer_sgd_lrs``: the rate at the base width), ``transfer_seeds`` seeds each (weights and
data stream), through the cached trainer; the held-out loss after the last update (NaN: diverged). The loss-optimal
rate of each (width, seed) is the grid's best refined by a parabola in log lr through it and its two neighbours
(:func:`optimal_lr`); its drift is the per-seed slope of log2 lr* on log2 d. muP's drift against 0 (transfer), the
alternative the standard parameterisation's derived -1 (:func:`analysis.theory.width.lr_drift`); the standard
parameterisation's drift below 0 (it fails to transfer), against 0; both inside the grid (a scope check)."""

from __future__ import annotations

import math

import numpy as np

from analysis.claims.ledger import Ledger
from analysis.core.progress import bar
from analysis.data.corpus import CorpusSpec
from analysis.data.tasks import CorpusLM
from analysis.probing.base import Result
from analysis.probing.parts import Context, each_claim
from analysis.theory import width as th
from analysis.training.train import train
from analysis.training.train_config import TrainConfig
from analysis.zoo.model import ModelConfig
from probes.parameterisation.config import MIXER, SOURCE, WIDTH_PARAMETERISATIONS, Config

DESCRIPTION = "learning-rate transfer: the loss-optimal rate against width, standard against muP, Adam and SGD"
GATE = "transfer"
FIELDS = ("transfer_runs", "transfer_widths", "transfer_adam_lrs", "transfer_sgd_lrs", "transfer_steps",
          "transfer_batch_size", "transfer_seeds", "base_d_model", "n_heads")  # fmt: skip
FIGURE = "param_lr_transfer"
SEQ_LEN = 32


def run_name(run: str) -> str:
    """``"gated_delta:sgd"`` -> ``"gated_delta_sgd"`` (claim names)."""
    return run.replace(":", "_")


def grid(c: Config, optimizer: str) -> tuple[float, ...]:
    return c.transfer.adam_lrs if optimizer == "adam" else c.transfer.sgd_lrs


def lm_model(c: Config, d: int, n_layers: int, seed: int, vocab_size: int, **fields) -> ModelConfig:
    """The character LM the trained parts build (transfer, muon_vs_adamw, aspect_ratio): width ``d``, ``n_layers``
    blocks of ``c.n_heads`` heads, RoPE over the context ``SEQ_LEN``, weights from ``seed``; ``fields`` set the rest."""
    return ModelConfig(
        vocab_size=vocab_size, d_model=d, n_layers=n_layers, n_heads=c.n_heads, pos="rope", max_len=SEQ_LEN,
        seed=seed, **fields,
    )  # fmt: skip


def task() -> CorpusLM:
    return CorpusLM(seq_len=SEQ_LEN, corpus=CorpusSpec(encoding="char"))


def configs(
    c: Config, run: str, parameterisation: str, d: int, lr: float, seed: int, vocab_size: int
) -> tuple[ModelConfig, TrainConfig]:
    """The model and training of one cell of the grid (``vocab_size``: the corpus task's)."""
    mixer, optimizer = run.split(":")
    extra = {} if parameterisation == "standard" else {"parameterisation": "mup", "base_d_model": c.base_d_model}
    model = lm_model(c, d, 2, seed, vocab_size, **{k: v for k, v in MIXER[mixer].items() if k != "causal"}, **extra)
    training = TrainConfig(
        steps=c.transfer.steps, batch_size=c.transfer.batch_size, lr=lr, optimizer=optimizer,
        warmup_steps=c.transfer.steps // 10, schedule="cosine", weight_decay=0.0, grad_clip=0.0, seed=seed,
        eval_every=c.transfer.steps, eval_batches=4,
    )  # fmt: skip
    return model, training


def optimal_lr(lrs, losses) -> tuple[float, bool]:
    """``(log2 lr*, on_edge)``: the grid's lowest finite loss, refined by the vertex of the parabola in ``log2 lr``
    through it and its two neighbours when both are finite (clamped between them); a diverged (NaN) neighbour counts
    as higher. ``on_edge``: the best is the grid's first or last rate (the optimum may lie outside)."""
    x = np.log2(np.asarray(lrs, dtype=np.float64))
    y = np.asarray(losses, dtype=np.float64)
    finite = np.isfinite(y)
    if not finite.any():
        return math.nan, True
    i = int(np.nanargmin(np.where(finite, y, np.nan)))
    edge = i in (0, len(x) - 1)
    if edge or not (finite[i - 1] and finite[i + 1]):
        return float(x[i]), edge
    x3, y3 = x[i - 1 : i + 2], y[i - 1 : i + 2]
    a, b, _ = np.polyfit(x3, y3, 2)
    vertex = -b / (2 * a) if a > 0 else x[i]
    return float(np.clip(vertex, x3[0], x3[-1])), False


def measure(ctx: Context) -> None:
    c = ctx.config
    n_lr = max(len(c.transfer.adam_lrs), len(c.transfer.sgd_lrs))
    shape = (len(c.transfer.runs), len(WIDTH_PARAMETERISATIONS), len(c.transfer.widths), n_lr, c.transfer.seeds)
    loss = np.full(shape, np.nan)
    lrs = np.full((len(c.transfer.runs), n_lr), np.nan)
    seeds = [c.seed + 1000 * (s + 1) for s in range(c.transfer.seeds)]
    total = int(np.prod(shape[:3])) * c.transfer.seeds * n_lr
    lm = task()
    with bar(total=total, progress=ctx.progress, desc="transfer trainings") as steps:
        for i, run in enumerate(c.transfer.runs):
            g = grid(c, run.split(":")[1])
            lrs[i, : len(g)] = g
            for k, p in enumerate(WIDTH_PARAMETERISATIONS):
                for w, d in enumerate(c.transfer.widths):
                    for j, lr in enumerate(g):
                        for s, seed in enumerate(seeds):
                            model_cfg, train_cfg = configs(c, run, p, d, lr, seed, lm.vocab_size)
                            loss[i, k, w, j, s] = train(model_cfg, lm, train_cfg, progress=False).final_loss
                            steps.update()
    ctx.data["transfer_loss"] = (
        ("transfer_run", "parameterisation", "transfer_width", "transfer_lr_index", "transfer_seed"),
        loss,
    )
    ctx.data["transfer_lr"] = (("transfer_run", "transfer_lr_index"), lrs)
    ctx.coords.update(
        transfer_run=list(c.transfer.runs), parameterisation=list(WIDTH_PARAMETERISATIONS),
        transfer_width=list(c.transfer.widths), transfer_lr_index=list(range(n_lr)),
        transfer_seed=list(range(c.transfer.seeds)),
    )  # fmt: skip


def optima(r: Result, run: str, parameterisation: str) -> tuple[np.ndarray, np.ndarray]:
    """``(log2 lr*, on_edge)``, each (width, seed), of ``run`` under ``parameterisation``."""
    d = r.data
    lrs = d["transfer_lr"].sel(transfer_run=run).values
    lrs = lrs[np.isfinite(lrs)]
    loss = d["transfer_loss"].sel(transfer_run=run, parameterisation=parameterisation).values[:, : len(lrs)]
    out = [[optimal_lr(lrs, loss[w, :, s]) for s in range(loss.shape[-1])] for w in range(loss.shape[0])]
    return np.array([[o[0] for o in row] for row in out]), np.array([[o[1] for o in row] for row in out])


def drifts(r: Result, run: str, parameterisation: str) -> np.ndarray:
    """Per seed, the least-squares slope of log2 lr* on log2 width."""
    log_lr, _ = optima(r, run, parameterisation)
    x = np.log2(np.asarray(r.config.transfer.widths, dtype=np.float64))
    x = x - x.mean()
    return (x[:, None] * (log_lr - log_lr.mean(axis=0))).sum(axis=0) / (x * x).sum()


def claim_transfer(led: Ledger, r: Result) -> None:
    """Per mixer:optimizer: the optimum inside the grid (scope), muP's drift 0 against the standard's derived -1, and
    the standard parameterisation's drift below 0 against 0."""
    c = r.config
    for run in c.transfer.runs:
        mixer, optimizer = run.split(":")
        name = run_name(run)
        edges = sum(int(optima(r, run, p)[1].sum()) for p in WIDTH_PARAMETERISATIONS)
        cells = len(WIDTH_PARAMETERISATIONS) * len(c.transfer.widths) * c.transfer.seeds
        led.judge(
            f"lr_transfer_{name}_optimum_inside_grid",
            measured=float(edges),
            bound=0.0,
            why=f"the lowest held-out loss at the grid's first or last rate in {edges} of {cells} (parameterisation, "
            "width, seed) cells: there the optimum may lie outside the grid",
            statement=f"{run}: every loss-optimal learning rate lies inside the grid {list(grid(c, optimizer))}",
        )
        setting = (
            f"{run}, 2-layer character LM, widths {list(c.transfer.widths)} (base {c.base_d_model}), "
            f"{c.transfer.steps} updates, {c.transfer.seeds} seeds"
        )
        mup = drifts(r, run, "mup")
        led.judge(
            f"lr_transfer_{name}_mup_drift",
            replicates=mup,
            expected=th.lr_drift(optimizer, "mup", mixer),
            alternative=th.lr_drift(optimizer, "standard", mixer),
            why=f"per-seed slopes of log2 lr* on log2 d: {np.round(mup, 3).tolist()}",
            statement=f"{setting}: under muP the loss-optimal learning rate does not move with width (slope of "
            f"log2 lr* on log2 d is {th.lr_drift(optimizer, 'mup', mixer):g}; {SOURCE})",
        )
        standard = drifts(r, run, "standard")
        led.judge(
            f"lr_transfer_{name}_standard_drift",
            replicates=standard,
            why=f"per-seed slopes of log2 lr* on log2 d: {np.round(standard, 3).tolist()}",
            statement=f"{setting}: under the standard parameterisation the loss-optimal learning rate falls with "
            "width (slope of log2 lr* on log2 d below 0)",
        )


claims = each_claim(claim_transfer)
