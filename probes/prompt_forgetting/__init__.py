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
``alpha_local(t) = -d ln D / d ln t`` is a smoothed local slope (:mod:`analysis.claims.fitting`).

Theory beside it (:mod:`analysis.theory.prompt_forgetting`): the bound's shape ``P (ln t)^(L-1)/t``
and its local exponent ``1 - (L-1)/ln t`` (``bound_ratio = D t / (P (ln t)^(L-1))``, ``L`` = depth up
to that layer); the linear relay model's offsets and local exponent; the theorem's conditions measured
on the same forward passes (largest finite |attention logit| from ``hook_attn_scores``, the intervention's
bias removed; smallest RMS of a pre-norm input from ``ln1/ln2.hook_in``); the prompt's attention
share per layer and its dilution bound ``P e^(2B) / (P e^(2B) + t - P)``. With ``logit_bias="cancel"``
the bias ``ln(t - P)`` is added to the prompt keys' logits of every continuation query in every layer,
which keeps a uniform row's prompt share at ``P/(P+1)``.

With ``attention="uniform"``, ``norm="none"`` and ``d_mlp=0`` the network *is* the matrix relay model
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
``D t / (P (ln t)^(L-1))`` growing without limit, so over the last octave the bootstrap CI of
``bound_plateau_slope`` may not exceed the growth of the bound's extremal case, the relay model, there), the relay
model's exponent (``alpha_matches_relay``, alternative ``alpha = 1``) and the seed's measured ranges.
Claims across runs are made by functions the notebook calls with the runs' results:
:func:`bias_claims` (the bias stops the decay, ``alpha = 0``, or reverses it after training,
``alpha < 0``), :func:`trained_vs_untrained_claims` (trained models forget faster),
:func:`depth_sweep_claims` (``d alpha / dL`` against the relay model's) and :func:`relay_model_claims`
(the relay model's closed form and asymptotics).

Passed-in models. ``run(config, model)`` takes any causal token :class:`analysis.zoo.protocol.ProbeModel`
(our zoo or the Hugging Face adapter). The config's architecture and training fields (``n_layers``,
``d_model``, ``n_heads``, ``norm``, ``norm_type``, ``d_mlp``, ``pos``, ``dtype``, ``trained``...) then
describe nothing and are ignored, except ``attention``, read as the kernel the model is declared to
have (only the softmax dilution-bound claim uses it). Tokens are drawn within the model's own
vocabulary (:func:`analysis.zoo.protocol.vocab_size`); ``data="corpus"`` encodes the corpus's validation
text with the model's tokenizer (:func:`analysis.zoo.protocol.encode_text`); ``P + T`` must fit the model's
positions. Only hook names the model lists are asked for: a statistic whose hooks are missing (the
pre-norm inputs of ``min_prenorm_rms``, the attention scores of ``max_logit``) is NaN and its
theorem-condition claim ``not_evaluated`` with the reason.

The probe is a package: ``config``; ``models`` (the shared recipe: the model, the pairs, the bias); ``offsets``
(the measurement); two parts (:mod:`analysis.probing.parts`), ``offsets`` (module ``laws``: the offsets' laws) and
``trajectory`` (alpha along training); ``claims`` and ``alpha_claims`` (one run's claims, over replicates the
worst identity and bound of the seeds); ``cross_run`` (claims across runs) and ``studies`` (notebook 03's designs).
"""

from __future__ import annotations

from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from analysis.probing.parts import part_of, probe_functions
from analysis.theory import prompt_forgetting as th
from probes.prompt_forgetting import (
    declarations,  # noqa: F401  (registers the declared claims)
    laws,
    trajectory,
)
from probes.prompt_forgetting.alpha_claims import _untrained_diagnosis, claim_bias_trajectory
from probes.prompt_forgetting.claims import check_claims, check_claims_over, claims
from probes.prompt_forgetting.config import NAME, Config
from probes.prompt_forgetting.cross_run import (
    SEED_UNTRAINED,
    bias_claims,
    depth_law,
    depth_law_claims,
    depth_sweep_claims,
    relay_model_claims,
    trained_vs_untrained_claims,
)
from probes.prompt_forgetting.models import (
    REPLICATES,
    _task,
    cancel_bias,
    cancel_bias_matrix,
    draw_pairs,
    model_config,
    prepare,
    train_config,
    weight_seeds,
)
from probes.prompt_forgetting.offsets import max_abs_logit, measure_offsets, relay_prediction
from probes.prompt_forgetting.studies import (
    DEPTH_LAW_LAYERS,
    DEPTH_SWEEP_LAYERS,
    REGIME_GAIN,
    REGIME_LAYERS,
    STUDIES,
    TRAIN_DATA,
    TRAIN_LAYERS,
    TRAINING,
    TRAJECTORY,
    VARIANTS,
    bias_ledgers,
    notebook_base,
    sweep_base,
    training_ledgers,
)

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
VERSION = "15"  # 15: the fields speak the model's and trainer's names (n_layers, batch_size, ...)
REQUIRES = {"causal": True, "input": "tokens"}


PARTS = tuple(part_of(m) for m in (laws, trajectory))


# run(config, model=None, progress=True): the one form of a probe made of parts; its claims over one run are
# those over replicates of one design (claims.check_claims_over: the seeds' spread, the worst identity and bound)
run, _ = probe_functions(NAME, PARTS, prepare, check_claims=check_claims)


measure = measure_offsets  # the offsets of one model (probes.prompt_forgetting.offsets.measure_offsets)

__all__ = [
    "Result",
    "DEPTH_LAW_LAYERS",
    "DEPTH_SWEEP_LAYERS",
    "DESCRIPTION",
    "NAME",
    "PARTS",
    "REGIME_GAIN",
    "REGIME_LAYERS",
    "REPLICATES",
    "REQUIRES",
    "SEED_UNTRAINED",
    "STUDIES",
    "TRAINING",
    "TRAIN_DATA",
    "TRAIN_LAYERS",
    "TRAJECTORY",
    "VARIANTS",
    "VERSION",
    "Config",
    "Ledger",
    "_task",
    "_untrained_diagnosis",
    "bias_claims",
    "bias_ledgers",
    "cancel_bias",
    "cancel_bias_matrix",
    "check_claims",
    "check_claims_over",
    "claim_bias_trajectory",
    "claims",
    "depth_law",
    "depth_law_claims",
    "depth_sweep_claims",
    "draw_pairs",
    "max_abs_logit",
    "measure",
    "model_config",
    "notebook_base",
    "relay_model_claims",
    "relay_prediction",
    "run",
    "sweep_base",
    "th",
    "train_config",
    "trained_vs_untrained_claims",
    "training_ledgers",
    "weight_seeds",
]
