"""Softmax and its alternatives: how the normalisation of a read shapes what a tiny network computes.

Theory: :mod:`analysis.theory.softmax_alternatives` (float64 closed forms and quadratures, tested against Monte
Carlo and exact cases); the zoo's ``activation="softmax"`` (softmax over an MLP's hidden units) of
:mod:`analysis.model`.

1. Slot count (seed 000#40, Shen et al. 2023). The MLP is a key-value memory: keys the rows of ``W_in``, values the
   columns of ``W_out``. At initialisation (the zoo's gpt2 init: keys N(0, std^2), values N(0, std^2 / 2), inputs
   on the sphere of radius sqrt(d)) the output's second moment is ``m b^2 E[sum_i f_i^2]``: ``n s^2 / 2`` per unit
   value variance with ReLU (it grows with the slot count n), ``E[sum_i p_i^2] ~ e^{s^2} / n`` with softmax over the
   slots (it shrinks). Measured: the mean ``|o|^2`` over ``memory_batch`` inputs of ``memory_seeds`` independent
   memories per slot count (ReLU and softmax share the weights of a seed); claimed: each activation's slope in
   ``ln n`` (the other's as the alternative) and the softmax memory's concentration factor (the alternative: the
   ``1/n`` of uniform weights).

Replicates: memory i draws its inputs and weights from :func:`analysis.evidence.replicate_seed` ``(seed, i)``;
every claim takes its 95% Student-t band from the spread of the per-memory values (:mod:`analysis.evidence`).

The probe is a package of parts (:mod:`probes.parts`), one module each, in the order of their claims: ``memory``;
``config`` holds the configuration.
"""

from __future__ import annotations

from probes.base import Result
from probes.parts import part_of, probe_functions
from probes.softmax_alternatives import memory
from probes.softmax_alternatives.config import NAME, SEED_SLOTS, SOURCE, Config
from probes.softmax_alternatives.memory import ACTIVATIONS, memory_model, predicted_moment, sphere_inputs

DESCRIPTION = (
    "Softmax alternatives: ReLU and softmax key-value memories (the MLP's output against its slot count at "
    "initialisation, against closed forms)."
)
VERSION = "1"
REQUIRES = None  # builds its own models

PARTS = tuple(part_of(m) for m in (memory,))

# run(config, model=None, progress=True) and check_claims(result): the one form of a probe made of parts;
# tiny float64 models measure on one thread (fastest, and it fixes the reduction order)
run, check_claims = probe_functions(NAME, PARTS, threads=1)


__all__ = [
    "ACTIVATIONS",
    "DESCRIPTION",
    "NAME",
    "PARTS",
    "REQUIRES",
    "SEED_SLOTS",
    "SOURCE",
    "VERSION",
    "Config",
    "Result",
    "check_claims",
    "memory_model",
    "predicted_moment",
    "run",
    "sphere_inputs",
]
