"""Where probe modules are found: this package's modules, registrations and ``WORKBENCH_PROBES``.

A plain name -> module store that knows nothing of the probe contract, so that :mod:`probes.base`
can import it: :func:`probes.base.get` and :func:`probes.base.register` check what they hand out or
take in against the contract. Use those (re-exported as ``probes.get`` / ``probes.register``), not
the functions here, except :func:`available`.

* Every module of this package whose name does not start with an underscore is a probe, except the
  framework's own (``FRAMEWORK_MODULES``) and the notebook companions (``COMPANION_MODULES``); found without
  importing them, imported when asked for.
* :func:`add` registers a module under a name (tests and interactive work); looked up first.
* ``WORKBENCH_PROBES="mypkg.my_probe,other.probe"`` adds importable modules, each under the last part
  of its dotted name (probes kept outside this repository).
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from pathlib import Path
from typing import Any

PACKAGE = __name__.rpartition(".")[0]  # "probes"
# modules of this package that are not probes
FRAMEWORK_MODULES = frozenset(
    {
        "base",
        "cli",
        "explorers",
        "inventory",
        "options",
        "parts",
        "registry",
        "replicates",
        "sequential",
        "studies",
        "sweep",
    }
)
# notebook companions: the experiment and claims of a notebook that is not one probe's (00_overview's, 06_real_models'
# on real networks); imported by those notebooks and their tests, listed by `python -m probes claims`, not probes
COMPANION_MODULES = frozenset({"overview", "real_models"})
_registered: dict[str, Any] = {}  # filled by add(); looked up before anything else


def package_probes() -> dict[str, str]:
    """Probe name -> module path, for the modules of this package (found without importing them)."""
    return {
        info.name: f"{PACKAGE}.{info.name}"
        for info in pkgutil.iter_modules([str(Path(__file__).resolve().parent)])
        if not info.name.startswith("_") and info.name not in FRAMEWORK_MODULES | COMPANION_MODULES
    }


def env_probes() -> dict[str, str]:
    """Probe name -> module path, from the ``WORKBENCH_PROBES`` environment variable."""
    paths = [p.strip() for p in os.environ.get("WORKBENCH_PROBES", "").split(",") if p.strip()]
    return {p.rsplit(".", 1)[-1]: p for p in paths}


def available() -> list[str]:
    """Names of every probe: the package's modules, registered ones and ``WORKBENCH_PROBES``."""
    return sorted(set(package_probes()) | set(env_probes()) | set(_registered))


def registered(name: str) -> Any | None:
    """The module registered under ``name`` with :func:`add`, or ``None``."""
    return _registered.get(name) if isinstance(name, str) else None


def find(name: str) -> Any:
    """The module called ``name``, imported (not checked against the contract).

    An unknown name raises ``ValueError`` listing the available probes.
    """
    if isinstance(name, str) and name in _registered:
        return _registered[name]
    modules = {**package_probes(), **env_probes()}
    if not isinstance(name, str) or name not in modules:
        known = ", ".join(available()) or "(none yet)"
        raise ValueError(f"unknown probe {name!r}; available: {known}")
    return importlib.import_module(modules[name])


def add(name: str, module: Any) -> None:
    """Store ``module`` under ``name`` (replacing any earlier registration)."""
    _registered[name] = module


def remove(name: str) -> None:
    """Forget a registration (no error if there was none)."""
    _registered.pop(name, None)


def load_declarations() -> dict[str, Any]:
    """Import every probe of the package and ``WORKBENCH_PROBES`` and the notebook companions, so that their
    claim declarations (:mod:`analysis.claims.specs`) are registered; returns them by probe (ledger context)."""
    from analysis.claims.specs import registered as declared

    for path in sorted({**package_probes(), **env_probes()}.values()) + [
        f"{PACKAGE}.{m}" for m in sorted(COMPANION_MODULES)
    ]:
        importlib.import_module(path)
    return declared()


def declarations_of(name: str) -> Any:
    """The declared claims of probe or notebook companion ``name``, its module imported;
    ``ValueError`` naming those that declare claims."""
    from analysis.claims.specs import declarations

    modules = {**package_probes(), **env_probes(), **{m: f"{PACKAGE}.{m}" for m in COMPANION_MODULES}}
    if isinstance(name, str) and name in modules:
        importlib.import_module(modules[name])
    decl = declarations(name) if isinstance(name, str) else None
    if decl is None:
        known = ", ".join(sorted(load_declarations()))
        raise ValueError(f"probe must be one that declares its claims: {known}; got {name!r}")
    return decl
