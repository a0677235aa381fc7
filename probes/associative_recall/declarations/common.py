"""What several groups of the declared claims of ``associative_recall`` share (or other probes' claims quote)."""

MEMORY_SCOPE = (
    "by construction: keys uniform on the unit sphere and independent unit values, written through the mixer's own "
    "code in float64 (no weights), exactly the closed form's hypotheses"
)
