"""The declared claims of softmax_alternatives: random (mostly float64) layers at initialisation, and one trained
bilinear MLP, measured against closed forms, quadratures and bounds of :mod:`analysis.theory.softmax_alternatives`
derived for each seed paper's setting (ReLU and softmax memories, sparsemax, K-interval softmax, mimetic init,
SA-Softmax, linear-attention feature maps, MLP linearity, bilinear MLPs, token isolation, linear attention's
denominator, softplus_l1, shaped, sigmoid and Cog attention, parallel sublayers, persistent memory). Every
comparison but the four software identities tests our derivation, not the paper's trained-model findings; no claim
is triaged by a measured scope check, so each says how its run meets the derivation's hypotheses."""

from analysis.claims.specs import declare
from probes.softmax_alternatives.declarations import kernels, linear, variants

DECLARED = declare(
    "softmax_alternatives",
    *kernels.SPECS,
    *linear.SPECS,
    *variants.SPECS,
)
