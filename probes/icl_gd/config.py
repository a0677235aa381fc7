"""The configuration of the in-context-regression probe, its limits and the replicate seeds of its trained parts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.claims.evidence import replicate_seeds
from analysis.core.config import PartConfig, part, switch
from analysis.core.validation import check_float
from analysis.probing.base import ModelPart, ProbeConfig, model_param, param
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
class Train(PartConfig):
    """Training the one-layer models (the headline depth K = 1)."""

    PART = "train"

    steps: int = param(2000, "Adam updates per trained model", minimum=1, formerly="steps", smoke=300)
    batch_size: int = param(2048, "tasks per update", minimum=1, formerly="batch", smoke=256)
    lr: float = param(
        2e-2, "peak Adam learning rate (cosine decay to 10%)", minimum=0.0, maximum=MAX_LR, formerly="lr", smoke=1e-2
    )

    def validate(self) -> None:
        super().validate()
        check_float(self.flat("lr"), self.lr, minimum=0.0, strict_minimum=True)  # Adam needs lr > 0


@dataclass(frozen=True)
class Depth(PartConfig):
    """Training the stacks of K >= 2 layers."""

    PART = "depth"

    steps: int = param(
        1200,
        "Adam updates of the stacks with K >= 2 (time budget: cost ~ K * depth_batch_size * steps)",
        minimum=1,
        smoke=150,
    )
    batch_size: int = param(
        512, "tasks per update of the stacks with K >= 2", minimum=1, formerly="depth_batch", smoke=256
    )
    lr: float = param(
        1e-2,
        "peak Adam learning rate of the stacks with K >= 2 (after warm-up, cosine to 10%)",
        minimum=0.0,
        maximum=MAX_LR,
    )
    warmup: int = param(
        100, "linear warm-up updates of the stacks with K >= 2 (without it lr 1e-2 blows up early)", minimum=0, smoke=15
    )
    clip: float = param(
        1.0, "global gradient-norm clip of the stacks with K >= 2 (caps rare large-|w| batches)", minimum=0.0
    )
    seeds: int = param(
        5,
        "replicate seeds of every stack of layers (replicate 0 is seed): the depth claims' band over replicates "
        "(about 5 s at K = 2 to 10 s at K = 4 each, one thread)",
        minimum=1,
        maximum=16,
        smoke=2,
    )

    def validate(self) -> None:
        super().validate()
        check_float(self.flat("lr"), self.lr, minimum=0.0, strict_minimum=True)  # Adam needs lr > 0


@dataclass(frozen=True)
class Garg(PartConfig):
    """A small softmax transformer on the interleaved layout of Garg et al. (2022)."""

    PART = "garg"

    enabled: bool = switch(True, "also train a small softmax transformer on the interleaved (Garg et al. 2022) layout")
    d: int = param(3, "input dimension of the interleaved task (small: a CPU-sized model)", minimum=1, maximum=64)
    n_points: int = param(
        10, "examples per interleaved sequence (predictions at k = 0..this-1)", minimum=2, maximum=200, smoke=6
    )
    x_dist: str = param(
        "gaussian", "input law of the interleaved task (Garg et al.: N(0, I))", choices=("gaussian", "uniform")
    )
    d_model: int = param(
        32, "d_model of the interleaved model (pre-LN, softmax, MLP 4x)", minimum=8, maximum=256, formerly="garg_width"
    )
    n_layers: int = param(2, "layers of the interleaved model", minimum=1, maximum=8, formerly="garg_layers")
    n_heads: int = param(4, "attention heads of the interleaved model", minimum=1, maximum=16, formerly="garg_heads")
    steps: int = param(1500, "Adam updates of the interleaved model (~45 s on one core)", minimum=1, smoke=40)
    batch_size: int = param(
        64, "sequences per update of the interleaved model", minimum=1, formerly="garg_batch", smoke=32
    )
    seeds: int = param(
        3,
        "replicate seeds of the interleaved model (replicate 0 is seed; ~45 s each: 3, not 5, for compute)",
        minimum=1,
        maximum=16,
        smoke=2,
    )
    lr: float = param(
        1e-3, "peak Adam learning rate of the interleaved model (warm-up, cosine)", minimum=0.0, maximum=MAX_LR
    )

    def validate(self) -> None:
        super().validate()
        check_float(self.flat("lr"), self.lr, minimum=0.0, strict_minimum=True)  # Adam needs lr > 0
        if self.d_model % self.n_heads:  # the interleaved model's own fields (not model fields)
            raise ValueError(f"garg_n_heads must divide garg_d_model={self.d_model}, got garg_n_heads={self.n_heads}")


@dataclass(frozen=True)
class Mahankali(PartConfig):
    """One-layer linear LSA trained on the laws of Mahankali et al. (2023)."""

    PART = "mahankali"

    laws: tuple[str, ...] = switch(
        ("gaussian", "anisotropic", "relu"),
        "laws on which a 1-layer linear LSA is also trained (Mahankali et al.; ~7 s each): Gaussian inputs, "
        "isotropic or anisotropic (cond), or isotropic with ReLU responses y = max(0, w.x) + noise",
        choices=MAHANKALI_LAWS,
        min_len=0,
    )
    seeds: int = param(
        5,
        "replicate seeds of each Mahankali law's layer (replicate 0 is seed; ~7 s each)",
        minimum=1,
        maximum=16,
        smoke=2,
    )
    d: int = param(5, "input dimension of Mahankali et al.'s setting", minimum=1, maximum=32, smoke=3)
    n: int = param(20, "context examples N of Mahankali et al.'s setting", minimum=1, maximum=200, smoke=6)


@dataclass(frozen=True)
class RidgeMC(PartConfig):
    """The Gaussian ridge / least-squares Monte Carlo."""

    PART = "ridge_mc"

    d: int = param(
        10, "dimension of the Gaussian ridge / least-squares Monte Carlo (k = 1..3d)", minimum=2, maximum=64, smoke=4
    )
    noise: float = param(
        0.5, "label noise of the Gaussian ridge / least-squares Monte Carlo", minimum=0.01, maximum=MAX_NOISE
    )
    tasks: int = param(
        4000, "Monte Carlo contexts per k of the Gaussian ridge / least-squares check", minimum=16, smoke=400
    )


@dataclass(frozen=True)
class Looped(PartConfig):
    """Weight-tied (looped) one-layer LSA (Chen et al., 003#50)."""

    PART = "looped"

    laws: tuple[str, ...] = switch(
        ("gaussian", "anisotropic"),
        "laws on which a weight-tied (looped) one-layer LSA is trained (Chen et al., 003#50; ~20 s each)",
        choices=("gaussian", "anisotropic"),
        min_len=0,
        smoke=("gaussian",),
    )
    seeds: int = param(
        3,
        "replicate seeds of each looped LSA (replicate 0 is seed; ~20 s each: 3, not 5, for compute)",
        minimum=1,
        maximum=16,
        smoke=2,
    )
    d: int = param(5, "input dimension of the looped-LSA task", minimum=1, maximum=32, smoke=3)
    n: int = param(20, "context examples n of the looped-LSA task (n = O(d): 4 d)", minimum=1, maximum=200, smoke=8)
    loops: int = param(
        4, "loops T the looped LSA is trained with (loss read after loop T)", minimum=1, maximum=8, smoke=2
    )
    eval_loops: int = param(
        8,
        "loops k = 1..this at which the looped LSA is evaluated (beyond T: extrapolation)",
        minimum=1,
        maximum=16,
        smoke=3,
    )
    steps: int = param(400, "Adam updates of each looped LSA (depth_* schedule otherwise)", minimum=1, smoke=40)
    batch_size: int = param(256, "tasks per update of the looped LSA", minimum=1, formerly="looped_batch", smoke=64)
    n_eval: int = param(4000, "evaluation prompts of the looped LSA", minimum=16, smoke=500)

    def validate(self) -> None:
        super().validate()
        if self.eval_loops < self.loops:
            raise ValueError(f"looped_eval_loops must be >= looped_loops = {self.loops}, got {self.eval_loops}")


@dataclass(frozen=True)
class Logistic(PartConfig):
    """In-context classification by a looped softmax layer (000#33)."""

    PART = "logistic"

    enabled: bool = switch(
        True, "also in-context classification by a looped softmax layer (000#33, probes/icl_gd/logistic.py)"
    )
    d: int = param(5, "input dimension of the in-context classification task", minimum=1, maximum=32)
    n: int = param(20, "labelled examples per classification prompt", minimum=1, maximum=200)
    eta: float = param(1.0, "step of the normalised GD the softmax layer is trained on", minimum=1e-3, maximum=10.0)
    radius: float = param(
        8.0,
        "iterates of the one-step training task have |w| ~ U(0, this) (covers 10 loops)",
        minimum=0.1,
        maximum=100.0,
    )
    loops: int = param(10, "the trained layer is looped T = 1..this times", minimum=1, maximum=32, smoke=3)
    steps: int = param(800, "Adam updates of each one-step softmax layer", minimum=1, smoke=30)
    batch_size: int = param(
        256, "prompts per update of the one-step softmax layer", minimum=1, formerly="logistic_batch"
    )
    lr: float = param(1e-2, "peak Adam learning rate of the one-step softmax layer", minimum=1e-6, maximum=1.0)
    seeds: int = param(
        5,
        "replicate seeds of the one-step softmax layer (replicate 0 is seed; ~4 s each; the claim takes the worst)",
        minimum=1,
        smoke=1,
    )
    eval: int = param(2000, "held-out classification prompts", minimum=2, smoke=64)


@dataclass(frozen=True)
class Model(ModelPart):
    """The trained linear self-attention stacks."""

    attention: str = model_param(
        "attention", "linear", "attention kernel of the trained models", choices=("linear", "softmax")
    )
    init_std: float = model_param(
        "init_std",
        0.02,
        "std of the initial weights (small: deep LSA stacks blow up from fan-in init)",
        maximum=MAX_INIT_STD,
    )


@dataclass(frozen=True)
class Config(ProbeConfig):
    SMOKE = {
        "d": 4,
        "n_context": 6,
        "depths": (1, 2),
        "n_eval": 4000,
        "n_mc": 20000,
        "n_fit": 1000,
        "k_values": (1, 3, 6),
        "construction_n_layers": 3,
        "eta_seeds": 2,
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
    model: Model = part(Model)
    hide_query: bool = param(True, "train and evaluate with the query hidden as a key (von Oswald's architecture)")
    train: Train = part(Train)
    depth: Depth = part(Depth)
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
    garg: Garg = part(Garg)
    eta_seeds: int = param(
        5,
        "one-layer models trained from replicate seeds (replicate 0 is seed, the headline model; "
        "analysis.claims.evidence.replicate_seed): the one-layer claims' band over replicates (about 8 s each, one "
        "thread)",
        minimum=1,
        maximum=16,
    )
    mahankali: Mahankali = part(Mahankali)
    ridge_mc: RidgeMC = part(RidgeMC)
    threads: int = param(1, "torch threads while training (tiny matrices: 1 avoids contention)", minimum=1)
    looped: Looped = part(Looped)
    logistic: Logistic = part(Logistic)

    def validate(self) -> None:
        super().validate()
        if self.mahankali.laws and 2 * self.mahankali.d**2 > self.n_eval:
            raise ValueError(
                f"n_eval must be >= 2 mahankali_d^2 = {2 * self.mahankali.d**2} to fit a step matrix "
                f"(and refit it without each tenth for its SE), got {self.n_eval}"
            )


SEED_PARTS = ("eta", "depth", "mahankali", "looped", "garg", "logistic")  # the parts with a ``<part>_seeds`` field


def part_seeds(cfg: Config, part: str) -> list[int]:
    """The replicate seeds of one trained part (:data:`SEED_PARTS`): ``analysis.claims.evidence.replicate_seeds``
    of the config's seed; replicate 0 is ``cfg.seed`` itself (the part's first model keeps its key)."""
    if part not in SEED_PARTS:
        raise ValueError(f"part must be one of {SEED_PARTS}, got {part!r}")
    return replicate_seeds(cfg.seed, int(cfg.value_of(f"{part}_seeds")))


def linear_task(cfg: Config, d: int, n: int, x_dist: str) -> Config:
    """The probe's config on a part's own task: input dimension ``d``, ``n`` context examples, inputs of law
    ``x_dist``, linear attention whatever the headline kernel (the constructions the parts compare with, and the
    read-out of their weights, are linear)."""
    return cfg.replace(d=d, n_context=n, x_dist=x_dist, attention="linear")


def spectrum(cfg: Config) -> np.ndarray | None:
    """Eigenvalues of Sigma for anisotropic inputs (geometric, mean 1), else None."""
    return th.geometric_spectrum(cfg.d, cfg.cond) if cfg.x_dist == "anisotropic" else None
