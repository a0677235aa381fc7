"""The declared claims of ``signal_propagation``: the trained runs: DeepNet stability, gradient profiles and the Curse
of Depth."""

from analysis.claims.specs import ClaimSpec
from probes.signal_propagation.declarations.common import TRAINED

_STABILITY = (
    "not checked: the paper trains translation models up to 1,000 layers; here L = stability_depth, tiny width, "
    "Adam at the probe's rate without warm-up on a Markov language, so the failure of Post-LN depends on the "
    "depth and rate the run chose"
)

SPECS = (
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
        scope=TRAINED.format(scale="71M to 1B parameters"),
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
        scope=TRAINED.format(scale="71M to 1B parameters"),
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
        scope=TRAINED.format(scale="130M to 1B parameters"),
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
        scope=TRAINED.format(scale="130M to 1B parameters"),
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
        scope=TRAINED.format(scale="130M to 1B parameters"),
        quantity="paired difference of the deep half's ablation share D / (D + S), ln_scaling minus pre",
        source="000#50 Curse of Depth: with LayerNorm scaling deep layers contribute more (removing them costs more)",
        hypothesis="LayerNorm scaling leaves the deep blocks' share of the ablation damage unchanged",
        sign=1,
        figure="signal_curse_of_depth_trained",
        full=True,
    ),
)
