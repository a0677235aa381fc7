"""The declared claims of ``signal_propagation``: the block Jacobians, the last layer's gradient and rank collapse at
initialisation."""

from analysis.claims.specs import ClaimSpec
from probes.signal_propagation.declarations.common import INIT, TRAINED

_DONG = (
    "by construction: attention-only stacks at initialisation (fan-in weights, float64, causal or full mask) as in "
    "Dong et al.'s setting; not checked: the bound's constant c (set by the weights' norms) and whether r_l is small "
    "enough for the cube to dominate"
)
# the competing hypothesis of the doubly exponential collapse claims
_DOUBLY = "exponential collapse (constant log-decrement) or none: no acceleration"

SPECS = (
    # ---------------------------------------------------------------- claims_collapse: Jacobians, gradients
    ClaimSpec(
        name="pre_jacobian_gap_vs_moment",
        tests="derivation",
        comparison="law",
        paper="000#50",
        statement="Our derivation (theory section 6) of 000#50's mechanism at initialisation: J_l - I of a Pre-LN "
        "block carries the input norm's 1/sigma_l, so |J_l - I|_F ~ m_l^(-1/2): deep blocks approach the identity "
        "as the stream grows",
        scope=INIT,
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
        scope=INIT,
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
        scope=TRAINED.format(scale="130M to 1B parameters"),
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
        scope=INIT,
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
        scope=TRAINED.format(scale="130M to 1B parameters"),
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
        scope=TRAINED.format(scale="125 Million to 2.7 Billion parameters"),
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
        scope=TRAINED.format(scale="70M to 7B parameters"),
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
        scope=TRAINED.format(scale="70M to 7B parameters"),
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
)
