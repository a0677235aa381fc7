r"""In-context learning as gradient descent: trained linear self-attention against one step of GD.

von Oswald et al. 2023 train a single linear self-attention (LSA) layer on in-context linear
regression (tokens e_i = (x_i, y_i), query (x_q, 0), prediction read from the query's y-slot) and
find that it implements one step of gradient descent on the in-context loss from w = 0:
yhat = eta x_q^T (1/N) sum_i y_i x_i. Mahankali et al. 2023 and Ahn et al. 2023 prove that this is
the optimum of one LSA layer (one step of *preconditioned* GD for anisotropic inputs). This probe

1. checks the exact construction: the weights of :func:`analysis.theory.icl_gd.gd_lsa_stack`, loaded
   into our ``TinyTransformer`` (linear attention, no norm, no MLP, d_model = d + 1), with the query
   hidden as a key by an attention bias of -inf, predict exactly K steps of GD (float64), and the
   closed-form one-step loss against a brute-force symbolic moment expansion (sympy);
2. checks the closed-form optimal learning rate eta* and its loss against Monte Carlo;
3. trains K-layer LSA models through :func:`analysis.training.train.train` (content-addressed cache) and
   measures the learning rate of the GD step they implement (over ``eta_seeds`` training seeds), their
   loss against the context length k beside the baselines, the cosine of d yhat / d x_q with GD, von
   Oswald's "preds diff" and "model diff", and K layers against K steps of GD and GD++;
4. runs Mahankali et al.'s setting (``mahankali``, d = 5, N = 20): one-layer linear LSAs trained on
   isotropic and anisotropic Gaussian inputs, and on isotropic ones with ReLU responses, against one GD
   step / one step preconditioned by Gamma* / one least-squares GD step at the ReLU law's own eta*, by
   loss and by the step matrix fitted to their predictions;
5. Monte Carlo of Bayes ridge and least squares on Gaussian inputs (``ridge_mc_*``) against their
   closed forms (exact inverse Wishart; Marchenko-Pastur, drawn only);
6. trains (cached) a small standard transformer (softmax, pre-LN, MLP, learned positions) on the
   interleaved layout of Garg et al. 2022, (x_1, 0), (0, y_1), ..., and measures its loss in predicting
   y_k from the k examples before it against least squares, ridge at the Bayes-optimal lambda, 3-NN,
   averaging and one GD step at eta*(k), paired on the same tasks.

:func:`run` measures; the claims are made by small functions (``claims_*``, one per theorem or paper,
listed in ``CLAIMS``) that read only the result. Each prediction's band is the 95% Student-t band of
the one band policy (:mod:`analysis.claims.evidence`) and names the alternative a competing hypothesis predicts:
claims on trained models take it over independent training seeds (``<part>_seeds`` replicates,
:func:`part_seeds`; replicate 0 is ``seed``, the model the figures show), each replicate measured paired
against its reference on the same tasks; closed forms checked by Monte Carlo (no model) take the Monte
Carlo SE (``within_run``, normal limit). Issue 17's criteria (5%, 1%, cosine 0.99) stay criterion bands.

Conventions. Losses here are the plain MSE E[(yhat - y_q)^2] of the theory module; the training
task minimises half of it (von Oswald's convention; :class:`NegYReadoutTask`), which has the same
minimiser. The model reads its prediction as yhat = -(query y-slot), the construction's sign.
Models are trained and evaluated on one data law and one token layout (:mod:`analysis.data.regression_data`:
``regression_task(cfg).law``, ``concat_tokens``): training draws it with a torch generator in float32,
every evaluation with a numpy generator in float64, seeded by the measurement's purpose.

Architecture. With ``hide_query`` (default) the training task passes an attention bias of -inf on
the query's key column (``NegYReadoutTask.attn_bias``, used by ``analysis.training.train`` in training and
evaluation), so every token attends to the N context tokens only: von Oswald's architecture, in which
the K-layer construction is *exactly* K GD steps. ``hide_query=False`` trains on full attention
(``include_query=True`` in the theory module); for one layer this changes nothing at the optimum (the
query's own term is label-even, uncorrelated with y_q, and switched off), but for K > 1 the query's
running prediction feeds back through later layers. Even in the exact architecture a trained K-layer
stack is not restricted to plain GD: it can also transform the context inputs between layers
("GD++", von Oswald et al. Sec. 3), so it may beat K steps of GD at their best learning rates; the
depth claims test GD++ against plain GD as the alternative. All measurements use the model
exactly as trained (same attention support), in float64.

Initialisation and schedule. Weights start at N(0, 0.02^2) (``init_std``; from fan-in init a 2-layer
stack starts at losses ~1e5); Adam at lr 2e-2 with cosine decay converges in 2000 steps, where von
Oswald et al. use about 5000 at a constant rate. Stacks with K >= 2 use their own schedule (``depth_*``:
warm-up to lr 1e-2, clipping, 1200 updates at batch 512; see :func:`train_config` for why).

The probe is a package of parts (:mod:`analysis.probing.parts`), one module each, in the order of their claims:
``construction``, ``eta_star``, ``one_layer`` (module ``stacks``: the trained stacks the depth and ridge parts
read), ``mahankali``, ``depth``, ``ridge``, ``garg`` (gate ``garg``), ``looped`` and ``logistic`` (gate ``lg``);
``models`` is the shared recipe and ``bands`` the claims' shared sources and seeds.
"""

from __future__ import annotations

from analysis.claims.ledger import Ledger
from analysis.data.regression_data import concat_tokens, interleaved_tokens
from analysis.probing.parts import part_of, probe_functions
from analysis.zoo.model import TinyTransformer
from probes.icl_gd import (
    construction,
    declarations,  # noqa: F401  (registers the declared claims)
    depth,
    eta_star,
    garg,
    logistic,
    looped,
    mahankali,
    ridge,
    stacks,
)
from probes.icl_gd.config import MAHANKALI_LAWS, SEED_PARTS, Config, part_seeds, spectrum
from probes.icl_gd.construction import claims_construction
from probes.icl_gd.depth import claims_depth
from probes.icl_gd.eta_star import claims_eta_star
from probes.icl_gd.garg import GARG_BASELINES, claims_garg, garg_model_config, garg_task, garg_train_config
from probes.icl_gd.looped import claims_looped, looped_config, looped_weight_vectors, with_loops
from probes.icl_gd.mahankali import claims_mahankali
from probes.icl_gd.models import (
    FUSED_LSA,
    ModelPredictor,
    NegYReadoutTask,
    as_float64,
    finish,
    lsa_weights_from_model,
    model_config,
    model_from_lsa_weights,
    prepare,
    query_key_bias,
    regression_task,
    torch_threads,
    train_config,
)
from probes.icl_gd.ridge import claims_ridge
from probes.icl_gd.stacks import claims_one_layer

NAME = "icl_gd"
DESCRIPTION = "In-context regression: trained linear self-attention vs one step of (preconditioned) GD."
# VERSION history: 12: the one band policy (95% t bands; trained claims over replicate seeds of every trained part,
# analysis.claims.evidence.replicate_seed; eta_seeds 3 -> 5, lg_seeds 2 -> 5, new depth/mahankali (5), looped/garg (3));
# 11: Mahankali et al.'s setting at d = 5, N = 20 with ReLU responses as a third law, and the
# fitted step matrix and rate claimed against the optimal ones (issue 17's 5% and 1%); 10: a softmax layer
# trained on one normalised-GD step of in-context classification, looped (000#33, probes/icl_gd/logistic.py);
# 9: looped (weight-tied) one-layer LSAs against multi-step GD and tied GD++ (003#50);
# 8: one-layer LSAs train through the hand-fused loss (analysis.zoo.fused_lsa; gradients equal to
# rounding, so the trained weights change in the last bits); 7: the exact-loss claims cite the split theory
# package (analysis.theory.icl_gd.closed_forms); 6:
# ridge baselines through the SVD (last-bit changes; tiny lam with N < d no longer fails)
VERSION = "13"  # 13: the fields speak the model's and trainer's names (n_layers, batch_size, ...)
REQUIRES = {"input": "vectors"}  # a model reading concat tokens (B, N+1, d+1), returning (B, T, d+1)

PARTS = tuple(part_of(m) for m in (construction, eta_star, stacks, mahankali, depth, ridge, garg, looped, logistic))


# every claim function in the ledger's order, each (led, ds, scalars, config): what check_claims records
CLAIMS = (
    claims_construction,
    claims_eta_star,
    claims_one_layer,
    claims_mahankali,
    claims_depth,
    claims_ridge,
    claims_garg,
    claims_looped,
    logistic.claims_classification,
)


# run(config, model=None, progress=True) and check_claims(result): the one form of a probe made of parts
run, check_claims = probe_functions(NAME, PARTS, prepare, finish=finish)


__all__ = [
    "FUSED_LSA",
    "concat_tokens",
    "interleaved_tokens",
    "CLAIMS",
    "DESCRIPTION",
    "GARG_BASELINES",
    "MAHANKALI_LAWS",
    "NAME",
    "PARTS",
    "REQUIRES",
    "SEED_PARTS",
    "VERSION",
    "Config",
    "Ledger",
    "ModelPredictor",
    "NegYReadoutTask",
    "TinyTransformer",
    "as_float64",
    "check_claims",
    "claims_depth",
    "claims_eta_star",
    "claims_mahankali",
    "claims_one_layer",
    "garg_model_config",
    "garg_task",
    "garg_train_config",
    "looped_config",
    "looped_weight_vectors",
    "lsa_weights_from_model",
    "model_config",
    "model_from_lsa_weights",
    "part_seeds",
    "query_key_bias",
    "regression_task",
    "run",
    "spectrum",
    "torch_threads",
    "train_config",
    "with_loops",
]
