"""Moved to :mod:`companions.explorers`; this path re-exports it for one release (a ``DeprecationWarning``)."""

from analysis._moved import moved

moved(__name__, "companions.explorers")
