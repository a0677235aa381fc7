"""Activation, gradient and Jacobian statistics across depth for every norm placement; rank collapse.

For each norm placement and depth the probe builds ``n_samples`` TinyTransformers (weight seed of
initialisation ``i``: :func:`analysis.claims.evidence.replicate_seed` ``(seed, i)``, ``seed`` itself for ``i = 0``;
trained on a Markov language through the checkpoint cache when ``trained``) and measures, in float64, on
Markov-language token batches:

* ``resid_var`` / ``resid_rms``: second moment per coordinate ``mean(x^2)`` (= variance: the
  coordinates have mean zero over the weight draw) and its square root, after the embedding
  (``pos = 0``) and after every block; ``post_ln_moment``: after a block that ends in a plain LayerNorm
  (post placement), the exact value of that second moment, ``mean_t sigma_t^2 / (sigma_t^2 + eps)`` from the
  norm's input (NaN elsewhere);
* ``branch_ratio``: mean over tokens of ``|F(x)| / |x|`` for the attention and MLP sublayers;
* ``grad_norm``: Frobenius norm of the gradient of every weight matrix (``W_q .. W_out``) per layer
  under the LM cross-entropy of the batch (next-token targets);
* ``angular_distance``: ``arccos(cos(x_{l-1,t}, x_{l,t})) / pi`` between consecutive streams;
* ``jacobian_identity_gap``: ``|J_l - I|_F / sqrt(d)`` with ``J_l = d x_{l,t} / d x_{l-1,t}`` the
  block's Jacobian at the last position ``t = T - 1`` (other positions held fixed). It is computed
  **exactly**: every block's input is made a separate autograd leaf by a hook, so one backward pass
  per output coordinate (``d`` of them, ``d <= 64``) gives row ``i`` of every block's Jacobian at
  once. At this width the exact matrix costs less than a Hutchinson estimate of useful accuracy
  and has no sampling error, which the comparison with ``m_l^{-1/2}`` needs; ``jacobian_norm`` is the same
  Jacobian's spectral norm ``|J_l|_2`` (its product over the blocks above a sublayer bounds how much that
  sublayer's update can grow on its way to ``x_L``: one piece of the Post-LN update decomposition);
* ``token_cosine`` (mean pairwise cosine of distinct tokens) and ``rank_residual`` (Dong et al.'s
  ``|X - 1 mean(X)|_{1,inf} / |X|_{1,inf}``) per stream position;
* ``attn_moment``: the attention branch's conditional second moment ``a_l`` (theory section 3),
  from the measured pattern and the attention input, for the Pre-LN sum rule.

Separately (at initialisation only), ``update_size``: DeepNorm's model update (theory section 10),
``|x_L(theta + dtheta) - x_L(theta)| / |x_L(theta)|`` of the final stream after one SGD or Adam step on
the fixed loss, for Pre-LN, Post-LN and DeepNorm at every depth, with its pieces per sublayer
(``update_step`` = ``|dtheta_i|``, ``update_effect`` = the relative change of ``x_L`` when only sublayer ``i``
moves; :func:`update_pieces`); and rank collapse at depth ``collapse_depth`` for pure attention
(no skip, MLP or norm) and for variants that add a LayerNorm after each attention (no skip), skips,
MLPs, Pre-LN or 1/sqrt(L) branch scaling,
under causal and full masks. The theory is :mod:`analysis.theory.signal_propagation`.

* ``mlp_moment`` (no norm only): ``mean_t G(q_mid,t)``, the MLP's conditional second moment
  (theory section 8), for the no-norm sum rule and its exponential growth.

With ``phase=True`` the run also measures the **attention phase diagram** at initialisation (Giorlandino & Goldt
2026): embedded tokens of pairwise cosine ``p`` through the theory's post-LN block at inverse temperatures
``beta``, against the random-energy model's finite-T laws (:mod:`probes.signal_propagation.phase`,
:mod:`analysis.theory.attention_phase`).

A **passed model** (``run(config, model)``; any token :class:`analysis.zoo.protocol.ProbeModel`, causal or
bidirectional, e.g. the Hugging Face adapter) is measured alone with the same statistics on Markov ids
within its vocabulary or on corpus text in its own tokenizer (``data``); see :func:`run_model`.

**Claims** are small functions, one per theorem or paper (:data:`CLAIMS`), that read only the result
Dataset and the config. Every claim depends on random (initialised or trained) weights, so a prediction's
band is the 95% Student-t band over the independent initialisations (:mod:`analysis.claims.evidence`): of the
per-seed values of its measurement (a mean, a paired difference, a slope fitted to each seed's own curve),
never a within-run SE of one model or of a curve averaged over seeds; it names the value a competing
hypothesis predicts.

Model-specific access is limited to hook names and ``named_parameters`` names
(``blocks.{l}.attn.W_q.weight`` ..., or any path with a layer index after ``layers``/``layer``/``h``/``blocks``).

The probe is a package of modules: ``config``; ``models`` (the sweep's models and batches); ``statistics`` (one
model's statistics); ``updates`` (DeepNorm's update, rank collapse); ``trained`` (the stability and
Curse-of-Depth runs); ``phase`` (the attention phase diagram, gate ``phase``); ``runs`` (the zoo sweep and a
passed model); the claims in ``claims_growth``, ``claims_deepnorm``, ``claims_collapse`` and ``claims_trained``
(``claims`` lists them in the ledger's order); ``studies`` (notebook 01's runs). ``runs`` declares the
measurement parts (sweep, collapse, updates, trained, phase) and ``claims`` the claims parts, one per claims
module: :data:`PARTS`, run by :func:`analysis.probing.parts.run_parts` like every probe's.
"""

from __future__ import annotations

from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from analysis.probing.parts import probe_functions
from analysis.theory import signal_propagation as th
from analysis.zoo.model import TinyTransformer
from probes.signal_propagation import (
    declarations,  # noqa: F401  (registers the declared claims)
    phase,
)
from probes.signal_propagation.claims import CLAIM_PARTS, CLAIMS, record_claims
from probes.signal_propagation.claims_collapse import claim_collapse_prevented
from probes.signal_propagation.claims_growth import (
    claim_peri_ln_linear,
    claim_pre_ln_sum_rule,
    final_moment,
    last_layer_grad,
)
from probes.signal_propagation.claims_trained import (
    claim_curse_of_depth_trained,
    claim_deepnet_stability,
    stability_outcomes,
)
from probes.signal_propagation.config import (
    COLLAPSE_VARIANTS,
    MASKS,
    NAME,
    NORM_VARIANTS,
    PARAMS,
    PRE_LIKE,
    SUBLAYERS,
    UPDATE_LR,
    UPDATE_NORMS,
    Config,
)
from probes.signal_propagation.models import (
    batch,
    build,
    corpus_batches,
    fixed_loss,
    language,
    model_config,
    model_vocab,
    task,
)
from probes.signal_propagation.runs import MEASURE_PARTS, finish, run_model
from probes.signal_propagation.statistics import (
    block_jacobians,
    jacobian_identity_gaps,
    layer_index,
    measure,
    param_names,
)
from probes.signal_propagation.studies import STUDIES, TRAINED_NORMS, TRAINED_REPLICATES, init_base, trained_base
from probes.signal_propagation.trained import (
    STABILITY_NORMS,
    ablated_loss,
    curse_measure,
    deep_share,
    stability_run,
    sum_rule_at_init,
)
from probes.signal_propagation.updates import collapse_curve, update_pieces, update_size

DESCRIPTION = "Residual variance, gradients, block Jacobians and rank collapse across depth for every norm placement."
# VERSION history: 9: post_ln_moment (the exact second moment after a post-LN block) and post_variance_unit
# against it (the 1e-3 band assumed token variances >> eps; failed at d_model = 2); 8: post_variance_unit claimed
# with skip connections only; corpus data with any vocab_size; 7: jacobian_norm (block Jacobian spectral norms)
# 10: trained runs add DeepNet stability at depth (Post-LN vs DeepNorm, no warm-up) and the Curse of Depth's
# trained variance growth and layer ablations (Pre-LN vs LayerNorm scaling)
# 11: the one band policy (95% t over per-seed values; slopes fitted per seed, not to the seed mean), replicate
# seeds hashed from (seed, i) instead of seed + i, exact Jacobians and curse measurements of 5 seeds (were 2, 3)
VERSION = "12"  # 12: the fields speak the model's and trainer's names (n_layers, batch_size, ...)
REQUIRES = {"input": "tokens"}  # a passed model (causal or not) is measured alone; None -> the zoo sweep


PARTS = MEASURE_PARTS + CLAIM_PARTS  # the measurements, then the claims in the ledger's order
# run(config, model=None, progress=True) and check_claims(result): the one form of a probe made of parts; tiny
# models and batches measure on one thread (faster, and the machine is shared)
run, check_claims = probe_functions(NAME, PARTS, finish=finish, threads=1)


__all__ = [
    "Result",
    "TinyTransformer",
    "claim_collapse_prevented",
    "claim_peri_ln_linear",
    "claim_pre_ln_sum_rule",
    "final_moment",
    "last_layer_grad",
    "claim_curse_of_depth_trained",
    "claim_deepnet_stability",
    "stability_outcomes",
    "PRE_LIKE",
    "UPDATE_LR",
    "model_vocab",
    "jacobian_identity_gaps",
    "STABILITY_NORMS",
    "curse_measure",
    "stability_run",
    "sum_rule_at_init",
    "CLAIMS",
    "COLLAPSE_VARIANTS",
    "Config",
    "DESCRIPTION",
    "Ledger",
    "MASKS",
    "NAME",
    "NORM_VARIANTS",
    "PARAMS",
    "REQUIRES",
    "STUDIES",
    "SUBLAYERS",
    "TRAINED_NORMS",
    "TRAINED_REPLICATES",
    "UPDATE_NORMS",
    "VERSION",
    "PARTS",
    "finish",
    "ablated_loss",
    "batch",
    "block_jacobians",
    "build",
    "check_claims",
    "collapse_curve",
    "corpus_batches",
    "deep_share",
    "fixed_loss",
    "init_base",
    "language",
    "layer_index",
    "measure",
    "model_config",
    "param_names",
    "phase",
    "record_claims",
    "run",
    "run_model",
    "task",
    "th",
    "trained_base",
    "update_pieces",
    "update_size",
]
