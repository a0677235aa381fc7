"""Softmax and its alternatives: how the normalisation of a read shapes what a tiny network computes.

Theory: :mod:`analysis.theory.softmax_alternatives` (float64 closed forms and quadratures, tested against Monte
Carlo and exact cases); the zoo's ``activation="softmax"`` (softmax over an MLP's hidden units) of
:mod:`analysis.zoo.model`.

1. Slot count (seed 000#40, Shen et al. 2023). The MLP is a key-value memory: keys the rows of ``W_in``, values the
   columns of ``W_out``. At initialisation (the zoo's gpt2 init: keys N(0, std^2), values N(0, std^2 / 2), inputs
   on the sphere of radius sqrt(d)) the output's second moment is ``m b^2 E[sum_i f_i^2]``: ``n s^2 / 2`` per unit
   value variance with ReLU (it grows with the slot count n), ``E[sum_i p_i^2] ~ e^{s^2} / n`` with softmax over the
   slots (it shrinks). Measured: the mean ``|o|^2`` over ``memory_batch_size`` inputs of ``memory_seeds`` independent
   memories per slot count (ReLU and softmax share the weights of a seed); claimed: each activation's slope in
   ``ln n`` (the other's as the alternative) and the softmax memory's concentration factor (the alternative: the
   ``1/n`` of uniform weights).
2. A planted key under sparsemax (seed 000#29). One random attention layer (fan-in init, one head, float64) over
   Gaussian tokens, each row seeing n keys, one of them planted with a logit bias ``sparse_gap``. Given the
   weights and the query, the other logits are i.i.d. N(0, s_i^2) with ``s_i = c |W_k^T q_i|``, so sparsemax
   gives the planted key weight exactly 1 with probability ``int phi(u) Phi(u + (g - 1)/s_i)^(n-1) du``; claimed:
   the isolated fraction against that probability row by row (the alternative: isolation at every n, as with
   distractors at their mean logit), and the zoo's sparsemax against a float64 reference projection. Softmax's
   planted weight is measured beside it (never exactly 1), and the mass it leaves on the distractors (seed 004#5:
   softmax cannot fully remove irrelevant information) against its exact law at each row's planted logit and logit
   std (section 4's quadrature; the alternative 0: selective sparsity) and its growth with n.
3. K-interval softmax (seed 000#16). The same kind of random layer with each row's exponential read off K + 1 grid
   values between its largest and smallest logit (``attention="k_interval"``), rounded or linearly interpolated,
   against exact softmax on the same logits: every row's L1 error against its derived bound (``e^h - 1`` rounded,
   ``r(h) - 1 ~ h^2/8`` interpolated, ``h = (max - min)/K``), and the mean error's order in K (-1 and -2, each the
   other's alternative).

4. Mimetic initialisation (seed 000#115). The same kind of random softmax layer with the zoo's ``init="mimetic"``
   (``W_q^T W_k = alpha Z + beta I``) over n Gaussian tokens, each row seeing all of them: the mean weight of a token
   on itself, per beta, against the exact quadrature at each row's own logit ``a_i`` and the std ``s_i`` of its
   others (given the weights and the query they are i.i.d. N(0, s_i^2)); the alternatives: a random product (the
   own logit like any other) and, at the largest beta, the mean-field formula ``1/(1 + (n - 1) e^{s^2/2 - a})``
   (Jensen's lower bound).
5. The kernel's Jacobian (seed 000#23). A random layer with the diagonal hidden (each row sees n keys, i.i.d. logits
   given the query) at logit scales s: the mean Frobenius norm of the Jacobian of the zoo's kernel on the row's
   logits (autograd), softmax and ``attention="sa_softmax"`` (``z * softmax(z)``), against the two-key law at each
   row's effective scale ``s sigma_i`` (softmax's mean falls like 1/s, SA-Softmax's stays of order 1); the
   alternatives: the typical row's ``e^{-s delta}`` (softmax) and softmax's law (SA-Softmax).
6. Linear attention's weights (seed 003#74). Gaussian queries, each over its own n Gaussian keys (unit
   coordinates): the entropy deficit ``ln n - H`` of the elu + 1 weights ``phi(q) . phi(k_j) / sum`` (the zoo's
   ``feature_map``) against its exact expectation given the query (theory section 6, paired per row); the
   alternative: softmax's deficit on the same logits ``q . k / sqrt(d)`` (also measured, and exact).
7. The Taylor feature map (seed 000#51). The same rows with ``phi(q) . phi(k) = 1 + z + z^2/2``: the fraction of key
   pairs it orders against their logits, against ``Phi(-sqrt(2)/sigma_i)`` (alternative 0: monotone like softmax's
   exp), and its entropy deficit against its exact law (alternative: softmax's on the same logits).
8. The linearity of an MLP sublayer (seed 003#37), 9. a trained bilinear MLP's spectrum (seed 003#57) and 10. token
   isolation at initialisation (seed 000#118): see their modules.
11. The denominator of linear attention (seed 003#31). A random head with identity features over Gaussian tokens:
   the normalised read-out ``y / D`` (``D = c q . sum_j k_j`` crosses zero) has tail index 1 and its query gradient
   1/2 (theory section 11), read off by Hill's estimator (alternatives: the numerator's light tail, and 1);
   TransNormer's NormAttention (``sqrt(d_v) y / |y|``) is measured beside them.
12. Softplus over the l1 norm (seed 000#85). A random head with ``attention="softplus_l1"`` at logit scales s, each
   row hiding its own key: the rows' entropy deficit ``ln n - H`` against its exact law at each row's logit spread
   (theory section 12; it tends to ``(ln 4 pi - gamma)/2`` at large s), softmax's deficit the alternative.
13. Shaped attention at initialisation (seed 004#82). Skipless attention-only stacks with ``W_q = 0``: the mean token
   correlation of the token kernel, causal softmax's (exactly the ``C^L (C^L)^T`` law, theory section 13) against
   shaped attention's (0: every layer the identity, an identity claim), each the other's alternative.
14. Sigmoid attention's row mass (seed 004#109). A random head with ``attention="sigmoid"`` and bias ``-ln n``, each
   row hiding its own key: the mean weight mass against its exact law (theory section 14; the alternative: softmax's
   1) and its slope in ln n (the alternative: b = 0's n/2, slope 1).
15. Cog attention at initialisation (seed 004#28). Skipless attention-only stacks with random queries: Cog attention's
   SignExp weights make every layer odd in each token (an identity claim: flipping tokens' signs flips exactly their
   outputs), so the mean token correlation of the token kernel is 0 at every depth (theory section 15), where softmax
   on the same weights collapses the tokens (the alternative).
16. Sublayers in parallel (seed 000#96). A random pre-LN zoo stack: each block's MLP fed the block input (a parallel
   block) instead of the mid-block stream; the mean squared change of its output against the exact law given each
   token's two inputs (theory section 16; the alternative: no change), and its slope in ln(block index) relative to the
   output (the alternative: a depth-independent cost).
17. Persistent memory vectors (seed 004#90). A random softmax head whose context rows also see N persistent vectors
   (scale r): the share of a row's weight on the memory against its exact law at the row's logit spread (theory
   section 17; the alternative: exchangeable keys' N/(N + T)) and its slope in ln T (the alternative: a
   length-independent contribution, like the feed-forward layer the memory replaces).

Replicates: memory (layer) i draws its inputs and weights from :func:`analysis.claims.evidence.replicate_seed` ``(seed,
i)``;
every claim takes its 95% Student-t band from the spread of the per-memory values (:mod:`analysis.claims.evidence`).

The probe is a package of parts (:mod:`analysis.probing.parts`), one module each, in the order of their claims:
``memory``,
``sparse``, ``k_interval``, ``mimetic``, ``jacobian``, ``features``, ``taylor``, ``linearity``, ``bilinear``,
``isolation``, ``denominator``, ``softplus``, ``shaped``, ``sigmoid``, ``cog``, ``parallel`` and ``persistent``;
``models`` holds
the random layer they share and ``config`` the configuration.
"""

from __future__ import annotations

from analysis.probing.base import Result
from analysis.probing.parts import part_of, probe_functions
from probes.softmax_alternatives import (
    bilinear,
    cog,
    declarations,  # noqa: F401  (registers the declared claims)
    denominator,
    features,
    isolation,
    jacobian,
    k_interval,
    linearity,
    memory,
    mimetic,
    parallel,
    persistent,
    shaped,
    sigmoid,
    softplus,
    sparse,
    taylor,
)
from probes.softmax_alternatives.config import NAME, Config
from probes.softmax_alternatives.memory import ACTIVATIONS, memory_model, predicted_moment, sphere_inputs
from probes.softmax_alternatives.references import (
    SEED_BILINEAR,
    SEED_COG,
    SEED_DENOMINATOR,
    SEED_FEATURES,
    SEED_INTERVAL,
    SEED_IRRELEVANT,
    SEED_ISOLATION,
    SEED_JACOBIAN,
    SEED_LINEARITY,
    SEED_MIMETIC,
    SEED_PARALLEL,
    SEED_PERSISTENT,
    SEED_SHAPED,
    SEED_SIGMOID,
    SEED_SLOTS,
    SEED_SOFTPLUS,
    SEED_SPARSE,
    SEED_TAYLOR,
    SOURCE,
)

DESCRIPTION = (
    "Softmax alternatives: ReLU and softmax key-value memories (the MLP's output against its slot count at "
    "initialisation), sparsemax's isolation of a planted key among random ones, K-interval softmax's error, "
    "mimetic init, SA-Softmax's Jacobian, linear attention's feature maps, an MLP sublayer's linearity with and "
    "without its skip connection, a trained bilinear MLP's spectrum, a softmax layer's weight collision against the "
    "sequence length, the heavy tails of linear attention's denominator and softplus_l1 attention's bounded entropy "
    "deficit, the token kernel of skipless softmax, shaped-attention and Cog-attention stacks, sigmoid attention's "
    "row mass, the cost of a pre-norm block's sublayers run in parallel and persistent memory vectors' share of the "
    "attention, against closed forms and bounds."
)
VERSION = "17"  # 17: the two-key Jacobian law integrates the gap over [0, 12] below s = 5 (accurate to s -> 0)
REQUIRES = None  # builds its own models

PARTS = tuple(
    part_of(m)
    for m in (
        memory,
        sparse,
        k_interval,
        mimetic,
        jacobian,
        features,
        taylor,
        linearity,
        bilinear,
        isolation,
        denominator,
        softplus,
        shaped,
        sigmoid,
        cog,
        parallel,
        persistent,
    )
)

# run(config, model=None, progress=True) and check_claims(result): the one form of a probe made of parts;
# tiny float64 models measure on one thread (fastest, and it fixes the reduction order)
run, check_claims = probe_functions(NAME, PARTS, threads=1)


__all__ = [
    "ACTIVATIONS",
    "DESCRIPTION",
    "NAME",
    "PARTS",
    "REQUIRES",
    "SEED_BILINEAR",
    "SEED_COG",
    "SEED_DENOMINATOR",
    "SEED_FEATURES",
    "SEED_INTERVAL",
    "SEED_IRRELEVANT",
    "SEED_ISOLATION",
    "SEED_JACOBIAN",
    "SEED_LINEARITY",
    "SEED_MIMETIC",
    "SEED_PARALLEL",
    "SEED_PERSISTENT",
    "SEED_SHAPED",
    "SEED_SIGMOID",
    "SEED_SLOTS",
    "SEED_SOFTPLUS",
    "SEED_SPARSE",
    "SEED_TAYLOR",
    "SOURCE",
    "VERSION",
    "Config",
    "Result",
    "check_claims",
    "memory_model",
    "predicted_moment",
    "run",
    "sphere_inputs",
]
