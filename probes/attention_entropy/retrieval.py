"""Part ``retrieval`` (seed 000#6): planted-key retrieval trained with softmax and SSMax and tested at longer
contexts: the planted key's weight against the context length."""

from __future__ import annotations

import math

import numpy as np
import torch

from analysis.claims.evidence import mean_se, replicate_seed
from analysis.claims.ledger import Ledger
from analysis.core.devices import model_device
from analysis.core.progress import bar
from analysis.core.validation import check_choice
from analysis.data.tasks import PlantedKeyRetrieval, model_io
from analysis.probing.base import Result
from analysis.probing.parts import Context, each_claim, measured
from analysis.theory import attention_entropy as th
from analysis.training.train import TrainConfig, train
from analysis.zoo.hooks import hooks
from analysis.zoo.model import ModelConfig, one_head_layer
from probes.attention_entropy.config import Config
from probes.attention_entropy.shared import (
    band_text,
    fit_log_slope,
    measure_own,
    residual_numbers,
)

DESCRIPTION = "planted-key retrieval trained with softmax and SSMax, tested at longer contexts"
GATE = "retrieval"

RETRIEVAL_KERNELS = ("softmax", "ssmax")
RETRIEVAL_BATCH = 32  # training sequences per update
PATTERN_FLOATS = 2**24  # test sequences per forward pass: at most this many (K x K) pattern entries
RETRIEVAL_SOURCE = (
    "derivation: a trained query row's weight on the planted key is 1/(1 + sum_fixed e^{-a d_f} + m mean_j "
    "e^{-a d_j}) with the raw logit gaps d_j measured at the training length and i.i.d. distractors "
    "(analysis.theory.attention_entropy.retrieval_weight); a = 1 for softmax, s ln K for SSMax"
)


def retrieval_task(config: Config, factor: int = 1) -> PlantedKeyRetrieval:
    """The retrieval task at ``retrieval_len x factor`` pairs (the same keys and values at every length)."""
    return PlantedKeyRetrieval(
        n_pairs=config.retrieval.len * factor, n_keys=config.retrieval.keys, n_values=config.retrieval.values
    )


def retrieval_ssmax_s(config: Config) -> float:
    """SSMax s of the retrieval models: ``1 / ln K`` with ``K = retrieval_len + 1`` the keys the query row sees at
    the training length, so that the logit multiplier ``s ln K`` is 1 there: both kernels compute the same function
    at the training length and train alike (a larger s sharpens the untrained attention and, at s = 0.5-0.75,
    stalled training in trial runs), and they differ only in how the logits scale with the context."""
    return 1.0 / math.log(config.retrieval.len + 1)


def retrieval_model_config(config: Config, kernel: str, seed: int) -> ModelConfig:
    """One layer, one head, attention only, pre-LN, no positions, a linear read-out of the value."""
    check_choice("kernel", kernel, RETRIEVAL_KERNELS)
    task = retrieval_task(config)
    extra = {"ssmax_s": retrieval_ssmax_s(config)} if kernel == "ssmax" else {}
    return one_head_layer(
        config.retrieval.d_model,
        **model_io(task),
        norm="pre",
        pos="none",
        attention=kernel,
        seed=seed,
        **extra,
    )


def retrieval_rows(model, task: PlantedKeyRetrieval, n_seq: int, gen: torch.Generator) -> dict[str, np.ndarray]:
    """``n_seq`` test sequences: the query row's logits (n_seq, K) in float64, the weight its pattern puts on the
    planted key (n_seq,), whether the read-out names the planted value (n_seq,), the planted positions and the
    query keys."""
    keys, values, planted, query = task.draw(n_seq, gen)
    K = task.seq_len
    chunk = max(1, PATTERN_FLOATS // (K * K))
    got: dict[str, list] = {"scores": [], "pattern": [], "hit": []}

    def on_scores(sc: torch.Tensor, name: str) -> None:  # (B, 1, T, T)
        got["scores"].append(sc[:, 0, -1].double().cpu())

    def on_pattern(p: torch.Tensor, name: str) -> None:
        got["pattern"].append(p[:, 0, -1].double().cpu())

    watch = [("blocks.0.attn.hook_attn_scores", on_scores), ("blocks.0.attn.hook_pattern", on_pattern)]
    with torch.no_grad(), hooks(model, watch):
        for c0 in range(0, n_seq, chunk):
            sl = slice(c0, c0 + chunk)
            x, y = task.encode(keys[sl], values[sl], planted[sl], query[sl], device=model_device(model))
            got["hit"].append(task.accuracy(model(x), y).cpu())
    pattern = torch.cat(got["pattern"])
    return {
        "scores": torch.cat(got["scores"]).numpy(),
        "weight": pattern[torch.arange(n_seq), planted].numpy(),
        "hit": torch.cat(got["hit"]).numpy().astype(np.float64),
        "planted": planted.numpy(),
        "query": query.numpy(),
    }


def retrieval_gaps(
    scores: np.ndarray, planted: np.ndarray, query: np.ndarray, a: float
) -> tuple[list[np.ndarray], np.ndarray]:
    """Raw gaps ``(x_planted - x_j) / a`` of the query rows' logits (B, K) (``a``: the logit multiplier at this
    length): per sequence, its planted logit against the distractor logits of *every* sequence with the same query
    key (a list of B arrays), and against the query's own key, the last (B, 1), whose number does not grow.

    Pooling is exact for the one-layer model without positions: a distractor's logit is a function of the query
    key and its own key and value only, so the distractors of all sequences asking the same key are draws from the
    same law. It removes most of the plug-in bias of a per-sequence mean over only K - 2 distractors (the weight is
    convex in that mean, so a noisy mean biases the predicted weight upwards, more so the longer the context)."""
    B, K = scores.shape
    top = scores[np.arange(B), planted]
    keep = np.ones((B, K), dtype=bool)
    keep[np.arange(B), planted] = False
    keep[:, -1] = False
    distractors = scores[keep].reshape(B, K - 2)
    pooled = {q: distractors[query == q].ravel() for q in np.unique(query)}
    gaps = [(top[b] - pooled[query[b]]) / a for b in range(B)]
    return gaps, (top - scores[:, -1])[:, None] / a


def predicted_weight(gaps: list[np.ndarray], fixed: np.ndarray, m: int, a: float) -> float:
    """Mean over sequences of :func:`analysis.theory.attention_entropy.retrieval_weight` at ``m`` distractors."""
    return float(np.mean([th.retrieval_weight(m, g, f, a) for g, f in zip(gaps, fixed, strict=True)]))


def retrieval_factor(config: Config, kernel: str, pairs: int) -> float:
    """The logit multiplier of the query row at ``pairs`` pairs (K = pairs + 1 keys): 1 or ``s ln K``."""
    return 1.0 if kernel == "softmax" else float(th.ssmax_factor(pairs + 1, retrieval_ssmax_s(config)))


def retrieval_sweep(config: Config, progress: bool = True) -> dict[str, np.ndarray]:
    """Both kernels, ``retrieval_seeds`` seeds, trained at ``retrieval_len`` pairs
    (:func:`analysis.training.train.train`,
    cached) and tested at every length (the same test sequences for both kernels of a seed): per (kernel, seed,
    length) the mean planted weight, its prediction from the gaps measured at the training length
    (:func:`analysis.theory.attention_entropy.retrieval_weight`) and the accuracy; per (kernel, seed) the
    effective gap and the final training loss."""
    shape = (len(RETRIEVAL_KERNELS), config.retrieval.seeds, len(config.retrieval.factors))
    out = {k: np.full(shape, np.nan) for k in ("weight", "theory", "accuracy")}
    out["gap"] = np.full(shape[:2], np.nan)
    out["final_loss"] = np.full(shape[:2], np.nan)
    task = retrieval_task(config)
    steps = config.retrieval.steps
    tcfg = TrainConfig(
        steps=steps, batch_size=RETRIEVAL_BATCH, lr=config.retrieval.lr, warmup_steps=steps // 10, seed=config.seed
    )
    runs = [(k, t) for k in range(len(RETRIEVAL_KERNELS)) for t in range(config.retrieval.seeds)]
    for k, t in bar(runs, progress=progress, desc="retrieval", leave=False):
        kernel, seed = RETRIEVAL_KERNELS[k], replicate_seed(config.seed, t)
        res = train(
            retrieval_model_config(config, kernel, seed),
            task,
            tcfg.replace(seed=seed),
            device=config.torch_device(),
            progress=False,
        )
        out["final_loss"][k, t] = float(np.mean(res.history["loss"][-20:]))
        model = res.model.eval()
        gaps = fixed = None
        for i, f in enumerate(config.retrieval.factors):
            test = retrieval_task(config, f)
            gen = torch.Generator().manual_seed(seed + 15485863 * (i + 1))  # test sequences only
            rows = retrieval_rows(model, test, config.retrieval.eval, gen)
            out["weight"][k, t, i] = rows["weight"].mean()
            out["accuracy"][k, t, i] = rows["hit"].mean()
            if i == 0:  # the training length: the gaps that predict every length
                a0 = retrieval_factor(config, kernel, test.n_pairs)
                gaps, fixed = retrieval_gaps(rows["scores"], rows["planted"], rows["query"], a0)
                out["gap"][k, t] = float(np.mean([th.effective_gap(g, a0) for g in gaps]))
            a = retrieval_factor(config, kernel, test.n_pairs)
            out["theory"][k, t, i] = predicted_weight(gaps, fixed, test.n_pairs - 1, a)
    ns = config.retrieval.len * np.asarray(config.retrieval.factors)
    fit = lambda w: fit_log_slope(ns, w) if np.all(np.isfinite(w) & (w > 0)) else math.nan  # noqa: E731 (diverged)
    out["slope"] = np.apply_along_axis(fit, -1, out["weight"])
    out["slope_theory"] = np.apply_along_axis(fit, -1, out["theory"])
    return out


def retrieval_arrays(config: Config, rt: dict) -> tuple[dict, dict]:
    """``(arrays, coords)`` of :func:`retrieval_sweep`."""
    dims = ("retrieval_kernel", "retrieval_seed")
    data = {f"retrieval_{k}": ((*dims, "retrieval_n"), rt[k]) for k in ("weight", "theory", "accuracy")}
    for k in ("gap", "final_loss", "slope", "slope_theory"):
        data[f"retrieval_{k}"] = (dims, rt[k])
    coords = {
        "retrieval_kernel": list(RETRIEVAL_KERNELS),
        "retrieval_seed": np.arange(config.retrieval.seeds),
        "retrieval_n": config.retrieval.len * np.asarray(config.retrieval.factors),
    }
    return data, coords


def measure(ctx: Context) -> None:
    measure_own(ctx, retrieval_sweep, retrieval_arrays)


def claim_retrieval_slopes(led: Ledger, r: Result) -> None:
    """SSMax (000#6) on trained models: the fitted log-log slope of the planted weight over the test lengths equals
    the slope that the gaps measured at the training length predict, for softmax (alternative: no dilution, 0) and
    for SSMax (alternative: the softmax models' measured slope). Seed-paired residuals give the band."""
    ds, config = r.data, r.config
    ns = ds["retrieval_n"].values
    if not np.all(np.isfinite(ds["retrieval_slope"].values) & np.isfinite(ds["retrieval_slope_theory"].values)):
        for name in (f"ssmax_trained_{kn}_slope" for kn in RETRIEVAL_KERNELS):
            led.judge(name, reason="a retrieval training run diverged (non-finite attention weights, no slope)")
        return
    span = f"trained at n = {ns[0]}, tested at n = {', '.join(str(int(v)) for v in ns)} pairs"
    soft_slope = float(ds["retrieval_slope"].sel(retrieval_kernel="softmax").mean())
    s = retrieval_ssmax_s(config)
    gap = ds["retrieval_gap"]  # effective raw gap per (kernel, seed)
    sg = s * gap.sel(retrieval_kernel="ssmax").values
    cases = {
        "softmax": (
            0.0,
            "no dilution: the planted key keeps its trained weight at every length (slope 0)",
            f"effective gap {float(gap.sel(retrieval_kernel='softmax').mean()):.2f}: the 1/n regime (slope -1) "
            f"starts near n ~ e^gap = {math.exp(float(gap.sel(retrieval_kernel='softmax').mean())):.0f}",
        ),
        "ssmax": (
            soft_slope,
            "SSMax dilutes like softmax: the softmax models' measured slope",
            f"s = 1/ln {int(ns[0]) + 1} = {s:.3f}, effective s g = "
            f"{', '.join(f'{v:.2f}' for v in sg)} per seed ("
            + ("s g >= 1 on every seed: no fading" if np.all(sg >= 1.0) else "s g < 1 on some seed: fading")
            + ")",
        ),
    }
    for kernel, (alt, hyp, detail) in cases.items():
        sub = ds.sel(retrieval_kernel=kernel)
        meas, pred = sub["retrieval_slope"].values, sub["retrieval_slope_theory"].values
        led.judge(
            f"ssmax_trained_{kernel}_slope",
            band=residual_numbers(meas, pred, mean_se(meas - pred)),
            alternative=alt,
            hypothesis=hyp,
            why=f"{band_text(config.retrieval.seeds)}: se is the standard error over seeds of the per-seed "
            f"residual (fitted slope - predicted slope; each seed its own test sequences, {config.retrieval.eval} per "
            f"length; dof {config.retrieval.seeds} - 1)",
            statement=f"{kernel}, {span}: fitted d ln w / d ln n of the mean planted weight = the slope predicted "
            f"from the gaps measured at n = {int(ns[0])} ({detail})",
        )


def claim_retrieval_accuracy(led: Ledger, r: Result) -> None:
    """SSMax (000#6): at the longest test length retrieval is better with SSMax than with softmax (seed-paired)."""
    ds, config = r.data, r.config
    top = int(ds["retrieval_n"].values[-1])
    fmax = config.retrieval.factors[-1]
    acc = ds["retrieval_accuracy"].sel(retrieval_n=top)
    soft, ssm = acc.sel(retrieval_kernel="softmax").values, acc.sel(retrieval_kernel="ssmax").values
    if not np.all(np.isfinite(ds["retrieval_weight"].values)):
        led.judge(
            f"ssmax_trained_retrieval_{fmax}x",
            reason="a retrieval training run diverged (non-finite attention weights)",
        )
        return
    led.judge(
        f"ssmax_trained_retrieval_{fmax}x",
        replicates=ssm - soft,
        why=f"{band_text(config.retrieval.seeds)} of the paired difference (both kernels of a seed see the same "
        f"{config.retrieval.eval} test sequences)",
        statement=f"n = {top} pairs ({fmax}x the training length): accuracy SSMax - softmax > 0 (softmax "
        f"{soft.mean():.3f}, SSMax {ssm.mean():.3f})",
    )


claims = each_claim(claim_retrieval_slopes, claim_retrieval_accuracy, when=measured("retrieval_weight"))
