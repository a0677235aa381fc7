"""Every claim of the probe in the ledger's order (:data:`CLAIMS`, then the phase part's), and the claims-only
parts that make them (:data:`CLAIM_PARTS`: one per claims module, in the same order)."""

from __future__ import annotations

import dataclasses

from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from analysis.probing.parts import Part, each_claim
from analysis.theory import signal_propagation as th
from probes.signal_propagation import phase_claims
from probes.signal_propagation.claims_collapse import (
    claim_collapse_prevented,
    claim_dong_doubly_exponential,
    claim_dong_mlp_slows,
    claim_gradient_profiles,
    claim_jacobian_gap,
)
from probes.signal_propagation.claims_deepnorm import (
    claim_deepnorm_layer_change,
    claim_deepnorm_update,
    claim_last_layer_gradient,
    claim_token_correlation,
)
from probes.signal_propagation.claims_growth import (
    claim_no_norm_growth,
    claim_peri_ln_linear,
    claim_post_ln_unit,
    claim_pre_ln_growth_law,
    claim_pre_ln_sum_rule,
)
from probes.signal_propagation.claims_trained import claim_curse_of_depth_trained, claim_deepnet_stability

CLAIMS = (
    claim_pre_ln_sum_rule,
    claim_peri_ln_linear,
    claim_pre_ln_growth_law,
    claim_post_ln_unit,
    claim_no_norm_growth,
    claim_deepnorm_layer_change,
    claim_deepnorm_update,
    claim_token_correlation,
    claim_last_layer_gradient,
    claim_jacobian_gap,
    claim_gradient_profiles,
    claim_dong_doubly_exponential,
    claim_dong_mlp_slows,
    claim_collapse_prevented,
    claim_deepnet_stability,
    claim_curse_of_depth_trained,
)


def _claims_of(functions: tuple) -> object:
    """A part's ``claims(led, results)``: each of ``functions`` on the zoo run (a passed model gets none). The
    claim functions also write the numbers they read into the result's scalars (:func:`record_claims`); here
    they write into a copy, so judging leaves the result as it was."""
    on_run = each_claim(*functions, when=lambda r: r.data.attrs.get("source") != "passed model")

    def claims(led: Ledger, rs: tuple[Result, ...]) -> None:
        on_run(led, tuple(dataclasses.replace(r, scalars=dict(r.scalars)) for r in rs))

    return claims


def _group(module: str) -> tuple:
    return tuple(c for c in CLAIMS if c.__module__.endswith(f".{module}"))


# (part, description, claims module): one claims-only part per claims module, in the ledger's order
CLAIM_GROUPS = (
    (
        "growth_claims",
        "variance growth: the Pre-LN sum rule and growth law, Peri-LN, Post-LN, no norm",
        "claims_growth",
    ),
    (
        "deepnorm_claims",
        "DeepNorm's layer change and update, token correlation, the last layer's gradient",
        "claims_deepnorm",
    ),
    ("collapse_claims", "Jacobian gaps, gradient profiles and Dong et al.'s rank collapse", "claims_collapse"),
    ("trained_claims", "DeepNet stability and the Curse of Depth after training", "claims_trained"),
)
CLAIM_PARTS = tuple(Part(name, text, claims=_claims_of(_group(module))) for name, text, module in CLAIM_GROUPS) + (
    Part(
        "phase_claims",
        "the attention phase diagram against the random-energy model",
        claims=_claims_of((phase_claims.claims,)),
    ),
)
assert sum(len(_group(m)) for m in ("claims_growth", "claims_deepnorm", "claims_collapse", "claims_trained")) == len(
    CLAIMS
), "every claim function belongs to one claims part"


def record_claims(result: Result, led: Ledger) -> dict:
    """Record every comparison with theory or a paper in ``led`` (one function per theorem or paper,
    :data:`CLAIMS`) and return the probe's scalars: those the claim functions write into ``result.scalars``
    (the numbers they compare), with the GELU moment and the mean loss per norm and depth."""
    data, scalars = result.data, result.scalars
    scalars["gelu_second_moment"] = th.gelu_second_moment(1.0)
    for claim in CLAIMS:
        claim(led, result)
    phase_claims.claims(led, result)
    for norm in data.norm.values:
        for L in data.depth.values:
            scalars[f"loss_{norm}_L{L}"] = float(data["loss"].sel(norm=norm, depth=L).mean())
    return scalars
