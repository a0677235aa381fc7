"""What the declared claims of ``icl_gd`` share: the scope sentences, quotations and sources that several groups of
claims name."""

# Mahankali et al. 2023 (000#26), quoted from ../shared/SEED_CATALOGUE.md
# one statement tested by two probes (icl_gd here, associative_recall's lsa_regression_loss): the scorecard groups them
ONE_LAYER_OPTIMUM = (
    "our closed form for the setting of Mahankali et al. (and von Oswald et al.): one trained linear self-attention "
    "layer on in-context linear regression reaches its optimum, one GD step at the loss-optimal rate eta*, whose "
    "loss is loss*"
)
MK_ISO = (
    "«when the covariates are drawn from a standard Gaussian distribution, the one-layer transformer which "
    "minimizes the pre-training loss will implement a single step of GD on the least-squares linear regression "
    "objective»"
)
MK_ANISO = (
    "«changing the distribution of the covariates and weight vector to a non-isotropic Gaussian distribution has a "
    "strong impact on the learned algorithm: the global minimizer of the pre-training loss now implements a single "
    "step of pre-conditioned GD»"
)
MK_RELU = (
    "«even when the response comes from a more general family of nonlinear functions, the global minimizer of the "
    "pre-training loss still implements a single step of GD»"
)
# Chen et al. (003#50) and the looped softmax paper (000#33), quoted from ../shared/SEED_CATALOGUE.md
CHEN = (
    "«as long as the input data has a constant condition number, e.g., n = O(d), the linear looped Transformers can "
    "achieve a small error by multi-step gradient descent»"
)
LG_LOOP = (
    "«(i) training a single self-attention layer supervised by one-step gradient descent, and (ii) recurrently "
    "applying the trained layer to obtain a looped model»; «each layer exactly performing one step of normalized "
    "gradient descent on an in-context loss»"
)
MC = (
    "by construction: a closed form checked by Monte Carlo over tasks drawn from the very law (input law, d, N, "
    "noise) the closed form assumes; no model"
)
ONE_LAYER = (
    "by construction: one linear self-attention layer (no norm, no MLP, the query hidden as a key: von Oswald et "
    "al.'s architecture) trained on in-context linear regression; not checked: that training reached the loss "
    "minimiser (the band over seeds holds optimiser noise only)"
)
MK_TRAINED = (
    "by construction: one-layer linear LSAs trained on Mahankali et al.'s setting (d = 5, N = 20, Gaussian "
    "covariates, Gaussian w, noisy responses); not checked: that training reached the global minimiser the "
    "theorem is about"
)
MK_ANISO_SCOPE = (
    "by construction: one-layer linear LSAs trained on x ~ N(0, Sigma) (geometric spectrum, condition number "
    "cond), d = 5, N = 20; not checked: the run keeps w ~ N(0, I) where the abstract also changes the weight "
    "vector's law, nor that training reached the global minimiser"
)
DEPTH = (
    "by construction: K-layer linear self-attention stacks (no norm, no MLP, the query hidden as a key: von "
    "Oswald et al.'s architecture) trained on in-context linear regression; not checked: convergence of the "
    "shorter depth schedule (1200 updates), and the setting is smaller than the paper's"
)
LOOPED = (
    "by construction: a weight-tied one-layer linear LSA (query hidden as a key) trained with T loops at n = 4 d "
    "(n = O(d)) on Gaussian inputs, isotropic or of constant condition number cond; the GD it is read against "
    "uses the step read off its own weights"
)
HYP_UNTUNED = "the layer implements one GD step at the untuned rate 1/v (no finite-N correction)"
