"""Part ``looped`` (seed 003#50): weight-tied one-layer LSAs looped k times against k steps of GD and tied GD++."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import xarray as xr

from analysis.claims.evidence import family_size, mean_se, seed_z, worst_case
from analysis.claims.ledger import Ledger
from analysis.data.regression_data import RegressionBatch, concat_tokens
from analysis.probing.base import Result
from analysis.probing.parts import Context, each_claim
from analysis.theory import icl_gd as th
from analysis.theory import looped as lp
from analysis.training.train import train
from analysis.zoo.hooks import hooks
from analysis.zoo.model import TinyTransformer
from probes.icl_gd.bands import SEED_LOOPED, SOURCE_LOOPED, below_zero_at_worst, seeds_ok, within_rounding
from probes.icl_gd.config import EPS, Config, linear_task, part_seeds
from probes.icl_gd.models import (
    NegYReadoutTask,
    as_float64,
    lsa_weights_from_model,
    model_config,
    model_from_lsa_weights,
    predict,
    query_key_bias,
    regression_task,
    sample_batch,
    torch_threads,
    train_config,
)

DESCRIPTION = "weight-tied LSAs looped k times against k steps of GD and tied GD++"
FIELDS = ("looped", "looped_loops", "looped_eval_loops", "looped_seeds")


def looped_config(cfg: Config, law: str) -> Config:
    """The probe's config on the looped task: d = looped_d, N = looped_n, inputs of law ``law``, linear
    attention whatever the headline kernel (the looped-GD construction and the weight read-out are linear)."""
    return linear_task(cfg, cfg.looped.d, cfg.looped.n, law)


def train_looped(cfg: Config, law: str, progress: bool, seed: int | None = None) -> tuple:
    """Train (cached) one weight-tied one-layer LSA applied ``looped_loops`` times, the query hidden as a
    key (the architecture in which the looped GD construction is exact), on the deep stacks' schedule
    (warm-up, clipping) for ``looped_steps`` updates of ``looped_batch_size`` tasks, from ``seed`` (default
    ``cfg.seed``; a replicate's seed of :func:`part_seeds`). Returns (float64 model, wall time, from cache)."""
    c = looped_config(cfg, law)
    task = NegYReadoutTask(regression_task(c), hide_query=True)
    tc = train_config(c, 2, seed=seed).replace(
        steps=cfg.looped.steps,
        batch_size=cfg.looped.batch_size,
        warmup_steps=min(cfg.depth.warmup, cfg.looped.steps // 4),
    )
    with torch_threads(cfg.threads):
        res = train(
            model_config(c, 1, seed=seed).replace(loops=cfg.looped.loops),
            task,
            tc,
            device=cfg.torch_device(),
            progress=progress,
        )
    return as_float64(res.model), float(res.meta.get("wall_time", res.wall_time)), bool(res.from_cache)


def with_loops(model: TinyTransformer, loops: int) -> TinyTransformer:
    """The same weights applied ``loops`` times (a copy; float64 models stay float64)."""
    copy = TinyTransformer(model.config.replace(loops=int(loops)))
    copy.load_state_dict(model.state_dict())
    return copy.eval()


def looped_weight_vectors(model: TinyTransformer, batch: RegressionBatch) -> np.ndarray:
    """(loops, B, d) effective weight w_eff with yhat = w_eff . x_q after each loop k = 1..model's loops, in
    one forward pass (the block's ``hook_resid_post`` fires once per loop). With the query hidden as a key
    its token is updated linearly (no bias anywhere), so yhat is linear in x_q and w_eff is read at the d
    basis queries."""
    B, N, d = batch.x_ctx.shape
    x = np.repeat(batch.x_ctx, d, axis=0)  # (B d, N, d)
    y = np.repeat(batch.y_ctx, d, axis=0)
    q = np.tile(np.eye(d), (B, 1))  # row b d + j is e_j
    tokens = concat_tokens(x, y, q, dtype=torch.float64)
    seen: list[np.ndarray] = []

    def record(t: torch.Tensor, name: str) -> None:
        seen.append(-t[:, -1, -1].detach().numpy().copy())  # yhat = -(query y-slot) after this loop

    with torch.no_grad(), hooks(model, [(f"blocks.{model.n_layers - 1}.hook_resid_post", record)]):
        model(tokens, attn_bias=query_key_bias(N + 1))
    return np.stack(seen).reshape(len(seen), B, d)


def measure_looped_construction(cfg: Config, eta: float, data: dict, scalars: dict) -> None:
    """The one-step GD layer (von Oswald's weights at step ``eta``) looped k = 1..looped_eval_loops times by
    the zoo's weight tying predicts exactly k GD steps (float64), in units of the float64 summation bound
    of :func:`measure_construction` (one layer of sums over N + D terms per loop)."""
    c = looped_config(cfg, cfg.looped.laws[0] if cfg.looped.laws else "gaussian")
    N, d = c.n_context, c.d
    b = sample_batch(c, 256, N, "looped_construction")
    base = model_from_lsa_weights(c, [th.gd_lsa_weights(d, eta, N)])
    K = cfg.looped.eval_loops
    w_loops = looped_weight_vectors(with_loops(base, K), b)  # (K, B, d)
    xmax2 = float(max(np.sum(b.x_ctx**2, -1).max(), np.sum(b.x_q**2, -1).max()))
    ratios = []
    for k in range(1, K + 1):
        got = torch.as_tensor((w_loops[k - 1] * b.x_q).sum(-1))
        want = predict(th.GD(eta=eta, steps=k), b)
        step = eta * xmax2
        scale = float(np.abs(b.y_ctx).max()) * sum(step * (1 + step) ** j for j in range(k))
        ratios.append(float((got - want).abs().max()) / (4 * k * (N + d + 1) * EPS * scale))
    data["looped_construction_ratio"] = (("loop",), np.asarray(ratios))


LOOPED_FIELDS = (
    "looped_err_model",
    "looped_err_model_se",
    "looped_err_gd",
    "looped_err_gdpp",
    "looped_diff_gd",
    "looped_diff_gd_se",
    "looped_diff_gdpp",
    "looped_diff_gdpp_se",
    "looped_err_gd_best",
    "looped_next_diff",
    "looped_next_diff_se",
)


LOOPED_SCALARS = (
    "looped_eta_fit",
    "looped_gamma_fit",
    "looped_residual",
    "looped_eta_best",
    "looped_rho_gd_fit",
    "looped_rho_gd_best",
    "looped_train_time_s",
)


LOOPED_SEED_FIELDS = (  # (looped_law, looped_seed, loop) each: every replicate's errors and paired differences
    "looped_err_model",
    "looped_err_gd",
    "looped_err_gdpp",
    "looped_diff_gd",
    "looped_diff_gdpp",
    "looped_next_diff",
)


def looped_readings(c: Config, mk: TinyTransformer, b: RegressionBatch, K: int) -> dict[str, Any]:
    """One looped LSA on the prompts ``b``: its squared weight error after k = 1..K loops per prompt (B, K),
    the exact (given each prompt's X) errors of its two weight readings, plain GD with the fitted step matrix
    and weight-tied GD++ (B, K), and the readings' parameters."""
    N, d = c.n_context, c.d
    err_model = ((looped_weight_vectors(with_loops(mk, K), b) - b.w) ** 2).sum(-1).T  # (B, K)
    parts = lp.structured_parts(lsa_weights_from_model(mk)[0])
    maps_gd = lp.looped_lsa_maps(b.x_ctx, np.zeros((d, d)), parts["u_yy"], parts["M_xx"], K)
    maps_pp = lp.looped_lsa_maps(b.x_ctx, parts["U_xx"], parts["u_yy"], parts["M_xx"], K)
    return {
        "err_model": err_model,
        "th_gd": np.stack([lp.linear_map_error(A, b.x_ctx, c.noise) for A in maps_gd], -1),
        "th_pp": np.stack([lp.linear_map_error(A, b.x_ctx, c.noise) for A in maps_pp], -1),
        "parts": parts,
        "G": lp.step_matrix(parts, N),
    }


def measure_looped(cfg: Config, progress: bool, data: dict, scalars: dict, coords: dict) -> None:
    """Per law: train a looped LSA (T = looped_loops), read its effective weight vector after k = 1..K loops
    (K = looped_eval_loops) on looped_n_eval prompts and its squared error |w_eff - w*|^2, beside the exact
    (given each prompt's X; analysis.theory.looped) error of two readings of its weights: the structured part
    without the input writes (preconditioned GD with the fitted step matrix G, the seed's mechanism) and with
    them (weight-tied GD++), and GD at the best constant step for T loops. Differences are paired per prompt
    (model error on the drawn w* minus the exact expectation), so their SEs measure the model against each
    reading; ``looped_next_diff`` is the paired change from loop k to k + 1. The ``LOOPED_FIELDS`` and
    ``LOOPED_SCALARS`` are replicate 0's (``seed``); ``<field>_seeds`` hold every replicate's means of
    ``looped_seeds`` (:func:`part_seeds`), on the same prompts: the claims' band. A replicate whose training
    diverged (non-finite weights) is NaN."""
    laws = list(cfg.looped.laws)
    K, T = cfg.looped.eval_loops, cfg.looped.loops
    loops = np.arange(1, K + 1)
    seeds = part_seeds(cfg, "looped")
    out = {n: np.full((len(laws), K), np.nan) for n in LOOPED_FIELDS}
    per_seed = {n: np.full((len(laws), len(seeds), K), np.nan) for n in LOOPED_SEED_FIELDS}
    sc = {n: np.full(len(laws), np.nan) for n in LOOPED_SCALARS}
    cached = []
    eta_construction = None
    for j, law in enumerate(laws):
        c = looped_config(cfg, law)
        N, d = c.n_context, c.d
        b = sample_batch(c, cfg.looped.n_eval, N, "looped")
        for r, seed in enumerate(seeds):
            mk, wall, from_cache = train_looped(cfg, law, progress, seed=None if r == 0 else seed)
            cached.append(from_cache)
            if r == 0:
                sc["looped_train_time_s"][j] = wall
            if not all(bool(torch.isfinite(p).all()) for p in mk.parameters()):
                continue  # training diverged (e.g. too high a depth_lr): NaN measurements, so its claims fail
            rd = looped_readings(c, mk, b, K)
            err_model, th_gd, th_pp = rd["err_model"], rd["th_gd"], rd["th_pp"]
            per_seed["looped_err_model"][j, r] = err_model.mean(0)
            per_seed["looped_err_gd"][j, r] = th_gd.mean(0)
            per_seed["looped_err_gdpp"][j, r] = th_pp.mean(0)
            per_seed["looped_diff_gd"][j, r] = (err_model - th_gd).mean(0)
            per_seed["looped_diff_gdpp"][j, r] = (err_model - th_pp).mean(0)
            per_seed["looped_next_diff"][j, r, : K - 1] = (err_model[:, 1:] - err_model[:, :-1]).mean(0)
            if r:
                continue
            parts, G = rd["parts"], rd["G"]
            eta_best, _ = lp.best_constant_step(b.x_ctx, T, c.noise)
            eta_construction = eta_best if eta_construction is None else eta_construction
            for i in range(K):
                out["looped_err_model"][j, i], out["looped_err_model_se"][j, i] = mean_se(err_model[:, i])[:2]
                out["looped_diff_gd"][j, i], out["looped_diff_gd_se"][j, i] = mean_se(err_model[:, i] - th_gd[:, i])[:2]
                out["looped_diff_gdpp"][j, i], out["looped_diff_gdpp_se"][j, i] = mean_se(
                    err_model[:, i] - th_pp[:, i]
                )[:2]
                if i + 1 < K:
                    out["looped_next_diff"][j, i], out["looped_next_diff_se"][j, i] = mean_se(
                        err_model[:, i + 1] - err_model[:, i]
                    )[:2]
            out["looped_err_gd"][j] = th_gd.mean(0)
            out["looped_err_gdpp"][j] = th_pp.mean(0)
            out["looped_err_gd_best"][j] = lp.gd_weight_error(b.x_ctx, eta_best, loops, c.noise).mean(0)
            eta_fit = float(np.trace(G) / d)
            sc["looped_eta_fit"][j] = eta_fit
            # GD++'s gamma: one loop moves x_j by U_xx X^T X M_xx x_j = -gamma S x_j for scalar blocks
            sc["looped_gamma_fit"][j] = float(-N * np.trace(parts["U_xx"] @ parts["M_xx"]) / d)
            sc["looped_residual"][j] = parts["residual"]
            sc["looped_eta_best"][j] = eta_best
            sc["looped_rho_gd_fit"][j] = float(np.median(lp.per_prompt_rate(b.x_ctx, eta_fit)))
            sc["looped_rho_gd_best"][j] = float(np.median(lp.per_prompt_rate(b.x_ctx, eta_best)))
    for n, v in out.items():
        data[n] = (("looped_law", "loop"), v)
    for n, v in per_seed.items():
        data[f"{n}_seeds"] = (("looped_law", "looped_seed", "loop"), v)
    for n, v in sc.items():
        data[n] = (("looped_law",), v)
    coords.update(
        looped_law=np.asarray(laws, dtype=str),
        loop=loops.astype(np.int64),
        looped_seed=np.asarray(seeds, dtype=np.int64),
    )
    if eta_construction is None:  # no law trained: the construction at the MP-optimal step
        eta_construction = lp.mp_rate(min(cfg.looped.d / cfg.looped.n, 0.5))["eta"]
    measure_looped_construction(cfg, eta_construction, data, scalars)
    ratio = cfg.looped.d / cfg.looped.n
    scalars.update(
        looped_eta_construction=float(eta_construction),
        looped_mp_rate=lp.mp_rate(ratio)["rate"] if ratio < 1 else math.nan,
    )
    scalars["_cached"] = scalars.get("_cached", []) + cached


def _claim_looped_construction(led: Ledger, ds: xr.Dataset, s: dict, cfg: Config) -> None:
    """The identity under Chen et al.'s claims: one GD layer looped k times is exactly k GD steps."""
    within_rounding(
        led,
        "looped_construction_equals_gd",
        ds["looped_construction_ratio"].values,
        why="max |looped LSA - k-step GD| over 256 prompts in units of the float64 summation bound of k loops "
        "((N + D) eps per loop on the terms' magnitudes): 1 is the bound",
        statement=f"one GD layer (step {s['looped_eta_construction']:.3g}) applied k times by the zoo's weight tying "
        f"predicts exactly k GD steps, k = 1..{cfg.looped.eval_loops} (worst k)",
    )


def _looped_unmeasurable(led: Ledger, v: dict, eta: float, names: list[str], desc: str, n: int) -> bool:
    """Whether a diverged looped training leaves nothing to judge (recording the claims not evaluated): replicate
    0's weights gave no step to read off, or another replicate's gave a non-finite expectation."""
    if not np.isfinite(eta):  # measure_looped skipped a diverged training run: nothing to read off
        led.judge(
            names[0],
            source=SOURCE_LOOPED,
            seed=SEED_LOOPED,
            reason=f"the looped LSA's training diverged ({desc}): non-finite weights, no step to read off",
        )
        return True
    diverged = [k for k in ("looped_err_gd", "looped_err_gdpp") if not np.isfinite(v[k]).all()]
    if diverged and n >= 2:  # another replicate's weights gave no finite reading: no expectation to compare
        for name in names:
            led.judge(
                name,
                source=SOURCE_LOOPED,
                seed=SEED_LOOPED,
                reason=f"a replicate's looped training diverged ({desc}): its weights give a non-finite "
                f"{' and '.join(diverged)}, so the seeds' expectation is undefined",
            )
        return True
    return False


def claims_looped(led: Ledger, r: Result) -> None:
    """Chen et al. (003#50): the looped one-step-GD layer is exactly multi-step GD; a trained looped LSA's
    squared weight error against loops, read against GD at the step fitted from its weights (the seed's
    mechanism) and against weight-tied GD++ (the same weights with their input writes), and whether every
    extra loop lowers it (also past the loops it was trained with)."""
    ds, s, cfg = r.data, r.scalars, r.config
    if "looped_construction_ratio" not in ds:
        return
    _claim_looped_construction(led, ds, s, cfg)
    T = cfg.looped.loops
    n = int(ds.sizes["looped_seed"])
    seeds_why = f"95% t band over {n} training seeds (n seeds: compute, about 20 s per seed)"
    for j, law in enumerate(ds["looped_law"].values.tolist()):
        v = {n_: ds[f"{n_}_seeds"].values[j] for n_ in LOOPED_SEED_FIELDS}  # (looped_seed, loop) each
        desc = (
            f"{law} inputs (cond {cfg.cond:g})" if law == "anisotropic" else f"{law} inputs"
        ) + f", d = {cfg.looped.d}, n = {cfg.looped.n}"
        eta = float(ds["looped_eta_fit"].values[j])
        gdpp = f"looped_{law}_tied_gdpp"
        names = [f"looped_{law}_gd_fitted_step", gdpp, f"looped_{law}_error_falls_every_loop"]
        if _looped_unmeasurable(led, v, eta, names, desc, n):
            continue
        if not seeds_ok(led, names, n, "looped", SOURCE_LOOPED, SEED_LOOPED):
            continue
        # per seed, the model's error over the exact expectation of GD at the step read off its own weights, on a
        # log scale: GD's error at a fitted step spans orders of magnitude across seeds (a step near GD's stability
        # edge), so a difference of errors has a band no number of seeds narrows; a ratio is the step's own scale
        i = T - 1
        err_gd = v["looped_err_gd"]  # (looped_seed, loop)
        led.judge(
            names[0],
            replicates=np.log(v["looped_err_model"][:, i] / err_gd[:, i]),
            expected=0.0,
            alternative=float(np.mean(np.log(err_gd[:, 0] / err_gd[:, i]))),
            why=f"{seeds_why} of each seed's ln(model error / exact T-step GD error at its own fitted step), both "
            "over the same looped_n_eval prompts; the alternative is the seeds' mean ln(GD error after 1 step / "
            "after T steps)",
            statement=f"looped LSAs trained with T = {T} loops ({desc}; {n} seeds): ln(squared weight error after T "
            f"loops / that of T steps of GD with the step matrix read off their weights) = 0 (replicate 0: "
            f"tr/d = {eta:.3g})",
        )
        z = np.abs(seed_z(v["looped_diff_gdpp"][:, :T].T))
        i = worst_case(z)
        i = T - 1 if i is None else i  # a replicate diverged (NaN): the claim fails as unmeasured
        err_pp = float(np.mean(v["looped_err_gdpp"][:, i]))
        led.judge(
            gdpp,
            replicates=err_pp + v["looped_diff_gdpp"][:, i],
            family=family_size(z),
            expected=err_pp,
            alternative=float(np.mean(v["looped_err_gd"][:, i])),
            seed=SEED_LOOPED,  # Chen et al.'s experiment; the statement is von Oswald et al.'s
            why=f"{seeds_why} of the paired (model error on the drawn w* - exact tied-GD++ expectation given X) "
            "difference over looped_n_eval prompts, added to the seeds' mean exact tied-GD++ error",
            statement=f"looped LSAs ({desc}; {n} seeds, mean) have at every loop k <= T = {T} the squared weight "
            f"error of weight-tied GD++ read off their weights' structured blocks (worst k = {i + 1})",
        )
        if cfg.looped.eval_loops > 1:  # a change from loop k to k + 1 exists
            below_zero_at_worst(
                led,
                f"looped_{law}_error_falls_every_loop",
                v["looped_next_diff"].T,  # (loop, looped_seed)
                fallback=0,  # a replicate diverged (NaN): the claim fails as unmeasured
                why=f"{seeds_why} of the paired difference of the squared weight errors after k + 1 and k loops on "
                "the same prompts",
                statement=f"each extra loop lowers the looped LSAs' squared weight error ({desc}; {n} seeds, mean), "
                f"k = 1...{cfg.looped.eval_loops}",
                worst=lambda i: f"trained with {T}; worst step k = {i + 1} -> {i + 2}",
            )


def measure(ctx: Context) -> None:
    measure_looped(ctx.config, ctx.progress, ctx.data, ctx.scalars, ctx.coords)


claims = each_claim(claims_looped)
