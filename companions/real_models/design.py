"""The design of ``06_real_models``: every model, configuration and input the notebook measures, per preset.

:func:`build` turns the notebook's parameters (``preset``, ``seed``, ``gpt2_layers``) into a :class:`RealModels`:
the pretrained MiniLM encoder (shipped with the ``hf`` extra, never downloaded) and its independent random
re-initialisations, a random GPT-2 and its zoo copy, the tiny Post-LN zoo encoder (with and without skip
connections, one pair per initialisation), and the probe configurations of the three experiments (rank collapse
on corpus text, attention entropy against context length, representational collapse of ``repeat_last``).
Initialisation ``i`` of every random-weight model has seed ``analysis.claims.evidence.replicate_seed(seed, i)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from analysis.claims.evidence import replicate_seeds
from analysis.core.validation import check_choice, check_int
from analysis.zoo.model import ModelConfig, TinyTransformer
from companions.real_models import gpt2_label

# per preset: signal propagation's tokens per text chunk and batches of 4; attention entropy's context lengths;
# representational collapse's lengths, bases, bootstrap replicates and fit window; random initialisations
DESIGN: dict[str, dict[str, Any]] = {
    "smoke": {
        "seq_len": 48,
        "n_batches": 4,
        "ctx_lens": (16, 64, 128),
        "rc": {"max_len": 48, "n_lengths": 5, "n_bases": 3, "n_boot": 100, "fit_lo": 8.0},
        "n_inits": 2,
    },
    "full": {
        "seq_len": 128,
        "n_batches": 6,
        "ctx_lens": (16, 64, 256, 512),
        "rc": {"max_len": 256, "n_lengths": 8, "n_bases": 4, "n_boot": 400, "fit_lo": 16.0},
        "n_inits": 5,
    },
}
PRETRAINED, REINIT, TINY = "MiniLM (pretrained)", "MiniLM (re-initialised)", "tiny Post-LN encoder (zoo)"


@dataclass(frozen=True)
class RealModels:
    """The notebook's models (display name -> model, one initialisation each; ``tags``: their ledger tags and
    claim-name suffixes), the independent initialisations behind the random ones, and the probe configurations."""

    preset: str
    seed: int
    encoder: Any  # the pretrained MiniLM (HFModel)
    encoder_inits: list[Any]  # its independent re-initialisations
    gpt2: Any  # a random GPT-2 (float64) ...
    gpt2_zoo: Any  # ... and our zoo copy of it
    gpt2_name: str  # its display name
    tiny_pairs: list[tuple[Any, Any]]  # the zoo encoder with and without skips, per initialisation
    models: dict[str, Any]
    tags: dict[str, str]
    sp_config: dict[str, Any]  # signal propagation on corpus text (Dong et al.'s rank collapse)
    ctx_lens: tuple[int, ...]  # attention entropy's context lengths
    rc_config: dict[str, Any]  # representational collapse, repeat_last
    agreement_tokens: torch.Tensor  # (2, 64) random tokens on which the GPT-2 and its zoo copy are compared

    @property
    def gpt2_label(self) -> str:
        """``gpt2_random_L2_d64``: what the GPT-2 is (random weights, 2 blocks, width 64)."""
        return gpt2_label(self.gpt2)

    @property
    def sp_models(self) -> dict[str, Any]:
        """Signal propagation's models, each as (with skips, without skips) pairs: the pretrained encoder alone,
        the re-initialised encoder and the tiny encoder over their independent initialisations."""
        return {
            PRETRAINED: (self.encoder, self.encoder.with_residual(False)),
            REINIT: [(m, m.with_residual(False)) for m in self.encoder_inits],
            TINY: self.tiny_pairs,
        }


def signal_config(preset: str, seed: int) -> dict[str, Any]:
    """Signal propagation's overrides on corpus text (Dong et al.'s rank collapse): a figure's inputs."""
    d = DESIGN[preset]
    return dict(data="corpus", seq_len=d["seq_len"], n_samples=d["n_batches"], batch_size=4, jacobian=False, seed=seed)


def collapse_config(preset: str, seed: int) -> dict[str, Any]:
    """Representational collapse's overrides (``repeat_last``, learned positions): a figure's inputs. No
    sensitivity: one backward pass per coordinate and layer is too slow at MiniLM's d = 384."""
    rc = DESIGN[preset]["rc"]
    return dict(
        family="repeat_last",
        dtypes=("float32",),
        n_lengths=rc["n_lengths"],
        max_len=rc["max_len"],
        n_bases=rc["n_bases"],
        n_boot=rc["n_boot"],
        fit_lo=rc["fit_lo"],
        seed=seed,
        sensitivity=False,
    )


def build(preset: str = "full", seed: int = 0, gpt2_layers: int = 2) -> RealModels:
    """The notebook's design from its parameters (``ValueError`` naming a bad one); module docstring."""
    from analysis.zoo.hf import HFModel, gpt2_config, minilm_dir, zoo_from_gpt2  # the hf extra

    check_choice("preset", preset, tuple(DESIGN))
    check_int("seed", seed, minimum=0)
    check_int("gpt2_layers", gpt2_layers, minimum=1)
    d = DESIGN[preset]
    encoder = HFModel.from_pretrained(minilm_dir())
    inits = replicate_seeds(seed, d["n_inits"])  # independent initialisations of the random-weight models
    encoder_inits = [encoder.reinitialised(s) for s in inits]
    gpt2 = HFModel.from_config(
        gpt2_config(vocab_size=1024, n_positions=1024, n_layer=gpt2_layers, n_embd=64, n_head=4),
        seed=seed,
        dtype="float64",
    )
    gpt2_name = f"GPT-2 (random, {gpt2_layers} blocks, d 64)"
    tiny_cfg = ModelConfig(
        input="tokens",
        vocab_size=256,
        output="none",
        d_model=64,
        n_layers=6,
        n_heads=4,
        d_mlp=256,
        norm="post",
        causal=False,
        pos="learned",
        max_len=512,
        seed=seed,
    )
    tiny_pairs = [
        (
            TinyTransformer(tiny_cfg.replace(seed=s)).eval(),
            TinyTransformer(tiny_cfg.replace(seed=s, attn_residual=False, mlp_residual=False)).eval(),
        )
        for s in inits
    ]
    models = {PRETRAINED: encoder, REINIT: encoder_inits[0], gpt2_name: gpt2, TINY: tiny_pairs[0][0]}
    tags = {PRETRAINED: "minilm_pretrained", REINIT: "minilm_reinit", gpt2_name: gpt2_label(gpt2), TINY: "tiny_postln"}
    tokens = torch.randint(0, 1024, (2, 64), generator=torch.Generator().manual_seed(seed))  # (B, T)
    return RealModels(
        preset=preset,
        seed=seed,
        encoder=encoder,
        encoder_inits=encoder_inits,
        gpt2=gpt2,
        gpt2_zoo=zoo_from_gpt2(gpt2),
        gpt2_name=gpt2_name,
        tiny_pairs=tiny_pairs,
        models=models,
        tags=tags,
        sp_config=signal_config(preset, seed),
        ctx_lens=d["ctx_lens"],
        rc_config=collapse_config(preset, seed),
        agreement_tokens=tokens,
    )
