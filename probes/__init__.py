"""Probes: each compares a measurement in a tiny transformer with what theory predicts.

This package holds only the experiments: every sub-package is a probe (``probes/icl_gd/`` ...), following the
contract of :mod:`analysis.probing.base`; the machinery that runs them (configs, results, the result cache, parts,
studies, replicates, sweeps, the registry and the command line) is :mod:`analysis.probing`, whose main entry points
this package re-exports. The registry needs no list to edit, and imports a probe only when asked for.

Two more ways in:

* ``register(name, module)`` -- for tests and interactive work (any object with the probe
  attributes will do, e.g. a ``types.ModuleType`` built on the fly);
* ``WORKBENCH_PROBES="mypkg.my_probe,other.probe"`` -- extra importable modules, each registered
  under the last part of its dotted name (probes kept outside this repository).

Typical use::

    import probes
    probes.available()                          # ['icl_gd', ...]
    mod = probes.get("icl_gd")
    result = probes.cached_run("icl_gd", mod.Config.preset("smoke"))
    result.ledger.summary()
    ds = probes.sweep("prompt_forgetting", {"layers": [1, 2]}, preset="smoke", seeds=range(3))  # (layers, seed)

``probes.decided_run(name, config)`` is ``cached_run`` after the sequential design of the claims that declare one
(an undecided claim run again at its next replicate count, :mod:`analysis.probing.sequential`): what the notebooks run.
``probes.replicated_run(name, config, n)`` runs one configuration at ``n`` independent seeds and judges
the probe's claims over them (:mod:`analysis.probing.replicates`). ``analysis.probing.sweep`` runs one probe over a
grid of config
values, serially or on a Dask cluster (see
:mod:`analysis.probing.sweep`); ``probes.sweep_results`` gives back the points' Results. ``probes.run_study(name, study,
preset, params)`` runs a probe's declared study, the exact experiment behind a figure (its ``STUDIES``;
:mod:`analysis.probing.studies`; ``python -m probes study NAME``).
"""

from __future__ import annotations

from analysis.probing.base import (
    CorruptResultError,
    FieldSpec,
    ModelIncompatibleError,
    ProbeConfig,
    Result,
    cache_key,
    cached_run,
    check_model_compat,
    description,
    get,
    model_param,
    param,
    register,
    run_probe,
    unregister,
    validate_probe,
)
from analysis.probing.registry import available
from analysis.probing.replicates import Replicates, replicated_run
from analysis.probing.sequential import decided_run
from analysis.probing.studies import Study, run_study, study_configs
from analysis.probing.sweep import sweep, sweep_results

__all__ = [
    "CorruptResultError",
    "FieldSpec",
    "ModelIncompatibleError",
    "ProbeConfig",
    "Replicates",
    "Result",
    "Study",
    "available",
    "cache_key",
    "cached_run",
    "decided_run",
    "check_model_compat",
    "description",
    "get",
    "model_param",
    "param",
    "register",
    "replicated_run",
    "run_probe",
    "run_study",
    "sweep",
    "study_configs",
    "sweep_results",
    "unregister",
    "validate_probe",
]
