#!/usr/bin/env python
"""Regenerate every figure (``make figures``): the entry point of the figure pipeline, :mod:`analysis.figures`.

python scripts/make_figures.py [--preset smoke|full] [-p NAME VALUE ...] [--out DIR] [--force] [--jobs N]
"""

from __future__ import annotations

import sys

from analysis.figures.cli import main

if __name__ == "__main__":
    sys.exit(main())
