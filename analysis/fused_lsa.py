"""Moved to :mod:`analysis.zoo.fused_lsa`; this path re-exports it for one release (a ``DeprecationWarning``)."""

from analysis._moved import moved

moved(__name__, "analysis.zoo.fused_lsa")
