"""The configuration of the parameterisation probe and the constants its parts share."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.core.config import PartConfig, part, switch
from analysis.core.validation import check_increasing
from analysis.probing.base import MAX_SEED, ProbeConfig, param, replicates_param

MIXERS = ("softmax", "gated_delta")
MIXER = {  # ModelConfig fields of each token mixer (gated_delta: Gated DeltaNet, unit q and k, gated decay)
    "softmax": {"attention": "softmax", "causal": False},
    "gated_delta": {"attention": "recurrent", "write_rule": "delta", "decay": "gated"},
}
OPTIMIZERS = ("adam", "sgd")
WIDTH_PARAMETERISATIONS = ("standard", "mup")
# the depth check's parameterisations: name -> (ModelConfig.parameterisation, depth_alpha)
DEPTH_RUNS = {
    "standard": ("standard", 0.5),
    "depth_mup_sqrt": ("depth_mup", 0.5),
    "depth_mup_complete": ("depth_mup", 1.0),
}
SEED_GDN = "003#17"  # muP for Gated DeltaNet
PAPER_MUP = "yang2022"  # Tensor Programs V: muP and muTransfer
PAPER_DEPTH = {"depth_mup_sqrt": "yang2023", "depth_mup_complete": "dey2025"}
SEED_MUON = "004#16"
TRANSFER_RUNS = ("softmax:adam", "softmax:sgd", "gated_delta:adam", "gated_delta:sgd")
SEED_ASPECT = "000#69"  # DepthBench: the width-depth aspect ratio at a fixed size
ASPECT_VARIANTS = {  # ModelConfig fields of each architecture of the aspect-ratio sweep (all Pre-LN)
    "pre_ln": {},
    "ln_scaling": {"ln_scaling": True},  # LayerNorm Scaling: block l's norms times 1/sqrt(l)
    "attnres": {"residual": "attnres"},  # Full Attention Residuals (analysis/zoo/attnres.py)
}
SOURCE = "analysis/theory/width.py"
MUON_SOURCE = "analysis/theory/muon.py"
MAX_LR = 10.0


@dataclass(frozen=True)
class Trajectory(PartConfig):
    """The coordinate-check figure: activation sizes over the first Adam steps."""

    PART = "trajectory"

    widths: tuple[int, ...] = param(
        (32, 64, 128, 256, 512), "widths of the figure's curves (increasing)", minimum=8, maximum=2048, smoke=(32, 128)
    )
    steps: int = param(10, "Adam steps the figure follows", minimum=1, maximum=200, smoke=3)
    lr: float = param(0.01, "Adam's learning rate of the figure (at the base width)", minimum=1e-8, maximum=MAX_LR)
    batch_size: int = param(
        8, "sequences of length seq_len x 8 per step", minimum=1, maximum=256, formerly="trajectory_batch"
    )


@dataclass(frozen=True)
class Depth(PartConfig):
    """The depth check's models (the depths themselves are ``depths``)."""

    PART = "depth"

    d_model: int = param(64, "width of the depth check's models", minimum=8, maximum=1024)
    lr: float = param(
        1e-4,
        "Adam's learning rate of the depth check (small: the stream's change is linear)",
        minimum=1e-8,
        maximum=MAX_LR,
    )
    seeds: int = replicates_param("models and sequences per depth")


@dataclass(frozen=True)
class Transfer(PartConfig):
    """Learning-rate transfer: a tiny character LM per width and learning rate, standard and muP."""

    PART = "transfer"

    enabled: bool = switch(True, "train the learning-rate transfer grid (the part's gate)")
    runs: tuple[str, ...] = param(
        ("softmax:adam", "gated_delta:adam", "gated_delta:sgd"),
        "mixer:optimizer pairs of the transfer grid",
        choices=TRANSFER_RUNS,
        smoke=("softmax:adam",),
    )
    widths: tuple[int, ...] = param(
        (16, 32, 64),
        "widths of the transfer grid, strictly increasing, at least two",
        minimum=8,
        maximum=512,
        min_len=2,
        smoke=(16, 32),
    )
    adam_lrs: tuple[float, ...] = param(
        (0.001, 0.004, 0.016, 0.064, 0.256),
        "Adam's rates (at the base width), strictly increasing, at least 3",
        minimum=1e-6,
        maximum=MAX_LR,
        min_len=3,
        smoke=(0.004, 0.016, 0.064),
    )
    sgd_lrs: tuple[float, ...] = param(
        (0.25, 0.5, 1.0, 2.0, 4.0, 8.0),
        "SGD's rates (at the base width), strictly increasing, at least 3",
        minimum=1e-6,
        maximum=100.0,
        min_len=3,
        smoke=(0.5, 1.0, 2.0),
    )
    steps: int = param(150, "updates per training (10% warm-up, cosine)", minimum=1, maximum=100_000, smoke=10)
    batch_size: int = param(
        16, "sequences of 32 characters per update", minimum=1, maximum=1024, formerly="transfer_batch", smoke=4
    )
    seeds: int = replicates_param("models and data streams per width and learning rate", default=3)


@dataclass(frozen=True)
class Muon(PartConfig):
    """Muon against AdamW: updates to a target loss, each optimiser's rate tuned, at every width (on with
    ``muon_vs_adamw``)."""

    PART = "muon"

    widths: tuple[int, ...] = param(
        (32, 64, 128),
        "widths of the Muon-against-AdamW comparison, strictly increasing",
        minimum=8,
        maximum=512,
        smoke=(16, 32),
    )
    adamw_lrs: tuple[float, ...] = param(
        (0.001, 0.002, 0.004, 0.008, 0.016),
        "AdamW's rates tuned over, strictly increasing, at least 3",
        minimum=1e-6,
        maximum=MAX_LR,
        min_len=3,
        smoke=(0.004, 0.008, 0.016),
    )
    lrs: tuple[float, ...] = param(
        (0.005, 0.01, 0.02, 0.04, 0.08),
        "Muon's matrix rates tuned over, strictly increasing, at least 3",
        minimum=1e-6,
        maximum=MAX_LR,
        min_len=3,
        smoke=(0.01, 0.02, 0.04),
    )
    steps: int = param(300, "updates per training (10% warm-up, then constant)", minimum=20, maximum=100_000, smoke=20)
    batch_size: int = param(
        16, "sequences of 32 characters per update", minimum=1, maximum=1024, formerly="muon_batch", smoke=4
    )
    seeds: int = replicates_param("models and data streams per width (the rates are tuned on the first)", default=3)


@dataclass(frozen=True)
class Aspect(PartConfig):
    """The width-depth aspect ratio at a fixed size (000#69; on with ``aspect_ratio``)."""

    PART = "aspect"

    widths: tuple[int, ...] = param(
        (128, 64, 32),
        "widths of the shapes, shallow-wide first (strictly decreasing, at least two)",
        minimum=8,
        maximum=1024,
        min_len=2,
        smoke=(32, 16),
    )
    depths: tuple[int, ...] = param(
        (1, 4, 16),
        "depths of the shapes, one per width, with n_layers x d_model^2 the same for every shape",
        minimum=1,
        maximum=128,
        min_len=2,
        smoke=(1, 4),
    )
    variants: tuple[str, ...] = param(
        tuple(ASPECT_VARIANTS), "architectures: Pre-LN, LayerNorm Scaling, Full AttnRes", choices=tuple(ASPECT_VARIANTS)
    )
    lr: float = param(0.004, "AdamW's rate, one for every shape (the fixed recipe)", minimum=1e-6, maximum=MAX_LR)
    steps: int = param(200, "updates per training (10% warm-up, cosine)", minimum=1, maximum=100_000, smoke=10)
    batch_size: int = param(
        16, "sequences of 32 characters per update", minimum=1, maximum=1024, formerly="aspect_batch", smoke=4
    )
    seeds: int = replicates_param("models and data streams per shape and architecture", default=5)

    def validate(self) -> None:
        """The shapes: one depth per width, shallow-wide to deep-narrow, all of one size."""
        super().validate()
        widths, depths = self.widths, self.depths
        if len(widths) != len(depths):
            raise ValueError(f"aspect_depths must give one depth per width of aspect_widths, got {list(depths)}")
        check_increasing("aspect_depths", depths)
        if any(b >= a for a, b in zip(widths, widths[1:], strict=False)):
            raise ValueError(f"aspect_widths must be strictly decreasing (shallow-wide first), got {list(widths)}")
        sizes = {n * d * d for d, n in zip(widths, depths, strict=True)}
        if len(sizes) > 1:
            raise ValueError(
                f"aspect_depths x aspect_widths^2 must be one size for every shape (fixed size), got {sorted(sizes)}"
            )


@dataclass(frozen=True)
class NewtonSchulz(PartConfig):
    """Muon's Newton-Schulz map."""

    PART = "ns"

    sizes: tuple[int, ...] = param(
        (64, 256), "matrix sizes of the Newton-Schulz check: every (rows, cols) pair of them", minimum=2, maximum=2048
    )
    draws: int = param(16, "Gaussian matrices per shape", minimum=1, maximum=1000, smoke=4)


@dataclass(frozen=True)
class Config(ProbeConfig):
    SMOKE = {
        "widths": (32, 64, 128),
        "mixers": ("softmax",),
        "depths": (2, 4, 8),
    }

    # --- the width check (coordinate check) ----------------------------------------------------------------------
    widths: tuple[int, ...] = param(
        (32, 64, 128, 256, 512),
        "widths d_model of the coordinate check, strictly increasing, at least two (an exponent is a slope)",
        minimum=8,
        maximum=2048,
        min_len=2,
    )
    base_d_model: int = param(32, "muP's base width d0 (the model is the standard one there)", minimum=8, maximum=2048)
    n_layers: int = param(2, "blocks of the width check's models", minimum=1, maximum=8)
    n_heads: int = param(4, "heads per layer (must divide every width and base_d_model)", minimum=1, maximum=16)
    vocab_size: int = param(64, "token vocabulary", minimum=2, maximum=4096)
    seq_len: int = param(
        4,
        "positions of the one sequence the first update is taken on (few: the exponents are asymptotic)",
        minimum=2,
        maximum=256,
    )
    mixers: tuple[str, ...] = param(MIXERS, "token mixers checked", choices=MIXERS)
    adam_lr: float = param(1e-3, "Adam's learning rate (at the base width)", minimum=1e-8, maximum=MAX_LR)
    sgd_lr: float = param(0.1, "SGD's learning rate (at the base width)", minimum=1e-8, maximum=MAX_LR)
    width_seeds: int = replicates_param("models and sequences per width")
    trajectory: Trajectory = part(Trajectory)
    # --- the depth check -------------------------------------------------------------------------------------------
    depths: tuple[int, ...] = param(
        (2, 4, 8, 16, 32),
        "depths n_layers of the depth check, strictly increasing, at least two",
        minimum=1,
        maximum=128,
        min_len=2,
    )
    depth: Depth = part(Depth)
    transfer: Transfer = part(Transfer)
    muon_vs_adamw: bool = param(True, "train Muon against AdamW (the part's gate)")
    muon: Muon = part(Muon)
    aspect_ratio: bool = param(True, "train the aspect-ratio sweep (the part's gate)")
    aspect: Aspect = part(Aspect)
    ns: NewtonSchulz = part(NewtonSchulz)
    seed: int = param(
        0,
        "seed of the models, sequences and matrices (replicate i: replicate_seed(seed, i))",
        minimum=0,
        maximum=MAX_SEED,
    )

    def validate(self) -> None:
        super().validate()
        for name in (
            "widths",
            "trajectory_widths",
            "depths",
            "transfer_widths",
            "transfer_adam_lrs",
            "transfer_sgd_lrs",
            "muon_widths",
            "muon_adamw_lrs",
            "muon_lrs",
        ):
            check_increasing(name, self.value_of(name))
        for name in ("widths", "trajectory_widths", "transfer_widths", "muon_widths", "aspect_widths"):
            for d in (*self.value_of(name), self.base_d_model):
                if d % self.n_heads:
                    raise ValueError(f"n_heads must divide every width in {name} and base_d_model, got {d}")
        # the trained parts' character LMs use RoPE: an even head size at every width they train
        rope = [
            ("transfer", "transfer_widths", self.transfer.widths),
            ("transfer", "base_d_model", (self.base_d_model,)),
            ("muon_vs_adamw", "muon_widths", self.muon.widths),
            ("aspect_ratio", "aspect_widths", self.aspect.widths),
        ]
        for gate, name, widths in rope:
            odd = [d for d in widths if (d // self.n_heads) % 2]
            if self.value_of(gate) and odd:
                raise ValueError(
                    f"{name} must give an even head size d / n_heads (RoPE) with {gate} on, got {odd[0]} / "
                    f"{self.n_heads}"
                )
        if self.depth.d_model % self.n_heads:
            raise ValueError(f"n_heads must divide depth_d_model, got {self.depth.d_model}")
