"""The configuration of the attention-only probe, and the constants its parts share."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.core.config import PartConfig, part
from analysis.core.validation import check_distinct
from analysis.data.tasks import ConvolutionRegression, Induction, NearestNeighbour
from analysis.probing.base import MAX_SEED, ModelPart, ProbeConfig, model_param, param

SEED_CONV, SEED_KV, SEED_RANK, SEED_SAN = "004#89", "004#24", "004#72", "004#1"
SOURCE = "analysis/theory/attention_only.py"


@dataclass(frozen=True)
class Neighbour(PartConfig):
    """Rank against heads on nearest-neighbour search (004#72): the part ``nearest_neighbour``."""

    PART = "neighbour"

    d: int = param(
        16,
        "nearest neighbour: dimension d (a multiple of 4: heads of rank d, d/4 and 1)",
        minimum=4,
        maximum=64,
        smoke=4,
    )
    keys: int = param(16, "nearest neighbour: keys N per sequence", minimum=2, maximum=256, smoke=4)
    keys_short: int = param(2, "nearest neighbour: keys N of the short context (depth)", minimum=2, maximum=256)
    queries: int = param(8, "nearest neighbour: queries M per sequence", minimum=1, maximum=256)
    steps: int = param(600, "nearest neighbour: optimiser updates per model", minimum=1, smoke=3)
    batch_size: int = param(
        32, "nearest neighbour: sequences per update", minimum=1, maximum=1024, formerly="neighbour_batch"
    )
    lr: float = param(0.03, "nearest neighbour: peak learning rate (Adam, cosine)", minimum=1e-6, maximum=1.0)
    seeds: int = param(5, "nearest neighbour: training seeds per model (replicate_seed(seed, i))", minimum=1, smoke=2)
    eval: int = param(512, "nearest neighbour: held-out sequences per model", minimum=2, maximum=100_000, smoke=16)
    theory_sets: int = param(2000, "nearest neighbour: key sets of the theory's Monte Carlo", minimum=8, smoke=64)


@dataclass(frozen=True)
class Matched(PartConfig):
    """Attention-only networks with matched parameters, and their stable ranks (004#1): the parts ``matched`` and
    ``stable_ranks``."""

    PART = "matched"

    d_model: int = param(
        32,
        "attention-only networks: width d of the matched models",
        minimum=2,
        maximum=256,
        formerly="matched_width",
        smoke=8,
    )
    n_heads: int = param(
        2, "attention-only networks: heads of the matched models", minimum=1, maximum=8, formerly="matched_heads"
    )
    n_layers: int = param(
        2,
        "attention-only networks: blocks of the standard model (MLP 4d)",
        minimum=1,
        maximum=8,
        formerly="matched_layers",
    )
    seq_len: int = param(
        64, "attention-only networks: corpus context T of the matched models", minimum=4, maximum=256, smoke=16
    )
    steps: int = param(300, "attention-only networks: updates per matched model (probe-LM recipe)", minimum=1, smoke=4)
    seeds: int = param(
        5,
        "attention-only networks: training seeds per matched model (replicate_seed(seed, i))",
        minimum=1,
        maximum=16,
        smoke=2,
    )
    eval_batches: int = param(
        8, "attention-only networks: held-out batches of 16 windows", minimum=1, maximum=64, smoke=1
    )
    snapshots: int = param(
        8, "attention-only networks: checkpoint intervals of the stable ranks (even)", minimum=2, maximum=64, smoke=2
    )


@dataclass(frozen=True)
class Deep(PartConfig):
    """Deep attention-only stacks with and without QK-norm (004#1): the part ``deep``."""

    PART = "deep"

    n_layers: int = param(
        48, "deep stacks: depth of the attention-only stacks", minimum=1, maximum=96, formerly="deep_layers", smoke=3
    )
    d_model: int = param(32, "deep stacks: width d", minimum=2, maximum=128, formerly="deep_width", smoke=8)
    n_heads: int = param(2, "deep stacks: heads", minimum=1, maximum=8, formerly="deep_heads")
    seq_len: int = param(16, "deep stacks: corpus context T", minimum=4, maximum=128, smoke=8)
    batch_size: int = param(
        8, "deep stacks: sequences per update", minimum=1, maximum=256, formerly="deep_batch", smoke=2
    )
    steps: int = param(200, "deep stacks: updates (Adam, constant lr, no warm-up, no clipping)", minimum=1, smoke=6)
    lr: float = param(1e-3, "deep stacks: Adam learning rate (torch's default)", minimum=1e-6, maximum=1.0)
    seeds: int = param(
        3,
        "deep stacks: seeds per QK-norm setting (replicate_seed(seed, i); ~33 s per seed; undecided claims run again "
        "at 8, then 24: analysis.probing.sequential)",
        minimum=1,
        maximum=32,
        smoke=2,
    )


@dataclass(frozen=True)
class Kernel(PartConfig):
    """The convolution kernel regressed on."""

    PART = "kernel"

    decay: float = param(1.0, "tap scale ratio c_(k+1)/c_k of the kernel", minimum=0.05, maximum=20.0)
    seed: int = param(0, "seed of the convolution kernel", minimum=0, maximum=MAX_SEED)


@dataclass(frozen=True)
class Conv(PartConfig):
    """The convolution regression and its trained layers (004#89)."""

    PART = "conv"

    len: int = param(16, "sequence length T of the convolution regression", minimum=2, maximum=256)
    steps: int = param(1500, "optimiser updates per trained convolution layer", minimum=1, smoke=20)
    batch_size: int = param(32, "sequences per update (convolution)", minimum=1, maximum=1024, formerly="conv_batch")
    lr: float = param(0.03, "peak learning rate (convolution; Adam, cosine)", minimum=1e-6, maximum=1.0)


@dataclass(frozen=True)
class IndTraining(PartConfig):
    """Training the induction models."""

    PART = "ind"

    steps: int = param(1000, "optimiser updates per induction model", minimum=1, smoke=20)
    batch_size: int = param(32, "sequences per update (induction)", minimum=1, maximum=1024, formerly="ind_batch")
    lr: float = param(3e-3, "peak learning rate (induction; Adam, cosine)", minimum=1e-6, maximum=1.0)


@dataclass(frozen=True)
class Spike(PartConfig):
    """Loss spikes: an update whose loss is far above its trailing window's."""

    PART = "spike"

    window: int = param(20, "loss spikes: trailing window of earlier updates", minimum=2, maximum=1000, smoke=2)
    k: float = param(6.0, "loss spikes: threshold in scaled MADs above the window's median", minimum=0.5)


@dataclass(frozen=True)
class Model(ModelPart):
    """The induction models."""

    vocab_size: int = model_param("vocab_size", 32, maximum=512)
    d_model: int = model_param("d_model", 32, maximum=256)
    n_heads: int = model_param("n_heads", 2, maximum=8, formerly="heads")


@dataclass(frozen=True)
class Config(ProbeConfig):
    SMOKE = {
        "construction_batch_size": 8,
        "train_seeds": 2,
        "n_eval": 32,
        "trend_widths": (4,),
    }

    d: int = param(4, "channel width d of the convolution (input and output)", minimum=1, maximum=32)
    taps: int = param(4, "taps K of the convolution (the construction uses K heads)", minimum=2, maximum=8)
    conv: Conv = part(Conv)
    kernel: Kernel = part(Kernel)
    construction_batch_size: int = param(
        64, "white sequences through the K-head construction", minimum=1, maximum=4096, formerly="construction_batch"
    )
    training: bool = param(True, "train the convolution layers and the induction models")
    train_seeds: int = param(
        5, "training seeds per model: replicate_seed(seed, i), their spread is the uncertainty", minimum=1
    )
    model: Model = part(Model)
    seq_len: int = param(24, "induction sequence length T", minimum=4, maximum=256)
    segment: int = param(8, "length L of the repeated segment", minimum=2, maximum=128)
    ind: IndTraining = part(IndTraining)
    n_eval: int = param(256, "held-out induction sequences per trained model", minimum=1, maximum=100_000)
    neighbour: Neighbour = part(Neighbour)
    matched: Matched = part(Matched)
    trend_widths: tuple[int, ...] = param(
        (16, 64),
        "attention-only networks: further widths d at which the standard and the matched attention-only model are "
        "trained (the matched gap's trend with width)",
        minimum=2,
        maximum=256,
    )
    deep: Deep = part(Deep)
    spike: Spike = part(Spike)
    seed: int = model_param("seed", 0, "weights, data and held-out data (replicate i: replicate_seed(seed, i))")

    def validate(self) -> None:
        super().validate()
        width, heads = self.model.d_model, self.model.n_heads
        if (width // heads) % 2:
            raise ValueError(f"d_model / n_heads must be even (RoPE in the induction models), got {width} / {heads}")
        if self.neighbour.d % 4:
            raise ValueError(f"neighbour_d must be a multiple of 4 (heads of rank d / 4), got {self.neighbour.d}")
        for prefix in ("matched", "deep"):
            width, heads = self.value_of(f"{prefix}_d_model"), self.value_of(f"{prefix}_n_heads")
            if width % heads or (width // heads) % 2:
                raise ValueError(
                    f"{prefix}_d_model / {prefix}_n_heads must be an even integer (RoPE), got {width} / {heads}"
                )
        for w in self.trend_widths:
            if w == self.matched.d_model or w % self.matched.n_heads or (w // self.matched.n_heads) % 2:
                raise ValueError(
                    f"trend_widths must differ from matched_d_model ({self.matched.d_model}) and divide by "
                    f"matched_n_heads ({self.matched.n_heads}) into an even head size (RoPE), got {w}"
                )
        check_distinct("trend_widths", self.trend_widths)
        if self.matched.snapshots % 2 or self.matched.snapshots > self.matched.steps:
            raise ValueError(
                f"matched_snapshots must be even (the second half starts at a checkpoint) and <= matched_steps "
                f"({self.matched.steps}), got {self.matched.snapshots}"
            )
        if self.conv.len < self.taps:
            raise ValueError(f"conv_len must be >= taps ({self.taps}), got {self.conv.len}")
        if self.seq_len < 2 * self.segment + 1:
            raise ValueError(f"seq_len must be >= 2 segment + 1 ({2 * self.segment + 1}), got {self.seq_len}")
        if self.model.vocab_size < self.seq_len - self.segment:
            raise ValueError(
                f"vocab_size must be >= seq_len - segment ({self.seq_len - self.segment}) "
                f"(the prefix has distinct tokens), got {self.model.vocab_size}"
            )

    def nn_task(self, short: bool = False) -> NearestNeighbour:
        return NearestNeighbour(
            self.neighbour.d, self.neighbour.keys_short if short else self.neighbour.keys, self.neighbour.queries
        )

    def conv_task(self) -> ConvolutionRegression:
        return ConvolutionRegression(self.d, self.taps, self.conv.len, self.kernel.decay, self.kernel.seed)

    def induction_task(self) -> Induction:
        return Induction(self.model.vocab_size, self.seq_len, self.segment)
