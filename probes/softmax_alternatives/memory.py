"""Part ``memory`` (seed 000#40): the zoo's MLP read as a key-value memory, with ReLU and with softmax over its slots;
the output's second moment against the slot count n, measured at initialisation against its closed form."""

from __future__ import annotations

import math

import numpy as np
import torch

from analysis.claims.evidence import replicate_seed
from analysis.claims.ledger import Ledger
from analysis.core.progress import bar
from analysis.probing.base import MAX_SEED, Result
from analysis.probing.parts import Context, each_claim
from analysis.theory import softmax_alternatives as th
from analysis.theory.signal_propagation import loglog_slope
from analysis.training.train import derived_seed
from analysis.zoo.model import TinyTransformer, one_head_layer
from probes.softmax_alternatives.config import Config
from probes.softmax_alternatives.references import SOURCE

DESCRIPTION = "ReLU and softmax key-value memories (the MLP): output second moment against the slot count"
FIELDS = ("memory_slots", "memory_d_model", "memory_std", "memory_batch_size", "memory_seeds")

ACTIVATIONS = th.ACTIVATIONS  # ("relu", "softmax")
FIGURE = "sa_memory_slots"
HYP_EQUIVALENT = "the activation does not change how the read scales with the slot count (the other activation's slope)"


def memory_model(config: Config, activation: str, n: int, seed: int) -> TinyTransformer:
    """One layer of the zoo whose MLP is the memory: width ``memory_d_model``, ``n`` hidden units, ``activation``
    (``softmax``: over the hidden units), the gpt2 init at ``init_std = memory_std`` (keys N(0, std^2), values
    N(0, std^2 / 2), biases 0), float64. The weights depend on ``seed`` and the shapes only, so the ReLU and the
    softmax memory of one seed and slot count are the same keys and values."""
    cfg = one_head_layer(
        config.memory.d_model,
        d_mlp=n,
        activation=activation,
        init="gpt2",
        init_std=config.memory.std,
        dtype="float64",
        seed=seed,
    )
    return TinyTransformer(cfg).eval()


def value_std(config: Config) -> float:
    """The values' std: the zoo's gpt2 rule divides an output projection's std by sqrt(2 L), here L = 1."""
    return config.memory.std / math.sqrt(2.0)


def sphere_inputs(config: Config, seed: int) -> torch.Tensor:
    """(memory_batch_size, d) float64 inputs uniform on the sphere of radius sqrt(d) (so ``|x|^2 = d`` exactly)."""
    g = torch.Generator().manual_seed(derived_seed(seed, "memory_inputs"))
    z = torch.randn(config.memory.batch_size, config.memory.d_model, generator=g, dtype=torch.float64)
    return z * (math.sqrt(config.memory.d_model) / z.norm(dim=-1, keepdim=True))


def predicted_moment(config: Config, activation: str) -> np.ndarray:
    """(slots,) ``E|o|^2`` of the memories from :func:`analysis.theory.softmax_alternatives.memory_output_moment`."""
    d = config.memory.d_model
    return th.memory_output_moment(activation, config.memory.slots, config.memory.std, value_std(config), d, d)


def _measure_all(c: Config, moment: np.ndarray, steps) -> None:
    """``moment[a, j, i]``: mean ``|o|^2`` over seed i's inputs of its memory with ``slots[j]`` slots and
    activation a (one weight draw per seed and slot count, shared by the activations)."""
    for i in range(c.memory.seeds):
        seed = replicate_seed(c.seed, i)
        x = sphere_inputs(c, seed)
        for j, n in enumerate(c.memory.slots):
            weights = derived_seed(seed, f"memory_n{n}") % MAX_SEED
            for a, activation in enumerate(ACTIVATIONS):
                mlp = memory_model(c, activation, n, weights).blocks[0].mlp
                with torch.no_grad():
                    moment[a, j, i] = float(mlp(x).pow(2).sum(-1).mean())
            steps.update()


def measure(ctx: Context) -> None:
    c = ctx.config
    slots, S = c.memory.slots, c.memory.seeds
    moment = np.empty((len(ACTIVATIONS), len(slots), S))
    with bar(total=len(slots) * S, progress=ctx.progress, desc="memories", unit="memory") as steps:
        _measure_all(c, moment, steps)
    ctx.data["memory_moment"] = (("activation", "slots", "memory_seed"), moment)
    ctx.data["memory_theory"] = (("activation", "slots"), np.stack([predicted_moment(c, a) for a in ACTIVATIONS]))
    ctx.data["memory_uniform"] = (("slots",), value_std(c) ** 2 * c.memory.d_model / np.asarray(slots, np.float64))
    ctx.coords.update(activation=list(ACTIVATIONS), slots=list(slots), memory_seed=list(range(S)))
    ctx.scalars["memory_logit_std"] = c.memory.std * math.sqrt(c.memory.d_model)


def seed_slopes(r: Result, activation: str) -> np.ndarray:
    """(seeds,) each seed's least-squares slope of ln E|o|^2 on ln n."""
    d = r.data
    m = d["memory_moment"].sel(activation=activation).values  # (slots, seed)
    return np.array([loglog_slope(d["slots"].values, m[:, i])[0] for i in range(m.shape[1])])


def predicted_slope(r: Result, activation: str) -> float:
    """The least-squares slope of ln E|o|^2 on ln n of the closed form over the same slot counts."""
    d = r.data
    return loglog_slope(d["slots"].values, d["memory_theory"].sel(activation=activation).values)[0]


def claim_slot_slopes(led: Ledger, r: Result) -> None:
    """Shen et al. 2023 (000#40): a ReLU memory's output grows with its slot count, a softmax memory's shrinks.
    Each activation's slope in ln n against the closed form's, the other activation's as the alternative."""
    S = r.data.sizes["memory_seed"]
    slopes = {a: predicted_slope(r, a) for a in ACTIVATIONS}
    growth = {"relu": "grows like n (n s^2 / 2 per unit value variance)", "softmax": "shrinks like 1/n"}
    for activation, other in (("relu", "softmax"), ("softmax", "relu")):
        led.judge(
            f"memory_{activation}_slot_slope",
            replicates=seed_slopes(r, activation),
            expected=slopes[activation],
            alternative=slopes[other],
            source=f"{SOURCE}: E|o|^2 = m b^2 E[sum_i f_i^2]; f = {activation}: {growth[activation]}",
            why=f"95% t band over {S} independent memories (replicate seeds) of each one's least-squares slope of "
            "ln(mean |o|^2 over the inputs) on ln n",
            statement=f"{activation} memory at initialisation: d ln E|o|^2 / d ln n equals the closed form's "
            f"{slopes[activation]:+.3f}",
        )


def claim_softmax_concentration(led: Ledger, r: Result) -> None:
    """The softmax memory reads ``E[sum p_i^2]`` (exact quadrature, ``~ e^{s^2}/n``), not the ``1/n`` of uniform
    weights: each seed's measured moment over the closed form, averaged over the slot counts, is 1."""
    d = r.data
    measured = d["memory_moment"].sel(activation="softmax").values  # (slots, seed)
    theory = d["memory_theory"].sel(activation="softmax").values  # (slots,)
    S = d.sizes["memory_seed"]
    s = r.scalars["memory_logit_std"]
    led.judge(
        "memory_softmax_concentration",
        replicates=(measured / theory[:, None]).mean(axis=0),
        expected=1.0,
        alternative=float(np.mean(d["memory_uniform"].values / theory)),
        why=f"95% t band over {S} independent memories of each one's mean over n of measured / closed-form E|o|^2",
        statement=f"softmax memory at s = {s:.2f}: measured E|o|^2 over m b^2 E[sum p_i^2] equals 1 (mean over n)",
    )


claims = each_claim(claim_slot_slopes, claim_softmax_concentration)
