"""Part ``trajectory``: the coordinate-check figure users know. Softmax models of each width in
``trajectory_widths``, standard and muP, trained ``trajectory_steps`` Adam steps at ``trajectory_lr`` on batches of
i.i.d. tokens: the RMS of the embedding, the branch outputs, the residual stream and the logits on one fixed probe
batch after every step, and of their change from initialisation. It makes no claim: the exponents are the ``width``
part's; this shows what they mean over steps (under standard the sizes blow up with width, under muP they do not)."""

from __future__ import annotations

import numpy as np
import torch

from analysis.probing.base import MAX_SEED
from analysis.probing.parts import Context
from analysis.training.train import derived_seed
from probes.parameterisation.config import WIDTH_PARAMETERISATIONS
from probes.parameterisation.measure import TRAJECTORY, trajectory
from probes.parameterisation.width import model_config

DESCRIPTION = "the coordinate-check figure: activation sizes over the first Adam steps, one line per width"
FIELDS = ("trajectory_widths", "trajectory_steps", "trajectory_lr", "trajectory_batch_size", "seq_len", "vocab_size")


def measure(ctx: Context) -> None:
    c = ctx.config
    steps = c.trajectory.steps
    size = np.empty((len(WIDTH_PARAMETERISATIONS), len(TRAJECTORY), len(c.trajectory.widths), steps + 1))
    change = np.empty_like(size)
    seq = 8 * c.seq_len

    def batch(t: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(derived_seed(c.seed, f"trajectory_batch_{t}") % MAX_SEED)
        tokens = torch.randint(0, c.vocab_size, (c.trajectory.batch_size, seq + 1), generator=g)
        return tokens[:, :-1], tokens[:, 1:]

    for i, p in enumerate(WIDTH_PARAMETERISATIONS):
        for w, d in enumerate(c.trajectory.widths):
            got = trajectory(model_config(c, "softmax", p, d, c.seed), "adam", c.trajectory.lr, batch, steps)
            for k, name in enumerate(TRAJECTORY):
                size[i, k, w] = got[f"size_{name}"]
                change[i, k, w] = got[f"change_{name}"]
    dims = ("parameterisation", "activation", "trajectory_width", "step")
    ctx.data["trajectory_size"] = (dims, size)
    ctx.data["trajectory_change"] = (dims, change)
    ctx.coords.update(
        parameterisation=list(WIDTH_PARAMETERISATIONS), activation=list(TRAJECTORY),
        trajectory_width=list(c.trajectory.widths), step=list(range(steps + 1)),
    )  # fmt: skip
