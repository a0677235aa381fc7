"""What several groups of the declared claims of ``softmax_alternatives`` share (or other probes' claims quote)."""

RANDOM_ROWS = (
    "by construction: a random layer at initialisation (fan-in init) over i.i.d. Gaussian tokens, so given the "
    "weights and the query a row's other logits are i.i.d. N(0, s_i^2), as the law assumes; the paper's trained "
    "models are not tested"
)
