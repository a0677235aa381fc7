"""Part ``sigmoid``: sigmoid attention's row totals at initialisation (b = 0 and b = -ln n) against their closed
form."""

from __future__ import annotations

import math

import numpy as np
import torch

from analysis.claims.evidence import mean_se, replicate_seed
from analysis.claims.ledger import Ledger
from analysis.core.devices import model_device
from analysis.probing.base import Result
from analysis.probing.parts import Context, each_claim
from analysis.theory import attention_entropy as th
from analysis.zoo.hooks import hooks
from analysis.zoo.model import TinyTransformer
from probes.attention_entropy.config import Config
from probes.attention_entropy.models import distinct_tokens, model_config
from probes.attention_entropy.shared import residual_numbers, row_stats, score_hook_names

DESCRIPTION = "sigmoid attention's row totals at initialisation against their closed form"
FIELDS = ("replicates",)

SIGMOID_SOURCE = (
    "derivation: n E sigma(s Z + b) for i.i.d. N(0, s^2) logits (analysis.theory.attention_entropy."
    "sigmoid_row_total, Gauss-Hermite); sigmoid attention's large initial attention norms and the bias b = -ln n"
)


def _sigmoid_rows(model, tokens: torch.Tensor, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The last ``k`` query rows of one forward pass: each row's total attention weight (``hook_pattern``
    summed over keys) and its logit std (``hook_attn_scores``), both (L, H, k) in float64."""
    names = score_hook_names(model)
    totals: dict[int, np.ndarray] = {}
    stds: dict[int, np.ndarray] = {}

    def on_scores(sc: torch.Tensor, name: str) -> None:  # (B, H, T, T)
        stds[int(name.split(".")[1])] = row_stats(sc[:, :, -k:], False)["std"].mean(0).cpu().numpy()

    def on_pattern(p: torch.Tensor, name: str) -> None:  # (B, H, T, T): sigmoid weights, 0 off the support
        totals[int(name.split(".")[1])] = p[:, :, -k:].double().sum(-1).mean(0).cpu().numpy()

    pattern = [f"blocks.{n.split('.')[1]}.attn.hook_pattern" for n in names]
    with torch.no_grad(), hooks(model, [(n, on_scores) for n in names] + [(n, on_pattern) for n in pattern]):
        model(tokens.to(model_device(model)))
    layers = sorted(stds)
    return np.stack([totals[lay] for lay in layers]), np.stack([stds[lay] for lay in layers])


def measure_sigmoid_totals(config: Config) -> dict[str, np.ndarray]:
    """Sigmoid attention at initialisation (seed 000#17): own untrained causal models with ``attention =
    sigmoid`` on distinct tokens, ``sigmoid_bias`` b = 0 and b = -ln n at n = ``sweep_len`` (every replicate
    model), the total weight of each of the last ``rows_per_n`` query rows and its theory ``n_i E sigma(s Z + b)``
    at the row's measured logit std (``n_i`` = the keys row i sees). Arrays (bias, replicate, layer, head, row)."""
    n_ = config.sweep_len
    k = min(config.rows_per_n, n_)  # rows_per_n is checked against ctx_lens, not against sweep_len
    biases = np.array([0.0, -math.log(n_)])
    shape = (len(biases), config.replicates, config.model.n_layers, config.model.n_heads, k)
    total, std = np.full(shape, np.nan), np.full(shape, np.nan)
    for a, b in enumerate(biases):
        for r in range(config.replicates):
            seed = replicate_seed(config.seed, r)  # as the replicate models
            cfg = model_config(config, vocab=n_, attention="sigmoid", seed=seed).replace(sigmoid_bias=float(b))
            model = TinyTransformer(cfg, device=config.torch_device()).eval()
            total[a, r], std[a, r] = _sigmoid_rows(model, distinct_tokens(n_, seed), k)
    keys = np.arange(n_ - k + 1, n_ + 1)
    theory = th.sigmoid_row_total(keys, std, biases[:, None, None, None, None])
    return {"total": total, "std": std, "theory": theory, "bias": biases, "keys": keys}


def sigmoid_arrays(sig: dict | None) -> tuple[dict, dict]:
    """The sigmoid row totals as dataset variables and coordinates (empty when not measured)."""
    if sig is None:
        return {}, {}
    dims = ("bias", "replicate", "layer", "head", "keys")
    data = {
        "sigmoid_total": (dims, sig["total"]),
        "sigmoid_logit_std": (dims, sig["std"]),
        "sigmoid_total_theory": (dims, sig["theory"]),
    }
    return data, {"bias": sig["bias"], "keys": sig["keys"]}


def measure(ctx: Context) -> None:
    data, coords = sigmoid_arrays(measure_sigmoid_totals(ctx.config) if ctx.own_model else None)
    ctx.data.update(data)
    ctx.coords.update(coords)


def claim_sigmoid_row_totals(led: Ledger, r: Result) -> None:
    """Sigmoid attention at initialisation: a row's total weight is n E sigma(s Z + b) at the measured logit
    std, about 1 with b = -ln n and exactly n/2 in expectation with b = 0 (symmetric logits)."""
    ds = r.data
    names = ("sigmoid_row_total_zero_bias", "sigmoid_row_total_minus_ln_n")
    if "sigmoid_total" not in ds:
        for name in names:
            led.judge(name, reason="measured on own untrained models only")
        return
    n = int(ds["keys"].max())
    half = float(ds["keys"].mean()) / 2.0  # the zero-bias expectation n_i / 2, averaged over the rows
    alternatives = {
        names[0]: (1.0, "sigmoid rows are normalised like softmax rows: total weight 1"),
        names[1]: (half, "the bias does not matter: the zero-bias total n/2"),
    }
    for a, name in enumerate(names):
        meas = ds["sigmoid_total"].isel(bias=a).values  # (R, L, H, rows)
        theo = ds["sigmoid_total_theory"].isel(bias=a).values
        resid = mean_se((meas - theo).mean((1, 2, 3)))  # per independent model: mean over layers, heads, rows
        alt, hyp = alternatives[name]
        b = float(ds["bias"].values[a])
        led.judge(
            name,
            band=residual_numbers(meas, theo, resid),
            alternative=alt,
            hypothesis=hyp,
            why=f"95% t band over {resid.n} independent models (replicate seeds): se is the standard error over "
            f"models of each model's mean residual (measured - theory) over its layers, heads and rows "
            f"(dof {resid.n} - 1)",
            statement=f"n = {n}, b = {b:.3g}: the total weight of a sigmoid-attention row at initialisation = "
            f"n E sigma(s Z + b) at the measured logit std, mean over the last {ds['keys'].size} rows",
        )


claims = each_claim(claim_sigmoid_row_totals)
