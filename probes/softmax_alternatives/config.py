"""The configuration of the softmax-alternatives probe, and the constants its parts share."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.core.config import PartConfig, part, switch
from analysis.probing.base import MAX_SEED, ProbeConfig, param, replicates_param

NAME = "softmax_alternatives"
MAX_SLOTS = 65536


def _check_increasing(part: PartConfig, attr: str, at_least: int = 0) -> None:
    """``ValueError`` naming the field unless the values of tuple field ``attr`` of ``part`` strictly increase
    (and, with ``at_least``, number at least that many)."""
    v = getattr(part, attr)
    if len(v) < at_least or any(b <= a for a, b in zip(v, v[1:], strict=False)):
        more = f" with at least {at_least} values" if at_least else ""
        raise ValueError(f"{part.flat(attr)} must be strictly increasing{more}, got {v}")


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
        _check_increasing(self, "slots", at_least=3)


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
        _check_increasing(self, "keys")


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
        _check_increasing(self, "ks", at_least=3)


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
        _check_increasing(self, "betas")


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
        _check_increasing(self, "scales")


@dataclass(frozen=True)
class Features(PartConfig):
    """Linear attention's weights (003#74)."""

    PART = "features"

    enabled: bool = switch(True, "measure the entropy of elu + 1 linear attention's weights against its exact law")
    d_head: int = param(
        16,
        "width d of the queries and keys (i.i.d. N(0, 1) coordinates)",
        minimum=1,
        maximum=256,
        formerly="features_width",
    )
    keys: int = param(1024, "keys n per query row", minimum=2, maximum=65536, smoke=64)
    queries: int = param(16, "query rows per replicate, each over its own keys", minimum=1, maximum=1024, smoke=4)
    seeds: int = replicates_param("sets of queries and keys")


@dataclass(frozen=True)
class Taylor(PartConfig):
    """The Taylor feature map (000#51)."""

    PART = "taylor"

    enabled: bool = switch(True, "measure the Taylor feature map's monotonicity violations and weight entropy")
    d_head: int = param(
        16,
        "width d of the queries and keys (i.i.d. N(0, 1) coordinates)",
        minimum=1,
        maximum=64,
        formerly="taylor_width",
    )
    keys: int = param(256, "keys n per query row (every pair of them compared)", minimum=2, maximum=2048, smoke=32)
    queries: int = param(16, "query rows per replicate, each over its own keys", minimum=1, maximum=1024, smoke=4)
    seeds: int = replicates_param("sets of queries and keys")


@dataclass(frozen=True)
class Linearity(PartConfig):
    """The linearity of an MLP sublayer (003#37)."""

    PART = "linearity"

    enabled: bool = switch(True, "measure the linearity score of an MLP sublayer with and without its skip connection")
    scales: tuple[float, ...] = param(
        (0.5, 1.0, 2.0, 4.0),
        "std of the Gaussian input tokens (the MLP's pre-activations scale with it), strictly increasing",
        minimum=0.01,
        maximum=16.0,
        smoke=(1.0, 2.0),
    )
    d_model: int = param(
        32, "width d of the block (fan-in init)", minimum=2, maximum=256, formerly="linearity_width", smoke=8
    )
    d_mlp: int = param(128, "the MLP's hidden units", minimum=1, maximum=2048, formerly="linearity_hidden", smoke=32)
    activation: str = param(
        "gelu",
        "the MLP's activation (a smooth one: gelu | gelu_tanh | silu | tanh)",
        choices=("gelu", "gelu_tanh", "silu", "tanh"),
    )
    tokens: int = param(64, "tokens per sequence (uniform full attention over them)", minimum=2, maximum=4096, smoke=16)
    batch_size: int = param(
        256,
        "sequences per layer (the regression's samples: tokens x sequences, >> width)",
        minimum=1,
        maximum=65536,
        formerly="linearity_batch",
        smoke=16,
    )
    seeds: int = replicates_param("layers (weights and tokens)")

    def validate(self) -> None:
        super().validate()
        _check_increasing(self, "scales")
        if self.enabled and self.tokens * self.batch_size < 4 * (self.d_model + 1):
            raise ValueError(
                "linearity_tokens x linearity_batch_size (the regression's samples) must be at least "
                f"4 (linearity_d_model + 1), got {self.tokens * self.batch_size}"
            )


@dataclass(frozen=True)
class Bilinear(PartConfig):
    """The bilinear MLP on a planted low-rank target (003#57)."""

    PART = "bilinear"

    enabled: bool = switch(True, "train bilinear MLPs on a planted rank-r quadratic target and read their spectra")
    d_model: int = param(
        16, "input and output width d of the bilinear MLP", minimum=2, maximum=64, formerly="bilinear_width", smoke=6
    )
    d_mlp: int = param(
        64,
        "the MLP's units m (m >= d lets it hold any d interaction matrices)",
        minimum=1,
        maximum=1024,
        formerly="bilinear_hidden",
        smoke=12,
    )
    rank: int = param(3, "rank r of the planted target (< bilinear_d_model)", minimum=1, maximum=63, smoke=2)
    samples: int = param(
        1024,
        "training inputs N (>= d (d + 1) / 2: the least-squares fit is unique)",
        minimum=3,
        maximum=1 << 17,
        smoke=96,
    )
    noise: float = param(0.5, "std sigma of the label noise", minimum=0.0, maximum=100.0)
    steps: int = param(
        1000, "L-BFGS iterations (full batch, float64) to the minimum", minimum=1, maximum=100000, smoke=100
    )
    seeds: int = replicates_param("trained layers (weights, inputs, basis, eigenvalues and noise)")

    def validate(self) -> None:
        super().validate()
        if self.enabled and self.rank >= self.d_model:
            raise ValueError(f"bilinear_rank must be < bilinear_d_model ({self.d_model}), got {self.rank}")
        if self.enabled and self.samples < self.d_model * (self.d_model + 1) // 2:
            raise ValueError(
                f"bilinear_samples must be >= d (d + 1) / 2 = {self.d_model * (self.d_model + 1) // 2} "
                f"(d = bilinear_d_model), got {self.samples}"
            )


@dataclass(frozen=True)
class Isolation(PartConfig):
    """Token isolation at initialisation (000#118)."""

    PART = "isolation"

    enabled: bool = switch(True, "measure a random softmax layer's weight collision against the sequence length")
    tokens: tuple[int, ...] = param(
        (16, 64, 256, 1024),
        "sequence lengths n (full attention over all n), strictly increasing",
        minimum=2,
        maximum=8192,
        smoke=(8, 32),
    )
    d_model: int = param(
        16,
        "width d of the random attention layer (one head; >= 4 keeps the logit spread in the quadrature's range)",
        minimum=4,
        maximum=256,
        formerly="isolation_width",
    )
    rows: int = param(64, "query rows per sequence (the first ones; all rows are alike)", minimum=1, smoke=4)
    batch_size: int = param(
        4, "sequences per layer and length", minimum=1, maximum=1024, formerly="isolation_batch", smoke=1
    )
    seeds: int = replicates_param("layers (weights and tokens)")

    def validate(self) -> None:
        super().validate()
        _check_increasing(self, "tokens")
        if self.enabled and len(self.tokens) < 2:
            raise ValueError(f"isolation_tokens needs at least 2 lengths (a slope), got {self.tokens}")


@dataclass(frozen=True)
class Denominator(PartConfig):
    """The denominator of linear attention (003#31)."""

    PART = "denominator"

    enabled: bool = switch(
        True, "measure the tails of normalised linear attention's read-out and query gradient (and NormAttention's)"
    )
    d_model: int = param(
        16,
        "width d of the random attention layer (one head; d_v = d)",
        minimum=2,
        maximum=256,
        formerly="denominator_width",
    )
    tokens: int = param(
        64, "tokens per sequence (every row a query over all of them)", minimum=2, maximum=4096, smoke=16
    )
    batch_size: int = param(
        2048, "Gaussian sequences per layer", minimum=1, maximum=65536, formerly="denominator_batch", smoke=64
    )
    top: float = param(
        0.01,
        "fraction of the rows, the largest, Hill's estimator reads the tail index from",
        minimum=1e-4,
        maximum=0.5,
        smoke=0.02,
    )
    seeds: int = replicates_param("layers (weights and tokens)")

    def validate(self) -> None:
        super().validate()
        if self.enabled and self.top * self.tokens * self.batch_size < 2:
            raise ValueError(
                "denominator_top x denominator_tokens x denominator_batch_size (Hill's tail samples) must be at least "
                f"2, got {self.top * self.tokens * self.batch_size:g}"
            )


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
        _check_increasing(self, "scales")


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
        _check_increasing(self, "depths")


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
        _check_increasing(self, "keys")
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
        _check_increasing(self, "depths")


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
        _check_increasing(self, "context")


@dataclass(frozen=True)
class Config(ProbeConfig):
    """The probe's settings: the seed, then one nested config per part (flat names on the command line:
    ``--sparse-keys`` sets ``config.sparse.keys``, ``--sparse false`` turns the part off)."""

    seed: int = param(
        0, "memory weights and inputs (replicate i: replicate_seed(seed, i))", minimum=0, maximum=MAX_SEED
    )

    memory: Memory = part(Memory)
    sparse: Sparse = part(Sparse)
    interval: Interval = part(Interval)
    mimetic: Mimetic = part(Mimetic)
    jacobian: Jacobian = part(Jacobian)
    features: Features = part(Features)
    taylor: Taylor = part(Taylor)
    linearity: Linearity = part(Linearity)
    bilinear: Bilinear = part(Bilinear)
    isolation: Isolation = part(Isolation)
    denominator: Denominator = part(Denominator)
    softplus: Softplus = part(Softplus)
    shaped: Shaped = part(Shaped)
    sigmoid: Sigmoid = part(Sigmoid)
    cog: Cog = part(Cog)
    parallel: Parallel = part(Parallel)
    persistent: Persistent = part(Persistent)
