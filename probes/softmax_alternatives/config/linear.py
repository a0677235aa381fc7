"""The part configs of ``softmax_alternatives``: linear attention's feature maps, an MLP sublayer's linearity, the
bilinear MLP, token isolation and linear attention's denominator (items 6-11)."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.core.config import PartConfig, switch
from analysis.core.validation import check_increasing
from analysis.probing.base import param, replicates_param


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
        check_increasing(self.flat("scales"), self.scales)
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
        check_increasing(self.flat("tokens"), self.tokens)
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
