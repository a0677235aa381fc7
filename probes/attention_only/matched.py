"""Part ``matched`` (seed 004#1): a standard model, the attention-only stack with as many parameters and the standard
model with its MLPs deleted, trained on the character corpus; and the stable ranks of their weights along training
(the claims-only part ``stable_ranks``)."""

from __future__ import annotations

import numpy as np
import torch

from analysis.claims.evidence import mean_se, replicate_seed
from analysis.claims.ledger import Ledger
from analysis.core.progress import bar
from analysis.probing.base import Result
from analysis.probing.parts import Context
from analysis.training.train import evaluate, probe_lm_train_config, train
from analysis.zoo.model import TinyTransformer
from probes.attention_only.config import SOURCE, Config
from probes.attention_only.models import (
    QK_GAIN,
    SAN_MODELS,
    count_params,
    deep_model_config,
    matched_depth,
    san_model_config,
    san_task,
)
from probes.attention_only.shared import part_claims

DESCRIPTION = "a standard model against an attention-only stack with as many parameters and the MLP-deleted model"
FIELDS = (
    "matched_d_model",
    "matched_n_heads",
    "matched_n_layers",
    "matched_seq_len",
    "matched_steps",
    "matched_seeds",
    "matched_eval_batches",
    "matched_snapshots",
    "trend_widths",
    "training",
)

SAN_PAPER_GAP = 0.006  # 004#1: the matched-parameter gap at 6M-87M parameters (nats)
SAN_GAP = 0.05  # issue 17 / 004#1: a standard and an attention-only model with equal parameters differ by <= 0.05 nats


def measure_param_counts(config: Config) -> dict[str, float]:
    """The largest |theory - actual| parameter count over the trained models' configs, and the actual counts of
    the matched pair."""
    vocab = san_task(config).vocab_size
    cfgs = {name: san_model_config(config, name, vocab) for name in SAN_MODELS}
    for qk in (False, True):
        cfgs[f"deep_qk{int(qk)}"] = deep_model_config(config, qk, vocab)
    actual = {name: TinyTransformer(c).num_params() for name, c in cfgs.items()}
    return {
        "param_count_error": float(max(abs(count_params(cfgs[n]) - actual[n]) for n in cfgs)),
        "params_standard": float(actual["standard"]),
        "params_attention_only": float(actual["attention_only"]),
        "params_mlp_deleted": float(actual["mlp_deleted"]),
        "san_layers_matched": float(cfgs["attention_only"].n_layers),
    }


def stable_rank(a: np.ndarray) -> np.ndarray:
    """``|A|_F^2 / |A|_2^2`` of each matrix in ``a`` (..., m, n), float64: the largest eigenvalue of the smaller
    Gram matrix is ``|A|_2^2``. A zero matrix has no stable rank (ValueError); a matrix with a non-finite entry
    (diverged weights) gets NaN."""
    a = np.asarray(a, dtype=np.float64)
    if a.ndim < 2:
        raise ValueError(f"stable_rank needs matrices (..., m, n), got shape {a.shape}")
    finite = np.isfinite(a).all(axis=(-2, -1))
    a = np.where(finite[..., None, None], a, 1.0)  # placeholders, replaced by NaN below
    gram = a @ np.swapaxes(a, -1, -2) if a.shape[-2] <= a.shape[-1] else np.swapaxes(a, -1, -2) @ a
    top = np.linalg.eigvalsh(gram)[..., -1]
    if not np.all(top > 0):
        raise ValueError("stable_rank is undefined for a zero matrix")
    return np.where(finite, (a**2).sum(axis=(-2, -1)) / top, np.nan)


def qk_stable_ranks(model: TinyTransformer) -> np.ndarray:
    """(L,) per layer the mean over heads of the stable rank of ``W_q,h^T W_k,h`` (d x d, the bilinear form)."""
    c = model.config
    out = []
    for block in model.blocks:
        wq = block.attn.W_q.weight.detach().to(torch.float64).numpy().reshape(c.n_heads, c.head_size, c.d_model)
        wk = block.attn.W_k.weight.detach().to(torch.float64).numpy().reshape(c.n_heads, c.head_size, c.d_model)
        out.append(stable_rank(np.swapaxes(wq, 1, 2) @ wk).mean())
    return np.array(out)


def wo_stable_ranks(model: TinyTransformer) -> np.ndarray:
    """(L,) the stable rank of each layer's output projection ``W_O`` (d x H dh)."""
    return np.array([float(stable_rank(b.attn.W_o.weight.detach().to(torch.float64).numpy())) for b in model.blocks])


def second_half_change(sr: np.ndarray) -> np.ndarray:
    """(seed,) from stable ranks (seed, checkpoint, layer) at evenly spaced checkpoints 0..S: the mean over layers
    of ``(sr(end) - sr(mid)) / sr(mid)``, the relative change over the second half of training."""
    sr = np.asarray(sr, dtype=np.float64)
    mid = (sr.shape[1] - 1) // 2
    return np.nanmean((sr[:, -1] - sr[:, mid]) / sr[:, mid], axis=-1)


def snapshot_steps(config: Config) -> tuple[int, ...]:
    """The ``san_snapshots + 1`` evenly spaced checkpoints 0..matched_steps (the middle one starts the second half)."""
    n = config.matched.snapshots
    return tuple(int(round(i * config.matched.steps / n)) for i in range(n + 1))


def measure_san(config: Config, progress: bool) -> dict[str, np.ndarray]:
    """(model, seed) held-out loss of :data:`SAN_MODELS`; for standard and attention_only, the held-out loss
    (model, seed, checkpoint) and stable ranks (model, seed, checkpoint, layer) of W_q,h^T W_k,h (head mean) and
    W_O, NaN-padded past a model's depth."""
    task = san_task(config)
    steps = snapshot_steps(config)
    S, depth = config.matched.seeds, matched_depth(config)["layers"]
    held_out = list(task.eval_batches(16, max_batches=config.matched.eval_batches))
    out = {"loss": np.full((len(SAN_MODELS), S), np.nan), "loss_checkpoint": np.full((2, S, len(steps)), np.nan)}
    for key in ("sr_qk", "sr_o"):
        out[key] = np.full((2, S, len(steps), max(depth, config.matched.n_layers)), np.nan)
    jobs = [(i, s) for i in range(len(SAN_MODELS)) for s in range(S)]
    for i, s in bar(jobs, desc="attention_only: matched parameters", progress=progress):
        seed = replicate_seed(config.seed, s)
        tc = probe_lm_train_config(config.matched.steps, seed).replace(
            eval_every=config.matched.steps, eval_batches=config.matched.eval_batches
        )
        snaps = steps if i < 2 else ()
        res = train(
            san_model_config(config, SAN_MODELS[i], task.vocab_size, seed), task, tc, progress=False, snapshots=snaps
        )
        out["loss"][i, s] = res.history["eval_loss"][-1]
        for j, step in enumerate(snaps):
            model = res.snapshot_model(step)
            out["loss_checkpoint"][i, s, j] = evaluate(model, task, held_out)
            out["sr_qk"][i, s, j, : model.config.n_layers] = qk_stable_ranks(model)
            out["sr_o"][i, s, j, : model.config.n_layers] = wo_stable_ranks(model)
    return out


def trend_widths(config: Config) -> list[int]:
    """The widths of the matched gap's trend, ascending: ``matched_d_model`` and ``trend_widths``."""
    return sorted({config.matched.d_model, *config.trend_widths})


def trend_params(config: Config) -> np.ndarray:
    """(width, standard | attention_only) the parameter counts of the two models at every width of
    :func:`trend_widths` (the attention-only depth matched at each width)."""
    vocab = san_task(config).vocab_size
    return np.array(
        [
            [TinyTransformer(san_model_config(config, m, vocab, width=w)).num_params() for m in SAN_MODELS[:2]]
            for w in trend_widths(config)
        ],
        dtype=np.float64,
    )


def measure_trend(config: Config, loss: np.ndarray, progress: bool) -> np.ndarray:
    """(width, standard | attention_only, seed) held-out loss at every width of :func:`trend_widths`: the matched
    width's from ``loss`` (:func:`measure_san`'s), the others trained by the same recipe and seeds, the
    attention-only depth matched at each width."""
    widths = trend_widths(config)
    task = san_task(config)
    out = np.full((len(widths), 2, config.matched.seeds), np.nan)
    jobs = [(w, i, s) for w in widths for i in range(2) for s in range(config.matched.seeds)]
    for w, i, s in bar(jobs, desc="attention_only: matched gap over widths", progress=progress):
        k = widths.index(w)
        if w == config.matched.d_model:
            out[k, i, s] = loss[i, s]
            continue
        seed = replicate_seed(config.seed, s)
        mc = san_model_config(config, SAN_MODELS[i], task.vocab_size, seed, width=w)
        tc = probe_lm_train_config(config.matched.steps, seed).replace(
            eval_every=config.matched.steps, eval_batches=config.matched.eval_batches
        )
        out[k, i, s] = train(mc, task, tc, progress=False).history["eval_loss"][-1]
    return out


def measure(ctx: Context) -> None:
    """The parameter counts; with ``trained``, every matched model's held-out loss per seed, and the stable ranks and
    losses at the checkpoints of the first two (NaN when not trained)."""
    config = ctx.config
    ctx.scalars.update(measure_param_counts(config))
    san = measure_san(config, ctx.progress) if config.training else None
    S, snaps = config.matched.seeds, snapshot_steps(config)
    layers = max(matched_depth(config)["layers"], config.matched.n_layers)
    nan = lambda *shape: np.full(shape, np.nan)  # noqa: E731
    san = san or {
        "loss": nan(len(SAN_MODELS), S),
        "loss_checkpoint": nan(2, S, len(snaps)),
        "sr_qk": nan(2, S, len(snaps), layers),
        "sr_o": nan(2, S, len(snaps), layers),
    }
    widths = trend_widths(config)
    trend = measure_trend(config, san["loss"], ctx.progress) if config.training else nan(len(widths), 2, S)
    dims4 = ("san_sr_model", "san_seed", "san_checkpoint", "san_layer")
    ctx.data.update(
        san_trend_loss=(("san_width", "san_sr_model", "san_seed"), trend),
        san_trend_params=(("san_width", "san_sr_model"), trend_params(config)),
    )
    ctx.data.update(
        san_loss=(("san_model", "san_seed"), san["loss"]),
        san_loss_checkpoint=(dims4[:3], san["loss_checkpoint"]),
        san_sr_qk=(dims4, san["sr_qk"]),
        san_sr_o=(dims4, san["sr_o"]),
    )
    ctx.coords.update(
        san_model=list(SAN_MODELS),
        san_sr_model=list(SAN_MODELS[:2]),
        san_seed=np.arange(S),
        san_checkpoint=np.array(snaps),
        san_layer=np.arange(layers),
        san_width=np.array(widths),
    )
    ctx.scalars["san_residual_theory"] = float(matched_depth(config)["difference"])


def claim_san_identities(led: Ledger, r: Result) -> None:
    c, s = r.config, r.scalars
    std, san = int(s["params_standard"]), int(s["params_attention_only"])
    led.judge(
        "san_param_count_formula",
        measured=s["param_count_error"],
        why="integer counts: the closed form and the models' parameter tensors must agree exactly",
        statement="the closed-form parameter count equals num_params() for the standard, attention-only and "
        "MLP-deleted models and both deep stacks",
    )
    led.judge(
        "san_matched_params_residual",
        measured=san - std,
        expected=s["san_residual_theory"],
        source=f"{SOURCE}, item 5: {c.matched.n_layers} standard blocks hold as many parameters as "
        f"{int(s['san_layers_matched'])} attention-only blocks up to one norm's gains per standard block",
        why="integer counts: exact",
        statement=f"attention-only ({int(s['san_layers_matched'])} layers, {san} parameters) minus standard "
        f"({c.matched.n_layers} layers, {std}): the derived residual ({(san - std) / std:.2%} of the standard's)",
    )
    led.judge(
        "qk_norm_logit_bound_attained",
        measured=s["qk_bound_construction_ratio"],
        expected=1.0,
        atol=1e-12,
        why="float64 with norm eps 0: |xhat|^2 = dh exactly, so the diagonal logit is scale g^2 dh; only sums of "
        "dh terms round (relative ~ dh eps = 1e-14)",
        statement=f"a QK-norm layer with W_k = W_q and constant gains {QK_GAIN:g} attains the logit bound "
        "(largest |logit| / bound = 1)",
    )


def gap_slopes(r: Result) -> np.ndarray:
    """(seed,) each seed's least-squares slope of the matched gap (attention-only minus standard held-out loss) in
    log2 width over :func:`trend_widths`: nats per doubling of d (NaN where a loss is)."""
    loss = r.data["san_trend_loss"].values  # (width, standard | attention_only, seed)
    x = np.log2(r.data["san_width"].values.astype(np.float64))
    xc = x - x.mean()
    return (xc[:, None] * (loss[:, 1] - loss[:, 0])).sum(0) / (xc**2).sum()


def trend_text(r: Result) -> str:
    """The matched gap's measured trend with width, in words: what a miss at the run's width says about scale."""
    tr, widths = mean_se(gap_slopes(r)), r.data["san_width"].values
    params = r.data["san_trend_params"].values
    way = "falls" if tr.mean < 0 else "rises"
    return (
        f"the paper's models have 6M-87M parameters, these {int(params.min())}-{int(params.max())}; over d = "
        f"{', '.join(map(str, widths))} the gap {way} by {abs(tr.mean):.3g} nats per doubling of d (SE {tr.se:.2g}, "
        f"{tr.n} seeds: san_matched_gap_falls_with_width)"
    )


def claim_san_gap(led: Ledger, r: Result) -> None:
    """Matched parameters: the held-out gap against 0 (alternative: the in-place deletion gap); the seed's 0.05; the
    gap's trend over widths (an at-scale finding re-run small: does the tiny run approach it as it grows)."""
    c = r.config
    loss = r.data["san_loss"]
    gap = (loss.sel(san_model="attention_only") - loss.sel(san_model="standard")).values
    deleted = (loss.sel(san_model="mlp_deleted") - loss.sel(san_model="standard")).values
    g, dl = mean_se(gap), mean_se(deleted)
    depth = int(r.scalars["san_layers_matched"])
    scale = trend_text(r)
    slopes, widths = gap_slopes(r), r.data["san_width"].values
    led.judge(
        "san_matched_gap_falls_with_width",
        replicates=slopes,
        why=f"95% t band over {len(slopes)} seeds of each seed's least-squares slope of the gap in log2 d over d = "
        f"{', '.join(map(str, widths))} (the same replicate seeds at every width)",
        statement="held-out loss, attention-only minus standard at equal parameters: its slope in log2 width < 0 "
        f"(d = {', '.join(map(str, widths))})",
    )
    led.judge(
        "san_matched_params_gap_zero",
        expected=0.0,
        replicates=gap,
        alternative=dl.mean,
        source="004#1: at matched parameters the gap is 0.006 nats; "
        f"{SOURCE}, item 5: {depth} attention-only blocks match {c.matched.n_layers} standard ones",
        why=f"95% t band over {g.n} seeds of the paired difference (the same replicate seed: data stream and "
        "validation windows)",
        statement=f"held-out loss, attention-only ({depth} layers) minus standard ({c.matched.n_layers} layers, "
        f"MLP 4d), "
        f"width {c.matched.d_model}, equal parameters: 0",
        scale=scale,
    )
    led.judge(
        "san_matched_params_gap_within_seed_range",
        measured=g.mean,
        lo=-SAN_GAP,
        hi=SAN_GAP,
        why=f"the seed's range; the mean over {g.n} seeds has SE {g.se:.2g} (their spread)",
        statement=f"|held-out loss gap| at equal parameters <= {SAN_GAP:g} nats",
        scale=scale,
    )
    led.judge(
        "san_mlp_deletion_in_place_costs",
        replicates=deleted,
        why=f"95% t band over {dl.n} seeds of the paired difference (the same replicate seed)",
        statement="held-out loss of the standard model with its MLPs deleted minus the standard's > 0",
    )


claims = part_claims(claim_san_identities, trained=(claim_san_gap,))
