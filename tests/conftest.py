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
