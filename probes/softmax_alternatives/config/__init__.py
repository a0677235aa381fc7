"""The configuration of the softmax-alternatives probe: its ``Config``, which nests one part config per part.

The part configs live in :mod:`.kernels`, :mod:`.linear` and :mod:`.variants`, one module per group of parts
(the groups of the probe's declared claims, ``probes/softmax_alternatives/declarations/``)."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.core.config import part
from analysis.probing.base import MAX_SEED, ProbeConfig, param
from probes.softmax_alternatives.config.kernels import Interval, Jacobian, Memory, Mimetic, Sparse
from probes.softmax_alternatives.config.linear import Bilinear, Denominator, Features, Isolation, Linearity, Taylor
from probes.softmax_alternatives.config.variants import Cog, Parallel, Persistent, Shaped, Sigmoid, Softplus

NAME = "softmax_alternatives"


@dataclass(frozen=True)
class Config(ProbeConfig):
    """The probe's settings: the seed, then one nested config per part (flat names on the command line:
    ``--sparse-keys`` sets ``config.sparse.keys``, ``--sparse false`` turns the part off)."""

    seed: int = param(
        0, "memory weights and inputs (replicate i: replicate_seed(seed, i))", minimum=0, maximum=MAX_SEED
    )

    memory: Memory = part(Memory)
    sparse: Sparse = part(Sparse)
    interval: Interval = part(Interval)
    mimetic: Mimetic = part(Mimetic)
    jacobian: Jacobian = part(Jacobian)
    features: Features = part(Features)
    taylor: Taylor = part(Taylor)
    linearity: Linearity = part(Linearity)
    bilinear: Bilinear = part(Bilinear)
    isolation: Isolation = part(Isolation)
    denominator: Denominator = part(Denominator)
    softplus: Softplus = part(Softplus)
    shaped: Shaped = part(Shaped)
    sigmoid: Sigmoid = part(Sigmoid)
    cog: Cog = part(Cog)
    parallel: Parallel = part(Parallel)
    persistent: Persistent = part(Persistent)
