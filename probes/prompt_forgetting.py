"""Prompt forgetting: two prompts, one continuation; the hidden-state offset decays like t^(-alpha).

Protocol (seed paper, first abstract of ``seeds/000_*.txt``). For each of ``n_pairs`` pairs draw two
prompts ``A``, ``B`` of ``prompt_len = P`` tokens and one continuation ``c_1..c_T`` (``T = cont_len``),
and run the two sequences ``A c`` and ``B c`` through the model in one teacher-forced forward pass
(batch of 2), which gives every continuation position at once. Positions are counted from 1, so the
continuation occupies ``t = P+1 .. P+T`` and a causal layer at position ``t`` sees ``t`` tokens.

Measured at every layer ``l`` (``blocks.l.hook_resid_post``) and position ``t``:
``D_l(t) = |h^A_l(t) - h^B_l(t)|`` and ``D_l(t) / |h_l(t)|`` (``|h|`` the mean norm of the two states).
Curves are geometric means over pairs; ``alpha`` is the least-squares slope of ``-ln D`` against
``ln t`` over the window ``[fit_lo, P + T]`` on a log grid, with a percentile bootstrap over pairs;
``alpha_local(t) = -d ln D / d ln t`` is a smoothed local slope (:mod:`analysis.fitting`).

Theory beside it (:mod:`analysis.theory.prompt_forgetting`): the bound's shape ``P (ln t)^(L-1)/t``
and its local exponent ``1 - (L-1)/ln t`` (``bound_ratio = D t / (P (ln t)^(L-1))``, ``L`` = depth up
to that layer); the linear relay model's offsets and local exponent; the theorem's conditions measured
on the same forward passes (largest finite |attention logit| from ``hook_attn_scores``, the intervention's
bias removed; smallest RMS of a pre-norm input from ``ln1/ln2.hook_in``); the prompt's attention
share per layer and its dilution bound ``P e^(2B) / (P e^(2B) + t - P)``. With ``logit_bias="cancel"``
the bias ``ln(t - P)`` is added to the prompt keys' logits of every continuation query in every layer,
which keeps a uniform row's prompt share at ``P/(P+1)``.

With ``attention="uniform"``, ``norm="none"`` and ``mlp=0`` the network *is* the matrix relay model
(``h^l = h^(l-1) + M h^(l-1) (W_o W_v)^T``): the measured offsets are checked against it exactly.

The bound's constant. ``bound_ratio`` is ``D_l(t) / (P (ln t)^l' / t)`` with ``l'`` = depth - 1; its
plateau over the last octave ``[N/2, N]`` (``bound_plateau``) estimates the constant ``C`` of
``D <= C P (ln t)^(L-1) / t`` and ``bound_constant`` is the smallest ``C`` that holds on the whole fit
window. For the matrix relay model the limit is exact: the ``k = L`` term of the closed form dominates,
``t D_L(t) / (P (ln t)^(L-1)) -> |A_L .. A_1 sum_{s<=P} delta_s| / (P (L-1)!)`` (``relay_matrix_limit``),
reached only like ``1/ln t``; for the first layer it holds at every ``t > P``.

Claims. ``run`` measures, then :func:`claims` judges the result (Dataset, scalars, config) through one
small function per theorem or paper: the relay identities, the bias identities, the theorem's conditions,
its bound (``bound_ratio_not_growing``: an upper bound on ``D`` permits faster decay; what it forbids is
``D t / (P (ln t)^(L-1))`` growing, checked on the bootstrap CI of ``bound_plateau_slope``), the relay
model's exponent (``alpha_matches_relay``, alternative ``alpha = 1``) and the seed's measured ranges.
Claims across runs are made by functions the notebook calls with the runs' results:
:func:`bias_claims` (the bias stops the decay, ``alpha = 0``, or reverses it after training,
``alpha < 0``), :func:`trained_vs_untrained_claims` (trained models forget faster),
:func:`depth_sweep_claims` (``d alpha / dL`` against the relay model's) and :func:`relay_model_claims`
(the relay model's closed form and asymptotics).

Passed-in models. ``run(config, model)`` takes any causal token :class:`analysis.protocol.ProbeModel`
(our zoo or the Hugging Face adapter). The config's architecture and training fields (``layers``,
``d_model``, ``heads``, ``norm``, ``norm_type``, ``mlp``, ``pos``, ``dtype``, ``trained``...) then
describe nothing and are ignored, except ``attention``, read as the kernel the model is declared to
have (only the softmax dilution-bound claim uses it). Tokens are drawn within the model's own
vocabulary (:func:`analysis.protocol.vocab_size`); ``data="corpus"`` encodes the corpus's validation
text with the model's tokenizer (:func:`analysis.protocol.encode_text`); ``P + T`` must fit the model's
positions. Only hook names the model lists are asked for: a statistic whose hooks are missing (the
pre-norm inputs of ``min_prenorm_rms``, the attention scores of ``max_logit``) is NaN and its
theorem-condition claim ``not_evaluated`` with the reason.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import sys
from dataclasses import dataclass

import numpy as np
import torch
import xarray as xr

from analysis import protocol
from analysis.corpus import bigram_cross_entropy, build_corpus
from analysis.devices import model_device, to_numpy
from analysis.evidence import mean_se, replicate_seeds, t_multiple
from analysis.fitting import PowerLawFit, bootstrap_power_law, local_exponent
from analysis.hooks import SCORES, canonical_name, hook_points, hooks, resid_names, run_with_cache
from analysis.ledger import Ledger
from analysis.model import ModelConfig, PrefixKeyBias, TinyTransformer, bias_block
from analysis.progress import bar
from analysis.tasks import CorpusLM, MarkovLanguage
from analysis.theory import prompt_forgetting as th
from analysis.train import derived_seed, evaluate, probe_lm_train_config, train
from probes.base import ModelIncompatibleError, ProbeConfig, Result, model_param, param
from probes.replicates import Replicates, worst_of
from probes.studies import Study, tagged_ledger

NAME = "prompt_forgetting"
DESCRIPTION = "Prompt-forgetting exponent: offset of two prompts' hidden states under one continuation vs t."
# VERSION history: 14: the one band policy (95% Student-t bands; depth-law claims over weight seeds' replicates;
# fail triage); 13: attention in blocks of 256 query rows, not 1024 (each block's products are other matrix
# products: last-bit changes; 2.2x faster); 12: prompt_share_bound without overflow (last-bit changes), NaN fits
# when the prompt is forgotten exactly; 11: attention in blocks of query rows (memory linear in T), compact bias;
# 10: train_checkpoints, held-out loss; 9: bound_ratio_not_growing undiagnosed; 8: logit_gain; 7: alpha_relay_window
# scalar; 2: relay_matrix stored for uniform models; 3: deviation text names the size; 4: norm_type field, bound
# constants/plateaus and the theorem-condition claims; 5: the untrained deviation text computes the relay exponent
# at the run's own depth and length (max |logit| now blockwise, same value); 6: claims with roles, the bound's ratio
# checked for growth (bootstrap CI of its slope), relay prediction
VERSION = "14"
REQUIRES = {"causal": True, "input": "tokens"}

SEED_SOURCE = "seed paper (seeds/000, first abstract)"
# the norms' epsilon of the zoo (ModelConfig.norm_eps default); the RMS condition is read against it
NORM_EPS = 1e-5


@dataclass(frozen=True)
class Config(ProbeConfig):
    PRESETS = {
        "smoke": {
            "cont_len": 192,
            "n_pairs": 3,
            "d_model": 32,
            "mlp": 64,
            "n_boot": 200,
            "fit_lo": 24.0,
            "train_steps": 30,
            "train_seq_len": 64,
        },
        "full": {},
    }

    # --- model ----------------------------------------------------------------------------------
    layers: int = model_param("layers", 2)
    d_model: int = model_param("d_model", 64)
    heads: int = model_param("heads", 2)
    attention: str = model_param("attention", "softmax", choices=("softmax", "uniform", "ssmax", "sigmoid", "linear"))
    norm: str = model_param("norm", "pre", choices=("pre", "post", "peri", "mix", "none"))
    norm_type: str = model_param("norm_type", "layernorm", choices=("layernorm", "rmsnorm"))
    mlp: int = model_param("mlp", 256)
    pos: str = model_param("pos", "none", "positions (exist at every t)", choices=("none", "rope"))
    dtype: str = model_param("dtype", "float32", choices=("float32", "float64"))
    logit_gain: float = param(
        1.0,
        "multiplies the attention logits' default scale 1/sqrt(d_head); below 1 it brings "
        "the logits inside the theorem's bounded-logit regime",
        minimum=1e-6,
    )
    vocab_size: int = model_param("vocab_size", 64, "vocabulary of random and Markov tokens (corpus: 256 bytes)")
    # --- data and training ------------------------------------------------------------------------
    data: str = param(
        "random", "token source of prompts and continuation (and training)", choices=("random", "markov", "corpus")
    )
    trained: bool = param(False, "train the model on `data` first (markov or corpus) through analysis.train")
    train_steps: int = param(400, "optimiser updates when trained", minimum=1)
    train_seq_len: int = param(256, "training context length", minimum=2)
    train_checkpoints: tuple[int, ...] = param(
        (),
        "optimiser steps (0..train_steps) at which, with trained=true, "
        "alpha is measured with and without the cancelling bias "
        "(arrays over train_step)",
        minimum=0,
        min_len=0,
    )
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

    def validate(self) -> None:
        super().validate()
        if self.trained and self.data == "random":
            raise ValueError("trained=true needs data 'markov' or 'corpus' (random tokens teach nothing)")
        if self.train_checkpoints and not self.trained:
            raise ValueError("train_checkpoints needs trained=true (they are steps of the training run)")
        if list(self.train_checkpoints) != sorted(set(self.train_checkpoints)):
            raise ValueError(
                f"train_checkpoints must be increasing without repeats, got {list(self.train_checkpoints)}"
            )
        if self.train_checkpoints and self.train_checkpoints[-1] > self.train_steps:
            raise ValueError(
                f"train_checkpoints must lie in [0, train_steps = {self.train_steps}], got "
                f"{list(self.train_checkpoints)}"
            )
        if self.fit_lo <= self.prompt_len or self.fit_lo >= self.prompt_len + self.cont_len / 2:
            raise ValueError(
                f"fit_lo must lie in (prompt_len, prompt_len + cont_len/2) = ({self.prompt_len}, "
                f"{self.prompt_len + self.cont_len / 2}), got {self.fit_lo}"
            )


# ================================================================================================
# Models and data


def _vocab(config: Config) -> int:
    return 256 if config.data == "corpus" else config.vocab_size


def model_config(config: Config) -> ModelConfig:
    """The TinyTransformer this config measures (untrained weights from ``seed``): the model fields, a
    byte vocabulary for corpus data, the logit scale times ``logit_gain``."""
    return config.model_config(
        input="tokens",
        vocab_size=_vocab(config),
        output="lm",
        # gain 1 keeps the model config (and so trained checkpoints' keys) exactly as without the field
        logit_scale=None if config.logit_gain == 1.0 else config.logit_gain / math.sqrt(config.d_model // config.heads),
    )


def _task(config: Config, seq_len: int):
    if config.data == "markov":
        return MarkovLanguage(vocab_size=config.vocab_size, seq_len=seq_len, seed=config.seed)
    return CorpusLM(seq_len=seq_len)


def train_config(config: Config):
    return probe_lm_train_config(config.train_steps, config.seed)


def weight_seeds(seed: int, n: int) -> list[int]:
    """Seeds of ``n`` independent weight replicates of a run with seed ``seed`` (for :func:`depth_law`'s sweep):
    replicate 0 is ``seed`` itself, the others hashed from ``(seed, i)`` (:func:`analysis.evidence.replicate_seed`),
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
        _task(config, config.train_seq_len),
        train_config(config),
        device=config.torch_device(),
        progress=progress,
        snapshots=config.train_checkpoints,
    )
    info = {"train_loss": res.final_loss, "checkpoint": res.key, "from_cache": res.from_cache}
    if config.train_checkpoints:
        info["snapshots"] = {s: res.snapshot_model(s) for s in config.train_checkpoints}
    return res.model, info


HELDOUT_BATCHES = 8  # held-out batches of 16 sequences of train_seq_len tokens (the loss the figures report)


def language_losses(config: Config, models: dict) -> dict[str, float]:
    """Held-out next-token loss (nats) of each model in ``models`` on ``data`` (``heldout_loss_<name>``),
    beside the two references it is read against: ``bigram_entropy``, the loss of the best model with
    one token of context, and ``unigram_entropy``, with none.

    Corpus: the validation split in ``HELDOUT_BATCHES`` non-overlapping windows of ``train_seq_len``;
    the references are the held-out cross-entropies of the bigram and unigram models fitted on the
    train split (Krichevsky-Trofimov, :func:`analysis.corpus.bigram_cross_entropy`). Markov: fresh
    sequences from a generator seeded apart from training; the language is order 1, so its bigram
    entropy is its entropy rate (the Bayes loss: no model can beat it) and its unigram entropy is
    ``H(pi)``.
    """
    task = _task(config, config.train_seq_len)
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
    :func:`analysis.protocol.encode_text` (a tokenizer, or UTF-8 bytes for byte-level zoo models) and
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

    Token ids lie in the vocabulary of ``model`` (:func:`analysis.protocol.vocab_size`); ``None`` means
    the model this config builds. ``data="markov"`` needs a model vocabulary at least the language's;
    ``data="corpus"`` encodes the corpus's validation text with the model (:func:`corpus_ids`).
    """
    n, P, T = config.n_pairs, config.prompt_len, config.cont_len
    vocab = _vocab(config) if model is None else protocol.vocab_size(model)
    if vocab is None or vocab < 2:
        raise ModelIncompatibleError(
            f"prompt_forgetting needs a token model with a vocabulary (vocab_size >= 2), got {vocab}"
        )
    gen = torch.Generator().manual_seed(config.seed + 7919)  # prompts/continuations only
    if config.data == "random":
        draw = lambda k, m: torch.randint(0, vocab, (k, m), generator=gen)  # noqa: E731
    elif config.data == "markov":
        if vocab < config.vocab_size:
            raise ModelIncompatibleError(
                f"data 'markov' draws ids below vocab_size={config.vocab_size}, but the model's "
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
    one value per query row (:class:`analysis.model.PrefixKeyBias`, ``O(N)`` memory)."""
    t = np.arange(1, n_tokens + 1)
    return PrefixKeyBias(torch.tensor(th.cancel_bias(P, t), dtype=torch.float64).to(dtype), P)


def cancel_bias_matrix(P: int, n_tokens: int, dtype: torch.dtype) -> torch.Tensor:
    """(N, N) dense form of :func:`cancel_bias`."""
    return cancel_bias(P, n_tokens, torch.float64).dense().to(dtype)


# ================================================================================================
# Measurement


def max_abs_logit(scores: torch.Tensor, attn_bias=None, rows: int = 1024, row0: int = 0) -> float:
    """Largest finite ``|logit|`` of ``scores`` (B, H, n, K), the query rows ``row0 .. row0 + n - 1`` of the
    attention logits, with ``attn_bias`` (a (N, N) tensor or :class:`~analysis.model.PrefixKeyBias`)
    removed (0 if none are finite).

    The model's own logits: the intervention's bias is subtracted first. Masked keys are ``-inf`` and
    are skipped. Row blocks of ``rows`` queries over their keys ``<=`` the block's last query (the
    probe needs a causal model, so later keys are masked) keep the temporaries a few MB instead of
    copying the whole tensor; the value is the same as over the full matrix.

    The value is ``max(0, max |x|)`` over the finite entries, and the entries are split into regions that
    are read in place when all their values are finite (:func:`_finite_absmax`): the keys every row of a
    block sees, then the causal triangle in halves (:func:`_causal_absmax`). A compact
    :class:`~analysis.model.PrefixKeyBias` is subtracted on its prefix keys only (the others carry a bias
    of exactly 0); a dense bias is subtracted from the whole block. Every region gives the value the whole
    block would, so the result does not depend on how it is split (tested against the direct formula).
    """
    n, K = scores.shape[-2:]
    best = 0.0
    for i0 in range(0, n, rows):
        i1 = min(i0 + rows, n)
        k = min(K, row0 + i1)
        blk = scores[..., i0:i1, :k]  # (B, H, r, k)
        if attn_bias is None:
            best = max(best, _causal_absmax(blk, row0 + i0, 0))
        elif isinstance(attn_bias, PrefixKeyBias):
            p = min(attn_bias.n_keys, k)
            own = blk[..., :p] - attn_bias.values[row0 + i0 : row0 + i1, None].to(blk.dtype)
            best = max(best, _finite_absmax(own), _causal_absmax(blk, row0 + i0, p))
        else:
            best = max(best, _finite_absmax(blk - bias_block(attn_bias, row0 + i0, row0 + i1, k).to(blk.dtype)))
    return best


def _finite_absmax(x: torch.Tensor) -> float:
    """``max(0, max |x|)`` over the finite entries of ``x``: ``amax`` and ``amin`` read a strided view in place
    (``aminmax`` copies one first) and propagate NaN and any infinity they meet, so finite answers mean every
    entry is finite; else the answer comes from a copy with non-finite entries set to 0 (which the floor at
    0 makes harmless)."""
    if x.numel() == 0:
        return 0.0
    lo, hi = x.amin(), x.amax()
    if not (math.isfinite(float(lo)) and math.isfinite(float(hi))):
        lo, hi = torch.aminmax(torch.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0))
    return max(0.0, float(hi), -float(lo))


CAUSAL_LEAF = 64  # rows of a causal triangle read through the copying path at once (_causal_absmax)


def _causal_absmax(blk: torch.Tensor, q0: int, c0: int) -> float:
    """:func:`_finite_absmax` of keys ``c0 .. q0 + r - 1`` of ``blk`` (B, H, r, k), whose rows are the queries
    ``q0 .. q0 + r - 1``: keys ``<= q0`` (seen by every row of a causal model, so finite) in place, the
    triangle after them by halves of the rows, down to ``CAUSAL_LEAF`` rows (whose masked ``-inf`` entries
    send them through the copy). A key after a row's own query is masked in a causal model, and the halves
    skip those of their rows (the leaves read a few, which count as masked)."""
    r, k = blk.shape[-2:]
    c1 = min(k, q0 + r)  # no row of the block sees a key beyond its last query
    if c1 <= c0:
        return 0.0
    full = max(c0, min(c1, q0 + 1))
    best = _finite_absmax(blk[..., c0:full]) if full > c0 else 0.0
    if full < c1:
        if r <= CAUSAL_LEAF:
            best = max(best, _finite_absmax(blk[..., full:c1]))
        else:
            h = r // 2
            best = max(best, _causal_absmax(blk[..., :h, :], q0, full), _causal_absmax(blk[..., h:, :], q0 + h, full))
    return best


# Query rows per block of attention: memory ~ QUERY_BLOCK x N, never N x N. At N = 4112 (the full preset) and
# batch 2, 2 heads, float32, a block of 256 rows is 17 MB and stays in the cache between its product, mask,
# softmax and hook reads; 1024 rows (67 MB) do not: an 8-layer pair took 2.1 s at 1024 rows, 1.4 s at 512, 0.92 s
# at 256, 0.95 s at 128, 1.07 s at 64 (one thread of the 2-core Intel Xeon in bench/results).
QUERY_BLOCK = 256


@contextlib.contextmanager
def query_blocks(model, rows: int):
    """Attention in blocks of ``rows`` query rows for the duration (models with ``query_block``; others
    compute as they do)."""
    if not hasattr(model, "query_block"):
        yield model
        return
    before = model.query_block
    model.query_block = rows
    try:
        yield model
    finally:
        model.query_block = before


def measure(model, a, b, c, *, attn_bias=None, progress: bool = True) -> dict[str, np.ndarray]:
    """One forward pass per pair over ``[prompt; continuation]``; returns per pair, layer and continuation t:

    ``distance`` (n, L, T), ``norm`` (n, L, T) the mean |h| of the two states, ``share`` (n, L, T) the
    prompt's attention share averaged over heads and both sequences (NaN where no pattern hook exists),
    ``share_max`` (n, L, T) its largest head value, ``max_logit`` (n,) and ``min_rms`` (n,) (NaN where the
    model exposes no ``attn.hook_attn_scores`` / no pre-norm input ``ln1|ln2.hook_in``), and ``embed_delta``
    (n, P, d) the input offset (float64; width 0 where the model has no ``hook_embed``). Only hook names
    the model lists are asked for; ``blocks.{l}.hook_resid_post`` is the one the probe cannot do without.
    """
    n, P = a.shape
    L = model.n_layers
    names = model.hook_names()
    points = hook_points(model)
    resid = resid_names(L)
    pre_norm = [h for h in names if h.endswith((".ln1.hook_in", ".ln2.hook_in"))]
    scores = [h for h in names if canonical_name(h).endswith("attn." + SCORES)]
    patterns = [h for h in names if h.endswith("attn.hook_pattern")]
    missing = [r for r in resid if r not in names]
    if missing:
        raise ModelIncompatibleError(
            f"prompt_forgetting needs the residual hooks blocks.{{l}}.hook_resid_post; the model lacks {missing}"
        )
    embed = ["hook_embed"] if "hook_embed" in names else []
    dev = model_device(model)
    attn_bias = None if attn_bias is None else attn_bias.to(dev)
    out: dict[str, list] = {
        k: [] for k in ("distance", "norm", "share", "share_max", "max_logit", "min_rms", "embed_delta")
    }
    for i in bar(range(n), progress=progress, desc="pairs", leave=False):
        x = torch.cat([torch.stack([a[i], b[i]]), c[i].expand(2, -1)], dim=1).to(dev)  # (2, P + T)
        N = x.shape[1]
        stats = {"max_logit": 0.0, "min_rms": math.inf, "share": {}, "share_max": {}}

        # score and pattern hooks see whole (2, H, N, N) matrices or blocks of query rows (2, H, r, K)
        def on_scores(s: torch.Tensor, name: str, stats=stats) -> None:  # -inf where masked
            r0 = (points[name].rows or (0, 0))[0]
            stats["max_logit"] = max(stats["max_logit"], max_abs_logit(s, attn_bias, row0=r0))

        def on_pattern(p: torch.Tensor, name: str, stats=stats, N=N) -> None:
            r0, r1 = points[name].rows or (0, N)
            share = p[..., :P].sum(-1).double()  # (2, H, r) prompt share of each row
            for key, value in (("share", share.mean(dim=(0, 1))), ("share_max", share.amax(dim=(0, 1)))):
                stats[key].setdefault(name, np.full(N, np.nan))[r0:r1] = value.cpu().numpy()

        def on_norm_in(h: torch.Tensor, name: str, stats=stats) -> None:  # (2, N, d)
            stats["min_rms"] = min(stats["min_rms"], float(h.double().pow(2).mean(-1).sqrt().amin()))

        fwd = (
            [(s, on_scores) for s in scores] + [(p, on_pattern) for p in patterns] + [(h, on_norm_in) for h in pre_norm]
        )
        with torch.no_grad(), hooks(model, fwd), query_blocks(model, QUERY_BLOCK):
            _, cache = run_with_cache(model, x, names=resid + embed, attn_bias=attn_bias)
        hs = torch.stack([cache[r] for r in resid]).double()  # (L, 2, N, d)
        out["distance"].append((hs[:, 0, P:] - hs[:, 1, P:]).norm(dim=-1).cpu().numpy())  # (L, T)
        out["norm"].append((0.5 * (hs[:, 0, P:].norm(dim=-1) + hs[:, 1, P:].norm(dim=-1))).cpu().numpy())
        if embed:
            emb = cache["hook_embed"].double()
            out["embed_delta"].append((emb[0, :P] - emb[1, :P]).cpu().numpy())
        else:
            out["embed_delta"].append(np.zeros((P, 0)))
        T = x.shape[1] - P
        for key in ("share", "share_max"):
            rows = [stats[key].get(f"blocks.{layer}.attn.hook_pattern") for layer in range(L)]
            out[key].append(np.stack([r[P:] if r is not None else np.full(T, np.nan) for r in rows]))
        out["max_logit"].append(stats["max_logit"] if scores else math.nan)
        out["min_rms"].append(stats["min_rms"] if pre_norm else math.nan)
    return {k: np.asarray(v) for k, v in out.items()}


def relay_matrices(model: TinyTransformer) -> list[np.ndarray]:
    """``A_l = W_o W_v`` of every block (float64): the matrix relay model's weights."""
    return [to_numpy(blk.attn.W_o.weight.double() @ blk.attn.W_v.weight.double()) for blk in model.blocks]


def relay_prediction(model: TinyTransformer, embed_delta: np.ndarray, T_total: int) -> np.ndarray:
    """Offsets (n, L, T_total) of the matrix relay model with ``A_l = W_o W_v`` of our own model (float64)."""
    mats = relay_matrices(model)
    return np.stack([np.linalg.norm(th.relay_vector_offsets(d0, mats, T_total), axis=-1) for d0 in embed_delta])


def relay_matrix_limit(model: TinyTransformer, embed_delta: np.ndarray) -> np.ndarray:
    """(n, L): ``lim_t t D_l(t) / (P (ln t)^(l-1)) = |A_l .. A_1 sum_s delta_s| / (P (l-1)!)`` per pair and layer.

    In the closed form ``delta^l_t = (1/t) sum_s sum_k h_(k-1)(1/s..1/t) E_k delta_s`` the ``k = l`` term
    grows like ``(ln t)^(l-1)/(l-1)!`` and every other like a lower power, and ``E_l = A_l .. A_1``.
    """
    mats = relay_matrices(model)
    P = embed_delta.shape[1]
    out = []
    for d0 in embed_delta:
        v, row = d0.sum(axis=0), []
        for layer, A in enumerate(mats):
            v = A @ v
            row.append(np.linalg.norm(v) / (P * math.factorial(layer)))
        out.append(row)
    return np.asarray(out)


def bound_constants(t: np.ndarray, ratio: np.ndarray, fit_lo: float) -> dict[str, np.ndarray]:
    """Per layer: the smallest ``C`` with ``D <= C P (ln t)^(l-1)/t`` on ``[fit_lo, N]`` (``bound_constant``),
    the ratio's geometric mean over the last octave ``[N/2, N]`` (``bound_plateau``) and the OLS slope of
    ``ln ratio`` on ``ln t`` over that octave (``bound_plateau_slope``; 0 for a true plateau).
    """
    win = t >= fit_lo
    last = t >= t[-1] / 2
    lt = np.log(t[last])
    lr = np.log(ratio[:, last])  # (L, n_last)
    slope = ((lr - lr.mean(axis=1, keepdims=True)) * (lt - lt.mean())).sum(axis=1) / ((lt - lt.mean()) ** 2).sum()
    return {
        "bound_constant": ratio[:, win].max(axis=1),
        "bound_plateau": np.exp(lr.mean(axis=1)),
        "bound_plateau_slope": slope,
    }


def plateau_slope_ci(
    t: np.ndarray, D: np.ndarray, shape: np.ndarray, *, n_boot: int, rng: np.random.Generator, level: float = 0.95
) -> np.ndarray:
    """(L, 2): percentile bootstrap CI over pairs of ``bound_plateau_slope`` (the last octave's slope).

    ``D`` (n, L, T) per pair, ``shape`` (L, T). The slope of ``ln(gm D / shape)`` on ``ln t`` is linear in
    ``ln D``, so each replicate's slope is the mean of the resampled pairs' own slopes.
    """
    last = t >= t[-1] / 2
    lt = np.log(t[last])
    w = (lt - lt.mean()) / ((lt - lt.mean()) ** 2).sum()
    per_pair = (np.log(D[:, :, last]) - np.log(shape[None, :, last])) @ w  # (n, L)
    draws = rng.integers(0, per_pair.shape[0], size=(n_boot, per_pair.shape[0]))
    boot = per_pair[draws].mean(axis=1)  # (n_boot, L)
    q = (1.0 - level) / 2.0
    return np.quantile(boot, [q, 1.0 - q], axis=0).T


# ================================================================================================
# The probe


def offset_laws(config: Config, m: dict, P: int, N: int) -> dict:
    """The decay of the offsets ``m["distance"]`` (n, L, T) against the relay model and the bound.

    Per layer: power-law fits of the offsets and of the relative offsets (``fits``, ``fits_rel``), the
    local exponent on ``t_loc``, the relay model's offsets and local exponent, the bound's shape and
    local exponent, the ratio to the bound with its constants and the bootstrap CI of its plateau slope.
    The fits and the CI draw from one bootstrap stream, in that order.
    """
    L = m["distance"].shape[1]
    t = np.arange(P + 1, N + 1, dtype=np.float64)  # absolute positions of the continuation
    D = m["distance"]  # (n, L, T)
    rel = D / m["norm"]
    gm = np.exp(np.log(D).mean(axis=0))  # (L, T) geometric mean over pairs
    rng = np.random.default_rng(config.seed + 104729)
    window = (config.fit_lo, float(N))
    fits = [_power_law(t, D[:, layer], window, n_boot=config.n_boot, rng=rng) for layer in range(L)]
    fits_rel = [_power_law(t, rel[:, layer], window, n_boot=config.n_boot, rng=rng) for layer in range(L)]
    t_loc_range = (max(config.fit_lo / 2, P + 2.0), float(N))
    t_loc = None
    alpha_loc = []
    for layer in range(L):
        t_loc, al = _local_exponent(t, gm[layer], t_loc_range)
        alpha_loc.append(al)
    depth = np.arange(1, L + 1)
    relay = np.stack([th.relay_offsets(P, int(k), N)[P:] for k in depth])  # (L, T)
    shape = np.stack([th.bound_shape(P, int(k), t) for k in depth])  # (L, T)
    bound_ratio = gm / shape
    return {
        "t": t,
        "window": window,
        "gm": gm,
        "gm_rel": np.exp(np.log(rel).mean(axis=0)),
        "fits": fits,
        "fits_rel": fits_rel,
        "t_loc": t_loc,
        "alpha_loc": alpha_loc,
        "relay": relay,
        "relay_loc": np.stack([_local_exponent(t, r, t_loc_range)[1] for r in relay]),
        "bound_loc": np.stack([th.bound_local_exponent(int(k), t_loc) for k in depth]),
        "bound_ratio": bound_ratio,
        "consts": bound_constants(t, bound_ratio, config.fit_lo),
        "slope_ci": plateau_slope_ci(t, D, shape, n_boot=config.n_boot, rng=rng),
        "relay_consts": bound_constants(t, relay / shape, config.fit_lo),
    }


def offsets_dataset(config: Config, m: dict, law: dict, relay_pred, limit) -> xr.Dataset:
    """The result's arrays: the measured offsets and prompt shares beside the laws of :func:`offset_laws`,
    and with an exact relay prediction (``relay_pred`` (n, L, T), ``limit`` (L,); else ``None``) that too."""
    L, T = m["distance"].shape[1:]
    fits, fits_rel, depth = law["fits"], law["fits_rel"], np.arange(1, L + 1)
    share = np.nanmean(m["share"], axis=0) if np.isfinite(m["share"]).any() else np.full((L, T), np.nan)
    share_max = np.nanmax(m["share_max"], axis=0) if np.isfinite(m["share_max"]).any() else np.full((L, T), np.nan)
    coords = {
        "layer": np.arange(L),
        "t": law["t"],
        "pair": np.arange(config.n_pairs),
        "t_local": law["t_loc"],
        "end": ["lo", "hi"],
    }
    data = xr.Dataset(
        {
            "distance": (("layer", "t"), law["gm"]),
            "distance_rel": (("layer", "t"), law["gm_rel"]),
            "distance_pairs": (("pair", "layer", "t"), m["distance"]),
            "alpha": (("layer",), np.array([f.alpha for f in fits])),
            "alpha_ci": (("layer", "end"), np.array([f.alpha_ci for f in fits])),
            "alpha_rel": (("layer",), np.array([f.alpha for f in fits_rel])),
            "alpha_rel_ci": (("layer", "end"), np.array([f.alpha_ci for f in fits_rel])),
            "log_c": (("layer",), np.array([f.log_c for f in fits])),
            "alpha_local": (("layer", "t_local"), np.stack(law["alpha_loc"])),
            "relay": (("layer", "t"), law["relay"]),
            "relay_local": (("layer", "t_local"), law["relay_loc"]),
            "bound_local": (("layer", "t_local"), law["bound_loc"]),
            "bound_ratio": (("layer", "t"), law["bound_ratio"]),
            **{k: (("layer",), v) for k, v in law["consts"].items()},
            "bound_plateau_slope_ci": (("layer", "end"), law["slope_ci"]),
            "relay_bound_plateau": (("layer",), law["relay_consts"]["bound_plateau"]),
            "relay_limit": (("layer",), np.array([th.relay_limit(int(k)) for k in depth])),
            "prompt_share": (("layer", "t"), share),
            "prompt_share_max": (("layer", "t"), share_max),
            "max_logit_pairs": (("pair",), m["max_logit"]),
            "min_prenorm_rms_pairs": (("pair",), m["min_rms"]),
        },
        coords=coords,
    )
    if relay_pred is not None:  # the exact matrix relay prediction, averaged over pairs like `distance`
        data["relay_matrix"] = (("layer", "t"), np.exp(np.log(relay_pred).mean(axis=0)))
        data["relay_matrix_pairs"] = (("pair", "layer", "t"), relay_pred)
        data["relay_matrix_limit"] = (("layer",), limit)
    return data


def offsets_scalars(m: dict, law: dict, P: int) -> dict:
    """The deepest layer's exponent and bound constants, the theorem's measured conditions, and the relay
    model's exponent over the same window (what ``alpha`` is compared with)."""
    last, window, alpha_loc, consts = law["fits"][-1], law["window"], law["alpha_loc"], law["consts"]
    return {
        "alpha": last.alpha,
        "alpha_ci_lo": last.alpha_ci[0],
        "alpha_ci_hi": last.alpha_ci[1],
        "alpha_rel": law["fits_rel"][-1].alpha,
        "fit_lo": window[0],
        "fit_hi": window[1],
        "fit_rms_residual": last.rms_residual,
        "max_logit": float(np.max(m["max_logit"])),
        "min_prenorm_rms": float(np.min(m["min_rms"])),
        "norm_max": float(m["norm"].max()),
        "alpha_local_end": float(alpha_loc[-1][np.isfinite(alpha_loc[-1])][-1])
        if np.isfinite(alpha_loc[-1]).any()
        else math.nan,
        "bound_local_end": float(law["bound_loc"][-1][-1]),
        "bound_constant": float(consts["bound_constant"][-1]),
        "bound_plateau": float(consts["bound_plateau"][-1]),
        "bound_plateau_slope": float(consts["bound_plateau_slope"][-1]),
        # the relay model's alpha of this depth over the same window: what alpha is compared with
        "alpha_relay_window": (
            th.relay_alpha_window(P, len(law["fits"]), window[0], int(window[1])) if window[0] >= P + 1 else math.nan
        ),
    }


def run(config: Config, model=None, progress: bool = True) -> Result:
    own_model = model is None
    info: dict = {}
    if own_model:
        model, info = build_model(config, progress=progress)
    P, T = config.prompt_len, config.cont_len
    N = P + T
    protocol.check_length(model, N, f"prompt_len + cont_len = {P} + {T} =")
    a, b, c = draw_pairs(config, None if own_model else model)
    dtype = next(model.parameters()).dtype if hasattr(model, "parameters") else torch.float32
    bias = cancel_bias(P, N, dtype) if config.logit_bias == "cancel" else None
    m = measure(model, a, b, c, attn_bias=bias, progress=progress)
    law = offset_laws(config, m, P, N)

    exact_relay = own_model and config.attention == "uniform" and config.norm == "none" and config.mlp == 0
    relay_pred = limit = None
    if exact_relay and config.logit_bias == "none":
        relay_pred = relay_prediction(model, m["embed_delta"], N)[:, :, P:]  # (n, L, T) per pair
        limit = np.exp(np.log(relay_matrix_limit(model, m["embed_delta"])).mean(axis=0))  # (L,) like `distance`
    data = offsets_dataset(config, m, law, relay_pred, limit)
    scalars = offsets_scalars(m, law, P)
    if "train_loss" in info:
        scalars["train_loss"] = float(info["train_loss"])
    if own_model and config.data != "random":
        losses = language_losses(config, {"model": model})
        scalars.update(
            heldout_loss=losses["heldout_loss_model"],
            bigram_entropy=losses["bigram_entropy"],
            unigram_entropy=losses["unigram_entropy"],
        )
    if "snapshots" in info:
        data = data.merge(bias_trajectory(config, info["snapshots"], (a, b, c), law["window"], progress=progress))
    meta = {k: v for k, v in info.items() if k not in ("train_loss", "snapshots")}
    meta["model"] = "built from config" if own_model else f"passed in: {type(model).__name__}"
    if not own_model:
        meta["model_vocab_size"] = protocol.vocab_size(model)
        meta["model_max_positions"] = protocol.max_positions(model)
    led = claims(config, data, scalars, own_model)
    return Result(probe=NAME, config=config, data=data, scalars=scalars, ledger=led, meta=meta)


def _power_law(
    t: np.ndarray, Y: np.ndarray, window: tuple[float, float], *, n_boot: int, rng: np.random.Generator
) -> PowerLawFit:
    """:func:`bootstrap_power_law` of the offsets ``Y`` (pairs, t), or an all-NaN fit when an offset in the
    window is 0 or not finite: saturated attention (large logits, float32) can put exactly zero weight on
    the prompt, which is then forgotten exactly and has no power law."""
    try:
        return bootstrap_power_law(t, Y, window, n_boot=n_boot, rng=rng)
    except ValueError:
        if np.all(Y > 0) and np.all(np.isfinite(Y)):
            raise  # not the zero offsets: a real error
    nan = math.nan
    return PowerLawFit(alpha=nan, log_c=nan, window=window, n_points=0, rms_residual=nan, alpha_ci=(nan, nan))


def _local_exponent(t: np.ndarray, y: np.ndarray, t_range: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`local_exponent` on the probe's grid; NaN where ``y`` has a zero or non-finite value (see
    :func:`_power_law`): the grid is the same, the exponents unmeasured."""
    if np.all(y > 0) and np.all(np.isfinite(y)):
        return local_exponent(t, y, n_grid=40, half_width=0.3, t_range=t_range)
    grid, _ = local_exponent(t, np.ones_like(t), n_grid=40, half_width=0.3, t_range=t_range)
    return grid, np.full(grid.shape, math.nan)


def bias_trajectory(
    config: Config, snapshots: dict, pairs: tuple, window: tuple[float, float], progress: bool = True
) -> xr.Dataset:
    """Alpha along training: at every step of ``snapshots`` (step -> model) the last layer's alpha of
    the same pairs without (``alpha_trajectory``) and with the cancelling bias (``alpha_bias_trajectory``),
    each with its bootstrap CI, and the held-out loss (``heldout_loss_trajectory``), over ``train_step``."""
    a, b, c = pairs
    P, N = config.prompt_len, config.prompt_len + config.cont_len
    t = np.arange(P + 1, N + 1, dtype=np.float64)
    rng = np.random.default_rng(config.seed + 15485863)
    steps = sorted(snapshots)
    out = {k: [] for k in ("alpha", "alpha_ci", "alpha_bias", "alpha_bias_ci")}
    for s in bar(steps, progress=progress, desc="checkpoints", leave=False):
        model = snapshots[s]
        dtype = next(model.parameters()).dtype
        for key, bias in (("alpha", None), ("alpha_bias", cancel_bias(P, N, dtype))):
            D = measure(model, a, b, c, attn_bias=bias, progress=False)["distance"][:, -1]  # (n, T) last layer
            fit = _power_law(t, D, window, n_boot=config.n_boot, rng=rng)
            out[key].append(fit.alpha)
            out[key + "_ci"].append(fit.alpha_ci)
    loss = language_losses(config, {str(s): snapshots[s] for s in steps})
    return xr.Dataset(
        {
            "alpha_trajectory": (("train_step",), np.array(out["alpha"])),
            "alpha_trajectory_ci": (("train_step", "end"), np.array(out["alpha_ci"])),
            "alpha_bias_trajectory": (("train_step",), np.array(out["alpha_bias"])),
            "alpha_bias_trajectory_ci": (("train_step", "end"), np.array(out["alpha_bias_ci"])),
            "heldout_loss_trajectory": (("train_step",), np.array([loss[f"heldout_loss_{s}"] for s in steps])),
        },
        coords={"train_step": np.array(steps, dtype=np.int64), "end": ["lo", "hi"]},
    )


# ================================================================================================
# Claims of one run: each function reads the result (Dataset, scalars, config) and records its claims


def claims(
    config: Config, data: xr.Dataset, scalars: dict, own_model: bool, replicates: tuple[Result, ...] | None = None
) -> Ledger:
    """The ledger of one run: the relay identities, the bias identities, the theorem's conditions and
    bound, the relay model's exponent and the seed's ranges. With ``replicates`` (results at independent
    seeds of the same design, this run's first) the alpha claims take the seed-to-seed spread; the
    identities and bounds are each replicate's (:func:`check_claims_over` keeps the worst)."""
    led = Ledger(NAME, preset=config.preset_name)
    many = replicates if replicates is not None and len(replicates) > 1 else None
    claim_relay_identities(led, config, data, scalars, own_model)
    claim_cancel_bias_identities(led, config, data, own_model)
    claim_bias_trajectory(led, config, data, many)
    if config.attention == "softmax" and config.logit_bias == "none":
        claim_conditions(led, config, data, scalars, own_model)
        if config.norm == "pre" or not own_model:
            claim_bound_ratio(led, config, data)
            claim_relay_exponent(led, config, data, scalars, own_model, many)
            claim_seed_range(led, config, data, scalars, own_model, many)
    return led


def _own_model(r: Result) -> bool:
    return not str(r.meta.get("model", "built from config")).startswith("passed in")


def check_claims(result: Result) -> Ledger:
    """The ledger of ``result`` alone (what :func:`run` records)."""
    return claims(result.config, result.data, result.scalars, _own_model(result))


def check_claims_over(results) -> Ledger:
    """The ledger of replicates of one design at independent seeds (:mod:`probes.replicates`): the alpha
    claims over the seeds (their spread is the band), every identity and bound the worst replicate's
    (each must hold on every model). With one result: :func:`check_claims`."""
    rs = tuple(results.results if hasattr(results, "results") else results)
    if not rs:
        raise ValueError("results must hold at least one result")
    design = rs[0].config.replace(seed=0)
    for i, r in enumerate(rs[1:], start=1):
        if r.probe != NAME or r.config.replace(seed=0) != design:
            raise ValueError(f"results[{i}] is not a replicate of results[0] (configs differ beyond the seed)")
    if len({r.config.seed for r in rs}) != len(rs):
        raise ValueError("results must have distinct seeds (independent replicates)")
    if len(rs) == 1:
        return check_claims(rs[0])
    r0, own = rs[0], _own_model(rs[0])
    led = claims(r0.config, r0.data, r0.scalars, own, replicates=rs)
    per = [check_claims(r) for r in rs]
    out = [
        worst_of([p[c.name] for p in per]) if c.role in ("identity", "bound") and c.name in per[0] else c
        for c in led.claims
    ]
    return Ledger(NAME, preset=r0.config.preset_name, claims=out)


def _eps(config: Config) -> float:
    return float(torch.finfo(torch.float64 if config.dtype == "float64" else torch.float32).eps)


def _n_total(data: xr.Dataset) -> int:
    return int(data["t"].values[-1])


def claim_relay_identities(led: Ledger, config: Config, data: xr.Dataset, scalars: dict, own_model: bool) -> None:
    """Uniform attention, no norm, no MLP is the matrix relay model: its offsets, layer-1 ratio and alpha."""
    if "relay_matrix_pairs" not in data:
        return
    L, N, eps = data.sizes["layer"], _n_total(data), _eps(config)
    dev = float(np.max(np.abs(data["distance_pairs"].values - data["relay_matrix_pairs"].values)))
    # each layer's running mean sums <= N terms (error <= N eps |h| per coordinate), over L layers and
    # sqrt(d) coordinates of the norm
    led.identity(
        "uniform_equals_matrix_relay",
        measured=dev / scalars["norm_max"],
        expected=0.0,
        atol=4.0 * L * N * math.sqrt(config.d_model) * eps,
        source="derivation: uniform attention, no norm, no MLP = matrix relay model (theory module)",
        why="summation error of N-term running means over L layers in the model dtype",
        statement="uniform/no-norm/no-MLP network offsets equal the matrix relay model's, every pair "
        "(max |D - D_relay| / max|h|)",
        figure="pf_distance",
    )
    # first layer: t D_1(t) / P = |A_1 sum_s delta_s| / P at every t > P, i.e. the bound's ratio is already
    # its limit; relative rounding of D is <= N eps (running mean), of the limit d eps
    ratio = data["bound_ratio"].values[0] / data["relay_matrix_limit"].values[0]
    led.identity(
        "uniform_layer1_bound_ratio_is_limit",
        measured=float(np.max(np.abs(ratio - 1.0))),
        expected=0.0,
        atol=4.0 * (N + config.d_model) * eps,
        source="derivation: one uniform layer gives D(t) = |A_1 sum_s delta_s| / t exactly",
        why="relative rounding of an N-term running mean plus a d-term matrix product",
        statement="uniform network, layer 1: D t / P equals its limit |A_1 sum delta| / P at every t",
        figure="pf_bound_constant",
    )
    if L == 1:
        led.identity(
            "uniform_one_layer_alpha_is_1",
            measured=float(data["alpha"].values[0]),
            expected=1.0,
            atol=8.0 * N * eps / math.log(N / config.fit_lo),
            source="derivation: one uniform layer gives D(t) = |A sum_s delta_s| / t exactly",
            why="relative errors <= N eps in D, divided by the log-range of the fit window",
            statement="one uniform layer: fitted alpha = 1",
        )


def claim_cancel_bias_identities(led: Ledger, config: Config, data: xr.Dataset, own_model: bool) -> None:
    """Uniform attention with the bias ln(t - P): constant prompt share; for the relay network, constant offset."""
    if not (config.attention == "uniform" and config.logit_bias == "cancel" and own_model):
        return
    P, L, N, eps = config.prompt_len, data.sizes["layer"], _n_total(data), _eps(config)
    dev = float(np.nanmax(np.abs(data["prompt_share"].values - th.default_share(P))))
    led.identity(
        "cancel_bias_share_constant",
        measured=dev,
        expected=0.0,
        atol=16 * P * eps,
        source="derivation: b_t = ln(t - P) keeps a uniform row's prompt share at P/(P+1)",
        why="softmax of P equal logits and t-P equal logits: a few roundings per row",
        statement="uniform attention with the cancelling bias: prompt share = P/(P+1) at every t",
        figure="pf_bias",
    )
    if config.norm == "none" and config.mlp == 0:
        # every prompt key weighs 1/(P+1) and every continuation key 1/((P+1)(t-P)) at every t > P: layer 1's
        # offset is A_1 sum_s delta_s / (P+1) at every t, and each later layer averages constant offsets
        D = data["distance_pairs"].values  # (n, L, T)
        dev = float(np.max(np.abs(D / D[:, :, :1] - 1.0)))
        led.identity(
            "uniform_bias_offset_constant",
            measured=dev,
            expected=0.0,
            atol=4.0 * L * N * eps,
            source="derivation: the relay network with the cancelling bias has a t-independent offset",
            why="relative rounding of N-term weighted sums over L layers in the model dtype",
            statement="uniform/no-norm/no-MLP network with the cancelling bias: D(t) = D(P+1) at every "
            "t, layer and pair (the solvable model: cancelling dilution stops the decay)",
            seed="000#1",
            figure="pf_bias",
        )


def claim_conditions(led: Ledger, config: Config, data: xr.Dataset, scalars: dict, own_model: bool) -> None:
    """The theorem's hypotheses measured on the same passes (bounded logits, pre-norm RMS away from 0)."""
    P, eps = config.prompt_len, _eps(config)
    t = data["t"].values
    max_logit, min_rms = scalars["max_logit"], scalars["min_prenorm_rms"]
    src = "seed theorem's hypotheses (pre-LN softmax, bounded logits, pre-norm RMS away from zero)"
    if not (np.isfinite(max_logit) and np.isfinite(data["prompt_share_max"].values).any()):
        for name in ("prompt_share_dilution_bound", "condition_dilution_regime"):
            led.not_evaluated(
                name,
                role="bound",
                source=src,
                seed="000#1",
                reason="the model exposes no attn.hook_attn_scores/attn.hook_pattern hooks: max |logit| and "
                "the prompt share are not measured",
            )
    else:
        ratio = float(np.nanmax(data["prompt_share_max"].values / th.prompt_share_bound(P, t, max_logit)[None]))
        led.bound(
            "prompt_share_dilution_bound",
            measured=ratio,
            bound=1.0 + 1e3 * eps,
            seed="000#1",
            source="derivation: |logit| <= B gives prompt share <= P e^2B / (P e^2B + t - P)",
            why="exact inequality; slack for the float rounding of softmax and of the measured B",
            statement="prompt share / dilution bound with the measured max |logit| <= 1 at every t, head, pair",
        )
        # the dilution bound P e^2B / (P e^2B + T) falls below 1/2 inside the window iff B < ln(T/P)/2: only
        # then do the measured positions reach the regime where the theorem's 1/t dilution acts
        led.bound(
            "condition_dilution_regime",
            measured=max_logit,
            bound=0.5 * math.log((t[-1] - P) / P),
            relation="<",
            source=src,
            seed="000#1",
            why="P e^(2B) < T - P: the dilution bound on the prompt share drops below 1/2 within the window",
            statement="max |attention logit| B < ln(T/P)/2 (the window reaches the dilution regime)",
        )
    if not (config.norm == "pre" or not own_model):
        return
    if not np.isfinite(min_rms):
        led.not_evaluated(
            "condition_prenorm_rms",
            role="bound",
            source=src,
            seed="000#1",
            reason="the model exposes no pre-norm input hooks (ln1/ln2.hook_in): min_prenorm_rms is NaN",
        )
    else:
        # the norm's Jacobian is ~ 1/sqrt(rms^2 + eps): the theorem needs it set by the activations, not eps
        led.bound(
            "condition_prenorm_rms",
            measured=min_rms,
            bound=math.sqrt(NORM_EPS),
            relation=">",
            source=src,
            seed="000#1",
            why=f"RMS above sqrt(norm eps = {NORM_EPS}): the norm's gain 1/RMS is bounded by the activations",
            statement="smallest RMS of a pre-norm input over all positions, layers and pairs > sqrt(eps)",
        )


# the theorem's hypotheses measured in the same run (claim_conditions): the window reaches the dilution regime
# (bounded logits, P e^2B < T - P) and the pre-norm RMS is set by the activations
_THEOREM_CONDITIONS = ("condition_dilution_regime", "condition_prenorm_rms")


def claim_bound_ratio(led: Ledger, config: Config, data: xr.Dataset) -> None:
    """The theorem D = O(P (ln t)^(L-1)/t): the ratio D t / (P (ln t)^(l-1)) does not grow (worst layer).

    An upper bound on D permits any faster decay; what it forbids is the ratio growing without limit.
    Measured: the ratio's growth factor over the last octave, 2^slope, at the lower end of the slope's
    bootstrap CI, worst layer; it must be <= 1 (a slope consistent with 0 or negative). The relay model,
    which obeys the bound, has a non-positive slope over the same octave, so a finite window does not by
    itself make a bounded ratio grow.

    No diagnosis is attached: a miss was once put down to ``condition_dilution_regime`` failing, but the
    runs inside the regime (notebook 03 section 9, ``logit_gain`` below 1) can miss the same way, so the
    condition does not explain it. A miss is a fail until its cause is measured. Its triage names the
    theorem's measured hypotheses (:data:`_THEOREM_CONDITIONS`): a miss where one of them fails is out of
    the theorem's regime; a miss inside it is a refutation.
    """
    lo = data["bound_plateau_slope_ci"].sel(end="lo").values  # (L,)
    worst = int(np.argmax(lo))
    growth = float(2.0 ** lo[worst])
    led.bound(
        "bound_ratio_not_growing",
        measured=growth,
        bound=1.0,
        relation="<=",
        seed="000#1",
        source="seed theorem: D = O(P (ln t)^(L-1)/t) for pre-LN softmax with bounded logits",
        why="a bounded ratio cannot grow as a power of t: the growth factor of D t/(P (ln t)^(l-1)) from N/2 "
        "to N, taken at the lower end of the slope's 95% bootstrap CI over pairs (worst layer), must "
        "not exceed 1; tightness = that factor (the ratio falling fast means the bound is loose)",
        statement=f"D t/(P (ln t)^(l-1)) not growing over the last octave (worst layer {worst + 1}: slope "
        f"CI lower end {lo[worst]:.3f})",
        figure="pf_bound_constant",
        regime=_THEOREM_CONDITIONS,
    )


# the band of a claim about one model's alpha: the bootstrap over its prompt pairs (one weight draw)
_ONE_MODEL = (
    "the claim is about this one model (one weight seed): its alpha is fixed by its weights, and the bootstrap "
    "over prompt pairs is the uncertainty of measuring it on n_pairs prompts"
)


def claim_relay_exponent(
    led: Ledger, config: Config, data: xr.Dataset, scalars: dict, own_model: bool, many: tuple | None = None
) -> None:
    """Untrained pre-LN softmax with small logits as the relay model: alpha over the window = the relay's
    (``many``: replicates at independent seeds, the band their spread; else this one model's bootstrap CI)."""
    if config.trained or not own_model:
        return
    L = data.sizes["layer"]
    src = "seed's linear relay model (theory module: relay_alpha_window over the run's own window)"
    if L == 1:  # one relay layer is pure dilution: the prediction and its alternative coincide
        led.not_evaluated(
            "alpha_matches_relay",
            role="prediction",
            source=src,
            seed="000#1",
            reason="at L = 1 the relay model is D ~ 1/t, its own alternative: nothing to tell apart",
        )
        return
    expected = scalars["alpha_relay_window"]
    if many:
        band = dict(replicates=[r.scalars["alpha"] for r in many])
        why = _over_seeds(many, "last-layer alpha")
    else:
        band = dict(
            measured=scalars["alpha"],
            ci=(scalars["alpha_ci_lo"], scalars["alpha_ci_hi"]),
            coverage=0.95,
            within_run=_ONE_MODEL,
        )
        why = (
            "95% percentile bootstrap CI over prompt pairs of this one model's last-layer alpha (the same claim "
            "over weight seeds, with their spread: alpha_vs_relay_L<L> of depth_law_claims)"
        )
    led.predict(
        "alpha_matches_relay",
        expected=expected,
        **band,
        alternative=1.0,
        hypothesis="pure dilution without relay: D ~ 1/t (alpha = 1, one layer or no mixing)",
        seed="000#1",
        source=src,
        # the relay model linearises near-uniform attention: logits too large to reach dilution are outside it
        regime=["condition_dilution_regime"],
        why=why,
        statement=f"untrained pre-LN softmax, L = {L}: last-layer alpha{_mean_note(many)} equals the relay "
        f"model's alpha over the same window ({expected:.3f})",
        figure="pf_alpha_summary",
    )


def _over_seeds(many: tuple, what: str) -> str:
    """The ``why`` of a band over replicates at independent seeds."""
    return (
        f"95% t band ({len(many) - 1} dof) of the standard error of the mean {what} over {len(many)} independent "
        "seeds (weights, prompts, continuations and bootstrap: analysis.evidence.replicate_seed)"
    )


def _mean_note(many: tuple | None) -> str:
    return f" (mean over {len(many)} seeds)" if many else ""


def claim_seed_range(
    led: Ledger, config: Config, data: xr.Dataset, scalars: dict, own_model: bool, many: tuple | None = None
) -> None:
    """The seed's measured ranges: trained alpha 0.55-0.7, untrained 0.2-0.5 (large LMs, another setting);
    with replicates (``many``) their mean alpha."""
    if not own_model:
        led.not_evaluated(
            "alpha_seed_range",
            role="paper",
            source=SEED_SOURCE,
            seed="000#1",
            reason="passed-in model: the probe does not know whether it is trained or pre-LN; its alpha "
            "is a measurement to place against the seed's ranges by hand",
        )
        return
    fam = "trained" if config.trained else "untrained"
    lo, hi = (0.55, 0.7) if config.trained else (0.2, 0.5)
    diag = {}
    if not config.trained:  # the cause measured in this run: the network follows the relay model of its depth
        diag = dict(diagnosed_by={"alpha_matches_relay": "pass"}, diagnosis=_untrained_diagnosis(config, scalars))
    led.paper(
        f"alpha_{fam}_seed_range",
        measured=float(np.mean([r.scalars["alpha"] for r in many])) if many else scalars["alpha"],
        lo=lo,
        hi=hi,
        source=SEED_SOURCE,
        seed="000#1",
        why="the seed's reported range for this family (large LMs, long contexts)",
        requires_full=True,
        statement=f"{fam} pre-LN softmax: last-layer alpha{_mean_note(many)} in the seed's range [{lo}, {hi}]",
        figure="pf_alpha_summary",
        scale=_seed_scale(config),
        **diag,
    )


def _seed_scale(config: Config) -> str:
    """How the seed's models are larger than this run's, and the knobs that move toward them."""
    trained = f", trained {config.train_steps} updates on {config.data}" if config.trained else ", untrained"
    return (
        f"the seed measures large language models (many layers, wide, long contexts); here L = {config.layers}, "
        f"d = {config.d_model}{trained}, T = {config.cont_len}; knob: layers/d_model/train_steps/cont_len"
    )


EARLY = 0.01  # "early in training": checkpoints at or before this fraction of the steps


def claim_bias_trajectory(led: Ledger, config: Config, data: xr.Dataset, many: tuple | None = None) -> None:
    """The seed's intervention along training (000#1): the cancelling bias stops the decay early in
    training (alpha = 0 at checkpoints <= 1% of the steps; alternative: the unbiased alpha of the same
    checkpoint) and reverses it after (alpha < 0 at the last step; alternative 0, it only stops it).
    The checkpoints in between are measured and plotted, not claimed: the seed gives no sign for them.
    With replicates (``many``, trained at independent seeds) each checkpoint's band is their spread."""
    if "alpha_bias_trajectory" not in data:
        return
    steps = data["train_step"].values
    src = "seed: cancelling the dilution with a logit bias stops the decay early in training, reverses it after"
    why = (
        "95% percentile bootstrap CI over prompt pairs of the biased last-layer alpha at this checkpoint; "
        + TRAINED_ONE_SEED
    )
    arch = f"L = {config.layers}, {config.data} data"
    if many:
        why = _over_seeds(many, "biased last-layer alpha at this checkpoint")
    for i, s in enumerate(steps):
        if many:
            band = dict(replicates=[float(r.data["alpha_bias_trajectory"].values[i]) for r in many])
            plain = float(np.mean([r.data["alpha_trajectory"].values[i] for r in many]))
        else:
            ci = tuple(float(x) for x in data["alpha_bias_trajectory_ci"].values[i])
            band = dict(
                measured=float(data["alpha_bias_trajectory"].values[i]), ci=ci, coverage=0.95, within_run=_ONE_MODEL
            )
            plain = float(data["alpha_trajectory"].values[i])
        if s <= EARLY * config.train_steps:
            led.predict(
                f"bias_stops_decay_step{s}",
                expected=0.0,
                **band,
                alternative=plain,
                seed="000#1",
                source=src,
                why=why,
                hypothesis="the bias does not change alpha (dilution is not what makes the prompt fade)",
                statement=f"{arch}, after {s} of {config.train_steps} updates: with the cancelling bias alpha = 0",
                figure="pf_bias_training",
            )
        elif s == config.train_steps:
            led.direction(
                "bias_reverses_decay_trained",
                sign=-1,
                **band,
                alternative=0.0,
                seed="000#1",
                hypothesis="the bias only stops the decay (alpha = 0), it does not reverse it",
                source=src,
                why=why,
                requires_full=True,
                figure="pf_bias_training",
                statement=f"{arch}, trained ({s} updates): with the cancelling bias alpha < 0 (the offset grows)",
            )


def _untrained_diagnosis(config: Config, scalars: dict) -> str:
    L, N = config.layers, config.prompt_len + config.cont_len
    relay = scalars["alpha_relay_window"]
    return (
        f"the measured alpha matches the relay model of this depth L = {L} over the window ending at t = {N} "
        f"(relay alpha {relay:.2f}; its local exponent 1 - (L-1)/ln t is "
        f"{float(th.bound_local_exponent(L, N)):.2f} there): shallow depth and window, not a failure of the "
        "mechanism; the seed's networks are deeper"
    )


# ================================================================================================
# Claims across runs: called by the notebook with the results of a sweep or a paired comparison


def _alpha_se(r: Result) -> float:
    """Standard error of the last layer's alpha from its 95% percentile bootstrap CI (half-width / z(97.5%))."""
    return (r.scalars["alpha_ci_hi"] - r.scalars["alpha_ci_lo"]) / (2 * t_multiple(math.inf))


def _pairs_dof(runs) -> int:
    """Degrees of freedom of a bootstrap SE over prompt pairs: the fewest pairs of ``runs``, minus one."""
    return min(r.config.n_pairs for r in runs) - 1


def _check_pair(a: Result, b: Result, differ: set[str]) -> None:
    da, db = a.config.to_dict(), b.config.to_dict()
    other = {k for k in da if da[k] != db.get(k)} - differ - {"train_steps", "train_seq_len", "train_checkpoints"}
    if other:
        raise ValueError(f"the two runs must differ only in {sorted(differ)}; they also differ in {sorted(other)}")


def _runs(x) -> list[Result]:
    """The Results of one design: a :class:`probes.replicates.Replicates`, a list of Results, or one Result."""
    if hasattr(x, "results"):
        return list(x.results)
    return list(x) if isinstance(x, list | tuple) else [x]


def _paired(a, b, differ: set[str]) -> tuple[list[Result], list[Result]]:
    """Two designs' Results paired by seed (the same seeds on both sides), each pair checked by _check_pair."""
    ra, rb = sorted(_runs(a), key=lambda r: r.config.seed), sorted(_runs(b), key=lambda r: r.config.seed)
    if [r.config.seed for r in ra] != [r.config.seed for r in rb]:
        raise ValueError("the two designs must have the same seeds")
    for x, y in zip(ra, rb, strict=True):
        _check_pair(x, y, differ)
    return ra, rb


def bias_claims(plain, biased) -> Ledger:
    """The seed's intervention: cancelling dilution stops the decay early in training (alpha = 0) and
    reverses it after (alpha < 0). ``plain`` and ``biased`` differ only in ``logit_bias``: one Result each,
    or replicates at the same independent seeds (:mod:`probes.replicates`), whose spread is then the band."""
    plains, biaseds = _paired(plain, biased, {"logit_bias"})
    plain, biased = plains[0], biaseds[0]
    cfg = biased.config
    if cfg.logit_bias != "cancel" or plain.config.logit_bias != "none":
        raise ValueError("bias_claims needs an unbiased run and its cancel-bias twin")
    if cfg.attention == "uniform" and cfg.norm == "none" and cfg.mlp == 0:
        raise ValueError(
            "the relay network's bias claim is exact: uniform_bias_offset_constant in the biased run's own ledger"
        )
    led = Ledger(NAME, preset=cfg.preset_name)
    src = "seed: cancelling the dilution with a logit bias stops the decay early in training, reverses it after"
    unbiased = float(np.mean([r.scalars["alpha"] for r in plains]))
    note = _mean_note(tuple(biaseds) if len(biaseds) > 1 else None)
    if len(biaseds) > 1:
        band = dict(replicates=[r.scalars["alpha"] for r in biaseds])
        why = _over_seeds(tuple(biaseds), "biased last-layer alpha")
    else:
        ci = (biased.scalars["alpha_ci_lo"], biased.scalars["alpha_ci_hi"])
        band = dict(measured=biased.scalars["alpha"], ci=ci, coverage=0.95, within_run=_ONE_MODEL)
        why = "95% percentile bootstrap CI over prompt pairs of the biased run's last-layer alpha" + (
            f"; {TRAINED_ONE_SEED}" if cfg.trained else ""
        )
    if cfg.trained:
        led.direction(
            "bias_reverses_decay",
            sign=-1,
            **band,
            alternative=0.0,
            seed="000#1",
            hypothesis="the bias only stops the decay (alpha = 0), it does not reverse it",
            source=src,
            why=why,
            requires_full=True,
            figure="pf_bias",
            statement=f"trained model with the cancelling bias: alpha < 0 (the offset grows; unbiased alpha "
            f"{unbiased:.3f})",
        )
    else:
        led.predict(
            "bias_stops_decay",
            expected=0.0,
            **band,
            alternative=unbiased,
            hypothesis="dilution is not what makes the prompt fade: the bias leaves alpha at its unbiased value",
            seed="000#1",
            source=src,
            why=why,
            figure="pf_bias",
            statement=f"untrained {cfg.attention} model with the cancelling bias: alpha{note} = 0",
        )
    return led


def trained_vs_untrained_claims(untrained, trained) -> Ledger:
    """The seed's headline: trained models forget faster than untrained ones (same architecture and depth).

    ``untrained`` and ``trained`` are one Result each, or lists of Results over the same weight seeds
    (:func:`weight_seeds`): with two seeds or more the band is the 95% t band of the per-seed differences;
    with one seed (the notebook's: training is the pipeline's cost) it is the two runs' bootstrap SEs over
    prompt pairs, a claim about these two models."""
    un = list(untrained) if isinstance(untrained, list | tuple) else [untrained]
    tr = list(trained) if isinstance(trained, list | tuple) else [trained]
    if len(un) != len(tr) or sorted(r.config.seed for r in un) != sorted(r.config.seed for r in tr):
        raise ValueError("trained_vs_untrained_claims needs the same weight seeds on both sides")
    un, tr = sorted(un, key=lambda r: r.config.seed), sorted(tr, key=lambda r: r.config.seed)
    for u, t in zip(un, tr, strict=True):
        _check_pair(u, t, {"trained"})
        if u.config.trained or not t.config.trained:
            raise ValueError("trained_vs_untrained_claims needs an untrained run and its trained twin")
    cfg = tr[0].config
    led = Ledger(NAME, preset=cfg.preset_name)
    diffs = [t.scalars["alpha"] - u.scalars["alpha"] for u, t in zip(un, tr, strict=True)]
    if len(diffs) >= 2:
        band = dict(replicates=diffs)
        why = f"95% t band over {len(diffs)} weight seeds of the per-seed difference"
    else:
        band = dict(
            measured=diffs[0],
            se=math.hypot(_alpha_se(tr[0]), _alpha_se(un[0])),
            dof=_pairs_dof(un + tr),
            within_run="a claim about these two models (one weight seed each): their alphas are fixed by their "
            "weights; the SE is the bootstrap over prompt pairs",
        )
        why = (
            "95% t band of the difference, SE the hypot of each run's SE (its 95% bootstrap CI half-width / 1.96; "
            f"independent bootstraps of the same prompts), dof the fewer pairs - 1; {TRAINED_ONE_SEED}"
        )
    led.direction(
        "trained_forgets_faster",
        sign=+1,
        alternative=0.0,
        seed="000#1",
        hypothesis="training does not change the forgetting exponent",
        requires_full=True,
        source="seed: trained models forget fast (alpha 0.55-0.7), untrained ones slowly (0.2-0.5)",
        why=why,
        scale=f"the seed's trained models are large LMs trained to convergence; here L = {cfg.layers}, "
        f"d = {cfg.d_model}, {cfg.train_steps} updates on {cfg.data}; knob: train_steps/layers/d_model",
        statement=f"alpha_trained - alpha_untrained > 0 at equal depth L = {cfg.layers} ({cfg.data} data)",
        figure="pf_alpha_summary",
        **band,
    )
    return led


def depth_sweep_claims(results: list) -> Ledger:
    """The relay model's depth law: alpha over a fixed window falls with L as the relay model's does.

    ``results``: untrained runs differing only in ``layers`` (one weight seed). Measured: the OLS slope of
    alpha on L (SE propagated from each run's bootstrap CI over prompt pairs); predicted: the same slope of
    the relay model's window alphas. The same law over weight seeds: :func:`depth_law_claims`. Each item
    may instead be replicates at the same independent seeds (:mod:`probes.replicates`): the slope is then
    fitted per seed and the band is the spread of the per-seed slopes.
    """
    designs = [_runs(x) for x in results]
    results = [d[0] for d in designs]
    if len(results) < 2:
        raise ValueError("depth_sweep_claims needs runs at two depths at least")
    for r in results[1:]:
        _check_pair(results[0], r, {"layers"})
    Ls = np.array([r.config.layers for r in results], dtype=np.float64)
    if len(set(Ls)) != len(Ls):
        raise ValueError(f"depths must differ, got {Ls}")
    w = (Ls - Ls.mean()) / ((Ls - Ls.mean()) ** 2).sum()
    alpha = np.array([r.scalars["alpha"] for r in results])
    se = float(np.sqrt(np.sum(w**2 * np.array([_alpha_se(r) for r in results]) ** 2)))
    relay = np.array(
        [
            th.relay_alpha_window(r.config.prompt_len, r.config.layers, r.scalars["fit_lo"], int(r.scalars["fit_hi"]))
            for r in results
        ]
    )
    led = Ledger(NAME, preset=results[0].config.preset_name)
    if len(designs[0]) > 1:
        paired = [_paired(designs[0], d, {"layers"}) for d in designs[1:]]
        per_depth = [paired[0][0]] + [b for _, b in paired]  # (depth) lists of Results, seeds in order
        alphas = np.array([[r.scalars["alpha"] for r in d] for d in per_depth])  # (depth, seed)
        band = dict(replicates=[float(w @ alphas[:, j]) for j in range(alphas.shape[1])])
        why = _over_seeds(tuple(per_depth[0]), "OLS slope of alpha on L (fitted per seed)")
    else:
        band = dict(
            measured=float(w @ alpha),
            se=se,
            dof=_pairs_dof(results),
            within_run="a claim about these models (one weight seed per depth): each alpha is fixed by its "
            "weights, its SE the bootstrap over prompt pairs",
        )
        why = (
            "95% t band of the OLS slope (dof: the fewest prompt pairs - 1), each alpha's SE its 95% bootstrap "
            "CI half-width / 1.96; over weight seeds: alpha_falls_with_depth of depth_law_claims"
        )
    led.predict(
        "alpha_depth_slope_matches_relay",
        expected=float(w @ relay),
        **band,
        alternative=0.0,
        hypothesis="alpha independent of depth (no relay: each layer only dilutes)",
        seed="000#1",
        source="seed's linear relay model: each layer adds a factor ln t (relay_alpha_window)",
        why=why,
        statement=f"d alpha / dL over L = {[int(x) for x in Ls]} equals the relay model's "
        f"({float(w @ relay):.3f} per layer)",
        figure="pf_alpha_summary",
    )
    return led


SEED_UNTRAINED = (0.2, 0.5)  # the seed's alpha range for untrained models (000#1)


def depth_law(runs: list[Result]) -> xr.Dataset:
    """Alpha against depth over weight seeds: ``runs`` are untrained runs differing only in ``layers``
    and ``seed`` (every depth with the same seeds, at least two; :func:`weight_seeds` lists independent
    ones). Per depth: the seed mean of the last layer's alpha, its standard error from the seed-to-seed
    spread and the 95% t half-width, and the relay model's and the bound shape's alpha over the same fit
    window."""
    if not runs:
        raise ValueError("depth_law needs runs")
    for r in runs[1:]:
        _check_pair(runs[0], r, {"layers", "seed"})
    Ls = sorted({r.config.layers for r in runs})
    seeds = sorted({r.config.seed for r in runs})
    by = {(r.config.layers, r.config.seed): r for r in runs}
    missing = [(L, s) for L in Ls for s in seeds if (L, s) not in by]
    if missing or len(seeds) < 2:
        raise ValueError(f"depth_law needs every depth at the same >= 2 seeds; missing (layers, seed): {missing}")
    grid = {
        k: np.array([[by[L, s].scalars[k] for s in seeds] for L in Ls])
        for k in ("alpha", "alpha_ci_lo", "alpha_ci_hi", "max_logit")
    }
    r0 = runs[0]
    P, lo, hi = r0.config.prompt_len, r0.scalars["fit_lo"], int(r0.scalars["fit_hi"])
    a = grid["alpha"]
    stats = [mean_se(row) for row in a]
    se = np.array([x.se for x in stats])
    k95 = t_multiple(len(seeds) - 1)  # 95% two-sided for a mean of n_seeds draws
    data = {k: (("layers", "seed"), v) for k, v in grid.items()}
    data.update(
        alpha_mean=("layers", np.array([x.mean for x in stats])),
        alpha_se=("layers", se),
        alpha_half95=("layers", k95 * se),
        relay_alpha=("layers", np.array([by[L, seeds[0]].scalars["alpha_relay_window"] for L in Ls])),
        bound_alpha=("layers", np.array([th.bound_alpha_window(P, L, lo, hi) for L in Ls])),
    )
    return xr.Dataset(
        data,
        coords={"layers": Ls, "seed": seeds},
        attrs={"fit_lo": lo, "fit_hi": hi, "prompt_len": P, "preset": r0.config.preset_name, "k95": k95},
    )


def depth_law_claims(law: xr.Dataset) -> Ledger:
    """The relay model across depth (000#1), over :func:`depth_law`'s weight seeds (each claim's band the 95% t
    band of its per-seed replicates): alpha falls with L (the per-seed OLS slope on L); at each depth it
    equals the relay model's alpha over the same window (alternative alpha = 1, dilution alone); and where
    the seed mean enters the seed's untrained range."""
    Ls = law["layers"].values.astype(np.float64)
    n_seeds = law.sizes["seed"]
    per_seed = law["alpha"].transpose("layers", "seed").values  # (layers, seed)
    mean, relay = law["alpha_mean"].values, law["relay_alpha"].values
    seeds_why = (
        f"95% t band over {n_seeds} weight seeds (untrained models: each seed is one forward pass per prompt pair "
        "and depth; the seed count is the notebook's)"
    )
    window = f"window [{law.attrs['fit_lo']:g}, {law.attrs['fit_hi']:g}]"
    led = Ledger(NAME, preset=law.attrs["preset"])
    src = "seed's linear relay model: each layer adds a factor ln t (relay_alpha_window over the same window)"
    if len(Ls) >= 2:
        w = (Ls - Ls.mean()) / ((Ls - Ls.mean()) ** 2).sum()
        led.direction(
            "alpha_falls_with_depth",
            replicates=w @ per_seed,  # the OLS slope on L of each seed's alphas
            sign=-1,
            alternative=0.0,
            hypothesis="alpha does not depend on depth (each layer only dilutes)",
            seed="000#1",
            source=src,
            why=f"{seeds_why}, of each seed's OLS slope of alpha on L",
            statement=f"untrained pre-LN softmax: d alpha / dL < 0 over L = {[int(x) for x in Ls]} ({window})",
            figure="pf_alpha_depth",
        )
    for i, L in enumerate(Ls.astype(int)):
        name = f"alpha_vs_relay_L{L}"
        if abs(relay[i] - 1.0) < 1e-12:
            led.not_evaluated(
                name,
                role="prediction",
                seed="000#1",
                source=src,
                figure="pf_alpha_depth",
                reason="one layer: the relay model's alpha is 1, the alternative itself",
            )
            continue
        led.predict(
            name,
            replicates=per_seed[i],
            expected=float(relay[i]),
            alternative=1.0,
            hypothesis="alpha = 1: dilution alone, no relay across layers",
            seed="000#1",
            source=src,
            why=f"{seeds_why}, of the last layer's alpha",
            statement=f"L = {L}: seed-mean alpha equals the relay model's {relay[i]:.3f} ({window})",
            figure="pf_alpha_depth",
        )
    lo, hi = SEED_UNTRAINED
    inside = [int(L) for L, m in zip(Ls, mean, strict=True) if lo <= m <= hi]
    deep = int(Ls[-1])
    relay_outside = not lo <= relay[-1] <= hi
    diag = {f"alpha_vs_relay_L{deep}": "pass"} if relay_outside and deep > 1 else None
    led.paper(
        "alpha_untrained_seed_range_deepest",
        measured=float(mean[-1]),
        lo=lo,
        hi=hi,
        seed="000#1",
        source="seed paper: untrained models alpha 0.2-0.5",
        figure="pf_alpha_depth",
        why="the seed's reported range for untrained models (large LMs, long contexts)",
        diagnosed_by=diag,
        diagnosis=(
            f"the network follows the relay model, whose alpha at L = {deep} over this "
            f"window ({relay[-1]:.3f}) lies outside the range"
        )
        if diag
        else "",
        statement=f"untrained, L = {deep}: seed-mean alpha in the seed's range [{lo}, {hi}] (depths inside: "
        f"{inside or 'none'})",
    )
    return led


def relay_model_claims(prompt_len: int, t_max: int, preset: str) -> Ledger:
    """The relay model's closed form (exact rationals) and its asymptotic expansion's error rate."""
    led = Ledger(NAME, preset=preset)
    wrong = sum(
        th.relay_offsets_exact(P, L, 20)[t - 1] != th.relay_offset_closed_form_exact(P, L, t)
        for P in (1, 3)
        for L in (1, 2, 3)
        for t in range(1, 21)
    )
    led.identity(
        "relay_closed_form_exact",
        measured=float(wrong),
        expected=0.0,
        seed="000#1",
        source="derivation (theory module docstring)",
        why="exact rational arithmetic: no rounding",
        statement="closed form (harmonic numbers) == recursion exactly: mismatches over P in {1,3}, L <= 3, t <= 20",
    )
    t = np.unique(np.geomspace(prompt_len + 1, t_max, 200).astype(int))
    worst = 0.0
    for L in range(1, 5):
        d = th.relay_offsets(prompt_len, L, t_max)[t - 1]
        asym = th.relay_asymptotic(prompt_len, L, t)
        worst = max(worst, float(np.max(np.abs(d / asym - 1) * t / (L * (L + prompt_len)))))
    led.bound(
        "relay_asymptotic_rate",
        measured=worst,
        bound=1.0,
        seed="000#1",
        source="derivation: neglected H_t - ln t - gamma = O(1/t)",
        why="each of <= L harmonic factors errs by <= (L+P)/t relative",
        figure="pf_relay_ratio",
        statement="|Delta/asymptotic - 1| <= L (L + P)/t for L <= 4 (measured: max of the ratio of the two)",
    )
    return led


# ---------------------------------------------------------------------- declared studies (probes.studies)


def notebook_base(
    preset: str,
    seed: int = 0,
    layers: int = 2,
    d_model: int = 64,
    heads: int = 2,
    prompt_len: int = 16,
    cont_len: int = 4096,
    n_pairs: int = 6,
) -> Config:
    """The configuration every design of notebook 03 starts from; the parameters are its parameter cell.
    The full preset takes them as given (fit from t = 64); smoke shrinks the continuation to 128 tokens,
    the pairs to 2 and the width to 32 (fit from t = 24)."""
    full = preset == "full"
    return Config.preset(
        preset,
        layers=layers,
        d_model=d_model if full else 32,
        heads=heads,
        prompt_len=prompt_len,
        cont_len=cont_len if full else 128,
        n_pairs=n_pairs if full else 2,
        fit_lo=64.0 if full else 24.0,
        seed=seed,
    )


DEPTH_LAW_LAYERS = {"smoke": (1, 2, 3), "full": (1, 2, 3, 4, 6, 8, 12)}


def depths_x_seeds(layers: dict[str, tuple[int, ...]]):
    """A study grid: the depths ``layers[preset]`` x independent weight seeds (:func:`weight_seeds`,
    ``REPLICATES[preset]`` of them: the replicates :func:`probes.replicated_run` gives each depth)."""

    def grid(preset: str, base: Config) -> dict[str, tuple]:
        return {"layers": layers[preset], "seed": tuple(weight_seeds(base.seed, REPLICATES[preset]))}

    return grid


depth_law_grid = depths_x_seeds(DEPTH_LAW_LAYERS)


def sweep_base(preset: str, **params) -> Config:
    """:func:`notebook_base` at the sweep length of notebook 03's shorter-context sections: a quarter of the
    continuation (smoke: 96 tokens), fitted from half the main fit start (smoke: 24)."""
    base = notebook_base(preset, **params)
    full = preset == "full"
    return base.replace(cont_len=base.cont_len // 4 if full else 96, fit_lo=base.fit_lo / 2 if full else 24.0)


# sweep_base keeps notebook_base's parameters (the studies list them from its signature)
sweep_base.__signature__ = inspect.signature(notebook_base)

DEPTH_SWEEP_LAYERS = {"smoke": (1, 2), "full": (1, 2, 3)}


depth_sweep_grid = depths_x_seeds(DEPTH_SWEEP_LAYERS)


def by_design(runs: list[Result], field: str = "layers") -> list[Replicates]:
    """Runs of a grid (``field`` outer, seed inner) grouped into one :class:`probes.Replicates` per value of
    ``field``, its replicates in the grid's seed order (replicate 0 first)."""
    groups: dict = {}
    for r in runs:
        groups.setdefault(getattr(r.config, field), []).append(r)
    return [Replicates(sys.modules[__name__], tuple(rs)) for rs in groups.values()]


REGIME_LAYERS = {"smoke": (2, 3), "full": (2, 3, 4)}
REGIME_GAIN = {"smoke": 0.15, "full": 0.4}  # brings max|logit| below ln(T/P)/2 at these depths (notebook 03 sec. 5)


def regime_base(preset: str, **params) -> Config:
    """:func:`notebook_base` with the attention logits scaled down (``logit_gain = REGIME_GAIN[preset]``)."""
    return notebook_base(preset, **params).replace(logit_gain=REGIME_GAIN[preset])


regime_base.__signature__ = inspect.signature(notebook_base)


regime_grid = depths_x_seeds(REGIME_LAYERS)


def layers_ledger(designs: list[Replicates]) -> Ledger:
    """Each design's own ledger (judged over its seeds), tagged ``L<layers>``: the claims of a study whose
    designs differ in depth and make no cross-design claim."""
    tagged = {f"L{r.config.layers}": r.ledger for r in designs}
    if len(tagged) != len(designs):
        raise ValueError(f"designs must differ in layers, got {[r.config.layers for r in designs]}")
    return tagged_ledger(tagged)


# ------------------------------------------------------------ studies of designs (notebook 03's other sections)

UNIFORM = {"attention": "uniform", "norm": "none", "mlp": 0, "dtype": "float64"}  # the matrix relay network (exact)
TRAIN_LAYERS = {"smoke": (1, 2), "full": (2, 4, 6, 8)}
TRAIN_DATA = ("corpus", "markov")
TRAINING = {  # the training recipe per data, per preset (smoke: the preset's own)
    "full": {
        "corpus": {"train_steps": 2000, "train_seq_len": 128},
        "markov": {"train_steps": 600, "train_seq_len": 128},
    },
    "smoke": {"corpus": {}, "markov": {}},
}
TRAJECTORY = {"smoke": ("corpus", 2), "full": ("corpus", 4)}  # the trained run that also measures alpha along training
TRAJECTORY_FRACTIONS = (0.01, 0.1, 0.3, 0.5, 0.7, 1.0)  # its checkpoints, as fractions of its updates
PROMPT_LENGTHS = {"smoke": (4, 8), "full": (4, 16, 64)}
VARIANTS = {  # tag -> (label, overrides): the architecture variants of notebook 03 section 9
    "pre_ln_softmax": ("pre-LN softmax", {}),
    "post_ln_softmax": ("post-LN softmax", {"norm": "post"}),
    "pre_rmsnorm_softmax": ("pre-RMSNorm softmax", {"norm_type": "rmsnorm"}),
    "pre_ln_ssmax": ("pre-LN ssmax", {"attention": "ssmax"}),
    "pre_ln_sigmoid": ("pre-LN sigmoid", {"attention": "sigmoid"}),
    "uniform": ("uniform (relay)", UNIFORM),
}


def design_replicates(preset: str, config: Config) -> int:
    """Independent seeds of one design: :data:`REPLICATES` for an untrained model, one for a trained one (the
    figure pipeline's cost; :data:`TRAINED_ONE_SEED`)."""
    return 1 if config.trained else REPLICATES[preset]


def kernel_designs(preset: str, base: Config) -> dict[str, dict]:
    """Pre-LN softmax and the uniform relay network at the main length (notebook 03 section 1)."""
    return {"softmax": {}, "uniform": dict(UNIFORM)}


def trajectory_checkpoints(preset: str, base: Config) -> tuple[int, ...]:
    """The updates at which the trajectory run measures alpha (0 and :data:`TRAJECTORY_FRACTIONS` of its steps)."""
    data, _ = TRAJECTORY[preset]
    steps = base.replace(**TRAINING[preset][data]).train_steps
    return tuple(sorted({0, *(round(f * steps) for f in TRAJECTORY_FRACTIONS)}))


def training_designs(preset: str, base: Config) -> dict[str, dict]:
    """Each data and depth, untrained and trained on that data (the same text, prompts and continuations; notebook
    03 section 3); the trajectory run also measures alpha along training (section 4)."""
    out = {}
    for data in TRAIN_DATA:
        for L in TRAIN_LAYERS[preset]:
            extra = (
                {"train_checkpoints": trajectory_checkpoints(preset, base)} if (data, L) == TRAJECTORY[preset] else {}
            )
            out[f"untrained_{data}_L{L}"] = {"layers": L, "data": data}
            out[f"trained_{data}_L{L}"] = {
                "layers": L,
                "data": data,
                "trained": True,
                **TRAINING[preset][data],
                **extra,
            }
    return out


def training_ledgers(designs: dict[str, Replicates]) -> dict[str, Ledger]:
    """Each design's ledger, and after each trained one the paired claim against its untrained twin at the same
    (first) seed, tagged ``trained_vs_untrained_<data>_L<layers>``."""
    out = {}
    for tag, r in designs.items():
        out[tag] = r.ledger
        if tag.startswith("trained_"):
            twin = tag.replace("trained_", "untrained_", 1)
            out[tag.replace("trained_", "trained_vs_untrained_", 1)] = trained_vs_untrained_claims(
                designs[twin].main, r.main
            )
    return out


def bias_designs(preset: str, base: Config) -> dict[str, dict]:
    """Softmax and uniform at the sweep length with and without the dilution-cancelling bias (section 4)."""
    return {
        "plain_softmax": {},
        "plain_uniform": dict(UNIFORM),
        "bias_softmax": {"logit_bias": "cancel"},
        "uniform_bias": {**UNIFORM, "logit_bias": "cancel"},
    }


def bias_ledgers(designs: dict[str, Replicates]) -> dict[str, Ledger]:
    """The uniform network's ledger with the bias, and the bias claims (softmax with against without)."""
    return {
        "uniform_bias": designs["uniform_bias"].ledger,
        "bias_softmax": bias_claims(designs["plain_softmax"], designs["bias_softmax"]),
    }


def prompt_length_designs(preset: str, base: Config) -> dict[str, dict]:
    """The prompt length P at the sweep length, fitted from at least 2P after the prompt (section 8, right)."""
    full = preset == "full"
    return {
        f"P{P}": {"prompt_len": P, "fit_lo": max(2.0 * P, base.fit_lo) if full else 24.0}
        for P in PROMPT_LENGTHS[preset]
    }


def variant_designs(preset: str, base: Config) -> dict[str, dict]:
    """The architecture variants at the sweep length (:data:`VARIANTS`; section 9)."""
    return {tag: dict(over) for tag, (_label, over) in VARIANTS.items()}


def uniform_depth_designs(preset: str, base: Config) -> dict[str, dict]:
    """The uniform relay network at each depth of the depth sweep (section 10)."""
    return {f"uniform_L{L}": {**UNIFORM, "layers": L} for L in DEPTH_SWEEP_LAYERS[preset]}


def _own_ledgers(designs: dict[str, Replicates]) -> dict[str, Ledger]:
    return {tag: r.ledger for tag, r in designs.items()}


def _variant_ledgers(designs: dict[str, Replicates]) -> dict[str, Ledger]:
    return {"variant_uniform": designs["uniform"].ledger}


def _designs_study(name: str, description: str, base, designs, ledgers, figure: str) -> Study:
    return Study(
        name=name,
        description=description,
        base=base,
        grid=None,
        designs=designs,
        replicates=design_replicates,
        combine=dict,
        claims=lambda combined: tagged_ledger(ledgers(combined)),
        figure=figure,
    )


STUDIES = {
    "depth_law": Study(
        name="depth_law",
        description="alpha against depth over independent weight seeds, against the relay model over the same "
        "window (untrained pre-LN softmax at the main continuation length; notebook 03 section 2)",
        base=notebook_base,
        grid=depth_law_grid,
        combine=depth_law,
        claims=depth_law_claims,
        figure="pf_alpha_depth",
    ),
    "depth_sweep": Study(
        name="depth_sweep",
        description="alpha against depth at the sweep length, each depth over independent seeds, its slope "
        "against the relay model's (notebook 03 section 8, left)",
        base=sweep_base,
        grid=depth_sweep_grid,
        combine=by_design,
        claims=depth_sweep_claims,
        figure="pf_alpha_summary",
    ),
    "bound_regime": Study(
        name="bound_regime",
        description="the bound inside its regime: logits scaled down so max|logit| < ln(T/P)/2, the bound's ratio "
        "not growing and both of the theorem's conditions, each depth over independent seeds (notebook 03 "
        "section 5)",
        base=regime_base,
        grid=regime_grid,
        combine=by_design,
        claims=layers_ledger,
        figure="pf_bound_regime",
    ),
    "kernels": _designs_study(
        "kernels",
        "pre-LN softmax and the uniform relay network at the main length (notebook 03 section 1)",
        notebook_base,
        kernel_designs,
        _own_ledgers,
        "pf_distance",
    ),
    "training": _designs_study(
        "training",
        "untrained and trained on corpus text and on the Markov language at each "
        "depth, with alpha along training (notebook 03 sections 3-4)",
        notebook_base,
        training_designs,
        training_ledgers,
        "pf_trained_depth",
    ),
    "bias": _designs_study(
        "bias",
        "the dilution-cancelling bias against none, softmax and uniform, at the sweep length (notebook 03 section 4)",
        sweep_base,
        bias_designs,
        bias_ledgers,
        "pf_bias_training",
    ),
    "prompt_lengths": _designs_study(
        "prompt_lengths",
        "alpha against the prompt length at the sweep length (notebook 03 section 8, right)",
        sweep_base,
        prompt_length_designs,
        _own_ledgers,
        "pf_alpha_summary",
    ),
    "variants": _designs_study(
        "variants",
        "norm placement, norm kind and attention kernel at the sweep length (notebook 03 section 9)",
        sweep_base,
        variant_designs,
        _variant_ledgers,
        "pf_variants",
    ),
    "uniform_depths": _designs_study(
        "uniform_depths",
        "the uniform relay network at each depth of the depth sweep (notebook 03 section 10)",
        sweep_base,
        uniform_depth_designs,
        _own_ledgers,
        "pf_bound_constant",
    ),
}
