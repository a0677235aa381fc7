"""What the declared claims of ``associative_recall`` share: the scope sentences, quotations and sources that several
groups of claims name."""

MEMORY_SCOPE = (
    "by construction: keys uniform on the unit sphere and independent unit values, written through the mixer's own "
    "code in float64 (no weights), exactly the closed form's hypotheses"
)
# the MQAR seeds: an undecided comparison of mixers at 5 seeds runs again at 10, then 20 (analysis.probing.sequential)
MQAR_LOOKS = (5, 10, 20)
# what the two trained-MQAR comparisons of mixers share: seeds, the sequential design, the figure
MQAR_COMPARISON = dict(
    replicates="train_seeds",
    looks=MQAR_LOOKS,
    hypothesis="no difference between the two mixers' recall accuracy",
    sign=1,
    figure="ar_capacity",
    full=True,
)
MQAR_SCOPE = (
    "not checked: the paper's recall comparisons are of language models at scale; the run trains 2-layer, d_model 64, "
    "attention-only models for 600 steps on MQAR (paired layout), 5 replicate seeds"
)
PCA_SCOPE = (
    "not checked: the paper's result is about its trained looped transformer at convergence; the run trains one "
    "weight-tied linear-attention layer (d = 4, n = 32, T = 3 loops) for 1200 Adam steps, so a shortfall of "
    "training reads as a miss"
)
