"""What the declared claims of ``softmax_alternatives`` share: the scope sentences, quotations and sources that several
groups of claims name."""

RANDOM_ROWS = (
    "by construction: a random layer at initialisation (fan-in init) over i.i.d. Gaussian tokens, so given the "
    "weights and the query a row's other logits are i.i.d. N(0, s_i^2), as the law assumes; the paper's trained "
    "models are not tested"
)
MEMORY = (
    "by construction: at initialisation (the zoo's gpt2 init) keys and values are independent zero-mean Gaussians, "
    "biases 0, inputs on the sphere of radius sqrt(d), as the closed form assumes; the paper's trained memories are "
    "not tested"
)
GAUSSIAN_KEYS = (
    "by construction: queries and keys with i.i.d. N(0, 1) coordinates, so a row's scores are i.i.d. given the "
    "query, as the law assumes; the entropy law is first order in 1/n (the O(n^-2) terms dropped)"
)
LINEARITY = (
    "by construction: a random zoo block at initialisation whose MLP input is exactly Gaussian given the weights "
    "(i.i.d. Gaussian tokens through uniform full attention), the score estimated without its O(d/N) bias; the "
    "paper's trained decoders are not tested"
)
ZERO_QUERY = (
    "by construction: W_q = 0 (the zoo's zero_query) makes every causal softmax layer exactly the uniform average C "
    "and the tokens are i.i.d. N(0, I), as the law assumes; the paper's training-speed claim is not tested"
)
HILL = (
    "not checked: the tail index is asymptotic and Hill's estimator reads it from the largest rows of finite samples "
    "(its bias is not in the band); queries independent of the Gaussian keys, which give D a density positive at 0, "
    "hold by construction"
)
