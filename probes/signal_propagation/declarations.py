"""The declared claims of signal_propagation: the residual stream's growth, DeepNorm's layer change and update,
the last layer's gradient, the block Jacobians and rank collapse at initialisation (mostly our closed forms of
:mod:`analysis.theory.signal_propagation` for the papers' settings); the trained runs' DeepNet stability, gradient
profiles and Curse of Depth (the papers' own qualitative findings, at a far smaller scale); and the attention phase
diagram at initialisation (Giorlandino & Goldt's random-energy model and block map,
:mod:`analysis.theory.attention_phase`)."""

from analysis.claims.specs import ClaimSpec, declare
from probes.signal_propagation.phase import SOURCE as PHASE_SOURCE
from probes.signal_propagation.phase_claims import FIGURE as PHASE_FIGURE

# how the initialisation runs meet the hypotheses of the closed forms of analysis.theory.signal_propagation
_INIT = (
    "by construction: at initialisation (fan-in Gaussian weights, float64, Markov tokens) every branch ends in an "
    "independent sign-symmetric matrix and every LayerNorm has gain 1 and bias 0, as the derivation assumes"
)
_TRAINED = (
    "not checked: the paper's finding is for pre-trained LLMs ({scale}); here tiny models trained briefly on a "
    "Markov language at one depth (the record's scale triage names the knobs)"
)
_DONG = (
    "by construction: attention-only stacks at initialisation (fan-in weights, float64, causal or full mask) as in "
    "Dong et al.'s setting; not checked: the bound's constant c (set by the weights' norms) and whether r_l is small "
    "enough for the cube to dominate"
)
_STABILITY = (
    "not checked: the paper trains translation models up to 1,000 layers; here L = stability_depth, tiny width, "
    "Adam at the probe's rate without warm-up on a Markov language, so the failure of Post-LN depends on the "
    "depth and rate the run chose"
)
# the competing hypothesis of the doubly exponential collapse claims
_DOUBLY = "exponential collapse (constant log-decrement) or none: no acceleration"
# the phase diagram's theory: the layer-1 row statistics and the block map of the token cosine
_PHASE_ROWS = (
    f"{PHASE_SOURCE}, sections 1-3: a row is softmax over T i.i.d. Gaussian logits of spread "
    "sigma_i = scale sqrt(1 - p) |W_k^T q_i|"
)
_PHASE_DEPTH = f"{PHASE_SOURCE}, sections 4-5: the post-LN block map of the token cosine at finite T"

DECLARED = declare(
    "signal_propagation",
    # ---------------------------------------------------------------- claims_growth: the stream at initialisation
    ClaimSpec(
        name="{norm}_variance_sum_rule",
        tests="derivation",
        comparison="prediction",
        paper="000#50",
        statement="Our sum rule for the Pre-LN stream (theory sections 1-3; also LayerNorm scaling and QK-norm): at "
        "initialisation each block adds a_l + g_l to the residual second moment, E m_L = m_0 + sum_l (a_l + g_l), "
        "a_l measured from the attention pattern, g_l = E gelu(s_l z)^2",
        scope=_INIT,
        quantity="mean increment of the residual second moment per block (units of m_0 = 1)",
        source="derivation (theory sections 1-3): E[m_{l+1} - m_l | stream] = a_l + g_l, summed: "
        "E m_L = m_0 + sum_l (a_l + g_l)",
        hypothesis="the attention branch adds no second moment (a_l = 0): only the MLP's g_l",
        figure="signal_variance_profiles",
    ),
    ClaimSpec(
        name="{norm}_increment_above_mlp_floor",
        tests="derivation",
        comparison="bound",
        paper="000#50",
        statement="Our envelope for the Pre-LN stream (theory sections 2-3): a_l >= 0 for any attention pattern, so "
        "the mean increment of m_l per block is at least the MLP's mean g_l",
        scope=_INIT,
        quantity="mean increment of the residual second moment per block (units of m_0 = 1)",
        source="derivation (theory sections 2-3): 0 <= a_l <= s_l^2 for any attention pattern",
        relation=">=",
        figure="signal_variance_profiles",
    ),
    ClaimSpec(
        name="{norm}_increment_below_envelope",
        tests="derivation",
        comparison="bound",
        paper="000#50",
        statement="Our envelope for the Pre-LN stream (theory sections 2-3): a_l <= s_l^2 for any attention pattern, "
        "so the mean increment of m_l per block is at most mean (s_l^2 + g_l)",
        scope=_INIT,
        quantity="mean increment of the residual second moment per block (units of m_0 = 1)",
        source="derivation (theory sections 2-3): 0 <= a_l <= s_l^2 for any attention pattern",
        relation="<=",
        figure="signal_variance_profiles",
    ),
    ClaimSpec(
        name="peri_variance_linear",
        tests="derivation",
        comparison="prediction",
        paper="000#11",
        statement="Our derivation for Peri-LN (theory section 4): each sublayer's output is a LayerNorm output of "
        "unit second moment, uncorrelated with the stream, so at initialisation E m_L = m_0 + 2 L (m_0 + L "
        "without MLP): linear growth",
        scope=_INIT,
        quantity="mean increment of the residual second moment per block (units of m_0 = 1)",
        source="derivation (theory section 4, 000#11 Peri-LN): E m_L = m_0 + (sublayers per block) L",
        hypothesis="no output LayerNorm: a block adds at most s^2 + g (the Pre-LN envelope)",
        figure="signal_variance_profiles",
    ),
    ClaimSpec(
        name="pre_variance_growth_linear",
        tests="derivation",
        comparison="prediction",
        paper="000#2",
        statement="Our sum rule (theory sections 1-3): at initialisation a Pre-LN block adds a bounded moment, so m_L "
        "grows linearly in L, against 000#2's «Pre-LN suffers from an exponential growth in activation variance "
        "across layers» as the alternative",
        scope="at initialisation, where the sum rule's hypotheses hold by construction (fan-in init, unit-gain "
        "LayerNorms); 000#2's exponential growth is a finding on trained models, which this run does not test",
        quantity="residual second moment after the last block of the deepest model, m_L (units of m_0 = 1)",
        source="derivation (theory sections 1-3): a bounded moment per block, so m_L grows linearly at init",
        hypothesis="000#2 GPAS / 000#50 Curse of Depth: exponential growth, m_L extrapolated geometrically",
        figure="signal_variance_profiles",
    ),
    ClaimSpec(
        name="post_variance_unit",
        tests="software",
        comparison="identity",
        statement="Every Post-LN block ends in a LayerNorm of gain 1 and bias 0, so its output's second moment is "
        "exactly mean_t sigma_t^2 / (sigma_t^2 + eps), sigma_t^2 the norm input's variance over the width",
        quantity="largest |m_l - mean_t sigma_t^2/(sigma_t^2 + eps)| over blocks and depths",
        source="construction: every Post-LN block ends in a LayerNorm (unit gain, zero bias)",
        figure="signal_variance_profiles",
    ),
    ClaimSpec(
        name="none_variance_sum_rule",
        tests="derivation",
        comparison="scope",
        paper="000#2",
        statement="Our no-norm sum rule (theory section 8): without norms the branches read the raw stream and "
        "E[m_{l+1} - m_l | stream] = a_l + mean_t G(q_mid,t), G(q) = E gelu(sqrt(q) z)^2: the increment the "
        "exponential growth law iterates",
        quantity="mean relative increment (m_{l+1} - m_l) / m_l per block",
        source="derivation (theory section 8): E[m_{l+1} - m_l | stream] = a_l + mean_t G(q_mid,t)",
        hypothesis="the attention branch adds no second moment (a_l = 0): only the MLP's G",
        figure="signal_variance_profiles",
    ),
    ClaimSpec(
        name="none_variance_lower_bound",
        tests="derivation",
        comparison="bound",
        paper="000#2",
        statement="Our bound without norms (theory section 8): G(q) >= q/4 and a_l >= 0 give E m_L >= (5/4)^L m_0 "
        "at any width: exponential growth of the stream when no norm is present",
        scope=_INIT,
        quantity="residual second moment after the last block, m_L (units of m_0)",
        source="derivation (theory section 8): G(q) >= q/4 and a_l >= 0, both linear, give E m_L >= (5/4)^L m_0",
        relation=">=",
        figure="signal_variance_profiles",
    ),
    ClaimSpec(
        name="none_exponential_growth_factor",
        tests="derivation",
        comparison="law",
        paper="000#2",
        statement="Our mean-field law without norms (theory section 8): the stream's second moment grows "
        "exponentially, m_{l+1}/m_l -> (1 + kappa) 3/2 per block in the deep layers, kappa = a_l / m_l measured",
        scope=("none_variance_sum_rule",),
        quantity="per-block growth factor exp(slope of log m_l on l) over the deep half",
        source="derivation (theory section 8): m_{l+1}/m_l -> (1 + kappa) 3/2, kappa = a_l/m_l measured",
        hypothesis="the attention adds nothing (kappa = 0): factor 3/2 from the MLP alone",
        figure="signal_variance_profiles",
        full=True,
    ),
    # ---------------------------------------------------------------- claims_deepnorm
    ClaimSpec(
        name="{norm}_layer_change_vs_depth",
        tests="derivation",
        comparison="law",
        paper="000#65",
        statement="Our derivation for DeepNet's init (theory section 9): a DeepNorm block turns the stream by "
        "~ beta^2/alpha ~ L^(-3/4) at initialisation, a Post-LN block (alpha = beta = 1) by a depth-free angle "
        "(exponent 0)",
        scope=_INIT,
        quantity="log-log slope in L of the mean per-layer angular distance arccos(cos)/pi",
        source="derivation (theory section 9) of Wang et al. 2022's DeepNorm init",
        figure="signal_deepnorm_update",
        full=True,
    ),
    ClaimSpec(
        name="deepnorm_smaller_layer_change_than_post",
        tests="derivation",
        comparison="sign",
        paper="000#65",
        statement="Our derivation for DeepNet's init (theory section 9): DeepNorm's up-scaled residual alpha and "
        "down-scaled branch init beta make each block turn the stream by beta^2/alpha, less than Post-LN's angle",
        scope=_INIT,
        quantity="log(angle deepnorm / angle post) at the deepest depth, paired by seed",
        source="000#65 Wang et al. 2022: DeepNorm bounds the per-layer update that Post-LN lets grow",
        hypothesis="DeepNorm's alpha, beta change nothing: the same angle as Post-LN",
        sign=-1,
        figure="signal_deepnorm_update",
    ),
    ClaimSpec(
        name="deepnorm_update_vs_depth_{opt}",
        tests="derivation",
        comparison="bound",
        paper="000#65",
        statement="Our depth factors of Wang et al.'s update bound (theory section 10): with DeepNorm's alpha, beta "
        "the one-step model update is bounded by a factor growing as L^0 under SGD and L^(1/2) under Adam, so the "
        "update's depth exponent is at most 0 and 1/2",
        scope="at initialisation, one SGD or Adam step at a small rate moving only the weight matrices (the "
        "Theorem holds the LayerNorm gains fixed and is first order); a bound's exponent bounds a fitted exponent "
        "only asymptotically",
        quantity="log-log slope in L of |x_L(theta + dtheta) - x_L(theta)| / |x_L(theta)|",
        source="Wang et al. 2022 (DeepNet) Theorem with alpha = (2N)^(1/4), beta = (8N)^(-1/4); theory "
        "section 10 for the depth factor per optimiser",
        relation="<=",
        figure="signal_deepnorm_step",
        full=True,
    ),
    ClaimSpec(
        name="post_update_grows_faster_than_deepnorm_{opt}",
        tests="paper",
        comparison="sign",
        paper="000#65",
        statement="000#65 (DeepNet): with DeepNorm «model updates can be bounded in a stable way», while Post-LN "
        "accumulates its sublayers' updates with depth: Post-LN's update grows faster in L than DeepNorm's",
        scope="at initialisation, one SGD or Adam step at a small rate moving only the weight matrices, the "
        "setting of the paper's update analysis; tiny width and the run's depths, not the paper's 1,000 layers",
        quantity="paired difference of the log-log slopes in L of the one-step update, post minus deepnorm",
        source="Wang et al. 2022: Post-LN accumulates the sublayers' updates, DeepNorm does not",
        hypothesis="DeepNorm's init changes nothing: the same depth exponent",
        sign=1,
        figure="signal_deepnorm_step",
        full=True,
    ),
    ClaimSpec(
        name="post_update_at_most_linear_{opt}",
        tests="derivation",
        comparison="bound",
        paper="000#65",
        statement="Our depth factor of Wang et al.'s update bound with alpha = beta = 1 (theory section 10): Post-LN's "
        "one-step update is bounded by 4 N (SGD) or 2 sqrt 2 N (Adam), read as a depth exponent at most 1",
        scope="at initialisation, one step at a small rate moving only the weight matrices (the Theorem holds the "
        "LayerNorm gains fixed and is first order); a bound's exponent bounds a fitted exponent only asymptotically",
        quantity="log-log slope in L of the one-step update of Post-LN (mean over seeds)",
        source="Wang et al. 2022 Theorem with alpha = beta = 1: Post-LN's update bound grows as N",
        relation="<=",
        figure="signal_deepnorm_step",
        full=True,
    ),
    ClaimSpec(
        name="pre_token_correlation_grows",
        tests="paper",
        comparison="sign",
        paper="noci2022",
        statement="Noci et al. 2022: at initialisation the tokens' representations become more correlated with "
        "depth (towards rank collapse), here in a Pre-LN stack",
        scope="at initialisation, as the statement requires; the run's Pre-LN stack with MLPs (fan-in init, d = "
        "d_model, Markov tokens) is tested, not the paper's idealised architecture",
        quantity="mean pairwise token cosine after the last block minus after the embedding",
        source="Noci et al. 2022: at initialisation the tokens' correlation increases with depth (Pre-LN)",
        hypothesis="depth leaves the tokens' mean cosine unchanged",
        sign=1,
        figure="signal_init_vs_trained",
        full=True,
    ),
    ClaimSpec(
        name="pre_last_grad_vs_moment",
        tests="derivation",
        comparison="law",
        paper="000#4",
        statement="Our adaptation of 000#4's mean-field analysis (theory section 5): the Pre-LN last layer's weights "
        "see x_L through the final LayerNorm's 1/sigma_L, so their gradient scales as m_L^(-1/2)",
        scope=_INIT,
        quantity="log-log slope of the last block's W_out gradient norm on m_L across depths",
        source="Xiong et al. 2020 adapted (theory section 5): grad ~ m_L^(-1/2)",
        hypothesis="the final LayerNorm's 1/sqrt(m_L) does not reach the gradient",
        figure="signal_last_layer_gradient",
        full=True,
    ),
    ClaimSpec(
        name="post_last_grad_depth_independent",
        tests="paper",
        comparison="law",
        paper="000#4",
        statement="000#4 (Xiong et al.), its Theorem: at initialisation the gradient of Post-LN's last-layer "
        "weights is O(1) in depth (Pre-LN's O(1/sqrt L)); «the expected gradients of the parameters near the "
        "output layer are large»",
        scope=_INIT,
        quantity="log-log slope in L of the last block's W_out gradient norm (Post-LN)",
        source="Xiong et al. 2020: Post-LN last-layer gradient O(1) in L",
        hypothesis="Pre-LN's law: m_L^(-1/2) ~ L^(-1/2)",
        figure="signal_last_layer_gradient",
        full=True,
    ),
    ClaimSpec(
        name="post_larger_last_grad_than_pre",
        tests="paper",
        comparison="sign",
        paper="000#4",
        statement="000#4: «at initialization, for the original-designed Post-LN Transformer, which places the layer "
        "normalization between the residual blocks, the expected gradients of the parameters near the output "
        "layer are large»",
        scope=_INIT,
        quantity="log(last-layer gradient norm post / pre) at the deepest depth, paired by seed",
        source="000#4 Xiong et al.: Post-LN gradients near the output are large, Pre-LN well-behaved",
        hypothesis="the norm placement does not change the last layer's gradient",
        sign=1,
        figure="signal_last_layer_gradient",
        full=True,
    ),
    # ---------------------------------------------------------------- claims_collapse: Jacobians, gradients
    ClaimSpec(
        name="pre_jacobian_gap_vs_moment",
        tests="derivation",
        comparison="law",
        paper="000#50",
        statement="Our derivation (theory section 6) of 000#50's mechanism at initialisation: J_l - I of a Pre-LN "
        "block carries the input norm's 1/sigma_l, so |J_l - I|_F ~ m_l^(-1/2): deep blocks approach the identity "
        "as the stream grows",
        scope=_INIT,
        quantity="log-log slope of the exact block Jacobian gap |J_l - I|_F / sqrt(d) on m_l over layers 1..L-1",
        source="derivation (theory section 6): |J_l - I| ~ m_l^(-1/2)",
        hypothesis="the blocks' distance from the identity does not depend on the stream",
        figure="signal_jacobian_gap",
        full=True,
    ),
    ClaimSpec(
        name="pre_deep_blocks_near_identity_init",
        tests="derivation",
        comparison="sign",
        paper="000#50",
        statement="Our derivation (theory section 6) of 000#50's mechanism at initialisation: m_l grows with l and "
        "|J_l - I| ~ m_l^(-1/2), so the deep Pre-LN blocks' Jacobians are nearer the identity than the shallow ones'",
        scope=_INIT,
        quantity="mean log Jacobian gap over the deep half minus over the shallow half, per seed",
        source="000#50 Curse of Depth: deep Pre-LN blocks' Jacobians approach the identity; at init theory "
        "section 6 (m_l grows)",
        hypothesis="every block equally far from the identity",
        sign=-1,
        figure="signal_jacobian_gap",
        full=True,
    ),
    ClaimSpec(
        name="pre_deep_blocks_near_identity_trained",
        tests="paper",
        comparison="sign",
        paper="000#50",
        statement="000#50, of Pre-LN: «its output variance exponentially grows with the model depth, which undesirably "
        "causes the derivative of the deep Transformer blocks to be an identity matrix»",
        scope=_TRAINED.format(scale="130M to 1B parameters"),
        quantity="mean log Jacobian gap over the deep half minus over the shallow half, per trained seed",
        source="000#50 Curse of Depth: deep Pre-LN blocks' Jacobians approach the identity",
        hypothesis="every block equally far from the identity",
        sign=-1,
        figure="signal_jacobian_gap",
        full=True,
    ),
    ClaimSpec(
        name="ln_scaling_deep_blocks_closer_to_identity_at_init",
        tests="derivation",
        comparison="sign",
        paper="000#50",
        statement="Our derivation (theory section 6) for 000#50's LayerNorm scaling at initialisation: the 1/sqrt(l) "
        "factor shrinks every branch, so the deep blocks start closer to the identity than Pre-LN's (the opposite "
        "of the paper's trained-model claim)",
        scope=_INIT,
        quantity="paired difference of the mean log Jacobian gap over the deep half, ln_scaling minus pre",
        source="derivation (theory section 6): 1/sqrt(l) shrinks every branch, so at init the blocks start "
        "closer to the identity (the opposite of the trained-model claim of 000#50)",
        hypothesis="the 1/sqrt(l) branch scaling leaves the gap unchanged",
        sign=-1,
        figure="signal_jacobian_gap",
        full=True,
    ),
    ClaimSpec(
        name="ln_scaling_moves_deep_blocks_from_identity",
        tests="paper",
        comparison="sign",
        paper="000#50",
        statement="000#50: LayerNorm scaling, which «scales the variance of output of the layer normalization "
        "inversely by the square root of its depth», keeps the deep blocks of trained models from becoming "
        "identity maps",
        scope=_TRAINED.format(scale="130M to 1B parameters"),
        quantity="paired difference of the mean log Jacobian gap over the deep half, ln_scaling minus pre (trained)",
        source="000#50 Curse of Depth: LayerNorm scaling makes deep blocks less identity-like (trained LLMs)",
        hypothesis="LayerNorm scaling leaves the deep blocks' distance from the identity unchanged",
        sign=1,
        figure="signal_jacobian_gap",
        full=True,
    ),
    ClaimSpec(
        name="pre_early_gradients_larger",
        tests="paper",
        comparison="sign",
        paper="000#94",
        statement="000#94: «the Pre-LayerNorm transformer suffers from a gradient magnitude mismatch: gradients at "
        "early layers are much larger than at later layers»",
        scope=_TRAINED.format(scale="125 Million to 2.7 Billion parameters"),
        quantity="log(mean gradient norm, first quarter of layers / last quarter), Pre-LN trained",
        source="000#94 NormFormer: Pre-LN early-layer gradients exceed late ones",
        hypothesis="gradient norms uniform across layers",
        sign=1,
        figure="signal_gradient_profiles",
        full=True,
    ),
    ClaimSpec(
        name="post_early_gradients_smaller",
        tests="paper",
        comparison="sign",
        paper="000#62",
        statement="000#62: «Post-Layer Normalization (Post-LN) preserves larger gradient norms in deeper layers but "
        "suffers from vanishing gradients in earlier layers»",
        scope=_TRAINED.format(scale="70M to 7B parameters"),
        quantity="log(mean gradient norm, first quarter of layers / last quarter), Post-LN trained",
        source="000#62 Mix-LN: Post-LN gradients vanish in earlier layers",
        hypothesis="gradient norms uniform across layers",
        sign=-1,
        figure="signal_gradient_profiles",
        full=True,
    ),
    ClaimSpec(
        name="mix_most_uniform_gradients",
        tests="paper",
        comparison="sign",
        paper="000#62",
        statement="000#62: Mix-LN «applies Post-LN to the earlier layers and Pre-LN to the deeper layers, ensuring "
        "more uniform gradients across layers»",
        scope=_TRAINED.format(scale="70M to 7B parameters"),
        quantity="paired CV of per-layer gradient norms, mix minus the better of pre and post (trained)",
        source="000#62 Mix-LN: Post-LN early + Pre-LN deep gives more uniform layer gradients",
        sign=-1,
        figure="signal_gradient_profiles",
        full=True,
    ),
    # ---------------------------------------------------------------- claims_collapse: rank collapse
    ClaimSpec(
        name="pure_attention_doubly_exponential_{mask}",
        tests="paper",
        comparison="sign",
        paper="dong2021",
        statement="Dong et al. 2021: pure attention (no skip, MLP or norm) loses rank doubly exponentially with "
        "depth, r_{l+1} <= c r_l^3: the log-decrement log(r_l / r_{l+1}) grows with l",
        scope=_DONG,
        quantity="mean log growth of the log-decrements of the rank residual r_l, per seed",
        source="Dong et al. 2021: pure attention loses rank doubly exponentially",
        hypothesis=_DOUBLY,
        sign=1,
        figure="signal_rank_collapse",
        full=True,
    ),
    ClaimSpec(
        name="attention_mlp_doubly_exponential_{mask}",
        tests="paper",
        comparison="sign",
        paper="dong2021",
        statement="Dong et al. 2021: without skips an MLP enters the collapse bound's constant (its Lipschitz "
        "constant), not its exponent: attention + MLP still loses rank doubly exponentially",
        scope=_DONG,
        quantity="mean log growth of the log-decrements of the rank residual r_l, per seed",
        source="Dong et al. 2021: without skips an MLP enters the bound's constant, not its exponent",
        hypothesis=_DOUBLY,
        sign=1,
        figure="signal_rank_collapse",
        full=True,
    ),
    ClaimSpec(
        name="attention_ln_doubly_exponential_{mask}",
        tests="derivation",
        comparison="sign",
        paper="dong2021",
        statement="Our derivation (theory section 11) for Dong et al.'s setting with a LayerNorm after each attention: "
        "r(LN X)/r(X) tends to a finite constant, so r_{l+1} <= c' r_l^3 keeps its cube: doubly exponential collapse",
        scope=_DONG,
        quantity="mean log growth of the log-decrements of the rank residual r_l, per seed",
        source="derivation (theory section 11): r(LN X)/r(X) -> const, so r_{l+1} <= c' r_l^3 persists",
        hypothesis=_DOUBLY,
        sign=1,
        figure="signal_rank_collapse",
        full=True,
    ),
    ClaimSpec(
        name="mlp_slows_collapse_{mask}",
        tests="paper",
        comparison="sign",
        paper="dong2021",
        statement="Dong et al. 2021: MLPs (through their Lipschitz constant) slow down rank collapse: attention + MLP "
        "keeps a larger rank residual than pure attention",
        scope="not met by construction: the paper ties the slowing to a large MLP Lipschitz constant, while the "
        "run's skip-free fan-in GELU MLP has gain sqrt(G(q)/q) in [1/2, 1/sqrt 2] (theory section 8)",
        quantity="mean log10 ratio of the rank residuals, attention + MLP over pure attention, per seed",
        source="Dong et al. 2021: MLPs slow down rank collapse (our skip-free fan-in GELU MLP has gain "
        "sqrt(G(q)/q) in [1/2, 1/sqrt 2], theory section 8)",
        hypothesis="the MLP does not change the residual ratio",
        sign=1,
        figure="signal_rank_collapse",
    ),
    ClaimSpec(
        name="skip_prevents_collapse_{mask}",
        tests="paper",
        comparison="sign",
        paper="dong2021",
        statement="Dong et al. 2021: skip connections stop the rank collapse of pure attention",
        scope="by construction: attention stacks at initialisation with and without skips, same weights and "
        "tokens, as the statement compares",
        quantity="paired difference of log10(r_L / r_0), skip minus pure attention",
        source="Dong et al. 2021: skip connections stop rank collapse",
        hypothesis="skip keeps no more rank than pure_attention",
        sign=1,
        figure="signal_rank_collapse",
    ),
    ClaimSpec(
        name="pre_ln_prevents_collapse_{mask}",
        tests="paper",
        comparison="sign",
        paper="dong2021",
        statement="Dong et al. 2021: skip connections stop rank collapse, here with Pre-LN norms and MLPs added "
        "(Noci et al. 2022's setting): a Pre-LN stack keeps more rank than pure attention",
        scope="by construction: a Pre-LN stack with skips and MLPs against pure attention at initialisation, same "
        "weights and tokens",
        quantity="paired difference of log10(r_L / r_0), Pre-LN minus pure attention",
        source="Dong et al. 2021 / Noci et al. 2022: skips with norms (Pre-LN, with MLPs) keep the rank",
        hypothesis="pre_ln keeps no more rank than pure_attention",
        sign=1,
        figure="signal_rank_collapse",
    ),
    ClaimSpec(
        name="branch_scaling_keeps_more_rank_{mask}",
        tests="paper",
        comparison="sign",
        paper="noci2022",
        statement="Noci et al. 2022: scaling the residual branches by 1/sqrt(L) keeps the rank at depth: more rank "
        "kept than with unscaled skips",
        scope="by construction: attention + skip stacks at initialisation with branches scaled by 1/sqrt(L) or "
        "not, same weights and tokens",
        quantity="paired difference of log10(r_L / r_0), scaled skips minus skips",
        source="Noci et al. 2022: scaling the residual branches by 1/sqrt(L) keeps the rank at depth",
        hypothesis="skip_scaled keeps no more rank than skip",
        sign=1,
        figure="signal_rank_collapse",
    ),
    ClaimSpec(
        name="attention_ln_still_collapses_{mask}",
        tests="derivation",
        comparison="sign",
        paper="dong2021",
        statement="Our derivation (theory section 11) for Dong et al.'s setting: a LayerNorm after each attention "
        "(no skip) rescales a nearly collapsed stream's residual by a finite factor and cannot restore the rank lost "
        "to averaging: r_L < r_0",
        scope=_DONG,
        quantity="log10(r_L / r_0) of attention + LayerNorm without skips, per seed",
        source="derivation (theory section 11): a LayerNorm rescales a nearly collapsed stream's residual by a "
        "finite factor and cannot restore the rank lost to averaging",
        hypothesis="the LayerNorm restores the rank: no net loss over the depth",
        sign=-1,
        figure="signal_rank_collapse",
    ),
    # ---------------------------------------------------------------- claims_trained: DeepNet, Curse of Depth
    ClaimSpec(
        name="deepnet_post_fails_where_deepnorm_trains",
        tests="paper",
        comparison="sign",
        paper="000#65",
        statement="000#65 (DeepNet): DeepNorm's «model updates can be bounded in a stable way», so deep stacks train "
        "without warm-up where deep Post-LN diverges or stalls",
        scope=_STABILITY,
        quantity="fraction of failed runs (diverged or stalled), Post-LN minus DeepNorm",
        source="000#65 Wang et al. 2022 (DeepNet): deep Post-LN diverges or stalls without warm-up, DeepNorm trains",
        hypothesis="DeepNorm's alpha, beta change nothing: Post-LN fails as often as DeepNorm",
        sign=1,
        figure="signal_deepnet_trained",
        full=True,
    ),
    ClaimSpec(
        name="deepnorm_trains_at_depth_without_warmup",
        tests="paper",
        comparison="sign",
        paper="000#65",
        statement="000#65 (DeepNet): with DeepNorm «model updates can be bounded in a stable way»: a deep "
        "DeepNorm stack trains stably without warm-up",
        scope=_STABILITY,
        quantity="context-free loss H(pi) minus the final training loss, DeepNorm (nats)",
        source="000#65 Wang et al. 2022: DeepNorm trains very deep Post-LN-style stacks stably",
        hypothesis="DeepNorm stalls at the context-free loss H(pi) as Post-LN does",
        sign=1,
        figure="signal_deepnet_trained",
        full=True,
    ),
    ClaimSpec(
        name="post_final_loss_above_deepnorm_at_depth",
        tests="paper",
        comparison="sign",
        paper="000#65",
        statement="000#65 (DeepNet): Post-LN's instability at depth costs loss that DeepNorm, whose «model updates "
        "can be bounded in a stable way», keeps",
        scope=_STABILITY,
        quantity="paired final training loss, Post-LN minus DeepNorm (nats)",
        source="000#65 Wang et al. 2022: Post-LN's instability at depth costs loss that DeepNorm keeps",
        hypothesis="the same final loss with and without DeepNorm",
        sign=1,
        figure="signal_deepnet_trained",
        full=True,
    ),
    ClaimSpec(
        name="post_over_deepnorm_first_update_at_depth",
        tests="derivation",
        comparison="prediction",
        paper="000#65",
        statement="Our depth factors of Wang et al.'s Adam update bounds (theory sections 10, 13): 2 sqrt 2 N for "
        "Post-LN against sqrt(2N) for DeepNorm, read as the ratio of the first updates: log(2 sqrt N)",
        scope="not met: the Theorem holds the LayerNorm gains fixed and is first order in the step; this run moves "
        "every parameter at the training rate (3000x the one-step claims' rate), and a ratio of bounds is not a "
        "ratio of updates",
        quantity="log(|dx_L| post / |dx_L| deepnorm) after the first Adam update, paired by seed",
        source="Wang et al. 2022 (DeepNet) Theorem, theory section 10: the Adam update bounds' depth factors "
        "2 sqrt 2 N (Post-LN) and sqrt(2N) (DeepNorm), ratio 2 sqrt N; here at the training rate, where the "
        "one-step claims deepnorm_update_vs_depth_adam / post_update_at_most_linear_adam use a rate 3000x "
        "smaller, and with every parameter moving (the Theorem holds the LayerNorm gains fixed)",
        hypothesis="DeepNorm's alpha, beta leave the update unchanged (ratio 1)",
        figure="signal_deepnet_trained",
        full=True,
    ),
    ClaimSpec(
        name="pre_variance_growth_superlinear_trained",
        tests="paper",
        comparison="sign",
        paper="000#2",
        statement="000#2: «Pre-LN suffers from an exponential growth in activation variance across layers, causing "
        "the residual path to dominate over sub-layer outputs»",
        scope=_TRAINED.format(scale="71M to 1B parameters"),
        quantity="exponent p of m_l - m_0 ~ l^p over the layers of trained Pre-LN models (against 1)",
        source="000#2 GPAS / 000#50 Curse of Depth: the Pre-LN stream's variance grows faster than linearly "
        "(exponentially) across the layers of trained models",
        hypothesis="linear growth (exponent 1): the sum rule's bounded increment per block, as at initialisation",
        sign=1,
        figure="signal_curse_of_depth_trained",
        full=True,
    ),
    ClaimSpec(
        name="pre_variance_grows_faster_than_init_sum_rule_trained",
        tests="paper",
        comparison="sign",
        paper="000#2",
        statement="000#2: «Pre-LN suffers from an exponential growth in activation variance across layers» in "
        "trained models: faster growth than the same seed's sum rule at initialisation (theory sections 1-3, 12)",
        scope=_TRAINED.format(scale="71M to 1B parameters"),
        quantity="paired growth exponent of m_l - m_0, trained minus the sum rule at init",
        source="000#2 GPAS / 000#50 Curse of Depth: training makes the Pre-LN stream grow faster across "
        "layers; theory sections 1-3 and 12 for the initialisation's law",
        hypothesis="training keeps the initialisation's growth law: the exponent of the sum rule m_0 + sum_l "
        "(a_l + g_l) of the same seed's untrained model (a_l grows with the tokens' correlation, so it "
        "exceeds 1)",
        sign=1,
        figure="signal_curse_of_depth_trained",
        full=True,
    ),
    ClaimSpec(
        name="pre_deep_blocks_matter_less_trained",
        tests="paper",
        comparison="sign",
        paper="000#50",
        statement="000#50: under Pre-LN «nearly half of the layers are less effective than expected»: removing a "
        "deep block costs less than removing a shallow one",
        scope=_TRAINED.format(scale="130M to 1B parameters"),
        quantity="deep half's share D / (D + S) of the held-out loss increase of single-block ablations (against 1/2)",
        source="000#50 Curse of Depth: removing a deep Pre-LN layer costs much less than removing a shallow one",
        hypothesis="every block equally important: the deep half takes half the ablation damage",
        sign=-1,
        figure="signal_curse_of_depth_trained",
        full=True,
    ),
    ClaimSpec(
        name="ln_scaling_lowers_last_variance_trained",
        tests="paper",
        comparison="sign",
        paper="000#50",
        statement="000#50: LayerNorm scaling, which «scales the variance of output of the layer normalization "
        "inversely by the square root of its depth», tames Pre-LN's variance growth",
        scope=_TRAINED.format(scale="130M to 1B parameters"),
        quantity="log(m_L ln_scaling / m_L pre) of trained models, paired by seed",
        source="000#50 Curse of Depth: LayerNorm scaling (1/sqrt(l) on the norms' output) tames the variance growth",
        hypothesis="LayerNorm scaling leaves the trained stream's variance unchanged",
        sign=-1,
        figure="signal_curse_of_depth_trained",
        full=True,
    ),
    ClaimSpec(
        name="ln_scaling_raises_deep_block_share_trained",
        tests="paper",
        comparison="sign",
        paper="000#50",
        statement="000#50: with LayerNorm scaling, which «scales the variance of output of the layer normalization "
        "inversely by the square root of its depth», the deep layers contribute more (removing them costs more)",
        scope=_TRAINED.format(scale="130M to 1B parameters"),
        quantity="paired difference of the deep half's ablation share D / (D + S), ln_scaling minus pre",
        source="000#50 Curse of Depth: with LayerNorm scaling deep layers contribute more (removing them costs more)",
        hypothesis="LayerNorm scaling leaves the deep blocks' share of the ablation damage unchanged",
        sign=1,
        figure="signal_curse_of_depth_trained",
        full=True,
    ),
    # ---------------------------------------------------------------- phase_claims: the attention phase diagram
    ClaimSpec(
        name="phase_attention_overlap_identity",
        tests="software",
        comparison="identity",
        paper="giorlandino2026",
        statement="For tokens of exact pairwise cosine p and attention rows summing to 1, "
        "|sum_j a_ij x_j|^2 / d = p + (1 - p) sum_j a_ij^2 for every row (layer 1)",
        quantity="worst |difference| over rows, p, beta and seeds",
        source="algebra (attention_phase section 4): tokens with x_j . x_k = d (p + (1 - p) delta_jk) and "
        "rows summing to 1 give |sum_j a_ij x_j|^2 / d = p + (1 - p) sum_j a_ij^2",
        figure=PHASE_FIGURE,
    ),
    ClaimSpec(
        name="phase_entropy_finite_T_{p}",
        tests="derivation",
        comparison="prediction",
        paper="giorlandino2026",
        statement="Our finite-T reading of Giorlandino & Goldt's random-energy model (attention_phase sections 1-3): "
        "a layer-1 row is softmax over T i.i.d. Gaussian logits of spread sigma_i, so its H / ln T is the exact "
        "finite-T expectation at sigma_i",
        scope="by construction: embedded tokens of exact pairwise cosine p, one head with fan-in Gaussian W_q, W_k "
        "and the random-energy logit scale, float64, as the derivation assumes",
        quantity="layer-1 row entropy H / ln T minus its finite-T yardstick (worst beta of the family)",
        source=_PHASE_ROWS,
        figure=PHASE_FIGURE,
        full=True,
    ),
    ClaimSpec(
        name="phase_participation_finite_T_{p}",
        tests="derivation",
        comparison="prediction",
        paper="giorlandino2026",
        statement="Our finite-T reading of Giorlandino & Goldt's random-energy model (attention_phase sections 1-3): "
        "a layer-1 row is softmax over T i.i.d. Gaussian logits of spread sigma_i, so its sum_j a_ij^2 is the exact "
        "finite-T expectation at sigma_i",
        scope="by construction: embedded tokens of exact pairwise cosine p, one head with fan-in Gaussian W_q, W_k "
        "and the random-energy logit scale, float64, as the derivation assumes",
        quantity="layer-1 participation sum_j a_ij^2 minus its finite-T yardstick (worst beta of the family)",
        source=_PHASE_ROWS,
        figure=PHASE_FIGURE,
        full=True,
    ),
    ClaimSpec(
        name="phase_depth_cosine_{side}_{p}",
        tests="toy_model",
        comparison="prediction",
        paper="giorlandino2026",
        statement="Giorlandino & Goldt's post-LN block map of the token cosine (attention_phase sections 4-5, at "
        "finite T): below beta_c the cosine is driven to 1 with depth (rank collapse), above it entropy collapse "
        "keeps the tokens apart",
        scope="by construction the zoo block is the map's (post-LN, one head, ReLU MLP, unit skips, no biases, "
        "var_v = var_w = 1); not checked: the map is a d -> inf mean-field law, run at the design's finite width",
        quantity="token cosine after block k minus the finite-T block map (worst beta of the family)",
        source=_PHASE_DEPTH,
        figure=PHASE_FIGURE,
        full=True,
    ),
)
