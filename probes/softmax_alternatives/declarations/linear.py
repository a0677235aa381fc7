"""The declared claims of ``softmax_alternatives``: linear attention's feature maps, an MLP sublayer's linearity, the
bilinear MLP, token isolation and linear attention's denominator (items 6-11)."""

from analysis.claims.specs import ClaimSpec
from probes.softmax_alternatives.declarations.common import RANDOM_ROWS
from probes.softmax_alternatives.references import SOURCE

_GAUSSIAN_KEYS = (
    "by construction: queries and keys with i.i.d. N(0, 1) coordinates, so a row's scores are i.i.d. given the "
    "query, as the law assumes; the entropy law is first order in 1/n (the O(n^-2) terms dropped)"
)
_LINEARITY = (
    "by construction: a random zoo block at initialisation whose MLP input is exactly Gaussian given the weights "
    "(i.i.d. Gaussian tokens through uniform full attention), the score estimated without its O(d/N) bias; the "
    "paper's trained decoders are not tested"
)
_HILL = (
    "not checked: the tail index is asymptotic and Hill's estimator reads it from the largest rows of finite samples "
    "(its bias is not in the band); queries independent of the Gaussian keys, which give D a density positive at 0, "
    "hold by construction"
)

SPECS = (
    # --- 6-7. linear attention's feature maps (003#74, 000#51) ---------------------------------------------
    ClaimSpec(
        name="elu1_entropy_deficit",
        tests="derivation",
        comparison="law",
        paper="003#74",
        statement="003#74: kernelised linear attention does not reproduce softmax's concentration of the weights. "
        "Our law for elu + 1 features on Gaussian queries and keys: ln n - E[H] = D + v/(2n) - c/n + D v/n, D = "
        "E[x ln x], near 0 where softmax's is ~ s^2/2.",
        scope=_GAUSSIAN_KEYS,
        quantity="row entropy deficit ln n - H (nats)",
    ),
    ClaimSpec(
        name="taylor_monotonicity_violations",
        tests="derivation",
        comparison="law",
        paper="000#51",
        statement="Linear attentions «lack key properties of softmax attention tied to good performance: "
        'low-entropy (or "spiky") weights and dot-product monotonicity». Our exact law for the Taylor map 1 + z + '
        "z^2/2: a key pair is ordered against its logits with probability Phi(-sqrt(2)/sigma).",
        scope="by construction: keys with i.i.d. N(0, 1) coordinates, so a row's logits are i.i.d. N(0, sigma^2) "
        "given the query, as the exact law assumes",
        quantity="fraction of key pairs ordered against their logits",
    ),
    ClaimSpec(
        name="taylor_entropy_deficit",
        tests="derivation",
        comparison="law",
        paper="000#51",
        statement='Softmax\'s «low-entropy (or "spiky") weights», which linear attentions lack. Our law for the '
        "Taylor map's rows: ln n - E[H] is the first-order-in-1/n entropy expansion with x = (1 + z + z^2/2)/(1 + "
        "sigma^2/2) over Gaussian keys.",
        scope=_GAUSSIAN_KEYS,
        quantity="row entropy deficit ln n - H (nats)",
    ),
    # --- 8. the linearity of an MLP sublayer (003#37) ------------------------------------------------------
    ClaimSpec(
        name="mlp_linearity_with_residual",
        tests="derivation",
        comparison="prediction",
        paper="003#37",
        statement="«near-perfect linear relationship (Procrustes similarity score of 0.99)». Our exact population law "
        "for a random MLP sublayer with its skip connection on Gaussian inputs: 1 - score = tr W_out (Cov g(z) - D C "
        "D) W_out^T / tr Cov(y), tr Cov(y) including tr Sigma.",
        scope=_LINEARITY,
        quantity="measured over exact 1 - linearity score, mean over input scales (ratio; 1 expected)",
        source=f"{SOURCE}, section 8: 1 - score = tr W_out (Cov g(z) - D C D) W_out^T / tr Cov(y), given the weights",
        hypothesis="the skip connection leaves the sublayer's linearity unchanged: the unexplained fraction of the "
        "branch alone",
        figure="sa_linearity",
        full=True,
    ),
    ClaimSpec(
        name="mlp_linearity_without_residual",
        tests="derivation",
        comparison="prediction",
        paper="003#37",
        statement="«linearity decreases when the residual component is removed due to a consistently low output norm "
        "of the transformer layer». Our exact law without the skip connection: 1 - score = tr W_out (Cov g(z) - D C "
        "D) W_out^T / tr Cov(y), no tr Sigma in tr Cov(y).",
        scope=_LINEARITY,
        quantity="measured over exact 1 - linearity score, mean over input scales (ratio; 1 expected)",
        source=f"{SOURCE}, section 8: 1 - score = tr W_out (Cov g(z) - D C D) W_out^T / tr Cov(y), given the weights",
        hypothesis="removing the skip connection leaves the sublayer as linear as with it",
        figure="sa_linearity",
        full=True,
    ),
    # --- 9. the bilinear MLP (003#57) ---------------------------------------------------------------------
    ClaimSpec(
        name="bilinear_tensor_decomposition_exact",
        tests="software",
        comparison="identity",
        paper="003#57",
        statement="«Bilinear MLPs can be fully expressed in terms of linear operations using a third-order tensor»: "
        "every output of the zoo's trained bilinear MLP equals x^T B_o x, B_o = sum_k W_out[o, k] sym(w_k g_k^T), on "
        "every measured input.",
        quantity="max |mlp(x)_o - x^T B_o x| in units of the terms' absolute sum",
        source=f"{SOURCE}, section 9: y_o = x^T B_o x, B_o = sum_k W_out[o, k] sym(w_k g_k^T)",
        figure="sa_bilinear",
    ),
    ClaimSpec(
        name="bilinear_noise_outside_planted_rank",
        tests="derivation",
        comparison="prediction",
        paper="003#57",
        statement="Eigendecomposition «reveals interpretable low-rank structure across toy tasks». Our exact law for a "
        "layer at its least-squares minimum on a planted rank-r target: outside the planted subspace E sum_o |P B_o "
        "P|_F^2 = d_out sigma^2 tr(L G^-1 L^T), the fitted noise.",
        scope="not checked: the law needs the L-BFGS fit at the least-squares minimum; the run records its distance "
        "(bilinear_fit_gap_max) but no claim tests it; Gaussian inputs and the planted target hold by construction",
        quantity="energy outside the planted subspace, measured over exact (ratio; 1 expected)",
        source=f"{SOURCE}, section 9: E sum_o |P B_o P|_F^2 = d_out sigma^2 tr(L G^-1 L^T) given the inputs",
        hypothesis="an implicit low-rank bias: gradient-trained factorised weights keep the planted rank and fit no "
        "noise outside it",
        figure="sa_bilinear",
        full=True,
    ),
    # --- 10. token isolation at initialisation (000#118) ---------------------------------------------------
    ClaimSpec(
        name="softmax_collision_exact",
        tests="derivation",
        comparison="law",
        paper="000#118",
        statement="«Transformers are sequence length dependent biased towards token isolation at initialization». "
        "Our exact law: a random softmax row passes on sum_j p_j^2 of i.i.d. values' energy, E[sum_j p_j^2] = int t "
        "e^-t [phi^(n-1) + (n-1) e^-2a chi phi^(n-2)] dt at its (a, s).",
        scope=RANDOM_ROWS,
        quantity="row weight collision sum_j p_ij^2",
    ),
    ClaimSpec(
        name="softmax_isolation_grows_with_length",
        tests="derivation",
        comparison="law",
        paper="000#118",
        statement="«Transformers are sequence length dependent biased towards token isolation at initialization». "
        "Our law: a random softmax row's collision sum_j p_j^2 falls with n at the exact law's slope in ln n (-> -1 "
        "once n >> e^(s^2)).",
        scope=RANDOM_ROWS,
        quantity="least-squares slope of ln(mean collision) on ln n",
    ),
    # --- 11. the denominator of linear attention (003#31) --------------------------------------------------
    ClaimSpec(
        name="linear_attention_readout_tail_index",
        tests="derivation",
        comparison="law",
        paper="003#31",
        statement="«the scaling of attention matrices is the devil in unbounded gradients». Our derivation: "
        "normalised linear attention's denominator D = c q . sum_j k_j crosses zero with a density positive at 0, "
        "so the read-out y / D has tail index 1 (no mean).",
        scope=_HILL,
        quantity="Hill tail index of the read-out y / D",
        source=f"{SOURCE}, section 11 (b): D has a density positive at 0, so P(|y/D| > t) ~ 1/t",
        hypothesis="a denominator bounded away from zero (softmax, positive features): the read-out as light-tailed "
        "as its numerator |y| (Hill's index on the same rows)",
        figure="sa_denominator",
        full=True,
    ),
    ClaimSpec(
        name="linear_attention_gradient_tail_index",
        tests="derivation",
        comparison="law",
        paper="003#31",
        statement="«the scaling of attention matrices is the devil in unbounded gradients». Our derivation: the "
        "query gradient |do/dq| ~ c |y| |s| / D^2 near D = 0, so its tail index is 1/2 (no finite moment of order "
        "1/2).",
        scope=_HILL,
        quantity="Hill tail index of the query gradient's norm",
        source=f"{SOURCE}, section 11 (b): D has a density positive at 0, so P(|y/D| > t) ~ 1/t; |do/dq| ~ c |y| "
        "|s| / D^2, so P(|do/dq| > t) ~ t^(-1/2)",
        hypothesis="the gradient only as heavy as the read-out (a 1/|D| tail, index 1)",
        figure="sa_denominator",
        full=True,
    ),
)
