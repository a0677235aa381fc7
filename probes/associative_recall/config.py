"""The configuration of the associative-recall probe, the constants its parts share and the replicate seeds of its
trained parts."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from analysis.claims.evidence import mean_se, replicate_seeds
from analysis.core.config import PartConfig, part, switch
from analysis.core.validation import check_distinct, check_increasing
from analysis.probing.base import ModelPart, ProbeConfig, model_param, param, replicates_param
from analysis.theory import associative_recall as amt
from analysis.theory import power_method as pmt

KERNELS = ("softmax", "additive", "delta", "gated_delta")
MIXER = {  # ModelConfig fields of each kernel
    "softmax": {"attention": "softmax"},
    "additive": {"attention": "recurrent"},
    "delta": {"attention": "recurrent", "write_rule": "delta"},
    "gated_delta": {"attention": "recurrent", "write_rule": "delta", "decay": "gated"},
}
SEED_DELTA, SEED_SURVEY = "000#66", "003#8"  # 000#66 is 003#30 (REFERENCES.md)
SEED_LINEAR_RNN = "003#64"  # linear attention computed as a recurrence (the additive mixer's two forms)
SEED_GATED_RNN, SEED_SELECTIVE = "003#14", "003#16"
SEED_MOMENTUM = "003#112"  # Momentum DeltaNet: the momentum recurrence as a second-order system
SEED_DECAY = "003#2"  # gated linear attention: a global decay term in the additive update (RetNet, TransNormerLLM)
SOURCE = "analysis/theory/associative_recall.py"
GSOURCE = "analysis/theory/gated_recurrence.py"
GR_MODELS = ("lsa", "gated")  # item 6: one linear self-attention layer, one gated linear recurrence
SC_DECAYS = ("gated", "fixed")  # item 7: selective decay, time-invariant decay
SC_SPACINGS = ("random", "fixed")
SEED_POWER = "000#45"  # = 003#35 (REFERENCES.md)
PSOURCE = "analysis/theory/power_method.py"
PM_MODELS = ("power", "ln", "none")  # item 8: the power method itself, the post-LN looped layer, no norm
PM_NORMS = {"ln": "post", "none": "none"}
PM_BOOT = 300  # bootstrap resamples of the item-8 prompts


@dataclass(frozen=True)
class Favor(PartConfig):
    """FAVOR+ random features against exact softmax attention (the part ``favor``)."""

    PART = "favor"

    m: tuple[int, ...] = param(
        (16, 64, 256, 1024),
        "FAVOR+ numbers m of random features (increasing)",
        minimum=1,
        maximum=4096,
        smoke=(16, 64, 256),
    )
    norm: float = param(0.6, "norm of the FAVOR+ query and keys", minimum=0.0, maximum=2.0)
    keys: int = param(16, "keys in the FAVOR+ attention row", minimum=2, maximum=256)
    draws: int = param(8000, "FAVOR+ estimators per m in the variance check", minimum=16, maximum=100_000, smoke=2000)
    row_draws: int = param(400, "feature draws per m in the row-error check", minimum=8, maximum=10_000, smoke=100)

    def validate(self) -> None:
        super().validate()
        check_increasing(self.flat("m"), self.m)


@dataclass(frozen=True)
class Train(PartConfig):
    """Training the MQAR models, one per kernel and N (the part ``mqar``)."""

    PART = "train"

    steps: int = param(600, "optimiser updates per trained model", minimum=1, smoke=20)
    batch_size: int = param(32, "sequences per update", minimum=1, maximum=1024, formerly="train_batch")
    lr: float = param(3e-3, "peak learning rate (AdamW, cosine)", minimum=1e-6, maximum=1.0, formerly="lr")
    seeds: int = param(
        5, "replicate training seeds per kernel and N (the claims' 95% t band is over them)", minimum=1, smoke=1
    )


@dataclass(frozen=True)
class Lin(PartConfig):
    """Linear attention as the first-order expansion of softmax (the linearisation check)."""

    PART = "lin"

    ns: tuple[int, ...] = param(
        (32, 64, 128, 256, 512, 1024),
        "token counts n of the linearisation check (increasing)",
        minimum=2,
        maximum=8192,
        smoke=(256, 512),
    )
    d: int = param(8, "width and head size of the linearisation head", minimum=1, maximum=64)
    queries: int = param(16, "queries per token set in the linearisation check", minimum=1, maximum=256)
    reps: int = param(
        256, "independent token sets per n in the linearisation check", minimum=4, maximum=10_000, smoke=16
    )
    a_norm: float = param(1.0, "norm of each query's logit vector a = c W_k^T W_q x_q", minimum=0.0, maximum=2.0)

    def validate(self) -> None:
        super().validate()
        check_increasing(self.flat("ns"), self.ns)


@dataclass(frozen=True)
class Gated(PartConfig):
    """A gated linear recurrence against one linear self-attention layer on in-context regression (item 6)."""

    PART = "gated"

    enabled: bool = switch(
        True, "train the gated-RNN vs linear-attention comparison and selective copying (items 6, 7)"
    )
    d: int = param(5, "input width d of the in-context regression of item 6", minimum=1, maximum=32)
    n: int = param(10, "in-context examples N of item 6", minimum=1, maximum=64)
    noise: float = param(0.0, "label noise sigma of item 6", minimum=0.0, maximum=10.0)
    steps: int = param(400, "Adam updates per item-6 model", minimum=1, smoke=30)
    batch_size: int = param(256, "tasks per update in item 6", minimum=1, maximum=8192, formerly="gated_batch")
    lr: float = param(1e-2, "peak Adam learning rate of item 6 (cosine to 10%)", minimum=1e-6, maximum=1.0)
    seeds: int = param(5, "replicate training seeds per item-6 model", minimum=1, maximum=16, smoke=2)
    eval: int = param(50_000, "held-out regression tasks (float64, shared by every model)", minimum=16, smoke=2000)


@dataclass(frozen=True)
class Copying(PartConfig):
    """Selective copying with selective and time-invariant decay (item 7; on with ``gated``)."""

    PART = "copying"

    n_copy: int = param(3, "data tokens to copy in item 7", minimum=1, maximum=16)
    values: int = param(6, "data-token vocabulary of item 7", minimum=2, maximum=64)
    length: int = param(12, "length of the region holding the data tokens (item 7)", minimum=1, maximum=256)
    d_model: int = param(
        16,
        "d_model of the item-7 models (2 heads, MLP 4x, pre-LN, learned positions)",
        minimum=4,
        formerly="copying_width",
    )
    n_layers: int = param(2, "layers of the item-7 models", minimum=1, maximum=4, formerly="copying_layers")
    steps: int = param(300, "AdamW updates per item-7 model", minimum=1, smoke=10)
    batch_size: int = param(32, "sequences per update in item 7", minimum=1, maximum=1024, formerly="copying_batch")
    lr: float = param(1e-2, "peak learning rate of item 7", minimum=1e-6, maximum=1.0)
    seeds: int = param(5, "replicate training seeds per item-7 decay and spacing", minimum=1, maximum=16, smoke=1)
    eval: int = param(2000, "held-out selective-copying sequences per item-7 model", minimum=1, smoke=64)

    def validate(self) -> None:
        super().validate()
        if self.d_model % 2:  # the item-7 models have 2 heads
            raise ValueError(f"copying_d_model must be even (the item-7 models have 2 heads), got {self.d_model}")
        if self.length < self.n_copy:
            raise ValueError(f"copying_length must be >= copying_n_copy ({self.n_copy}), got {self.length}")


@dataclass(frozen=True)
class Power(PartConfig):
    """Looped linear attention as the power method on in-context PCA (item 8; on with ``power_method``)."""

    PART = "power"

    d: int = param(4, "input dimension d of the item-8 PCA prompts", minimum=2, maximum=16)
    n: int = param(32, "vectors n per item-8 prompt", minimum=2, maximum=256)
    rho: float = param(
        0.5,
        "item-8 spectrum 1, rho, rho^2, ... (gap lambda_2/lambda_1 = rho)",
        minimum=0.05,
        maximum=0.95,
    )
    radius: float = param(
        4.0,
        "item 8: inputs conditioned on |x| <= this (the token layout's scale)",
        minimum=1.0,
        maximum=100.0,
    )
    loops: int = param(3, "loops T the item-8 layer is trained with (loss after loop T)", minimum=1, maximum=8)
    eval_loops: int = param(
        8, "loops k = 1..this at which item 8 is evaluated (beyond T: extrapolation)", minimum=2, maximum=32, smoke=4
    )
    steps: int = param(1200, "Adam updates per item-8 model", minimum=1, smoke=20)
    batch_size: int = param(64, "prompts per update in item 8", minimum=1, maximum=4096, formerly="power_batch")
    lr: float = param(
        3e-3,
        "peak Adam learning rate of item 8 (50-update warm-up, cosine to 10%)",
        minimum=1e-6,
        maximum=1.0,
    )
    init_std: float = param(0.1, "item-8 initial weights N(0, this^2) (gpt2 init)", minimum=1e-4, maximum=1.0)
    seeds: int = param(5, "replicate training seeds per item-8 model", minimum=1, maximum=16, smoke=1)
    eval: int = param(2000, "held-out item-8 prompts (float64, shared by every model)", minimum=16, smoke=200)

    def validate(self) -> None:
        super().validate()
        if self.eval_loops < self.loops:
            raise ValueError(f"power_eval_loops must be >= power_loops = {self.loops}, got {self.eval_loops}")
        trace = float(pmt.spectrum(self.d, self.rho).sum())
        if self.radius**2 < trace:
            raise ValueError(
                f"power_radius must be at least sqrt(tr Sigma) = {math.sqrt(trace):.3f}, got {self.radius}"
            )


@dataclass(frozen=True)
class Momentum(PartConfig):
    """The delta rule with momentum against its second-order recurrence (003#112)."""

    PART = "momentum"

    enabled: bool = switch(True, "online regression by the momentum delta rule against its second-order recurrence")
    d: int = param(16, "key (and value) dimension d of the regressed map", minimum=2, maximum=256)
    beta: float = param(0.5, "write strength beta (b = beta/d per write)", minimum=1e-3, maximum=2.0)
    mus: tuple[float, float] = param(
        (0.9, 0.5),
        "momenta (oscillating, damped): the first with complex roots, (1 - sqrt(mu))^2 < beta/d < (1 + sqrt(mu))^2, "
        "the second with real ones, beta/d < (1 - sqrt(mu))^2",
        minimum=0.0,
        maximum=0.999,
    )
    steps: int = param(120, "writes T per sequence", minimum=4, maximum=10_000, smoke=40)
    batch_size: int = param(
        256,
        "key sequences per memory (their mean overlap is one replicate)",
        minimum=1,
        formerly="momentum_batch",
        smoke=8,
    )
    seeds: int = replicates_param("memories (map and keys)")

    def validate(self) -> None:
        super().validate()
        b = self.beta / self.d
        osc, damped = self.mus
        if not amt.momentum_oscillates(b, osc):
            raise ValueError(
                f"momentum_mus[0] must give complex roots at beta/d = {b:.4g}: (1 - sqrt(mu))^2 < beta/d < "
                f"(1 + sqrt(mu))^2, got mu = {osc}"
            )
        if not b < (1.0 - math.sqrt(damped)) ** 2:
            raise ValueError(
                f"momentum_mus[1] must give real roots at beta/d = {b:.4g}: beta/d < (1 - sqrt(mu))^2, "
                f"got mu = {damped}"
            )


@dataclass(frozen=True)
class Decay(PartConfig):
    """Additive memories with a global decay against their exact read-out error (003#2)."""

    PART = "decay"

    enabled: bool = switch(True, "untrained additive memories with a global decay against their exact read-out error")
    pairs: tuple[int, ...] = param(
        (16, 64, 256, 1024),
        "numbers N of stored pairs (each at least 2: one interferes), strictly increasing, at least 2",
        minimum=2,
        maximum=4096,
        min_len=2,
        smoke=(4, 16),
    )
    key: int = param(16, "key (and value) dimension d_k", minimum=2, maximum=256)
    gamma: float = param(
        0.96875, "the decay gamma per write (default RetNet's first head, 1 - 2^-5)", minimum=0.5, maximum=0.9999
    )
    batch_size: int = param(
        64, "memories per N and replicate", minimum=1, maximum=4096, formerly="decay_batch", smoke=4
    )
    seeds: int = replicates_param("sets of memories (keys and values)")

    def validate(self) -> None:
        super().validate()
        if self.enabled:
            check_increasing(self.flat("pairs"), self.pairs)


@dataclass(frozen=True)
class Model(ModelPart):
    """The trained MQAR models (the untrained memories' key dimension is ``d_key``)."""

    n_layers: int = model_param("n_layers", 2, maximum=4, formerly="layers")
    d_model: int = model_param("d_model", 64, maximum=256)
    n_heads: int = model_param("n_heads", 1, maximum=8, formerly="heads")


@dataclass(frozen=True)
class Config(ProbeConfig):
    SMOKE = {
        "n_pairs": (4, 8),
        "draws": 400,
        "n_eval": 16,
    }

    kernels: tuple[str, ...] = param(KERNELS, "token mixers compared", choices=KERNELS)
    n_pairs: tuple[int, ...] = param((4, 8, 16, 32), "numbers N of stored key-value pairs", minimum=1, maximum=64)
    d_key: int = param(16, "key dimension d_k of a memory (the head size of the trained models)", minimum=2, maximum=64)
    draws: int = param(4000, "independent untrained memories per kernel and N", minimum=16, maximum=100_000)
    favor: Favor = part(Favor)
    training: bool = param(True, "train a model per kernel and N on MQAR")
    model: Model = part(Model)
    n_keys: int = param(64, "key vocabulary of the MQAR task (>= the largest N)", minimum=1, maximum=512)
    n_values: int = param(64, "value vocabulary of the MQAR task", minimum=2, maximum=512)
    train: Train = part(Train)
    n_eval: int = param(256, "held-out MQAR sequences per trained model", minimum=1, maximum=100_000)
    lin: Lin = part(Lin)
    gated: Gated = part(Gated)
    copying: Copying = part(Copying)
    power_method: bool = param(
        True, "train looped linear attention with and without LayerNorm on in-context PCA (item 8)"
    )
    power: Power = part(Power)
    seed: int = model_param(
        "seed", 0, "memories, features, weights and data; replicate i of a trained item uses replicate_seed(seed, i)"
    )

    momentum: Momentum = part(Momentum)

    decay: Decay = part(Decay)

    def validate(self) -> None:
        super().validate()
        check_distinct("kernels", self.kernels)
        check_distinct("n_pairs", self.n_pairs)
        if max(self.n_pairs) > self.n_keys:
            raise ValueError(f"n_keys must be >= the largest n_pairs ({max(self.n_pairs)}), got {self.n_keys}")


def part_seeds(config: Config, part: str) -> list[int]:
    """The replicate seeds of a trained item (``part``: ``mqar``, ``gated`` item 6, ``copying`` item 7, ``power``
    item 8): replicate i uses :func:`analysis.claims.evidence.replicate_seed` ``(config.seed, i)``, so replicate 0
    is ``config.seed`` and runs with different seeds share no model."""
    n = {
        "mqar": config.train.seeds,
        "gated": config.gated.seeds,
        "copying": config.copying.seeds,
        "power": config.power.seeds,
    }
    if part not in n:
        raise ValueError(f"part must be one of {', '.join(n)}, got {part!r}")
    return replicate_seeds(config.seed, n[part])


def seed_se(acc: np.ndarray) -> np.ndarray:
    """SE of the seed mean over the last axis (the replicates; each seed has its own held-out sequences, so
    their spread holds the binomial noise too): the claims' uncertainty. NaN with one seed."""
    return np.apply_along_axis(lambda v: mean_se(v).se, -1, acc)
