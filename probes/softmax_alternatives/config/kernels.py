"""The part configs of ``softmax_alternatives``: the slot count, sparsemax, the K-interval softmax, mimetic
initialisation and the kernel's Jacobian (items 1-5)."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.core.config import PartConfig, switch
from analysis.core.validation import check_increasing
from analysis.probing.base import param, replicates_param

MAX_SLOTS = 65536


@dataclass(frozen=True)
class Memory(PartConfig):
    """Key-value memories (an MLP sublayer read as one): the slot count (000#40)."""

    PART = "memory"

    slots: tuple[int, ...] = param(
        (16, 64, 256, 1024, 4096),
        "slot counts n of the key-value memories (the MLP's hidden width), strictly increasing, at least 3",
        minimum=1,
        maximum=MAX_SLOTS,
        smoke=(16, 64, 256),
    )
    d_model: int = param(
        64,
        "width d of the memories' input and output (the model width)",
        minimum=1,
        maximum=1024,
        formerly="memory_width",
    )
    std: float = param(
        0.1,
        "std of the keys (the zoo's gpt2 init_std; the values' std is init_std / sqrt(2), its output-projection "
        "rule at one layer); the pre-activations' std is memory_std sqrt(memory_d_model)",
        minimum=1e-4,
        maximum=1.0,
    )
    batch_size: int = param(
        512,
        "inputs per memory, uniform on the sphere of radius sqrt(d)",
        minimum=2,
        maximum=65536,
        formerly="memory_batch",
        smoke=64,
    )
    seeds: int = replicates_param("memories per slot count (ReLU and softmax share the weights of a seed)")

    def validate(self) -> None:
        super().validate()
        check_increasing(self.flat("slots"), self.slots, at_least=3)


@dataclass(frozen=True)
class Sparse(PartConfig):
    """A planted key under sparsemax (000#29)."""

    PART = "sparse"

    enabled: bool = switch(True, "measure sparsemax's isolation of a planted key among n random keys (and softmax's)")
    keys: tuple[int, ...] = param(
        (16, 64, 256, 1024),
        "keys n each query row sees (one planted), strictly increasing, at least 2 (a slope)",
        minimum=2,
        maximum=4096,
        min_len=2,
        smoke=(8, 32, 128),
    )
    gap: float = param(4.0, "the planted key's logit bias g (row logit std about 1 at init)", minimum=0.0, maximum=50.0)
    d_model: int = param(
        16, "width d of the random attention layer (one head)", minimum=1, maximum=256, formerly="sparse_width"
    )
    batch_size: int = param(
        4,
        "sequences of n + 1 Gaussian tokens per layer and n (each row one query)",
        minimum=1,
        formerly="sparse_batch",
        smoke=2,
    )
    rows: int = param(
        64,
        "query rows per sequence whose irrelevant mass is paired with its exact law (the first ones)",
        minimum=1,
        smoke=4,
    )
    seeds: int = replicates_param("random layers (weights and tokens)")

    def validate(self) -> None:
        super().validate()
        check_increasing(self.flat("keys"), self.keys)


@dataclass(frozen=True)
class Interval(PartConfig):
    """K-interval softmax (000#16)."""

    PART = "interval"

    enabled: bool = switch(True, "measure K-interval softmax (rounded and interpolated) against exact softmax")
    ks: tuple[int, ...] = param(
        (64, 128, 256, 512, 1024),
        "grid intervals K, strictly increasing, at least 3",
        minimum=1,
        maximum=1 << 16,
        smoke=(16, 32, 64),
    )
    d_model: int = param(
        16, "width d of the random attention layer (one head)", minimum=1, maximum=256, formerly="interval_width"
    )
    len: int = param(257, "tokens per sequence (each row sees them all)", minimum=2, maximum=4096, smoke=33)
    batch_size: int = param(
        4, "Gaussian sequences per layer", minimum=1, maximum=1024, formerly="interval_batch", smoke=2
    )
    seeds: int = replicates_param("random layers (weights and tokens)")

    def validate(self) -> None:
        super().validate()
        check_increasing(self.flat("ks"), self.ks, at_least=3)


@dataclass(frozen=True)
class Mimetic(PartConfig):
    """Mimetic initialisation (000#115)."""

    PART = "mimetic"

    enabled: bool = switch(True, "measure each token's weight on itself in a layer with mimetic initialisation")
    betas: tuple[float, ...] = param(
        (0.25, 0.5, 1.0, 1.5, 2.0),
        "beta of W_q^T W_k = alpha Z + beta I (the zoo's init='mimetic'), strictly increasing",
        minimum=0.0,
        maximum=4.0,
        smoke=(0.5, 2.0),
    )
    alpha: float = param(
        0.7, "alpha of W_q^T W_k = alpha Z + beta I (Trockman & Kolter's 0.7)", minimum=0.0, maximum=2.0
    )
    d_model: int = param(
        16,
        "width d of the random attention layer (one head; >= 4 keeps each row's logit spread within the quadrature's "
        "range)",
        minimum=4,
        maximum=256,
        formerly="mimetic_width",
    )
    tokens: int = param(64, "Gaussian tokens n per sequence (each row sees all, itself included)", minimum=2, smoke=16)
    batch_size: int = param(
        8, "sequences per layer and beta", minimum=1, maximum=1024, formerly="mimetic_batch", smoke=1
    )
    seeds: int = replicates_param("layers (Z and tokens, shared by every beta)")

    def validate(self) -> None:
        super().validate()
        check_increasing(self.flat("betas"), self.betas)


@dataclass(frozen=True)
class Jacobian(PartConfig):
    """The kernel's Jacobian against the logit scale (000#23)."""

    PART = "jacobian"

    enabled: bool = switch(True, "measure the Jacobian of softmax and SA-Softmax against the logit scale")
    scales: tuple[float, ...] = param(
        (16.0, 32.0, 64.0, 128.0),
        "logit scales s (logits s q . k / sqrt(d)), strictly increasing; the two-key law needs s sigma >~ 8",
        minimum=1.0,
        maximum=1e4,
        smoke=(16.0, 64.0),
    )
    d_model: int = param(
        16, "width d of the random attention layer (one head)", minimum=1, maximum=256, formerly="jacobian_width"
    )
    keys: int = param(32, "keys n each row sees (the n + 1 tokens but itself)", minimum=2, maximum=1024)
    batch_size: int = param(
        64,
        "sequences of n + 1 Gaussian tokens per layer (each row one query)",
        minimum=1,
        formerly="jacobian_batch",
        smoke=8,
    )
    seeds: int = replicates_param("random layers (weights and tokens)")

    def validate(self) -> None:
        super().validate()
        check_increasing(self.flat("scales"), self.scales)
