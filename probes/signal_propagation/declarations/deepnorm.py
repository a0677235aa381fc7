"""The declared claims of ``signal_propagation``: DeepNorm's layer change and update."""

from analysis.claims.specs import ClaimSpec
from probes.signal_propagation.declarations.common import INIT

SPECS = (
    # ---------------------------------------------------------------- claims_deepnorm
    ClaimSpec(
        name="{norm}_layer_change_vs_depth",
        tests="derivation",
        comparison="law",
        paper="000#65",
        statement="Our derivation for DeepNet's init (theory section 9): a DeepNorm block turns the stream by "
        "~ beta^2/alpha ~ L^(-3/4) at initialisation, a Post-LN block (alpha = beta = 1) by a depth-free angle "
        "(exponent 0)",
        scope=INIT,
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
        scope=INIT,
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
        scope=INIT,
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
        scope=INIT,
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
        scope=INIT,
        quantity="log(last-layer gradient norm post / pre) at the deepest depth, paired by seed",
        source="000#4 Xiong et al.: Post-LN gradients near the output are large, Pre-LN well-behaved",
        hypothesis="the norm placement does not change the last layer's gradient",
        sign=1,
        figure="signal_last_layer_gradient",
        full=True,
    ),
)
