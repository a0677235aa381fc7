"""Part ``power_method`` (item 8, seed 000#45 = 003#35): in-context PCA by a looped linear-attention layer with and
without post-LayerNorm against the power method on the same prompts."""

from __future__ import annotations

import math

import numpy as np
import torch

from analysis.claims.evidence import mean_se
from analysis.claims.ledger import Ledger
from analysis.core.progress import bar
from analysis.data.pca_data import PowerMethodTask, readout, tokens
from analysis.probing.base import Result
from analysis.probing.parts import Context, each_claim
from analysis.theory import power_method as pmt
from analysis.training.train import derived_seed, train
from analysis.zoo.hooks import hooks
from analysis.zoo.model import ModelConfig, TinyTransformer
from probes.associative_recall.config import PSOURCE, Config, part_seeds
from probes.associative_recall.mqar import adam_cosine_config, float64_copy, one_layer_config, one_thread, seed_numbers

DESCRIPTION = "in-context PCA by a looped linear-attention layer against the power method"
GATE = "power_method"

PM_MODELS = ("power", "ln", "none")  # item 8: the power method itself, the post-LN looped layer, no norm
PM_NORMS = {"ln": "post", "none": "none"}
PM_BOOT = 300  # bootstrap resamples of the item-8 prompts


def pm_task(config: Config) -> PowerMethodTask:
    return PowerMethodTask(d=config.power.d, n=config.power.n, rho=config.power.rho, radius=config.power.radius)


def pm_model_config(
    config: Config, kind: str, seed: int, loops: int, dtype: str = "float32", eps: float | None = None
) -> ModelConfig:
    """Item 8's layer on the mirrored PCA layout (width D = 2 (2 d + 1)): identity read-in, one head of size
    D, linear attention (logit scale 1, no causal mask), no MLP, no read-out, N(0, pm_init_std^2) weights,
    post-LayerNorm (``ln``) or no norm (``none``), applied ``loops`` times with the same weights.
    ``eps`` replaces the norm's epsilon (0 for the exact construction)."""
    return one_layer_config(
        pmt.width(config.power.d),
        seed,
        dtype,
        norm=PM_NORMS[kind],
        attention="linear",
        causal=False,
        init_std=config.power.init_std,
        loops=loops,
        **({} if eps is None else {"norm_eps": eps}),
    )


def pm_iterates(model: TinyTransformer, x: np.ndarray, v0: np.ndarray, radius: float) -> np.ndarray:
    """(loops, B, d): the query's v-slot after each loop (the block's ``hook_resid_post`` fires once per loop),
    float64 on the CPU."""
    seen: list[np.ndarray] = []

    def record(t: torch.Tensor, name: str) -> None:
        seen.append(readout(t, x.shape[-1]).detach().numpy().copy())

    with torch.no_grad(), hooks(model, [("blocks.0.hook_resid_post", record)]):
        model(torch.from_numpy(tokens(x, v0, radius)))
    return np.stack(seen)


def pm_construction(config: Config, kind: str = "ln") -> TinyTransformer:
    """The exact power-step layer (theory item 3) in the zoo, float64, norm epsilon 0, looped
    ``pm_eval_loops`` times."""
    model = TinyTransformer(
        pm_model_config(config, kind, 0, config.power.eval_loops, dtype="float64", eps=0.0 if kind == "ln" else None)
    ).eval()
    W = pmt.construction_weights(config.power.d, config.power.n, config.power.radius)
    state = model.state_dict()
    for name in ("W_q", "W_k", "W_v", "W_o"):
        state[f"blocks.0.attn.{name}.weight"] = torch.from_numpy(W[name])
    if kind == "ln":
        state["blocks.0.ln1.weight"] = torch.from_numpy(W["ln"])
    model.load_state_dict(state)
    return model


def _finite_tan(tan: np.ndarray) -> np.ndarray:
    """tan theta with NaN (an overflowed iterate) read as +inf: no alignment."""
    return np.where(np.isnan(tan), np.inf, tan)


def _boot_median_se(values: np.ndarray, rng: np.random.Generator) -> float:
    """Bootstrap SE of the median over the last axis (prompts resampled)."""
    B = values.shape[-1]
    idx = rng.integers(0, B, (PM_BOOT, B))
    meds = np.median(values[..., idx], axis=-1)
    finite = np.isfinite(meds)
    return float(np.std(meds[finite], ddof=1)) if finite.sum() > 1 else math.nan


def _seed_combine(means: np.ndarray, ses: np.ndarray) -> tuple[float, float]:
    """Mean over the replicate seeds and its SE: the SE of the mean over seeds
    (:func:`analysis.claims.evidence.mean_se`;
    0 with one seed) plus the within-seed SEs over the shared prompts. The claims take dof = seeds - 1."""
    over = mean_se(means)
    spread = over.se**2 if over.n > 1 else 0.0
    return over.mean, math.sqrt(float(np.mean(ses**2)) / over.n + spread)


def pm_trained_iterates(config: Config, task, x: np.ndarray, v0: np.ndarray, progress: bool) -> np.ndarray:
    """(2, S, K, B, d): the iterates of the looped layer trained with LN (0) and without (1), one per seed
    (T = pm_loops loops in training, cached), looped K = pm_eval_loops times in float64 on the shared prompts."""
    K, T, S = config.power.eval_loops, config.power.loops, config.power.seeds
    iters = np.full((2, S, K, *v0.shape), np.nan)
    seeds = part_seeds(config, "power")
    with one_thread():
        for i, kind in enumerate(("ln", "none")):
            for s in bar(range(S), desc=f"associative_recall: PCA ({kind})", disable=not progress):
                seed = seeds[s]
                tc = adam_cosine_config(
                    config.power.steps,
                    config.power.batch_size,
                    config.power.lr,
                    seed,
                    warmup_steps=min(50, config.power.steps),
                )
                trained = train(
                    pm_model_config(config, kind, seed, T), task, tc, device=config.torch_device(), progress=False
                )
                model = float64_copy(trained.model, pm_model_config(config, kind, seed, K, dtype="float64"))
                with np.errstate(over="ignore", invalid="ignore"):
                    iters[i, s] = pm_iterates(model, x, v0, config.power.radius)
    return iters


def measure_power_method(config: Config, progress: bool) -> dict:
    """Item 8: train the looped layer with and without LN (``pm_seeds`` seeds, T = pm_loops, cached), loop it
    k = 1..K (K = pm_eval_loops) on ``pm_eval`` shared prompts in float64, and compare with the power
    method on the same prompts: tan theta_k to s u_1 (medians), the error |v_k - s u_1|^2 (means), the
    per-loop contraction over loops 1..K, the iterate's norm, and the first loop's fit v_1 ~ a v_0 + b S v_0."""
    task = pm_task(config)
    K, T, S = config.power.eval_loops, config.power.loops, config.power.seeds
    x, v0 = task.law.sample(config.power.eval, np.random.default_rng(derived_seed(config.seed, "pm_eval")))
    u = pmt.target(x, v0)
    power = pmt.power_iterates(x, v0, K)  # (K + 1, B, d)
    built = pm_iterates(pm_construction(config), x, v0, config.power.radius)
    iters = pm_trained_iterates(config, task, x, v0, progress)  # (2, S, K, B, d)
    with np.errstate(over="ignore", invalid="ignore"):
        tan_power = pmt.tan_angle(power, u[None])  # (K + 1, B)
        tan_model = _finite_tan(
            np.concatenate([np.broadcast_to(pmt.tan_angle(v0, u), (2, S, 1, len(u))), pmt.tan_angle(iters, u)], 2)
        )  # (2, S, K + 1, B)
        err_power = ((power - u) ** 2).sum(-1)  # (K + 1, B), row k = loop k
        err0 = np.broadcast_to(((v0 - u) ** 2).sum(-1), (2, S, 1, len(u)))
        err_model = np.concatenate([err0, ((iters - u) ** 2).sum(-1)], 2)  # (2, S, K + 1, B)
        norm_model = np.linalg.norm(iters, axis=-1)
    rng = np.random.default_rng(derived_seed(config.seed, "pm_boot"))
    rate_power = np.median(pmt.per_loop_rate(tan_power, 1, K))
    lam, _ = pmt.eigh_desc(x)
    Sv = np.einsum("bde,kbe->kbd", pmt.covariance(x), power[:-1])  # (K, B, d): S v_{k-1}
    amplify = np.prod(np.maximum(1.0, 1.0 / np.linalg.norm(Sv, axis=-1)), axis=0)  # (B,)
    sc: dict[str, float] = {
        "pm_identity": float(np.abs(built - power[1:]).max()),
        "pm_identity_atol": float(
            16 * np.finfo(np.float64).eps * (config.power.n + 1 + pmt.width(config.power.d)) * K * amplify.max()
        ),
        "pm_gap_median": float(np.median(lam[:, 1] / lam[:, 0])),
        "pm_rate_power": float(rate_power),
        "pm_tan0_power": float(np.median(tan_power[0])),
        "pm_tan1_power": float(np.median(tan_power[1])),
        "pm_err_T_power": float(err_power[T].mean()),
        "pm_bound_max_ratio": float(np.max(tan_power / pmt.tan_bound(x, v0, K))),
    }
    for i, kind in enumerate(("ln", "none")):
        with np.errstate(over="ignore", invalid="ignore"):
            rates = np.stack([pmt.per_loop_rate(tan_model[i, s], 1, K) for s in range(S)])  # (S, B)
        rates = np.where(np.isnan(rates), np.inf, rates)
        stats = {
            "rate": (np.median(rates, -1), np.array([_boot_median_se(r, rng) for r in rates])),
            "tan1": (
                np.median(tan_model[i, :, 1], -1),
                np.array([_boot_median_se(t, rng) for t in tan_model[i, :, 1]]),
            ),
        }
        for name, (m, se) in stats.items():
            sc[f"pm_{name}_{kind}"], sc[f"pm_{name}_{kind}_se"] = _seed_combine(m, se)
        e = err_model[i, :, T]  # (S, B)
        for ref_name, ref in (("power", err_power[T][None]), ("ln", err_model[0, :, T])):
            if ref_name == kind:
                continue
            diff = e - ref  # paired per prompt
            sc[f"pm_err_T_{kind}_minus_{ref_name}"], sc[f"pm_err_T_{kind}_minus_{ref_name}_se"] = _seed_combine(
                diff.mean(-1), diff.std(-1, ddof=1) / math.sqrt(diff.shape[-1])
            )
        sc[f"pm_err_T_{kind}"], sc[f"pm_err_T_{kind}_se"] = _seed_combine(
            e.mean(-1), e.std(-1, ddof=1) / math.sqrt(e.shape[-1])
        )
        sc[f"pm_norm_K_{kind}"] = float(np.median(norm_model[i, :, -1]))
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            fit = [pmt.fit_shift(v0, iters[i, s, 0], x) for s in range(S)]
        sc[f"pm_shift_{kind}"] = float(np.mean([np.median(f["shift"]) for f in fit]))
        sc[f"pm_span_residual_{kind}"] = float(np.mean([np.median(f["residual"]) for f in fit]))
    arrays = {
        "pm_tan": (
            ("pm_model", "pm_seed", "pm_loop"),
            np.concatenate([np.broadcast_to(np.median(tan_power, -1), (1, S, K + 1)), np.median(tan_model, -1)]),
        ),
        "pm_error": (
            ("pm_model", "pm_seed", "pm_loop"),
            np.concatenate([np.broadcast_to(err_power.mean(-1), (1, S, K + 1)), err_model.mean(-1)]),
        ),
        "pm_tan_bound": (("pm_loop",), np.median(pmt.tan_bound(x, v0, K), -1)),
    }
    return {"arrays": arrays, "scalars": sc}


def measure(ctx: Context) -> None:
    config = ctx.config
    got = measure_power_method(config, ctx.progress)
    ctx.data.update(got["arrays"])
    ctx.coords.update(
        pm_model=list(PM_MODELS),
        pm_loop=np.arange(config.power.eval_loops + 1),
        pm_seed=list(range(config.power.seeds)),
    )
    ctx.scalars.update(got["scalars"])


def claim_power_method(led: Ledger, r: Result) -> None:
    """Item 8 (000#45 = 003#35): the construction is the power method; the trained LN layer's first loop, its
    per-loop contraction and its error after T loops against the power method's; the no-LN layer's error
    above the power method's and the LN layer's."""
    c, s = r.config, r.scalars
    if not c.power_method:
        return
    L, T, S = c.power.eval_loops, c.power.loops, c.power.seeds
    shape = f"d = {c.power.d}, n = {c.power.n}, spectrum ratio {c.power.rho:g}"
    led.judge(
        "power_method_construction_exact",
        measured=s["pm_identity"],
        atol=s["pm_identity_atol"],
        why=f"float64: per loop a sum over n + 1 = {c.power.n + 1} tokens and a norm over D = {pmt.width(c.power.d)} "
        "coordinates, relative error <= (n + 1 + D) eps, over the L loops, 16x margin; the norm divides the "
        "query's other slots (rounding level) by |S v| each loop, so the bound carries the largest product over "
        "the prompts of max(1, 1/|S v_(k-1)|) (largest |difference| over the iterates)",
        statement=f"the exact power-step layer looped k = 1..{L} times: v_k = S^k v_0 / |S^k v_0| ({shape})",
    )

    def band(spread: str) -> str:
        return (
            f"95% t band, dof = {S} - 1 (seeds): the SE of the mean over {S} replicate training seeds plus the "
            f"{spread} over the {c.power.eval} prompts they share"
        )

    led.judge(
        "pm_ln_first_loop_is_power_step",
        measured=s["pm_tan1_ln"],
        se=s["pm_tan1_ln_se"],
        dof=S - 1,
        expected=s["pm_tan1_power"],
        alternative=s["pm_tan0_power"],
        why=band("bootstrap SE of the medians"),
        statement=f"trained looped linear attention with post-LN (T = {T}): median tan theta_1 to s u_1 after one "
        "loop = that of one power iteration",
    )
    # the source quotes this run's median eigenvalue ratio
    led.judge(
        "pm_ln_rate_is_power_method",
        band=seed_numbers(s, "pm_rate_ln", S),
        expected=s["pm_rate_power"],
        alternative=1.0,
        source=f"{PSOURCE}, item 1: tan theta contracts per loop towards l_2/l_1 (median l_2/l_1 of S "
        f"= {s['pm_gap_median']:.3f})",
        why=band("bootstrap SE of the medians"),
        statement=f"trained with post-LN at T = {T}, looped to K = {L}: median per-loop contraction "
        f"(tan theta_K / tan theta_1)^(1/(K-1)) = the power method's on the same prompts",
    )
    led.judge(
        "pm_ln_error_at_T_is_power_method",
        measured=s["pm_err_T_ln"],
        se=s["pm_err_T_ln_se"],
        dof=S - 1,
        expected=s["pm_err_T_power"],
        alternative=s["pm_err_T_none"],
        why=band("SE"),
        statement=f"trained with post-LN: mean |v_T - s u_1|^2 after the T = {T} trained loops = T power iterations'",
    )
    for ref, what in (("power", "the power method's (T power iterations)"), ("ln", "the post-LN layer's")):
        diff = f"pm_err_T_none_minus_{ref}"
        led.judge(
            f"pm_no_ln_error_above_{ref}",
            measured=s[diff],
            se=s[f"{diff}_se"],
            dof=S - 1,
            hypothesis=f"without a norm the looped layer reaches {what} error",
            why=band("paired SE"),
            statement=f"trained without a norm (T = {T}): mean |v_T - s u_1|^2 minus {what} > 0",
        )


claims = each_claim(claim_power_method)
