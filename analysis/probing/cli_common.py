"""What the commands of ``python -m probes`` share: :class:`UsageError` (one line on stderr, exit 2) and the parser
that raises it, the probe lookup as a usage error, the ``--FIELD VALUE`` option of every config field, values
written as the command line writes them (:func:`_fmt`), and the checks that refuse an output path that cannot be
written before any work (:func:`_check_outputs_early`, before the probe is even imported)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from analysis.core.config import renamed_fields
from analysis.core.io import unwritable
from analysis.probing.contract import get


class UsageError(Exception):
    """A mistake in the command line; reported as one line on stderr with exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse would print usage + message and exit 2
        if "expected one argument" in message:
            message += " (a value starting with '-' is written --option=VALUE)"
        raise UsageError(message)


def _get(name: str) -> Any:
    try:
        return get(name)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, tuple):
        return ",".join(_fmt(v) for v in value) or '""'
    return str(value)


def renamed_option(config_cls: type, option: str, allowed: Sequence[str] | None = None) -> str | None:
    """For an option spelt in the old vocabulary (``--layers``, or ``layers`` in a grid), the line naming its new
    spelling (``--n-layers``); None for any other. ``allowed``: the new names that this command takes (all fields
    unless given)."""
    old = option.split("=")[0].lstrip("-").replace("-", "_")
    new = renamed_fields(config_cls).get(old)
    if new is None or (allowed is not None and new not in allowed):
        return None
    dashes = "--" if option.startswith("-") else ""
    spell = (lambda n: dashes + n.replace("_", "-")) if dashes else (lambda n: n)
    return f"{spell(old)} is now {spell(new)} (the model's and trainer's names, as in ModelConfig and TrainConfig)"


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
