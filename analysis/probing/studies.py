"""Declared studies: the experiment behind a figure, by name, from Python and the command line.

A figure's experiment often spans many runs of one probe (depths x independent seeds, a twin pair, a
prompt-length sweep) and a claim made over all of them. Written in a notebook cell, that design is
invisible to ``python -m probes run`` and to anyone reading the probe. A probe declares it instead, in
``STUDIES`` (a dict name -> :class:`Study`):

* ``base(preset, **params)``: the configuration every run starts from; its keyword parameters are the
  notebook's parameter cell (``seed``, ``layers``...), so the notebook and the command line build the
  same configs (and so reach the same result-cache entries);
* ``grid(preset, base)``: the fields varied, ``{field: values}`` (``seed`` included: independent
  replicate seeds);
* ``combine(results)``: the runs' results, in grid order, into the study's dataset;
* ``claims(combined)``: the study's ledger.

A study of **designs** (runs that are not a product grid: each a set of field overrides, e.g. one family with
its own extension fields, or one depth with the uniform kernel) gives ``designs(preset, base)`` instead of a
grid, ``{tag: {field: value}}``, and ``replicates`` (``{preset: n}``, or ``(preset, config) -> n``): every
design runs at ``n`` independent seeds (:func:`analysis.probing.replicates.replicate_configs`), ``combine`` receives
``{tag: Replicates}`` in the designs' order, and ``claims`` its ledger (:func:`designs_ledger`: each design's own
ledger, tagged).

:func:`run_study` runs every point through the result cache (:func:`analysis.probing.sweep`: serially, or on a
Dask client), so a warm rerun computes nothing and an interrupted study resumes; :func:`study_configs`
gives the configs without running anything. From the command line::

    python -m probes study NAME                  # the probe's studies
    python -m probes study NAME STUDY [--preset smoke|full] [--PARAM VALUE ...] [--json PATH|-]
                                      [--scheduler none|local|tcp://HOST:PORT] [--workers N] [--no-progress]

Where it lives: declaring and running studies in :mod:`analysis.probing.study_runs`, the ``study`` command in
:mod:`analysis.probing.cli_study`; this module re-exports both.
"""

from __future__ import annotations

from analysis.probing.cli_study import _listing, _parse_param, _Parser, parse_study_args, study_command  # noqa: F401
from analysis.probing.study_runs import (  # noqa: F401
    PRESETS,
    Study,
    StudyResult,
    _check_params,
    _plan,
    _run_designs,
    _study_result,
    _varied,
    designs_ledger,
    get_study,
    replicates_by,
    run_study,
    studies,
    study_configs,
    study_params,
    tagged_ledger,
)

__all__ = [
    "Study",
    "replicates_by",
    "designs_ledger",
    "tagged_ledger",
    "StudyResult",
    "get_study",
    "parse_study_args",
    "run_study",
    "studies",
    "study_command",
    "study_configs",
    "study_params",
]
