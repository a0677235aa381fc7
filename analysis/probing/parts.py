"""Parts: the sub-experiments a probe package is made of, and the one run skeleton they share.

A probe package (``probes/<name>/``, e.g. :mod:`probes.representational_collapse`) declares ``PARTS``, a tuple
of :class:`Part` in the order their claims appear in the ledger. Each part is one module of the package, which
declares it with module constants (:func:`part_of`: ``PART_NAME``, ``DESCRIPTION``, ``GATE``, ``FIELDS``,
``NEEDS``, ``PROVIDES``) and the functions ``measure`` and ``claims``:

``name``         a short name (``"precision"``), unique in the probe;
``description``  one line for ``python -m probes show`` and the notebooks;
``gate``         the config field that switches the part on (truthy: on), or ``None`` (always runs);
``fields``       the config fields the part reads (beyond the model's): what a user changes to change it;
``measure``      ``measure(ctx) -> None``: adds the part's arrays (``ctx.data``, ``ctx.coords``, ``ctx.attrs``)
                 and scalars (``ctx.scalars``), and may leave typed values for later parts (``ctx.put(value)``,
                 read back with ``ctx.get(Type)``);
``provides``     the types of the values ``measure`` leaves (``PROVIDES``; checked after it runs);
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
from typing import Any, TypeVar

import torch
import xarray as xr

from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from analysis.probing.part_laws import (  # noqa: F401  (re-exported: parts import them from here)
    LAW_STATEMENT,
    SLOPE_STATEMENT,
    Measured,
    log_slopes,
    paired_log_slope,
    paired_with_law,
    predict_law,
    predict_law_and_slope,
)


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
    provides: tuple[type, ...] = ()

    def enabled(self, config: Any) -> bool:
        """Whether the part runs (and claims) for ``config``: its gate field is truthy, or it has none."""
        return self.gate is None or bool(config.value_of(self.gate))


T = TypeVar("T")


@dataclass
class Context:
    """What the parts of one run share: the config, a passed model (or ``None``), the arrays, coordinates,
    scalars and meta the result is built from, and the typed values a part leaves for later ones (:meth:`put`,
    :meth:`get`: one value per type, each a dataclass the producing module defines). Nothing else can be set on it.
    """

    config: Any
    model: Any = None
    progress: bool = True
    data: dict[str, Any] = field(default_factory=dict)
    coords: dict[str, Any] = field(default_factory=dict)
    scalars: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)  # the dataset's attributes
    shared: dict[type, Any] = field(default_factory=dict)  # what parts leave for later ones, by type

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self.__dataclass_fields__:
            raise AttributeError(f"Context has no field {name!r}: a part leaves a value for later parts with ctx.put")
        super().__setattr__(name, value)

    def put(self, value: Any) -> None:
        """Leave ``value`` for later parts, under its type (one value per type; a second of the same type replaces
        the first)."""
        self.shared[type(value)] = value

    def get(self, kind: type[T]) -> T:
        """The value of type ``kind`` that an earlier part (or the probe's ``prepare``) left; ``LookupError`` naming
        the type when none did."""
        if kind not in self.shared:
            raise LookupError(f"no {kind.__name__} in this run: the part that provides it did not run first")
        return self.shared[kind]

    @property
    def own_model(self) -> bool:
        """Whether the probe builds its model from the config (no model was passed)."""
        return self.model is None


def part_of(module: Any) -> Part:
    """The part a module declares: ``PART_NAME`` (default: the module's own name), ``DESCRIPTION``, ``GATE``
    (default ``None``), ``FIELDS``, ``NEEDS``, ``PROVIDES`` and its functions ``measure(ctx)`` and
    ``claims(led, results)`` (either may be absent: a part that only measures, or only claims over what another part
    measured)."""
    return Part(
        name=getattr(module, "PART_NAME", module.__name__.rpartition(".")[2]),
        description=module.DESCRIPTION,
        measure=getattr(module, "measure", None),
        claims=getattr(module, "claims", None),
        gate=getattr(module, "GATE", None),
        fields=tuple(getattr(module, "FIELDS", ())),
        needs=tuple(getattr(module, "NEEDS", ())),
        provides=tuple(getattr(module, "PROVIDES", ())),
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
            missing = [k.__name__ for k in part.provides if k not in ctx.shared]
            if missing:
                raise RuntimeError(f"part {part.name!r} declares PROVIDES {missing} but did not put them")
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
    count = ctx.config.value_of(f"{part}_seeds")
    got = over_replicates(ctx.config.seed, count, measure_one, progress=ctx.progress, desc=f"{part} replicates")
    seed_dim = f"{part}_seed"
    for key, values in got.items():
        ctx.data[key] = ((axis[0], seed_dim), values)
    ctx.coords.update({axis[0]: list(axis[1]), seed_dim: list(range(count))})
    return got


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
