"""The statistics of one model on one batch: the residual stream's moments per position, the branch ratios, the
gradient norms per weight matrix, the block Jacobians; and their assembly into labelled arrays."""

from __future__ import annotations

import math

import numpy as np
import torch
import xarray as xr

from analysis.core.devices import model_device
from analysis.theory import signal_propagation as th
from analysis.zoo import protocol
from analysis.zoo.hooks import hooks, resid_names, run_with_cache
from probes.signal_propagation.config import _PARAM_RE, JACOBIAN_SEQUENCES, LAYER_SEGMENTS, PARAMS, SUBLAYERS
from probes.signal_propagation.models import fixed_loss


def layer_index(name: str) -> int | None:
    """The layer of a parameter path: the first integer segment right after a segment named
    ``layers``/``layer``/``h``/``blocks`` (``encoder.layer.3.attention...`` -> 3); None outside layers."""
    parts = name.split(".")
    for a, b in zip(parts[:-1], parts[1:], strict=True):
        if a in LAYER_SEGMENTS and b.isdigit():
            return int(b)
    return None


def param_names(model) -> tuple[str, ...]:
    """Gradient columns for a model: our weight matrices when its parameters carry our names, else one
    ``total`` column (the Frobenius norm of all of a layer's parameters' gradients together)."""
    return PARAMS if any(_PARAM_RE.match(n) for n, _ in model.named_parameters()) else ("total",)


def layer_grad_norms(model, L: int) -> np.ndarray:
    """(L, len(param_names)) gradient norms per layer after a backward pass (NaN where no gradient)."""
    cols = param_names(model)
    grads = np.full((L, len(cols)), np.nan)
    if cols == PARAMS:
        for pname, p in model.named_parameters():
            m = _PARAM_RE.match(pname)
            if m and m.group(2) in PARAMS and p.grad is not None:
                grads[int(m.group(1)), PARAMS.index(m.group(2))] = p.grad.norm().item()
        return grads
    sq = np.zeros(L)
    seen = np.zeros(L, dtype=bool)
    for pname, p in model.named_parameters():
        l = layer_index(pname)
        if l is not None and l < L and p.grad is not None:
            sq[l] += p.grad.double().pow(2).sum().item()
            seen[l] = True
    grads[seen, 0] = np.sqrt(sq[seen])
    return grads


def _post_norm_inputs(model, L: int) -> dict[int, tuple[str, float]]:
    """Zoo blocks with post placement whose output is a plain LayerNorm (unit gain, zero bias at init):
    block -> (the hook_in name of that norm, its eps). The norm's output has per-token second moment
    ``sigma_t^2 / (sigma_t^2 + eps)`` exactly, ``sigma_t^2`` the input's variance over the width."""
    out = {}
    for l, block in enumerate(getattr(model, "blocks", [])[:L]):
        if getattr(block, "placement", None) != "post":
            continue
        ln = "ln2" if getattr(block, "mlp", None) is not None else "ln1"
        norm = getattr(block, ln, None)
        if norm is not None and norm.kind == "layernorm" and norm.out_scale == 1.0:
            out[l] = (f"blocks.{l}.{ln}.hook_in", float(norm.eps))
    return out


def measure(
    model,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    mlp: bool,
    pre_like: bool,
    jacobian: bool = True,
    no_norm: bool = False,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Every per-layer statistic of one model on one batch (see the module docstring).

    Only hook points the model has are asked for; a statistic whose hooks are missing is NaN.
    ``pre_like`` / ``no_norm`` (zoo sweep only) add the attention moment ``a_l`` (input: the norm's
    output, resp. the raw stream) and, for ``no_norm``, the MLP moment (theory section 8).
    """
    L = model.n_layers
    inputs, targets = inputs.to(model_device(model)), targets.to(model_device(model))
    have = set(model.hook_names())
    first = resid_names(L, "depth")[0]  # the input of block 0; a model without it: the embedding
    first = first if first in have else "hook_embed"
    want = [first] + resid_names(L, "pre") + resid_names(L, "post") + resid_names(L, "mid")
    want += [f"blocks.{l}.{h}" for l in range(L) for h in ("hook_attn_out", "hook_mlp_out")]
    if pre_like:
        want += [f"blocks.{l}.{h}" for l in range(L) for h in ("attn.hook_pattern", "ln1.hook_normalized")]
    if no_norm:
        want += [f"blocks.{l}.attn.hook_pattern" for l in range(L)]
    post_in = _post_norm_inputs(model, L)  # block -> (hook_in of the LayerNorm that ends it, eps)
    want += [name for name, _ in post_in.values()]
    names = [n for n in dict.fromkeys(want) if n in have]
    model.zero_grad(set_to_none=True)
    out, c = run_with_cache(model, inputs, names=names)
    loss, _ = fixed_loss(out, targets, protocol.vocab_size(model), seed)
    loss.backward()

    streams = [c[first]] + [c[name] for name in resid_names(L)]  # (B, T, d) each
    out_: dict[str, np.ndarray] = {}
    out_["resid_var"] = np.array([x.double().pow(2).mean().item() for x in streams])
    out_["resid_rms"] = np.sqrt(out_["resid_var"])
    out_["post_ln_moment"] = np.full(L + 1, np.nan)  # exact mean(x^2) after a block that ends in a LayerNorm
    for l, (name, eps) in post_in.items():
        if name in c:
            var = c[name].double().var(-1, unbiased=False)  # per token, over the width
            out_["post_ln_moment"][l + 1] = (var / (var + eps)).mean().item()
    out_["resid_rms_min"] = np.array([x.double().pow(2).mean(-1).sqrt().min().item() for x in streams])
    out_["token_cosine"] = np.array([th.mean_token_cosine(x).mean().item() for x in streams])
    out_["rank_residual"] = np.array([th.rank_residual(x).mean().item() for x in streams])
    out_["angular_distance"] = np.array(
        [th.angular_distance(streams[l], streams[l + 1]).mean().item() for l in range(L)]
    )

    def ratio(branch: str, base: torch.Tensor) -> float:
        return (c[branch].double().norm(dim=-1) / base.double().norm(dim=-1)).mean().item()

    branch = np.full((L, 2), np.nan)
    mlp_moment = np.full(L, np.nan)
    for l in range(L):
        if f"blocks.{l}.hook_attn_out" in c:
            branch[l, 0] = ratio(f"blocks.{l}.hook_attn_out", streams[l])
        if mlp and f"blocks.{l}.hook_mlp_out" in c:
            # the MLP's input stream; a model without hook_resid_mid: the block's input instead
            mid = c.get(resid_names(L, "mid")[l], streams[l])
            branch[l, 1] = ratio(f"blocks.{l}.hook_mlp_out", mid)
            if no_norm:
                q_mid = mid.double().pow(2).mean(-1)  # (B, T) per-token second moment
                mlp_moment[l] = float(th.no_norm_mlp_moment(q_mid.cpu().numpy()).mean())
    out_["branch_ratio"] = branch
    out_["mlp_moment"] = mlp_moment
    attn = np.full(L, np.nan)
    for l in range(L):
        src = f"blocks.{l}.ln1.hook_normalized" if pre_like else resid_names(L, "pre")[l]
        if (pre_like or no_norm) and {f"blocks.{l}.attn.hook_pattern", src} <= set(c):
            a = th.attention_branch_moment(c[f"blocks.{l}.attn.hook_pattern"], c[src])
            attn[l] = a.mean().item()
    out_["attn_moment"] = attn
    out_["grad_norm"] = layer_grad_norms(model, L)
    model.zero_grad(set_to_none=True)
    out_["loss"] = np.array(loss.item())
    out_["jacobian_identity_gap"], out_["jacobian_norm"] = (
        block_jacobians(model, inputs[:JACOBIAN_SEQUENCES]) if jacobian else (np.full(L, np.nan), np.full(L, np.nan))
    )
    return out_


def jacobian_identity_gaps(model, inputs: torch.Tensor) -> np.ndarray:
    """``|J_l - I|_F / sqrt(d)`` per block at the last position, mean over the batch (exact Jacobians)."""
    return block_jacobians(model, inputs)[0]


def block_jacobians(model, inputs: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Per block at the last position, mean over the batch (exact Jacobians): ``|J_l - I|_F / sqrt(d)``
    and the spectral norm ``|J_l|_2`` (the most a perturbation of the block's input can grow through it).

    A hook makes every block's input a fresh leaf, so block ``l``'s output depends on its own leaf
    only; backward from ``sum_l sum_b x_{l, b, T-1, i}`` then yields row ``i`` of all blocks' Jacobians.
    NaN when the model lacks the hooks or its hooks cannot replace the stream.
    """
    L = model.n_layers
    nan = (np.full(L, np.nan), np.full(L, np.nan))
    have = set(model.hook_names())
    if not set(resid_names(L, "pre") + resid_names(L, "post")) <= have:
        return nan
    leaves: list[torch.Tensor] = []

    def detach(x: torch.Tensor, name: str) -> torch.Tensor:
        leaf = x.detach().requires_grad_(True)
        leaves.append(leaf)
        return leaf

    outs: dict[str, torch.Tensor] = {}
    with torch.enable_grad(), hooks(model, [("blocks.*.hook_resid_pre", detach)]):
        _, outs = run_with_cache(model, inputs, names="blocks.*.hook_resid_post", detach=False)
    posts = torch.stack([outs[name][:, -1] for name in resid_names(L)])  # (L, B, d)
    L_, B, d = posts.shape
    if len(leaves) != L or not posts.requires_grad:
        return nan
    J = torch.empty(L, B, d, d, dtype=torch.float64)
    for i in range(d):
        try:
            rows = torch.autograd.grad(posts[:, :, i].sum(), leaves, retain_graph=i < d - 1, allow_unused=True)
        except RuntimeError:  # the replaced stream is not what the blocks read
            return nan
        if any(r is None for r in rows):
            return nan
        for l in range(L):
            J[l, :, i, :] = rows[l][:, -1]  # (B, d): d x_{l,T-1,i} / d x_{l-1,T-1,:}
    eye = torch.eye(d, dtype=torch.float64)
    gap = ((J - eye).pow(2).sum((-1, -2)).sqrt() / math.sqrt(d)).mean(1).numpy()  # (L,)
    return gap, torch.linalg.matrix_norm(J, ord=2).mean(1).numpy()


POS_FIELDS = ("resid_var", "resid_rms", "resid_rms_min", "token_cosine", "rank_residual", "post_ln_moment")


LAYER_FIELDS = ("angular_distance", "jacobian_identity_gap", "jacobian_norm", "attn_moment", "mlp_moment")


def _dataset(norms: list, depths: list, S: int, params: tuple[str, ...], measured: dict) -> xr.Dataset:
    """Assemble ``measured[(norm index, depth index, sample)] = measure(...)`` into labelled arrays."""
    Lmax = max(depths)
    shape_pos = (len(norms), len(depths), Lmax + 1, S)
    shape_layer = (len(norms), len(depths), Lmax, S)
    arrays = {k: np.full(shape_pos, np.nan) for k in POS_FIELDS}
    arrays |= {k: np.full(shape_layer, np.nan) for k in LAYER_FIELDS}
    branch = np.full((len(norms), len(depths), Lmax, 2, S), np.nan)
    grads = np.full((len(norms), len(depths), Lmax, len(params), S), np.nan)
    loss = np.full((len(norms), len(depths), S), np.nan)
    for (i, j, s), m in measured.items():
        L = depths[j]
        for k in POS_FIELDS:
            arrays[k][i, j, : L + 1, s] = m[k]
        for k in LAYER_FIELDS:
            arrays[k][i, j, :L, s] = m[k]
        branch[i, j, :L, :, s] = m["branch_ratio"]
        grads[i, j, :L, :, s] = m["grad_norm"]
        loss[i, j, s] = m["loss"]
    coords = {
        "norm": norms,
        "depth": depths,
        "pos": np.arange(Lmax + 1),
        "layer": np.arange(Lmax),
        "sample": np.arange(S),
        "param": list(params),
        "sublayer": list(SUBLAYERS),
    }
    dp, dl = ("norm", "depth", "pos", "sample"), ("norm", "depth", "layer", "sample")
    return xr.Dataset(
        {k: (dp, arrays[k]) for k in POS_FIELDS}
        | {k: (dl, arrays[k]) for k in LAYER_FIELDS}
        | {
            "branch_ratio": (("norm", "depth", "layer", "sublayer", "sample"), branch),
            "grad_norm": (("norm", "depth", "layer", "param", "sample"), grads),
            "loss": (("norm", "depth", "sample"), loss),
        },
        coords=coords,
    )
