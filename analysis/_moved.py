"""Old import paths of modules that moved into the library's sub-packages: each old module is the new one.

``analysis/<name>.py`` (and ``probes/<name>.py`` for the machinery now in :mod:`analysis.probing`) calls
:func:`moved` with its new dotted path: the old name then *is* the new module (one object: its state, private names
and monkeypatching are shared), and importing it warns that the path goes in the next release.

One old path names both a module and a function its package re-exports: ``probes.sweep``. Importing the old module
would make the package attribute the module (the import system sets it), and ``probes.sweep(...)`` would stop
working; so that shim passes ``callable_as="sweep"`` and the old name becomes a view of the module that is also
callable as that function."""

from __future__ import annotations

import importlib
import sys
import types
import warnings


class _CallableModule(types.ModuleType):
    """A module's attributes (read through to the module) that is also callable as one of its functions."""

    def __init__(self, module: types.ModuleType, function: str):
        super().__init__(module.__name__, module.__doc__)
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_function", getattr(module, function))

    def __getattr__(self, name: str):
        return getattr(object.__getattribute__(self, "_module"), name)

    def __call__(self, *args, **kwargs):
        return object.__getattribute__(self, "_function")(*args, **kwargs)


def moved(old: str, new: str, callable_as: str | None = None) -> None:
    """Make module ``old`` the module ``new`` (imported), with a ``DeprecationWarning`` naming the new path;
    ``callable_as``: the function of ``new`` that ``old`` is also called as (module docstring)."""
    warnings.warn(
        f"{old} moved to {new}; import it from there (the old path goes in the next release)",
        DeprecationWarning,
        stacklevel=3,
    )
    module = importlib.import_module(new)
    sys.modules[old] = module if callable_as is None else _CallableModule(module, callable_as)
