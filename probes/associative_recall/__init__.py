"""Associative recall: outer-product memories, the delta rule, FAVOR+, and trained MQAR per token mixer.

Theory: :mod:`analysis.theory.associative_recall`; the mixers: :mod:`analysis.zoo.recurrent` (``attention
"recurrent"`` in the zoo). Kernels: ``softmax`` (attention), ``additive`` (linear attention, S += v k^T),
``delta`` (DeltaNet, S += beta (v - S k) k^T with unit keys) and ``gated_delta`` (the delta rule with a
per-token decay, Gated DeltaNet).

1. Untrained memories (``draws`` independent ones per kernel and N): N keys uniform on the unit sphere of
   ``R^d_key`` and N unit values, written through the mixer's own code (:func:`analysis.zoo.recurrent.mix`,
   both forms, float64; beta = 1 for the delta rules, the decay of gated_delta fixed at RetNet's
   ``1 - 2^-5``), then read with each key: the relative squared error ``|S k_j - v_j|^2`` (values are unit
   vectors) and whether the read-out is nearest to its own value among the N stored. Softmax reads
   ``softmax(sqrt(d_key) K k_j) V`` (keys of unit-variance coordinates under the 1/sqrt(d) scale).
   Theory: ``(N - 1)/d_key`` for the additive memory; no closed form for the others (NaN).
2. Overwrite: ``d_key / 2`` orthonormal keys, then key 0 written again with a new value: the delta rule
   (beta = 1) reads exactly the new value; the additive rule the sum of old and new.
3. FAVOR+: the variance of ``phi(q) . phi(k)`` at each m in ``favor_m`` (q, k of norm ``favor_norm``)
   against the Performer formula (the trigonometric estimator's variance is the alternative), and the
   RMS error of a softmax row over ``favor_keys`` keys against m: slope -1/2 on log-log axes.
4. Trained (``training``): an ``n_layers``-layer, ``n_heads``-head, attention-only model with head size
   ``d_key`` per kernel and N, trained on MQAR (paired layout: a key and its value share a position;
   :class:`analysis.data.tasks.AssociativeRecall`) with :func:`analysis.training.train.train` (cached), ``train_seeds``
   independent replicate seeds (:func:`analysis.claims.evidence.replicate_seeds`, as in every trained item);
   accuracy over ``n_eval`` held-out sequences at the query positions (each seed its own). Each trained recurrent
   model is also run in float64 in both forms (identity).
5. Linearisation (seed 000#39): one softmax head of the zoo (width and head size ``lin_d``, float64, no norm,
   no MLP) reads ``lin_queries`` queries over ``n`` i.i.d. ``N(0, I)`` tokens for each n in ``lin_ns``
   (``lin_reps`` independent token sets per n; the queries are hidden as keys). Each query is scaled so
   that its logit vector ``a = c W_k^T W_q x_q`` has norm ``lin_a_norm``. The attention output tends to the
   linear map ``W_o W_v a``; ``n`` times its mean squared distance from it against
   ``e^{|a|^2}(|M|_F^2 + |M a|^2)`` (alternative: ``|M|_F^2``, an effective sample size of n), and the
   log-log slope of the RMS distance in n against -1/2 (alternative 0: no linear limit).
6. Gated RNN = linear self-attention (seed 003#14; ``gated``). On in-context linear regression (Gaussian
   inputs, width ``gated_d``, ``gated_n`` examples, tokens (x_i, y_i) and the query (x_q, 0), prediction minus the
   query's y-slot) one causal linear self-attention layer (the zoo's ``attention="linear"``, unnormalised,
   no norm, no MLP) and one gated linear recurrence of the same shape (``attention="recurrent",
   decay="gated"``: S_t = g_t S_{t-1} + v_t k_t^T, g_t = sigmoid(w . x_t + b)) are trained, ``gated_seeds``
   seeds each, and evaluated in float64 on ``gated_eval`` shared held-out tasks. Identities: the element-wise
   gated RNN of :mod:`analysis.theory.gated_recurrence` (item 1) built from each trained layer's weights
   reproduces its outputs. Predictions: the LSA's loss is the one-step-GD optimum ``loss_star``
   (alternative: the loss of an RNN without multiplicative gates, the zero predictor's); the gated RNN's
   loss over the LSA's is 1 (alternative: the ungated RNN's over ``loss_star``).
7. Selective copying (seed 003#16; ``gated``): :class:`analysis.data.tasks.SelectiveCopying` with random and
   fixed spacing; ``copying_n_layers``-layer recurrent models of width ``copying_d_model`` (learned positions, MLP) with
   ``decay="gated"`` (selective) or ``"fixed"`` (time-invariant decay), ``copying_seeds`` seeds, held-out accuracy
   on ``copying_eval`` sequences, against the best time-invariant one-tap read-out (theory item 3).
8. In-context PCA by a looped linear transformer (seed 000#45 = 003#35; ``power_method``): prompts of ``power_n``
   vectors in R^``power_d`` (spectrum 1, rho, rho^2, ..., random rotation; :mod:`analysis.data.pca_data`) and a
   query holding a unit start v_0; target s u_1, the top eigenvector of the empirical covariance S with
   the sign of u_1 . v_0 (the power method's limit). One linear-attention layer (one head, no MLP, every
   token sees every token) applied ``power_loops`` times with the same weights (the zoo's ``loops``) is
   trained with post-LayerNorm and without a norm, ``power_seeds`` seeds each, then looped k = 1..
   ``power_eval_loops`` times on ``power_eval`` shared prompts in float64. Identity: the exact construction of
   :mod:`analysis.theory.power_method` (item 3) in the zoo is one power iteration per loop. Predictions:
   the LN model's first loop is one power step (median tan theta_1 of the power method; alternative:
   no step, tan theta_0), its per-loop contraction of tan theta over loops 1..K that of the power
   method on the same prompts (alternative 1: no convergence), its error |v_T - s u_1|^2 after the
   trained T loops the power method's (alternative: the no-LN model's); directions: the no-LN model's
   error after T loops above the power method's and above the LN model's.
9. The delta rule with momentum (seed 003#112; ``momentum``): online regression of a Gaussian map W (``v_t = W
   k_t``, unit keys in R^``momentum_d``) by :func:`analysis.zoo.recurrent.momentum_delta_scan` with write strength
   ``momentum_beta`` and two momenta, one with complex roots (oscillating) and one with real roots (damped); the
   mean overlap ``<E_0, E_t>/|E_0|^2`` of the error with its start over ``momentum_batch_size`` sequences,
   ``momentum_seeds``
   independent memories, against the exact recurrence of theory item 6 at the step where it and the first-order
   picture (momentum as the larger step ``b/(1 - mu)``, the alternative) differ most.
10. A global decay (seed 003#2; ``decay``): ``decay_batch_size`` untrained additive memories per N in ``decay_pairs``
   (unit keys and values in R^``decay_key``) written through :func:`analysis.zoo.recurrent.mix` with a fixed decay
   ``decay_gamma`` (``S_t = gamma S_(t-1) + v_t k_t^T``), ``decay_seeds`` independent sets, read with each stored
   key: the mean relative squared error against its exact law (theory item 7; the alternative: the undecayed
   ``(N - 1)/d_k``) and its slope in ln N (bounded interference; the alternative: the undecayed slope).

The probe is a package of parts (:mod:`analysis.probing.parts`), one module each, in the order of their claims:
``memories`` (item 1), ``overwrite`` (2), ``favor`` (3), ``linearisation`` (5), ``mqar`` (4, when ``training``),
``gated_rnn`` (6, gate ``gated``), ``selective`` (7, gate ``gated``), ``power_method`` (8, gate ``power_method``),
``momentum`` (9, gate ``momentum``) and ``decay`` (10, gate ``decay``);
``config`` holds the configuration and the replicate seeds.
"""

from __future__ import annotations

from analysis.probing.parts import part_of, probe_functions
from probes.associative_recall import (
    decay,
    declarations,  # noqa: F401  (registers the declared claims)
    favor,
    gated_rnn,
    linearisation,
    memories,
    momentum,
    mqar,
    overwrite,
    power_method,
    selective,
)
from probes.associative_recall.config import KERNELS, MIXER, SOURCE, Config, part_seeds, seed_se
from probes.associative_recall.gated_rnn import GR_MODELS, gated_rnn_of, gr_model_config, gr_task
from probes.associative_recall.memories import read_memory, write_memory
from probes.associative_recall.mqar import model_config
from probes.associative_recall.power_method import PM_MODELS, pm_construction, pm_iterates, pm_model_config, pm_task
from probes.associative_recall.selective import SC_DECAYS, SC_SPACINGS

NAME = "associative_recall"
DESCRIPTION = "Associative recall: additive vs delta-rule memories, FAVOR+ variance, trained MQAR per token mixer."
VERSION = "9"  # 9: the fields speak the model's and trainer's names (n_layers, ...);
# 8: additive memories with a global decay (003#2) join; 7: the momentum delta rule (003#112) joins;
# 6: the one band policy (95% Student t; trained claims
# over five replicate seeds hashed from
# (seed, i)): every band and the trained numbers change; 5: the additive mixer's parallel = recurrent claims
# cite 003#64 (linear attention as an RNN);
# 4: in-context PCA by looped linear attention with and without LN (000#45); 3: the gated-RNN = LSA
# comparison (003#14) and selective copying (003#16)
REQUIRES = None  # builds its own memories and models

PARTS = tuple(
    part_of(m)
    for m in (memories, overwrite, favor, linearisation, mqar, gated_rnn, selective, power_method, momentum, decay)
)


# run(config, model=None, progress=True) and check_claims(result): the one form of a probe made of parts
run, check_claims = probe_functions(NAME, PARTS)


__all__ = [
    "DESCRIPTION",
    "GR_MODELS",
    "KERNELS",
    "MIXER",
    "NAME",
    "PARTS",
    "PM_MODELS",
    "REQUIRES",
    "SC_DECAYS",
    "SC_SPACINGS",
    "SOURCE",
    "VERSION",
    "Config",
    "check_claims",
    "gated_rnn_of",
    "gr_model_config",
    "gr_task",
    "model_config",
    "part_seeds",
    "pm_construction",
    "pm_iterates",
    "pm_model_config",
    "pm_task",
    "read_memory",
    "run",
    "seed_se",
    "write_memory",
]
