"""The configuration of the prompt-forgetting probe."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from analysis.core.config import PartConfig, part
from analysis.core.validation import check_increasing
from analysis.probing.base import ModelPart, ProbeConfig, model_param, param

NAME = "prompt_forgetting"


SEED_SOURCE = "seed paper (seeds/000, first abstract)"


# the norms' epsilon of the zoo (ModelConfig.norm_eps default); the RMS condition is read against it
NORM_EPS = 1e-5


@dataclass(frozen=True)
class Train(PartConfig):
    """Training the model on its corpus (on with ``trained``)."""

    PART = "train"

    steps: int = param(400, "optimiser updates when trained", minimum=1, smoke=30)
    seq_len: int = param(256, "training context length", minimum=2, smoke=64)
    checkpoints: tuple[int, ...] = param(
        (),
        "optimiser steps (0..train_steps) at which, with trained=true, "
        "alpha is measured with and without the cancelling bias "
        "(arrays over train_step)",
        minimum=0,
        min_len=0,
    )


@dataclass(frozen=True)
class Model(ModelPart):
    """The model whose forgetting of its prompt is measured."""

    n_layers: int = model_param("n_layers", 2, formerly="layers")
    d_model: int = model_param("d_model", 64, smoke=32)
    n_heads: int = model_param("n_heads", 2, formerly="heads")
    attention: str = model_param("attention", "softmax", choices=("softmax", "uniform", "ssmax", "sigmoid", "linear"))
    norm: str = model_param("norm", "pre", choices=("pre", "post", "peri", "mix", "none"))
    norm_type: str = model_param("norm_type", "layernorm", choices=("layernorm", "rmsnorm"))
    d_mlp: int = model_param("d_mlp", 256, formerly="mlp", smoke=64)
    pos: str = model_param("pos", "none", "positions (exist at every t)", choices=("none", "rope"))
    dtype: str = model_param("dtype", "float32", choices=("float32", "float64"))
    vocab_size: int = model_param("vocab_size", 64, "vocabulary of random and Markov tokens (corpus: 256 bytes)")


@dataclass(frozen=True)
class Config(ProbeConfig):
    SMOKE = {
        "cont_len": 192,
        "n_pairs": 3,
        "n_boot": 200,
        "fit_lo": 24.0,
    }

    # --- model ----------------------------------------------------------------------------------
    model: Model = part(Model)
    logit_gain: float = param(
        1.0,
        "multiplies the attention logits' default scale 1/sqrt(d_head); below 1 it brings "
        "the logits inside the theorem's bounded-logit regime",
        minimum=1e-6,
    )
    # --- data and training ------------------------------------------------------------------------
    data: str = param(
        "random", "token source of prompts and continuation (and training)", choices=("random", "markov", "corpus")
    )
    trained: bool = param(False, "train the model on `data` first (markov or corpus) through analysis.training.train")
    train: Train = part(Train)
    # --- protocol -------------------------------------------------------------------------------
    prompt_len: int = param(16, "prompt length P", minimum=1)
    cont_len: int = param(4096, "continuation length T", minimum=8)
    n_pairs: int = param(8, "prompt pairs (each with its own continuation)", minimum=2)
    logit_bias: str = param(
        "none", "none | cancel: bias ln(t-P) on the prompt keys (dilution cancelled)", choices=("none", "cancel")
    )
    # --- fit ------------------------------------------------------------------------------------
    fit_lo: float = param(64.0, "first position t of the power-law window (last: P + T)", minimum=2.0)
    n_boot: int = param(1000, "bootstrap replicates over pairs", minimum=10)
    seed: int = model_param("seed", 0, "weights (model seed), data and bootstrap seeds")

    def model_settings(self) -> dict[str, Any]:
        """The model's token input and LM output, a byte vocabulary for corpus data, and the logit scale times
        ``logit_gain`` (gain 1 leaves ``logit_scale`` at its default, so trained checkpoints' keys are as without
        the field)."""
        # d_model / n_heads: the head size when n_heads divides d_model (the model refuses it otherwise, naming both)
        scale = None if self.logit_gain == 1.0 else self.logit_gain / math.sqrt(self.model.d_model / self.model.n_heads)
        if scale is not None and not math.isfinite(scale):
            raise ValueError(
                "logit_gain must keep the logit scale logit_gain / sqrt(d_model / n_heads) finite, got "
                f"{self.logit_gain}"
            )
        vocab = 256 if self.data == "corpus" else self.model.vocab_size
        return {"input": "tokens", "vocab_size": vocab, "output": "lm", "logit_scale": scale}

    def validate(self) -> None:
        super().validate()
        if self.trained and self.data == "random":
            raise ValueError("trained=true needs data 'markov' or 'corpus' (random tokens teach nothing)")
        if self.train.checkpoints and not self.trained:
            raise ValueError("train_checkpoints needs trained=true (they are steps of the training run)")
        check_increasing("train_checkpoints", self.train.checkpoints)
        if self.train.checkpoints and self.train.checkpoints[-1] > self.train.steps:
            raise ValueError(
                f"train_checkpoints must lie in [0, train_steps = {self.train.steps}], got "
                f"{list(self.train.checkpoints)}"
            )
        if self.fit_lo <= self.prompt_len or self.fit_lo >= self.prompt_len + self.cont_len / 2:
            raise ValueError(
                f"fit_lo must lie in (prompt_len, prompt_len + cont_len/2) = ({self.prompt_len}, "
                f"{self.prompt_len + self.cont_len / 2}), got {self.fit_lo}"
            )
