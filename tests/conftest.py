"""Test-suite configuration.

Tests never touch the repository's own caches or figures: every test session gets a fresh
``WORKBENCH_CACHE`` and ``WORKBENCH_FIGURES`` under pytest's temporary folder.
"""

from __future__ import annotations

import os

import pytest


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
