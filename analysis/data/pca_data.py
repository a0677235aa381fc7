r"""In-context PCA: the data law, the token layout, and the training task (seed 000#45 = 003#35).

The law (:class:`PCALaw`). Per prompt a Haar-random rotation Q and the spectrum lambda = (1, rho, rho^2,
...) (:func:`analysis.theory.power_method.spectrum`): n inputs x_i = Q diag(sqrt(lambda)) z_i, z_i ~
N(0, I_d), each conditioned on |x_i| <= ``radius`` (a draw outside is redrawn; at the defaults a rare
event, about one token in ten thousand), and a start vector v_0 uniform on the unit sphere. Draws
use either a ``numpy.random.Generator`` (float64 arrays: evaluation) or a ``torch.Generator`` (tensors:
training), in a fixed order (rotations, inputs, redraws, start vectors), never the global random state.

The token layout (:func:`tokens`, theory item 3 of :mod:`analysis.theory.power_method`): width
D = 2 (2 d + 1); a token is (a, -a) with a = (x-slot, v-slot, pad). Context token i: a = (x_i, 0, c_i) / radius
with c_i = sqrt(radius^2 - |x_i|^2), so every context token has norm sqrt(2) and a whole-token norm
rescales all of them by one factor (which leaves the direction of S v unchanged); the query, last:
a = (0, v_0, 0). The mirror makes every token's mean zero, so LayerNorm's centring is inactive on the
layout and LayerNorm acts as a division by the RMS.

The task (:class:`PowerMethodTask`): target s u_1 of the prompt's empirical covariance (sign fixed by
v_0, :func:`analysis.theory.power_method.target`), loss the squared error of the query's first v-slot
copy (the model's final residual stream), summed over its d coordinates, mean over prompts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from analysis.core.validation import check_float, check_int
from analysis.theory import power_method as pm

Array = Any  # numpy array or torch tensor


@dataclass(frozen=True)
class PCALaw:
    d: int = 4  # input dimension
    n: int = 32  # inputs per prompt
    rho: float = 0.5  # spectrum 1, rho, rho^2, ...
    radius: float = 4.0  # |x_i| <= radius (context tokens are divided by it: norm sqrt(2) with the pad)

    def __post_init__(self) -> None:
        check_int("d", self.d, minimum=2)
        check_int("n", self.n, minimum=1)
        pm.spectrum(self.d, self.rho)  # validates rho
        check_float("radius", self.radius, minimum=0.0, maximum=1e6, strict_minimum=True)
        if self.radius**2 < float(pm.spectrum(self.d, self.rho).sum()):
            raise ValueError(
                f"radius must be at least sqrt(tr Sigma) = {math.sqrt(pm.spectrum(self.d, self.rho).sum()):.3f} "
                f"(most draws would be redrawn), got {self.radius}"
            )

    def sample(self, batch: int, rng) -> tuple[Array, Array]:
        """(X (B, n, d), v0 (B, d)): numpy float64 for a numpy Generator, torch float64 for a torch one."""
        check_int("batch", batch, minimum=1)
        if isinstance(rng, np.random.Generator):
            Q = _haar(rng.standard_normal((batch, self.d, self.d)))
            z = rng.standard_normal((batch, self.n, self.d))
            redraw = lambda k: rng.standard_normal((k, self.d))  # noqa: E731
            x = self._inputs(Q, z, redraw)
            v = rng.standard_normal((batch, self.d))
            return x, v / np.linalg.norm(v, axis=-1, keepdims=True)
        if not isinstance(rng, torch.Generator):
            raise ValueError(f"rng must be a numpy Generator or a torch.Generator, got {type(rng).__name__}")
        g = lambda *shape: torch.randn(*shape, generator=rng, dtype=torch.float64).numpy()  # noqa: E731
        Q = _haar(g(batch, self.d, self.d))
        x = self._inputs(Q, g(batch, self.n, self.d), lambda k: g(k, self.d))
        v = g(batch, self.d)
        v = v / np.linalg.norm(v, axis=-1, keepdims=True)
        return torch.from_numpy(x), torch.from_numpy(v)

    def _inputs(self, Q: np.ndarray, z: np.ndarray, redraw) -> np.ndarray:
        scale = np.sqrt(pm.spectrum(self.d, self.rho))
        x = np.einsum("bde,bne->bnd", Q, z * scale)
        while True:
            out = np.linalg.norm(x, axis=-1) > self.radius
            k = int(out.sum())
            if k == 0:
                return x
            b = np.nonzero(out)[0]
            x[out] = np.einsum("kde,ke->kd", Q[b], redraw(k) * scale)


def _haar(g: np.ndarray) -> np.ndarray:
    """Haar-random orthogonal matrices from Gaussian ones (QR with the sign of R's diagonal fixed)."""
    q, r = np.linalg.qr(g)
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def tokens(x: Array, v0: Array, radius: float) -> Array:
    """(B, n + 1, 2 (2 d + 1)) the mirrored layout of the module docstring (numpy or torch, as given)."""
    check_float("radius", radius, minimum=0.0, strict_minimum=True)
    B, n, d = x.shape
    if tuple(v0.shape) != (B, d):
        raise ValueError(f"v0 must have shape {(B, d)}, got {tuple(v0.shape)}")
    m = 2 * d + 1
    if isinstance(x, np.ndarray):
        a = np.zeros((B, n + 1, m), dtype=np.result_type(x, v0))
        a[:, :n, 2 * d] = np.sqrt(np.clip(radius**2 - (x * x).sum(-1), 0.0, None)) / radius
        a[:, :n, :d] = x / radius
        a[:, n, d : 2 * d] = v0
        return np.concatenate([a, -a], -1)
    a = x.new_zeros(B, n + 1, m)
    a[:, :n, 2 * d] = (radius**2 - (x * x).sum(-1)).clamp_min(0.0).sqrt() / radius
    a[:, :n, :d] = x / radius
    a[:, n, d : 2 * d] = v0.to(x.dtype)
    return torch.cat([a, -a], -1)


def readout(outputs: Array, d: int) -> Array:
    """(B, d) the prediction: the query's (last token's) first v-slot copy."""
    return outputs[:, -1, d : 2 * d]


@dataclass(frozen=True)
class PowerMethodTask:
    """Principal-component prediction in context: input tokens (X, v0), target s u_1 (module docstring)."""

    d: int = 4
    n: int = 32
    rho: float = 0.5
    radius: float = 4.0

    name = property(lambda self: f"pca_d{self.d}_n{self.n}")
    input_kind = "vectors"
    vocab_size = 0
    d_out = 0
    d_in = property(lambda self: pm.width(self.d))

    def __post_init__(self) -> None:
        PCALaw(self.d, self.n, self.rho, self.radius)  # validates the fields

    @property
    def law(self) -> PCALaw:
        return PCALaw(self.d, self.n, self.rho, self.radius)

    def config(self) -> dict:
        return {"task": "pca_power", "d": self.d, "n": self.n, "rho": self.rho, "radius": self.radius}

    def sample(self, batch_size: int, generator: torch.Generator, device="cpu", dtype=torch.float32):
        x, v = self.law.sample(batch_size, generator)
        y = torch.from_numpy(pm.target(x.numpy(), v.numpy()))
        return tokens(x, v, self.radius).to(device=device, dtype=dtype), y.to(device=device, dtype=dtype)

    def loss(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """Squared error of the query's v-slot, summed over its d coordinates, mean over prompts."""
        D = pm.width(self.d)
        if outputs.ndim != 3 or outputs.shape[-1] != D:
            raise ValueError(f"outputs must have shape (B, n + 1, {D}), got {tuple(outputs.shape)}")
        return (readout(outputs, self.d) - targets).pow(2).sum(-1).mean()
