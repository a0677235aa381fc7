"""Independent replicates of one probe configuration, and the ledger judged over them.

A theorem about a class of networks (untrained at a given initialisation, or trained by a given recipe) is
a statement about the distribution of a measured quantity over the weights. One model tells us that
quantity for one draw only: its within-run standard error (over inputs, bootstrap resamples, samples) says
nothing about how much another draw of weights would move it. :func:`replicated_run` runs a configuration
at ``n`` independent seeds (:func:`analysis.claims.evidence.replicate_seed`: replicate 0 is the configuration's own
seed, so its cached result is reused; the others share no model with any other run) and
:class:`Replicates` holds the results. Its ``ledger`` is the probe's ``check_claims_over(results)``: each
claim's value is measured once per replicate and its band is the seed-to-seed spread (``replicates=`` in
:meth:`analysis.claims.ledger.Ledger.predict`), under the one band policy of :mod:`analysis.claims.evidence`.

A probe opts in by defining

* ``check_claims_over(results) -> Ledger``: the claims over one or more replicate results (with one result
  it is the probe's ``check_claims``);
* optionally ``replicate_config(config, index) -> Config``: the configuration of replicate ``index``
  (default: ``config`` with ``seed = replicate_seed(config.seed, index)``). A probe uses it to skip, for
  ``index >= 1``, measurements whose claims are made on replicate 0 only (stated in those claims).

Each replicate goes through the result cache (:func:`analysis.probing.base.cached_run`) like any other run, so an
interrupted set resumes where it stopped and a warm rerun computes nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from analysis.claims.evidence import replicate_seed, t_band
from analysis.claims.ledger import Claim, Ledger
from analysis.core.progress import bar
from analysis.core.validation import check_int
from analysis.probing.base import Result, _resolve, _resolve_config, cache_key, cached_run

__all__ = ["Replicates", "replicate_configs", "replicated_run", "takes_worst", "worst_of"]


@dataclass(frozen=True)
class Replicates:
    """Results of one configuration at independent seeds (``results[0]`` at the configuration's own seed).

    ``data``, ``scalars``, ``config`` and ``meta`` are replicate 0's (what a figure draws as "the model");
    ``ledger`` is judged over all of them."""

    module: Any
    results: tuple[Result, ...]

    def __post_init__(self) -> None:
        if not self.results:
            raise ValueError("results must hold at least one replicate result")
        if not callable(getattr(self.module, "check_claims_over", None)):
            name = getattr(self.module, "NAME", self.module)
            raise ValueError(f"probe {name!r} has no check_claims_over(results): it cannot judge replicates")

    @property
    def main(self) -> Result:
        return self.results[0]

    # the first replicate's dataset, scalars, config and meta (what one run of the design shows)
    data = property(lambda self: self.main.data)
    scalars = property(lambda self: self.main.scalars)
    config = property(lambda self: self.main.config)
    meta = property(lambda self: self.main.meta)

    @property
    def seeds(self) -> list[int]:
        return [int(r.config.seed) for r in self.results]

    @property
    def keys(self) -> list[str]:
        """The result-cache keys of the replicates, in order (a figure's inputs)."""
        return [cache_key(self.module, r.config) for r in self.results]

    def inputs(self, tag: str) -> dict[str, str]:
        """``{"<tag> seed <s>": cache key}`` for every replicate: a figure's ``inputs`` provenance."""
        return {f"{tag} seed {s}": k for s, k in zip(self.seeds, self.keys, strict=True)}

    def spread(self, scalar: str) -> tuple[float, float]:
        """``(mean, half-width)`` of the scalar ``scalar`` over the replicates: the seed mean and its 95% t
        interval's half-width (:mod:`analysis.claims.evidence`; nan with one replicate), what a figure draws beside
        replicate 0's within-run interval."""
        if scalar not in self.main.scalars:
            raise ValueError(f"scalar must be one of the result's scalars {sorted(self.main.scalars)}, got {scalar!r}")
        mean, half = t_band([float(r.scalars[scalar]) for r in self.results])
        return float(mean), float(half)

    @cached_property
    def ledger(self) -> Ledger:
        return self.module.check_claims_over(self.results)


def replicate_configs(module: Any, config: Any, n: int) -> list:
    """The configurations of replicates ``0 .. n - 1`` of ``config`` (replicate 0 is ``config`` itself)."""
    check_int("n", n, minimum=1)
    hook = getattr(module, "replicate_config", None)
    out = [config]
    for i in range(1, n):
        c = hook(config, i) if hook is not None else config.replace(seed=replicate_seed(config.seed, i))
        if c.seed != replicate_seed(config.seed, i):
            raise ValueError(f"replicate_config must give replicate {i} the seed replicate_seed(seed, {i})")
        out.append(c)
    return out


def replicated_run(
    module_or_name: Any,
    config: Any,
    n: int,
    cache_root: str | os.PathLike | None = None,
    progress: bool = True,
) -> Replicates:
    """``config`` run at ``n`` independent seeds through the result cache (see the module docstring)."""
    module, name = _resolve(module_or_name)
    config = _resolve_config(module, name, config)
    configs = replicate_configs(module, config, n)
    results = []
    for c in bar(configs, progress=progress and n > 1, desc=f"{name} replicates"):
        results.append(cached_run(module, c, cache_root=cache_root, progress=False))
    return Replicates(module, tuple(results))


def takes_worst(claim: Claim) -> bool:
    """True for a claim that must hold on every model, so :func:`worst_of` its replicates stands for all: an
    identity, a bound, or a scope check measured as a bound."""
    return claim.role in ("identity", "bound") or (claim.role == "scope" and claim.kind == "bound")


def worst_of(claims: list[Claim]) -> Claim:
    """The record of an identity or a bound measured once per replicate: it must hold on every model, so the
    replicate's record that is furthest from holding stands for all (an unmeasured one first, then a failing
    one, then the largest deviation from the identity or the measurement nearest the bound's wrong side),
    its statement marked "worst of n seeds". One claim is returned as it is."""
    if not claims:
        raise ValueError("claims must hold one record per replicate")
    names = {(c.context, c.name, c.role) for c in claims}
    if len(names) != 1:
        raise ValueError(f"worst_of takes the records of one claim, got {sorted(names)}")
    if len(claims) == 1:
        return claims[0]
    first = claims[0]
    if not takes_worst(first):
        raise ValueError(
            f"worst_of takes identities and bounds (a scope check's too), got the {first.role} {first.name!r}"
        )

    def badness(c: Claim) -> tuple:
        if c.outcome is None or c.measured is None:
            return (2, 0.0)
        if first.role == "identity":
            spread = abs(c.measured - c.expected) if isinstance(c.expected, int | float) else 0.0
        else:
            upper = c.tolerance.get("relation", "<=") in ("<=", "<")
            spread = c.measured if upper else -c.measured
        return (0 if c.outcome else 1, spread)

    worst = max(claims, key=badness)  # the first of equals: replicate order
    return replace(worst, statement=f"{worst.statement} (worst of {len(claims)} seeds)")
