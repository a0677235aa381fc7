r"""In-context linear classification: the data law, the token layout, and the one-step-GD training task.

The law (``ClassificationLaw``). Per prompt a direction w* ~ N(0, I_d), n inputs x_i ~ N(0, I_d) and labels
y_i = sign(w* . x_i) (noise-free, linearly separable); the layer sees z_i = y_i x_i. Draws use either a
``numpy.random.Generator`` (float64 arrays: evaluation) or a ``torch.Generator`` (tensors: training), in a
fixed order (x, then w*), never the global random state.

The token layout (:func:`tokens`): width 2d; context token i = (z_i, 0), the query (0, w) last. A softmax
layer whose query reads the w-slot can then run one step of normalised GD on the prompt
(:mod:`analysis.theory.logistic_icl`). The query is hidden as a key (:func:`query_hidden_bias`).

The training task (:class:`OneStepGDTask`): a prompt and a current iterate w = r u (u uniform on the unit
sphere, r ~ U(0, ``w_radius``)) as input; the target is the whole query token after one step of
normalised GD, (0, w + eta grad-step) computed in float64: the layer is supervised by one GD step,
as in seed 000#33, and must also leave the query's z-slot at zero so that looping it stays on the layout.
The context tokens' w-slots hold independent draws of the same law in training. Looping writes into them
(each context row adds its own attention output there), so a layer that learned to read them -- in keys
or values -- would drift from GD from the second loop on; with zeros there in training nothing would
teach it not to (a prototype trained so reached 13% relative error by T = 10 while its one-step loss was
1e-13). Varying them per token makes ignoring them part of the one-step target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from analysis.core.validation import check_float, check_int

Array = Any  # numpy array or torch tensor


@dataclass(frozen=True)
class ClassificationLaw:
    d: int  # input dimension
    n: int  # examples per prompt

    def __post_init__(self) -> None:
        check_int("d", self.d, minimum=1)
        check_int("n", self.n, minimum=1)

    def sample(self, batch: int, rng, device="cpu", dtype=torch.float32) -> tuple[Array, Array]:
        """(Z (B, n, d) with z_i = y_i x_i, w* (B, d)); numpy float64 or torch tensors by ``rng``'s type."""
        check_int("batch", batch, minimum=1)
        if isinstance(rng, np.random.Generator):
            X = rng.standard_normal((batch, self.n, self.d))
            w = rng.standard_normal((batch, self.d))
            y = np.where(np.einsum("bnd,bd->bn", X, w) >= 0, 1.0, -1.0)
            return y[..., None] * X, w
        if not isinstance(rng, torch.Generator):
            raise ValueError(f"rng must be a numpy Generator or a torch.Generator, got {type(rng).__name__}")
        X = torch.randn(batch, self.n, self.d, generator=rng, dtype=torch.float64)
        w = torch.randn(batch, self.d, generator=rng, dtype=torch.float64)
        y = torch.where(torch.einsum("bnd,bd->bn", X, w) >= 0, 1.0, -1.0).to(torch.float64)
        return (y[..., None] * X).to(device=device, dtype=dtype), w.to(device=device, dtype=dtype)


def tokens(Z: Array, w: Array) -> Array:
    """(B, n + 1, 2d): context tokens (z_i, 0), the query (0, w) last (numpy or torch, as given)."""
    if isinstance(Z, np.ndarray):
        B, n, d = Z.shape
        out = np.zeros((B, n + 1, 2 * d), dtype=np.result_type(Z, w))
        out[:, :n, :d] = Z
        out[:, n, d:] = w
        return out
    B, n, d = Z.shape
    out = Z.new_zeros(B, n + 1, 2 * d)
    out[:, :n, :d] = Z
    out[:, n, d:] = w.to(Z.dtype)
    return out


def query_hidden_bias(T: int, device="cpu", dtype=torch.float64) -> Tensor:
    """(T, T) logit bias of -inf on the last (query) column: no token attends to the query."""
    bias = torch.zeros(T, T, dtype=dtype, device=device)
    bias[:, -1] = -math.inf
    return bias


def gd_step_torch(w: Tensor, Z: Tensor, eta: float) -> Tensor:
    """One step of :func:`analysis.theory.logistic_icl.gd_step` on tensors (any float dtype)."""
    p = torch.softmax(-torch.einsum("bnd,bd->bn", Z, w), dim=-1)
    return w + eta * torch.einsum("bn,bnd->bd", p, Z)


@dataclass(frozen=True)
class OneStepGDTask:
    """Supervised by one GD step: input tokens (Z, w), target the query token (0, gd_step(w))."""

    d: int = 5
    n: int = 20
    eta: float = 1.0  # GD step
    w_radius: float = 8.0  # iterates drawn with |w| ~ U(0, w_radius)

    name = property(lambda self: f"onestep_gd_d{self.d}_n{self.n}")
    input_kind = "vectors"
    vocab_size = 0
    d_out = 0
    d_in = property(lambda self: 2 * self.d)

    def __post_init__(self) -> None:
        ClassificationLaw(self.d, self.n)  # validates d and n
        check_float("eta", self.eta, minimum=0.0)
        check_float("w_radius", self.w_radius, minimum=0.0)

    def config(self) -> dict:
        return {"task": "onestep_gd", "d": self.d, "n": self.n, "eta": self.eta, "w_radius": self.w_radius}

    def attn_bias(self, T: int, device="cpu", dtype=torch.float32) -> Tensor:
        return query_hidden_bias(T, device=device, dtype=dtype)

    def sample(self, batch_size: int, generator: torch.Generator, device="cpu", dtype=torch.float32):
        Z, _ = ClassificationLaw(self.d, self.n).sample(batch_size, generator, dtype=torch.float64)
        w = self._ball(batch_size, generator)
        target = torch.cat([torch.zeros_like(w), gd_step_torch(w, Z, self.eta)], dim=-1)
        x = tokens(Z, w)
        x[:, :-1, self.d :] = self._ball(batch_size * self.n, generator).view(batch_size, self.n, self.d)
        return x.to(device=device, dtype=dtype), target.to(device=device, dtype=dtype)

    def _ball(self, count: int, generator: torch.Generator) -> Tensor:
        """``count`` vectors r u: u uniform on the unit sphere, r ~ U(0, w_radius)."""
        u = torch.randn(count, self.d, generator=generator, dtype=torch.float64)
        r = self.w_radius * torch.rand(count, 1, generator=generator, dtype=torch.float64)
        return r * u / u.norm(dim=-1, keepdim=True)

    def loss(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """Squared error of the whole query token, summed over its 2d coordinates, mean over prompts."""
        if outputs.ndim != 3 or outputs.shape[-1] != 2 * self.d:
            raise ValueError(f"outputs must have shape (B, n + 1, {2 * self.d}), got {tuple(outputs.shape)}")
        return (outputs[:, -1] - targets).pow(2).sum(-1).mean()
