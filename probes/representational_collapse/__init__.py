"""Representational collapse: near-identical sequences whose last-token states converge; precision; over-squashing.

Protocol (Barbero et al. 2024, "Transformers need glasses!"). For each of ``n_bases`` samples and each
length ``n`` on a log grid ``min_len .. max_len`` build a pair of sequences (:mod:`analysis.data.tasks`):

``repeat_last``  a random base of ``n`` tokens, and the same base with its last token repeated;
``counting``     ``k = n`` ones then a zero, against ``k + 1`` ones then a zero (a random (one, zero)
                 token pair per sample);
``early_token``  a random base of ``n`` tokens, and a copy with token ``early_position`` replaced.

With ``separator_every > 0`` both members get a separator token (the last id of the vocabulary, never
used elsewhere) after every ``separator_every`` tokens (the paper's mitigation). Both members of a
pair go through the model in one batch (right-padded: the model is causal, so padding after the
read-out position changes nothing), and the final-layer last-token state ``h`` (``hook_resid_post`` of
the last block, before the final norm) is read at each member's own last position.

Measured: ``distance[dtype, n]`` = geometric mean over samples of ``|h_a - h_b|`` with the model run in
each dtype (float64 is always run: the reference); the decay rate ``slope`` = alpha of
``distance ~ n^-alpha`` fitted on the float64 distances over ``[fit_lo, max_len]`` with a percentile
bootstrap over samples (:mod:`analysis.claims.fitting`); the predicted alpha
(:mod:`analysis.theory.representational_collapse`).
Precision: ``resolution = eps(dtype) |h|`` (the Euclidean size of a one-ulp-per-coordinate step, see the
theory module) and ``collapse_n[dtype]``, the first ``n`` from which the float64 distance stays below it;
then, run in that dtype, whether the next-token argmax of the two sequences coincides
(``argmax_equal[dtype, n]``, fraction of samples) and whether the states are bitwise equal
(``identical[dtype, n]``). Weights in a low-precision run are the same float64 draws (or trained float32
weights) rounded to the dtype.

Over-squashing: ``sensitivity[layer, position]`` = ``|d h^l_last / d x_i|_F`` by autograd with respect to
``hook_embed`` (float64 copy of the model, a random base of ``sens_len`` tokens, one backward pass per
layer using a batch of ``d`` copies, one output coordinate each). Beside it the path count of ``L``
uniform layers with identity value maps (theory, a multiple of sqrt(d)) and, for uniform attention
without norm or MLP, the exact Jacobian of the linear stack with the model's own ``W_o W_v``.
``rank_residual[depth]``: Dong et al.'s ratio ``|X - 1 mean X|_{1,inf} / |X|_{1,inf}`` of the float64
states of the longest first sample, depth 0 = the input of block 0.

Depth: ``layer_distance[layer, n]`` (float64, every block's ``hook_resid_post``) and its fitted exponent
per layer against the prediction the one-layer rates give at that depth (theory module, item 6).
Effective float floor: ``divergence[dtype, n]`` = median over samples of ``|(h~_a - h~_b) - (h_a - h_b)|``
(the dtype's pair difference against float64's); its exponent against ``n`` is compared with the
rounding model of the theory module (``n``-independent for random bases, ``a + b sqrt(n)`` for the
coherent counting prefix). A format whose ``eps |h|`` the float64 distance never reaches within
``max_len`` is reported as a bound ("no collapse up to max_len") with the collapse length the fitted
power law extrapolates to.

Passed-in models (any token :class:`analysis.zoo.protocol.ProbeModel`, e.g. the Hugging Face adapter): the
model is copied and cast per dtype; token ids are drawn below ``vocab_size(model)`` (the last id is the
separator); sequences longer than ``max_positions(model)`` are refused; only the guaranteed hook names
(``hook_embed``, ``blocks.{l}.hook_resid_pre/post``) are used. A bidirectional model is measured the same
way (padding keys hidden by a ``-inf`` attention bias), but the claims derived for causal softmax
(predicted slopes, depth rates, path counting) are recorded as not evaluated. The positional encoding
of a passed model is taken as learned absolute when it has a position limit, else ``config.model.pos``.

The probe is a package of parts (:mod:`analysis.probing.parts`), one module each, in the order of their claims:
``linear_stack`` (the exact uniform stack), ``distances`` (the decay rate per layer), ``oversquashing``
(sensitivity against path counting), ``precision`` (collapse lengths and the float floor) and ``extension`` (the
collapse beyond ``max_len``); ``models`` is the shared recipe, ``sequences`` the protocol's pairs and distances,
``bands`` the claims' bands and ``studies`` the notebook's designs.
"""

from __future__ import annotations

from analysis.claims.evidence import replicate_seed
from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from analysis.probing.parts import judge, part_of, probe_functions
from analysis.theory import representational_collapse as th
from probes.representational_collapse import (
    declarations,  # noqa: F401  (registers the declared claims)
    distances,
    extension,
    linear_stack,
    oversquashing,
    precision,
)
from probes.representational_collapse.config import (
    BIDIRECTIONAL,
    EXTENSION_FIELDS,
    LOW_DTYPES,
    REPLICATES,
    SEED,
    SOURCE,
    Config,
    extension_lengths,
)
from probes.representational_collapse.distances import fit_rates, half_window_drift, rate_alternative
from probes.representational_collapse.extension import collapse_prediction, measure_extension
from probes.representational_collapse.linear_stack import uniform_matrices, uniform_stack_error
from probes.representational_collapse.models import (
    build_models,
    check_length,
    model_config,
    model_pos,
    model_vocab,
    prepare,
    protocol_width,
    seq_bound,
    train_config,
)
from probes.representational_collapse.oversquashing import sensitivity
from probes.representational_collapse.precision import floor_fits, precision_measures
from probes.representational_collapse.sequences import draw_samples, lengths, make_pair, measure_distances, pad_bias
from probes.representational_collapse.studies import (
    CHEAP,
    EXTEND,
    SENSITIVITY_DEPTHS,
    SEPARATOR_EVERY,
    STUDIES,
    UNIFORM,
    main_designs,
    notebook_base,
    position_designs,
    sensitivity_designs,
    trained_designs,
)

NAME = "representational_collapse"
DESCRIPTION = (
    "Representational collapse: last-token distance of near-identical sequences vs length, precision, over-squashing."
)
VERSION = "8"  # 8: the fields speak the model's and trainer's names (n_layers, ...);
# 7: the one band policy (95% Student-t bands, S - 1 dof over the bases)
REQUIRES = {"input": "tokens"}

PARTS = tuple(part_of(m) for m in (linear_stack, distances, oversquashing, precision, extension))


def check_claims(result: Result) -> Ledger:
    """The ledger of ``result`` alone: every claim below, its band the within-run SE of its one model."""
    return check_claims_over((result,))


# run(config, model=None, progress=True): the one form of a probe made of parts
run, _ = probe_functions(NAME, PARTS, prepare, check_claims=check_claims)


def check_replicates(results) -> tuple[Result, ...]:
    """``results`` as a tuple of replicates of one design: the same configuration apart from the seed and the
    extension (measured on the first only, :func:`replicate_config`); ``ValueError`` otherwise."""
    rs = tuple(results)
    if not rs:
        raise ValueError("results must hold at least one result")
    ext = {f: rs[0].config.value_of(f) for f in EXTENSION_FIELDS}
    design = rs[0].config.replace(seed=0, **ext)
    for i, r in enumerate(rs[1:], start=1):
        if r.probe != NAME or r.config.replace(seed=0, **ext) != design:
            raise ValueError(f"results[{i}] is not a replicate of results[0] (configs differ beyond seed, extension)")
    if len({r.config.seed for r in rs}) != len(rs):
        raise ValueError("results must have distinct seeds (independent replicates)")
    return rs


def replicate_config(config: Config, index: int) -> Config:
    """Replicate ``index`` of ``config`` (:mod:`analysis.probing.replicates`): its own seed; the extension beyond
    ``max_len`` is measured on replicate 0 only (its claim checks that model's collapse against its own fit)."""
    default = Config()
    ext = {f: default.value_of(f) for f in EXTENSION_FIELDS}
    return config.replace(seed=replicate_seed(config.seed, index), **ext)


def check_claims_over(results) -> Ledger:
    """The ledger of replicates of one design (:mod:`analysis.probing.replicates`): each part's claims measured on every
    replicate, its band the spread over the seeds (with one result: :func:`check_claims`)."""
    return judge(NAME, PARTS, check_replicates(results))


__all__ = [
    "BIDIRECTIONAL",
    "CHEAP",
    "DESCRIPTION",
    "EXTEND",
    "EXTENSION_FIELDS",
    "LOW_DTYPES",
    "NAME",
    "PARTS",
    "REPLICATES",
    "REQUIRES",
    "SEED",
    "SENSITIVITY_DEPTHS",
    "SEPARATOR_EVERY",
    "SOURCE",
    "STUDIES",
    "UNIFORM",
    "VERSION",
    "Config",
    "build_models",
    "check_claims",
    "check_claims_over",
    "check_length",
    "check_replicates",
    "collapse_prediction",
    "draw_samples",
    "extension_lengths",
    "fit_rates",
    "floor_fits",
    "half_window_drift",
    "lengths",
    "main_designs",
    "make_pair",
    "measure_distances",
    "measure_extension",
    "model_config",
    "model_pos",
    "model_vocab",
    "notebook_base",
    "pad_bias",
    "position_designs",
    "precision_measures",
    "protocol_width",
    "rate_alternative",
    "replicate_config",
    "run",
    "sensitivity",
    "sensitivity_designs",
    "seq_bound",
    "th",
    "train_config",
    "trained_designs",
    "uniform_matrices",
    "uniform_stack_error",
]
