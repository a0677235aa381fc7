r"""In-context linear regression as gradient descent: baselines, the exact construction, closed forms.

Everything here is float64 and model-free: it is the theory side of the ``icl_gd`` probe, which asks
whether trained linear self-attention implements gradient descent in context. It follows von Oswald et
al. 2023 (the construction, the metrics, GD++), Ahn et al. 2023 and Mahankali et al. 2023 (the optimum
of one linear self-attention layer is one step of preconditioned GD) and Garg et al. 2022 (baselines).

Modules (everything public is re-exported here, ``import analysis.theory.icl_gd as th``):

* :mod:`.data`          the data law in the theory's arguments (the one sampler is
                         :mod:`analysis.data.regression_data`, shared with the training task)
* :mod:`.baselines`     predictors with one call signature: GD, averaging, least squares, ridge, k-NN
* :mod:`.construction`  linear self-attention layers that are K steps of (preconditioned) GD
* :mod:`.closed_forms`  expected loss of one GD step, eta*, Gamma*, least squares
* :mod:`.risk`          Rao-Blackwellised Monte Carlo and every baseline's expected loss
* :mod:`.gdpp`          GD++ and fitted per-layer schedules
* :mod:`.bayes`         the Bayes-optimal ridge against the context length
* :mod:`.symbolic`      sympy brute-force checks of the closed forms
* :mod:`.metrics`       von Oswald's preds diff, model diff and sensitivity cosine
* :mod:`.implied_gd`    eta (and Gamma) read off predictions or LSA weights

Conventions (fixed once, used everywhere)
-----------------------------------------
Data. A task draws ``w ~ N(0, w_std^2 I_d)``, context inputs ``x_i`` (i = 1..N) and a query ``x_q``
i.i.d. from the input law, and labels ``y_i = w.x_i + sigma eps_i``, ``y_q = w.x_q + sigma eps_q``
with standard normal ``eps``. Input laws: ``gaussian`` N(0, I); ``uniform`` U(-1/2, 1/2)^d (per
coordinate E x^2 = v = 1/12, E x^4 = m4 = 1/80); ``anisotropic`` N(0, Sigma). ``Sigma`` always
denotes the input second moment E[x x^T].

Loss. The *loss* of a predictor is the plain mean squared error E[(yhat - y_q)^2] against the
noisy query label (``query_noise=True``, the default; ``False`` measures against w.x_q, i.e. removes
the additive sigma^2). von Oswald et al. report half of this (their ``compute_loss`` is 0.5 * MSE).

Gradient descent. The in-context loss is L(w) = 1/(2N) sum_i (w.x_i - y_i)^2 (von Oswald et al.),
so grad L(w) = (1/N) X^T (X w - y) and one step from w = 0 with learning rate eta and preconditioner
Gamma is  w_1 = eta Gamma h,  h := (1/N) sum_i y_i x_i,  yhat = x_q^T w_1 = eta x_q^T Gamma h.
With Gamma = I: yhat = eta (1/N) sum_i y_i x_i.x_q. Garg et al.'s "averaging" is eta = 1.

Ridge. w_hat = argmin_w sum_i (y_i - w.x_i)^2 + lam |w|^2 = (X^T X + lam I)^{-1} X^T y (a *sum*
over the context, not a mean). With the Gaussian prior above the posterior mean is this ridge with
lam* = sigma^2 / w_std^2, the Bayes-optimal predictor for every input law (the posterior of w given
the context is Gaussian whatever the law of x). lam = 0 means the min-norm least-squares solution.

Linear self-attention (LSA) layer, on tokens e_i = (x_i, y_i) in R^{d+1}, query token (x_q, 0)
(:func:`concat_tokens`, the layout the models are trained on)::

    e_j <- e_j + P W_V sum_{i in context} e_i (e_i^T W_K^T W_Q e_j)

no softmax, no 1/sqrt(d) scale (the 1/N lives in P), keys and values from the N context tokens only
(von Oswald's default ``include_query=False``), every token j (context and query) updated. The
prediction is read from the query token's y-slot with a minus sign: yhat = -e_q[y] (their
``preds = -h[:, -1, -1]``): the construction writes -(prediction) there.
"""

from __future__ import annotations

from analysis.data.regression_data import (
    UNIFORM_M4,
    UNIFORM_V,
    X_DISTS,
    InputLaw,
    RegressionBatch,
    RegressionLaw,
    concat_tokens,
)
from analysis.theory.icl_gd.baselines import (
    GD,
    KNN,
    Averaging,
    LeastSquares,
    LinearInY,
    Predictor,
    Ridge,
    ZeroPredictor,
    one_step_gd,
)
from analysis.theory.icl_gd.bayes import (
    marchenko_pastur_trace_inverse,
    ridge_bayes_loss_theory,
    wishart_trace_inverse,
)
from analysis.theory.icl_gd.closed_forms import (
    least_squares_theory,
    one_step_gd_relu_theory,
    one_step_gd_theory,
    optimal_preconditioner,
    preconditioned_gd_loss,
)
from analysis.theory.icl_gd.construction import (
    LinearSelfAttention,
    gd_lsa_stack,
    gd_lsa_weights,
    lsa_forward,
    read_prediction,
)
from analysis.theory.icl_gd.data import (
    geometric_spectrum,
    input_law,
    regression_law,
    sample_regression,
    second_moment,
)
from analysis.theory.icl_gd.gdpp import GDPlusPlus, fit_gd_schedule, gdpp_lsa_stack
from analysis.theory.icl_gd.implied_gd import (
    eta_from_lsa_weights,
    fit_eta,
    fit_preconditioner,
    lsa_linear_part,
)
from analysis.theory.icl_gd.metrics import (
    compare_predictors,
    model_diff,
    preds_diff,
    sensitivity,
    sensitivity_cosine,
)
from analysis.theory.icl_gd.risk import baseline_theory, conditional_loss_linear, expected_loss_mc
from analysis.theory.icl_gd.symbolic import (
    sympy_eta_star_independent,
    sympy_one_step_loss_bruteforce,
    sympy_one_step_loss_closed_form,
    sympy_symbols,
)

__all__ = [
    # the data law (analysis.data.regression_data) and its theory-side constructors (.data)
    "X_DISTS",
    "UNIFORM_V",
    "UNIFORM_M4",
    "InputLaw",
    "RegressionLaw",
    "RegressionBatch",
    "concat_tokens",
    "geometric_spectrum",
    "input_law",
    "second_moment",
    "regression_law",
    "sample_regression",
    # .baselines
    "Predictor",
    "LinearInY",
    "ZeroPredictor",
    "GD",
    "one_step_gd",
    "Averaging",
    "LeastSquares",
    "Ridge",
    "KNN",
    # .construction
    "read_prediction",
    "gd_lsa_weights",
    "gd_lsa_stack",
    "lsa_forward",
    "LinearSelfAttention",
    # .closed_forms
    "preconditioned_gd_loss",
    "one_step_gd_relu_theory",
    "one_step_gd_theory",
    "optimal_preconditioner",
    "least_squares_theory",
    # .risk
    "conditional_loss_linear",
    "expected_loss_mc",
    "baseline_theory",
    # .gdpp
    "GDPlusPlus",
    "gdpp_lsa_stack",
    "fit_gd_schedule",
    # .bayes
    "wishart_trace_inverse",
    "marchenko_pastur_trace_inverse",
    "ridge_bayes_loss_theory",
    # .symbolic
    "sympy_symbols",
    "sympy_one_step_loss_bruteforce",
    "sympy_one_step_loss_closed_form",
    "sympy_eta_star_independent",
    # .metrics
    "sensitivity",
    "preds_diff",
    "model_diff",
    "sensitivity_cosine",
    "compare_predictors",
    # .implied_gd
    "fit_eta",
    "fit_preconditioner",
    "eta_from_lsa_weights",
    "lsa_linear_part",
]
