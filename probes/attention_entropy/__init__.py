"""Attention entropy: against context length and logit scale, dilution, SSMax and sigmoid, and in training.

Four measurements, each beside its closed form in :mod:`analysis.theory.attention_entropy`:

1. Untrained model (or any token model passed in), context lengths ``n`` in ``ctx_lens``. The input
   (``data``) is ``max(ctx_lens)`` *distinct* random token ids (no two keys share an embedding) or
   held-out corpus text in the model's own encoding. In a causal model row ``n - 1`` sees exactly the
   first ``n`` keys, so one forward pass gives every context length (a row of a longer sequence *is*
   the last row of the shorter one); per ``n`` the values are averaged over the ``rows_per_n`` rows
   ending at ``n`` (their n differ by < rows_per_n / n). A bidirectional model (an encoder) gets one
   forward pass per ``n`` on the first ``n`` tokens; every row then sees ``n`` keys and the values are
   averaged over all ``n`` rows. For every layer, head and query row, from ``hook_attn_scores`` (reduced
   inside the hook in float64, a block of rows at a time; no pattern is cached): entropy ``H``,
   ``H / ln n`` and the largest weight (softmax/ssmax kernels; for sigmoid the weights are not a
   distribution and only logits are kept), the logit standard deviation over the row's keys, the row's
   logit range and its largest |logit| ``M``. Theory: ``ln n - s^2/2`` and the exact Gaussian
   quadrature at the *measured* ``s`` (own untrained models on distinct tokens); on every row the
   range bound ``ln(1 + (n-1) e^{-R})``, the dilution bound ``max p <= e^M / (e^M + (n-1) e^{-M})`` and
   (zoo layout, pre-LN, no QK-norm/RoPE) the spectral bound with ``||W_q^T W_k||_2``. Own models on
   distinct tokens are repeated over ``replicates`` independent models (weights and tokens, replicate seeds): the
   spread of the per-model values is the uncertainty of the Gaussian-entropy predictions (95% t band).
2. Logit-scale sweep: the same measurement with ``logit_scale = f / sqrt(dh)`` for ``f`` in
   ``scale_factors`` at ``n = sweep_len`` (every replicate model); the breakdown ``n e^{-s^2} = 1`` and
   freezing ``s^2 = 2 ln n``, past which the exact Gaussian entropy is predicted and the LLN law is not.
3. Planted key: a one-layer, one-head, attention-only float64 network whose only logit is ``g`` from
   query ``i`` to key 0 (zero to every other key), for softmax, ssmax and sigmoid; the weight on key 0
   in row ``n - 1`` (n up to ``planted_max_n``) against the exact closed forms, and the SSMax fading
   rate ``d ln w / d ln n`` fitted over the top half-decade for every ``s g`` in ``fade_sg`` (the drift
   from the half-decade below is its uncertainty), against ``min(sg - 1, 0)``.
4. Trained tiny LMs (``training=true``) through :func:`analysis.training.train.train` (cached, with a named
   callback): for every learning rate in ``train_lrs``, QK-norm setting in ``qk_norm`` and training seed
   (``train_seeds``: weights and data order; the spread is the training claims' uncertainty), per update the
   largest |attention logit| and the smallest head-mean normalised entropy on a fixed probe batch,
   with loss spikes counted from the training loss; per head the same two traces; on each trained
   checkpoint (without QK-norm) the spectral entropy bound on every row of the probe batch.

5. Without nonlinearities (``nonlin=true``, seed 004#30): a deeper model (``nonlin_n_layers`` x ``nonlin_d_model``)
   trained on the training sweep's task at ``nonlin_lr`` in two variants, standard (Pre-LN, GELU) and without
   LayerNorm (none, no final norm either) and with the identity activation, ``nonlin_seeds`` seeds each. At
   initialisation and after training, per layer and head, the mean ``H / ln n`` over the rows of the probe batch,
   the logit std and the i.i.d.-Gaussian entropy predicted at the layer's pooled std and at each row's own std.

6. Trained retrieval at longer contexts (``retrieval=true``, seed 000#6): one-layer, one-head, attention-only
   models with softmax and with SSMax (``s = 1 / ln(retrieval_len + 1)``: the same function as softmax at the
   training length) trained on :class:`analysis.data.tasks.PlantedKeyRetrieval` at ``retrieval_len`` pairs
   (``retrieval_seeds`` seeds) and tested at ``retrieval_len x retrieval_factors`` pairs: the weight of the query
   row on the planted key, its prediction at every length from the logit gaps measured at the training length
   (:func:`analysis.theory.attention_entropy.retrieval_weight`), the fitted log-log slopes and the accuracy.
   Trained sigmoid attention (``training=true``, seed 000#17): softmax, sigmoid with ``b = -ln T`` and with
   ``b = 0`` on the training sweep's task, model, steps and seeds at ``sigmoid_lr``; their final losses.

Passed-in models: anything satisfying :class:`analysis.zoo.protocol.ProbeModel` with token input and
``blocks.{l}.attn.hook_attn_scores`` hook points (our zoo, the Hugging Face adapter). ``attention`` then
names the passed model's kernel (softmax for every Hugging Face model). The logit-scale sweep and the
Gaussian comparison are for own models only; the bounds are checked on whatever is measured.

Claims (:func:`record_claims`): one function per theorem or paper, each reading only the result.

The probe is a package of parts (:mod:`analysis.probing.parts`), one module each, in the order of their claims:
``fading``, ``rows``, ``gaussian``, ``sigmoid``, ``training`` (gate ``trained``), ``nonlin`` (gate ``nonlin``),
``retrieval`` (gate ``retrieval``) and ``sigmoid_trained`` (gate ``trained``); ``models`` is the shared recipe
(the model measured at initialisation and its tokens).
"""

from __future__ import annotations

from analysis.probing.parts import part_of, probe_functions
from analysis.zoo.model import TinyTransformer
from probes.attention_entropy import (
    declarations,  # noqa: F401  (registers the declared claims)
    fading,
    gaussian,
    nonlin,
    retrieval,
    rows,
    sigmoid,
    sigmoid_trained,
    training,
)
from probes.attention_entropy.config import Config
from probes.attention_entropy.fading import (
    claim_planted_closed_forms,
    claim_ssmax_fading_rate,
    fade_fits,
    measure_planted,
)
from probes.attention_entropy.gaussian import claim_gaussian_entropy, claim_gaussian_past_breakdown
from probes.attention_entropy.models import distinct_tokens, model_config, prepare
from probes.attention_entropy.nonlin import (
    COLLAPSED,
    OVERLOADED,
    STATES,
    VARIANTS,
    claim_nonlin_gaussian,
    layer_entropy_stats,
    nonlin_model_config,
    nonlin_thirds,
)
from probes.attention_entropy.retrieval import (
    RETRIEVAL_KERNELS,
    claim_retrieval_accuracy,
    claim_retrieval_slopes,
    retrieval_factor,
    retrieval_gaps,
    retrieval_model_config,
    retrieval_rows,
    retrieval_task,
)
from probes.attention_entropy.rows import (
    claim_dilution_bound,
    claim_range_bounds,
    claim_softmax_dilution_rate,
    measure_rows,
)
from probes.attention_entropy.shared import fit_log_slope, spectral_bound_rows
from probes.attention_entropy.sigmoid import claim_sigmoid_row_totals
from probes.attention_entropy.sigmoid_trained import claim_sigmoid_trained
from probes.attention_entropy.training import (
    claim_entropy_collapse,
    claim_qknorm,
    claim_spectral_bound_trained,
    loss_spikes,
)

NAME = "attention_entropy"
DESCRIPTION = "Attention entropy vs context length and logit scale; dilution, SSMax, sigmoid; collapse in training."
# VERSION history: 8: the one band policy (analysis.claims.evidence: 95% Student-t bands over independent replicates,
# replicate i seeded by replicate_seed(seed, i), no longer seed + i; within-run only for the exact planted network),
# 5 seeds / replicate models by default (were 3, 4);
# 7: trained planted-key retrieval at longer contexts, softmax vs SSMax (000#6), and trained
# sigmoid attention against softmax (000#17), with their claims; 6: the nonlinearity comparison (004#30: with and
# without LayerNorm and GELU) and its claims;
# 5: sigmoid row totals at initialisation (b = 0 and b = -ln n) with their claims; 4:
# Gaussian-entropy claims not evaluated past the quadrature's reach (were NaN fails); 3: claims ledger roles;
# replicate models, training seeds, SSMax fading away from s g = 1
VERSION = "9"  # 9: the fields speak the model's and trainer's names (n_layers, batch_size, ...)
REQUIRES = {"input": "tokens"}

PARTS = tuple(part_of(m) for m in (fading, rows, gaussian, sigmoid, training, nonlin, retrieval, sigmoid_trained))


# run(config, model=None, progress=True) and check_claims(result): the one form of a probe made of parts
run, check_claims = probe_functions(NAME, PARTS, prepare)


__all__ = [
    "TinyTransformer",
    "spectral_bound_rows",
    "claim_planted_closed_forms",
    "claim_ssmax_fading_rate",
    "COLLAPSED",
    "DESCRIPTION",
    "NAME",
    "OVERLOADED",
    "PARTS",
    "REQUIRES",
    "RETRIEVAL_KERNELS",
    "STATES",
    "VARIANTS",
    "VERSION",
    "Config",
    "check_claims",
    "claim_dilution_bound",
    "claim_entropy_collapse",
    "claim_gaussian_entropy",
    "claim_gaussian_past_breakdown",
    "claim_nonlin_gaussian",
    "claim_qknorm",
    "claim_range_bounds",
    "claim_retrieval_accuracy",
    "claim_retrieval_slopes",
    "claim_sigmoid_row_totals",
    "claim_sigmoid_trained",
    "claim_softmax_dilution_rate",
    "claim_spectral_bound_trained",
    "distinct_tokens",
    "fade_fits",
    "fit_log_slope",
    "layer_entropy_stats",
    "loss_spikes",
    "measure_planted",
    "measure_rows",
    "model_config",
    "nonlin_model_config",
    "nonlin_thirds",
    "retrieval_factor",
    "retrieval_gaps",
    "retrieval_model_config",
    "retrieval_rows",
    "retrieval_task",
    "run",
]
