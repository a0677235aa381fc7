"""The configuration of the representational-collapse probe, and the constants its parts share."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.core.config import PartConfig, part
from analysis.core.validation import check_distinct
from analysis.probing.base import ModelPart, ProbeConfig, model_param, param
from analysis.theory import representational_collapse as th

BIDIRECTIONAL = "bidirectional model: the causal derivation does not apply"
SOURCE = "Barbero et al. 2024, Transformers need glasses! (ANCHORS.md 4)"
SEED = "004#81"  # Barbero et al. 2024, Transformers need glasses! (seed catalogue 1.4)
LOW_DTYPES = ("float32", "bfloat16", "float16")
# Independent seeds per configuration in the notebook's designs (analysis.probing.replicates): every claim's band is the
# seed-to-seed spread. Five in full (the policy's minimum for claims that depend on weights), two in smoke.
REPLICATES = {"smoke": 2, "full": 5}
EXTENSION_FIELDS = ("extend_dtype", "extend_lo", "extend_hi", "extend_lengths", "extend_bases")


@dataclass(frozen=True)
class Sensitivity(PartConfig):
    """The over-squashing sensitivity (on with ``sensitivity``)."""

    PART = "sens"

    len: int = param(256, "sequence length of the over-squashing sensitivity", minimum=4, smoke=32)
    bases: int = param(
        4, "random bases of the sensitivity (the first/middle ratio's SE is over them)", minimum=2, smoke=3
    )


@dataclass(frozen=True)
class Extend(PartConfig):
    """The extension: the protocol again on a grid of longer lengths, at one dtype (none: off)."""

    PART = "extend"

    dtype: str = param(
        "", "measure this format's collapse on lengths beyond the main grid ('' = not)", choices=("",) + LOW_DTYPES
    )
    lo: float = param(0.5, "extension: shortest length, in units of max_len", minimum=0.01)
    hi: float = param(2.0, "extension: longest length, in units of max_len", minimum=0.02)
    lengths: int = param(5, "extension: lengths on a log grid (like n_lengths)", minimum=3)
    bases: int = param(0, "extension: samples per length (0 = n_bases; else like n_bases, >= 2)", minimum=0)


@dataclass(frozen=True)
class Train(PartConfig):
    """Training the model (on with ``trained``)."""

    PART = "train"

    steps: int = param(400, "optimiser updates when trained", minimum=1, smoke=30)
    seq_len: int = param(256, "training context length", minimum=2, smoke=64)


@dataclass(frozen=True)
class Model(ModelPart):
    """The model whose representations are measured."""

    n_layers: int = model_param("n_layers", 2, formerly="layers")
    d_model: int = model_param("d_model", 64, smoke=32)
    n_heads: int = model_param("n_heads", 2, formerly="heads")
    attention: str = model_param("attention", "softmax", choices=("softmax", "uniform"))
    norm: str = model_param("norm", "pre", choices=("pre", "post", "none"))
    d_mlp: int = model_param("d_mlp", 256, formerly="mlp", smoke=64)
    pos: str = model_param(
        "pos",
        "none",
        "positional encoding (a passed model without a position limit: the one it uses)",
        choices=("none", "rope", "learned"),
    )
    vocab_size: int = model_param(
        "vocab_size", 64, "vocabulary (the last id is the separator; a passed model's own is used)", minimum=4
    )


@dataclass(frozen=True)
class Config(ProbeConfig):
    SMOKE = {
        "max_len": 128,
        "n_lengths": 8,
        "n_bases": 3,
        "n_boot": 100,
        "fit_lo": 8.0,
    }

    # --- protocol -------------------------------------------------------------------------------
    family: str = param("repeat_last", "sequence pair family", choices=th.FAMILIES)
    max_len: int = param(1024, "longest n (base length; counting: number of ones k)", minimum=8)
    min_len: int = param(4, "shortest n", minimum=2)
    n_lengths: int = param(16, "lengths on a log grid from min_len to max_len", minimum=3)
    n_bases: int = param(6, "samples (random bases / token pairs) per length; bootstrap over them", minimum=2)
    early_position: int = param(0, "early_token: 0-based position of the changed token", minimum=0)
    separator_every: int = param(0, "insert a separator after every this many tokens (0 = none)", minimum=0)
    dtypes: tuple[str, ...] = param(LOW_DTYPES, "dtypes to run besides the float64 reference", choices=LOW_DTYPES)
    sens: Sensitivity = part(Sensitivity)
    sensitivity: bool = param(True, "measure the sensitivity (one backward pass per model coordinate and layer)")
    # --- collapse beyond max_len ----------------------------------------------------------------
    extend: Extend = part(Extend)
    # --- model ----------------------------------------------------------------------------------
    model: Model = part(Model)
    # --- training -------------------------------------------------------------------------------
    trained: bool = param(False, "train the model on a Markov language first (analysis.training.train, cached)")
    train: Train = part(Train)
    # --- fit ------------------------------------------------------------------------------------
    fit_lo: float = param(16.0, "first n of the power-law window (last: max_len)", minimum=2.0)
    n_boot: int = param(1000, "bootstrap replicates over samples", minimum=10)
    seed: int = model_param("seed", 0, "weights (model seed), data and bootstrap seeds")

    def validate(self) -> None:
        super().validate()
        if self.min_len >= self.max_len:
            raise ValueError(f"min_len ({self.min_len}) must be below max_len ({self.max_len})")
        if not self.min_len <= self.fit_lo <= self.max_len / 2:
            raise ValueError(
                f"fit_lo must lie in [min_len, max_len/2] = [{self.min_len}, {self.max_len / 2}], got {self.fit_lo}"
            )
        if self.family == "early_token" and self.early_position >= self.min_len - 1:
            raise ValueError(f"early_position must be below min_len - 1 = {self.min_len - 1}")
        if self.extend.dtype and not self.extend.hi >= 2 * self.extend.lo:
            raise ValueError(f"extend_hi must be at least 2 extend_lo, got {self.extend.lo}, {self.extend.hi}")
        if self.extend.dtype and self.model.pos == "learned":
            raise ValueError("extend_dtype needs a model without learned positions (the extension reuses the model)")
        if self.separator_every >= self.max_len:
            raise ValueError(
                f"separator_every must be 0 (none) or below max_len = {self.max_len} (a separator must fall "
                f"inside the sequences), got {self.separator_every}"
            )
        if self.extend.dtype and self.extend.dtype not in self.dtypes:
            raise ValueError(
                f"extend_dtype must be one of dtypes {list(self.dtypes)} (its collapse length is predicted "
                f"from the main run's {self.extend.dtype} resolution), got {self.extend.dtype!r}"
            )
        if self.extend.dtype:  # the extension runs the protocol again on its own grid: the same rules apply
            lo, hi = extension_lengths(self)
            if hi < 8:
                raise ValueError(
                    f"extend_hi * max_len must be >= 8 (the extension's longest length, like max_len), "
                    f"got {self.extend.hi} * {self.max_len} = {hi}"
                )
            if 2 * lo > hi:
                raise ValueError(
                    f"extend_hi must be at least 2 extend_lo once rounded to lengths, got extend_lo * "
                    f"max_len = {lo}, extend_hi * max_len = {hi}"
                )
            if self.family == "early_token" and self.early_position >= lo - 1:
                raise ValueError(
                    f"early_position must be below extend_lo * max_len - 1 = {lo - 1} (the extension's "
                    f"shortest length), got {self.early_position}"
                )
            if self.extend.bases == 1:
                raise ValueError("extend_bases must be 0 (= n_bases) or >= 2, got 1")
        check_distinct("dtypes", self.dtypes)


def extension_lengths(config: Config) -> tuple[int, int]:
    """Shortest and longest length of the ``extend_dtype`` grid: ``extend_lo``, ``extend_hi`` times ``max_len``."""
    return max(2, round(config.extend.lo * config.max_len)), round(config.extend.hi * config.max_len)
