"""Parts: the sub-experiments a probe package is made of, and the one run skeleton they share.

A probe package (``probes/<name>/``, e.g. :mod:`probes.representational_collapse`) declares ``PARTS``, a tuple
of :class:`Part` in the order their claims appear in the ledger. Each part is one module of the package, which
declares it with module constants (:func:`part_of`: ``PART_NAME``, ``DESCRIPTION``, ``GATE``, ``FIELDS``,
``NEEDS``) and the functions ``measure`` and ``claims``:

``name``         a short name (``"precision"``), unique in the probe;
``description``  one line for ``python -m probes show`` and the notebooks;
``gate``         the config field that switches the part on (truthy: on), or ``None`` (always runs);
``fields``       the config fields the part reads (beyond the model's): what a user changes to change it;
``measure``      ``measure(ctx) -> None``: adds the part's arrays (``ctx.data``, ``ctx.coords``, ``ctx.attrs``)
                 and scalars (``ctx.scalars``) and may leave intermediate results on ``ctx`` for later parts;
``claims``       ``claims(led, results) -> None``: records the part's claims in ``led`` from ``results``, a
                 tuple of replicate :class:`analysis.probing.base.Result` of one design (one result: its own within-run
                 band), reading the results only (so a cached result is judged again by today's claims).
                 A part judged on one run builds it with :func:`each_claim` from claim functions of one
                 signature, ``claim(led, result) -> None``;
``needs``        names of parts whose ``measure`` must run first (the ledger order stays that of ``PARTS``).

:func:`run_parts` is the probe's ``run``: ``prepare(ctx)`` (the package's shared recipe: models, data), every
part's ``measure`` in ``PARTS`` order moved after what it ``needs``, then one :class:`analysis.probing.base.Result`
whose
ledger is :func:`judge` over that result. :func:`judge` is the probe's ``check_claims_over``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import xarray as xr

from analysis.claims.ledger import Ledger
from analysis.probing.base import Result


@dataclass(frozen=True)
class Part:
    """One sub-experiment of a probe (module docstring)."""

    name: str
    description: str
    measure: Callable[[Context], None] | None = None
    claims: Callable[[Ledger, tuple[Result, ...]], None] | None = None
    gate: str | None = None
    fields: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()

    def enabled(self, config: Any) -> bool:
        """Whether the part runs (and claims) for ``config``: its gate field is truthy, or it has none."""
        return self.gate is None or bool(getattr(config, self.gate))


@dataclass
class Context:
    """What the parts of one run share: the config, a passed model (or ``None``), the arrays, coordinates,
    scalars and meta the result is built from, and anything a part leaves for a later one (attributes)."""

    config: Any
    model: Any = None
    progress: bool = True
    data: dict[str, Any] = field(default_factory=dict)
    coords: dict[str, Any] = field(default_factory=dict)
    scalars: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)  # the dataset's attributes

    @property
    def own_model(self) -> bool:
        """Whether the probe builds its model from the config (no model was passed)."""
        return self.model is None


LAW_STATEMENT = "{subject}: the mean {quantity} is its exact law"  # the statement of predict_law's level
SLOPE_STATEMENT = "{subject}: ln(mean {quantity})'s slope in ln {x} is its law's"  # ... and of its slope


def part_of(module: Any) -> Part:
    """The part a module declares: ``PART_NAME`` (default: the module's own name), ``DESCRIPTION``, ``GATE``
    (default ``None``), ``FIELDS``, ``NEEDS`` and its functions ``measure(ctx)`` and ``claims(led, results)``
    (either may be absent: a part that only measures, or only claims over what another part measured)."""
    return Part(
        name=getattr(module, "PART_NAME", module.__name__.rpartition(".")[2]),
        description=module.DESCRIPTION,
        measure=getattr(module, "measure", None),
        claims=getattr(module, "claims", None),
        gate=getattr(module, "GATE", None),
        fields=tuple(getattr(module, "FIELDS", ())),
        needs=tuple(getattr(module, "NEEDS", ())),
    )


def check_parts(parts: Sequence[Part], config_cls: type) -> None:
    """``ValueError`` unless the parts have unique names, their gates and fields are fields of ``config_cls``
    and what each ``needs`` is an earlier-or-later part of the same tuple (no cycle)."""
    names = [p.name for p in parts]
    if len(set(names)) != len(names):
        raise ValueError(f"part names must be unique, got {names}")
    known = set(config_cls.field_names())
    for p in parts:
        unknown = sorted({f for f in (*p.fields, *((p.gate,) if p.gate else ())) if f not in known})
        if unknown:
            raise ValueError(f"part {p.name!r} names fields the config does not have: {unknown}")
        missing = sorted(set(p.needs) - set(names))
        if missing:
            raise ValueError(f"part {p.name!r} needs parts that do not exist: {missing}")
    measure_order(parts)


def measure_order(parts: Sequence[Part]) -> list[Part]:
    """The parts in ``PARTS`` order, each moved after the parts it ``needs`` (depth first, stable);
    ``ValueError`` on a cycle."""
    by_name = {p.name: p for p in parts}
    order: list[Part] = []
    state: dict[str, int] = {}  # 1 visiting, 2 placed

    def visit(p: Part, path: tuple[str, ...]) -> None:
        if state.get(p.name) == 2:
            return
        if state.get(p.name) == 1:
            raise ValueError(f"parts need each other in a cycle: {' -> '.join((*path, p.name))}")
        state[p.name] = 1
        for n in p.needs:
            visit(by_name[n], (*path, p.name))
        state[p.name] = 2
        order.append(p)

    for p in parts:
        visit(p, ())
    return order


def run_parts(
    name: str,
    parts: Sequence[Part],
    prepare: Callable[[Context], None] | None,
    check_claims: Callable[[Result], Ledger],
    config: Any,
    model: Any = None,
    progress: bool = True,
    finish: Callable[[Context], None] | None = None,
) -> Result:
    """One run of a probe made of ``parts`` (module docstring): ``prepare`` (``None``: nothing shared, every part
    builds its own models), every enabled part's ``measure``,
    ``finish`` (bookkeeping over every part, e.g. whether every trained model came from the cache), the result,
    and its ledger from ``check_claims(result)``."""
    ctx = Context(config=config, model=model, progress=progress)
    if prepare is not None:
        prepare(ctx)
    for part in measure_order(parts):
        if part.measure is not None and part.enabled(config):
            part.measure(ctx)
    if finish is not None:
        finish(ctx)
    data = xr.Dataset(ctx.data, coords=ctx.coords, attrs=ctx.attrs)
    result = Result(probe=name, config=config, data=data, scalars=ctx.scalars, meta=ctx.meta)
    result.ledger = check_claims(result)
    return result


def probe_functions(
    name: str,
    parts: Sequence[Part],
    prepare: Callable[[Context], None] | None = None,
    finish: Callable[[Context], None] | None = None,
    threads: int | None = None,
    check_claims: Callable[[Result], Ledger] | None = None,
) -> tuple[Callable[..., Result], Callable[[Result], Ledger]]:
    """The ``run(config, model=None, progress=True)`` and ``check_claims(result)`` of a probe made of ``parts``: one
    form for every such probe (``run, check_claims = probe_functions(NAME, PARTS, prepare)`` in its package).
    ``check_claims`` judges one run (the replicate seeds of its models are inside it); ``threads``: torch's
    intra-op threads while the run measures (1 for tiny models: fastest, and it fixes the reduction order),
    restored afterwards. A probe whose claims over one run are its claims over replicates of one design passes
    its own ``check_claims`` (returned as given)."""

    def judge_one(result: Result) -> Ledger:
        """Every part's claims on ``result`` (one run: the replicate seeds of its models are inside it)."""
        return judge(name, parts, (result,))

    judged = check_claims if check_claims is not None else judge_one

    def run(config: Any, model: Any = None, progress: bool = True) -> Result:
        """One run: every enabled part measures, then every part's claims are judged (:func:`run_parts`)."""
        before = torch.get_num_threads()
        if threads is not None:
            torch.set_num_threads(threads)
        try:
            return run_parts(name, parts, prepare, judged, config, model=model, progress=progress, finish=finish)
        finally:
            torch.set_num_threads(before)

    return run, judged


def over_replicates(
    seed: int, count: int, measure_one: Callable[[int], Mapping[str, Any]], *, progress: bool, desc: str
) -> dict[str, Any]:
    """``measure_one(replicate_seed(seed, i))`` for ``i < count`` (a progress bar ``desc``), each a mapping of arrays of
    one shape per key, stacked along a new last axis: ``{key: array (..., count)}``."""
    import numpy as np

    from analysis.claims.evidence import replicate_seed
    from analysis.core.progress import bar

    runs = []
    with bar(total=count, progress=progress, desc=desc) as steps:
        for i in range(count):
            runs.append(measure_one(replicate_seed(seed, i)))
            steps.update()
    return {k: np.stack([np.asarray(r[k]) for r in runs], axis=-1) for k in runs[0]}


def measure_replicates(
    ctx: Context, part: str, axis: tuple[str, Sequence[Any]], measure_one: Callable[[int], Mapping[str, Any]]
) -> dict[str, Any]:
    """:func:`over_replicates` of ``measure_one`` over the config's ``<part>_seeds`` replicate seeds of its seed,
    each array ``measure_one`` returns (one value per ``axis`` coordinate) stored under its key as a data variable with
    dims ``(axis name, "<part>_seed")``, the coordinates set; returns everything measured."""
    count = getattr(ctx.config, f"{part}_seeds")
    got = over_replicates(ctx.config.seed, count, measure_one, progress=ctx.progress, desc=f"{part} replicates")
    seed_dim = f"{part}_seed"
    for key, values in got.items():
        ctx.data[key] = ((axis[0], seed_dim), values)
    ctx.coords.update({axis[0]: list(axis[1]), seed_dim: list(range(count))})
    return got


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


def each_claim(*claims: Callable[[Ledger, Result], None], when: Callable[[Result], bool] | None = None):
    """A part's ``claims(led, results)`` judged on one run (the replicate seeds of its models are inside it):
    each of ``claims`` in turn, every one a claim function ``claim(led, result)``; none of them where
    ``when(result)`` is false (e.g. :func:`measured`: the part measured nothing)."""

    def part(led: Ledger, rs: tuple[Result, ...]) -> None:
        (r,) = rs
        if when is None or when(r):
            for claim in claims:
                claim(led, r)

    return part


def measured(variable: str) -> Callable[[Result], bool]:
    """``when`` for :func:`each_claim`: whether the run's data hold ``variable`` (the part measured it)."""
    return lambda r: variable in r.data


def judge(name: str, parts: Sequence[Part], results: Sequence[Result]) -> Ledger:
    """The ledger of ``results`` (replicates of one design): every enabled part's claims, in ``PARTS`` order."""
    rs = tuple(results)
    led = Ledger(name, preset=rs[0].config.preset_name)
    for part in parts:
        if part.claims is not None and part.enabled(rs[0].config):
            part.claims(led, rs)
    return led


def describe(parts: Sequence[Part]) -> Mapping[str, str]:
    """``{part name: "description (gate: field; reads: fields)"}``, for listings."""
    out = {}
    for p in parts:
        extra = [f"gate: {p.gate}"] if p.gate else []
        if p.fields:
            extra.append("reads: " + ", ".join(p.fields))
        out[p.name] = p.description + (f" ({'; '.join(extra)})" if extra else "")
    return out
