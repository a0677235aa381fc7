"""The declared claims of signal_propagation: the residual stream's growth, DeepNorm's layer change and update,
the last layer's gradient, the block Jacobians and rank collapse at initialisation (mostly our closed forms of
:mod:`analysis.theory.signal_propagation` for the papers' settings); the trained runs' DeepNet stability, gradient
profiles and Curse of Depth (the papers' own qualitative findings, at a far smaller scale); and the attention phase
diagram at initialisation (Giorlandino & Goldt's random-energy model and block map,
:mod:`analysis.theory.attention_phase`)."""

from analysis.claims.specs import declare
from probes.signal_propagation.declarations import collapse, deepnorm, growth, phase, trained

DECLARED = declare(
    "signal_propagation",
    *growth.SPECS,
    *deepnorm.SPECS,
    *collapse.SPECS,
    *trained.SPECS,
    *phase.SPECS,
)
