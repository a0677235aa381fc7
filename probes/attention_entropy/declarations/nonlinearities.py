"""The declared claims of ``attention_entropy``: the models without LayerNorm and GELU (004#30)."""

from analysis.claims.specs import ClaimSpec
from probes.attention_entropy.nonlin import COLLAPSED, NONLIN_SOURCE, OVERLOADED, UNIFORM_HYP

_Q_NONLIN = (
    "«{\\em entropy collapse} in deeper layers that destabilizes training, and {\\em entropic overload} in earlier "
    "layers»"
)
_NONLIN_INIT = (
    "not checked: the law assumes each row's logits i.i.d. N(0, s^2), which corpus text (repeated tokens share keys) "
    "and deeper layers need not give; the kurtosis excess is measured, not checked"
)
_NONLIN_TRAINED = (
    "not checked: the law assumes each row's logits i.i.d. N(0, s^2), which trained weights need not give; the claim "
    "asks whether it still describes trained rows at their measured std"
)
_POOLED = "; the pooled form also assumes one logit std for every row of a layer, which the rows do not share"
_NONLIN_STANDARD = "removing LayerNorm and GELU leaves these layers' entropy as in the standard (Pre-LN, GELU) model"

SPECS = (
    # ------------------------------------------------------------------------------- without nonlinearities (004#30)
    ClaimSpec(
        name="no_nonlin_entropy_gaussian_rows_init_l{layer}",
        tests="derivation",
        comparison="prediction",
        paper="004#30",
        statement="our derivation for the paper's models without LayerNorm and GELU, at initialisation: a layer's mean "
        "H / ln n is the mean over rows of E[H](n, s_row) / ln n for i.i.d. N(0, s_row^2) logits at each row's std",
        scope=_NONLIN_INIT,
        quantity="mean H / ln n of one layer over heads, seeds and probe rows (dimensionless)",
        source=NONLIN_SOURCE,
        hypothesis=UNIFORM_HYP,
        figure="ae_nonlin",
    ),
    ClaimSpec(
        name="no_nonlin_entropy_gaussian_init_l{layer}",
        tests="derivation",
        comparison="prediction",
        paper="004#30",
        statement="our derivation for the paper's models without LayerNorm and GELU, at initialisation: a layer's mean "
        "H / ln n is the mean over n of E[H](n, s_l) / ln n for i.i.d. N(0, s_l^2) logits at the layer's pooled std",
        scope=_NONLIN_INIT + _POOLED,
        quantity="mean H / ln n of one layer over heads, seeds and probe rows (dimensionless)",
        source=NONLIN_SOURCE,
        hypothesis=UNIFORM_HYP,
        figure="ae_nonlin",
    ),
    ClaimSpec(
        name="no_nonlin_entropy_gaussian_rows_trained_l{layer}",
        tests="derivation",
        comparison="prediction",
        paper="004#30",
        statement="our derivation for the paper's models without LayerNorm and GELU, trained: a layer's mean H / ln n "
        "is the mean over rows of E[H](n, s_row) / ln n for i.i.d. N(0, s_row^2) logits at each row's std",
        scope=_NONLIN_TRAINED,
        quantity="mean H / ln n of one layer over heads, seeds and probe rows (dimensionless)",
        source=NONLIN_SOURCE,
        hypothesis=UNIFORM_HYP,
        figure="ae_nonlin",
    ),
    ClaimSpec(
        name="no_nonlin_entropy_gaussian_trained_l{layer}",
        tests="derivation",
        comparison="prediction",
        paper="004#30",
        statement="our derivation for the paper's models without LayerNorm and GELU, trained: a layer's mean H / ln n "
        "is the mean over n of E[H](n, s_l) / ln n for i.i.d. N(0, s_l^2) logits at the layer's pooled std",
        scope=_NONLIN_TRAINED + _POOLED,
        quantity="mean H / ln n of one layer over heads, seeds and probe rows (dimensionless)",
        source=NONLIN_SOURCE,
        hypothesis=UNIFORM_HYP,
        figure="ae_nonlin",
    ),
    ClaimSpec(
        name="standard_entropy_gaussian_rows_init",
        tests="derivation",
        comparison="prediction",
        paper="004#30",
        statement="our derivation for the paper's standard model (Pre-LN, GELU), at initialisation: the mean H / ln n "
        "over all layers is the mean over rows of E[H](n, s_row) / ln n for i.i.d. N(0, s_row^2) logits",
        scope=_NONLIN_INIT,
        quantity="mean H / ln n over layers, heads, seeds and probe rows (dimensionless)",
        source=NONLIN_SOURCE,
        hypothesis=UNIFORM_HYP,
        figure="ae_nonlin",
    ),
    ClaimSpec(
        name="standard_entropy_gaussian_init",
        tests="derivation",
        comparison="prediction",
        paper="004#30",
        statement="our derivation for the paper's standard model (Pre-LN, GELU), at initialisation: the mean H / ln n "
        "over all layers is the mean over n of E[H](n, s_l) / ln n at each layer's pooled logit std",
        scope=_NONLIN_INIT + _POOLED,
        quantity="mean H / ln n over layers, heads, seeds and probe rows (dimensionless)",
        source=NONLIN_SOURCE,
        hypothesis=UNIFORM_HYP,
        figure="ae_nonlin",
    ),
    ClaimSpec(
        name="standard_entropy_gaussian_rows_trained",
        tests="derivation",
        comparison="prediction",
        paper="004#30",
        statement="our derivation for the paper's standard model (Pre-LN, GELU), trained: the mean H / ln n over all "
        "layers is the mean over rows of E[H](n, s_row) / ln n for i.i.d. N(0, s_row^2) logits",
        scope=_NONLIN_TRAINED,
        quantity="mean H / ln n over layers, heads, seeds and probe rows (dimensionless)",
        source=NONLIN_SOURCE,
        hypothesis=UNIFORM_HYP,
        figure="ae_nonlin",
    ),
    ClaimSpec(
        name="standard_entropy_gaussian_trained",
        tests="derivation",
        comparison="prediction",
        paper="004#30",
        statement="our derivation for the paper's standard model (Pre-LN, GELU), trained: the mean H / ln n over all "
        "layers is the mean over n of E[H](n, s_l) / ln n at each layer's pooled logit std",
        scope=_NONLIN_TRAINED + _POOLED,
        quantity="mean H / ln n over layers, heads, seeds and probe rows (dimensionless)",
        source=NONLIN_SOURCE,
        hypothesis=UNIFORM_HYP,
        figure="ae_nonlin",
    ),
    ClaimSpec(
        name="no_nonlin_logit_std_grows_with_depth_{state}",
        tests="derivation",
        comparison="sign",
        paper="004#30",
        statement="our mechanism for " + _Q_NONLIN + ": without LayerNorm each block adds linear maps of the residual "
        "stream to it, so its norm and the logit std grow with depth faster than under Pre-LN",
        scope="by construction at initialisation: both variants share seeds, width and depth and differ only in "
        "LayerNorm and activation; not checked after training: that training keeps the residual growth the "
        "derivation describes at initialisation",
        quantity="ln(s_last / s_first) without nonlinearities - with them, per seed (dimensionless)",
        source="derivation: without LayerNorm each block adds linear maps of the residual stream to it, so its norm, "
        "and the logit std ~ |x|^2, grow with depth; Pre-LN normalises every attention input",
        hypothesis="removing LayerNorm and GELU does not change how the logit std changes with depth",
        sign=1,
        figure="ae_nonlin",
    ),
    ClaimSpec(
        name="no_nonlin_deep_layers_collapse",
        tests="paper",
        comparison="prediction",
        paper="004#30",
        statement="removing nonlinearities triggers " + _Q_NONLIN + "; here the deep third of the layers, with "
        "issue 17's threshold H / ln n < 0.2 for collapse",
        scope="not checked: the paper reports these failure modes in decoder-only language models pre-trained as "
        "LLMs; here 6 narrow layers trained briefly on short text, and the 0.2 threshold is ours, not the paper's",
        quantity="mean H / ln n of the trained deep layers without LayerNorm or GELU (dimensionless)",
        source=f"issue 17 on 004#30: < {COLLAPSED} (entropy collapse)",
        hypothesis=_NONLIN_STANDARD,
        figure="ae_nonlin",
        full=True,
    ),
    ClaimSpec(
        name="no_nonlin_early_layers_overload",
        tests="paper",
        comparison="prediction",
        paper="004#30",
        statement="removing nonlinearities triggers " + _Q_NONLIN + "; here the early third of the layers, with "
        "issue 17's threshold H / ln n > 0.9 for overload",
        scope="not checked: the paper reports these failure modes in decoder-only language models pre-trained as "
        "LLMs; here 6 narrow layers trained briefly on short text, and the 0.9 threshold is ours, not the paper's",
        quantity="mean H / ln n of the trained early layers without LayerNorm or GELU (dimensionless)",
        source=f"issue 17 on 004#30: > {OVERLOADED} (entropic overload)",
        hypothesis=_NONLIN_STANDARD,
        figure="ae_nonlin",
        full=True,
    ),
)
