"""Where things live. One module instead of relative-path guessing.

``WORKBENCH_CACHE`` overrides the cache folder (checkpoints and probe results); ``WORKBENCH_FIGURES``
overrides where figures are written (the test suite renders into a temporary folder this way).
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPO / "notebooks"
BUILD = REPO / "build"


def cache_dir() -> Path:
    """Root of the content-addressed caches (checkpoints/, results/)."""
    return Path(os.environ.get("WORKBENCH_CACHE", REPO / ".cache")).resolve()


def figures_dir() -> Path:
    """Folder that figures, their sidecars, ``claims.json`` and the gallery are written to."""
    return Path(os.environ.get("WORKBENCH_FIGURES", REPO / "figures")).resolve()
