"""The options of ``python -m probes run NAME``: its parser (the run options and one ``--FIELD VALUE`` per config
field), :func:`parse_config` (the probe's config from the command line), and ``--replicate-seeds N`` (checked against
the other options, then run through :func:`analysis.probing.replicates.replicated_run`). The command itself, which
may load a real model (``--model``), is :func:`analysis.probing.cli._run`."""

from __future__ import annotations

import argparse
import copy
from collections.abc import Sequence
from typing import Any

from analysis.probing.cli_common import UsageError, _field_options, _Parser, renamed_option
from analysis.probing.config import ProbeConfig
from analysis.probing.contract import description
from analysis.probing.options import add_options
from analysis.probing.replicates import replicated_run
from analysis.probing.result import Result


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


def parse_config(module: Any, name: str, args: Sequence[str]) -> tuple[ProbeConfig, argparse.Namespace]:
    """Parse ``run`` arguments into the probe's config and the remaining options (UsageError on bad input)."""
    parser = _run_parser(module, name)
    ns, extra = parser.parse_known_args(list(args))  # --help prints and raises SystemExit(0)
    if extra:
        unknown = next((a for a in extra if a.startswith("-")), extra[0])
        if unknown.startswith("-"):
            if renamed := renamed_option(module.Config, unknown):
                raise UsageError(f"{renamed}, for probe {name}")
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
