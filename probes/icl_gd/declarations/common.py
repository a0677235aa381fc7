"""What several groups of the declared claims of ``icl_gd`` share (or other probes' claims quote)."""

# one statement tested by two probes (icl_gd here, associative_recall's lsa_regression_loss): the scorecard groups them
ONE_LAYER_OPTIMUM = (
    "our closed form for the setting of Mahankali et al. (and von Oswald et al.): one trained linear self-attention "
    "layer on in-context linear regression reaches its optimum, one GD step at the loss-optimal rate eta*, whose "
    "loss is loss*"
)
MC = (
    "by construction: a closed form checked by Monte Carlo over tasks drawn from the very law (input law, d, N, "
    "noise) the closed form assumes; no model"
)
