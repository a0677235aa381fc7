"""Shared recipe of the prompt-forgetting probe: the model (built and trained from the config, or passed), its
held-out losses, the prompt pairs, the logit bias that cancels the prompt's dilution, and the run's context
(:func:`prepare`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from analysis.claims.evidence import replicate_seeds
from analysis.data.corpus import bigram_cross_entropy, build_corpus
from analysis.data.tasks import CorpusLM, MarkovLanguage
from analysis.probing.base import ModelIncompatibleError
from analysis.probing.parts import Context
from analysis.theory import prompt_forgetting as th
from analysis.training.train import derived_seed, evaluate, probe_lm_train_config, train
from analysis.zoo import protocol
from analysis.zoo.model import ModelConfig, PrefixKeyBias, TinyTransformer
from probes.prompt_forgetting.config import Config


def model_config(config: Config) -> ModelConfig:
    """The TinyTransformer this config measures (untrained weights from ``seed``): its model fields and settings
    (:meth:`Config.model_settings`: a byte vocabulary for corpus data, the logit scale times ``logit_gain``), the
    model that validating the config already built."""
    return config.model_config()


def _task(config: Config, seq_len: int):
    if config.data == "markov":
        return MarkovLanguage(vocab_size=config.model.vocab_size, seq_len=seq_len, seed=config.seed)
    return CorpusLM(seq_len=seq_len)


def train_config(config: Config):
    return probe_lm_train_config(config.train.steps, config.seed)


def weight_seeds(seed: int, n: int) -> list[int]:
    """Seeds of ``n`` independent weight replicates of a run with seed ``seed`` (for :func:`depth_law`'s sweep):
    replicate 0 is ``seed`` itself, the others hashed from ``(seed, i)``
    (:func:`analysis.claims.evidence.replicate_seed`),
    so runs with different seeds share no model."""
    return replicate_seeds(seed, n)


# independent replicates of every untrained design in notebook 03 (probes.replicated_run; untrained runs take
# seconds); a trained model stays at its one seed (TRAINED_ONE_SEED)
REPLICATES = {"smoke": 2, "full": 5}


# one weight seed per trained model: what a trained claim's band cannot include (the figure pipeline's cost)
TRAINED_ONE_SEED = (
    "one weight seed per trained model: compute (training takes about 57 s at L = 2 to 215 s at L = 8 for 2000 "
    "updates on one thread; notebook 03 already takes ~975 s)"
)


def build_model(config: Config, progress: bool = True):
    """``(model, info)``: untrained from the config, or trained (cached) on ``data``; with
    ``train_checkpoints`` ``info["snapshots"]`` maps each step to the weights after it (same run)."""
    cfg = model_config(config)
    if not config.trained:
        return TinyTransformer(cfg, device=config.torch_device()).eval(), {}
    res = train(
        cfg,
        _task(config, config.train.seq_len),
        train_config(config),
        device=config.torch_device(),
        progress=progress,
        snapshots=config.train.checkpoints,
    )
    info = {"train_loss": res.final_loss, "checkpoint": res.key, "from_cache": res.from_cache}
    if config.train.checkpoints:
        info["snapshots"] = {s: res.snapshot_model(s) for s in config.train.checkpoints}
    return res.model, info


HELDOUT_BATCHES = 8  # held-out batches of 16 sequences of train_seq_len tokens (the loss the figures report)


def language_losses(config: Config, models: dict) -> dict[str, float]:
    """Held-out next-token loss (nats) of each model in ``models`` on ``data`` (``heldout_loss_<name>``),
    beside the two references it is read against: ``bigram_entropy``, the loss of the best model with
    one token of context, and ``unigram_entropy``, with none.

    Corpus: the validation split in ``HELDOUT_BATCHES`` non-overlapping windows of ``train_seq_len``;
    the references are the held-out cross-entropies of the bigram and unigram models fitted on the
    train split (Krichevsky-Trofimov, :func:`analysis.data.corpus.bigram_cross_entropy`). Markov: fresh
    sequences from a generator seeded apart from training; the language is order 1, so its bigram
    entropy is its entropy rate (the Bayes loss: no model can beat it) and its unigram entropy is
    ``H(pi)``.
    """
    task = _task(config, config.train.seq_len)
    if config.data == "corpus":
        batches = list(task.eval_batches(16, max_batches=HELDOUT_BATCHES))
        train_tok, val_tok = task.data.train_tokens, task.data.val_tokens
        bigram = bigram_cross_entropy(train_tok, val_tok, 256)
        uni = np.bincount(np.asarray(train_tok, dtype=np.int64), minlength=256) + 0.5
        unigram = float(-np.log(uni[np.asarray(val_tok, dtype=np.int64)] / uni.sum()).mean())
    else:
        gen = torch.Generator().manual_seed(derived_seed(config.seed, "heldout"))
        batches = [task.sample(16, gen) for _ in range(HELDOUT_BATCHES)]
        bigram, unigram = task.entropy_rate, task.unigram_entropy
    out = {f"heldout_loss_{k}": evaluate(m, task, batches) for k, m in models.items()}
    return {**out, "bigram_entropy": float(bigram), "unigram_entropy": float(unigram)}


def corpus_ids(model, chunk_chars: int = 20_000) -> torch.Tensor:
    """The corpus's validation text in ``model``'s own tokens (1-D LongTensor).

    The text is cut at line ends into chunks of about ``chunk_chars`` characters, each encoded with
    :func:`analysis.zoo.protocol.encode_text` (a tokenizer, or UTF-8 bytes for byte-level zoo models) and
    concatenated. For a byte model this is the validation split itself (the corpus is ASCII).
    """
    corpus = build_corpus()
    text = corpus.decode(corpus.val_tokens)
    pieces, start = [], 0
    while start < len(text):
        stop = text.rfind("\n", start, start + chunk_chars) + 1 if start + chunk_chars < len(text) else len(text)
        stop = stop if stop > start else min(start + chunk_chars, len(text))
        pieces.append(protocol.encode_text(model, text[start:stop]).long().reshape(-1))
        start = stop
    return torch.cat(pieces)


def draw_pairs(config: Config, model=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Prompts ``A``, ``B`` (n, P) and continuations ``c`` (n, T) from ``data`` with generator ``seed``.

    Token ids lie in the vocabulary of ``model`` (:func:`analysis.zoo.protocol.vocab_size`); ``None`` means
    the model this config builds. ``data="markov"`` needs a model vocabulary at least the language's;
    ``data="corpus"`` encodes the corpus's validation text with the model (:func:`corpus_ids`).
    """
    n, P, T = config.n_pairs, config.prompt_len, config.cont_len
    vocab = config.model_settings()["vocab_size"] if model is None else protocol.vocab_size(model)
    if vocab is None or vocab < 2:
        raise ModelIncompatibleError(
            f"prompt_forgetting needs a token model with a vocabulary (vocab_size >= 2), got {vocab}"
        )
    gen = torch.Generator().manual_seed(config.seed + 7919)  # prompts/continuations only
    if config.data == "random":
        draw = lambda k, m: torch.randint(0, vocab, (k, m), generator=gen)  # noqa: E731
    elif config.data == "markov":
        if vocab < config.model.vocab_size:
            raise ModelIncompatibleError(
                f"data 'markov' draws ids below vocab_size={config.model.vocab_size}, but the model's "
                f"vocab is {vocab}; set vocab_size <= {vocab}"
            )
        lang = _task(config, 1)
        draw = lambda k, m: lang.sample_sequences(k, m, gen)  # noqa: E731
    else:
        val = corpus_ids(model) if model is not None else _task(config, 1)._val.long()
        if val.shape[0] <= P + T:
            raise ValueError(
                f"the encoded validation text has {val.shape[0]} tokens, fewer than prompt_len + cont_len = {P + T}"
            )

        def draw(k: int, m: int) -> torch.Tensor:
            start = torch.randint(0, val.shape[0] - m, (k,), generator=gen)
            return val[start[:, None] + torch.arange(m)].long()  # (k, m)

    a, b, c = draw(n, P), draw(n, P), draw(n, T)
    same = (a == b).all(dim=1)
    b[same, -1] = (a[same, -1] + 1) % vocab  # a pair must differ somewhere
    return a, b, c


def cancel_bias(P: int, n_tokens: int, dtype: torch.dtype) -> PrefixKeyBias:
    """The additive logit bias ``ln(t - P)`` on prompt keys ``j < P`` of queries ``t = i + 1 > P``, kept as
    one value per query row (:class:`analysis.zoo.model.PrefixKeyBias`, ``O(N)`` memory)."""
    t = np.arange(1, n_tokens + 1)
    return PrefixKeyBias(torch.tensor(th.cancel_bias(P, t), dtype=torch.float64).to(dtype), P)


def cancel_bias_matrix(P: int, n_tokens: int, dtype: torch.dtype) -> torch.Tensor:
    """(N, N) dense form of :func:`cancel_bias`."""
    return cancel_bias(P, n_tokens, torch.float64).dense().to(dtype)


@dataclass(frozen=True)
class Prepared:
    """What every part of a run measures: the model (built, and trained when asked, from the config, or the passed
    one), what training reported (``snapshots``: the weights at ``train_checkpoints``), the prompt pairs and
    continuation, and the cancelling logit bias (or None)."""

    net: Any
    info: dict
    pairs: tuple
    bias: PrefixKeyBias | None


def prepare(ctx: Context) -> None:
    """Puts the run's :class:`Prepared`."""
    config = ctx.config
    net, info = ctx.model, {}
    if ctx.own_model:
        net, info = build_model(config, progress=ctx.progress)
    P, T = config.prompt_len, config.cont_len
    N = P + T
    protocol.check_length(net, N, f"prompt_len + cont_len = {P} + {T} =")
    pairs = draw_pairs(config, None if ctx.own_model else net)
    dtype = next(net.parameters()).dtype if hasattr(net, "parameters") else torch.float32
    bias = cancel_bias(P, N, dtype) if config.logit_bias == "cancel" else None
    ctx.put(Prepared(net=net, info=info, pairs=pairs, bias=bias))
