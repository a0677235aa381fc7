"""The declared claims of attention_entropy: the planted-key network against its closed forms and the softmax and SSMax
fading rates (000#6); the entropy bounds on every row (the range form and the spectral form after Zhai et al. 2023,
the dilution bound for 000#6); the entropy of Gaussian-logit rows at initialisation and past the breakdown of the
large-n law; sigmoid row totals at initialisation (000#17); logit growth and entropy collapse in training (Zhai et al.
2023, Wortsman et al. 2023); models with and without LayerNorm and GELU (004#30); trained retrieval at longer
contexts, softmax against SSMax (000#6); trained sigmoid attention against softmax (000#17). No claim of this probe
names a regime, so it declares no scope checks."""

from analysis.claims.specs import declare
from probes.attention_entropy.declarations import initialisation, nonlinearities, retrieval, training

DECLARED = declare(
    "attention_entropy",
    *initialisation.SPECS,
    *training.SPECS,
    *nonlinearities.SPECS,
    *retrieval.SPECS,
)
