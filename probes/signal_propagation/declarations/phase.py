"""The declared claims of ``signal_propagation``: the attention phase diagram at initialisation."""

from analysis.claims.specs import ClaimSpec
from probes.signal_propagation.phase import SOURCE as PHASE_SOURCE
from probes.signal_propagation.phase_claims import FIGURE as PHASE_FIGURE

# the phase diagram's theory: the layer-1 row statistics and the block map of the token cosine
_PHASE_ROWS = (
    f"{PHASE_SOURCE}, sections 1-3: a row is softmax over T i.i.d. Gaussian logits of spread "
    "sigma_i = scale sqrt(1 - p) |W_k^T q_i|"
)
_PHASE_DEPTH = f"{PHASE_SOURCE}, sections 4-5: the post-LN block map of the token cosine at finite T"

SPECS = (
    # ---------------------------------------------------------------- phase_claims: the attention phase diagram
    ClaimSpec(
        name="phase_attention_overlap_identity",
        tests="software",
        comparison="identity",
        paper="giorlandino2026",
        statement="For tokens of exact pairwise cosine p and attention rows summing to 1, "
        "|sum_j a_ij x_j|^2 / d = p + (1 - p) sum_j a_ij^2 for every row (layer 1)",
        quantity="worst |difference| over rows, p, beta and seeds",
        source="algebra (attention_phase section 4): tokens with x_j . x_k = d (p + (1 - p) delta_jk) and "
        "rows summing to 1 give |sum_j a_ij x_j|^2 / d = p + (1 - p) sum_j a_ij^2",
        figure=PHASE_FIGURE,
    ),
    ClaimSpec(
        name="phase_entropy_finite_T_{p}",
        tests="derivation",
        comparison="prediction",
        paper="giorlandino2026",
        statement="Our finite-T reading of Giorlandino & Goldt's random-energy model (attention_phase sections 1-3): "
        "a layer-1 row is softmax over T i.i.d. Gaussian logits of spread sigma_i, so its H / ln T is the exact "
        "finite-T expectation at sigma_i",
        scope="by construction: embedded tokens of exact pairwise cosine p, one head with fan-in Gaussian W_q, W_k "
        "and the random-energy logit scale, float64, as the derivation assumes",
        quantity="layer-1 row entropy H / ln T minus its finite-T yardstick (worst beta of the family)",
        source=_PHASE_ROWS,
        figure=PHASE_FIGURE,
        full=True,
    ),
    ClaimSpec(
        name="phase_participation_finite_T_{p}",
        tests="derivation",
        comparison="prediction",
        paper="giorlandino2026",
        statement="Our finite-T reading of Giorlandino & Goldt's random-energy model (attention_phase sections 1-3): "
        "a layer-1 row is softmax over T i.i.d. Gaussian logits of spread sigma_i, so its sum_j a_ij^2 is the exact "
        "finite-T expectation at sigma_i",
        scope="by construction: embedded tokens of exact pairwise cosine p, one head with fan-in Gaussian W_q, W_k "
        "and the random-energy logit scale, float64, as the derivation assumes",
        quantity="layer-1 participation sum_j a_ij^2 minus its finite-T yardstick (worst beta of the family)",
        source=_PHASE_ROWS,
        figure=PHASE_FIGURE,
        full=True,
    ),
    ClaimSpec(
        name="phase_depth_cosine_{side}_{p}",
        tests="toy_model",
        comparison="prediction",
        paper="giorlandino2026",
        statement="Giorlandino & Goldt's post-LN block map of the token cosine (attention_phase sections 4-5, at "
        "finite T): below beta_c the cosine is driven to 1 with depth (rank collapse), above it entropy collapse "
        "keeps the tokens apart",
        scope="by construction the zoo block is the map's (post-LN, one head, ReLU MLP, unit skips, no biases, "
        "var_v = var_w = 1); not checked: the map is a d -> inf mean-field law, run at the design's finite width",
        quantity="token cosine after block k minus the finite-T block map (worst beta of the family)",
        source=_PHASE_DEPTH,
        figure=PHASE_FIGURE,
        full=True,
    ),
)
