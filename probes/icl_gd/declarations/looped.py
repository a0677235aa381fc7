"""The declared claims of ``icl_gd``: looped LSAs (Chen et al., 003#50) and a looped softmax layer (000#33)."""

from analysis.claims.specs import ClaimSpec
from probes.icl_gd.bands import SOURCE_LOOPED
from probes.icl_gd.logistic import CRITERION as LG_CRITERION
from probes.icl_gd.logistic import SOURCE as LG_SOURCE

# Chen et al. (003#50) and the looped softmax paper (000#33), quoted from ../shared/SEED_CATALOGUE.md
_CHEN = (
    "«as long as the input data has a constant condition number, e.g., n = O(d), the linear looped Transformers can "
    "achieve a small error by multi-step gradient descent»"
)
_LG_LOOP = (
    "«(i) training a single self-attention layer supervised by one-step gradient descent, and (ii) recurrently "
    "applying the trained layer to obtain a looped model»; «each layer exactly performing one step of normalized "
    "gradient descent on an in-context loss»"
)
_LOOPED = (
    "by construction: a weight-tied one-layer linear LSA (query hidden as a key) trained with T loops at n = 4 d "
    "(n = O(d)) on Gaussian inputs, isotropic or of constant condition number cond; the GD it is read against "
    "uses the step read off its own weights"
)

SPECS = (
    # ---- looped LSAs (Chen et al., 003#50)
    ClaimSpec(
        name="looped_construction_equals_gd",
        tests="software",
        comparison="identity",
        paper="003#50",
        statement="one GD layer (von Oswald et al.'s construction) applied k times by the zoo's weight tying "
        "predicts exactly k GD steps, k = 1..looped_eval_loops (float64 rounding bound)",
        quantity="max |looped LSA - k-step GD| in units of the float64 summation bound (dimensionless)",
        source="von Oswald et al. 2023 Prop. 1 (one GD step per layer) with the zoo's weight tying (loops)",
    ),
    ClaimSpec(
        name="looped_{law}_gd_fitted_step",
        tests="toy_model",
        comparison="prediction",
        paper="003#50",
        statement=_CHEN,
        scope=_LOOPED,
        quantity="ln(model squared weight error after T loops / exact T-step GD error at its fitted step), per seed",
        source=SOURCE_LOOPED,
        hypothesis="no gain after the first loop: the one-step error of GD at the fitted step, repeated",
        full=True,
    ),
    ClaimSpec(
        name="looped_{law}_tied_gdpp",
        tests="toy_model",
        comparison="prediction",
        paper="vonoswald2023",
        statement="von Oswald et al. 2023 Sec. 3: a trained LSA implements GD++ (a GD step on w plus a "
        "transformation of the inputs); weight-tied, each loop one GD++ step read off the layer's structured blocks",
        scope=_LOOPED,
        quantity="squared weight error at the worst loop k <= T, mean over seeds (units of |w|^2)",
        source="von Oswald et al. 2023 Sec. 3 (GD++), weight-tied; derivation: analysis.theory.looped.looped_lsa_maps",
        hypothesis="plain (preconditioned) GD at the fitted step: the same weights without their input writes",
        full=True,
    ),
    ClaimSpec(
        name="looped_{law}_error_falls_every_loop",
        tests="paper",
        comparison="sign",
        paper="003#50",
        statement=_CHEN,
        scope=_LOOPED + "; loops past the trained T extrapolate beyond the training",
        quantity="paired change of the squared weight error from loop k to k + 1, worst k, mean over seeds",
        source=SOURCE_LOOPED,
        hypothesis="an extra loop does not lower the weight error (no gain past one step, or past the trained loop "
        "count)",
        sign=-1,
        full=True,
    ),
    # ---- looped softmax layer, in-context classification (000#33)
    ClaimSpec(
        name="lg_construction_is_normalised_gd",
        tests="software",
        comparison="identity",
        paper="000#33",
        statement="one softmax head (q = w, k_i = -z_i, v_i = z_i, W_o = eta I; query hidden as a key) applied to "
        "w_t gives w_(t+1) of normalised GD on the log-mean-exp margin loss (float64 rounding bound)",
        quantity="max |head(w_t) - w_(t+1)| in units of the per-step rounding bound (dimensionless)",
        source=f"{LG_SOURCE}: q = w, k_i = -z_i, v_i = z_i, W_o = eta I into the w-slot; query hidden as a key",
        figure="icl_looped_softmax",
    ),
    ClaimSpec(
        name="lg_looped_tracks_gd_T{T}",
        tests="paper",
        comparison="prediction",
        paper="000#33",
        statement=_LG_LOOP,
        scope="by construction: a one-head softmax layer trained on one normalised-GD step (iterates |w| up to "
        "lg_radius, covering the loops) and looped from w = 0; not checked: the in-context loss is our "
        "log-mean-exp margin loss (analysis/theory/logistic_icl.py), our reading of the paper's",
        quantity="cos(w_T, T-step normalised GD), worst seed's mean over prompts (dimensionless)",
        source=f"issue 17 (cosine >= {LG_CRITERION}); {LG_SOURCE}: the one-step target identifies the construction",
        hypothesis="the layer's attention stays uniform (linear attention): every loop adds eta z_bar, so its "
        "iterate keeps the class-mean direction z_bar",
        figure="icl_looped_softmax",
        full=True,
    ),
)
