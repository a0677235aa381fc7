"""Part ``memories`` (item 1): untrained outer-product, delta-rule and softmax memories of N unit key-value pairs
read with each key, both forms of every recurrent mixer; the additive memory's read-out error (N - 1)/d_key."""

from __future__ import annotations

import math

import numpy as np
import torch

from analysis.claims.evidence import mean_se
from analysis.claims.ledger import Ledger
from analysis.probing.base import MAX_SEED, Result
from analysis.probing.parts import Context, each_claim
from analysis.theory import associative_recall as th
from analysis.training.train import derived_seed
from analysis.zoo.recurrent import mix, retnet_decays
from probes.associative_recall.config import Config
from probes.associative_recall.favor import mc_numbers

DESCRIPTION = "untrained memories of every kernel read with each key; both forms of every recurrent mixer"
FIELDS = ("kernels", "n_pairs", "n_keys", "d_key", "draws")


def unit_vectors(gen: torch.Generator, shape: tuple[int, ...], d: int) -> torch.Tensor:
    g = torch.randn(*shape, d, generator=gen, dtype=torch.float64)
    return g / g.norm(dim=-1, keepdim=True)


def write_memory(kernel: str, keys: torch.Tensor, vals: torch.Tensor, form: str) -> torch.Tensor:
    """The state (R, dv, dk) after writing ``keys`` (R, N, dk) and ``vals`` (R, N, dv) in order, through
    the recurrent mixer's code (one head); beta = 1, gated_delta's decay RetNet's ``1 - 2^-5``."""
    k, v = keys[:, None], vals[:, None]  # (R, 1, N, d)
    ones = torch.ones(k.shape[:3], dtype=k.dtype)
    beta = None if kernel == "additive" else ones
    log_alpha = ones * math.log(float(retnet_decays(1)[0])) if kernel == "gated_delta" else None
    _, S = mix(form, k, k, v, beta=beta, log_alpha=log_alpha)
    return S[:, 0]


def read_memory(kernel: str, keys: torch.Tensor, vals: torch.Tensor, form: str = "parallel") -> torch.Tensor:
    """(R, N, dv): the read-out at every stored key."""
    if kernel == "softmax":
        w = torch.softmax(math.sqrt(keys.shape[-1]) * keys @ keys.transpose(-1, -2), dim=-1)  # (R, N, N)
        return w @ vals
    S = write_memory(kernel, keys, vals, form)
    return keys @ S.transpose(-1, -2)


def measure_memories(config: Config) -> dict[str, np.ndarray]:
    """Per kernel and N: mean and SE of the relative squared error, nearest-value accuracy, and the
    largest relative parallel-vs-recurrent difference of the read-outs (NaN for softmax)."""
    shape = (len(config.kernels), len(config.n_pairs))
    out = {name: np.full(shape, np.nan) for name in ("error", "error_se", "nearest", "form_diff")}
    for j, n in enumerate(config.n_pairs):
        gen = torch.Generator().manual_seed(derived_seed(config.seed, f"memory{n}") % MAX_SEED)
        keys, vals = (
            unit_vectors(gen, (config.draws, n), config.d_key),
            unit_vectors(gen, (config.draws, n), config.d_key),
        )
        for i, kernel in enumerate(config.kernels):
            read = read_memory(kernel, keys, vals)
            err = ((read - vals) ** 2).sum(-1).mean(-1)  # (R,) relative: |v| = 1
            out["error"][i, j], out["error_se"][i, j], _ = mean_se(err.numpy())
            nearest = (read @ vals.transpose(-1, -2)).argmax(-1) == torch.arange(n)
            out["nearest"][i, j] = float(nearest.double().mean())
            if kernel != "softmax":
                again = read_memory(kernel, keys, vals, form="recurrent")
                out["form_diff"][i, j] = float((read - again).abs().max() / again.abs().max())
    return out


def measure(ctx: Context) -> None:
    """Every kernel's read-out error and nearest-value accuracy at each N, and the largest difference between the
    parallel and the recurrent form."""
    config = ctx.config
    mem = measure_memories(config)
    kn = ("kernel", "n_pairs")
    ns = np.array(config.n_pairs, dtype=np.float64)
    theory = np.array(
        [th.additive_readout_error(ns, config.d_key) if k == "additive" else ns * np.nan for k in config.kernels]
    )
    ctx.data.update(
        readout_error=(kn, mem["error"]),
        readout_error_se=(kn, mem["error_se"]),
        readout_error_theory=(kn, theory),
        readout_accuracy=(kn, mem["nearest"]),
        form_difference=(kn, mem["form_diff"]),
    )
    ctx.coords.update(kernel=list(config.kernels), n_pairs=list(config.n_pairs))
    ctx.attrs["d_key"] = config.d_key


def claim_forms(led: Ledger, r: Result) -> None:
    """Parallel (UT transform) = recurrent scan, per recurrent kernel: on the memories and trained models. The
    additive mixer's two forms are linear attention and its RNN (003#64); the delta rules' parallel form is
    DeltaNet's (000#66)."""
    d = r.data
    for kernel in [k for k in r.config.kernels if k != "softmax"]:
        for name, values in (("memories", d["form_difference"]), ("trained", d["trained_form_difference"])):
            got = values.sel(kernel=kernel).values
            if name == "trained" and not r.config.training:
                continue
            led.judge(
                f"parallel_equals_recurrent_{kernel}_{name}",
                measured=float(np.max(got)),
                atol=1e-10,
                why="float64: the two forms sum the same terms in different orders over <= 128 tokens",
                statement=f"{kernel}: parallel form = sequential scan on the {name} (largest relative difference)",
            )


def claim_additive_interference(led: Ledger, r: Result) -> None:
    """Untrained additive memory: relative squared read-out error (N - 1)/d_k at each N."""
    if "additive" not in r.config.kernels:
        return
    d, dk = r.data.sel(kernel="additive"), r.config.d_key
    for n in r.config.n_pairs:
        row = d.sel(n_pairs=n)
        led.judge(
            f"additive_readout_error_N{n}",
            band=mc_numbers(row, "readout_error", r.config.draws),
            alternative=float(n / dk),
            why=f"95% t band of the within-run MC SE over {r.config.draws} independent memories (no model); the "
            "alternative lies 1/d_k away",
            statement=f"additive memory, N = {n}, d_k = {dk}: E|S k - v|^2 / E|v|^2 = (N - 1)/d_k",
        )


# the two forms of every recurrent kernel (on the memories and, when trained, on the trained models) and the
# additive memory's interference
claims = each_claim(claim_forms, claim_additive_interference)
