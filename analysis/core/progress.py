"""Progress bars: ``tqdm.auto`` (a widget in Jupyter, text elsewhere) that respect both the caller's
``progress`` switch and the ``TQDM_DISABLE`` environment variable.

tqdm reads ``TQDM_*`` variables only as defaults for arguments the caller leaves out, so an explicit
``disable=False`` would print bars under ``TQDM_DISABLE=1``; :func:`bar` decides ``disable`` itself.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from tqdm.auto import tqdm

_FALSE = ("", "0", "false", "no", "off")


def disabled_by_env() -> bool:
    """True when ``TQDM_DISABLE`` is set to anything but an empty/false value."""
    return os.environ.get("TQDM_DISABLE", "").strip().lower() not in _FALSE


def bar(iterable: Iterable | None = None, *, progress: bool = True, **kwargs: Any) -> tqdm:
    """``tqdm(iterable, **kwargs)``, silent when ``progress`` is false or ``TQDM_DISABLE`` is set."""
    kwargs.pop("disable", None)
    return tqdm(iterable, disable=(not progress) or disabled_by_env(), **kwargs)
