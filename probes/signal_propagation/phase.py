"""The attention phase diagram at initialisation: a sub-experiment of :mod:`probes.signal_propagation`.

Giorlandino & Goldt (ICLR 2026, "Two failure modes of deep transformers") map softmax attention at init on
tokens of pairwise cosine ``p`` to a random-energy model (:mod:`analysis.theory.attention_phase`): rows freeze
at ``beta_c(p) = sqrt(2 / (1 - p))``, and a post-LN block map carries the token cosine across depth (rank
collapse below ``beta_c``, entropy collapse above). This part measures it on the zoo's own model:

* inputs: ``T`` embedded tokens on the sphere of radius ``sqrt(d)`` with pairwise cosine exactly ``p``
  (:func:`analysis.theory.attention_phase.correlated_tokens`, ``d >= T + 1``), drawn afresh for every seed and
  shared by every ``beta`` and ``p`` of that seed (one frame: paired comparisons);
* model: a float64 ``TinyTransformer`` with ``input="embedded"``, post-LN, one head (``d_h = d``), a ReLU MLP
  of width ``4 d``, bidirectional attention, no positional encoding and no biases, fan-in init, and
  ``logit_scale = beta sqrt(ln T) / sqrt(d_h)`` (the random-energy normalisation). Its block is the theory's
  with ``var_v = var_w = 1`` (``W_o W_v`` and ``W_out relu(W_in .)`` each keep the second moment), ``var_b = 0``
  and unit skips;
* per layer (dims ``phase_p, phase_beta, phase_layer, phase_seed``): the rows' mean entropy ``H / ln T``, mean
  participation ``sum_j a_ij^2``, mean shared weight ``sum_j a_ij a_kj`` (``i != k``), the attention branch's
  output self- and cross-overlap, and the token cosine of the stream after every block (``phase_pos``; 0: the
  input);
* the yardsticks, in float64 at run time: per row of layer 1 the finite-T entropy and participation at the
  logit spread the theory gives that row from the weights alone, ``sigma_i = scale sqrt(1 - p) |W_k^T q_i|``
  (section 1: the part of the logits that varies over the keys, not the row's realised logits), and the
  finite-T block map across depth (section 5).

Claims (one family per ``p``, Sidak worst-of over the declared cells): layer-1 entropy and participation
against the finite-T yardstick (alternative: the p-blind ``beta_c = sqrt 2`` for ``p > 0``, the T -> oo law for
``p = 0``); the cosine across depth above ``beta_c`` against the finite-T map (alternative: rank collapse, the
averaging attention of the T -> oo law below ``beta_c``) and below ``beta_c`` at the last layer (alternative:
depth leaves the cosine at ``p``); and the attention-output overlap identity ``|sum_j a_ij x_j|^2 / d = p + (1 -
p) sum_j a_ij^2`` of exact-cosine tokens.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import xarray as xr

from analysis.claims.evidence import replicate_seed
from analysis.core.progress import bar
from analysis.core.validation import check_distinct
from analysis.theory import attention_phase as ap
from analysis.zoo.hooks import run_with_cache
from analysis.zoo.model import ModelConfig, TinyTransformer

# the design of each preset; a config field of signal_propagation that is not None replaces its entry
DESIGN: dict[str, dict] = {
    "smoke": {"betas": (0.5, 2.0, 4.0), "cosines": (0.0, 0.5), "tokens": 24, "d_model": 32, "depth": 3, "seeds": 2},
    "full": {
        "betas": (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0),
        "cosines": (0.0, 0.5),
        "tokens": 256,
        "d_model": 320,
        "depth": 8,
        "seeds": 8,
    },
}
MAP = {"var_v": 1.0, "var_w": 1.0, "var_b": 0.0, "alpha_attn": 1.0, "alpha_mlp": 1.0}  # the zoo block's parameters
TOKEN_STREAM = 7919  # the token generator of seed s: default_rng((replicate_seed(seed, s), TOKEN_STREAM))
MAP_REPS = 1000  # Monte Carlo row pairs per layer of the finite-T map's shared weight
MAP_SEED = 20260  # its generator (one per (p, beta) cell: default_rng((MAP_SEED, i, j)))
SOURCE = "Giorlandino & Goldt, ICLR 2026 ('Two failure modes of deep transformers'); theory: attention_phase"


def design(cfg) -> dict:
    """The phase design of ``cfg``: its preset's :data:`DESIGN` with every ``phase_*`` field that is set."""
    out = dict(DESIGN[cfg.preset_name])
    for k in out:
        v = getattr(cfg.phase, k)
        if v is not None:
            out[k] = tuple(v) if isinstance(v, tuple) else v
    return out


def check_design(cfg) -> None:
    """Cross-field checks of the phase fields (``ValueError`` naming the field)."""
    d = design(cfg)
    if d["d_model"] < d["tokens"] + 1:
        raise ValueError(
            f"phase_d_model must be >= phase_tokens + 1 = {d['tokens'] + 1} (exact token cosines need T + 1 "
            f"orthonormal directions), got {d['d_model']}"
        )
    for name in ("betas", "cosines"):
        check_distinct(f"phase_{name}", d[name])


def tag(p: float) -> str:
    """The claim-name tag of cosine ``p``: ``p000`` for 0, ``p050`` for 0.5 (hundredths)."""
    return f"p{round(100 * p):03d}"


def model_config(width: int, depth: int, beta: float, tokens: int, seed: int) -> ModelConfig:
    """The theory's block in the zoo (module docstring) at inverse temperature ``beta``."""
    return ModelConfig(
        input="embedded",
        d_model=width,
        n_heads=1,
        n_layers=depth,
        activation="relu",
        norm="post",
        causal=False,
        pos="none",
        output="none",
        logit_scale=beta * math.sqrt(math.log(tokens)) / math.sqrt(width),
        dtype="float64",
        seed=seed,
    )


def _mean_offdiag(m: np.ndarray) -> float:
    n = m.shape[0]
    return float((m.sum() - np.trace(m)) / (n * (n - 1)))


def measure(model, x: torch.Tensor, p: float) -> dict:
    """Per-layer statistics of one model on tokens ``x`` (T, d) of cosine ``p`` (module docstring)."""
    T, d = x.shape
    L = model.config.n_layers
    want = ("hook_pattern", "hook_q", "hook_attn_out", "hook_resid_post")
    with torch.no_grad():
        _, cache = run_with_cache(model, x[None], names=lambda n: n.endswith(want))
    out = {k: np.empty(L) for k in ("entropy", "participation", "shared", "attn_q", "attn_p")}
    cosine = np.empty(L + 1)
    cosine[0] = _mean_offdiag(_cosines(x.numpy()))
    for layer in range(L):
        a = cache[f"blocks.{layer}.attn.hook_pattern"][0, 0].numpy()  # (T, T), one head
        out["entropy"][layer] = float(-(a * np.log(np.maximum(a, 1e-300))).sum(-1).mean() / math.log(T))
        out["participation"][layer] = float((a * a).sum(-1).mean())
        out["shared"][layer] = _mean_offdiag(a @ a.T)
        o = cache[f"blocks.{layer}.hook_attn_out"][0].numpy()
        g = o @ o.T / d
        out["attn_q"][layer] = float(np.trace(g) / T)
        out["attn_p"][layer] = _mean_offdiag(g)
        cosine[layer + 1] = _mean_offdiag(_cosines(cache[f"blocks.{layer}.hook_resid_post"][0].numpy()))
        if layer == 0:
            xn = x.numpy()
            y = a @ xn
            lhs = (y * y).sum(-1) / d
            out["identity_gap"] = float(np.max(np.abs(lhs - (p + (1 - p) * (a * a).sum(-1)))))
            q = cache["blocks.0.attn.hook_q"][0].reshape(T, -1).numpy()
            v = q @ model.blocks[0].attn.W_k.weight.detach().numpy()  # (T, d): W_k^T q_i
            out["row_sigma"] = model.config.scale * math.sqrt(1.0 - p) * np.linalg.norm(v, axis=1)
    out["cosine"] = cosine
    return out


def _cosines(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1)
    return (x @ x.T) / np.outer(n, n)


LAYER_VARS = ("entropy", "participation", "shared", "attn_q", "attn_p")


def run(cfg, progress: bool = False) -> xr.Dataset:
    """Every (p, beta, seed) model of the design, measured, with the yardsticks (module docstring)."""
    d = design(cfg)
    P, B, S, L, T = d["cosines"], d["betas"], d["seeds"], d["depth"], d["tokens"]
    shape = (len(P), len(B), S)
    layer = {k: np.full((*shape, L), np.nan) for k in LAYER_VARS}
    cosine = np.full((*shape, L + 1), np.nan)
    gap = np.full(shape, np.nan)
    yard_h, yard_y2 = np.full(shape, np.nan), np.full(shape, np.nan)
    rows = {}
    frames = [
        np.random.default_rng((replicate_seed(cfg.seed, s), TOKEN_STREAM)).standard_normal((d["d_model"], T + 1))
        for s in range(S)
    ]
    jobs = [(i, j, s) for i in range(len(P)) for j in range(len(B)) for s in range(S)]
    for i, j, s in bar(jobs, desc="signal_propagation phase", progress=progress):
        x = torch.from_numpy(_tokens(frames[s], d["d_model"], P[i]))
        model = TinyTransformer(model_config(d["d_model"], L, B[j], T, replicate_seed(cfg.seed, s)))
        m = measure(model, x, P[i])
        for k in LAYER_VARS:
            layer[k][i, j, s] = m[k]
        cosine[i, j, s] = m["cosine"]
        gap[i, j, s] = m["identity_gap"]
        rows[i, j, s] = m["row_sigma"]
    h, y2 = ap.row_yardsticks(T, np.concatenate(list(rows.values())))
    at = 0
    for key, sig in rows.items():
        yard_h[key], yard_y2[key] = h[at : at + sig.size].mean(), y2[at : at + sig.size].mean()
        at += sig.size
    return _dataset(cfg, d, layer, cosine, gap, yard_h, yard_y2)


def _tokens(frame: np.ndarray, width: int, p: float) -> np.ndarray:
    """Exact-cosine tokens from one seed's Gaussian frame (the same frame for every p and beta)."""
    q, _ = np.linalg.qr(frame)
    return math.sqrt(width) * (math.sqrt(p) * q[:, 0][None, :] + math.sqrt(1.0 - p) * q[:, 1:].T)


def _dataset(cfg, d, layer, cosine, gap, yard_h, yard_y2) -> xr.Dataset:
    P, B, L, T = d["cosines"], d["betas"], d["depth"], d["tokens"]
    coords = {
        "phase_p": list(P),
        "phase_beta": list(B),
        "phase_seed": np.arange(d["seeds"]),
        "phase_layer": np.arange(L),
        "phase_pos": np.arange(L + 1),
    }
    dims = ("phase_p", "phase_beta", "phase_seed")
    th_cos = np.full((len(P), len(B), L + 1), np.nan)
    th_y2, th_c, th_cse = (np.full((len(P), len(B), L), np.nan) for _ in range(3))
    for i, p in enumerate(P):
        for j, beta in enumerate(B):
            f = ap.cosine_across_depth_finite(p, beta, L, T, np.random.default_rng((MAP_SEED, i, j)), MAP_REPS, **MAP)
            th_cos[i, j] = f["cosine"]
            th_y2[i, j], th_c[i, j], th_cse[i, j] = f["participation"], f["shared"], f["shared_se"]
    collapse = np.array([ap.cosine_across_depth(p, 0.0, L, **MAP) for p in P])  # beta = 0: Y_2 = C = 0
    ds = xr.Dataset(
        {f"phase_{k}": ((*dims, "phase_layer"), v) for k, v in layer.items()}
        | {
            "phase_cosine": ((*dims, "phase_pos"), cosine),
            "phase_identity_gap": (dims, gap),
            "phase_yard_entropy": (dims, yard_h),
            "phase_yard_participation": (dims, yard_y2),
            "phase_theory_cosine": (("phase_p", "phase_beta", "phase_pos"), th_cos),
            "phase_collapse_cosine": (("phase_p", "phase_pos"), collapse),
            "phase_theory_participation": (("phase_p", "phase_beta", "phase_layer"), th_y2),
            "phase_theory_shared": (("phase_p", "phase_beta", "phase_layer"), th_c),
            "phase_theory_shared_se": (("phase_p", "phase_beta", "phase_layer"), th_cse),
        },
        coords=coords,
    )
    ds.attrs["phase_tokens"] = T
    ds.attrs["phase_d_model"] = d["d_model"]
    return ds
