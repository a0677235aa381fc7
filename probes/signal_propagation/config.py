"""The configuration of the signal-propagation probe and the constants of its measurement."""

from __future__ import annotations

import re
from dataclasses import dataclass

from analysis.core.config import PartConfig, part, switch
from analysis.core.validation import check_distinct
from analysis.probing.base import ModelPart, ProbeConfig, model_param, param
from analysis.zoo.model import ATTENTION_KERNELS
from probes.signal_propagation import phase

NAME = "signal_propagation"


# norm variant -> ModelConfig overrides
NORM_VARIANTS: dict[str, dict] = {
    "pre": {"norm": "pre"},
    "post": {"norm": "post"},
    "peri": {"norm": "peri"},
    "mix": {"norm": "mix"},
    "none": {"norm": "none"},
    "ln_scaling": {"norm": "pre", "ln_scaling": True},
    "deepnorm": {"norm": "post", "deepnorm": True},
    "qk_norm": {"norm": "pre", "qk_norm": True},
}


PRE_LIKE = ("pre", "ln_scaling", "qk_norm")  # every block normalises its branch inputs and nothing else


PARAMS = ("W_q", "W_k", "W_v", "W_o", "W_in", "W_out")


SUBLAYERS = ("attn", "mlp")


# rank-collapse variants: name -> ModelConfig overrides (branch_scale None -> 1/sqrt(L))
COLLAPSE_VARIANTS: dict[str, dict] = {
    "pure_attention": {"norm": "none", "d_mlp": 0, "attn_residual": False},
    "attention_ln": {"norm": "post", "d_mlp": 0, "attn_residual": False},  # x_{l+1} = LN(Attn(x_l))
    "attention_mlp": {"norm": "none", "attn_residual": False, "mlp_residual": False},
    "skip": {"norm": "none", "d_mlp": 0},
    "skip_scaled": {"norm": "none", "d_mlp": 0, "branch_scale": None},
    "pre_ln": {"norm": "pre"},
}


MASKS = ("causal", "full")


# DeepNorm's model update (theory section 10): norms compared, optimiser -> learning rate. The rates keep
# the step in the linear regime where the Theorem's first-order bound applies: dividing them by 10
# divides Post-LN's update by 10 to within 0.5% up to L = 48 (ten times larger rates do not: deep
# Post-LN leaves the linear regime first).
UPDATE_NORMS = ("pre", "post", "deepnorm")


UPDATE_LR = {"sgd": 1e-5, "adam": 1e-6}


# initialisations per (norm, depth) of the update measurement (deterministic given the weights, so its spread is
# the seeds'); 3, not 5: compute (about 60 s per seed for the 3 norms x 7 depths x 2 optimisers, one thread)
UPDATE_SAMPLES = 3


DATA = ("markov", "corpus")


_PARAM_RE = re.compile(r"^blocks\.(\d+)\.(?:attn|mlp)\.(W_\w+)\.weight$")


LAYER_SEGMENTS = ("layers", "layer", "h", "blocks")  # parameter-path segments followed by the layer index


HIDDEN_LOSS_WIDTH = 16  # k: width of the fixed random projection of the hidden-state loss


JACOBIAN_SEQUENCES = 2  # sequences whose last position's block Jacobians are computed (d backward passes each)


# initialisations with Jacobians (the costliest statistic: about 12 s per seed for 8 norms x 7 depths); NaN for the
# others
JACOBIAN_SAMPLES = 5


JACOBIAN_BATCHES = 2  # a passed model (run_model): data batches with Jacobians (d backward passes each, d up to 1e3)


@dataclass(frozen=True)
class Train(PartConfig):
    """Training on the Markov language (on with ``trained``)."""

    PART = "train"

    steps: int = param(300, "optimiser updates when trained", minimum=1, smoke=20)


@dataclass(frozen=True)
class Stability(PartConfig):
    """Trained runs: the Post-LN / DeepNorm stability runs (no warm-up)."""

    PART = "stability"

    depth: int = param(
        48, "trained runs: depth of the Post-LN / DeepNorm stability runs (no warm-up)", minimum=2, maximum=256, smoke=4
    )
    steps: int = param(150, "trained runs: optimiser updates of each stability run", minimum=2, smoke=10)
    seeds: int = param(
        5,
        "trained runs: weight seeds (replicate_seed(seed, i)) of the stability runs (about 37 s per seed for a "
        "Post-LN and a DeepNorm run; at 3 seeds the failed-fraction claim's band exceeds its range)",
        minimum=2,
        smoke=2,
    )


@dataclass(frozen=True)
class Phase(PartConfig):
    """The attention phase diagram at initialisation (probes.signal_propagation.phase); a field left None takes the
    preset's design (phase.DESIGN)."""

    PART = "phase"

    enabled: bool = switch(
        False,
        "also measure the attention phase diagram at initialisation (embedded tokens of cosine p, post-LN, "
        "ReLU MLP, one head, logits beta sqrt(ln T) q.k / sqrt(d_h)): entropy, participation and token cosine",
        omit_at_default=True,
    )
    betas: tuple[float, ...] | None = param(
        None, "phase: inverse temperatures beta (None: the preset's)", minimum=0.0, maximum=50.0, omit_at_default=True
    )
    cosines: tuple[float, ...] | None = param(
        None, "phase: pairwise token cosines p (None: the preset's)", minimum=0.0, maximum=0.99, omit_at_default=True
    )
    tokens: int | None = param(
        None, "phase: tokens per sequence T (None: the preset's)", minimum=2, maximum=2048, omit_at_default=True
    )
    d_model: int | None = param(
        None,
        "phase: model width d, >= T + 1 (None: the preset's)",
        minimum=3,
        maximum=4096,
        omit_at_default=True,
        formerly="phase_width",
    )
    depth: int | None = param(
        None, "phase: post-LN blocks (None: the preset's)", minimum=1, maximum=64, omit_at_default=True
    )
    seeds: int | None = param(
        None, "phase: independent seeds (weights and tokens; None: the preset's)", minimum=2, omit_at_default=True
    )


@dataclass(frozen=True)
class Model(ModelPart):
    """The stacks whose signal propagation is measured (their depths and norms are the sweep's)."""

    d_model: int = model_param("d_model", 32, maximum=128)
    n_heads: int = model_param("n_heads", 4, formerly="heads")
    attention: str = model_param("attention", "softmax", choices=ATTENTION_KERNELS)
    vocab_size: int = model_param(
        "vocab_size",
        64,
        "vocabulary of the Markov language (data corpus: the zoo's models embed at least the 256 byte ids)",
    )


@dataclass(frozen=True)
class Config(ProbeConfig):
    SMOKE = {
        "norms": ("pre", "post", "peri"),
        "depths": (1, 2, 4),
        "n_samples": 2,
        "seq_len": 8,
        "batch_size": 4,
        "collapse_depth": 5,
        "curse_seeds": 2,
    }

    norms: tuple[str, ...] = param(tuple(NORM_VARIANTS), "norm variants to measure", choices=tuple(NORM_VARIANTS))
    depths: tuple[int, ...] = param((1, 2, 4, 8, 16, 32, 48), "numbers of blocks L", minimum=1, maximum=256)
    model: Model = part(Model)
    attn_only: bool = param(
        False, "blocks without MLPs (false: each block has a GELU MLP of width 4 d)", formerly="mlp"
    )
    skip: bool = param(True, "skip connections around both sublayers")
    mask: str = param("causal", "attention mask of the depth sweep", choices=MASKS)
    seq_len: int = param(16, "tokens per sequence T", minimum=2)
    data: str = param(
        "markov",
        "token batches: Markov-language ids, or chunks of the corpus validation text "
        "(needs a tokenizer or a byte-level vocabulary)",
        choices=DATA,
    )
    batch_size: int = param(8, "sequences per measurement batch", minimum=1)
    n_samples: int = param(
        6, "initialisations (weight seeds replicate_seed(seed, i), i < n_samples) per (norm, depth)", minimum=2
    )
    trained: bool = param(False, "measure after training on the Markov language (cached)")
    train: Train = part(Train)
    jacobian: bool = param(True, "exact block Jacobians (d backward passes per batch; the costliest statistic)")
    collapse_depth: int = param(12, "depth of the rank-collapse sweep (at initialisation)", minimum=2)
    stability: Stability = part(Stability)
    curse_seeds: int = param(
        5,
        "trained runs: weight seeds (replicate_seed(seed, i)) of the Pre-LN / LayerNorm-scaling models whose "
        "variance profile and layer ablations are measured at the deepest depth (the first n_samples are the "
        "sweep's own checkpoints)",
        minimum=2,
    )
    seed: int = model_param(
        "seed",
        0,
        "weight seed of the first initialisation (replicate 0; the others are hashed from it); also "
        "seeds the Markov language and the token batches",
    )
    phase: Phase = part(Phase)

    def validate(self) -> None:
        super().validate()
        check_distinct("norms", self.norms)
        check_distinct("depths", self.depths)
        if self.data == "corpus" and self.trained:
            raise ValueError("data='corpus' needs trained=false (the zoo's models train on the Markov language)")
        if self.phase.enabled and self.trained:
            raise ValueError("phase needs trained=false (the phase diagram is measured at initialisation)")
        phase.check_design(self)
