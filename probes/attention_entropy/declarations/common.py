"""What several groups of the declared claims of ``attention_entropy`` share (or other probes' claims quote)."""

Q_SIGMOID_NORMS = (
    "«stabilization of large initial attention norms during the early stages of training as a crucial factor»"
)
SPECTRAL = (
    "by construction where recorded: only pre-LN zoo models without QK-norm or RoPE, whose logit is c x_i^T W_q^T W_k "
    "x_j of the measured LayerNorm outputs; not checked: projection biases (bias=true) or the SSMax factor s ln n "
    "(attention=ssmax), which the bound leaves out"
)
