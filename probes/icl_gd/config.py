"""The configuration of the in-context-regression probe, its limits and the replicate seeds of its trained parts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.claims.evidence import replicate_seeds
from analysis.probing.base import ProbeConfig, model_param, param
from analysis.theory import icl_gd as th

EPS = float(np.finfo(np.float64).eps)


# Largest values the config accepts: far beyond every preset and notebook, and below where the theory's float
# arithmetic (sigma^2, the geometric spectrum of Sigma) or Adam's float32 step overflows.
MAX_NOISE = 100.0  # noise, ridge_mc_noise (label noise standard deviations)


MAX_COND = 1e6  # cond (condition number of Sigma)


MAX_LR = 10.0  # lr, depth_lr, garg_lr (Adam: a step moves every weight by about lr)


MAX_INIT_STD = 10.0  # init_std


MAHANKALI_LAWS = ("gaussian", "anisotropic", "relu")  # relu: isotropic Gaussian inputs, y = max(0, w.x) + noise


PRECONDITIONER_CRITERION = 0.05  # issue 17: learned Gamma within 5% (Frobenius) of the optimal one


ETA_CRITERION = 0.01  # issue 17: learned eta within 1% of the loss-optimal one-step GD


@dataclass(frozen=True)
class Config(ProbeConfig):
    SMOKE = {
        "d": 4,
        "n_context": 6,
        "depths": (1, 2),
        "train_steps": 300,
        "train_batch_size": 256,
        "depth_steps": 150,
        "depth_batch_size": 256,
        "depth_warmup": 15,
        "train_lr": 1e-2,
        "n_eval": 4000,
        "n_mc": 20000,
        "n_fit": 1000,
        "k_values": (1, 3, 6),
        "construction_n_layers": 3,
        "garg_n_points": 6,
        "garg_steps": 40,
        "garg_batch_size": 32,
        "eta_seeds": 2,
        "depth_seeds": 2,
        "mahankali_seeds": 2,
        "looped_seeds": 2,
        "garg_seeds": 2,
        "mahankali_d": 3,
        "mahankali_n": 6,
        "ridge_mc_d": 4,
        "ridge_mc_tasks": 400,
        "looped": ("gaussian",),
        "looped_d": 3,
        "looped_n": 8,
        "looped_loops": 2,
        "looped_eval_loops": 3,
        "looped_steps": 40,
        "looped_batch_size": 64,
        "looped_n_eval": 500,
        "logistic_loops": 3,
        "logistic_steps": 30,
        "logistic_seeds": 1,
        "logistic_eval": 64,
    }

    d: int = param(10, "input dimension d", minimum=1, maximum=64)
    n_context: int = param(10, "in-context examples N the models are trained on", minimum=1, maximum=200)
    noise: float = param(0.0, "label noise standard deviation sigma", minimum=0.0, maximum=MAX_NOISE)
    x_dist: str = param("uniform", "input law", choices=("gaussian", "uniform", "anisotropic"))
    cond: float = param(
        10.0, "condition number of Sigma (anisotropic only; geometric spectrum)", minimum=1.0, maximum=MAX_COND
    )
    depths: tuple[int, ...] = param(
        (1, 2, 3, 4), "depths K of the trained LSA stacks (first = headline)", minimum=1, maximum=8, formerly="layers"
    )
    attention: str = model_param(
        "attention", "linear", "attention kernel of the trained models", choices=("linear", "softmax")
    )
    hide_query: bool = param(True, "train and evaluate with the query hidden as a key (von Oswald's architecture)")
    train_steps: int = param(2000, "Adam updates per trained model", minimum=1, formerly="steps")
    train_batch_size: int = param(2048, "tasks per update", minimum=1, formerly="batch")
    depth_steps: int = param(
        1200, "Adam updates of the stacks with K >= 2 (time budget: cost ~ K * depth_batch_size * steps)", minimum=1
    )
    depth_batch_size: int = param(512, "tasks per update of the stacks with K >= 2", minimum=1, formerly="depth_batch")
    depth_lr: float = param(
        1e-2,
        "peak Adam learning rate of the stacks with K >= 2 (after warm-up, cosine to 10%)",
        minimum=0.0,
        maximum=MAX_LR,
    )
    depth_warmup: int = param(
        100, "linear warm-up updates of the stacks with K >= 2 (without it lr 1e-2 blows up early)", minimum=0
    )
    depth_clip: float = param(
        1.0, "global gradient-norm clip of the stacks with K >= 2 (caps rare large-|w| batches)", minimum=0.0
    )
    train_lr: float = param(
        2e-2, "peak Adam learning rate (cosine decay to 10%)", minimum=0.0, maximum=MAX_LR, formerly="lr"
    )
    init_std: float = model_param(
        "init_std",
        0.02,
        "std of the initial weights (small: deep LSA stacks blow up from fan-in init)",
        maximum=MAX_INIT_STD,
    )
    seed: int = model_param("seed", 0, "seed of the weights, the data stream and the evaluation draws")
    n_eval: int = param(20000, "evaluation tasks per context length", minimum=16)
    n_mc: int = param(200000, "Monte Carlo tasks for the eta* / loss* checks", minimum=16)
    n_fit: int = param(2000, "tasks on which K-step GD and GD++ schedules are fitted (L-BFGS, float64)", minimum=16)
    k_values: tuple[int, ...] = param(
        (1, 2, 3, 4, 5, 6, 7, 8, 9, 10), "context lengths k of the loss curves", minimum=1
    )
    construction_n_layers: int = param(
        4, "check the exact construction for K = 1..this", minimum=1, maximum=8, formerly="construction_layers"
    )
    garg: bool = param(True, "also train a small softmax transformer on the interleaved (Garg et al. 2022) layout")
    garg_d: int = param(3, "input dimension of the interleaved task (small: a CPU-sized model)", minimum=1, maximum=64)
    garg_n_points: int = param(
        10, "examples per interleaved sequence (predictions at k = 0..this-1)", minimum=2, maximum=200
    )
    garg_x_dist: str = param(
        "gaussian", "input law of the interleaved task (Garg et al.: N(0, I))", choices=("gaussian", "uniform")
    )
    garg_d_model: int = param(
        32, "d_model of the interleaved model (pre-LN, softmax, MLP 4x)", minimum=8, maximum=256, formerly="garg_width"
    )
    garg_n_layers: int = param(2, "layers of the interleaved model", minimum=1, maximum=8, formerly="garg_layers")
    garg_n_heads: int = param(
        4, "attention heads of the interleaved model", minimum=1, maximum=16, formerly="garg_heads"
    )
    garg_steps: int = param(1500, "Adam updates of the interleaved model (~45 s on one core)", minimum=1)
    garg_batch_size: int = param(64, "sequences per update of the interleaved model", minimum=1, formerly="garg_batch")
    garg_seeds: int = param(
        3,
        "replicate seeds of the interleaved model (replicate 0 is seed; ~45 s each: 3, not 5, for compute)",
        minimum=1,
        maximum=16,
    )
    garg_lr: float = param(
        1e-3, "peak Adam learning rate of the interleaved model (warm-up, cosine)", minimum=0.0, maximum=MAX_LR
    )
    eta_seeds: int = param(
        5,
        "one-layer models trained from replicate seeds (replicate 0 is seed, the headline model; "
        "analysis.claims.evidence.replicate_seed): the one-layer claims' band over replicates (about 8 s each, one "
        "thread)",
        minimum=1,
        maximum=16,
    )
    depth_seeds: int = param(
        5,
        "replicate seeds of every stack of layers (replicate 0 is seed): the depth claims' band over replicates "
        "(about 5 s at K = 2 to 10 s at K = 4 each, one thread)",
        minimum=1,
        maximum=16,
    )
    mahankali: tuple[str, ...] = param(
        ("gaussian", "anisotropic", "relu"),
        "laws on which a 1-layer linear LSA is also trained (Mahankali et al.; ~7 s each): Gaussian inputs, "
        "isotropic or anisotropic (cond), or isotropic with ReLU responses y = max(0, w.x) + noise",
        choices=MAHANKALI_LAWS,
        min_len=0,
    )
    mahankali_seeds: int = param(
        5, "replicate seeds of each Mahankali law's layer (replicate 0 is seed; ~7 s each)", minimum=1, maximum=16
    )
    mahankali_d: int = param(5, "input dimension of Mahankali et al.'s setting", minimum=1, maximum=32)
    mahankali_n: int = param(20, "context examples N of Mahankali et al.'s setting", minimum=1, maximum=200)
    ridge_mc_d: int = param(
        10, "dimension of the Gaussian ridge / least-squares Monte Carlo (k = 1..3d)", minimum=2, maximum=64
    )
    ridge_mc_noise: float = param(
        0.5, "label noise of the Gaussian ridge / least-squares Monte Carlo", minimum=0.01, maximum=MAX_NOISE
    )
    ridge_mc_tasks: int = param(
        4000, "Monte Carlo contexts per k of the Gaussian ridge / least-squares check", minimum=16
    )
    threads: int = param(1, "torch threads while training (tiny matrices: 1 avoids contention)", minimum=1)
    looped: tuple[str, ...] = param(
        ("gaussian", "anisotropic"),
        "laws on which a weight-tied (looped) one-layer LSA is trained (Chen et al., 003#50; ~20 s each)",
        choices=("gaussian", "anisotropic"),
        min_len=0,
    )
    looped_seeds: int = param(
        3,
        "replicate seeds of each looped LSA (replicate 0 is seed; ~20 s each: 3, not 5, for compute)",
        minimum=1,
        maximum=16,
    )
    looped_d: int = param(5, "input dimension of the looped-LSA task", minimum=1, maximum=32)
    looped_n: int = param(20, "context examples n of the looped-LSA task (n = O(d): 4 d)", minimum=1, maximum=200)
    looped_loops: int = param(
        4, "loops T the looped LSA is trained with (loss read after loop T)", minimum=1, maximum=8
    )
    looped_eval_loops: int = param(
        8, "loops k = 1..this at which the looped LSA is evaluated (beyond T: extrapolation)", minimum=1, maximum=16
    )
    looped_steps: int = param(400, "Adam updates of each looped LSA (depth_* schedule otherwise)", minimum=1)
    looped_batch_size: int = param(256, "tasks per update of the looped LSA", minimum=1, formerly="looped_batch")
    looped_n_eval: int = param(4000, "evaluation prompts of the looped LSA", minimum=16)
    logistic: bool = param(
        True, "also in-context classification by a looped softmax layer (000#33, probes/icl_gd/logistic.py)"
    )
    logistic_d: int = param(5, "input dimension of the in-context classification task", minimum=1, maximum=32)
    logistic_n: int = param(20, "labelled examples per classification prompt", minimum=1, maximum=200)
    logistic_eta: float = param(
        1.0, "step of the normalised GD the softmax layer is trained on", minimum=1e-3, maximum=10.0
    )
    logistic_radius: float = param(
        8.0,
        "iterates of the one-step training task have |w| ~ U(0, this) (covers 10 loops)",
        minimum=0.1,
        maximum=100.0,
    )
    logistic_loops: int = param(10, "the trained layer is looped T = 1..this times", minimum=1, maximum=32)
    logistic_steps: int = param(800, "Adam updates of each one-step softmax layer", minimum=1)
    logistic_batch_size: int = param(
        256, "prompts per update of the one-step softmax layer", minimum=1, formerly="logistic_batch"
    )
    logistic_lr: float = param(1e-2, "peak Adam learning rate of the one-step softmax layer", minimum=1e-6, maximum=1.0)
    logistic_seeds: int = param(
        5,
        "replicate seeds of the one-step softmax layer (replicate 0 is seed; ~4 s each; the claim takes the worst)",
        minimum=1,
    )
    logistic_eval: int = param(2000, "held-out classification prompts", minimum=2)

    def validate(self) -> None:
        super().validate()
        for name in (
            "train_lr",
            "depth_lr",
            "garg_lr",
        ):  # analysis.training.train needs them > 0 (init_std: the model config)
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.garg_d_model % self.garg_n_heads:  # the interleaved model's own fields (not model fields)
            raise ValueError(
                f"garg_n_heads must divide garg_d_model={self.garg_d_model}, got garg_n_heads={self.garg_n_heads}"
            )
        if self.looped_eval_loops < self.looped_loops:
            raise ValueError(
                f"looped_eval_loops must be >= looped_loops = {self.looped_loops}, got {self.looped_eval_loops}"
            )
        if self.mahankali and 2 * self.mahankali_d**2 > self.n_eval:
            raise ValueError(
                f"n_eval must be >= 2 mahankali_d^2 = {2 * self.mahankali_d**2} to fit a step matrix "
                f"(and refit it without each tenth for its SE), got {self.n_eval}"
            )


SEED_PARTS = ("eta", "depth", "mahankali", "looped", "garg", "logistic")  # the parts with a ``<part>_seeds`` field


def part_seeds(cfg: Config, part: str) -> list[int]:
    """The replicate seeds of one trained part (:data:`SEED_PARTS`): ``analysis.claims.evidence.replicate_seeds``
    of the config's seed; replicate 0 is ``cfg.seed`` itself (the part's first model keeps its key)."""
    if part not in SEED_PARTS:
        raise ValueError(f"part must be one of {SEED_PARTS}, got {part!r}")
    return replicate_seeds(cfg.seed, int(getattr(cfg, f"{part}_seeds")))


def linear_task(cfg: Config, d: int, n: int, x_dist: str) -> Config:
    """The probe's config on a part's own task: input dimension ``d``, ``n`` context examples, inputs of law
    ``x_dist``, linear attention whatever the headline kernel (the constructions the parts compare with, and the
    read-out of their weights, are linear)."""
    return cfg.replace(d=d, n_context=n, x_dist=x_dist, attention="linear")


def spectrum(cfg: Config) -> np.ndarray | None:
    """Eigenvalues of Sigma for anisotropic inputs (geometric, mean 1), else None."""
    return th.geometric_spectrum(cfg.d, cfg.cond) if cfg.x_dist == "anisotropic" else None
