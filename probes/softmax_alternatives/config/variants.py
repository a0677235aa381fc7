"""The part configs of ``softmax_alternatives``: softplus over the l1 norm, shaped, sigmoid and Cog attention, parallel
sublayers and persistent memory vectors (items 12-17)."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.core.config import PartConfig, switch
from analysis.core.validation import check_increasing
from analysis.probing.base import param, replicates_param


@dataclass(frozen=True)
class Softplus(PartConfig):
    """Softplus over the l1 norm (000#85)."""

    PART = "softplus"

    enabled: bool = switch(True, "measure the entropy of softplus_l1 attention's weights against the logit scale")
    scales: tuple[float, ...] = param(
        (1.0, 2.0, 4.0, 8.0),
        "logit scales s (logits s q . k / sqrt(d)), strictly increasing; softmax's exact law needs s <= 16",
        minimum=0.01,
        maximum=16.0,
        smoke=(1.0, 4.0),
    )
    d_model: int = param(
        16,
        "width d of the random attention layer (one head; >= 4 keeps the rows' spread moderate)",
        minimum=4,
        maximum=256,
        formerly="softplus_width",
    )
    keys: int = param(1024, "keys n each row sees (the n + 1 tokens but itself)", minimum=2, maximum=8192, smoke=32)
    rows: int = param(16, "query rows per sequence (the first ones; all rows are alike)", minimum=1, smoke=4)
    batch_size: int = param(2, "sequences per layer", minimum=1, maximum=1024, formerly="softplus_batch", smoke=1)
    seeds: int = replicates_param("layers (weights and tokens, shared by every scale)")

    def validate(self) -> None:
        super().validate()
        check_increasing(self.flat("scales"), self.scales)


@dataclass(frozen=True)
class Shaped(PartConfig):
    """Shaped attention and the token kernel at initialisation (004#82)."""

    PART = "shaped"

    enabled: bool = switch(True, "measure the token kernel of skipless softmax and shaped-attention stacks at init")
    depths: tuple[int, ...] = param(
        (1, 2, 3, 4),
        "depths L of the stacks, strictly increasing (the softmax kernel is near 1 beyond ~4)",
        minimum=1,
        maximum=64,
        smoke=(1, 2),
    )
    d_model: int = param(32, "width d of every layer (one head)", minimum=2, maximum=256, formerly="shaped_width")
    tokens: int = param(16, "tokens T per sequence (causal)", minimum=2, maximum=1024, smoke=6)
    batch_size: int = param(
        64,
        "Gaussian sequences the token kernel averages over",
        minimum=1,
        maximum=65536,
        formerly="shaped_batch",
        smoke=8,
    )
    seeds: int = replicates_param("stacks (weights and tokens, shared by both kernels)")

    def validate(self) -> None:
        super().validate()
        check_increasing(self.flat("depths"), self.depths)


@dataclass(frozen=True)
class Sigmoid(PartConfig):
    """Sigmoid attention's row mass (004#109)."""

    PART = "sigmoid"

    enabled: bool = switch(True, "measure sigmoid attention's row mass (bias -ln n) against the sequence length")
    keys: tuple[int, ...] = param(
        (16, 64, 256, 1024),
        "keys n each row sees (the n + 1 tokens but itself), strictly increasing, at least 2",
        minimum=2,
        maximum=8192,
        smoke=(8, 32),
    )
    d_model: int = param(
        16, "width d of the random attention layer (one head)", minimum=2, maximum=256, formerly="sigmoid_width"
    )
    rows: int = param(64, "query rows per sequence (the first ones; all rows are alike)", minimum=1, smoke=4)
    batch_size: int = param(4, "sequences per layer and n", minimum=1, maximum=1024, formerly="sigmoid_batch", smoke=1)
    seeds: int = replicates_param("layers (weights and tokens)")

    def validate(self) -> None:
        super().validate()
        check_increasing(self.flat("keys"), self.keys)
        if self.enabled and len(self.keys) < 2:
            raise ValueError(f"sigmoid_keys needs at least 2 lengths (a slope), got {self.keys}")


@dataclass(frozen=True)
class Cog(PartConfig):
    """Cog attention's signed weights and the token kernel at initialisation (004#28)."""

    PART = "cog"

    enabled: bool = switch(True, "measure the token kernel of skipless softmax and Cog-attention stacks at init")
    depths: tuple[int, ...] = param(
        (1, 2, 4, 8), "depths L of the stacks, strictly increasing", minimum=1, maximum=64, smoke=(1, 2)
    )
    d_model: int = param(32, "width d of every layer (one head)", minimum=2, maximum=256, formerly="cog_width")
    tokens: int = param(16, "tokens T per sequence (causal)", minimum=2, maximum=1024, smoke=6)
    batch_size: int = param(
        64, "Gaussian sequences the token kernel averages over", minimum=1, maximum=65536, formerly="cog_batch", smoke=8
    )
    seeds: int = replicates_param("stacks (weights and tokens, shared by both kernels)")

    def validate(self) -> None:
        super().validate()
        check_increasing(self.flat("depths"), self.depths)


@dataclass(frozen=True)
class Parallel(PartConfig):
    """A pre-norm block's sublayers in parallel (000#96)."""

    PART = "parallel"

    enabled: bool = switch(True, "measure what feeding each block's MLP the block input (parallel) changes at init")
    depth: int = param(
        12, "blocks L of the pre-LN stack (at least 2: a slope in depth)", minimum=2, maximum=64, smoke=3
    )
    d_model: int = param(64, "residual width d", minimum=2, maximum=512, formerly="parallel_width", smoke=16)
    n_heads: int = param(
        4,
        "causal softmax heads per block (dividing the width)",
        minimum=1,
        maximum=64,
        formerly="parallel_heads",
        smoke=2,
    )
    d_mlp: int = param(256, "MLP hidden units m", minimum=1, maximum=4096, formerly="parallel_hidden", smoke=32)
    tokens: int = param(32, "tokens T per sequence", minimum=1, maximum=1024, smoke=8)
    batch_size: int = param(
        8, "Gaussian sequences per stack", minimum=1, maximum=1024, formerly="parallel_batch", smoke=2
    )
    seeds: int = replicates_param("stacks (weights and tokens)")

    def validate(self) -> None:
        super().validate()
        if self.enabled and self.d_model % self.n_heads:
            raise ValueError(f"parallel_n_heads must divide parallel_d_model ({self.d_model}), got {self.n_heads}")


@dataclass(frozen=True)
class Persistent(PartConfig):
    """Persistent memory vectors beside the context (004#90)."""

    PART = "persistent"

    enabled: bool = switch(True, "measure the persistent memory's share of a row's weight against the context length")
    slots: int = param(32, "persistent key-value vectors N", minimum=1, maximum=1024, smoke=4)
    scale: float = param(
        1.5, "the persistent vectors' scale r (N(0, r^2 I); the context tokens have scale 1)", minimum=0.1, maximum=4.0
    )
    context: tuple[int, ...] = param(
        (16, 64, 256, 1024),
        "context lengths T each row sees beside the memory, strictly increasing, at least 2",
        minimum=1,
        maximum=8192,
        min_len=2,
        smoke=(8, 32),
    )
    d_model: int = param(
        16, "width d of the random attention layer (one head)", minimum=2, maximum=256, formerly="persistent_width"
    )
    rows: int = param(16, "context query rows per sequence (the first ones; all rows are alike)", minimum=1, smoke=4)
    batch_size: int = param(
        2, "sequences per layer and T", minimum=1, maximum=1024, formerly="persistent_batch", smoke=1
    )
    seeds: int = replicates_param(
        "layers and memories (weights, persistent vectors and tokens; ten: one memory's N vectors move a layer's "
        "share by several per cent)",
        default=10,
    )

    def validate(self) -> None:
        super().validate()
        check_increasing(self.flat("context"), self.context)
