"""The configuration of the softmax-alternatives probe, and the constants its parts share."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.probing.base import MAX_SEED, ProbeConfig, param, replicates_param

NAME = "softmax_alternatives"
MAX_SLOTS = 65536


@dataclass(frozen=True)
class Config(ProbeConfig):
    SMOKE = {
        "memory_slots": (16, 64, 256),
        "memory_batch_size": 64,
        "sparse_keys": (8, 32, 128),
        "sparse_batch_size": 2,
        "sparse_rows": 4,
        "interval_ks": (16, 32, 64),
        "interval_len": 33,
        "interval_batch_size": 2,
        "mimetic_betas": (0.5, 2.0),
        "mimetic_tokens": 16,
        "mimetic_batch_size": 1,
        "jacobian_scales": (16.0, 64.0),
        "jacobian_batch_size": 8,
        "features_keys": 64,
        "features_queries": 4,
        "taylor_keys": 32,
        "taylor_queries": 4,
        "linearity_scales": (1.0, 2.0),
        "linearity_d_model": 8,
        "linearity_d_mlp": 32,
        "linearity_tokens": 16,
        "linearity_batch_size": 16,
        "bilinear_d_model": 6,
        "bilinear_d_mlp": 12,
        "bilinear_rank": 2,
        "bilinear_samples": 96,
        "bilinear_steps": 100,
        "isolation_tokens": (8, 32),
        "isolation_rows": 4,
        "isolation_batch_size": 1,
        "denominator_tokens": 16,
        "denominator_batch_size": 64,
        "denominator_top": 0.02,
        "softplus_scales": (1.0, 4.0),
        "softplus_keys": 32,
        "softplus_rows": 4,
        "softplus_batch_size": 1,
        "shaped_depths": (1, 2),
        "shaped_tokens": 6,
        "shaped_batch_size": 8,
        "sigmoid_keys": (8, 32),
        "sigmoid_rows": 4,
        "sigmoid_batch_size": 1,
        "cog_depths": (1, 2),
        "cog_tokens": 6,
        "cog_batch_size": 8,
        "parallel_depth": 3,
        "parallel_d_model": 16,
        "parallel_n_heads": 2,
        "parallel_d_mlp": 32,
        "parallel_tokens": 8,
        "parallel_batch_size": 2,
        "persistent_slots": 4,
        "persistent_context": (8, 32),
        "persistent_rows": 4,
        "persistent_batch_size": 1,
    }

    seed: int = param(
        0, "memory weights and inputs (replicate i: replicate_seed(seed, i))", minimum=0, maximum=MAX_SEED
    )
    # --- slot count (000#40) ---------------------------------------------------------------------------
    memory_slots: tuple[int, ...] = param(
        (16, 64, 256, 1024, 4096),
        "slot counts n of the key-value memories (the MLP's hidden width), strictly increasing, at least 3",
        minimum=1,
        maximum=MAX_SLOTS,
    )
    memory_d_model: int = param(
        64,
        "width d of the memories' input and output (the model width)",
        minimum=1,
        maximum=1024,
        formerly="memory_width",
    )
    memory_std: float = param(
        0.1,
        "std of the keys (the zoo's gpt2 init_std; the values' std is init_std / sqrt(2), its output-projection "
        "rule at one layer); the pre-activations' std is memory_std sqrt(memory_d_model)",
        minimum=1e-4,
        maximum=1.0,
    )
    memory_batch_size: int = param(
        512,
        "inputs per memory, uniform on the sphere of radius sqrt(d)",
        minimum=2,
        maximum=65536,
        formerly="memory_batch",
    )
    memory_seeds: int = replicates_param("memories per slot count (ReLU and softmax share the weights of a seed)")

    # --- a planted key under sparsemax (000#29) ------------------------------------------------------
    sparse: bool = param(True, "measure sparsemax's isolation of a planted key among n random keys (and softmax's)")
    sparse_keys: tuple[int, ...] = param(
        (16, 64, 256, 1024),
        "keys n each query row sees (one planted), strictly increasing, at least 2 (a slope)",
        minimum=2,
        maximum=4096,
        min_len=2,
    )
    sparse_gap: float = param(
        4.0, "the planted key's logit bias g (row logit std about 1 at init)", minimum=0.0, maximum=50.0
    )
    sparse_d_model: int = param(
        16, "width d of the random attention layer (one head)", minimum=1, maximum=256, formerly="sparse_width"
    )
    sparse_batch_size: int = param(
        4, "sequences of n + 1 Gaussian tokens per layer and n (each row one query)", minimum=1, formerly="sparse_batch"
    )
    sparse_rows: int = param(
        64, "query rows per sequence whose irrelevant mass is paired with its exact law (the first ones)", minimum=1
    )
    sparse_seeds: int = replicates_param("random layers (weights and tokens)")

    # --- K-interval softmax (000#16) --------------------------------------------------------------------
    interval: bool = param(True, "measure K-interval softmax (rounded and interpolated) against exact softmax")
    interval_ks: tuple[int, ...] = param(
        (64, 128, 256, 512, 1024), "grid intervals K, strictly increasing, at least 3", minimum=1, maximum=1 << 16
    )
    interval_d_model: int = param(
        16, "width d of the random attention layer (one head)", minimum=1, maximum=256, formerly="interval_width"
    )
    interval_len: int = param(257, "tokens per sequence (each row sees them all)", minimum=2, maximum=4096)
    interval_batch_size: int = param(
        4, "Gaussian sequences per layer", minimum=1, maximum=1024, formerly="interval_batch"
    )
    interval_seeds: int = replicates_param("random layers (weights and tokens)")

    # --- mimetic initialisation (000#115) ----------------------------------------------------------
    mimetic: bool = param(True, "measure each token's weight on itself in a layer with mimetic initialisation")
    mimetic_betas: tuple[float, ...] = param(
        (0.25, 0.5, 1.0, 1.5, 2.0),
        "beta of W_q^T W_k = alpha Z + beta I (the zoo's init='mimetic'), strictly increasing",
        minimum=0.0,
        maximum=4.0,
    )
    mimetic_alpha: float = param(
        0.7, "alpha of W_q^T W_k = alpha Z + beta I (Trockman & Kolter's 0.7)", minimum=0.0, maximum=2.0
    )
    mimetic_d_model: int = param(
        16,
        "width d of the random attention layer (one head; >= 4 keeps each row's logit spread within the quadrature's "
        "range)",
        minimum=4,
        maximum=256,
        formerly="mimetic_width",
    )
    mimetic_tokens: int = param(64, "Gaussian tokens n per sequence (each row sees all, itself included)", minimum=2)
    mimetic_batch_size: int = param(
        8, "sequences per layer and beta", minimum=1, maximum=1024, formerly="mimetic_batch"
    )
    mimetic_seeds: int = replicates_param("layers (Z and tokens, shared by every beta)")

    # --- the kernel's Jacobian against the logit scale (000#23) ----------------------------------------
    jacobian: bool = param(True, "measure the Jacobian of softmax and SA-Softmax against the logit scale")
    jacobian_scales: tuple[float, ...] = param(
        (16.0, 32.0, 64.0, 128.0),
        "logit scales s (logits s q . k / sqrt(d)), strictly increasing; the two-key law needs s sigma >~ 8",
        minimum=1.0,
        maximum=1e4,
    )
    jacobian_d_model: int = param(
        16, "width d of the random attention layer (one head)", minimum=1, maximum=256, formerly="jacobian_width"
    )
    jacobian_keys: int = param(32, "keys n each row sees (the n + 1 tokens but itself)", minimum=2, maximum=1024)
    jacobian_batch_size: int = param(
        64, "sequences of n + 1 Gaussian tokens per layer (each row one query)", minimum=1, formerly="jacobian_batch"
    )
    jacobian_seeds: int = replicates_param("random layers (weights and tokens)")

    # --- linear attention's weights (003#74) ----------------------------------------------------------
    features: bool = param(True, "measure the entropy of elu + 1 linear attention's weights against its exact law")
    features_d_head: int = param(
        16,
        "width d of the queries and keys (i.i.d. N(0, 1) coordinates)",
        minimum=1,
        maximum=256,
        formerly="features_width",
    )
    features_keys: int = param(1024, "keys n per query row", minimum=2, maximum=65536)
    features_queries: int = param(16, "query rows per replicate, each over its own keys", minimum=1, maximum=1024)
    features_seeds: int = replicates_param("sets of queries and keys")

    # --- the Taylor feature map (000#51) -------------------------------------------------------------
    taylor: bool = param(True, "measure the Taylor feature map's monotonicity violations and weight entropy")
    taylor_d_head: int = param(
        16,
        "width d of the queries and keys (i.i.d. N(0, 1) coordinates)",
        minimum=1,
        maximum=64,
        formerly="taylor_width",
    )
    taylor_keys: int = param(256, "keys n per query row (every pair of them compared)", minimum=2, maximum=2048)
    taylor_queries: int = param(16, "query rows per replicate, each over its own keys", minimum=1, maximum=1024)
    taylor_seeds: int = replicates_param("sets of queries and keys")

    # --- the linearity of an MLP sublayer (003#37) ----------------------------------------------------
    linearity: bool = param(True, "measure the linearity score of an MLP sublayer with and without its skip connection")
    linearity_scales: tuple[float, ...] = param(
        (0.5, 1.0, 2.0, 4.0),
        "std of the Gaussian input tokens (the MLP's pre-activations scale with it), strictly increasing",
        minimum=0.01,
        maximum=16.0,
    )
    linearity_d_model: int = param(
        32, "width d of the block (fan-in init)", minimum=2, maximum=256, formerly="linearity_width"
    )
    linearity_d_mlp: int = param(128, "the MLP's hidden units", minimum=1, maximum=2048, formerly="linearity_hidden")
    linearity_activation: str = param(
        "gelu",
        "the MLP's activation (a smooth one: gelu | gelu_tanh | silu | tanh)",
        choices=("gelu", "gelu_tanh", "silu", "tanh"),
    )
    linearity_tokens: int = param(64, "tokens per sequence (uniform full attention over them)", minimum=2, maximum=4096)
    linearity_batch_size: int = param(
        256,
        "sequences per layer (the regression's samples: tokens x sequences, >> width)",
        minimum=1,
        maximum=65536,
        formerly="linearity_batch",
    )
    linearity_seeds: int = replicates_param("layers (weights and tokens)")

    # --- the bilinear MLP on a planted low-rank target (003#57) ----------------------------------------
    bilinear: bool = param(True, "train bilinear MLPs on a planted rank-r quadratic target and read their spectra")
    bilinear_d_model: int = param(
        16, "input and output width d of the bilinear MLP", minimum=2, maximum=64, formerly="bilinear_width"
    )
    bilinear_d_mlp: int = param(
        64,
        "the MLP's units m (m >= d lets it hold any d interaction matrices)",
        minimum=1,
        maximum=1024,
        formerly="bilinear_hidden",
    )
    bilinear_rank: int = param(3, "rank r of the planted target (< bilinear_d_model)", minimum=1, maximum=63)
    bilinear_samples: int = param(
        1024, "training inputs N (>= d (d + 1) / 2: the least-squares fit is unique)", minimum=3, maximum=1 << 17
    )
    bilinear_noise: float = param(0.5, "std sigma of the label noise", minimum=0.0, maximum=100.0)
    bilinear_steps: int = param(
        1000, "L-BFGS iterations (full batch, float64) to the minimum", minimum=1, maximum=100000
    )
    bilinear_seeds: int = replicates_param("trained layers (weights, inputs, basis, eigenvalues and noise)")

    # --- token isolation at initialisation (000#118) ---------------------------------------------------
    isolation: bool = param(True, "measure a random softmax layer's weight collision against the sequence length")
    isolation_tokens: tuple[int, ...] = param(
        (16, 64, 256, 1024),
        "sequence lengths n (full attention over all n), strictly increasing",
        minimum=2,
        maximum=8192,
    )
    isolation_d_model: int = param(
        16,
        "width d of the random attention layer (one head; >= 4 keeps the logit spread in the quadrature's range)",
        minimum=4,
        maximum=256,
        formerly="isolation_width",
    )
    isolation_rows: int = param(64, "query rows per sequence (the first ones; all rows are alike)", minimum=1)
    isolation_batch_size: int = param(
        4, "sequences per layer and length", minimum=1, maximum=1024, formerly="isolation_batch"
    )
    isolation_seeds: int = replicates_param("layers (weights and tokens)")

    # --- the denominator of linear attention (003#31) -------------------------------------------------
    denominator: bool = param(
        True, "measure the tails of normalised linear attention's read-out and query gradient (and NormAttention's)"
    )
    denominator_d_model: int = param(
        16,
        "width d of the random attention layer (one head; d_v = d)",
        minimum=2,
        maximum=256,
        formerly="denominator_width",
    )
    denominator_tokens: int = param(
        64, "tokens per sequence (every row a query over all of them)", minimum=2, maximum=4096
    )
    denominator_batch_size: int = param(
        2048, "Gaussian sequences per layer", minimum=1, maximum=65536, formerly="denominator_batch"
    )
    denominator_top: float = param(
        0.01, "fraction of the rows, the largest, Hill's estimator reads the tail index from", minimum=1e-4, maximum=0.5
    )
    denominator_seeds: int = replicates_param("layers (weights and tokens)")

    # --- softplus over the l1 norm (000#85) ---------------------------------------------------------------
    softplus: bool = param(True, "measure the entropy of softplus_l1 attention's weights against the logit scale")
    softplus_scales: tuple[float, ...] = param(
        (1.0, 2.0, 4.0, 8.0),
        "logit scales s (logits s q . k / sqrt(d)), strictly increasing; softmax's exact law needs s <= 16",
        minimum=0.01,
        maximum=16.0,
    )
    softplus_d_model: int = param(
        16,
        "width d of the random attention layer (one head; >= 4 keeps the rows' spread moderate)",
        minimum=4,
        maximum=256,
        formerly="softplus_width",
    )
    softplus_keys: int = param(1024, "keys n each row sees (the n + 1 tokens but itself)", minimum=2, maximum=8192)
    softplus_rows: int = param(16, "query rows per sequence (the first ones; all rows are alike)", minimum=1)
    softplus_batch_size: int = param(2, "sequences per layer", minimum=1, maximum=1024, formerly="softplus_batch")
    softplus_seeds: int = replicates_param("layers (weights and tokens, shared by every scale)")

    # --- shaped attention and the token kernel at initialisation (004#82) --------------------------------
    shaped: bool = param(True, "measure the token kernel of skipless softmax and shaped-attention stacks at init")
    shaped_depths: tuple[int, ...] = param(
        (1, 2, 3, 4),
        "depths L of the stacks, strictly increasing (the softmax kernel is near 1 beyond ~4)",
        minimum=1,
        maximum=64,
    )
    shaped_d_model: int = param(
        32, "width d of every layer (one head)", minimum=2, maximum=256, formerly="shaped_width"
    )
    shaped_tokens: int = param(16, "tokens T per sequence (causal)", minimum=2, maximum=1024)
    shaped_batch_size: int = param(
        64, "Gaussian sequences the token kernel averages over", minimum=1, maximum=65536, formerly="shaped_batch"
    )
    shaped_seeds: int = replicates_param("stacks (weights and tokens, shared by both kernels)")

    # --- sigmoid attention's row mass (004#109) ------------------------------------------------------------
    sigmoid: bool = param(True, "measure sigmoid attention's row mass (bias -ln n) against the sequence length")
    sigmoid_keys: tuple[int, ...] = param(
        (16, 64, 256, 1024),
        "keys n each row sees (the n + 1 tokens but itself), strictly increasing, at least 2",
        minimum=2,
        maximum=8192,
    )
    sigmoid_d_model: int = param(
        16, "width d of the random attention layer (one head)", minimum=2, maximum=256, formerly="sigmoid_width"
    )
    sigmoid_rows: int = param(64, "query rows per sequence (the first ones; all rows are alike)", minimum=1)
    sigmoid_batch_size: int = param(4, "sequences per layer and n", minimum=1, maximum=1024, formerly="sigmoid_batch")
    sigmoid_seeds: int = replicates_param("layers (weights and tokens)")

    # --- Cog attention's signed weights and the token kernel at initialisation (004#28) -------------------------
    cog: bool = param(True, "measure the token kernel of skipless softmax and Cog-attention stacks at init")
    cog_depths: tuple[int, ...] = param(
        (1, 2, 4, 8), "depths L of the stacks, strictly increasing", minimum=1, maximum=64
    )
    cog_d_model: int = param(32, "width d of every layer (one head)", minimum=2, maximum=256, formerly="cog_width")
    cog_tokens: int = param(16, "tokens T per sequence (causal)", minimum=2, maximum=1024)
    cog_batch_size: int = param(
        64, "Gaussian sequences the token kernel averages over", minimum=1, maximum=65536, formerly="cog_batch"
    )
    cog_seeds: int = replicates_param("stacks (weights and tokens, shared by both kernels)")

    # --- a pre-norm block's sublayers in parallel (000#96) ------------------------------------------------------
    parallel: bool = param(True, "measure what feeding each block's MLP the block input (parallel) changes at init")
    parallel_depth: int = param(
        12, "blocks L of the pre-LN stack (at least 2: a slope in depth)", minimum=2, maximum=64
    )
    parallel_d_model: int = param(64, "residual width d", minimum=2, maximum=512, formerly="parallel_width")
    parallel_n_heads: int = param(
        4, "causal softmax heads per block (dividing the width)", minimum=1, maximum=64, formerly="parallel_heads"
    )
    parallel_d_mlp: int = param(256, "MLP hidden units m", minimum=1, maximum=4096, formerly="parallel_hidden")
    parallel_tokens: int = param(32, "tokens T per sequence", minimum=1, maximum=1024)
    parallel_batch_size: int = param(
        8, "Gaussian sequences per stack", minimum=1, maximum=1024, formerly="parallel_batch"
    )
    parallel_seeds: int = replicates_param("stacks (weights and tokens)")

    # --- persistent memory vectors beside the context (004#90) -----------------------------------------------
    persistent: bool = param(True, "measure the persistent memory's share of a row's weight against the context length")
    persistent_slots: int = param(32, "persistent key-value vectors N", minimum=1, maximum=1024)
    persistent_scale: float = param(
        1.5, "the persistent vectors' scale r (N(0, r^2 I); the context tokens have scale 1)", minimum=0.1, maximum=4.0
    )
    persistent_context: tuple[int, ...] = param(
        (16, 64, 256, 1024),
        "context lengths T each row sees beside the memory, strictly increasing, at least 2",
        minimum=1,
        maximum=8192,
        min_len=2,
    )
    persistent_d_model: int = param(
        16, "width d of the random attention layer (one head)", minimum=2, maximum=256, formerly="persistent_width"
    )
    persistent_rows: int = param(16, "context query rows per sequence (the first ones; all rows are alike)", minimum=1)
    persistent_batch_size: int = param(
        2, "sequences per layer and T", minimum=1, maximum=1024, formerly="persistent_batch"
    )
    persistent_seeds: int = replicates_param(
        "layers and memories (weights, persistent vectors and tokens; ten: one memory's N vectors move a layer's "
        "share by several per cent)",
        default=10,
    )

    def validate(self) -> None:
        super().validate()
        slots = self.memory_slots
        if len(slots) < 3 or any(b <= a for a, b in zip(slots, slots[1:], strict=False)):
            raise ValueError(f"memory_slots must be strictly increasing with at least 3 values, got {slots}")
        ks = self.interval_ks
        if len(ks) < 3 or any(b <= a for a, b in zip(ks, ks[1:], strict=False)):
            raise ValueError(f"interval_ks must be strictly increasing with at least 3 values, got {ks}")
        for name in (
            "mimetic_betas",
            "jacobian_scales",
            "linearity_scales",
            "isolation_tokens",
            "softplus_scales",
            "shaped_depths",
            "sigmoid_keys",
            "cog_depths",
            "persistent_context",
        ):
            v = getattr(self, name)
            if any(b <= a for a, b in zip(v, v[1:], strict=False)):
                raise ValueError(f"{name} must be strictly increasing, got {v}")
        if self.linearity and self.linearity_tokens * self.linearity_batch_size < 4 * (self.linearity_d_model + 1):
            raise ValueError(
                "linearity_tokens x linearity_batch_size (the regression's samples) must be at least "
                "4 (linearity_d_model + 1), "
                f"got {self.linearity_tokens * self.linearity_batch_size}"
            )
        if self.parallel and self.parallel_d_model % self.parallel_n_heads:
            raise ValueError(
                f"parallel_n_heads must divide parallel_d_model ({self.parallel_d_model}), got {self.parallel_n_heads}"
            )
        if self.sigmoid and len(self.sigmoid_keys) < 2:
            raise ValueError(f"sigmoid_keys needs at least 2 lengths (a slope), got {self.sigmoid_keys}")
        if self.isolation and len(self.isolation_tokens) < 2:
            raise ValueError(f"isolation_tokens needs at least 2 lengths (a slope), got {self.isolation_tokens}")
        if self.denominator and self.denominator_top * self.denominator_tokens * self.denominator_batch_size < 2:
            raise ValueError(
                "denominator_top x denominator_tokens x denominator_batch_size (Hill's tail samples) must be at least "
                "2, "
                f"got {self.denominator_top * self.denominator_tokens * self.denominator_batch_size:g}"
            )
        if self.bilinear and self.bilinear_rank >= self.bilinear_d_model:
            raise ValueError(
                f"bilinear_rank must be < bilinear_d_model ({self.bilinear_d_model}), got {self.bilinear_rank}"
            )
        if self.bilinear and self.bilinear_samples < self.bilinear_d_model * (self.bilinear_d_model + 1) // 2:
            raise ValueError(
                f"bilinear_samples must be >= d (d + 1) / 2 = "
                f"{self.bilinear_d_model * (self.bilinear_d_model + 1) // 2} "
                f"(d = bilinear_d_model), got {self.bilinear_samples}"
            )
        keys = self.sparse_keys
        if any(b <= a for a, b in zip(keys, keys[1:], strict=False)):
            raise ValueError(f"sparse_keys must be strictly increasing, got {keys}")
