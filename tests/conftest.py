"""Test-suite configuration.

Tests never touch the repository's own caches or figures: every test session gets a fresh
``WORKBENCH_CACHE`` and ``WORKBENCH_FIGURES`` under pytest's temporary folder. Nor do they write
hypothesis's ``.hypothesis/`` folder into the repository: its example database and the constants its
pytest plugin reads from the source files while collecting go to a temporary folder, removed at the end.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from hypothesis.configuration import set_hypothesis_home_dir

_HYPOTHESIS_HOME: str | None = None


def pytest_configure(config):
    # before collection: hypothesis's plugin writes .hypothesis/constants while collecting
    global _HYPOTHESIS_HOME
    _HYPOTHESIS_HOME = tempfile.mkdtemp(prefix="workbench-hypothesis-")
    set_hypothesis_home_dir(_HYPOTHESIS_HOME)


def pytest_unconfigure(config):
    set_hypothesis_home_dir(None)
    if _HYPOTHESIS_HOME is not None:
        shutil.rmtree(_HYPOTHESIS_HOME, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def _isolated_workbench_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("workbench")
    old = {k: os.environ.get(k) for k in ("WORKBENCH_CACHE", "WORKBENCH_FIGURES")}
    os.environ["WORKBENCH_CACHE"] = str(root / "cache")
    os.environ["WORKBENCH_FIGURES"] = str(root / "figures")
    yield
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture
def patch_in_package(monkeypatch):
    """``patch(package, name, value)``: stand ``value`` in for ``name`` in every module of the probe package
    ``package`` that holds it (each module of a probe package imports what it calls, so a spy or a stub must
    stand in each of them); undone at the end of the test like any ``monkeypatch``. Returns the patched
    modules."""
    import importlib
    import pkgutil

    def patch(package, name: str, value) -> list:
        names = [f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__)]
        holders = [m for m in map(importlib.import_module, names) if name in vars(m)]
        if not holders:  # a stand-in that stands nowhere would leave the test checking nothing
            raise AssertionError(f"no module of {package.__name__} holds {name!r}")
        for module in holders:
            monkeypatch.setattr(module, name, value)
        return holders

    return patch
