"""Shared recipe of the attention-entropy probe: the model measured at initialisation (built from the config, or the
passed one), its tokens, and the run's context (:func:`prepare`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from analysis.data.corpus import build_corpus
from analysis.probing.parts import Context
from analysis.zoo.model import ModelConfig, TinyTransformer
from analysis.zoo.protocol import check_length, encode_text, vocab_size
from probes.attention_entropy.config import Config


def model_config(
    config: Config,
    *,
    vocab: int,
    logit_scale: float | None = None,
    qk_norm: bool = False,
    attention: str | None = None,
    seed: int | None = None,
) -> ModelConfig:
    """The measured TinyTransformer: the config's model fields, pre-LN, no positions (so row n-1 sees exactly
    n keys), a vocabulary of ``vocab`` tokens. ``logit_scale``, ``attention`` and ``seed`` replace the config's
    when given; ``seed`` is a replicate's own seed (:func:`analysis.claims.evidence.replicate_seed`)."""
    given = {"logit_scale": logit_scale, "attention": attention or None, "seed": seed}
    return config.model_config(
        input="tokens",
        vocab_size=vocab,
        output="lm",
        norm="pre",
        pos="none",
        qk_norm=qk_norm,
        **{k: v for k, v in given.items() if v is not None},
    )


def distinct_tokens(T: int, seed: int, vocab: int | None = None) -> torch.Tensor:
    """(1, T) distinct token ids: the first T of a random permutation of range(vocab) (vocab T by default)."""
    gen = torch.Generator().manual_seed(seed + 7919)  # tokens only
    return torch.randperm(T if vocab is None else vocab, generator=gen)[None, :T]


def corpus_tokens(model, T: int, seed: int) -> torch.Tensor:
    """(1, T) token ids of held-out corpus text in the model's own encoding (:func:`encode_text`),
    starting at a seed-dependent offset of the validation split."""
    corpus = build_corpus()
    val = corpus.val_tokens
    start = (seed * 7919) % max(1, len(val) // 2)  # tokens only
    chars = T
    while True:
        ids = encode_text(model, corpus.decode(val[start : start + chars]))
        if len(ids) >= T or start + chars >= len(val):
            break
        chars *= 2
    if len(ids) < T:
        raise ValueError(f"the corpus validation text gives only {len(ids)} tokens; ctx_lens needs {T}")
    return ids[:T].to(torch.long)[None, :]


def measured_tokens(config: Config, model, T: int) -> torch.Tensor:
    """(1, T) token ids of the measurement: distinct ids (``data="distinct"``) or held-out corpus text."""
    if config.data != "distinct":
        return corpus_tokens(model, T, config.seed)
    v = vocab_size(model)
    if v is None or v < T:
        raise ValueError(
            f"data='distinct' needs a vocabulary of at least max(ctx_lens) = {T} distinct tokens, the model has {v}"
        )
    return distinct_tokens(T, config.seed, vocab=v)


@dataclass(frozen=True)
class MeasuredModel:
    """The model the untrained parts measure and its input: the context lengths ``ns`` (their largest ``T``), whether
    the kernel normalises its rows (softmax or SSMax), the model at initialisation (the config's own, or the passed
    one), whether it is causal, and the tokens (1, T)."""

    ns: np.ndarray
    T: int
    normalised: bool
    net: Any
    causal: bool
    tokens: torch.Tensor


def prepare(ctx: Context) -> None:
    """Puts the run's :class:`MeasuredModel`."""
    config = ctx.config
    ns = np.asarray(config.ctx_lens)
    T = int(ns.max())
    if ctx.own_model:
        mcfg = model_config(config, vocab=T if config.data == "distinct" else max(T, 256))
        net = TinyTransformer(mcfg, device=config.torch_device()).eval()
    else:
        net = ctx.model
    check_length(net, T, "max(ctx_lens)")
    normalised = config.model.attention in ("softmax", "ssmax")
    tokens = measured_tokens(config, net, T)
    ctx.put(MeasuredModel(ns=ns, T=T, normalised=normalised, net=net, causal=bool(net.causal), tokens=tokens))
