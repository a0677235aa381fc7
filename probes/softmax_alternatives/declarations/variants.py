"""The declared claims of ``softmax_alternatives``: softplus over the l1 norm, shaped, sigmoid and Cog attention,
parallel sublayers and persistent memory vectors (items 12-17)."""

from analysis.claims.specs import ClaimSpec
from probes.softmax_alternatives.references import SOURCE

_ZERO_QUERY = (
    "by construction: W_q = 0 (the zoo's zero_query) makes every causal softmax layer exactly the uniform average C "
    "and the tokens are i.i.d. N(0, I), as the law assumes; the paper's training-speed claim is not tested"
)

SPECS = (
    # --- 12. softplus over the l1 norm (000#85) -------------------------------------------------------------
    ClaimSpec(
        name="softplus_l1_entropy_deficit",
        tests="derivation",
        comparison="law",
        paper="000#85",
        statement="«decomposing the Softmax operation into a non-linear transformation and the l_1-norm. We identify "
        "the latter as essential». Our law for softplus_l1 rows: the entropy expansion with x = softplus(sigma Z) / "
        "E softplus(sigma Z), -> (ln 4 pi - gamma)/2 as sigma grows.",
        scope="by construction: a random head over Gaussian tokens, each row's logits i.i.d. given the weights and "
        "the query, as the law assumes (first order in 1/n); the paper's length generalisation is not tested",
        quantity="row entropy deficit ln n - H (nats)",
    ),
    # --- 13. shaped attention (004#82) ---------------------------------------------------------------------
    ClaimSpec(
        name="shaped_attention_identity_at_init",
        tests="software",
        comparison="identity",
        paper="004#82",
        statement="The zoo's shaped attention alpha I + beta softmax - gamma C at (1, 1, 1) with zero logits (W_q = "
        "0) is exactly the identity pattern I in every layer of the stacks at initialisation.",
        quantity="max |pattern - I| (float64)",
        source=f"{SOURCE}, section 13: alpha I + beta softmax(0) - gamma C = I at (1, 1, 1)",
        figure="sa_shaped",
    ),
    ClaimSpec(
        name="softmax_stack_kernel_collapse",
        tests="derivation",
        comparison="prediction",
        paper="004#82",
        statement="004#82 removes skip connections «with no loss of training speed» by shaping attention. Our exact "
        "law for a skipless causal softmax stack at W_q = 0: every layer is the uniform average C, so E[X_L X_L^T] "
        "= tr(W^T W) C^L (C^L)^T (tokens collapse).",
        scope=_ZERO_QUERY,
        quantity="mean token correlation of the token kernel, paired with its law, mean over depths",
        source=f"{SOURCE}, section 13: E[X_L X_L^T] = tr(W^T W) C^L (C^L)^T given the weights",
        hypothesis="the stack keeps the token kernel (independent tokens stay uncorrelated, as with shaped attention)",
        figure="sa_shaped",
        full=True,
    ),
    ClaimSpec(
        name="shaped_stack_keeps_token_kernel",
        tests="derivation",
        comparison="prediction",
        paper="004#82",
        statement="Our law for 004#82's shaped attention, which starts at the identity: a skipless shaped stack at "
        "init maps X to X W, so E[X_L X_L^T] = tr(W^T W) I and independent tokens stay uncorrelated at every depth.",
        scope=_ZERO_QUERY,
        quantity="mean token correlation of the token kernel, mean over depths (0 expected)",
        source=f"{SOURCE}, section 13: the shaped stack maps X to X W, E[X_L X_L^T] = tr(W^T W) I",
        hypothesis="shaped attention collapses the kernel like softmax's uniform average: the C^L law's mean",
        figure="sa_shaped",
        full=True,
    ),
    # --- 14. sigmoid attention (004#109) ------------------------------------------------------------------
    ClaimSpec(
        name="sigmoid_row_mass_exact",
        tests="derivation",
        comparison="law",
        paper="004#109",
        statement="«stabilization of large initial attention norms during the early stages of training as a crucial "
        "factor». Our exact law with bias -ln n: a row's mass E[sum_j p_j] = n int sigmoid(s u - ln n) phi(u) du, "
        "of order one (-> e^(s^2/2)), not b = 0's n/2.",
        scope="by construction: a random head at initialisation over Gaussian keys, each row's logits i.i.d. "
        "N(0, s^2) given the weights and the query, as the law assumes; the paper's training stability is not tested",
        quantity="row weight mass sum_j sigmoid(z_j - ln n)",
    ),
    ClaimSpec(
        name="sigmoid_row_mass_length_free",
        tests="derivation",
        comparison="law",
        paper="004#109",
        statement="Our law for 004#109's bias b = -ln n against large initial attention norms: the row mass's slope "
        "in ln n is the exact law's (-> 0 as the mass tends to e^(s^2/2)), where b = 0's mass n/2 has slope 1.",
        scope="by construction: a random head at initialisation over Gaussian keys, each row's logits i.i.d. "
        "N(0, s^2) given the weights and the query, as the law assumes; the paper's training stability is not tested",
        quantity="least-squares slope of ln(mean row mass) on ln n",
    ),
    # --- 15. Cog attention (004#28) -----------------------------------------------------------------------
    ClaimSpec(
        name="cog_token_sign_equivariance",
        tests="software",
        comparison="identity",
        paper="004#28",
        statement="Cog attention's SignExp weights make the zoo's float64 skipless stack odd in each token: f(D X) = "
        "D f(X) for every diagonal sign matrix D on the tokens, bit for bit.",
        quantity="max relative error of f(D X) against D f(X) over depths and replicates",
        source=f"{SOURCE}, section 15: f(D X) = D f(X) for every diagonal sign matrix D",
        figure="sa_cog",
    ),
    ClaimSpec(
        name="cog_stack_keeps_tokens_uncorrelated",
        tests="derivation",
        comparison="prediction",
        paper="004#28",
        statement="Cog attention counters «representational collapse, which can occur when earlier tokens are "
        "over-squashed into later positions, leading to homogeneous representations». Our derivation: sign "
        "equivariance makes the mean token correlation 0 at every depth.",
        scope="by construction: bias-free layers over i.i.d. N(0, I) tokens, whose law is invariant under flipping "
        "any one of them, as the symmetry argument assumes; the paper's trained models are not tested",
        quantity="mean token correlation of the Cog stack's token kernel, mean over depths (0 expected)",
        source=f"{SOURCE}, section 15: token sign equivariance makes the correlation symmetric about 0 at every depth",
        hypothesis="negative weights do not prevent the collapse: the Cog stack averages the tokens like softmax on "
        "the same weights (their measured mean correlation)",
        figure="sa_cog",
        full=True,
    ),
    # --- 16. sublayers in parallel (000#96) ----------------------------------------------------------------
    ClaimSpec(
        name="parallel_mlp_discrepancy_exact",
        tests="derivation",
        comparison="law",
        paper="000#96",
        statement="Residual layers «can to some extent be processed efficiently in parallel». Our exact law at init: "
        "feeding the MLP N(x) instead of N(x + a) changes its output by m2(s_u) + m2(s_v) - 2 sum_n c_n(s_u) c_n(s_v) "
        "rho^n per unit width, given each token's inputs.",
        scope="by construction: at initialisation each block's MLP weights are fan-in Gaussian, bias-free and "
        "independent of its inputs, as the law assumes; the paper's trained ViT accuracy is not tested",
        quantity="mean squared change of the MLP's output per unit width",
    ),
    ClaimSpec(
        name="parallel_discrepancy_falls_with_depth",
        tests="derivation",
        comparison="law",
        paper="000#96",
        statement="Our law for 000#96's parallel residual layers in a pre-norm stack at init: the parallel block's "
        "change relative to the MLP's output falls with the block index l at the exact law's slope in ln l, as the "
        "stream grows past the attention output.",
        scope="by construction: at initialisation each block's MLP weights are fan-in Gaussian, bias-free and "
        "independent of its inputs, as the law assumes; the paper's trained ViT accuracy is not tested",
        quantity="least-squares slope of ln(mean relative change) on ln l",
    ),
    # --- 17. persistent memory vectors (004#90) -------------------------------------------------------------
    ClaimSpec(
        name="persistent_memory_share_exact",
        tests="derivation",
        comparison="law",
        paper="004#90",
        statement="«persistent memory vectors» let the feed-forward layer be removed «without degrading the "
        "performance». Our exact law at init: the memory's share of a row's weight is N int chi_rs phi_rs^(N-1) "
        "phi_s^T dt at the row's logit spread s.",
        scope="by construction: a random head at initialisation over Gaussian tokens with persistent vectors drawn "
        "N(0, r^2 I), so the logits are i.i.d. N(0, s^2) and N(0, (rs)^2) given the weights and the query, as the "
        "law assumes",
        quantity="share of a row's weight on the persistent memory",
    ),
    ClaimSpec(
        name="persistent_memory_share_falls_with_context",
        tests="derivation",
        comparison="law",
        paper="004#90",
        statement="Our law for 004#90's persistent memory at init: its share of a row's weight falls with the "
        "context length T at the exact law's slope in ln T (-> -1: N e^((rs)^2/2) / (T e^(s^2/2))), unlike a "
        "feed-forward layer's length-independent contribution.",
        scope="by construction: a random head at initialisation over Gaussian tokens with persistent vectors drawn "
        "N(0, r^2 I), so the logits are i.i.d. N(0, s^2) and N(0, (rs)^2) given the weights and the query, as the "
        "law assumes",
        quantity="least-squares slope of ln(mean share) on ln T",
    ),
)
