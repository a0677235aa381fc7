"""The declared claims of ``icl_gd``: one trained layer per input law (Mahankali et al. 2023, 000#26)."""

from analysis.claims.specs import ClaimSpec
from probes.icl_gd.bands import HYP_INF, MC_NO_MODEL
from probes.icl_gd.declarations.common import MC
from probes.icl_gd.mahankali import MK_ALT_WORDS, MK_SOURCE

# Mahankali et al. 2023 (000#26), quoted from ../shared/SEED_CATALOGUE.md
_MK_ISO = (
    "«when the covariates are drawn from a standard Gaussian distribution, the one-layer transformer which "
    "minimizes the pre-training loss will implement a single step of GD on the least-squares linear regression "
    "objective»"
)
_MK_ANISO = (
    "«changing the distribution of the covariates and weight vector to a non-isotropic Gaussian distribution has a "
    "strong impact on the learned algorithm: the global minimizer of the pre-training loss now implements a single "
    "step of pre-conditioned GD»"
)
_MK_RELU = (
    "«even when the response comes from a more general family of nonlinear functions, the global minimizer of the "
    "pre-training loss still implements a single step of GD»"
)
_MK_TRAINED = (
    "by construction: one-layer linear LSAs trained on Mahankali et al.'s setting (d = 5, N = 20, Gaussian "
    "covariates, Gaussian w, noisy responses); not checked: that training reached the global minimiser the "
    "theorem is about"
)
_MK_ANISO_SCOPE = (
    "by construction: one-layer linear LSAs trained on x ~ N(0, Sigma) (geometric spectrum, condition number "
    "cond), d = 5, N = 20; not checked: the run keeps w ~ N(0, I) where the abstract also changes the weight "
    "vector's law, nor that training reached the global minimiser"
)

SPECS = (
    # ---- Mahankali et al. 2023 (000#26): one trained layer per input law
    ClaimSpec(
        name="mahankali_gaussian_loss",
        tests="paper",
        comparison="prediction",
        paper="000#26",
        statement=_MK_ISO,
        scope=_MK_TRAINED,
        quantity="MSE of trained 1-layer LSAs, mean over seeds (units of y^2)",
        source=f"Mahankali et al. 2023; closed form: {MK_SOURCE['gaussian']}",
        hypothesis=MK_ALT_WORDS["gaussian"],
        full=True,
    ),
    ClaimSpec(
        name="mahankali_anisotropic_loss",
        tests="paper",
        comparison="prediction",
        paper="000#26",
        statement=_MK_ANISO,
        scope=_MK_ANISO_SCOPE,
        quantity="MSE of trained 1-layer LSAs, mean over seeds (units of y^2)",
        source=f"Mahankali et al. 2023; closed form: {MK_SOURCE['anisotropic']}",
        hypothesis=MK_ALT_WORDS["anisotropic"],
        full=True,
    ),
    ClaimSpec(
        name="mahankali_relu_loss",
        tests="paper",
        comparison="prediction",
        paper="000#26",
        statement=_MK_RELU,
        scope=_MK_TRAINED + "; the nonlinear family is one instance, ReLU responses max(0, w.x) + noise",
        quantity="MSE of trained 1-layer LSAs, mean over seeds (units of y^2)",
        source=f"Mahankali et al. 2023; closed form: {MK_SOURCE['relu']}",
        hypothesis=MK_ALT_WORDS["relu"],
        full=True,
    ),
    ClaimSpec(
        name="mahankali_gaussian_loss_star_mc",
        tests="derivation",
        comparison="prediction",
        paper="000#26",
        statement="our closed form (one_step_gd_theory): the loss of one GD step at eta* for isotropic Gaussian "
        "inputs, d = 5, N = 20",
        scope=MC,
        quantity="MSE of the optimal step (units of y^2)",
        source=f"derivation: {MK_SOURCE['gaussian']}",
        hypothesis=HYP_INF + " (its loss formula at the same eta*)",
        within_run=MC_NO_MODEL,
    ),
    ClaimSpec(
        name="mahankali_anisotropic_loss_star_mc",
        tests="derivation",
        comparison="prediction",
        paper="000#26",
        statement="our closed form (optimal_preconditioner, Ahn et al.'s Lemma 1 form): the loss of one step "
        "preconditioned by Gamma* = [(1 + 1/N) Sigma + (tr Sigma + sigma^2)/N I]^-1 for x ~ N(0, Sigma)",
        scope=MC,
        quantity="MSE of the optimal preconditioned step (units of y^2)",
        source=f"derivation: {MK_SOURCE['anisotropic']}",
        hypothesis=MK_ALT_WORDS["anisotropic"],
        within_run=MC_NO_MODEL,
    ),
    ClaimSpec(
        name="mahankali_relu_loss_star_mc",
        tests="derivation",
        comparison="prediction",
        paper="000#26",
        statement="our closed form (one_step_gd_relu_theory, Stein's lemma): the loss of one least-squares GD "
        "step at the ReLU law's eta* for isotropic Gaussian inputs with responses max(0, w.x) + noise",
        scope=MC,
        quantity="MSE of the optimal step (units of y^2)",
        source=f"derivation: {MK_SOURCE['relu']}",
        hypothesis="the ReLU responses behave as linear ones: the linear law's loss formula at the same eta*",
        within_run=MC_NO_MODEL,
    ),
    ClaimSpec(
        name="mahankali_gaussian_gamma",
        tests="paper",
        comparison="prediction",
        paper="000#26",
        statement=_MK_ISO,
        scope=_MK_TRAINED,
        quantity="relative Frobenius distance |G - eta* I|/|eta* I| of the fitted step matrix, mean over seeds",
        source=f"issue 17 (within 5%, Frobenius); Mahankali et al. 2023; closed form: {MK_SOURCE['gaussian']}",
        hypothesis=MK_ALT_WORDS["gaussian"] + ": its G's distance from the optimal one",
        full=True,
    ),
    ClaimSpec(
        name="mahankali_anisotropic_gamma",
        tests="paper",
        comparison="prediction",
        paper="000#26",
        statement=_MK_ANISO,
        scope=_MK_ANISO_SCOPE,
        quantity="relative Frobenius distance |G - Gamma*|/|Gamma*| of the fitted step matrix, mean over seeds",
        source=f"issue 17 (within 5%, Frobenius); Mahankali et al. 2023; closed form: {MK_SOURCE['anisotropic']}",
        hypothesis=MK_ALT_WORDS["anisotropic"] + ": its G's distance from the optimal one",
        full=True,
    ),
    ClaimSpec(
        name="mahankali_relu_gamma",
        tests="paper",
        comparison="prediction",
        paper="000#26",
        statement=_MK_RELU,
        scope=_MK_TRAINED + "; the nonlinear family is one instance, ReLU responses max(0, w.x) + noise",
        quantity="relative Frobenius distance of the fitted step matrix from the ReLU law's eta* I, mean over seeds",
        source=f"issue 17 (within 5%, Frobenius); Mahankali et al. 2023; closed form: {MK_SOURCE['relu']}",
        hypothesis=MK_ALT_WORDS["relu"] + ": its G's distance from the optimal one",
        full=True,
    ),
    ClaimSpec(
        name="mahankali_gaussian_eta_fit",
        tests="derivation",
        comparison="prediction",
        paper="000#26",
        statement="our closed form (one_step_gd_theory): the optimal one-layer LSA for isotropic Gaussian inputs is "
        "one GD step at eta* (finite N), so the plain rate fitted to trained layers is eta*, not the untuned 1/v",
        scope=_MK_TRAINED,
        quantity="plain GD rate fitted to the predictions, mean over seeds (dimensionless)",
        source=f"issue 17 (within 1%); closed form: {MK_SOURCE['gaussian']}",
        hypothesis=MK_ALT_WORDS["gaussian"],
        full=True,
    ),
    ClaimSpec(
        name="mahankali_relu_eta_fit",
        tests="derivation",
        comparison="prediction",
        paper="000#26",
        statement="our closed form (one_step_gd_relu_theory): with ReLU responses the optimal one-layer LSA is one "
        "least-squares GD step at the ReLU law's eta* = N/(N + 2d + 3 + 4 sigma^2), not the linear law's",
        scope=_MK_TRAINED + "; the nonlinear family is one instance, ReLU responses max(0, w.x) + noise",
        quantity="plain GD rate fitted to the predictions, mean over seeds (dimensionless)",
        source=f"issue 17 (within 1%); closed form: {MK_SOURCE['relu']}",
        hypothesis=MK_ALT_WORDS["relu"],
        full=True,
    ),
)
