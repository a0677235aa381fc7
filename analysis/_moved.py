"""Old import paths of modules that moved into the library's sub-packages: each old module is the new one.

``analysis/<name>.py`` calls :func:`moved` with its new dotted path: the old name then *is* the new module (one
object: its state, private names and monkeypatching are shared), and importing it warns once that the path goes in
the next release."""

from __future__ import annotations

import importlib
import sys
import warnings


def moved(old: str, new: str) -> None:
    """Make module ``old`` the module ``new`` (imported), with a ``DeprecationWarning`` naming the new path."""
    warnings.warn(
        f"{old} moved to {new}; import it from there (the old path goes in the next release)",
        DeprecationWarning,
        stacklevel=3,
    )
    sys.modules[old] = importlib.import_module(new)
