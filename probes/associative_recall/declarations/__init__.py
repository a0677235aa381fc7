"""The declared claims of associative_recall: outer-product, delta-rule and decayed memories (000#66, 003#2),
their two computational forms (003#64), FAVOR+ (004#70), softmax's linear limit (000#39), trained MQAR (000#66,
003#8), gated RNNs as linear attention (003#14), selective copying (003#16), the looped power method (000#45) and
the momentum delta rule (003#112). Most numbers are our closed forms for the papers' settings (``derivation``); the
trained comparisons test the papers' own findings at toy scale; the exact rewrites are software identities."""

from analysis.claims.specs import declare
from probes.associative_recall.declarations import memories, mqar_gated, recurrences

DECLARED = declare(
    "associative_recall",
    *memories.SPECS,
    *mqar_gated.SPECS,
    *recurrences.SPECS,
)
