"""The declared claims of representational_collapse: Barbero et al. 2024 (seed 004#81) on tiny causal models, the
decay exponent of the last-token distance of near-identical pairs against our derived rates, the collapse of
low-precision formats (our resolution and rounding models, and the fitted law's extrapolation), over-squashing by
path counting, and the exact identities of the uniform linear stack."""

from analysis.claims.specs import ClaimSpec, declare
from probes.representational_collapse.config import SOURCE

_CAUSAL_RATES = (
    "partly by construction: a causal model (bidirectional: not evaluated) with the design's position scheme; "
    "not checked: the softmax rates are asymptotic orders assuming bounded logits and large n, and the fit "
    "window [fit_lo, max_len] is finite"
)

DECLARED = declare(
    "representational_collapse",
    # --- linear_stack: exact identities of the uniform stack --------------------------------------------------
    ClaimSpec(
        name="uniform_equals_linear_stack",
        tests="software",
        comparison="identity",
        statement="A causal uniform-attention stack without norm or MLP is linear: the network's last-token states "
        "equal the exact linear stack h <- h + M h (W_o W_v)^T recomputed in float64 from its block-0 inputs.",
        quantity="max |h_last - stack(h0)| / max |h_last| (dimensionless, worst over seeds)",
        source="derivation: uniform attention without norm or MLP is exactly linear (theory module, item 5)",
        figure="rc_distance",
    ),
    ClaimSpec(
        name="sensitivity_equals_path_sum",
        tests="software",
        comparison="identity",
        statement="For the same uniform linear stack, the autograd sensitivity |dh_last/dx_i|_F equals the exact "
        "backward path recursion R^{l-1}_s = R^l_s + sum_{t>=s} R^l_t A_l / t with the model's A_l = W_o W_v.",
        quantity="max_i |autograd - path sum| / max path sum (dimensionless, worst over seeds)",
        source="derivation: backward path recursion of the linear stack (theory module, item 4)",
        figure="rc_sensitivity",
    ),
    # --- distances: the decay exponent against the derived rate ---------------------------------------------
    ClaimSpec(
        name="slope_matches_prediction",
        tests="derivation",
        comparison="law",
        paper="004#81",
        statement="Barbero et al.: «certain distinct sequences of inputs to the Transformer can yield arbitrarily "
        "close representations in the final token»; our derivation gives the last layer's rate n^-alpha: alpha 1 "
        "(repeat last), 2 (counting), 1/2 (repeat, RoPE, softmax), path-count slope (early token).",
        scope=_CAUSAL_RATES,
        quantity="fitted decay exponent alpha of the float64 last-token pair distance at the last layer",
        source=SOURCE,
        figure="rc_distance",
    ),
    ClaimSpec(
        name="slope_layer1",
        tests="derivation",
        comparison="law",
        paper="004#81",
        statement="Barbero et al.'s near-identical pairs at the first layer: our one-layer derivation gives the "
        "float64 last-token distance n^-alpha with alpha 1 (repeat last, early token), 2 (counting), 1/2 (repeat "
        "with RoPE under softmax).",
        scope=_CAUSAL_RATES,
        quantity="fitted decay exponent alpha of the float64 last-token pair distance after block 1",
        source=SOURCE,
        figure="rc_depth",
    ),
    ClaimSpec(
        name="{claim}_drifts_toward_prediction",
        tests="derivation",
        comparison="sign",
        paper="004#81",
        statement="Our rate derivation (theory module, items 1-3) is an expansion whose next order decays with n: "
        "where a fitted exponent misses, the exponent fitted on the window's upper half lies nearer the predicted "
        "one than the lower half's.",
        scope="recorded only where the exponent claim it diagnoses misses; not checked: that the next-order "
        "correction is the only cause of the miss (bounded logits are assumed, not measured)",
        quantity="alpha(upper half) - alpha(lower half) of the fit window, signed toward the prediction",
        source="derivation: the expansions' next order decays with n (theory module, items 1-3)",
        hypothesis="a constant exponent across the window: the miss is not a finite-n transient",
        figure="rc_depth",
    ),
    ClaimSpec(
        name="learned_positions_no_collapse",
        tests="derivation",
        comparison="law",
        paper="004#81",
        statement="Our derivation (theory module, item 2): with learned absolute positions the read-out position "
        "differs between the two sequences of a repeat or counting pair, so their last-token distance does not "
        "decay (alpha = 0), against Barbero et al.'s position-free collapse.",
        scope="by construction: a causal model with learned absolute positions (own or passed with a position "
        "limit) and a repeat or counting family; not checked: that the learned position embeddings of distinct "
        "positions stay O(1) apart",
        quantity="fitted decay exponent alpha of the float64 last-token pair distance",
        source="derivation: the read-out position differs between the two sequences (theory module, item 2)",
        figure="rc_pos",
    ),
    # --- oversquashing --------------------------------------------------------------------------------------
    ClaimSpec(
        name="sensitivity_first_exceeds_middle",
        tests="paper",
        comparison="sign",
        paper="004#81",
        statement="Barbero et al.: the model can «lose sensitivity to specific tokens in the input, which relates "
        "to the well-known phenomenon of over-squashing»; their path-counting bound gives early tokens more paths "
        "to the last token, so with L >= 2 the first token outweighs a middle one.",
        scope="partly by construction: a causal model with L >= 2 (one layer is not recorded, a bidirectional one "
        "is not evaluated); not checked: path counting is exact for uniform attention only, and the run does not "
        "measure how far softmax weights are from uniform",
        quantity="ln(|dh_last/dx_1|_F / |dh_last/dx_(T/2)|_F) at the last layer (nats)",
        source=f"{SOURCE}; path counting (theory module, item 4)",
        hypothesis="no position preference: a flat profile, as for one layer (ln ratio 0)",
        sign=1,
        figure="rc_sensitivity",
    ),
    # --- precision --------------------------------------------------------------------------------------------
    ClaimSpec(
        name="floor_{dtype}_exponent",
        tests="derivation",
        comparison="law",
        paper="004#81",
        statement="Our rounding model for Barbero et al.'s low-precision setting (probabilistic rounding of n-term "
        "attention sums): the format's pair-difference error against float64 is n-independent for random bases "
        "(beta = 0) and grows like a + b sqrt(n) for the coherent counting prefix (beta > 0).",
        scope="not checked: the model assumes independent zero-mean rounding errors (Higham & Mary 2019); the run "
        "measures the floor, not the independence; recorded for float32 only (coarser formats collapse inside the "
        "window)",
        quantity="exponent beta of median |(h~_a - h~_b) - (h_a - h_b)| / |h| against n",
        source="derivation: probabilistic rounding of n-term attention sums (theory module, precision)",
        # no declared sign: the counting prefix's claim (a rising floor) passes sign +1 against this hypothesis;
        # random bases predict beta = 0 and pass their own alternative's hypothesis
        hypothesis="independent roundings: an n-independent floor (beta = 0)",
        figure="rc_depth",
    ),
    ClaimSpec(
        name="collapse_{dtype}_unresolved",
        tests="derivation",
        comparison="sign",
        paper="004#81",
        statement="Barbero et al.: «This effect is exacerbated by the low-precision floating-point formats "
        "frequently used in modern LLMs»; our resolution model: once the float64 distance falls below eps|h| the "
        "format stops resolving the pair (its distance's error against float64 jumps).",
        scope="recorded only where the format's collapse length lies inside the length grid with a resolved length "
        "before it; not checked: eps|h| is a per-coordinate grid-spacing estimate, within a factor 2 of the "
        "format's true spacing",
        quantity="mean ln relative error of the dtype's distance after collapse_n minus before (nats)",
        source=SOURCE,
        hypothesis="the format resolves the pair past eps|h| as before it (no change of relative error)",
        sign=1,
        figure="rc_precision",
    ),
    # --- extension ------------------------------------------------------------------------------------------
    ClaimSpec(
        name="collapse_length_{dtype}",
        tests="derivation",
        comparison="prediction",
        paper="004#81",
        statement="Barbero et al.'s precision collapse, located by our model: the format stops resolving the pair "
        "where the main run's fitted float64 power law meets eps|h|, n* = n_a (D(n_a) / eps|h|)^(1/alpha), "
        "measured on lengths beyond max_len.",
        scope="partly by construction: a causal model whose slope CI excludes 0 (else not evaluated); not checked: "
        "that the float64 distance keeps the exponent fitted on [fit_lo, max_len] beyond max_len",
        quantity="first length n from which the float64 distance stays below eps(dtype)|h| (tokens)",
        source=f"{SOURCE}; the main run's float64 power law (collapse_prediction)",
        full=True,
        figure="rc_long_collapse",
    ),
)
