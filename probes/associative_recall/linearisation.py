"""Part ``linearisation`` (item 5, seed 000#39): one softmax head over n i.i.d. Gaussian tokens tends to a linear map;
n times the mean squared distance from it against its derived constant, and the RMS distance's slope in n."""

from __future__ import annotations

import math

import numpy as np
import torch

from analysis.claims.evidence import mean_se
from analysis.claims.ledger import Ledger
from analysis.core.devices import to_numpy
from analysis.probing.base import MAX_SEED, Result
from analysis.probing.parts import Context, each_claim
from analysis.theory import associative_recall as th
from analysis.training.train import derived_seed
from analysis.zoo.hooks import run_with_cache
from analysis.zoo.model import TinyTransformer, one_head_layer
from probes.associative_recall.config import Config
from probes.associative_recall.favor import mc_numbers, slope_bootstrap, slope_numbers

DESCRIPTION = "one softmax head over n Gaussian tokens against its linear limit"
FIELDS = ("lin_d", "lin_ns", "lin_reps", "lin_queries", "lin_a_norm")


def linearisation_head(config: Config) -> TinyTransformer:
    """One causal softmax head of width and head size ``lin_d``, float64, no norm, no MLP, seeded weights. It
    stays on the CPU whatever ``device`` says: a float64 measurement against a float64 closed form."""
    cfg = one_head_layer(
        config.lin.d,
        norm="none",
        attention="softmax",
        dtype="float64",
        seed=derived_seed(config.seed, "linearisation") % MAX_SEED,
    )
    return TinyTransformer(cfg).eval()


def head_maps(model: TinyTransformer) -> tuple[np.ndarray, np.ndarray]:
    """``(A, M)`` of the head: logit vector ``a = A x_q`` (``A = c W_k^T W_q``) and output map ``M = W_o W_v``."""
    attn = model.blocks[0].attn
    Wq, Wk, Wv, Wo = (to_numpy(getattr(attn, n).weight.double()) for n in ("W_q", "W_k", "W_v", "W_o"))
    return model.config.scale * Wk.T @ Wq, Wo @ Wv


def linearisation_queries(config: Config, A: np.ndarray) -> np.ndarray:
    """(Q, d) random query directions, each scaled so that its logit vector ``A x_q`` has norm ``lin_a_norm``."""
    rng = np.random.default_rng(derived_seed(config.seed, "lin_queries"))
    x = rng.standard_normal((config.lin.queries, config.lin.d))
    return x * (config.lin.a_norm / np.linalg.norm(x @ A.T, axis=-1, keepdims=True))


def measure_linearisation(config: Config) -> dict[str, np.ndarray]:
    """Per n: the squared distance of the head's output from its linear limit, averaged over the queries, for
    each of ``lin_reps`` token sets (n, reps); the theory constants per query."""
    model = linearisation_head(config)
    A, M = head_maps(model)
    xq = linearisation_queries(config, A)
    a = xq @ A.T
    lim = th.linearisation_limit(M, a)  # (Q, d)
    Q, d, R = xq.shape[0], config.lin.d, config.lin.reps
    err = np.zeros((len(config.lin.ns), R))
    for i, n in enumerate(config.lin.ns):
        gen = torch.Generator().manual_seed(derived_seed(config.seed, f"lin{n}") % MAX_SEED)
        T = n + Q
        bias = torch.zeros(T, T, dtype=torch.float64)
        bias[:, n:] = -math.inf  # the queries are no keys: each query row reads the n tokens only
        chunk = max(1, (1 << 23) // (T * T))  # (chunk, 1, T, T) float64 patterns of <= 64 MB
        for r0 in range(0, R, chunk):
            b = min(chunk, R - r0)
            toks = torch.randn(b, n, d, generator=gen, dtype=torch.float64)
            x = torch.cat([toks, torch.from_numpy(xq)[None].expand(b, Q, d)], dim=1)
            with torch.no_grad():
                _, c = run_with_cache(model, x, names=["blocks.0.hook_attn_out"], attn_bias=bias)
            out = to_numpy(c["blocks.0.hook_attn_out"][:, n:])  # (b, Q, d)
            err[i, r0 : r0 + b] = ((out - lim) ** 2).sum(-1).mean(-1)
    return {
        "err": err,
        "constant": th.linearisation_mse_constant(M, a),  # (Q,)
        "constant_iid": th.linearisation_mse_iid(M),
        "a_norm_sq": (a * a).sum(-1),
    }


def linearisation_arrays(config: Config, lin: dict) -> dict[str, tuple]:
    """Per n (``lin_n``): the mean squared distance from the linear limit, its SE over token sets, the theory
    ``mean_q C_q / n`` and the alternative ``|M|_F^2 / n``; per query the theory constant and ``|a|^2``."""
    ns, err = np.asarray(config.lin.ns, dtype=np.float64), lin["err"]
    return {
        "lin_mse": (("lin_n",), err.mean(-1)),
        "lin_mse_se": (("lin_n",), np.array([mean_se(e).se for e in err])),
        "lin_mse_theory": (("lin_n",), lin["constant"].mean() / ns),
        "lin_mse_iid": (("lin_n",), lin["constant_iid"] / ns),
        "lin_constant": (("lin_query",), lin["constant"]),
        "lin_a_norm_sq": (("lin_query",), lin["a_norm_sq"]),
    }


def measure(ctx: Context) -> None:
    config = ctx.config
    lin = measure_linearisation(config)
    ctx.data.update(linearisation_arrays(config, lin))
    ctx.coords.update(lin_n=list(config.lin.ns), lin_query=np.arange(config.lin.queries))
    ns = np.asarray(config.lin.ns, dtype=np.float64)
    rms = np.sqrt(lin["err"].mean(-1))
    ctx.scalars["lin_slope_all_n"] = float(np.polyfit(np.log(ns), np.log(rms), 1)[0]) if len(ns) > 1 else math.nan
    fit = th.linearisation_remainder(config.lin.a_norm, ns) <= th.LINEARISATION_REMAINDER_MAX  # asymptotic n only
    ctx.scalars["lin_slope_n_min"] = float(ns[fit].min()) if fit.any() else math.nan
    ctx.scalars["lin_slope"], ctx.scalars["lin_slope_se"] = (
        slope_bootstrap(ns[fit], list(lin["err"][fit]), config.seed, purpose="lin")
        if fit.sum() >= 2
        else (math.nan,) * 2
    )


def claim_linearisation(led: Ledger, r: Result) -> None:
    """Softmax over Gaussian tokens -> the linear map M a: n E|o - M a|^2 at the largest n against
    e^{|a|^2}(|M|_F^2 + |M a|^2) (alternative |M|_F^2), and the RMS distance's slope in n (-1/2; alternative 0)."""
    c, d = r.config, r.data
    n = max(c.lin.ns)
    row = d.sel(lin_n=n)
    tilt = float(np.exp(2.0 * c.lin.a_norm**2) / n)
    led.judge(
        "linearisation_mse_constant",
        band=mc_numbers(row, "lin_mse", c.lin.reps, scale=n),
        alternative=float(n * row["lin_mse_iid"]),
        why=f"95% t band of the within-run MC SE over {c.lin.reps} independent token sets; the O(1/n^2) "
        f"remainder is ~ e^(2|a|^2)/n = {tilt:.3f} of the constant",
        statement=f"one softmax head over n = {n} i.i.d. N(0, I) tokens, |a| = {c.lin.a_norm:g}: "
        "n E|o - W_o W_v a|^2 = e^|a|^2 (|M|_F^2 + |M a|^2), averaged over the queries",
    )
    if not np.isfinite(r.scalars["lin_slope"]):  # fewer than two n where the remainder is small
        return
    led.judge(
        "linearisation_rms_slope",
        band=slope_numbers(r.scalars, "lin_slope"),
        expected=th.LINEARISATION_EXPONENT,
        alternative=0.0,
        why="95% normal band of the within-run bootstrap SE of the log-log slope (token sets resampled within "
        f"each n), fitted over the n "
        f">= {r.scalars['lin_slope_n_min']:g} where the O(n^-2) remainder e^(2|a|^2)/n is below "
        f"{th.LINEARISATION_REMAINDER_MAX:g} (theory item 5; over every n the slope is "
        f"{r.scalars['lin_slope_all_n']:.3f})",
        statement="softmax attention over i.i.d. Gaussian tokens: RMS distance from its linear limit ~ n^(-1/2)",
    )


claims = each_claim(claim_linearisation)
