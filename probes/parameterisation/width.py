"""Part ``width``: the coordinate check over width. Models of every width in ``widths`` (``n_layers`` blocks,
``n_heads`` heads, one token mixer of ``mixers``), standard and muP (``base_d_model``), one sequence of ``seq_len``
i.i.d. tokens per seed: the coordinate sizes at initialisation of the attention scores, the branch outputs and the
logits, and every layer's own update ``dW x`` after the first step of Adam and of SGD; each one's width exponent
(least-squares slope of ln size on ln d, per seed) against :mod:`analysis.theory.width`'s, the other
parameterisation's exponent as the alternative."""

from __future__ import annotations

import numpy as np

from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from analysis.probing.parts import Context, each_claim, log_slopes, over_replicates
from analysis.theory import width as th
from analysis.zoo.model import ModelConfig
from probes.parameterisation.config import MIXER, OPTIMIZERS, SOURCE, WIDTH_PARAMETERISATIONS, Config
from probes.parameterisation.measure import by_class, first_update, sequence

DESCRIPTION = "muP's coordinate check: every layer's size at init and first-update size against width, Adam and SGD"
FIELDS = ("widths", "base_d_model", "n_layers", "n_heads", "vocab_size", "seq_len", "mixers", "adam_lr", "sgd_lr",
          "width_seeds")  # fmt: skip
FIGURE = "param_exponents"
# a measured exponent is within TOLERANCE of the derived one: the laws are asymptotic in d, fitted over d <= 512
TOLERANCE = 0.2
TOLERANCE_WHY = (
    f"criterion: within {TOLERANCE} of the derived exponent, a large-width law fitted over the run's widths (the "
    "incoherent part of dW x, of relative size sqrt(positions / d), and O(1/d) terms bend a fitted slope at d <= 512); "
    f"{TOLERANCE} is 0.4 of the smallest gap (1/2) between the two parameterisations' exponents, so the band never "
    "holds both"
)


def model_config(c: Config, mixer: str, parameterisation: str, d: int, seed: int) -> ModelConfig:
    """The width check's model of ``mixer`` at width ``d`` under ``parameterisation``."""
    extra = {} if parameterisation == "standard" else {"parameterisation": "mup", "base_d_model": c.base_d_model}
    return ModelConfig(
        vocab_size=c.vocab_size, d_model=d, n_layers=c.n_layers, n_heads=c.n_heads, seed=seed, **MIXER[mixer], **extra
    )


def measure_seed(c: Config, seed: int) -> dict[str, np.ndarray]:
    """One replicate: ``own`` (mixer, optimizer, parameterisation, layer, width) and ``init`` (mixer,
    parameterisation, quantity, width); NaN where a model has no such layer."""
    tokens, targets = sequence(c.vocab_size, c.seq_len, seed)
    own = np.full((len(c.mixers), len(OPTIMIZERS), len(WIDTH_PARAMETERISATIONS), len(th.LAYERS), len(c.widths)), np.nan)
    init = np.full((len(c.mixers), len(WIDTH_PARAMETERISATIONS), len(th.INIT_QUANTITIES), len(c.widths)), np.nan)
    for i, mixer in enumerate(c.mixers):
        for k, p in enumerate(WIDTH_PARAMETERISATIONS):
            for w, d in enumerate(c.widths):
                cfg = model_config(c, mixer, p, d, seed)
                for j, opt in enumerate(OPTIMIZERS):
                    r = first_update(cfg, opt, c.adam_lr if opt == "adam" else c.sgd_lr, tokens, targets)
                    own[i, j, k, :, w] = [by_class(r["own"])[layer] for layer in th.LAYERS]
                    if opt == "adam":
                        init[i, k, :, w] = [r[f"init_{q}"] for q in th.INIT_QUANTITIES]
    return {"own": own, "init": init}


def measure(ctx: Context) -> None:
    c = ctx.config
    got = over_replicates(c.seed, c.width_seeds, lambda s: measure_seed(c, s), progress=ctx.progress,
                          desc="width replicates")  # fmt: skip
    ctx.data["own_update"] = (("mixer", "optimizer", "parameterisation", "layer", "width", "width_seed"), got["own"])
    ctx.data["init_size"] = (("mixer", "parameterisation", "init_quantity", "width", "width_seed"), got["init"])
    ctx.coords.update(
        mixer=list(c.mixers), optimizer=list(OPTIMIZERS), parameterisation=list(WIDTH_PARAMETERISATIONS),
        layer=list(th.LAYERS), init_quantity=list(th.INIT_QUANTITIES), width=list(c.widths),
        width_seed=list(range(c.width_seeds)),
    )  # fmt: skip


def _judge_exponent(led: Ledger, name: str, values, widths, expected: float, alternative: float, what: str) -> None:
    slopes = log_slopes(values, widths)
    led.judge(
        name,
        measured=float(slopes.mean()),
        expected=expected,
        alternative=alternative,
        atol=TOLERANCE,
        why=f"{TOLERANCE_WHY}; per-seed slopes {np.round(slopes, 3).tolist()}",
        statement=f"{what}: slope of ln size on ln d over d = {list(widths)} is {expected:+g} ({SOURCE})",
    )


def claim_own_update_exponents(led: Ledger, r: Result) -> None:
    """Each layer's first-update exponent, per mixer, optimizer and parameterisation, where the two
    parameterisations' derived exponents differ (the other's is the alternative)."""
    c, d = r.config, r.data
    for mixer in c.mixers:
        for opt in OPTIMIZERS:
            for p in WIDTH_PARAMETERISATIONS:
                other = "mup" if p == "standard" else "standard"
                for layer in th.MIXER_LAYERS[mixer]:
                    e = th.own_update_exponent(layer, opt, p, mixer)
                    alt = th.own_update_exponent(layer, opt, other, mixer)
                    if e == alt:
                        continue
                    values = d["own_update"].sel(mixer=mixer, optimizer=opt, parameterisation=p, layer=layer).values
                    what = f"{mixer}, {p}, {opt} (lr {c.adam_lr if opt == 'adam' else c.sgd_lr:g}): {layer}'s own dW x"
                    _judge_exponent(
                        led, f"own_update_exponent_{mixer}_{opt}_{p}_{layer}", values, c.widths, e, alt, what
                    )


def claim_init_exponents(led: Ledger, r: Result) -> None:
    """The sizes at initialisation whose exponent is not 0 under one of the parameterisations: the attention scores
    and the logits (the other parameterisation's exponent the alternative), and Gated DeltaNet's branch output (the
    alternative: 0, an O(1) read-out like softmax attention's average of values)."""
    c, d = r.config, r.data
    for mixer in c.mixers:
        for p in WIDTH_PARAMETERISATIONS:
            other = "mup" if p == "standard" else "standard"
            for q in th.INIT_QUANTITIES:
                if q == "attn_scores" and mixer != "softmax":
                    continue
                e = th.init_exponent(q, p, mixer)
                alt = th.init_exponent(q, other, mixer) if q != "attn_out" else th.init_exponent(q, p, "softmax")
                if e == alt:
                    continue
                values = d["init_size"].sel(mixer=mixer, parameterisation=p, init_quantity=q).values
                _judge_exponent(
                    led, f"init_exponent_{mixer}_{p}_{q}", values, c.widths, e, alt, f"{mixer}, {p}: {q} at init"
                )


claims = each_claim(claim_own_update_exponents, claim_init_exponents)
