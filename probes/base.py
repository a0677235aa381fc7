"""Moved to :mod:`analysis.probing.base`; this path re-exports it for one release (a ``DeprecationWarning``)."""

from analysis._moved import moved

moved(__name__, "analysis.probing.base")
