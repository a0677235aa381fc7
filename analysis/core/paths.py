"""Where things live. One module instead of relative-path guessing.

``WORKBENCH_CACHE`` overrides the cache folder (checkpoints and probe results); ``WORKBENCH_FIGURES``
overrides where figures are written (the test suite renders into a temporary folder this way).

Exploring never overwrites committed results: a notebook run outside ``make figures`` (JupyterLab, papermill by hand,
a script) writes its figures and ledger into the scratch gallery :data:`EXPLORE` (``build/explore/``, ignored by git)
unless ``WORKBENCH_FIGURES`` names a folder, the committed :data:`GALLERY` included (by name: that is asking for
it). ``make figures`` writes the committed gallery through a staging folder of its own.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
BUILD = REPO / "build"
GALLERY = REPO / "figures"  # the committed gallery: written by make figures only
EXPLORE = BUILD / "explore"  # where an exploring run's figures go (WORKBENCH_FIGURES unset)


def cache_dir() -> Path:
    """Root of the content-addressed caches (checkpoints/, results/)."""
    return Path(os.environ.get("WORKBENCH_CACHE", REPO / ".cache")).resolve()


def figures_dir() -> Path:
    """Folder that a notebook's figures, their sidecars and its claims ledger are written to: ``WORKBENCH_FIGURES``,
    else the scratch gallery :data:`EXPLORE` (module docstring; never the committed gallery by default)."""
    env = os.environ.get("WORKBENCH_FIGURES")
    return Path(env).resolve() if env else EXPLORE.resolve()


def gallery_dir() -> Path:
    """The gallery that is read (and that ``make figures`` writes at the full preset): ``WORKBENCH_FIGURES``, else
    the committed :data:`GALLERY`."""
    env = os.environ.get("WORKBENCH_FIGURES")
    return Path(env).resolve() if env else GALLERY.resolve()


def exploring() -> bool:
    """True when figures go to the scratch gallery (``WORKBENCH_FIGURES`` unset): an exploring run."""
    return not os.environ.get("WORKBENCH_FIGURES")
