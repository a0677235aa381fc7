"""What more than one part of the attention-entropy probe uses: the row statistics of attention scores read
through hooks, the spectral bound per row, the Gaussian closed form, the training recipe, the bands' wording, the
rounding tolerances, a claim's numbers and the measure and claims steps of the parts that train their own models."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from analysis.claims.evidence import MeanSE
from analysis.core.devices import model_device
from analysis.data.corpus import CorpusSpec
from analysis.data.tasks import CorpusLM, MarkovLanguage
from analysis.probing.base import ModelIncompatibleError
from analysis.probing.parts import Context
from analysis.theory import attention_entropy as th
from analysis.training.train import TrainConfig
from analysis.zoo.hooks import SCORES, canonical_name, hooks
from probes.attention_entropy.config import Config

SEED_SSMAX, SEED_SIGMOID = "000#6", "000#17"
ROW_BLOCK = 256  # query rows reduced at a time inside the hook (bounds float64 memory: H x 256 x T)
FLOAT64_ROW = 1e-9  # float64 rounding of a logsumexp over <= 4096 terms (~ n eps) of the same float64 logits
FLOAT32_ROW = 1e-4  # float32 logits: a relative 1e-6 change of a range R <= ~10 moves ln(1+(n-1)e^{-R}) < 1e-4
FADE_WITHIN_RUN = (
    "the planted-key network is a fixed float64 construction with no random weights: its fitted fading rate is "
    "deterministic, and the finite-n drift of the fitted slope between two half-decades is its only uncertainty"
)


def entropy_at_n(ent_rows: np.ndarray, ns, k: int) -> np.ndarray:
    """``ln n - mean(ln n_r - H_r)`` over the k rows ending at n: the deficit is averaged, not H, because
    row r sees only ``n_r = r`` keys (averaging H itself would mix ln n_r into the estimate)."""
    n_r = np.arange(1, ent_rows.shape[-1] + 1)
    return np.log(np.asarray(ns, dtype=np.float64)) - at_n(np.log(n_r) - ent_rows, ns, k)


def at_n(rows: np.ndarray, ns, k: int) -> np.ndarray:
    """Average of a (..., T) row array over the k rows ending at n, for each n: (..., len(ns))."""
    return np.stack([rows[..., n - k : n].mean(-1) for n in ns], axis=-1)


def worst_ratio(small: np.ndarray, big: np.ndarray) -> float:
    """Tightness of ``small <= big`` over many rows: the largest ``small / big`` (rows with ``big = 0`` left out)."""
    keep = big > 0
    return float(np.max(small[keep] / big[keep])) if keep.any() else math.nan


def spectral_bound_rows(model, tokens: torch.Tensor, causal: bool = True) -> np.ndarray | None:
    """Per layer, head and row (L, H, T): ``ln(1 + (n-1) exp(-2 c sigma |x_i| max_j |x_j|))`` (batch 1), the
    max over the keys row i sees (``j <= i`` when causal, all T otherwise)."""
    got = attention_inputs_and_sigma(model, tokens)
    if got is None:
        return None
    xn, sig = got
    x = xn[:, 0]  # (L, T)
    T = x.shape[-1]
    if causal:
        run_max = np.maximum.accumulate(x, axis=-1)  # max over visible keys j <= i
        n = np.arange(1, T + 1)
    else:
        run_max = np.broadcast_to(x.max(-1, keepdims=True), x.shape)
        n = np.full(T, T)
    c = model.config.scale
    return th.spectral_entropy_bound(n[None, None], sig[:, :, None], c, x[:, None, :], run_max[:, None, :])


def attention_inputs_and_sigma(model, tokens: torch.Tensor) -> tuple[np.ndarray, np.ndarray] | None:
    """``(|x_i|)`` (L, B, T) of every attention input and ``sigma = ||W_q,h^T W_k,h||_2`` (L, H), or None when
    the model does not have the zoo's layout (pre-LN with ``ln1.hook_normalized`` hooks and per-head
    ``W_q``/``W_k``) or uses QK-norm/RoPE (the spectral bound then does not apply)."""
    blocks = getattr(model, "blocks", None)
    cfg = getattr(model, "config", None)
    if (
        blocks is None
        or getattr(cfg, "qk_norm", True) is not False
        or getattr(cfg, "pos", None) == "rope"
        or getattr(cfg, "norm", None) != "pre"
    ):
        return None
    names = [f"blocks.{i}.ln1.hook_normalized" for i in range(len(blocks))]
    if not set(names) <= set(model.hook_names()):
        return None
    norms: dict[str, np.ndarray] = {}

    def on_x(x: torch.Tensor, name: str) -> None:  # (B, T, d)
        norms[name] = x.double().norm(dim=-1).cpu().numpy()

    with torch.no_grad(), hooks(model, [(n, on_x) for n in names]):
        model(tokens.to(model_device(model)))
    H, dh = cfg.n_heads, cfg.head_size
    sig = np.zeros((len(blocks), H))
    for layer, blk in enumerate(blocks):
        Wq = blk.attn.W_q.weight.detach().double().view(H, dh, -1)  # (H, dh, d)
        Wk = blk.attn.W_k.weight.detach().double().view(H, dh, -1)
        for h in range(H):
            m = Wq[h].T @ Wk[h]
            # a diverged training run leaves non-finite weights: no norm (the SVD would raise), NaN bound
            sig[layer, h] = float(torch.linalg.matrix_norm(m, ord=2)) if torch.isfinite(m).all() else math.nan
    return np.stack([norms[n] for n in names]), sig


def measure_rows(model, tokens: torch.Tensor, *, normalised: bool, progress: bool = False) -> dict[str, np.ndarray]:
    """One forward pass; per layer, head and query row (averaged over the batch): entropy, max weight,
    logit std, range and max |logit|, each (L, H, T). Nothing (B, H, T, T) outlives its hook."""
    names = score_hook_names(model)
    found: dict[str, dict[str, np.ndarray]] = {}

    def on_scores(sc: torch.Tensor, name: str) -> None:  # (B, H, T, T)
        T = sc.shape[-1]
        parts: dict[str, list] = {}
        for r0 in range(0, T, ROW_BLOCK):
            st = row_stats(sc[:, :, r0 : r0 + ROW_BLOCK], normalised)
            for k, v in st.items():
                parts.setdefault(k, []).append(v.mean(0))  # (H, r) mean over the batch
        found[name] = {k: torch.cat(v, dim=-1).cpu().numpy() for k, v in parts.items()}

    with torch.no_grad(), hooks(model, [(n, on_scores) for n in names]):
        model(tokens.to(model_device(model)))
    keys = found[names[0]].keys()
    return {k: np.stack([found[n][k] for n in names]) for k in keys}  # (L, H, T)


def score_hook_names(model) -> list[str]:
    """``blocks.{l}.attn.hook_attn_scores`` of every layer the model exposes, in layer order (a model that
    names them ``attn.hook_scores``, the older spelling, is read the same way)."""
    names = [h for h in model.hook_names() if h.startswith("blocks.") and canonical_name(h).endswith(".attn." + SCORES)]
    if not names:
        raise ModelIncompatibleError(
            "the model exposes no blocks.{l}.attn.hook_attn_scores hook points (pre-softmax logits); "
            "attention_entropy needs them"
        )
    return sorted(names, key=lambda h: int(h.split(".")[1]))


def row_stats(scores: torch.Tensor, normalised: bool) -> dict[str, torch.Tensor]:
    """Per-row statistics of a block of logits (B, H, r, T) with -inf where hidden (float64)."""
    s = scores.double()
    finite = torch.isfinite(s)
    n = finite.sum(-1).double()  # (B, H, r)
    x0 = torch.where(finite, s, 0.0)
    mean = x0.sum(-1) / n
    var = torch.where(finite, (s - mean[..., None]) ** 2, 0.0).sum(-1) / n
    hi = torch.where(finite, s, -math.inf).amax(-1)
    lo = torch.where(finite, s, math.inf).amin(-1)
    out = {"n": n, "std": var.sqrt(), "range": hi - lo, "absmax": torch.maximum(hi.abs(), lo.abs())}
    if normalised:
        lse = torch.logsumexp(s, dim=-1)
        p = torch.softmax(s, dim=-1)
        ent = lse - (p * x0).sum(-1)  # H = ln Z - sum p x
        out["entropy"] = ent
        out["max_weight"] = p.amax(-1)
    return out


def gaussian_exact(n, std: np.ndarray) -> np.ndarray:
    """The exact Gaussian entropy ``E[H]`` at every measured std (``n`` broadcast against ``std``)."""
    n_b = np.broadcast_to(n, std.shape)
    return np.vectorize(lambda n_, s_: th.gaussian_entropy_exact(int(n_), float(s_)))(n_b, std)


def band_text(n_seeds: int) -> str:
    return f"95% t band over {n_seeds} training seeds (replicate seeds)"


def train_config(config: Config, lr: float, seed: int | None = None):
    """AdamW, short warm-up, constant lr, no clipping and no decay: the setting where logit growth shows."""
    return TrainConfig(
        steps=config.train.steps,
        batch_size=16,
        lr=lr,
        warmup_steps=min(20, config.train.steps // 5),
        schedule="constant",
        weight_decay=0.0,
        grad_clip=0.0,
        seed=config.seed if seed is None else seed,
    )


def training_task(config: Config):
    if config.train.data == "markov":
        return MarkovLanguage(vocab_size=64, seq_len=config.train.seq_len, concentration=0.1, seed=config.seed)
    return CorpusLM(seq_len=config.train.seq_len, corpus=CorpusSpec(encoding="char"))


def fit_log_slope(n: np.ndarray, w: np.ndarray) -> float:
    """Least-squares slope of ``ln w`` against ``ln n``. For sorted ``n`` it is a convex combination of the
    secant slopes between neighbours, so it lies within the range of the local slope over the window."""
    return float(np.polyfit(np.log(n), np.log(w), 1)[0])


def fade_rate_numbers(rate: float, lower_half: float) -> dict[str, float]:
    """A fitted fading rate's numbers: the fit over the upper half-decade measured, its drift from the fit over the
    lower half-decade the SE (normal band; a within-run uncertainty, :data:`FADE_WITHIN_RUN`)."""
    return {"measured": rate, "se": abs(rate - lower_half), "dof": math.inf}


def residual_numbers(measured: np.ndarray, predicted: np.ndarray, resid: MeanSE) -> dict[str, float]:
    """A prediction's numbers over independent replicates: the mean measured and predicted values, and the SE (and
    dof) of ``resid``, the mean over the replicates of each one's residual (measured - predicted)."""
    return {"measured": float(measured.mean()), "expected": float(predicted.mean()), "se": resid.se, "dof": resid.dof}


def measure_own(ctx: Context, sweep: Callable[..., dict], arrays: Callable[[Config, dict], tuple[dict, dict]]) -> None:
    """Own models only: ``arrays(config, sweep(config, progress=...))``, the ``(data, coords)`` of the part's
    training sweep, into the run."""
    if ctx.own_model:
        data, coords = arrays(ctx.config, sweep(ctx.config, progress=ctx.progress))
        ctx.data.update(data)
        ctx.coords.update(coords)
