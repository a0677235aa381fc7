"""What the declared claims of ``attention_entropy`` share: the scope sentences, quotations and sources that several
groups of claims name."""

Q_SSMAX = (
    "«The maximum element of the vector output by the Softmax function approaches zero as the input vector size "
    "increases»"
)
Q_FLATTEN = "«causing the attention distribution to flatten as the context size grows»"
Q_SIGMOID_NORMS = (
    "«stabilization of large initial attention norms during the early stages of training as a crucial factor»"
)
Q_NONLIN = (
    "«{\\em entropy collapse} in deeper layers that destabilizes training, and {\\em entropic overload} in earlier "
    "layers»"
)
PLANTED = (
    "by construction: the float64 planted-key network has exactly one logit g on key 0 and zero on the n - 1 others, "
    "the closed form's setting"
)
MARGIN = "; the rate is claimed only at |s g - 1| >= fade_margin, where the finite-n correction is small"
ROW_BOUND = (
    "by construction: the bound's only hypothesis is read off each row itself (its measured logit range or largest "
    "|logit|), so every softmax row of any model measured meets it"
)
SPECTRAL = (
    "by construction where recorded: only pre-LN zoo models without QK-norm or RoPE, whose logit is c x_i^T W_q^T W_k "
    "x_j of the measured LayerNorm outputs; not checked: projection biases (bias=true) or the SSMax factor s ln n "
    "(attention=ssmax), which the bound leaves out"
)
NONLIN_INIT = (
    "not checked: the law assumes each row's logits i.i.d. N(0, s^2), which corpus text (repeated tokens share keys) "
    "and deeper layers need not give; the kurtosis excess is measured, not checked"
)
NONLIN_TRAINED = (
    "not checked: the law assumes each row's logits i.i.d. N(0, s^2), which trained weights need not give; the claim "
    "asks whether it still describes trained rows at their measured std"
)
POOLED = "; the pooled form also assumes one logit std for every row of a layer, which the rows do not share"
DILUTION_SOURCE = "derivation: |x_j| <= M gives max p <= e^M / (e^M + (n-1) e^{-M}) (<= e^{2M} / n)"
WORTSMAN = "Wortsman et al. 2023, Small-scale proxies for large-scale Transformer training instabilities"
NONLIN_STANDARD = "removing LayerNorm and GELU leaves these layers' entropy as in the standard (Pre-LN, GELU) model"
