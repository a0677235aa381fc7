"""The measurement of the prompt-forgetting probe: the offsets between continuations after two prompts, per layer
and position, the attention logits' extremes read block by block, and the relay model's matrices."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import torch

from analysis.core.devices import model_device, to_numpy
from analysis.core.progress import bar
from analysis.probing.base import ModelIncompatibleError
from analysis.theory import prompt_forgetting as th
from analysis.zoo.hooks import SCORES, canonical_name, hook_points, hooks, resid_names, run_with_cache
from analysis.zoo.model import PrefixKeyBias, TinyTransformer, bias_block


def max_abs_logit(scores: torch.Tensor, attn_bias=None, rows: int = 1024, row0: int = 0) -> float:
    """Largest finite ``|logit|`` of ``scores`` (B, H, n, K), the query rows ``row0 .. row0 + n - 1`` of the
    attention logits, with ``attn_bias`` (a (N, N) tensor or :class:`~analysis.zoo.model.PrefixKeyBias`)
    removed (0 if none are finite).

    The model's own logits: the intervention's bias is subtracted first. Masked keys are ``-inf`` and
    are skipped. Row blocks of ``rows`` queries over their keys ``<=`` the block's last query (the
    probe needs a causal model, so later keys are masked) keep the temporaries a few MB instead of
    copying the whole tensor; the value is the same as over the full matrix.

    The value is ``max(0, max |x|)`` over the finite entries, and the entries are split into regions that
    are read in place when all their values are finite (:func:`_finite_absmax`): the keys every row of a
    block sees, then the causal triangle in halves (:func:`_causal_absmax`). A compact
    :class:`~analysis.zoo.model.PrefixKeyBias` is subtracted on its prefix keys only (the others carry a bias
    of exactly 0); a dense bias is subtracted from the whole block. Every region gives the value the whole
    block would, so the result does not depend on how it is split (tested against the direct formula).
    """
    n, K = scores.shape[-2:]
    best = 0.0
    for i0 in range(0, n, rows):
        i1 = min(i0 + rows, n)
        k = min(K, row0 + i1)
        blk = scores[..., i0:i1, :k]  # (B, H, r, k)
        if attn_bias is None:
            best = max(best, _causal_absmax(blk, row0 + i0, 0))
        elif isinstance(attn_bias, PrefixKeyBias):
            p = min(attn_bias.n_keys, k)
            own = blk[..., :p] - attn_bias.values[row0 + i0 : row0 + i1, None].to(blk.dtype)
            best = max(best, _finite_absmax(own), _causal_absmax(blk, row0 + i0, p))
        else:
            best = max(best, _finite_absmax(blk - bias_block(attn_bias, row0 + i0, row0 + i1, k).to(blk.dtype)))
    return best


def _finite_absmax(x: torch.Tensor) -> float:
    """``max(0, max |x|)`` over the finite entries of ``x``: ``amax`` and ``amin`` read a strided view in place
    (``aminmax`` copies one first) and propagate NaN and any infinity they meet, so finite answers mean every
    entry is finite; else the answer comes from a copy with non-finite entries set to 0 (which the floor at
    0 makes harmless)."""
    if x.numel() == 0:
        return 0.0
    lo, hi = x.amin(), x.amax()
    if not (math.isfinite(float(lo)) and math.isfinite(float(hi))):
        lo, hi = torch.aminmax(torch.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0))
    return max(0.0, float(hi), -float(lo))


CAUSAL_LEAF = 64  # rows of a causal triangle read through the copying path at once (_causal_absmax)


def _causal_absmax(blk: torch.Tensor, q0: int, c0: int) -> float:
    """:func:`_finite_absmax` of keys ``c0 .. q0 + r - 1`` of ``blk`` (B, H, r, k), whose rows are the queries
    ``q0 .. q0 + r - 1``: keys ``<= q0`` (seen by every row of a causal model, so finite) in place, the
    triangle after them by halves of the rows, down to ``CAUSAL_LEAF`` rows (whose masked ``-inf`` entries
    send them through the copy). A key after a row's own query is masked in a causal model, and the halves
    skip those of their rows (the leaves read a few, which count as masked)."""
    r, k = blk.shape[-2:]
    c1 = min(k, q0 + r)  # no row of the block sees a key beyond its last query
    if c1 <= c0:
        return 0.0
    full = max(c0, min(c1, q0 + 1))
    best = _finite_absmax(blk[..., c0:full]) if full > c0 else 0.0
    if full < c1:
        if r <= CAUSAL_LEAF:
            best = max(best, _finite_absmax(blk[..., full:c1]))
        else:
            h = r // 2
            best = max(best, _causal_absmax(blk[..., :h, :], q0, full), _causal_absmax(blk[..., h:, :], q0 + h, full))
    return best


# Query rows per block of attention: memory ~ QUERY_BLOCK x N, never N x N. At N = 4112 (the full preset) and
# batch 2, 2 heads, float32, a block of 256 rows is 17 MB and stays in the cache between its product, mask,
# softmax and hook reads; 1024 rows (67 MB) do not: an 8-layer pair took 2.1 s at 1024 rows, 1.4 s at 512, 0.92 s
# at 256, 0.95 s at 128, 1.07 s at 64 (one thread of the 2-core Intel Xeon in bench/results).
QUERY_BLOCK = 256


@contextlib.contextmanager
def query_blocks(model, rows: int):
    """Attention in blocks of ``rows`` query rows for the duration (models with ``query_block``; others
    compute as they do)."""
    if not hasattr(model, "query_block"):
        yield model
        return
    before = model.query_block
    model.query_block = rows
    try:
        yield model
    finally:
        model.query_block = before


def measure_offsets(model, a, b, c, *, attn_bias=None, progress: bool = True) -> dict[str, np.ndarray]:
    """One forward pass per pair over ``[prompt; continuation]``; returns per pair, layer and continuation t:

    ``distance`` (n, L, T), ``norm`` (n, L, T) the mean |h| of the two states, ``share`` (n, L, T) the
    prompt's attention share averaged over heads and both sequences (NaN where no pattern hook exists),
    ``share_max`` (n, L, T) its largest head value, ``max_logit`` (n,) and ``min_rms`` (n,) (NaN where the
    model exposes no ``attn.hook_attn_scores`` / no pre-norm input ``ln1|ln2.hook_in``), and ``embed_delta``
    (n, P, d) the input offset (float64; width 0 where the model has no ``hook_embed``). Only hook names
    the model lists are asked for; ``blocks.{l}.hook_resid_post`` is the one the probe cannot do without.
    """
    n, P = a.shape
    L = model.n_layers
    names = model.hook_names()
    points = hook_points(model)
    resid = resid_names(L)
    pre_norm = [h for h in names if h.endswith((".ln1.hook_in", ".ln2.hook_in"))]
    scores = [h for h in names if canonical_name(h).endswith("attn." + SCORES)]
    patterns = [h for h in names if h.endswith("attn.hook_pattern")]
    missing = [r for r in resid if r not in names]
    if missing:
        raise ModelIncompatibleError(
            f"prompt_forgetting needs the residual hooks blocks.{{l}}.hook_resid_post; the model lacks {missing}"
        )
    embed = ["hook_embed"] if "hook_embed" in names else []
    dev = model_device(model)
    attn_bias = None if attn_bias is None else attn_bias.to(dev)
    out: dict[str, list] = {
        k: [] for k in ("distance", "norm", "share", "share_max", "max_logit", "min_rms", "embed_delta")
    }
    for i in bar(range(n), progress=progress, desc="pairs", leave=False):
        x = torch.cat([torch.stack([a[i], b[i]]), c[i].expand(2, -1)], dim=1).to(dev)  # (2, P + T)
        N = x.shape[1]
        stats = {"max_logit": 0.0, "min_rms": math.inf, "share": {}, "share_max": {}}

        # score and pattern hooks see whole (2, H, N, N) matrices or blocks of query rows (2, H, r, K)
        def on_scores(s: torch.Tensor, name: str, stats=stats) -> None:  # -inf where masked
            r0 = (points[name].rows or (0, 0))[0]
            stats["max_logit"] = max(stats["max_logit"], max_abs_logit(s, attn_bias, row0=r0))

        def on_pattern(p: torch.Tensor, name: str, stats=stats, N=N) -> None:
            r0, r1 = points[name].rows or (0, N)
            share = p[..., :P].sum(-1).double()  # (2, H, r) prompt share of each row
            for key, value in (("share", share.mean(dim=(0, 1))), ("share_max", share.amax(dim=(0, 1)))):
                stats[key].setdefault(name, np.full(N, np.nan))[r0:r1] = value.cpu().numpy()

        def on_norm_in(h: torch.Tensor, name: str, stats=stats) -> None:  # (2, N, d)
            stats["min_rms"] = min(stats["min_rms"], float(h.double().pow(2).mean(-1).sqrt().amin()))

        fwd = (
            [(s, on_scores) for s in scores] + [(p, on_pattern) for p in patterns] + [(h, on_norm_in) for h in pre_norm]
        )
        with torch.no_grad(), hooks(model, fwd), query_blocks(model, QUERY_BLOCK):
            _, cache = run_with_cache(model, x, names=resid + embed, attn_bias=attn_bias)
        hs = torch.stack([cache[r] for r in resid]).double()  # (L, 2, N, d)
        out["distance"].append((hs[:, 0, P:] - hs[:, 1, P:]).norm(dim=-1).cpu().numpy())  # (L, T)
        out["norm"].append((0.5 * (hs[:, 0, P:].norm(dim=-1) + hs[:, 1, P:].norm(dim=-1))).cpu().numpy())
        if embed:
            emb = cache["hook_embed"].double()
            out["embed_delta"].append((emb[0, :P] - emb[1, :P]).cpu().numpy())
        else:
            out["embed_delta"].append(np.zeros((P, 0)))
        T = x.shape[1] - P
        for key in ("share", "share_max"):
            rows = [stats[key].get(f"blocks.{layer}.attn.hook_pattern") for layer in range(L)]
            out[key].append(np.stack([r[P:] if r is not None else np.full(T, np.nan) for r in rows]))
        out["max_logit"].append(stats["max_logit"] if scores else math.nan)
        out["min_rms"].append(stats["min_rms"] if pre_norm else math.nan)
    return {k: np.asarray(v) for k, v in out.items()}


def relay_matrices(model: TinyTransformer) -> list[np.ndarray]:
    """``A_l = W_o W_v`` of every block (float64): the matrix relay model's weights."""
    return [to_numpy(blk.attn.W_o.weight.double() @ blk.attn.W_v.weight.double()) for blk in model.blocks]


def relay_prediction(model: TinyTransformer, embed_delta: np.ndarray, T_total: int) -> np.ndarray:
    """Offsets (n, L, T_total) of the matrix relay model with ``A_l = W_o W_v`` of our own model (float64)."""
    mats = relay_matrices(model)
    return np.stack([np.linalg.norm(th.relay_vector_offsets(d0, mats, T_total), axis=-1) for d0 in embed_delta])


def relay_matrix_limit(model: TinyTransformer, embed_delta: np.ndarray) -> np.ndarray:
    """(n, L): ``lim_t t D_l(t) / (P (ln t)^(l-1)) = |A_l .. A_1 sum_s delta_s| / (P (l-1)!)`` per pair and layer.

    In the closed form ``delta^l_t = (1/t) sum_s sum_k h_(k-1)(1/s..1/t) E_k delta_s`` the ``k = l`` term
    grows like ``(ln t)^(l-1)/(l-1)!`` and every other like a lower power, and ``E_l = A_l .. A_1``.
    """
    mats = relay_matrices(model)
    P = embed_delta.shape[1]
    out = []
    for d0 in embed_delta:
        v, row = d0.sum(axis=0), []
        for layer, A in enumerate(mats):
            v = A @ v
            row.append(np.linalg.norm(v) / (P * math.factorial(layer)))
        out.append(row)
    return np.asarray(out)
