"""What the coordinate checks measure on one model: the coordinate sizes (root mean square of the entries) of every
layer's output at initialisation, and of the change the first update makes to it by the layer's own weights
(``dW x`` with ``x`` the layer's input at initialisation), classed by :func:`layer_class` as
:mod:`analysis.theory.width` derives them; then the sizes of the model's named activations over the first steps
(:func:`trajectory`), the coordinate-check figure."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from analysis.theory import width as th
from analysis.training.optim import make_optimizer, set_lr
from analysis.training.train_config import TrainConfig
from analysis.zoo.hooks import run_with_cache
from analysis.zoo.layers import Norm
from analysis.zoo.model import ModelConfig, TinyTransformer

# the activations whose sizes the coordinate-check figure follows over steps (hook name suffixes)
TRAJECTORY = ("hook_embed", "hook_attn_out", "hook_mlp_out", "hook_resid_post", "logits")
BRANCHES = ("hook_attn_out", "hook_mlp_out")


def layer_class(name: str) -> str | None:
    """The layer class of :mod:`analysis.theory.width` of module ``name`` of a TinyTransformer (None: not measured)."""
    last = name.rsplit(".", 1)[-1]
    inside_attn = ".attn." in f".{name}"
    if name in ("embed", "pos_embed"):
        return "embed"
    if name == "head":
        return "readout"
    if last.startswith("ln"):
        return "norm"
    if inside_attn:
        return {"W_q": "qk", "W_k": "qk", "W_v": "v", "W_o": "o", "W_gate": "gate", "W_beta": "gate"}.get(last)
    if ".mlp." in f".{name}":
        return "mlp" if last in ("W_in", "W_out", "W_gate") else None
    return None


def _rms(t: torch.Tensor) -> float:
    t = t[torch.isfinite(t)] if not torch.isfinite(t).all() else t
    return float(t.double().pow(2).mean().sqrt())


def train_config(optimizer: str, lr: float) -> TrainConfig:
    """A plain optimiser of the check: constant rate, no warm-up, no clipping, no decay (what the exponents assume)."""
    return TrainConfig(
        optimizer=optimizer, lr=lr, steps=1, schedule="constant", grad_clip=0.0, weight_decay=0.0, batch_size=1
    )


def optimiser(model: TinyTransformer, optimizer: str, lr: float) -> torch.optim.Optimizer:
    """The trainer's own optimiser for ``model`` (its muP groups), each group at ``lr`` times its multiplier."""
    opt = make_optimizer(model, train_config(optimizer, lr))
    set_lr(opt, lr)
    return opt


def _inputs(model: TinyTransformer) -> tuple[dict[str, torch.Tensor], list]:
    """Forward hooks that keep every measured module's input (Linear, Norm) or output (Embedding)."""
    seen: dict[str, torch.Tensor] = {}
    handles = []
    for name, m in model.named_modules():
        if layer_class(name) is None:
            continue
        if isinstance(m, nn.Embedding):
            handles.append(m.register_forward_hook(lambda _m, _i, out, n=name: seen.__setitem__(n, out.detach())))
        elif isinstance(m, (nn.Linear, Norm)):
            handles.append(m.register_forward_pre_hook(lambda _m, args, n=name: seen.__setitem__(n, args[0].detach())))
    return seen, handles


def own_updates(
    before: TinyTransformer, after: TinyTransformer, seen: dict[str, torch.Tensor], tokens: torch.Tensor
) -> dict[str, float]:
    """``name -> RMS of the module's own first-update effect`` (module docstring), the read-out's divided by its muP
    multiplier's ``width_mult`` as the model applies it."""
    out = {}
    mods_after = dict(after.named_modules())
    for name, m in before.named_modules():
        if name not in seen:
            continue
        m1 = mods_after[name]
        with torch.no_grad():
            if isinstance(m, nn.Embedding):
                dy = (m1.weight - m.weight)[tokens] if name == "embed" else (m1.weight - m.weight)[: tokens.shape[1]]
            elif isinstance(m, Norm):
                x = seen[name]
                x_hat = (m(x) - (m.bias if m.bias is not None else 0.0)) / m.weight
                dy = (m1.weight - m.weight) * x_hat
            else:
                dy = nn.functional.linear(seen[name], m1.weight - m.weight)
                if name == "head":
                    dy = dy / before.config.width_mult
        out[name] = _rms(dy)
    return out


def sequence(vocab_size: int, seq_len: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(tokens, targets)``, one sequence of i.i.d. uniform tokens and its next tokens, drawn from ``seed``."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, vocab_size, (1, seq_len + 1), generator=g)
    return tokens[:, :-1], tokens[:, 1:]


def first_update(
    cfg: ModelConfig, optimizer: str, lr: float, tokens: torch.Tensor, targets: torch.Tensor, keep: bool = False
) -> dict:
    """One model of ``cfg``: the coordinate sizes at initialisation (``init_<hook>``: attention scores, logits, branch
    outputs), the loss, and every measured module's own update (``own``: name -> RMS) after one step on
    ``(tokens, targets)``; ``keep``: also ``models``, the model before and after the step."""
    model = TinyTransformer(cfg)
    seen, handles = _inputs(model)
    try:
        logits, cache = run_with_cache(model, tokens, names=lambda n: n.endswith(("hook_attn_scores", *BRANCHES)))
    finally:
        for h in handles:
            h.remove()
    sizes = {k: [_rms(t) for n, t in cache.items() if n.endswith(k)] for k in ("hook_attn_scores", *BRANCHES)}
    loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    before = TinyTransformer(cfg)
    before.load_state_dict(model.state_dict())
    opt = optimiser(model, optimizer, lr)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return {
        **({"models": (before, model)} if keep else {}),
        "loss": float(loss.detach()),
        "init_logits": _rms(logits.detach()),
        **{f"init_{k[5:]}": float(np.mean(v)) if v else float("nan") for k, v in sizes.items()},
        "own": own_updates(before, model, seen, tokens),
    }


def by_class(own: dict[str, float]) -> dict[str, float]:
    """The mean own-update RMS of each layer class over its modules (NaN for a class the model lacks)."""
    out = {}
    for cls in th.LAYERS:
        vals = [v for n, v in own.items() if layer_class(n) == cls]
        out[cls] = float(np.mean(vals)) if vals else float("nan")
    return out


def trajectory(
    cfg: ModelConfig, optimizer: str, lr: float, batch: Callable[[int], tuple[torch.Tensor, torch.Tensor]], steps: int
) -> dict[str, np.ndarray]:
    """The coordinate check users know: the RMS of each activation of :data:`TRAJECTORY` (averaged over layers) on a
    fixed probe batch ``batch(-1)`` before each of ``steps`` updates and after the last (``steps + 1`` values), the
    updates on ``batch(0), batch(1), ...``; and the RMS of its change from initialisation."""
    model = TinyTransformer(cfg)
    opt = optimiser(model, optimizer, lr)
    probe_x, _ = batch(-1)
    size = {k: np.zeros(steps + 1) for k in TRAJECTORY}
    change = {k: np.zeros(steps + 1) for k in TRAJECTORY}
    first: dict[str, list[torch.Tensor]] = {}
    for t in range(steps + 1):
        acts = _activations(model, probe_x)
        first = first or acts
        for k in TRAJECTORY:
            size[k][t] = float(np.mean([_rms(a) for a in acts[k]]))
            change[k][t] = float(np.mean([_rms(a - a0) for a, a0 in zip(acts[k], first[k], strict=True)]))
        if t == steps:
            break
        x, y = batch(t)
        logits = model(x)
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return {**{f"size_{k}": v for k, v in size.items()}, **{f"change_{k}": v for k, v in change.items()}}


def _activations(model: TinyTransformer, x: torch.Tensor) -> dict[str, list[torch.Tensor]]:
    with torch.no_grad():
        logits, cache = run_with_cache(model, x, names=lambda n: n.endswith(TRAJECTORY[:-1]))
    acts = {k: [t for n, t in cache.items() if n.endswith(k)] for k in TRAJECTORY[:-1]}
    return {**acts, "logits": [logits]}
