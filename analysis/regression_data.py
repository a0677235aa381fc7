"""Moved to :mod:`analysis.data.regression_data`; this path re-exports it for one release (a ``DeprecationWarning``)."""

from analysis._moved import moved

moved(__name__, "analysis.data.regression_data")
