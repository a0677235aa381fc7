"""Where probe modules are found: the experiments package ``probes/``, registrations and ``WORKBENCH_PROBES``.

A plain name -> module store that knows nothing of the probe contract, so that :mod:`analysis.probing.base`
can import it: :func:`analysis.probing.base.get` and :func:`analysis.probing.base.register` check what they hand out
or take in against the contract. Use those (re-exported as ``probes.get`` / ``probes.register``), not the functions
here, except :func:`available`.

* Every sub-package of ``probes/`` is a probe (no list to edit; a module file there is not: the package holds only
  experiments), found without importing it, imported when asked for.
* The notebook companions (``companions/``: the designs and claims of the notebooks that are not one probe's) are
  not probes; :func:`load_declarations` imports them too, so that their claim declarations are registered.
* :func:`add` registers a module under a name (tests and interactive work); looked up first.
* ``WORKBENCH_PROBES="mypkg.my_probe,other.probe"`` adds importable modules, each under the last part
  of its dotted name (probes kept outside this repository).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
from typing import Any

PACKAGE = "probes"  # the experiments
COMPANIONS = "companions"  # the notebook companions


def _modules(package: str, packages_only: bool) -> dict[str, str]:
    spec = importlib.util.find_spec(package)
    paths = list(spec.submodule_search_locations or []) if spec is not None else []
    return {
        info.name: f"{package}.{info.name}"
        for info in pkgutil.iter_modules(paths)
        if not info.name.startswith("_") and (info.ispkg or not packages_only)
    }


_registered: dict[str, Any] = {}  # filled by add(); looked up before anything else


def package_probes() -> dict[str, str]:
    """Probe name -> module path, for the sub-packages of ``probes/`` (found without importing them)."""
    return _modules(PACKAGE, packages_only=True)


def companion_modules() -> dict[str, str]:
    """Companion name -> module path, for the modules of ``companions/`` (found without importing them)."""
    return _modules(COMPANIONS, packages_only=False)


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

    for path in sorted({**package_probes(), **env_probes()}.values()) + sorted(companion_modules().values()):
        importlib.import_module(path)
    return declared()


def declarations_of(name: str) -> Any:
    """The declared claims of probe or notebook companion ``name``, its module imported;
    ``ValueError`` naming those that declare claims."""
    from analysis.claims.specs import declarations

    modules = {**package_probes(), **env_probes(), **companion_modules()}
    if isinstance(name, str) and name in modules:
        importlib.import_module(modules[name])
    decl = declarations(name) if isinstance(name, str) else None
    if decl is None:
        known = ", ".join(sorted(load_declarations()))
        raise ValueError(f"probe must be one that declares its claims: {known}; got {name!r}")
    return decl
