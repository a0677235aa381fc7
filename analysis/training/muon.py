"""Muon (seed ``004#16``): orthogonalised momentum for the hidden matrices, AdamW for everything else.

``TrainConfig(optimizer="muon")`` trains every two-dimensional parameter inside the blocks (``blocks.*``: attention
and MLP matrices) with Muon and the rest (embeddings, the read-out, norm gains, biases) with AdamW, in one optimiser.
A Muon update of a matrix ``W`` with gradient ``G`` at learning rate ``lr_m``::

    B <- mu B + G                          (momentum buffer, mu = muon_momentum)
    U  = G + mu B                          (Nesterov; B itself without it)
    O  = NS5(U) * sqrt(max(1, rows / cols))
    W <- W (1 - lr_m wd) - lr_m O

``NS5`` is the quintic Newton–Schulz iteration of :func:`analysis.theory.muon.newton_schulz` (five steps, the quoted
coefficients), computed in the parameter's dtype: its singular values are ``phi^5`` of the normalised singular values
of ``U`` (the band ``[0.68, 1.20]`` once they are not tiny), its singular vectors ``U``'s. ``lr_m`` follows the same
schedule as the AdamW groups, scaled by ``muon_lr / lr``. The AdamW part is decoupled weight decay with bias-corrected
moments, as ``torch.optim.AdamW`` computes it (tests compare the two). Every state tensor is a plain tensor, so a
partial state is saved and resumed like any other optimiser's.
"""

from __future__ import annotations

import math

import torch

from analysis.theory.muon import MUON_COEFFICIENTS, MUON_STEPS, newton_schulz


def is_hidden_matrix(name: str, p: torch.Tensor) -> bool:
    """True for the parameters Muon trains: two-dimensional and inside the blocks."""
    return p.dim() == 2 and name.startswith("blocks.")


class Muon(torch.optim.Optimizer):
    """Muon for groups with ``kind="muon"``, AdamW for groups with ``kind="adamw"`` (module docstring). A group's
    ``lr`` is set by the trainer each update; its ``lr_scale`` multiplies it (the Muon groups' ``muon_lr / lr``)."""

    def __init__(self, groups: list[dict]):
        defaults = dict(
            lr=1e-3, lr_scale=1.0, weight_decay=0.0, kind="adamw", betas=(0.9, 0.999), eps=1e-8,
            momentum=0.95, nesterov=True, ns_steps=MUON_STEPS,
        )  # fmt: skip
        for g in groups:
            if g.get("kind", "adamw") not in ("muon", "adamw"):
                raise ValueError(f"kind must be muon or adamw, got {g.get('kind')!r}")
        super().__init__(groups, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        if closure is not None:
            raise ValueError("closure is not supported: Muon takes one step per call")
        for group in self.param_groups:
            lr = group["lr"] * group["lr_scale"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if group["kind"] == "muon":
                    self._muon(p, group, lr)
                else:
                    self._adamw(p, group, lr)

    def _muon(self, p: torch.Tensor, group: dict, lr: float) -> None:
        state = self.state[p]
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = torch.zeros_like(p)
        buf = state["momentum_buffer"]
        buf.mul_(group["momentum"]).add_(p.grad)
        u = p.grad.add(buf, alpha=group["momentum"]) if group["nesterov"] else buf
        o = newton_schulz(u, group["ns_steps"], MUON_COEFFICIENTS) * math.sqrt(max(1.0, p.shape[0] / p.shape[1]))
        p.mul_(1.0 - lr * group["weight_decay"])
        p.add_(o, alpha=-lr)

    def _adamw(self, p: torch.Tensor, group: dict, lr: float) -> None:
        state = self.state[p]
        if "exp_avg" not in state:
            state["step"] = torch.zeros((), dtype=torch.float64)
            state["exp_avg"] = torch.zeros_like(p)
            state["exp_avg_sq"] = torch.zeros_like(p)
        b1, b2 = group["betas"]
        state["step"] += 1
        t = int(state["step"].item())
        p.mul_(1.0 - lr * group["weight_decay"])
        state["exp_avg"].lerp_(p.grad, 1.0 - b1)
        state["exp_avg_sq"].mul_(b2).addcmul_(p.grad, p.grad, value=1.0 - b2)
        bias1, bias2 = 1.0 - b1**t, 1.0 - b2**t
        denom = (state["exp_avg_sq"].sqrt() / math.sqrt(bias2)).add_(group["eps"])
        p.addcdiv_(state["exp_avg"], denom, value=-lr / bias1)


def muon_optimizer(model: torch.nn.Module, cfg) -> Muon:
    """The groups of ``TrainConfig(optimizer="muon")``: Muon on the hidden matrices (decayed), AdamW on the other
    matrices (decayed) and on the vectors (not), in ``named_parameters`` order."""
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    hidden = [p for n, p in named if is_hidden_matrix(n, p)]
    other = [p for n, p in named if not is_hidden_matrix(n, p) and p.dim() >= 2]
    vectors = [p for _, p in named if p.dim() < 2]
    adam = dict(kind="adamw", betas=cfg.betas, eps=cfg.eps)
    groups = [
        dict(params=hidden, kind="muon", weight_decay=cfg.weight_decay, lr_scale=cfg.muon_lr / cfg.lr,
             momentum=cfg.muon_momentum, nesterov=True, ns_steps=MUON_STEPS),
        dict(params=other, weight_decay=cfg.weight_decay, **adam),
        dict(params=vectors, weight_decay=0.0, **adam),
    ]  # fmt: skip
    return Muon([g for g in groups if g["params"]])
