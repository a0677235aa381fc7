"""The claims a part makes by pairing a measurement with its exact law over replicate seeds: :func:`predict_law` (the
law's level) and :func:`predict_law_and_slope` (and its slope in ln x), worded from a :class:`Measured`, with the
paired replicates they judge (:func:`paired_with_law`, :func:`paired_log_slope`). Re-exported by
:mod:`analysis.probing.parts`, where parts import them from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from analysis.claims.ledger import Ledger

LAW_STATEMENT = "{subject}: the mean {quantity} is its exact law"  # the statement of predict_law's level
SLOPE_STATEMENT = "{subject}: ln(mean {quantity})'s slope in ln {x} is its law's"  # ... and of its slope


def paired_with_law(measured, exact) -> tuple[Any, float]:
    """A prediction paired row by row with its exact law, both (..., seed): each replicate's mean of ``measured -
    exact`` over the other axes plus the overall exact level (the replicates), and that level (the expectation)."""
    import numpy as np

    measured, exact = np.asarray(measured, dtype=np.float64), np.asarray(exact, dtype=np.float64)
    level = float(exact.mean())
    return level + (measured - exact).reshape(-1, exact.shape[-1]).mean(axis=0), level


def log_slopes(values, xs):
    """(seed,) least-squares slope of ``ln(values)`` on ``ln(xs)`` per replicate (``values`` (x, seed), positive)."""
    import numpy as np

    x = np.log(np.asarray(xs, dtype=np.float64))
    x = x - x.mean()
    y = np.log(np.asarray(values, dtype=np.float64))
    y = y - y.mean(axis=0)
    return (x[:, None] * y).sum(axis=0) / (x * x).sum()


def paired_log_slope(measured, exact, xs) -> tuple[Any, float]:
    """A slope in ``ln x`` paired with its exact law, both (x, seed): each replicate's measured slope of ``ln`` values
    on ``ln xs`` minus its law's, plus the law's mean slope (the replicates), and that mean (the expectation)."""
    law = log_slopes(exact, xs)
    level = float(law.mean())
    return log_slopes(measured, xs) - law + level, level


@dataclass(frozen=True)
class Measured:
    """What a :func:`predict_law` claim (or a :func:`predict_law_and_slope` pair) measures, in words: the setting
    (``subject``: every statement starts with it), the symbol ``x`` of the measurement's first axis (the points
    the law is compared at, and the slope is taken along), the ``quantity`` compared with its law, the ``units`` a
    replicate seed draws afresh (default ``"layers"``), and the quantity whose slope is taken (``slope_quantity``,
    default ``quantity``)."""

    subject: str
    x: str
    quantity: str
    units: str = "layers"
    slope_quantity: str | None = None


def _band(what: Measured, measured: Any) -> str:
    return f"95% t band over {measured.shape[-1]} independent {what.units} (replicate seeds) of each one's "


def _paired_claim(led: Ledger, spec: Sequence[Any], replicates, expected, why: str, statement: str, common) -> None:
    name, alternative, hypothesis, source = spec
    led.predict(
        name,
        replicates=replicates,
        expected=expected,
        alternative=alternative,
        hypothesis=hypothesis,
        source=source,
        why=why,
        statement=statement,
        **{"requires_full": True, **common},
    )


def predict_law(
    led: Ledger, pairs: tuple[Any, Any], law: Sequence[Any], what: Measured, *, paired: str = "ratio", **common: Any
) -> None:
    """A prediction on a measurement paired with its exact law, both (x, seed) over replicate seeds:
    ``paired="ratio"``, each replicate's mean over x of measured over exact (expected 1); ``"difference"``,
    :func:`paired_with_law` (expected the law's mean). ``law`` is ``(name, alternative, hypothesis, source)``; the
    band text and the statement are written here, once, from ``what``. With ``"ratio"`` the alternative is in the
    ratio's units: the competing hypothesis's value over the law. ``measured`` and ``exact`` are (x, seed) arrays
    (one point: slice it, ``values[-1:]``). ``common`` goes to the claim (seed, figure; ``requires_full`` defaults
    to true)."""
    import numpy as np

    measured, exact = (np.asarray(v, dtype=np.float64) for v in pairs)
    if measured.ndim != 2 or measured.shape != exact.shape:
        raise ValueError(
            f"pairs must be two (x, seed) arrays of one shape, got {measured.shape} and {exact.shape} (one point x: "
            "slice it, values[-1:], to keep its axis)"
        )
    x, quantity = what.x, what.quantity
    if paired == "ratio":
        replicates, level = (measured / exact).mean(axis=0), 1.0
        tail = f"mean over {x} of the measured mean {quantity} over its exact law (paired); 1 by definition"
    elif paired == "difference":
        replicates, level = paired_with_law(measured, exact)
        tail = f"mean over {x} of the measured mean {quantity} minus its exact law (paired), plus the law's mean"
    else:
        raise ValueError(f"paired must be 'ratio' or 'difference', got {paired!r}")
    by_x = exact.mean(axis=1)
    shown = (
        ", ".join(f"{v:.4g}" for v in by_x) + f" by {x}" if 1 < len(by_x) <= 8 else f"mean {float(exact.mean()):.4g}"
    )
    statement = LAW_STATEMENT.format(subject=what.subject, quantity=quantity) + f" ({shown})"
    _paired_claim(led, law, replicates, level, _band(what, measured) + tail, statement, common)


def predict_law_and_slope(
    led: Ledger,
    pairs: tuple[Any, Any] | tuple[Any, Any, Any, Any],
    xs: Any,
    law: Sequence[Any],
    slope: Sequence[Any],
    what: Measured,
    *,
    paired: str = "ratio",
    **common: Any,
) -> None:
    """Two predictions on a measurement paired with its exact law, both (x, seed) over replicate seeds: the
    measurement against its law (:func:`predict_law`) and its slope in ``ln x`` against the law's
    (:func:`paired_log_slope`; ``pairs`` may give a second (measured, exact), of ``what.slope_quantity``, for the
    slope). ``law`` and ``slope`` are each ``(name, alternative, hypothesis, source)``; the band texts and the
    statements are written from ``what``. ``common`` goes to both claims (seed, figure); both need the full
    preset."""
    predict_law(led, pairs[:2], law, what, paired=paired, **common)
    slopes, level = paired_log_slope(*(pairs[2:] or pairs), xs)
    of, x = what.slope_quantity or what.quantity, what.x
    why = f"least-squares slope of ln(mean {of}) on ln {x} minus its exact law's (paired), plus the law's mean"
    statement = SLOPE_STATEMENT.format(subject=what.subject, quantity=of, x=x) + f" ({level:.3f})"
    _paired_claim(led, slope, slopes, level, _band(what, slopes[None, :]) + why, statement, common)
