"""Provenance: what a figure (or a notebook run) depends on, written down without a single timestamp.

A figure is a build product of its notebook, the notebook's parameters, the library source, the
package versions and the cached inputs it read (checkpoint and result keys). This module collects
those facts as plain JSON values so that the same inputs always give the same record, byte for byte:
no dates, no host names, no absolute paths, keys in sorted order.

* :func:`git_commit` -- ``HEAD`` of the repository, with ``-dirty`` when tracked or untracked files
  differ from it. The generated ``figures/`` folder is left out of the check, otherwise writing the
  first figure of a run would mark every later figure dirty.
* :func:`package_versions` -- python and the scientific stack, read from the installed metadata
  (``importlib.metadata``), so collecting them never imports torch.
* :func:`tree_hash` -- SHA-256 over the relative paths and contents of a source tree (the resume
  stamps of ``scripts/make_figures.py`` use it for ``analysis/`` and ``probes/``).
* :func:`figure_provenance` -- the record embedded in a figure's PNG text chunks, SVG ``<metadata>``
  and JSON sidecar.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import re
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from analysis.core.io import canonical_json, sha256_bytes, sha256_file, to_jsonable
from analysis.core.paths import REPO
from analysis.core.validation import check_choice

PACKAGES = ("torch", "numpy", "scipy", "matplotlib", "xarray")  # versions recorded beside python
PRESETS = ("smoke", "full")
SOURCE_TREES = ("analysis", "probes", "companions")  # library code whose change invalidates a rendered notebook
GENERATED = ("figures",)  # generated folders ignored by the dirty check
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def check_name(field: str, value: Any) -> None:
    """A figure or notebook name: letters, digits, ``_ . -``; no path separators, no spaces."""
    if not isinstance(value, str) or not _NAME.match(value):
        raise ValueError(f"{field} must be a name of letters, digits, '_', '.', '-' (no '/' or spaces), got {value!r}")


def git_commit(repo: str | os.PathLike = REPO) -> str:
    """The commit ``HEAD`` points at, plus ``"-dirty"`` when the working tree differs from it.

    Returns ``"no-commit"`` (possibly ``-dirty``) for a repository without commits and ``"unknown"``
    when ``repo`` is not a git repository or git is unavailable. Files under ``figures/`` are
    excluded from the dirty check (they are what is being generated).
    """

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False, timeout=60)

    try:
        inside = git("rev-parse", "--is-inside-work-tree")
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        return "unknown"
    head = git("rev-parse", "--verify", "--quiet", "HEAD")
    commit = head.stdout.strip() if head.returncode == 0 else "no-commit"
    excludes = [f":(exclude){g}" for g in GENERATED]
    status = git("status", "--porcelain", "--untracked-files=normal", "--", ".", *excludes)
    dirty = status.returncode != 0 or bool(status.stdout.strip())
    return commit + ("-dirty" if dirty else "")


@functools.lru_cache(maxsize=1)
def package_versions() -> dict[str, str]:
    """``{"python": "3.11.7", "torch": ..., "numpy": ..., ...}``; ``"absent"`` for a missing package."""
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def tree_hash(roots: Iterable[str | os.PathLike] = SOURCE_TREES, base: str | os.PathLike = REPO) -> str:
    """SHA-256 of every file under ``roots`` (relative to ``base``, or absolute): paths and contents.

    Each file enters as ``[<root folder name>/<path inside root>, sha256]``, sorted, so the hash does
    not depend on where the repository is checked out.

    Caches and editor files are skipped (``__pycache__``, hidden files and folders, ``*.pyc``), so
    only a change of source text changes the hash. A root that does not exist contributes nothing.
    """
    base = Path(base)
    entries = []
    for root in roots:
        root_path = base / root
        if not root_path.exists():
            continue
        for dirpath, dirnames, filenames in os.walk(root_path):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
            for fname in sorted(filenames):
                if fname.startswith(".") or fname.endswith((".pyc", ".pyo")):
                    continue
                path = Path(dirpath) / fname
                entries.append([path.relative_to(root_path.parent).as_posix(), sha256_file(path)])
    entries.sort()
    return sha256_bytes(canonical_json(entries).encode())


def check_params(params: Any) -> dict[str, Any]:
    """Notebook parameters as plain JSON values; must be a dict holding ``preset`` (smoke|full)."""
    if not isinstance(params, Mapping):
        raise ValueError(f"params must be a dict of the notebook's parameters, got {type(params).__name__}")
    if "preset" not in params:
        raise ValueError("params must contain 'preset' (smoke|full), the notebook's preset parameter")
    check_choice("params['preset']", params["preset"], PRESETS)
    clean = to_jsonable(dict(params))
    try:
        canonical_json(clean)
    except (TypeError, ValueError) as err:
        raise ValueError(f"params must hold JSON values only (numbers, strings, lists, dicts): {err}") from None
    return clean


def check_inputs(inputs: Any) -> dict[str, str]:
    """Input hashes: ``{"checkpoint": "<key>", ...}``, both sides strings."""
    if inputs is None:
        return {}
    if not isinstance(inputs, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in inputs.items()):
        raise ValueError(f"inputs must be a dict of str -> str (name -> content hash), got {inputs!r}")
    return dict(inputs)


def figure_provenance(
    *,
    figure: str,
    notebook: str,
    params: Mapping[str, Any],
    inputs: Mapping[str, str] | None = None,
    caption: str = "",
) -> dict[str, Any]:
    """The provenance record of one figure (sorted keys when serialised; no timestamps)::

        {"figure", "notebook", "caption", "commit", "preset", "seed", "params",
         "inputs", "versions"}

    ``seed`` is ``params["seed"]`` when the notebook has that parameter, else ``None``.
    """
    check_name("figure", figure)
    check_name("notebook", notebook)
    if not isinstance(caption, str):
        raise ValueError(f"caption must be a string, got {caption!r}")
    clean = check_params(params)
    return {
        "figure": figure,
        "notebook": notebook,
        "caption": caption,
        "commit": git_commit(),
        "preset": clean["preset"],
        "seed": clean.get("seed"),
        "params": clean,
        "inputs": check_inputs(inputs),
        "versions": package_versions(),
    }
