"""Every claim of the probe in the ledger's order (:data:`CLAIMS`, then the phase part's)."""

from __future__ import annotations

import xarray as xr

from analysis.ledger import Ledger
from analysis.theory import signal_propagation as th
from probes.base import Result
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
from probes.signal_propagation.config import NAME, Config

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


def check_claims(result: Result) -> Ledger:
    """The ledger of ``result`` (what :func:`run` records, and what :func:`probes.base.judged` makes again
    for a result from the cache): the zoo sweep's claims; none for a passed model (:func:`run_model` makes
    no claim about it)."""
    led = Ledger(NAME, preset=result.config.preset_name)
    if result.data.attrs.get("source") != "passed model":
        record_claims(result.config, result.data, led)
    return led


def record_claims(cfg: Config, data: xr.Dataset, led: Ledger) -> dict:
    """Record every comparison with theory or a paper in ``led`` (one function per theorem or paper,
    :data:`CLAIMS`); returns the probe's scalars."""
    scalars: dict = {"gelu_second_moment": th.gelu_second_moment(1.0)}
    for claim in CLAIMS:
        claim(cfg, data, led, scalars)
    phase_claims.claims(cfg, data, led, scalars)
    for norm in data.norm.values:
        for L in data.depth.values:
            scalars[f"loss_{norm}_L{L}"] = float(data["loss"].sel(norm=norm, depth=L).mean())
    return scalars
