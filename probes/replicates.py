"""Moved to :mod:`analysis.probing.replicates`; this path re-exports it for one release (a ``DeprecationWarning``)."""

from analysis._moved import moved

moved(__name__, "analysis.probing.replicates")
