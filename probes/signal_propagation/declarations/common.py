"""What the declared claims of ``signal_propagation`` share: the scope sentences, quotations and sources that several
groups of claims name."""

from probes.signal_propagation.phase import SOURCE as PHASE_SOURCE

# how the initialisation runs meet the hypotheses of the closed forms of analysis.theory.signal_propagation
INIT = (
    "by construction: at initialisation (fan-in Gaussian weights, float64, Markov tokens) every branch ends in an "
    "independent sign-symmetric matrix and every LayerNorm has gain 1 and bias 0, as the derivation assumes"
)
TRAINED = (
    "not checked: the paper's finding is for pre-trained LLMs ({scale}); here tiny models trained briefly on a "
    "Markov language at one depth (the record's scale triage names the knobs)"
)
DONG = (
    "by construction: attention-only stacks at initialisation (fan-in weights, float64, causal or full mask) as in "
    "Dong et al.'s setting; not checked: the bound's constant c (set by the weights' norms) and whether r_l is small "
    "enough for the cube to dominate"
)
STABILITY = (
    "not checked: the paper trains translation models up to 1,000 layers; here L = stability_depth, tiny width, "
    "Adam at the probe's rate without warm-up on a Markov language, so the failure of Post-LN depends on the "
    "depth and rate the run chose"
)
# the competing hypothesis of the doubly exponential collapse claims
DOUBLY = "exponential collapse (constant log-decrement) or none: no acceleration"
# the phase diagram's theory: the layer-1 row statistics and the block map of the token cosine
PHASE_ROWS = (
    f"{PHASE_SOURCE}, sections 1-3: a row is softmax over T i.i.d. Gaussian logits of spread "
    "sigma_i = scale sqrt(1 - p) |W_k^T q_i|"
)
PHASE_DEPTH = f"{PHASE_SOURCE}, sections 4-5: the post-LN block map of the token cosine at finite T"
