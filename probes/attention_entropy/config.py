"""The configuration of the attention-entropy probe."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.core.config import PartConfig, part, switch
from analysis.core.validation import check_distinct, check_float, check_increasing
from analysis.probing.base import ModelPart, ProbeConfig, model_param, param

# Largest values the config accepts: far beyond every preset and notebook, and below where the logits (float32
# models: q.k times the scale, or times s ln n for SSMax) or the planted closed forms (exp(-g), n^(-s g)) overflow.
MAX_SCALE = 1e3  # logit_scale and scale_factors
MAX_GAP = 100.0  # planted_gap, ssmax_s, |sigmoid_bias|, fade_sg
MIN_GAP = 0.01  # planted_gap: the fading sweep's s = fade_sg / planted_gap stays <= 1e4
MAX_LR = 10.0  # learning rates of the training sweep (Adam: a step moves every weight by about lr)
MAX_RETRIEVAL_PAIRS = 4096  # longest test context of the retrieval models (a (rows, K, K) pattern per chunk)


@dataclass(frozen=True)
class Planted(PartConfig):
    """The planted key: its logit gap and the network's largest context."""

    PART = "planted"

    gap: float = param(
        2.0, "logit gap g of the planted key (the fading sweep sets s = s g / g)", minimum=MIN_GAP, maximum=MAX_GAP
    )
    max_n: int = param(
        4096,
        "largest n of the planted-key network (the fading rates are fitted over its top decade)",
        minimum=20,
        smoke=1024,
    )


@dataclass(frozen=True)
class Fade(PartConfig):
    """SSMax's fading rate d ln w / d ln n of the planted key, fitted per s g."""

    PART = "fade"

    sg: tuple[float, ...] = param(
        (0.25, 0.5, 0.75, 1.0, 1.5, 2.0),
        "values of s g whose SSMax fading rate d ln w / d ln n is fitted (s = value / planted_gap)",
        minimum=0.0,
        maximum=MAX_GAP,
    )
    margin: float = param(
        0.5,
        "the fading-rate claims are made at |s g - 1| >= this (near the threshold the "
        "rate converges too slowly in n to be measured)",
        minimum=0.0,
    )


@dataclass(frozen=True)
class Train(PartConfig):
    """The trained sweep: tiny LMs over learning rates and QK-norm settings (on with ``training``)."""

    PART = "train"

    lrs: tuple[float, ...] = param(
        (1e-3, 1e-2, 1e-1),
        "peak learning rates of the trained sweep",
        minimum=0.0,
        maximum=MAX_LR,
        formerly="lr",
        smoke=(1e-1,),
    )
    data: str = param(
        "corpus",
        "training data: markov | corpus (character-level docstrings)",
        choices=("markov", "corpus"),
        smoke="markov",
    )
    steps: int = param(150, "optimiser updates per run", minimum=1, smoke=15)
    seeds: int = param(
        5,
        "training seeds (replicate seeds: seed itself, then analysis.claims.evidence.replicate_seed(seed, t); weights "
        "and "
        "data) per lr and QK-norm setting; their spread is the uncertainty of the training claims (95% t band)",
        minimum=1,
        smoke=2,
    )
    seq_len: int = param(32, "training context length", minimum=4, smoke=32)


@dataclass(frozen=True)
class Nonlin(PartConfig):
    """Without nonlinearities (004#30): a deeper model with and without LayerNorm and GELU."""

    PART = "nonlin"

    enabled: bool = switch(
        True,
        "train a deeper model with and without LayerNorm and GELU (norm none, activation identity) and "
        "compare per-layer entropies at initialisation and after training",
    )
    n_layers: int = param(
        6, "depth of the nonlinearity comparison's models", minimum=2, formerly="nonlin_layers", smoke=4
    )
    d_model: int = param(
        32, "width of the nonlinearity comparison's models (heads: the config's n_heads)", minimum=2, smoke=16
    )
    seeds: int = param(
        5,
        "training seeds (replicate seeds, as train_seeds: weights and data) of each variant of the nonlinearity "
        "comparison; their spread is the uncertainty of its claims (95% t band)",
        minimum=2,
        smoke=2,
    )
    lr: float = param(
        1e-3,
        "peak learning rate of the nonlinearity comparison (the training sweep's schedule); 1e-3, the sweep's "
        "lowest: at 1e-2 the model without nonlinearities diverges (training losses 1e4 and more)",
        minimum=0.0,
        maximum=MAX_LR,
    )

    def validate(self) -> None:
        super().validate()
        check_float(self.flat("lr"), self.lr, minimum=0.0, strict_minimum=True)


@dataclass(frozen=True)
class Retrieval(PartConfig):
    """Trained retrieval at longer contexts (000#6): softmax and SSMax models on planted-key retrieval."""

    PART = "retrieval"

    enabled: bool = switch(
        True,
        "train softmax and SSMax models on planted-key retrieval at retrieval_len pairs and test them at "
        "retrieval_len x retrieval_factors pairs",
    )
    len: int = param(
        64, "training context of the retrieval models: key-value pairs per sequence (one planted)", minimum=2, smoke=16
    )
    factors: tuple[int, ...] = param(
        (1, 2, 4, 8, 16),
        "test contexts as multiples of retrieval_len, strictly increasing from 1 (the gaps are measured at the "
        "training length); retrieval_len x the largest <= 4096",
        minimum=1,
        maximum=MAX_RETRIEVAL_PAIRS,
        smoke=(1, 2, 4),
    )
    keys: int = param(32, "key ids of the retrieval task (a distractor's key: any but the query's)", minimum=2)
    values: int = param(8, "value ids of the retrieval task", minimum=2)
    d_model: int = param(32, "width of the one-layer, one-head, attention-only retrieval models", minimum=1, smoke=16)
    steps: int = param(600, "optimiser updates per retrieval model (AdamW, cosine, batch 32)", minimum=1, smoke=20)
    lr: float = param(1e-2, "peak learning rate of the retrieval models", minimum=0.0, maximum=MAX_LR)
    seeds: int = param(
        5,
        "training seeds (replicate seeds, as train_seeds: weights, data and test sequences) per kernel; their "
        "spread is the uncertainty of the retrieval claims (95% t band)",
        minimum=2,
        smoke=2,
    )
    eval: int = param(128, "test sequences per context length and model", minimum=2, smoke=16)

    def validate(self) -> None:
        super().validate()
        f = list(self.factors)
        if len(f) < 2 or f[0] != 1 or f != sorted(set(f)):
            raise ValueError(f"retrieval_factors must be strictly increasing from 1 with at least two values, got {f}")
        if self.len * f[-1] > MAX_RETRIEVAL_PAIRS:
            raise ValueError(
                f"retrieval_factors: retrieval_len x the largest factor must be <= {MAX_RETRIEVAL_PAIRS}, got "
                f"{self.len} x {f[-1]}"
            )
        check_float(self.flat("lr"), self.lr, minimum=0.0, strict_minimum=True)


@dataclass(frozen=True)
class Model(ModelPart):
    """The measured models (untrained and trained sweep)."""

    attention: str = model_param(
        "attention", "softmax", "attention kernel of the measured models", choices=("softmax", "ssmax", "sigmoid")
    )
    logit_scale: float | None = model_param("logit_scale", None, minimum=0.0, maximum=MAX_SCALE)
    n_layers: int = model_param("n_layers", 2, formerly="layers")
    n_heads: int = model_param("n_heads", 2, formerly="heads")
    d_model: int = model_param("d_model", 64, smoke=32)
    ssmax_s: float = model_param(
        "ssmax_s", 0.75, "SSMax s (logits times s ln n); s g >= 1 stops the fading", maximum=MAX_GAP
    )
    sigmoid_bias: float = model_param("sigmoid_bias", 0.0, minimum=-MAX_GAP, maximum=MAX_GAP)


@dataclass(frozen=True)
class Config(ProbeConfig):
    SMOKE = {
        "ctx_lens": (16, 64, 256),
        "sweep_len": 256,
        "scale_factors": (1.0, 8.0),
        "replicates": 3,
    }

    # --- model ----------------------------------------------------------------------------------
    model: Model = part(Model)
    seed: int = model_param("seed", 0, "model weights, tokens and training data")
    # --- untrained measurement --------------------------------------------------------------------
    ctx_lens: tuple[int, ...] = param((16, 64, 256, 1024, 4096), "context lengths n (keys visible to a row)", minimum=2)
    rows_per_n: int = param(8, "query rows averaged per n (the rows ending at n; causal models)", minimum=1)
    replicates: int = param(
        5,
        "independent untrained models (replicate seeds: seed itself, then "
        "analysis.claims.evidence.replicate_seed(seed, "
        "r); weights and tokens) of the Gaussian-entropy comparisons; the spread of the per-model values is the "
        "measurement's uncertainty (95% t band)",
        minimum=2,
    )
    data: str = param(
        "distinct",
        "input of the untrained measurement: distinct (random distinct token ids) | "
        "corpus (held-out docstring text in the model's encoding)",
        choices=("distinct", "corpus"),
    )
    scale_factors: tuple[float, ...] = param(
        (0.5, 1.0, 2.0, 4.0, 8.0, 16.0),
        "logit-scale sweep: multiples of 1/sqrt(d_head)",
        minimum=0.0,
        maximum=MAX_SCALE,
    )
    sweep_len: int = param(1024, "context length n of the logit-scale sweep", minimum=2)
    # --- planted key ----------------------------------------------------------------------------
    planted: Planted = part(Planted)
    fade: Fade = part(Fade)
    training: bool = param(True, "train tiny LMs over the train_lrs x qk_norm sweep")
    train: Train = part(Train)
    qk_norm: tuple[bool, ...] = param((False, True), "QK-norm settings of the trained sweep")
    spike_nats: float = param(0.5, "a loss spike: loss above its running minimum by more than this", minimum=0.0)
    nonlin: Nonlin = part(Nonlin)
    retrieval: Retrieval = part(Retrieval)
    # --- trained sigmoid attention (000#17), on the training sweep's task --------------------------------
    sigmoid_lr: float = param(
        1e-2,
        "learning rate of the trained sigmoid comparison (softmax, sigmoid with b = -ln train_seq_len and b = 0 on "
        "the training sweep's task, steps, schedule and seeds; training=true)",
        minimum=0.0,
        maximum=MAX_LR,
    )

    def validate(self) -> None:
        super().validate()
        check_float("sigmoid_lr", self.sigmoid_lr, minimum=0.0, strict_minimum=True)
        check_increasing("ctx_lens", self.ctx_lens)
        if self.rows_per_n > min(self.ctx_lens):
            raise ValueError(f"rows_per_n ({self.rows_per_n}) must be <= the smallest ctx_len ({min(self.ctx_lens)})")
        for name in ("scale_factors", "fade_sg", "train_lrs", "qk_norm"):  # coordinates the claims select by value
            check_distinct(name, self.value_of(name))
        if any(lr <= 0 for lr in self.train.lrs):
            raise ValueError(f"train_lrs values must be > 0, got {list(self.train.lrs)}")
        if any(f <= 0 for f in self.scale_factors):
            raise ValueError(f"scale_factors must be > 0, got {list(self.scale_factors)}")
        if self.nonlin.d_model % self.model.n_heads:
            raise ValueError(
                f"nonlin_d_model must be divisible by n_heads, got nonlin_d_model={self.nonlin.d_model}, "
                f"n_heads={self.model.n_heads}"
            )
