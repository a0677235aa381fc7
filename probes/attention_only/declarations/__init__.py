"""The declared claims of attention_only: the convolution construction and the Eckart-Young head bound (004#89), the
KV-shift induction construction and the position-free ceiling (004#24), rank against heads on nearest-neighbour search
(004#72), and attention-only networks: matched parameters, QK-norm in deep stacks, stable ranks (004#1). The three
max-logit claims of the deep stacks are scope checks: the loss-spike and loss claims name them as their regime."""

from analysis.claims.specs import declare
from probes.attention_only.declarations import convolution, induction, nearest_neighbour, stacks

DECLARED = declare(
    "attention_only",
    *convolution.SPECS,
    *induction.SPECS,
    *nearest_neighbour.SPECS,
    *stacks.SPECS,
)
