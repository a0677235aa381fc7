"""Property-based tests over every probe's config space (hypothesis).

The strategies are built from each ``Config``'s field specs (:meth:`analysis.probing.base.ProbeConfig.field_specs`:
type, optional, choices, minimum, maximum, min_len), never written per field. Runs start from the smoke
preset and let hypothesis override any subset of the fields; the fields that drive a run's cost are
capped through :data:`CAPS` so that every generated run stays well under two seconds of one core.

Properties:

* every config the validator accepts runs to a :class:`~analysis.probing.base.Result` (failing claims are findings;
  a failing *identity* is a bug and fails the test, naming the config);
* the JSON of every run (built as ``python -m probes run --json`` builds it) is strict JSON (no NaN or
  Infinity tokens) and round-trips: the config restored from it equals the config, the scalars equal;
* every value the validator rejects raises ``ValueError`` naming the field; on the command line such a
  value exits 2 with exactly one line on stderr.

Bugs these properties found are pinned as plain regression tests at the end of the file.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import probes
from analysis.core.paths import REPO
from analysis.probing.base import MAX_SEED, FieldSpec, ProbeConfig, run_probe

from tier import TIER

PROBES = probes.available()
# extreme (valid) values overflow inside numpy on purpose: NaN and inf results are findings the ledger reports
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# ================================================================================================
# Cost caps
# ================================================================================================


@dataclasses.dataclass(frozen=True)
class Cap:
    """An upper bound on a generated value (on every item, for lists) and on a list's length."""

    hi: float | None = None
    max_len: int | None = None


# Fields that drive a run's cost, per probe, each capped so that every generated run stays well under a
# second or two of one core (the comment above each table says what the fields multiply). Everything not
# listed is drawn from its full validator range. Every example starts from the smoke preset with these caps
# applied (values clamped, lists shortened). vocab_size is capped too: a Markov language holds a V x V
# transition matrix. Measured (200 configs per probe, one torch thread, on a shared 2-core machine): the
# slowest run 1.4 s (attention_entropy: its exact Gaussian quadrature costs ~50 ms per layer, head and
# replicate), the 5 x 200 runs 224 s in all; the first run of a process also pays one-time set-up (~3 s).
CAPS: dict[str, dict[str, Cap]] = {
    # cost ~ norms x depths x n_samples models, each with d backward passes (Jacobians) over
    # batch_size x seq_len tokens; 3 update norms x depths x 2 optimisers; collapse_depth x 4 curves;
    # trained: train_steps updates of batch 32 per model
    "signal_propagation": {
        "norms": Cap(max_len=2),
        "depths": Cap(hi=3, max_len=2),
        "d_model": Cap(hi=8),
        "n_heads": Cap(hi=2),
        "seq_len": Cap(hi=6),
        "batch_size": Cap(hi=3),
        "n_samples": Cap(hi=2),
        "vocab_size": Cap(hi=80),
        "train_steps": Cap(hi=3),
        "collapse_depth": Cap(hi=3),
        # trained only: 2 x stability_seeds runs of stability_steps updates at stability_depth, and curse_seeds
        # trained models per (pre, ln_scaling) with one forward per block
        "stability_depth": Cap(hi=3),
        "stability_steps": Cap(hi=3),
        "stability_seeds": Cap(hi=2),
        "curse_seeds": Cap(hi=2),
        # the phase diagram: its finite-T yardstick is ~200 exact quadratures (about 6 s) whatever the design, so
        # it is not drawn here (hi=0: always false); tests/test_probe_signal_phase.py runs it. Its sizes are
        # capped all the same, for the draws that set them without it.
        "phase": Cap(hi=0),
        "phase_betas": Cap(hi=4.0, max_len=2),
        "phase_cosines": Cap(max_len=2),
        "phase_tokens": Cap(hi=6),
        "phase_d_model": Cap(hi=8),
        "phase_depth": Cap(hi=2),
        "phase_seeds": Cap(hi=2),
    },
    # cost ~ replicates models over max(ctx_lens) tokens, scale_factors x replicates models over sweep_len
    # tokens, planted-key networks over up to planted_max_n keys for every fade_sg, and the training
    # sweep qk_norm x lr x train_seeds runs of train_steps updates on train_seq_len tokens (and 2 x train_seeds
    # sigmoid runs), the nonlinearity comparison's 2 x nonlin_seeds runs of nonlin_n_layers x nonlin_d_model models,
    # and the retrieval models: 2 x retrieval_seeds runs of retrieval_steps, each tested on retrieval_eval
    # sequences at retrieval_len x every retrieval_factor pairs
    "attention_entropy": {
        "n_layers": Cap(hi=2),
        "n_heads": Cap(hi=2),
        "d_model": Cap(hi=16),
        "ctx_lens": Cap(hi=32, max_len=2),
        "rows_per_n": Cap(hi=4),
        "replicates": Cap(hi=2),
        "scale_factors": Cap(max_len=2),
        "sweep_len": Cap(hi=32),
        "fade_sg": Cap(max_len=3),
        "planted_max_n": Cap(hi=60),
        "train_lrs": Cap(max_len=2),
        "qk_norm": Cap(max_len=2),
        "train_steps": Cap(hi=4),
        "train_seeds": Cap(hi=2),
        "train_seq_len": Cap(hi=12),
        "nonlin_n_layers": Cap(hi=3),
        "nonlin_d_model": Cap(hi=8),
        "nonlin_seeds": Cap(hi=2),
        "retrieval_len": Cap(hi=8),
        "retrieval_factors": Cap(hi=4, max_len=2),
        "retrieval_keys": Cap(hi=8),
        "retrieval_values": Cap(hi=8),
        "retrieval_d_model": Cap(hi=8),
        "retrieval_steps": Cap(hi=3),
        "retrieval_seeds": Cap(hi=2),
        "retrieval_eval": Cap(hi=8),
    },
    # cost ~ n_pairs forward passes over prompt_len + cont_len tokens, 2 x layers bootstrap fits of
    # n_boot replicates; trained: train_steps updates on train_seq_len tokens, and per checkpoint two more
    # measurements
    "prompt_forgetting": {
        "n_layers": Cap(hi=2),
        "d_model": Cap(hi=16),
        "n_heads": Cap(hi=4),
        "d_mlp": Cap(hi=32),
        "vocab_size": Cap(hi=300),
        "train_steps": Cap(hi=4),
        "train_seq_len": Cap(hi=16),
        "train_checkpoints": Cap(max_len=2),
        "prompt_len": Cap(hi=8),
        "cont_len": Cap(hi=64),
        "n_pairs": Cap(hi=3),
        "n_boot": Cap(hi=40),
    },
    # cost ~ len(dtypes) x n_lengths x n_bases forward passes over up to max_len tokens, the sensitivity
    # (d backward passes over sens_len tokens per layer and sens_bases), the extension (extend_lengths x
    # extend_bases passes over up to extend_hi x max_len tokens), n_boot bootstrap replicates
    "representational_collapse": {
        "max_len": Cap(hi=32),
        "n_lengths": Cap(hi=4),
        "n_bases": Cap(hi=3),
        "sens_len": Cap(hi=12),
        "sens_bases": Cap(hi=2),
        "extend_hi": Cap(hi=3.0),
        "extend_lengths": Cap(hi=3),
        "extend_bases": Cap(hi=3),
        "n_layers": Cap(hi=2),
        "d_model": Cap(hi=16),
        "n_heads": Cap(hi=4),
        "d_mlp": Cap(hi=32),
        "vocab_size": Cap(hi=64),
        "train_steps": Cap(hi=4),
        "train_seq_len": Cap(hi=16),
        "n_boot": Cap(hi=40),
    },
    # cost ~ layers stacks trained for (depth_)steps on (depth_)batch tasks of n_context examples in d
    # dimensions, evaluation on n_eval / n_mc / n_fit tasks over k_values, the construction up to
    # construction_n_layers, the interleaved (Garg) model, eta_seeds and mahankali one-layer models, and the
    # ridge Monte Carlo over ridge_mc_tasks contexts in ridge_mc_d dimensions
    "icl_gd": {
        "d": Cap(hi=3),
        "n_context": Cap(hi=6),
        "depths": Cap(hi=2, max_len=2),
        "train_steps": Cap(hi=4),
        "train_batch_size": Cap(hi=16),
        "depth_steps": Cap(hi=4),
        "depth_batch_size": Cap(hi=16),
        "n_eval": Cap(hi=64),
        "n_mc": Cap(hi=64),
        "n_fit": Cap(hi=32),
        "k_values": Cap(hi=6, max_len=3),
        "construction_n_layers": Cap(hi=2),
        "garg_d": Cap(hi=2),
        "garg_n_points": Cap(hi=4),
        "garg_d_model": Cap(hi=16),
        "garg_n_layers": Cap(hi=2),
        "garg_n_heads": Cap(hi=2),
        "garg_steps": Cap(hi=4),
        "garg_batch_size": Cap(hi=8),
        "eta_seeds": Cap(hi=2),
        "depth_seeds": Cap(hi=2),
        "mahankali_seeds": Cap(hi=2),
        "looped_seeds": Cap(hi=2),
        "garg_seeds": Cap(hi=2),
        "mahankali_d": Cap(hi=3),
        "mahankali_n": Cap(hi=6),
        "ridge_mc_d": Cap(hi=3),
        "ridge_mc_tasks": Cap(hi=32),
        "looped": Cap(max_len=1),
        "looped_d": Cap(hi=3),
        "looped_n": Cap(hi=6),
        "looped_loops": Cap(hi=2),
        "looped_eval_loops": Cap(hi=3),
        "looped_steps": Cap(hi=4),
        "looped_batch_size": Cap(hi=16),
        "looped_n_eval": Cap(hi=64),
        "logistic_d": Cap(hi=3),
        "logistic_n": Cap(hi=6),
        "logistic_loops": Cap(hi=3),
        "logistic_steps": Cap(hi=4),
        "logistic_batch_size": Cap(hi=16),
        "logistic_seeds": Cap(hi=1),
        "logistic_eval": Cap(hi=32),
        "threads": Cap(hi=2),  # more torch threads than the CI machine's 2 cores only oversubscribes it
    },
    # cost ~ kernels x n_pairs memories of draws x N keys (the scan: N steps), favor_m x (favor_draws x m
    # feature terms + favor_row_draws x m x favor_keys), and kernels x n_pairs x train_seeds trained models of
    # train_steps updates on train_batch_size sequences of 2N positions, evaluated on n_eval sequences
    "associative_recall": {
        "kernels": Cap(max_len=2),
        "n_pairs": Cap(hi=8, max_len=2),
        "d_key": Cap(hi=16),
        "draws": Cap(hi=200),
        "favor_m": Cap(hi=64, max_len=2),
        "favor_keys": Cap(hi=16),
        "favor_draws": Cap(hi=500),
        "favor_row_draws": Cap(hi=50),
        "n_layers": Cap(hi=2),
        "d_model": Cap(hi=32),
        "n_heads": Cap(hi=2),
        "n_keys": Cap(hi=64),
        "n_values": Cap(hi=64),
        "train_steps": Cap(hi=4),
        "train_batch_size": Cap(hi=16),
        "train_seeds": Cap(hi=2),
        "n_eval": Cap(hi=16),
        # linearisation: lin_reps x (max(lin_ns) + lin_queries)^2 x lin_d per n
        "lin_ns": Cap(hi=128, max_len=3),
        "lin_d": Cap(hi=8),
        "lin_queries": Cap(hi=8),
        "lin_reps": Cap(hi=16),
        # gated RNN vs LSA (item 6): gr_seeds x 2 models of gr_steps updates on gr_batch tasks, gr_eval held out;
        # selective copying (item 7): 2 decays x 2 spacings x sc_seeds models of sc_steps updates
        "gated_d": Cap(hi=3),
        "gated_n": Cap(hi=6),
        "gated_steps": Cap(hi=4),
        "gated_batch_size": Cap(hi=16),
        "gated_seeds": Cap(hi=2),
        "gated_eval": Cap(hi=64),
        "copying_n_copy": Cap(hi=2),
        "copying_values": Cap(hi=4),
        "copying_length": Cap(hi=8),
        "copying_d_model": Cap(hi=8),
        "copying_n_layers": Cap(hi=2),
        "copying_steps": Cap(hi=4),
        "copying_batch_size": Cap(hi=8),
        "copying_seeds": Cap(hi=1),
        "copying_eval": Cap(hi=16),
        # in-context PCA (item 8): 2 norms x pm_seeds looped layers (width 2 (2 pm_d + 1), pm_loops loops) of
        # pm_steps updates on pm_batch prompts of pm_n vectors, evaluated at pm_eval_loops loops on pm_eval prompts
        "power_d": Cap(hi=3),
        "power_n": Cap(hi=8),
        "power_loops": Cap(hi=2),
        "power_eval_loops": Cap(hi=3),
        "power_steps": Cap(hi=4),
        "power_batch_size": Cap(hi=16),
        "power_seeds": Cap(hi=1),
        "power_eval": Cap(hi=32),
        # momentum_seeds x 2 scans of momentum_steps writes over momentum_batch_size sequences of (d x d) states
        "momentum_d": Cap(hi=8),
        "momentum_steps": Cap(hi=40),
        "momentum_batch_size": Cap(hi=4),
        "momentum_seeds": Cap(hi=3),
        # decay_seeds x len(decay_pairs) recurrent scans of up to max(decay_pairs) writes over decay_batch_size memories
        "decay_pairs": Cap(hi=64, max_len=3),
        "decay_key": Cap(hi=16),
        "decay_batch_size": Cap(hi=8),
        "decay_seeds": Cap(hi=3),
    },
    # cost ~ the K-head construction over construction_batch_size sequences, taps x train_seeds convolution layers of
    # conv_steps updates on conv_batch_size sequences of conv_len (T d impulses each), 4 x train_seeds induction
    # models of ind_steps updates on ind_batch_size sequences of seq_len tokens, evaluated on n_eval sequences
    "attention_only": {
        "d": Cap(hi=4),
        "taps": Cap(hi=3),
        "conv_len": Cap(hi=8),
        "construction_batch_size": Cap(hi=8),
        "conv_steps": Cap(hi=3),
        "conv_batch_size": Cap(hi=8),
        "train_seeds": Cap(hi=2),
        "vocab_size": Cap(hi=64),
        "seq_len": Cap(hi=16),
        "segment": Cap(hi=6),
        "d_model": Cap(hi=16),
        "n_heads": Cap(hi=2),
        "ind_steps": Cap(hi=3),
        "ind_batch_size": Cap(hi=8),
        "n_eval": Cap(hi=16),
        # nearest neighbour: 6 models x nn_seeds of nn_steps updates on nn_batch sequences of nn_keys + nn_queries
        # vectors of width 2 nn_d; the theory's Monte Carlo over nn_theory_sets key sets
        "neighbour_d": Cap(hi=8),
        "neighbour_keys": Cap(hi=8),
        "neighbour_keys_short": Cap(hi=8),
        "neighbour_queries": Cap(hi=8),
        "neighbour_steps": Cap(hi=3),
        "neighbour_batch_size": Cap(hi=8),
        "neighbour_seeds": Cap(hi=2),
        "neighbour_eval": Cap(hi=16),
        "neighbour_theory_sets": Cap(hi=64),
        # attention-only networks: 3 x san_seeds corpus models (up to 3 san_layers deep) of san_steps updates with
        # san_snapshots + 1 checkpoints, 2 x deep_seeds stacks of deep_n_layers x deep_d_model for deep_steps updates
        # (a probe-batch forward per update)
        "matched_d_model": Cap(hi=8),
        "matched_n_heads": Cap(hi=2),
        "matched_n_layers": Cap(hi=2),
        "matched_seq_len": Cap(hi=16),
        "matched_steps": Cap(hi=4),
        "matched_seeds": Cap(hi=2),
        "matched_eval_batches": Cap(hi=1),
        "matched_snapshots": Cap(hi=4),
        "deep_n_layers": Cap(hi=3),
        "deep_d_model": Cap(hi=8),
        "deep_n_heads": Cap(hi=2),
        "deep_seq_len": Cap(hi=8),
        "deep_batch_size": Cap(hi=4),
        "deep_steps": Cap(hi=6),
        "deep_seeds": Cap(hi=2),
    },
    "softmax_alternatives": {
        # memory_seeds x len(memory_slots) x 2 one-layer float64 MLPs over memory_batch_size inputs
        "memory_slots": Cap(hi=256, max_len=4),  # the smoke preset's (16, 64, 256) stays valid (3 increasing)
        "memory_d_model": Cap(hi=16),
        "memory_batch_size": Cap(hi=16),
        "memory_seeds": Cap(hi=3),
        # sparse_seeds x len(sparse_keys) x 2 one-head layers over sparse_batch_size sequences of n + 1 tokens, a
        # quadrature for each of sparse_rows rows
        "sparse_keys": Cap(hi=32, max_len=3),
        "sparse_d_model": Cap(hi=8),
        "sparse_batch_size": Cap(hi=2),
        "sparse_rows": Cap(hi=4),
        "sparse_seeds": Cap(hi=3),
        # interval_seeds x (1 + 2 len(interval_ks)) one-head layers over interval_batch_size x interval_len tokens
        "interval_ks": Cap(hi=64, max_len=3),
        "interval_d_model": Cap(hi=8),
        "interval_len": Cap(hi=16),
        "interval_batch_size": Cap(hi=2),
        "interval_seeds": Cap(hi=3),
        # mimetic_seeds x len(mimetic_betas) one-head layers over mimetic_batch_size sequences of mimetic_tokens, and a
        # 1-D quadrature per row
        "mimetic_betas": Cap(hi=4.0, max_len=2),
        "mimetic_d_model": Cap(hi=8),
        "mimetic_tokens": Cap(hi=8),
        "mimetic_batch_size": Cap(hi=1),
        "mimetic_seeds": Cap(hi=3),
        # jacobian_seeds x (1 + 2 len(jacobian_scales)) one-head layers over jacobian_batch_size sequences of
        # jacobian_keys + 1 tokens, a (keys x keys) Jacobian per row
        "jacobian_scales": Cap(hi=256.0, max_len=2),
        "jacobian_d_model": Cap(hi=8),
        "jacobian_keys": Cap(hi=8),
        "jacobian_batch_size": Cap(hi=1),
        "jacobian_seeds": Cap(hi=3),
        # features_seeds x features_queries rows of features_keys keys, a Frullani quadrature per row
        "features_d_head": Cap(hi=8),
        "features_keys": Cap(hi=64),
        "features_queries": Cap(hi=2),
        "features_seeds": Cap(hi=3),
        # taylor_seeds x taylor_queries rows of taylor_keys keys (all pairs) and d + d^2 features
        "taylor_d_head": Cap(hi=8),
        "taylor_keys": Cap(hi=32),
        "taylor_queries": Cap(hi=2),
        "taylor_seeds": Cap(hi=3),
        # linearity_seeds x len(linearity_scales) x 2 one-block float64 models over linearity_batch_size x
        # linearity_tokens tokens, a (hidden x hidden) Mehler sum per layer
        "linearity_scales": Cap(hi=4.0, max_len=2),
        "linearity_d_model": Cap(hi=4),
        "linearity_d_mlp": Cap(hi=8),
        "linearity_tokens": Cap(hi=8),
        "linearity_batch_size": Cap(hi=8),
        "linearity_seeds": Cap(hi=3),
        # bilinear_seeds L-BFGS fits of bilinear_steps iterations on bilinear_samples inputs, a (p x p) solve
        "bilinear_d_model": Cap(hi=4),
        "bilinear_d_mlp": Cap(hi=8),
        "bilinear_rank": Cap(hi=3),
        "bilinear_samples": Cap(hi=24),
        "bilinear_steps": Cap(hi=10),
        "bilinear_seeds": Cap(hi=3),
        # isolation_seeds x len(isolation_tokens) one-head layers over isolation_batch_size sequences, a 1-D quadrature
        # per row (isolation_rows of them)
        "isolation_tokens": Cap(hi=16, max_len=3),
        "isolation_d_model": Cap(hi=8),
        "isolation_rows": Cap(hi=4),
        "isolation_batch_size": Cap(hi=2),
        "isolation_seeds": Cap(hi=3),
        # denominator_seeds one-head layers over denominator_batch_size x denominator_tokens rows, two reads each
        "denominator_d_model": Cap(hi=8),
        "denominator_tokens": Cap(hi=16),
        "denominator_batch_size": Cap(hi=32),
        "denominator_seeds": Cap(hi=3),
        # softplus_seeds x len(softplus_scales) one-head layers over softplus_batch_size sequences, two 1-D quadratures
        # per row (softplus_rows of them)
        "softplus_scales": Cap(hi=8.0, max_len=3),
        "softplus_keys": Cap(hi=16),
        "softplus_rows": Cap(hi=4),
        "softplus_batch_size": Cap(hi=2),
        "softplus_seeds": Cap(hi=3),
        # shaped_seeds x len(shaped_depths) x 2 stacks of up to max(shaped_depths) layers over shaped_batch_size
        # sequences
        "shaped_depths": Cap(hi=4, max_len=3),
        "shaped_d_model": Cap(hi=8),
        "shaped_tokens": Cap(hi=8),
        "shaped_batch_size": Cap(hi=8),
        "shaped_seeds": Cap(hi=3),
        # sigmoid_seeds x len(sigmoid_keys) one-head layers over sigmoid_batch_size sequences, a quadrature per row
        "sigmoid_keys": Cap(hi=16, max_len=3),
        "sigmoid_d_model": Cap(hi=8),
        "sigmoid_rows": Cap(hi=4),
        "sigmoid_batch_size": Cap(hi=2),
        "sigmoid_seeds": Cap(hi=3),
        # cog_seeds x len(cog_depths) x 2 stacks of up to max(cog_depths) layers over cog_batch_size sequences (the Cog
        # stack twice: the flipped tokens)
        "cog_depths": Cap(hi=4, max_len=3),
        "cog_d_model": Cap(hi=8),
        "cog_tokens": Cap(hi=8),
        "cog_batch_size": Cap(hi=8),
        "cog_seeds": Cap(hi=3),
        # parallel_seeds pre-LN stacks of parallel_depth blocks over parallel_batch_size sequences, a Hermite series per
        # block and token
        "parallel_depth": Cap(hi=3),
        "parallel_d_model": Cap(hi=8),
        "parallel_n_heads": Cap(hi=2),
        "parallel_d_mlp": Cap(hi=16),
        "parallel_tokens": Cap(hi=8),
        "parallel_batch_size": Cap(hi=2),
        "parallel_seeds": Cap(hi=3),
        # persistent_seeds x len(persistent_context) one-head layers over persistent_batch_size sequences, a quadrature
        # per row
        "persistent_slots": Cap(hi=8),
        "persistent_context": Cap(hi=32, max_len=3),
        "persistent_d_model": Cap(hi=8),
        "persistent_rows": Cap(hi=4),
        "persistent_batch_size": Cap(hi=2),
        "persistent_seeds": Cap(hi=3),
    },
    # parameterisation: widths x mixers x 2 parameterisations x 2 optimizers x seeds first updates; trajectory
    # widths x steps; depths x 3 runs x seeds; ns shapes x draws SVDs; transfer runs x widths x rates x seeds trainings;
    # muon widths x (both grids + 2 x seeds) trainings; aspect variants x shapes x seeds trainings
    "parameterisation": {
        "widths": Cap(hi=64, max_len=2),
        "base_d_model": Cap(hi=64),
        "n_layers": Cap(hi=2),
        "n_heads": Cap(hi=2),
        "vocab_size": Cap(hi=80),
        "seq_len": Cap(hi=6),
        "mixers": Cap(max_len=1),
        "width_seeds": Cap(hi=2),
        "trajectory_widths": Cap(hi=64, max_len=2),
        "trajectory_steps": Cap(hi=2),
        "trajectory_batch_size": Cap(hi=2),
        "depths": Cap(hi=4, max_len=2),
        "depth_d_model": Cap(hi=16),
        "depth_seeds": Cap(hi=2),
        "ns_sizes": Cap(hi=32, max_len=2),
        "ns_draws": Cap(hi=2),
        "transfer_runs": Cap(max_len=1),
        "transfer_widths": Cap(hi=32, max_len=2),
        "transfer_adam_lrs": Cap(max_len=3),
        "transfer_sgd_lrs": Cap(max_len=3),
        "transfer_steps": Cap(hi=3),
        "transfer_batch_size": Cap(hi=2),
        "transfer_seeds": Cap(hi=2),
        "muon_widths": Cap(hi=32, max_len=2),
        "muon_adamw_lrs": Cap(max_len=3),
        "muon_lrs": Cap(max_len=3),
        "muon_steps": Cap(hi=20),
        "muon_batch_size": Cap(hi=2),
        "muon_seeds": Cap(hi=2),
        "aspect_widths": Cap(hi=32, max_len=2),
        "aspect_depths": Cap(hi=4, max_len=2),
        "aspect_variants": Cap(max_len=2),
        "aspect_steps": Cap(hi=3),
        "aspect_batch_size": Cap(hi=2),
        "aspect_seeds": Cap(hi=2),
    },
}

DEFAULT_MAX_LEN = 4  # longest generated list of a field without a Cap.max_len


def _specs(name: str) -> tuple[FieldSpec, ...]:
    return probes.get(name).Config.field_specs()


def _cap(name: str, spec: FieldSpec) -> Cap:
    return CAPS[name].get(spec.name, Cap())


def _upper(spec: FieldSpec, cap: Cap) -> float | None:
    his = [h for h in (spec.maximum, cap.hi) if h is not None]
    return min(his) if his else None


def _clamp(spec: FieldSpec, cap: Cap, value):
    """``value`` within ``cap`` (numbers clamped, lists shortened); how the smoke preset is made cheap."""
    hi = _upper(spec, cap)

    def item(v):
        return min(v, type(v)(hi)) if hi is not None and isinstance(v, int | float) and not isinstance(v, bool) else v

    if value is None:
        return None
    if spec.is_seq:
        out = tuple(dict.fromkeys(item(v) for v in value))  # clamping may make items equal: keep the first
        return out[: cap.max_len] if cap.max_len is not None else out
    return item(value)


def cheap_smoke(name: str) -> dict:
    """The smoke preset's values of the capped fields, clamped to their caps."""
    config = probes.get(name).Config.preset("smoke")
    return {s.name: _clamp(s, _cap(name, s), config.value_of(s.name)) for s in _specs(name) if s.name in CAPS[name]}


# ================================================================================================
# Strategies from field specs
# ================================================================================================


def machine_devices() -> tuple[str, ...]:
    """The ``device`` values this machine can run (``cuda`` is refused when a run starts without a GPU)."""
    import torch

    return ("cpu", "auto") + (("cuda",) if torch.cuda.is_available() else ())


def _item_strategy(spec: FieldSpec, cap: Cap) -> st.SearchStrategy:
    if spec.name == "device":
        return st.sampled_from(machine_devices())
    if spec.choices is not None:
        return st.sampled_from(spec.choices)
    lo, hi = spec.minimum, _upper(spec, cap)
    if spec.base is bool:
        return st.booleans() if hi is None or hi >= 1 else st.just(False)
    if spec.base is int:
        return st.integers(None if lo is None else math.ceil(lo), None if hi is None else math.floor(hi))
    if spec.base is float:
        return st.floats(lo, hi, allow_nan=False, allow_infinity=False)
    return st.text(max_size=8)


def value_strategy(spec: FieldSpec, cap: Cap = Cap()) -> st.SearchStrategy:
    """Values of one field inside its declared ranges and choices (and ``cap``).

    Lists come as drawn, sorted, or sorted without repeats (validators often want increasing lists)."""
    item = _item_strategy(spec, cap)
    if spec.is_seq:
        max_len = cap.max_len if cap.max_len is not None else max(spec.min_len, DEFAULT_MAX_LEN)
        shape = st.sampled_from([list, sorted, lambda v: sorted(set(v))])
        strategy = st.tuples(st.lists(item, min_size=spec.min_len, max_size=max_len), shape).map(
            lambda p: tuple(p[1](p[0]))
        )
    else:
        strategy = item
    return st.none() | strategy if spec.optional else strategy


def overrides_strategy(name: str) -> st.SearchStrategy:
    """Any subset of the probe's fields, each drawn from :func:`value_strategy` under its cap."""
    return st.fixed_dictionaries({}, optional={s.name: value_strategy(s, _cap(name, s)) for s in _specs(name)})


def build_config(name: str, overrides: dict) -> ProbeConfig | None:
    """The smoke config with the caps and ``overrides`` applied, or None if the validator rejects it
    (its message must then name a field: a rejection is never a bare error)."""
    Config = probes.get(name).Config
    try:
        return Config.preset("smoke", **{**cheap_smoke(name), **overrides})
    except ValueError as e:
        first = re.match(r"[a-z_0-9]+", str(e))
        assert first and first.group(0) in Config.field_names(), f"rejection does not start with a field: {e}"
        return None


# ----------------------------------------------------------------------------- invalid values

_NONFINITE = (math.nan, math.inf, -math.inf)


def _bad_item_strategies(spec: FieldSpec) -> list[st.SearchStrategy]:
    """Single values (items, for lists) the field's spec forbids."""
    out: list[st.SearchStrategy] = []
    if spec.base is bool:
        out.append(st.sampled_from([0, 1, "true", 2.5]))
    elif spec.base in (int, float):
        out.append(st.sampled_from([True, "1", b"1"]))  # bools are not numbers here; nor are strings
        if spec.base is int:
            out.append(st.floats(allow_nan=False, allow_infinity=False).filter(lambda v: v != int(v)) | st.just(2.0))
        else:
            out.append(st.sampled_from(_NONFINITE))
        if spec.minimum is not None:
            lo = spec.minimum
            out.append(
                st.integers(max_value=math.ceil(lo) - 1)
                if spec.base is int
                else st.floats(max_value=lo, allow_nan=False, allow_infinity=False).filter(lambda v: v < lo)
            )
        if spec.maximum is not None:
            hi = spec.maximum
            out.append(
                st.integers(min_value=math.floor(hi) + 1)
                if spec.base is int
                else st.floats(min_value=hi, allow_nan=False, allow_infinity=False).filter(lambda v: v > hi)
            )
    else:  # str
        out.append(st.sampled_from([1, 1.5, True, b"pre"]))
    if spec.choices is not None:
        out.append(st.text(max_size=10).filter(lambda v: v not in spec.choices))
    return out


def invalid_strategy(spec: FieldSpec) -> st.SearchStrategy:
    """Values of ``spec``'s field the generic validation must reject."""
    bad = st.one_of(_bad_item_strategies(spec))
    options = []
    if spec.is_seq:
        good = _item_strategy(spec, Cap())
        # one bad item among good ones, a bare item instead of a list, too few items
        options.append(
            st.tuples(st.lists(good, max_size=3), bad, st.lists(good, max_size=3)).map(lambda p: (*p[0], p[1], *p[2]))
        )
        options.append(good.filter(lambda v: not isinstance(v, str)) | st.just(3))
        if spec.min_len >= 1:
            options.append(st.lists(good, max_size=spec.min_len - 1).map(tuple))
    else:
        options.append(bad)
    if not spec.optional:
        options.append(st.none())
    return st.one_of(options)


def invalid_overrides(name: str) -> st.SearchStrategy:
    """``(field name, bad value)`` for any field of the probe."""
    return st.sampled_from(_specs(name)).flatmap(lambda s: st.tuples(st.just(s.name), invalid_strategy(s)))


# ================================================================================================
# Properties
# ================================================================================================


def _no_constant(token: str):
    raise ValueError(f"non-standard JSON constant {token}")


def check_json_round_trip(result, config: ProbeConfig) -> None:
    """The command line's ``--json`` text of ``result`` is strict JSON and gives the config and scalars back."""
    text = json.dumps(result.to_json_dict(), indent=2, allow_nan=False)  # as analysis/probing/cli.py writes it
    d = json.loads(text, parse_constant=_no_constant)
    assert type(config).from_dict(d["config"]) == config
    assert d["probe"] == result.probe and d["preset"] == config.preset_name
    assert d["scalars"].keys() == result.scalars.keys()
    for key, value in result.scalars.items():
        got = d["scalars"][key]
        if isinstance(value, float) and not math.isfinite(value):  # the documented encoding of to_jsonable
            assert got == (None if math.isnan(value) else ("inf" if value > 0 else "-inf")), key
        else:
            assert type(got) is type(value) and got == value, (key, got, value)
    assert sum(d["check_summary"].values()) == len(d["checks"]) == len(result.ledger.claims)


BROKEN_IDENTITIES: dict[str, list[str]] = {}  # probe -> "claim: config" of every failed identity seen


def run_and_check(name: str, config: ProbeConfig) -> float:
    """Run ``config``, check its JSON round trip, note failing identities; the run's seconds."""
    start = time.perf_counter()
    result = run_probe(name, config, progress=False)
    elapsed = time.perf_counter() - start
    assert result.probe == name and result.config == config
    check_json_round_trip(result, config)
    for claim in result.ledger.broken:
        BROKEN_IDENTITIES.setdefault(name, []).append(f"{claim.line()} :: {config!r}")
    return elapsed


def _changed(name: str, config: ProbeConfig) -> dict:
    """The fields of ``config`` that differ from the smoke preset (for short failure reports)."""
    smoke = probes.get(name).Config.preset("smoke")
    return {f: config.value_of(f) for f in config.field_names() if config.value_of(f) != smoke.value_of(f)}


@pytest.fixture
def one_thread():
    """One torch thread while probes run (tiny models: faster, and the CI machine has 2 cores)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def valid_configs_run(name: str, n_examples: int) -> None:
    """Run ``n_examples`` accepted configs of probe ``name``; fail on any exception or bad JSON."""
    ran: list[float] = []

    @settings(max_examples=n_examples, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(overrides=overrides_strategy(name))
    def prop(overrides):
        config = build_config(name, overrides)
        assume(config is not None)
        try:
            ran.append(run_and_check(name, config))
        except Exception as e:
            raise AssertionError(f"{name} crashed on {_changed(name, config)}: {type(e).__name__}: {e}") from e

    BROKEN_IDENTITIES.pop(name, None)
    start, cpu = time.perf_counter(), time.process_time()
    prop()
    total, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(
        f"\n{name}: {len(ran)} configs ran in {total:.1f} s wall, {cpu:.1f} s CPU (slowest run "
        f"{max(ran, default=0):.2f} s)"
    )
    assert len(ran) >= n_examples, f"only {len(ran)} of {n_examples} generated configs were valid"
    # a failing identity on a config the validator accepts is a bug (exact algebra does not depend on the
    # config), not a finding: fix the probe or narrow the validator
    assert not BROKEN_IDENTITIES.get(name), (
        f"{name}: {len(BROKEN_IDENTITIES[name])} failing identity claim(s):\n" + "\n".join(BROKEN_IDENTITIES[name])
    )


@pytest.mark.parametrize("name", PROBES)
def test_valid_configs_run(name, one_thread):
    """``TIER.probe_examples`` generated configs per probe: 3 drawn the same way every run in the fast tier, 200
    drawn afresh each run in the thorough tier."""
    valid_configs_run(name, TIER.probe_examples)


@pytest.mark.parametrize("name", PROBES)
@given(data=st.data())
def test_invalid_values_raise_valueerror_naming_the_field(name, data):
    field, bad = data.draw(invalid_overrides(name), label="field, value")
    Config = probes.get(name).Config
    with pytest.raises(ValueError) as info:
        Config.preset("smoke", **{field: bad})
    # the message starts with the field (or one item of it) and says what is allowed
    assert re.match(rf"{field}(\[\d+\])? must ", str(info.value)), f"{field}={bad!r}: {info.value}"


def cli_invalid_values(name: str) -> list[tuple[FieldSpec, str]]:
    """A handful of bad command-line values of the probe, from its specs: one below a minimum, one not
    among the choices, one non-finite float, one empty list, one unparseable number."""
    specs = _specs(name)
    picks = [
        next(
            (
                (s, str(math.ceil(s.minimum) - 1))
                for s in specs
                if s.base is int and not s.is_seq and s.minimum is not None
            ),
            None,
        ),
        next(((s, "bogus") for s in specs if s.choices is not None and s.base is str), None),
        next(((s, "nan") for s in specs if s.base is float and not s.is_seq), None),
        next(((s, "") for s in specs if s.is_seq and s.min_len >= 1), None),
        next(((s, "1.5") for s in specs if s.base is int and not s.is_seq), None),
    ]
    return [p for p in picks if p is not None]


# A subprocess costs seconds (torch import): the first case of each probe runs in a fresh interpreter (exit code,
# stderr and stdout as a shell sees them); in the fast tier the others call the same entry point in this process
# (cli.main, which `python -m probes` runs), in the thorough tier they too run in a fresh interpreter.
CLI_CASES = [
    pytest.param(name, spec.name, text, i == 0, id=f"{name}-{spec.name}-{text}")
    for name in PROBES
    for i, (spec, text) in enumerate(cli_invalid_values(name))
]


@pytest.mark.parametrize(("name", "field", "text", "first"), CLI_CASES)
def test_cli_rejects_invalid_value_with_one_line(name, field, text, first, tmp_path, capsys, monkeypatch):
    option = "--" + field.replace("_", "-")
    args = ["run", name, "--preset", "smoke", f"{option}={text}", "--no-progress"]
    if first or TIER.subprocess_every_case:
        env = {**os.environ, "PYTHONPATH": str(REPO), "WORKBENCH_CACHE": str(tmp_path / "cache"), "TQDM_DISABLE": "1"}
        proc = subprocess.run(
            [sys.executable, "-m", "probes", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
        )
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    else:
        from analysis.probing import cli

        monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache"))
        rc = cli.main(args)
        out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert rc == 2, err[-2000:]
    assert len(lines) == 1, err
    assert lines[0].startswith("probes: error: "), lines[0]
    # names the field, says what is allowed
    assert re.search(rf"({option}|\b{field}(\[\d+\])?) must ", lines[0]), lines[0]
    assert out == ""


# ================================================================================================
# Regression tests: examples hypothesis found (each broke as its comment says)
# ================================================================================================

# Configs the validator accepted that crashed (probe, overrides on top of the capped smoke preset); they must run.
CRASHED = [
    # zoo sweep on corpus text with vocab_size 64: ValueError (needs 256 byte ids); the zoo now embeds >= 256
    ("signal_propagation", {"data": "corpus"}),
    # family repeat_last with early_position >= max_len (32): IndexError drawing the (unused) replacement token
    ("representational_collapse", {"early_position": 40}),
    # large logits put exactly zero weight on the prompt: bootstrap_power_law raised on zero offsets, and
    # prompt_share_bound overflowed (math.exp(2 * max_logit))
    ("prompt_forgetting", {"logit_gain": 100.0}),
    # logit std beyond the exact Gaussian quadrature's reach: NaN expected value, Ledger.predict raised
    ("attention_entropy", {"scale_factors": (405.45,), "n_heads": 1, "ctx_lens": (20,)}),
    # the largest seed (MAX_SEED, itself added for seeds past 2**64): replicates and eta seeds add to it, and
    # Config.replace(seed=seed + r) rejected the sum
    ("attention_entropy", {"seed": MAX_SEED}),
    ("icl_gd", {"seed": MAX_SEED, "eta_seeds": 2}),
    # sweep_len below rows_per_n: the sigmoid row totals took rows_per_n rows of a sweep_len-token sequence
    # (a broadcast ValueError)
    ("attention_entropy", {"sweep_len": 2, "rows_per_n": 4, "ctx_lens": (16, 32)}),
    # ridge with a tiny lambda (noise 1e-97) and fewer examples than dimensions: singular torch.linalg.solve
    ("icl_gd", {"noise": 1e-97, "n_context": 1, "mahankali": ("anisotropic",)}),
]


@pytest.mark.parametrize(("name", "overrides"), CRASHED)
def test_regression_accepted_config_runs(name, overrides, one_thread):
    config = build_config(name, overrides)
    assert config is not None, f"{name} {overrides} is no longer accepted"
    run_and_check(name, config)


# Values the validator accepted although the run could only crash on them; they must now be rejected
# with a message that starts with the field.
REJECTED = [
    # data='corpus' with trained=true: the zoo trains on the Markov language (raised inside the run)
    ("signal_propagation", {"data": "corpus", "trained": True}, "data"),
    # the extension's own protocol needs n_lengths >= 3, n_bases >= 2, max_len >= 8, fit_lo <= max_len / 2:
    # extend_lengths=2 and extend_bases=1 raised inside the run
    ("representational_collapse", {"extend_dtype": "float32", "extend_lengths": 2}, "extend_lengths"),
    # a separator period beyond every sequence inserted none and overflowed torch's int64 at 2^63
    ("representational_collapse", {"separator_every": 2**64}, "separator_every"),
    ("representational_collapse", {"max_len": 32, "separator_every": 32}, "separator_every"),
    # the extension's collapse length is predicted from the main run's data of that dtype (KeyError before)
    ("representational_collapse", {"dtypes": ("bfloat16",), "extend_dtype": "float32"}, "extend_dtype"),
    ("representational_collapse", {"extend_dtype": "bfloat16", "extend_bases": 1}, "extend_bases"),
    ("representational_collapse", {"extend_dtype": "float32", "extend_lo": 0.05, "extend_hi": 0.2}, "extend_hi"),
    (
        "representational_collapse",
        {"family": "early_token", "early_position": 2, "extend_dtype": "float32", "extend_lo": 0.05},
        "early_position",
    ),
    # seeds past 2**64 overflow torch.Generator.manual_seed
    ("prompt_forgetting", {"seed": 2**64}, "seed"),
    # planted_gap 0: ZeroDivisionError (s = s g / planted_gap); negative or tiny gaps gave s = -inf / inf
    ("attention_entropy", {"planted_gap": 0.0}, "planted_gap"),
    # repeated coordinates: .sel returned arrays where the claims expected scalars (TypeError)
    ("attention_entropy", {"fade_sg": (0.5, 0.5)}, "fade_sg"),
    # overflowing magnitudes: non-finite logits or Adam steps (zero-size reductions, RuntimeError)
    ("attention_entropy", {"train_lrs": (1e308,)}, "train_lrs"),
    ("attention_entropy", {"ssmax_s": 1e307}, "ssmax_s"),
    ("attention_entropy", {"logit_scale": 1e300}, "logit_scale"),
    # garg_n_heads not dividing garg_d_model: ModelConfig raised inside the run
    ("icl_gd", {"garg_d_model": 11, "garg_n_heads": 2}, "garg_n_heads"),
    # zero learning rate / init std: TrainConfig / ModelConfig raised inside the run
    ("icl_gd", {"garg_lr": 0.0}, "garg_lr"),
    ("icl_gd", {"init_std": 0.0}, "init_std"),
    # overflowing magnitudes: OverflowError in the theory (sigma^2, the spectrum of Sigma)
    ("icl_gd", {"cond": 3e307}, "cond"),
    ("icl_gd", {"ridge_mc_noise": 1e308}, "ridge_mc_noise"),
]


@pytest.mark.parametrize(("name", "overrides", "field"), REJECTED)
def test_regression_rejected_with_field_named(name, overrides, field):
    with pytest.raises(ValueError, match=rf"^{field}\b"):
        probes.get(name).Config.preset("smoke", **{**cheap_smoke(name), **overrides})


def test_regression_post_ln_identity_without_skip(one_thread):
    # skip=false, d_model=2: a bare branch's token variance is tiny, so post_variance_unit (|m - 1| <= 1e-3, which
    # assumes a unit stream plus a branch) failed as an identity (1.4e-3); it is now claimed with skip only
    config = build_config("signal_propagation", {"skip": False, "d_model": 2, "n_heads": 2, "jacobian": False})
    result = run_probe("signal_propagation", config, progress=False)
    assert not result.ledger.broken, [c.line() for c in result.ledger.broken]


def test_regression_post_ln_identity_at_width_two(one_thread):
    # skip=true, d_model=2 (found by the 200-config run): a token's two coordinates can nearly coincide, so the
    # LayerNorm's eps took more than 1e-3 off the unit second moment (0.0053); the identity is now the exact
    # moment mean_t sigma_t^2 / (sigma_t^2 + eps) of the norm's own input
    overrides = {"norms": ("pre", "post"), "depths": (1, 3), "d_model": 2, "n_heads": 1, "attn_only": True,
                 "seq_len": 3, "batch_size": 3, "n_samples": 2, "vocab_size": 76, "train_steps": 1,
                 "seed": 1314}  # fmt: skip
    result = run_probe("signal_propagation", build_config("signal_propagation", overrides), progress=False)
    assert result.ledger["post_variance_unit"].status == "pass", result.ledger["post_variance_unit"].line()
    moment = result.data["resid_var"].sel(norm="post").values
    assert np.nanmax(np.abs(moment[:, 1:] - 1.0)) > 1e-3  # the case the old band could not cover


def test_regression_spectral_bound_of_diverged_weights():
    # training at lr 10 (train_lrs=(10.0, 5.0), train_steps=100) diverged to NaN weights and the SVD of W_q^T W_k in
    # the spectral bound raised LinAlgError; the bound is now NaN for non-finite weights
    import torch

    from probes import attention_entropy as ae

    config = build_config("attention_entropy", {})
    model = ae.TinyTransformer(ae.model_config(config, vocab=32)).eval()
    with torch.no_grad():
        model.blocks[0].attn.W_q.weight.fill_(math.nan)
    bound = ae.spectral_bound_rows(model, ae.distinct_tokens(16, 0, vocab=32))
    assert bound.shape == (config.model.n_layers, config.model.n_heads, 16)
    assert np.isnan(bound[0]).all()  # layer 0's weights; the NaN stream then reaches every later layer too


@pytest.mark.parametrize("name", PROBES)
def test_the_capped_smoke_preset_is_a_valid_config(name):
    """Every generated config starts from the smoke preset with the caps applied: that start must itself be valid,
    or only the examples that happen to override every field the caps broke can run."""
    assert probes.get(name).Config.preset("smoke", **cheap_smoke(name)) is not None
