"""DeepNorm's update size per layer at initialisation and the token cosine across depth (rank collapse)."""

from __future__ import annotations

import math

import numpy as np
import torch

from analysis.claims.evidence import replicate_seed
from analysis.core.devices import model_device
from analysis.theory import signal_propagation as th
from analysis.zoo.hooks import resid_names, run_with_cache
from analysis.zoo.model import TinyTransformer
from probes.signal_propagation.config import _PARAM_RE, COLLAPSE_VARIANTS, SUBLAYERS, UPDATE_LR, Config
from probes.signal_propagation.models import batch, fixed_loss, model_config, model_vocab


def update_size(cfg: Config, norm: str, depth: int, sample: int, optimiser: str) -> float:
    """Relative change of the final residual stream after one optimiser step from initialisation
    (:func:`update_pieces` without the per-sublayer decomposition)."""
    return update_pieces(cfg, norm, depth, sample, optimiser, pieces=False)[0]


def update_pieces(
    cfg: Config, norm: str, depth: int, sample: int, optimiser: str, pieces: bool = True
) -> tuple[float, np.ndarray, np.ndarray]:
    """One optimiser step from initialisation: the model update and its decomposition per sublayer.

    One step of SGD or Adam (learning rate ``UPDATE_LR[optimiser]``) on :func:`fixed_loss` of the
    sample's batch, moving only the sublayers' weight matrices (``W_q .. W_out``): the parameters of
    Wang et al.'s Theorem, which holds the LayerNorm gains fixed (theory section 10). Returns
    ``(u, step, effect)``: ``u = |x_L(theta + dtheta) - x_L(theta)|_F / |x_L(theta)|_F`` on the same
    batch (float64, deterministic); ``step[l, j] = |dtheta_{l,j}|_F`` over the matrices of sublayer ``j``
    (attention, MLP) of block ``l``; ``effect[l, j]`` the relative change of ``x_L`` when only that
    sublayer moves (the Theorem's terms: ``effect / step`` is the output's sensitivity along the step).
    The Theorem bounds ``u <= sum effect``. NaN arrays when ``pieces`` is False.
    """
    model = TinyTransformer(model_config(cfg, norm, depth, replicate_seed(cfg.seed, sample)), device=cfg.torch_device())
    inputs, targets = (t.to(model_device(model)) for t in batch(cfg, sample))
    name = resid_names(depth)[-1]

    def final() -> torch.Tensor:
        with torch.no_grad():
            return run_with_cache(model, inputs, names=[name])[1][name].double()

    x0 = final()
    named = [(n, p) for n, p in model.named_parameters() if _PARAM_RE.match(n)]
    params = [p for _, p in named]
    before = [p.detach().clone() for p in params]
    lr = UPDATE_LR[optimiser]
    opt = torch.optim.SGD(params, lr=lr) if optimiser == "sgd" else torch.optim.Adam(params, lr=lr)
    opt.zero_grad(set_to_none=True)
    loss, _ = fixed_loss(model(inputs), targets, model_vocab(cfg), cfg.seed)
    loss.backward()
    opt.step()
    after = [p.detach().clone() for p in params]
    u = float((final() - x0).norm() / x0.norm())
    step, effect = np.full((depth, 2), np.nan), np.full((depth, 2), np.nan)
    if not pieces:
        return u, step, effect
    groups: dict[tuple[int, int], list[int]] = {}
    for i, (n, _) in enumerate(named):
        layer, sub = int(n.split(".")[1]), SUBLAYERS.index(n.split(".")[2])
        groups.setdefault((layer, sub), []).append(i)
    with torch.no_grad():
        for (layer, sub), idx in groups.items():
            step[layer, sub] = math.sqrt(sum(float((after[i] - before[i]).pow(2).sum()) for i in idx))
            for i, p in enumerate(params):
                p.copy_(after[i] if i in idx else before[i])
            effect[layer, sub] = float((final() - x0).norm() / x0.norm())
    return u, step, effect


def collapse_curve(cfg: Config, variant: str, mask: str, sample: int) -> np.ndarray:
    """Rank residual of the stream after the embedding and each block of a collapse variant (L + 1,)."""
    L = cfg.collapse_depth
    overrides = dict(COLLAPSE_VARIANTS[variant])
    if "branch_scale" in overrides:
        overrides["branch_scale"] = 1.0 / math.sqrt(L)
    mcfg = cfg.model_config(
        input="tokens",
        output="none",
        n_layers=L,
        causal=mask == "causal",
        dtype="float64",
        seed=replicate_seed(cfg.seed, sample),
        **overrides,
    )
    inputs = batch(cfg, sample)[0].to(cfg.torch_device())
    with torch.no_grad():
        _, c = run_with_cache(TinyTransformer(mcfg, device=cfg.torch_device()), inputs, names=resid_names(L, "depth"))
    streams = [c[name] for name in resid_names(L, "depth")]
    return np.array([th.rank_residual(x).mean().item() for x in streams])
