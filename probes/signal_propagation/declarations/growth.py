"""The declared claims of ``signal_propagation``: the residual stream at initialisation."""

from analysis.claims.specs import ClaimSpec
from probes.signal_propagation.declarations.common import INIT

SPECS = (
    # ---------------------------------------------------------------- claims_growth: the stream at initialisation
    ClaimSpec(
        name="{norm}_variance_sum_rule",
        tests="derivation",
        comparison="prediction",
        paper="000#50",
        statement="Our sum rule for the Pre-LN stream (theory sections 1-3; also LayerNorm scaling and QK-norm): at "
        "initialisation each block adds a_l + g_l to the residual second moment, E m_L = m_0 + sum_l (a_l + g_l), "
        "a_l measured from the attention pattern, g_l = E gelu(s_l z)^2",
        scope=INIT,
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
        scope=INIT,
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
        scope=INIT,
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
        scope=INIT,
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
        scope=INIT,
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
)
