"""What several groups of the declared claims of ``signal_propagation`` share (or other probes' claims quote)."""

# how the initialisation runs meet the hypotheses of the closed forms of analysis.theory.signal_propagation
INIT = (
    "by construction: at initialisation (fan-in Gaussian weights, float64, Markov tokens) every branch ends in an "
    "independent sign-symmetric matrix and every LayerNorm has gain 1 and bias 0, as the derivation assumes"
)
TRAINED = (
    "not checked: the paper's finding is for pre-trained LLMs ({scale}); here tiny models trained briefly on a "
    "Markov language at one depth (the record's scale triage names the knobs)"
)
