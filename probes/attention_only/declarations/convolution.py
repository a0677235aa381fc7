"""The declared claims of ``attention_only``: a layer as a convolution (004#89)."""

from analysis.claims.specs import ClaimSpec
from probes.attention_only.config import SOURCE

_Q_CONV = "«a single ViT layer with image patches as the input can perform any convolution operation constructively»"
_CONV_LAYER = (
    "by construction: the trained layers are content-free (uniform kernel plus a relative-position bias, no norm, "
    "no residual, no MLP: linear) and the error is their exact population error on white Gaussian inputs over the "
    "rows t >= K - 1, as the derivation assumes"
)

SPECS = (
    # ---------------------------------------------------------------------------------------- convolution (004#89)
    ClaimSpec(
        name="conv_by_attention_exact",
        tests="software",
        comparison="identity",
        paper="004#89",
        statement="one layer of K relative-position heads (bias 0 at offset h, -inf elsewhere; W_o,h = W_h) reproduces "
        "a K-tap causal convolution with zero padding, in float64 to rounding",
        quantity="largest relative difference from conv1d (dimensionless)",
        source=f"{SOURCE}, item 1: K heads, bias 0 at offset h and -inf elsewhere, W_o,h = W_h",
        figure="ao_convolution",
    ),
    ClaimSpec(
        name="conv_heads{h}_rel_mse_above_rank_bound",
        tests="derivation",
        comparison="bound",
        paper="004#89",
        statement="our derivation for the paper's construction (its lower bound on heads, 1-D causal): H content-free "
        "heads computing a K-tap convolution have relative MSE >= sum_(i>H) s_i^2 / sum s_i^2, Eckart-Young on the "
        "unfolded kernel",
        scope=_CONV_LAYER,
        quantity="population relative MSE of the best row and seed (dimensionless)",
        source=f"{SOURCE}, item 2: yhat_t = sum_s A_t[s] M, rank <= H; Eckart-Young on the unfolded kernel",
        relation=">=",
        figure="ao_convolution",
        full=True,
    ),
    ClaimSpec(
        name="conv_heads{taps}_at_pattern_floor",
        tests="derivation",
        comparison="bound",
        paper="004#89",
        statement="our derivation: with its softmax patterns fixed, a content-free layer's best maps are a "
        "least-squares fit, so K trained heads' relative MSE >= the floor their (finite-bias) patterns leave",
        scope=_CONV_LAYER,
        quantity="mean over seeds of the population relative MSE (dimensionless)",
        source=f"{SOURCE}, item 2 with the trained patterns fixed: the best maps M_h are a least-squares fit",
        relation=">=",
        figure="ao_convolution",
        full=True,
    ),
    ClaimSpec(
        name="conv_heads_K_reach_exact",
        tests="toy_model",
        comparison="prediction",
        paper="004#89",
        statement=f"the paper's construction: {_Q_CONV}; K trained content-free heads reach it (relative MSE -> 0)",
        scope="by construction: K content-free relative-position heads on white inputs, the construction's "
        "architecture; not met: the exact construction needs -inf biases (one-hot patterns), out of reach of "
        "finite trained softmax biases",
        quantity="population relative MSE of K trained heads, per seed (dimensionless)",
        source=f"{SOURCE}, items 1-2: K heads express the convolution exactly",
        hypothesis="K heads do no better than K - 1: the rank-(K - 1) bound",
        figure="ao_convolution",
        full=True,
    ),
)
