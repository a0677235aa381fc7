"""Shared recipe of the signal-propagation probe: the zoo models of the sweep, the Markov language, the batches
(Markov ids or corpus text) and the fixed loss."""

from __future__ import annotations

import functools
import math

import torch

from analysis.data.corpus import build_corpus
from analysis.data.tasks import MarkovLanguage
from analysis.training.train import TrainConfig, train
from analysis.zoo import protocol
from analysis.zoo.model import ModelConfig, TinyTransformer
from probes.signal_propagation.config import HIDDEN_LOSS_WIDTH, NORM_VARIANTS, Config


def model_config(cfg: Config, norm: str, depth: int, seed: int) -> ModelConfig:
    """The float64 TinyTransformer of one (norm variant, depth, weight seed): the model fields, the mask, MLP
    and skip switches, the norm variant's fields."""
    return cfg.model_config(
        input="tokens",
        vocab_size=model_vocab(cfg),
        output="lm",
        n_layers=depth,
        d_mlp=0 if cfg.attn_only else None,
        causal=cfg.mask == "causal",
        attn_residual=cfg.skip,
        mlp_residual=cfg.skip,
        dtype="float64",
        seed=seed,
        **NORM_VARIANTS[norm],
    )


def model_vocab(cfg: Config) -> int:
    """Vocabulary of the zoo's LM models: the Markov language's; with ``data="corpus"`` at least 256, so that
    the corpus text is encoded as UTF-8 bytes (:func:`analysis.zoo.protocol.encode_text`)."""
    return max(cfg.model.vocab_size, 256) if cfg.data == "corpus" else cfg.model.vocab_size


@functools.lru_cache(maxsize=2)  # a V = 4096 language holds 128 MB of transition matrix
def language(vocab_size: int, seq_len: int, seed: int) -> MarkovLanguage:
    """The Markov language, built once per process for each (vocabulary, length, seed): it is immutable and
    samples only from the generator it is given, and building one (a Dirichlet draw of V x V and its
    primitivity check) takes about 40 s at V = 4096, which every batch of a passed model used to repeat."""
    return MarkovLanguage(vocab_size=vocab_size, seq_len=seq_len, seed=seed)


def task(cfg: Config) -> MarkovLanguage:
    return language(cfg.model.vocab_size, cfg.seq_len, cfg.seed)


def train_config(cfg: Config):
    return TrainConfig(
        steps=cfg.train.steps,
        batch_size=32,
        lr=3e-3,
        warmup_steps=min(30, cfg.train.steps),
        weight_decay=0.0,
        seed=cfg.seed,
    )


def build(cfg: Config, norm: str, depth: int, seed: int, progress: bool = False) -> TinyTransformer:
    mcfg = model_config(cfg, norm, depth, seed)
    if not cfg.trained:
        return TinyTransformer(mcfg, device=cfg.torch_device())
    return train(mcfg, task(cfg), train_config(cfg), device=cfg.torch_device(), progress=progress).model


def batch(cfg: Config, sample: int, vocab: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, targets) (B, T) Markov sequences for sample ``sample``: the same for every norm and depth.
    The generator seed ``seed * 1_000_003 + sample + 17`` never repeats across runs of different seeds (for
    ``sample < 1_000_003``), so replicates of two runs share no batch as they share no weights.

    ``vocab`` (a passed model's vocabulary) caps the Markov language at ``min(vocab_size, vocab)`` ids.
    """
    gen = torch.Generator().manual_seed(cfg.seed * 1_000_003 + sample + 17)
    if vocab is None or vocab >= cfg.model.vocab_size:
        return task(cfg).sample(cfg.batch_size, gen)
    return language(vocab, cfg.seq_len, cfg.seed).sample(cfg.batch_size, gen)


def corpus_batches(cfg: Config, model) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``n_samples`` (inputs, targets) (B, T) batches of consecutive, non-overlapping chunks of the corpus
    validation text, encoded with the model's own tokenizer (UTF-8 bytes for byte-level zoo models)."""
    corpus = build_corpus()
    val = corpus.val_tokens
    need = cfg.n_samples * cfg.batch_size * (cfg.seq_len + 1)  # ids: each chunk carries its next token
    n_chars = min(val.size, 8 * need)
    while True:
        ids = protocol.encode_text(model, corpus.decode(val[:n_chars])).long().reshape(-1)
        if ids.numel() >= need or n_chars >= val.size:
            break
        n_chars = min(val.size, 2 * n_chars)
    if ids.numel() < need:
        raise ValueError(
            f"the corpus validation text gives {ids.numel()} tokens, fewer than n_samples * batch_size * "
            f"(seq_len + 1) = {need}; lower n_samples, batch_size or seq_len"
        )
    chunks = ids[:need].view(cfg.n_samples, cfg.batch_size, cfg.seq_len + 1)  # (S, B, T + 1)
    return [(c[:, :-1].contiguous(), c[:, 1:].contiguous()) for c in chunks]


def fixed_loss(out: torch.Tensor, targets: torch.Tensor, vocab: int | None, seed: int) -> tuple[torch.Tensor, str]:
    """The fixed loss whose gradients are measured, and its kind.

    A model whose output's last axis is its vocabulary returns logits: the loss is the mean next-token
    cross-entropy. Otherwise (an encoder returning hidden states ``h`` (B, T, d)) it is the mean squared
    error of a fixed random projection against a fixed random target, ``mean((h P - Y)^2)`` with
    ``P`` (d, k) ~ N(0, 1/d) and ``Y`` (B, T, k) ~ N(0, 1), ``k = HIDDEN_LOSS_WIDTH``, drawn from
    ``seed``: deterministic, defined for any width, and sensitive to every hidden coordinate.
    """
    if vocab is not None and out.shape[-1] == vocab:
        ce = torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), targets.reshape(-1))
        return ce, "next_token_cross_entropy"
    B, T, d = out.shape
    gen = torch.Generator().manual_seed(seed * 7919 + 3)
    P = torch.randn(d, HIDDEN_LOSS_WIDTH, generator=gen, dtype=torch.float64) / math.sqrt(d)
    Y = torch.randn(B, T, HIDDEN_LOSS_WIDTH, generator=gen, dtype=torch.float64)
    return (out @ P.to(out.device, out.dtype) - Y.to(out.device, out.dtype)).pow(2).mean(), "hidden_projection_mse"
