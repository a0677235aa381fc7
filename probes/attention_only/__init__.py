"""Attention-only layers: convolution by relative-position heads (rank bound for fewer heads), KV-shift induction, and
rank against heads on nearest-neighbour search.

Theory: :mod:`analysis.theory.attention_only`; the zoo knobs ``rel_pos`` (a learned per-head relative-position
logit bias) and ``kv_shift`` (keys and values mixed with the previous token's) of :mod:`analysis.zoo.model`.

1. Construction (seed 004#89): a ``taps``-tap causal convolution of width ``d`` (the kernel of
   :class:`analysis.data.tasks.ConvolutionRegression`) built as one layer of K heads -- uniform kernel (zero content
   logits), relative-position bias 0 at offset h and -inf elsewhere, W_o,h = W_h -- run in float64 on
   ``construction_batch_size`` white sequences padded with K - 1 zero vectors, against the convolution.
2. Trained heads (seed 004#89): H = 1..K heads of the same content-free form (attention "uniform" + ``rel_pos``,
   no norm, no residual, no MLP: a linear layer whose patterns depend only on positions) trained on the
   regression ``y = conv(x)`` with :func:`analysis.training.train.train` (cached), ``train_seeds`` replicate seeds.
   Measured: the
   exact population relative MSE of the trained layer on white inputs over the rows t >= K - 1, from its impulse
   responses in float64, against the Eckart-Young bound of the unfolded kernel.
3. Induction (seed 004#24): attention-only token models (no MLP) trained on :class:`analysis.data.tasks.Induction`:
   one vanilla layer without positions, one KV-shift layer without positions, one vanilla layer with RoPE and two
   vanilla layers with RoPE; held-out accuracy at the repeated positions (``n_eval`` sequences). A hand-built
   one-layer KV-shift model solves the task exactly; switching its shift off makes it plain attention.
4. Rank against heads (seed 004#72): :class:`analysis.data.tasks.NearestNeighbour` (``neighbour_keys`` unit keys in
   ``neighbour_d`` dimensions, queries see the keys only). The head rank is the zoo's ``d_head``: a head of size
   ``r`` has query/key maps of rank ``r`` (and value/output maps of rank ``r``, the standard ``H r = d`` convention
   the paper's experiments use), so no new knob. A float64 construction (one head, QK = beta I, value the key) at a
   huge beta reproduces the target; attention-only models (no norm, no MLP, residual on, logit scale 1) with one
   rank-d head, 4 heads of rank d/4 and d heads of rank 1 are trained (cached) and their held-out relative MSE is
   compared with the theory's additive floor A(r) and the construction's error at the trained head's scale; at
   ``neighbour_keys_short`` keys (2), one layer of d rank-1 heads against two such layers and one rank-d head.
5. Attention-only networks (seed 004#1) on the character corpus (:class:`analysis.data.tasks.CorpusLM`).
   a. Matched parameters: a pre-LN standard model (``matched_n_layers`` blocks of width ``matched_d_model``, MLP
      4d), the
      attention-only stack of the same width whose depth matches its parameters (theory item 5: 3x as deep, the
      residual difference ``L d`` norm gains), and the standard model with its MLPs deleted in place, each
      trained ``matched_seeds`` times with the workbench's probe-LM recipe
      (:func:`analysis.training.train.probe_lm_train_config`); held-out loss on the same validation windows.
   b. Deep attention-only stacks: ``deep_n_layers`` x ``deep_d_model`` (pre-LN, RoPE, no MLP) with and without
      QK-norm, Adam at ``deep_lr`` (torch's default Adam learning rate 1e-3, fixed before any run: constant, no
      warm-up, no clipping, no weight decay), ``deep_seeds`` seeds. Per update, on a fixed probe batch, the largest
      |attention logit| over layers and heads and, with QK-norm, its ratio to the closed-form bound of the layer's
      current gains; the training loss, in which a spike (:func:`loss_spikes`) is an update whose loss exceeds the
      median of the previous ``spike_window`` losses by more than ``spike_k`` times their scaled MAD (or is not
      finite). A float64 construction (W_q = W_k, constant gains, eps 0) attains the bound.
   c. Stable ranks ``|A|_F^2 / |A|_2^2`` along training (``matched_snapshots`` + 1 checkpoints of run a) of each head's
      ``W_q,h^T W_k,h`` (mean over heads) and of ``W_O``, per layer; the statistic is the relative change over the
      second half of training, averaged over layers, per seed.

Replicates: seed i of every trained part (``train_seeds``, ``neighbour_seeds``, ``matched_seeds``, ``deep_seeds``) is
:func:`analysis.claims.evidence.replicate_seed` ``(seed, i)`` for weights, data and held-out data (replicate 0 is
``seed``
itself), and every claim on trained models takes its 95% Student-t band from the spread of the per-seed values
(:mod:`analysis.claims.evidence`); models of different kinds with the same replicate index are paired.

The probe is a package of parts (:mod:`analysis.probing.parts`), one module each, in the order of their claims:
``convolution`` (1, 2), ``induction`` (3), ``nearest_neighbour`` (4), ``matched`` (5a), ``deep`` (5b) and the
claims-only ``stable_ranks`` (5c, measured by ``matched``); ``config`` holds the configuration.
"""

from __future__ import annotations

from analysis.probing.base import Result
from analysis.probing.parts import part_of, probe_functions
from analysis.zoo.model import TinyTransformer
from probes.attention_only import (
    convolution,
    declarations,  # noqa: F401  (registers the declared claims)
    deep,
    induction,
    matched,
    nearest_neighbour,
    stable_ranks,
)
from probes.attention_only.config import SEED_CONV, SEED_KV, SEED_RANK, SEED_SAN, SOURCE, Config
from probes.attention_only.convolution import pattern_floor
from probes.attention_only.deep import loss_spikes
from probes.attention_only.induction import FAILS, MODELS, SOLVED
from probes.attention_only.matched import SAN_GAP, SAN_PAPER_GAP, gap_slopes, second_half_change, stable_rank
from probes.attention_only.models import SAN_MODELS
from probes.attention_only.nearest_neighbour import (
    NN_HALF,
    NN_MODELS,
    NN_THRESHOLD,
    NN_WORSE,
    learned_scale,
    nn_model_config,
)

NAME = "attention_only"
DESCRIPTION = (
    "Attention-only layers: convolution by relative-position heads (rank bound), KV-shift induction, rank against "
    "heads, and attention-only networks (matched parameters, QK-norm in deep stacks, stable ranks)."
)
VERSION = "5"  # 5: the fields speak the model's and trainer's names (n_layers, batch_size, ...)
REQUIRES = None  # builds its own models

PARTS = tuple(part_of(m) for m in (convolution, induction, nearest_neighbour, matched, deep, stable_ranks))


# run(config, model=None, progress=True) and check_claims(result): the one form of a probe made of parts;
# tiny models measure on one thread (fastest, and it fixes the reduction order)
run, check_claims = probe_functions(NAME, PARTS, threads=1)


__all__ = [
    "DESCRIPTION",
    "FAILS",
    "MODELS",
    "NAME",
    "NN_HALF",
    "NN_MODELS",
    "NN_THRESHOLD",
    "NN_WORSE",
    "PARTS",
    "REQUIRES",
    "SAN_GAP",
    "SAN_PAPER_GAP",
    "gap_slopes",
    "SAN_MODELS",
    "SEED_CONV",
    "SEED_KV",
    "SEED_RANK",
    "SEED_SAN",
    "SOLVED",
    "SOURCE",
    "VERSION",
    "Config",
    "Result",
    "TinyTransformer",
    "check_claims",
    "learned_scale",
    "loss_spikes",
    "nn_model_config",
    "pattern_floor",
    "run",
    "second_half_change",
    "stable_rank",
]
