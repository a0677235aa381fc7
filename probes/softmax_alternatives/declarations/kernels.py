"""The declared claims of ``softmax_alternatives``: the slot count, sparsemax, the K-interval softmax, mimetic
initialisation and the kernel's Jacobian (items 1-5)."""

from analysis.claims.specs import ClaimSpec
from probes.softmax_alternatives.declarations.common import RANDOM_ROWS
from probes.softmax_alternatives.memory import HYP_EQUIVALENT
from probes.softmax_alternatives.references import SOURCE

_MEMORY = (
    "by construction: at initialisation (the zoo's gpt2 init) keys and values are independent zero-mean Gaussians, "
    "biases 0, inputs on the sphere of radius sqrt(d), as the closed form assumes; the paper's trained memories are "
    "not tested"
)

SPECS = (
    # --- 1. slot count (000#40) ------------------------------------------------------------------------
    ClaimSpec(
        name="memory_{activation}_slot_slope",
        tests="derivation",
        comparison="law",
        paper="000#40",
        statement="«Softmax and ReLU use different normalization methods over elements which lead to different "
        "variances of results». Our closed form at init: E|o|^2 = m b^2 E[sum_i f_i^2], slope +1 in ln n with ReLU "
        "(n s^2 / 2), near -1 with softmax over the slots (-> e^(s^2)/n).",
        scope=_MEMORY,
        quantity="least-squares slope of ln(mean |o|^2) on ln n (dimensionless)",
        hypothesis=HYP_EQUIVALENT,
        figure="sa_memory_slots",
        full=True,
    ),
    ClaimSpec(
        name="memory_softmax_concentration",
        tests="derivation",
        comparison="prediction",
        paper="000#40",
        statement="Our closed form for the softmax memory at init: E[sum_i p_i^2] = n int t chi(t) phi(t)^(n-1) dt "
        "(-> e^(s^2)/n), the weights concentrated on the larger logits, not uniform weights' 1/n; so E|o|^2 = m b^2 "
        "E[sum_i p_i^2].",
        scope=_MEMORY,
        quantity="measured over closed-form E|o|^2, mean over n (ratio; 1 expected)",
        source=f"{SOURCE}: E[sum p_i^2] = n int t chi(t) phi(t)^(n-1) dt (-> e^(s^2)/n)",
        hypothesis="softmax weights average the slots: E[sum p_i^2] = 1/n, no concentration on the larger logits",
        figure="sa_memory_slots",
        full=True,
    ),
    # --- 2. sparsemax and a planted key (000#29, 004#5) ----------------------------------------------------
    ClaimSpec(
        name="sparsemax_kernel_is_simplex_projection",
        tests="software",
        comparison="identity",
        paper="000#29",
        statement="The zoo's sparsemax attention equals a float64 reference Euclidean projection of the logits onto "
        "the simplex, max(z - tau, 0) with tau from the sorted logits' cumulative sums, on every measured row.",
        quantity="max |weight difference| in units of n max|z|",
        source=f"{SOURCE}: sparsemax(z) = max(z - tau, 0), tau from the sorted logits' cumulative sums",
        figure="sa_sparse_isolation",
    ),
    ClaimSpec(
        name="sparsemax_isolation_vs_keys",
        tests="derivation",
        comparison="law",
        paper="000#29",
        statement="Sparse attention can «assign exact zeros to irrelevant tokens». Our exact law: sparsemax gives a "
        "planted key (logit gap g) weight exactly 1 iff it beats every distractor by 1, with probability int phi(u) "
        "Phi(u + (g - 1)/s)^(n-1) du, falling with n.",
        scope=RANDOM_ROWS,
        quantity="fraction of rows whose planted key has weight exactly 1",
    ),
    ClaimSpec(
        name="softmax_irrelevant_mass_exact",
        tests="derivation",
        comparison="law",
        paper="004#5",
        statement="004#5 names softmax's inability to fully remove irrelevant information, mitigated by «completely "
        "removing irrelevant keys from the attention softmax». Our exact law: 1 - E[p_planted] = (n-1) int e^(-t e^a) "
        "psi_s(t) phi_s(t)^(n-2) dt > 0 at each row's a and s.",
        scope=RANDOM_ROWS,
        quantity="irrelevant mass 1 - p_planted (share of a row's weight)",
    ),
    ClaimSpec(
        name="softmax_irrelevant_mass_grows_with_length",
        tests="derivation",
        comparison="law",
        paper="004#5",
        statement="Our law for 004#5's failure to remove irrelevant information: softmax's mass on the irrelevant "
        "keys grows with their number n at the exact law's slope in ln n (-> 1 while the planted key dominates: "
        "(n - 1) e^(s^2/2 - a)).",
        scope=RANDOM_ROWS,
        quantity="least-squares slope of ln(mean irrelevant mass) on ln n",
    ),
    # --- 3. K-interval softmax (000#16) ------------------------------------------------------------------
    ClaimSpec(
        name="k_interval_{mode}_error_bound",
        tests="derivation",
        comparison="bound",
        paper="000#16",
        statement="K-interval attention «approximates the exponential using K+1 grid values». Our bound: each key's "
        "ratio to its exponential lies in [a, b], so a row's sum_i |dp_i| <= b/a - 1: e^h - 1 rounded, r(h) - 1 "
        "(~ h^2/8) interpolated, h = (max - min logit)/K.",
        scope="by construction: exact algebra on every row of any logits, the grid spanning each row's own largest "
        "and smallest logit as the zoo's k_interval attention builds it",
        quantity="largest row L1 error over its bound (ratio; <= 1)",
        source=f"{SOURCE}: every key's ratio to its exponential lies in [a, b], so sum_i |dp_i| <= b/a - 1",
        relation="<=",
        figure="sa_k_interval",
    ),
    ClaimSpec(
        name="k_interval_{mode}_error_order",
        tests="derivation",
        comparison="law",
        paper="000#16",
        statement="Our first-order analysis of K-interval softmax: dp_i = p_i (delta_i - sum_j p_j delta_j), the "
        "exponent shift delta of order h (rounding) or t(1 - t) h^2/2 (interpolation), so the mean row L1 error "
        "falls like K^-1 and K^-2.",
        scope="not checked: the orders -1 and -2 are asymptotic in K (corrections of relative order h^2); the run "
        "fits the slope over one finite range of K, where h is small, without measuring the correction",
        quantity="least-squares slope of ln(mean row L1 error) on ln K",
        figure="sa_k_interval",
        full=True,
    ),
    # --- 4. mimetic initialisation (000#115) ---------------------------------------------------------------
    ClaimSpec(
        name="mimetic_self_weight",
        tests="derivation",
        comparison="prediction",
        paper="000#115",
        statement="«we set the product of the query and key weights to be approximately the identity». Our exact "
        "law for W_q^T W_k = alpha Z + beta I: E[p_ii | x_i, M] = int_0^oo e^-t phi_s(t e^-a)^(n-1) dt at each "
        "row's own logit a_i and spread s_i, above the mean-field value.",
        scope="by construction: i.i.d. Gaussian tokens, so given the weights and the query the other logits are "
        "i.i.d. N(0, s_i^2), as the quadrature assumes; the paper's faster training is not tested",
        quantity="measured over exact mean self weight p_ii, mean over beta (ratio; 1 expected)",
        source=f"{SOURCE}, section 4: E[p_ii | x_i, M] = int_0^oo e^-t phi_s(t e^-a)^(n-1) dt at each row's (a_i, s_i)",
        hypothesis="the mean-field formula 1/(1 + (n - 1) exp(s^2/2 - a)): the other keys' sum at its mean (Jensen's "
        "lower bound; a random product, own logit like any other, is far lower still)",
        figure="sa_mimetic",
        full=True,
    ),
    # --- 5. the kernel's Jacobian (000#23) -----------------------------------------------------------------
    ClaimSpec(
        name="{kernel}_jacobian_vs_scale",
        tests="derivation",
        comparison="prediction",
        paper="000#23",
        statement="«the softmax function can face a gradient vanishing issue when some elements of the attention "
        "scores approach extreme values». Our two-key law over random rows: softmax's mean |J|_F falls like 1/s, "
        "SA-Softmax's (x * softmax(x)) stays of order 1.",
        scope="not checked: the two-key law drops third-key terms of relative order 1/s, small only when a row's "
        "effective scale s sigma_i >~ 8, which the run does not check; i.i.d. Gaussian logits given the query hold "
        "by construction",
        quantity="measured mean |J|_F over its two-key law, mean over the scales (ratio; 1 expected)",
        source=f"{SOURCE}, section 5: the two-key law int int f(u, delta) |J_2x2|_F at each row's effective scale",
        figure="sa_jacobian",
        full=True,
    ),
)
