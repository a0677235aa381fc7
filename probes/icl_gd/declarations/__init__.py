"""The declared claims of ``icl_gd``: in-context linear regression by linear self-attention against gradient descent.

Software identities (the GD constructions, exact in float64; the weight read-out; the closed-form one-step loss
against sympy); our closed forms (eta*, loss*, the optimal preconditioner, Bayes ridge, least squares) against
Monte Carlo; trained one-layer LSAs against von Oswald et al. 2023 and Mahankali et al. 2023 (000#26); trained
stacks against GD++; looped LSAs against Chen et al.'s multi-step GD (003#50); a looped softmax layer against
normalised GD (000#33); a small softmax transformer against Garg et al. 2022. No claim names a scope check: each
run meets its statements' hypotheses by construction, or the ``scope`` sentence says what it does not check.
"""

from analysis.claims.specs import declare
from probes.icl_gd.declarations import looped, mahankali, one_layer, stacks

DECLARED = declare(
    "icl_gd",
    *one_layer.SPECS,
    *mahankali.SPECS,
    *stacks.SPECS,
    *looped.SPECS,
)
