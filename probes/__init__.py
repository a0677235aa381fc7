"""Probes: each compares a measurement in a tiny transformer with what theory predicts.

One module per probe (``probes/icl_gd.py`` ...), following the contract in :mod:`probes.base`.
The registry needs no list to edit: every module in this package whose name does not start with an
underscore is a probe, except the framework's own ``base`` and ``cli`` (so a private helper shared
by several probes goes in ``probes/_something.py``). Modules are imported only when asked for.

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
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from typing import Any

from probes.base import (
    CorruptResultError,
    FieldSpec,
    ModelIncompatibleError,
    ProbeConfig,
    Result,
    cache_key,
    cached_run,
    check_model_compat,
    description,
    model_param,
    param,
    run_probe,
    validate_probe,
)

__all__ = [
    "CorruptResultError",
    "FieldSpec",
    "ModelIncompatibleError",
    "ProbeConfig",
    "Result",
    "available",
    "cache_key",
    "cached_run",
    "check_model_compat",
    "description",
    "get",
    "model_param",
    "param",
    "register",
    "run_probe",
    "unregister",
    "validate_probe",
]

_FRAMEWORK_MODULES = frozenset({"base", "cli"})  # modules of this package that are not probes
_registered: dict[str, Any] = {}  # filled by register(); looked up before anything else


def _package_probes() -> dict[str, str]:
    """Probe name -> module path, for the modules of this package (found without importing them)."""
    return {
        info.name: f"{__name__}.{info.name}"
        for info in pkgutil.iter_modules(__path__)
        if not info.name.startswith("_") and info.name not in _FRAMEWORK_MODULES
    }


def _env_probes() -> dict[str, str]:
    """Probe name -> module path, from the ``WORKBENCH_PROBES`` environment variable."""
    paths = [p.strip() for p in os.environ.get("WORKBENCH_PROBES", "").split(",") if p.strip()]
    return {p.rsplit(".", 1)[-1]: p for p in paths}


def available() -> list[str]:
    """Names of every probe: the package's modules, registered ones and ``WORKBENCH_PROBES``."""
    return sorted(set(_package_probes()) | set(_env_probes()) | set(_registered))


def get(name: str) -> Any:
    """The probe module called ``name`` (imported on first use and checked against the contract).

    An unknown name raises ``ValueError`` listing the available probes.
    """
    if name in _registered:
        return _registered[name]
    modules = {**_package_probes(), **_env_probes()}
    if not isinstance(name, str) or name not in modules:
        known = ", ".join(available()) or "(none yet)"
        raise ValueError(f"unknown probe {name!r}; available: {known}")
    module = importlib.import_module(modules[name])
    validate_probe(module, name)
    return module


def register(name: str, module: Any) -> Any:
    """Make ``module`` available as probe ``name`` (replacing any earlier registration)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"probe name must be a Python identifier, got {name!r}")
    validate_probe(module, name)
    _registered[name] = module
    return module


def unregister(name: str) -> None:
    """Forget a probe added with :func:`register` (no error if it was not registered)."""
    _registered.pop(name, None)
