"""The alpha claims of one run: the relay model's exponent, the seed paper's range, the exponent along training."""

from __future__ import annotations

import numpy as np
import torch
import xarray as xr

from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from analysis.theory import prompt_forgetting as th
from probes.prompt_forgetting.config import Config
from probes.prompt_forgetting.models import TRAINED_ONE_SEED


def built_from_config(r: Result) -> bool:
    """Whether the probe built ``r``'s model from its config (a passed-in model: False)."""
    return not str(r.meta.get("model", "built from config")).startswith("passed in")


def unpack(rs: tuple[Result, ...]) -> tuple[Config, xr.Dataset, dict, bool, tuple[Result, ...] | None]:
    """What a claim function of the probe reads from its ``rs`` (replicate results of one design, the run itself
    first): ``rs[0]``'s config, data and scalars, whether its model was built from the config, and the replicates
    when there are more than one (their spread is then the alpha claims' band)."""
    r = rs[0]
    return r.config, r.data, r.scalars, built_from_config(r), (rs if len(rs) > 1 else None)


def float_eps(config: Config) -> float:
    return float(torch.finfo(torch.float64 if config.model.dtype == "float64" else torch.float32).eps)


def n_total(data: xr.Dataset) -> int:
    return int(data["t"].values[-1])


# why the band of a claim about one model's alpha, the bootstrap over its prompt pairs (one weight draw), stands
# alone: the within_run of the declarations judged with a CI
ONE_MODEL = (
    "the claim is about this one model (one weight seed): its alpha is fixed by its weights, and the bootstrap "
    "over prompt pairs is the uncertainty of measuring it on n_pairs prompts"
)


RELAY_SOURCE = "seed's linear relay model (theory module: relay_alpha_window over the run's own window)"


def claim_relay_exponent(led: Ledger, rs: tuple[Result, ...]) -> None:
    """Untrained pre-LN softmax with small logits as the relay model: alpha over the window = the relay's
    (``many``: replicates at independent seeds, the band their spread; else this one model's bootstrap CI)."""
    config, data, scalars, own_model, many = unpack(rs)
    if config.trained or not own_model:
        return
    L = data.sizes["layer"]
    if L == 1:  # one relay layer is pure dilution: the prediction and its alternative coincide
        led.judge(
            "alpha_matches_relay",
            reason="at L = 1 the relay model is D ~ 1/t, its own alternative: nothing to tell apart",
        )
        return
    expected = scalars["alpha_relay_window"]
    if many:
        band = dict(replicates=[r.scalars["alpha"] for r in many])
        why = over_seeds(many, "last-layer alpha")
    else:
        band = dict(measured=scalars["alpha"], ci=(scalars["alpha_ci_lo"], scalars["alpha_ci_hi"]), coverage=0.95)
        why = (
            "95% percentile bootstrap CI over prompt pairs of this one model's last-layer alpha (the same claim "
            "over weight seeds, with their spread: alpha_vs_relay_L<L> of depth_law_claims)"
        )
    led.judge(
        "alpha_matches_relay",
        expected=expected,
        band=band,
        alternative=1.0,
        # the relay model linearises near-uniform attention: logits too large to reach dilution are outside it
        regime=["condition_dilution_regime"],
        why=why,
        statement=f"untrained pre-LN softmax, L = {L}: last-layer alpha{mean_note(many)} equals the relay "
        f"model's alpha over the same window ({expected:.3f})",
    )


def over_seeds(many: tuple, what: str) -> str:
    """The ``why`` of a band over replicates at independent seeds."""
    return (
        f"95% t band ({len(many) - 1} dof) of the standard error of the mean {what} over {len(many)} independent "
        "seeds (weights, prompts, continuations and bootstrap: analysis.claims.evidence.replicate_seed)"
    )


def mean_note(many: tuple | None) -> str:
    return f" (mean over {len(many)} seeds)" if many else ""


def claim_seed_range(led: Ledger, rs: tuple[Result, ...]) -> None:
    """The seed's measured ranges: trained alpha 0.55-0.7, untrained 0.2-0.5 (large LMs, another setting);
    with replicates (``many``) their mean alpha."""
    config, data, scalars, own_model, many = unpack(rs)
    if not own_model:
        led.judge(
            "alpha_seed_range",
            reason="passed-in model: the probe does not know whether it is trained or pre-LN; its alpha "
            "is a measurement to place against the seed's ranges by hand",
        )
        return
    fam = "trained" if config.trained else "untrained"
    lo, hi = (0.55, 0.7) if config.trained else (0.2, 0.5)
    untrained = not config.trained
    measured = float(np.mean([r.scalars["alpha"] for r in many])) if many else scalars["alpha"]
    led.judge(
        f"alpha_{fam}_seed_range",
        band=dict(measured=measured, lo=lo, hi=hi),  # the measurement and the seed's range it is placed against
        why="the seed's reported range for this family (large LMs, long contexts)",
        statement=f"{fam} pre-LN softmax: last-layer alpha{mean_note(many)} in the seed's range [{lo}, {hi}]",
        scale=_seed_scale(config),
        # untrained: the cause measured in this run, the network follows the relay model of its depth
        diagnosed_by={"alpha_matches_relay": "pass"} if untrained else None,
        diagnosis=_untrained_diagnosis(config, scalars) if untrained else "",
    )


def _seed_scale(config: Config) -> str:
    """How the seed's models are larger than this run's, and the knobs that move toward them."""
    trained = f", trained {config.train.steps} updates on {config.data}" if config.trained else ", untrained"
    m = config.model
    return (
        f"the seed measures large language models (many layers, wide, long contexts); here L = {m.n_layers}, "
        f"d = {m.d_model}{trained}, T = {config.cont_len}; knob: n_layers/d_model/train_steps/cont_len"
    )


EARLY = 0.01  # "early in training": checkpoints at or before this fraction of the steps
BIAS_SOURCE = "seed: cancelling the dilution with a logit bias stops the decay early in training, reverses it after"


def claim_bias_reverses(led: Ledger, name: str, band: dict, why: str, statement: str) -> None:
    """The seed's intervention on a trained model: the cancelling bias reverses the decay (alpha < 0; alternative
    0, it only stops it; sign, hypothesis, figure and the one model's within_run declared), in the ``band`` of the
    biased alpha: its ``replicates``, or this one model's ``measured`` alpha with its 95% ``ci`` (``coverage``)."""
    led.judge(name, band=band, why=why, statement=statement)


def claim_bias_trajectory(led: Ledger, rs: tuple[Result, ...]) -> None:
    """The seed's intervention along training (000#1): the cancelling bias stops the decay early in
    training (alpha = 0 at checkpoints <= 1% of the steps; alternative: the unbiased alpha of the same
    checkpoint) and reverses it after (alpha < 0 at the last step; alternative 0, it only stops it).
    The checkpoints in between are measured and plotted, not claimed: the seed gives no sign for them.
    With replicates (``many``, trained at independent seeds) each checkpoint's band is their spread."""
    config, data, scalars, own_model, many = unpack(rs)
    if "alpha_bias_trajectory" not in data:
        return
    steps = data["train_step"].values
    why = (
        "95% percentile bootstrap CI over prompt pairs of the biased last-layer alpha at this checkpoint; "
        + TRAINED_ONE_SEED
    )
    arch = f"L = {config.model.n_layers}, {config.data} data"
    if many:
        why = over_seeds(many, "biased last-layer alpha at this checkpoint")
    for i, s in enumerate(steps):
        if many:
            band = dict(replicates=[float(r.data["alpha_bias_trajectory"].values[i]) for r in many])
            plain = float(np.mean([r.data["alpha_trajectory"].values[i] for r in many]))
        else:
            ci = tuple(float(x) for x in data["alpha_bias_trajectory_ci"].values[i])
            band = dict(measured=float(data["alpha_bias_trajectory"].values[i]), ci=ci, coverage=0.95)
            plain = float(data["alpha_trajectory"].values[i])
        if s <= EARLY * config.train.steps:
            led.judge(
                f"bias_stops_decay_step{s}",
                expected=0.0,
                band=band,
                alternative=plain,
                why=why,
                statement=f"{arch}, after {s} of {config.train.steps} updates: with the cancelling bias alpha = 0",
            )
        elif s == config.train.steps:
            claim_bias_reverses(
                led,
                "bias_reverses_decay_trained",
                band,
                why=why,
                statement=f"{arch}, trained ({s} updates): with the cancelling bias alpha < 0 (the offset grows)",
            )


def _untrained_diagnosis(config: Config, scalars: dict) -> str:
    L, N = config.model.n_layers, config.prompt_len + config.cont_len
    relay = scalars["alpha_relay_window"]
    return (
        f"the measured alpha matches the relay model of this depth L = {L} over the window ending at t = {N} "
        f"(relay alpha {relay:.2f}; its local exponent 1 - (L-1)/ln t is "
        f"{float(th.bound_local_exponent(L, N)):.2f} there): shallow depth and window, not a failure of the "
        "mechanism; the seed's networks are deeper"
    )
