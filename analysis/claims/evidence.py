"""Evidence: the one band policy of every prediction, independent replicate seeds, and a verdict's stability.

**The band policy.** A prediction's band is the measurement's own uncertainty at one coverage,
:data:`COVERAGE` (95%, two-sided):

* Over **independent replicates** (seeds of weights and data): the mean of the ``n`` replicate values,
  its standard error ``sd / sqrt(n)`` (``ddof = 1``) and the Student-t multiple with ``n - 1`` degrees of
  freedom (:func:`t_multiple`; 2.78 at 5 seeds, 4.30 at 3). Every claim that depends on trained or
  initialised weights takes its band from replicates.
* A **within-run** standard error (a Monte Carlo SE, a regression SE of one curve, a bootstrap over
  inputs) may stand alone only when the quantity is deterministic given the model, or there is no model
  (a closed form checked by Monte Carlo, a property of one named pretrained network); the claim states
  so (``within_run=`` in :meth:`analysis.claims.ledger.Ledger.predict`) and gives the degrees of freedom of its
  SE (``math.inf`` for a normal limit of many draws).
* A **confidence interval** must be a 95% one (``coverage=COVERAGE``), over replicates or within-run
  under the same rule.

A fixed ``k = 2`` covers about 82% at 3 seeds; the t multiple covers 95% at every ``n``. At 95%, a correct
prediction still fails one time in twenty: :func:`chance_fails` is how many fails the ledger's evaluated
predictions would give by chance alone, and the headline states it.

**Worst of a family.** A claim that a law holds in every one of ``m`` cases (each depth, each loop, each
layer), recorded at the case nearest to failing, would fail by chance in ``1 - 0.95^m`` of its trials at
the per-case 95%: up to 23% at five cases. Such a claim states its family (``family=m`` in
:meth:`analysis.claims.ledger.Ledger.predict` and ``direction``) and its band takes the Sidak per-case coverage
``0.95^(1/m)`` (:func:`family_coverage`), so the family as a whole keeps the one coverage and counts once
among the chance fails.

**Replicate seeds.** Replicate ``i`` of a run with ``--seed s`` uses :func:`replicate_seed` ``(s, i)``:
replicate 0 is ``s`` itself (so a probe's first model keeps its key) and replicate ``i >= 1`` is a
hash of ``(s, i)`` into ``[2**24, 2**30)``. Seeds a user types are small, so two runs with different
seeds below ``2**24`` never share a model (seed ``s`` and ``s + 1`` used to share all but one).

**Stability.** A verdict is evidence only if it survives what should not matter. ``stability`` is the
fraction of resamples of the measurement from its own sampling distribution that reach the same
verdict (a parametric bootstrap: ``m* = m + se t``, ``t`` on :data:`RESAMPLES` fixed quantiles of the
band's Student-t law, the band itself fixed), and 0 when a perturbation at the float rounding scale
(:func:`rounding_step`: :data:`ROUNDING_RTOL` relative, at most a tenth of the band) changes the verdict:
a verdict that last-bit rounding of another CPU can flip is not evidence. A claim below :data:`STABLE_AT` is
``unstable``, not pass or fail. A claim without an uncertainty (a bound, a paper range, a criterion band)
is judged on the rounding check alone.
With a stability below 0.8 the measurement lies within about one SE of its band's edge: another set of
seeds would give the other verdict one time in five or more.
**Sequential replicates.** A claim whose band straddles its decision is not reported as a grey zone: its
declaration (:class:`analysis.claims.specs.ClaimSpec` ``looks``) may name the replicate counts at which it is judged,
``(n_1, ..., n_K)``; a run at ``n_k`` whose claim is undecided is run again at ``n_(k+1)``
(:func:`analysis.probing.sequential.decided_run`), up to ``n_K``, the budget. Looking ``K`` times at a growing sample
at 95% each would exclude a true value more often than 5%, so each look's band is at the per-look coverage
:func:`sequential_coverage` ``(looks)``: the constant coverage at which a true value is excluded at *any* of the
``K`` looks with probability 5% (Pocock's design; computed by simulating Gaussian replicate paths with a fixed
seed, :data:`SEQUENTIAL_PATHS` of them). The overall error rate of every claim, sequential or not, is therefore
the one :data:`COVERAGE`; :func:`sequential_error` gives the simulated rate of any per-look coverage.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import NamedTuple

import numpy as np
from scipy import stats

COVERAGE = 0.95  # the two-sided coverage of every prediction's band
STABLE_AT = 0.8  # a verdict reached by fewer resamples than this is "unstable"
RESAMPLES = 2000  # quantile points of the parametric bootstrap (deterministic)
# Relative perturbation of a measurement standing for another platform's rounding: 4x the largest relative
# move (2.4e-5) seen when the summation order of a float32 probe changed (attention blocks of 1024 -> 256 rows).
ROUNDING_RTOL = 1e-4
SEQUENTIAL_PATHS = 200_000  # simulated Gaussian replicate paths behind sequential_coverage (fixed seed)
SEED_SPACE = (2**24, 2**30)  # where replicate seeds i >= 1 lie: above any seed a user types, below MAX_SEED


class MeanSE(NamedTuple):
    """Mean, standard error and count of independent replicates (``se`` is nan below two)."""

    mean: float
    se: float
    n: int

    @property
    def dof(self) -> float:
        return float(self.n - 1)


def t_multiple(dof: float, coverage: float = COVERAGE) -> float:
    """``k`` such that ``estimate ± k se`` covers the truth with probability ``coverage`` (two-sided), for an
    SE with ``dof`` degrees of freedom (Student t; ``math.inf``: the normal limit, 1.96 at 95%)."""
    if isinstance(dof, bool) or not isinstance(dof, int | float | np.integer | np.floating):
        raise ValueError(f"dof must be a number of degrees of freedom >= 1 (or math.inf), got {dof!r}")
    dof = float(dof)
    if math.isnan(dof) or dof < 1:
        raise ValueError(f"dof must be >= 1 (or math.inf), got {dof!r}: a standard error needs two replicates")
    if not 0 < coverage < 1:
        raise ValueError(f"coverage must be in (0, 1), got {coverage!r}")
    q = 0.5 + coverage / 2
    return float(stats.norm.ppf(q)) if math.isinf(dof) else float(stats.t.ppf(q, dof))


def family_coverage(family: int, coverage: float = COVERAGE) -> float:
    """The per-case coverage ``coverage^(1/family)`` (Sidak) at which ``family`` independent cases all keep
    their bands with probability ``coverage``: the band of a claim recorded at the worst of ``family`` cases."""
    if isinstance(family, bool) or not isinstance(family, int | np.integer) or family < 1:
        raise ValueError(
            f"family must be an integer >= 1 (the number of cases the worst is taken over), got {family!r}"
        )
    return float(coverage ** (1.0 / int(family)))


def check_looks(looks) -> tuple[int, ...]:
    """``looks`` as a tuple of replicate counts: integers >= 2, strictly increasing (``ValueError`` otherwise)."""
    if isinstance(looks, str | bytes) or not hasattr(looks, "__iter__"):
        raise ValueError(f"looks must be increasing replicate counts >= 2, got {looks!r}")
    out = tuple(looks)
    if not out or any(isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 2 for n in out):
        raise ValueError(f"looks must be increasing replicate counts >= 2, got {looks!r}")
    if any(b <= a for a, b in zip(out, out[1:], strict=False)):
        raise ValueError(f"looks must be strictly increasing, got {looks!r}")
    return tuple(int(n) for n in out)


@lru_cache(maxsize=64)
def _paths(n_max: int) -> np.ndarray:
    """:data:`SEQUENTIAL_PATHS` standard-normal replicate paths of length ``n_max`` (a fixed seed)."""
    rng = np.random.default_rng(np.random.SeedSequence([0x5E9, n_max]))
    return rng.standard_normal((SEQUENTIAL_PATHS, n_max))


@lru_cache(maxsize=64)
def _look_t(looks: tuple[int, ...]) -> np.ndarray:
    """``|mean| / SE`` of every simulated path at every look, shape ``(paths, looks)``, truth 0."""
    x = _paths(looks[-1])
    c = np.cumsum(x, axis=1)
    c2 = np.cumsum(x * x, axis=1)
    out = np.empty((x.shape[0], len(looks)))
    for j, n in enumerate(looks):
        mean = c[:, n - 1] / n
        var = (c2[:, n - 1] - n * mean * mean) / (n - 1)
        out[:, j] = np.abs(mean) / np.sqrt(np.maximum(var, 0.0) / n)
    return out


def sequential_error(looks, coverage_per_look: float) -> float:
    """The simulated probability that a true value falls outside the band at any of ``looks`` (replicate counts,
    each band the Student-t band at ``coverage_per_look`` over the replicates so far): the error rate of a
    sequential design (module docstring) whose bands are at that coverage."""
    looks = check_looks(looks)
    if not 0 < coverage_per_look < 1:
        raise ValueError(f"coverage_per_look must be in (0, 1), got {coverage_per_look!r}")
    k = np.array([t_multiple(n - 1, coverage_per_look) for n in looks])
    return float(np.mean((_look_t(looks) > k).any(axis=1)))


@lru_cache(maxsize=256)
def _sequential_coverage(looks: tuple[int, ...], coverage: float) -> float:
    if len(looks) == 1:
        return coverage
    lo, hi = coverage, 1 - (1 - coverage) / len(looks) / 4  # Bonferroni's per-look coverage errs below 1 - coverage
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if sequential_error(looks, mid) > 1 - coverage else (lo, mid)
    return hi


def sequential_coverage(looks, coverage: float = COVERAGE) -> float:
    """The per-look coverage of a sequential design judged at the replicate counts ``looks``: the smallest at which
    a true value leaves the band at any look with probability at most ``1 - coverage`` (module docstring). One look:
    ``coverage`` itself. Deterministic (a fixed simulation): 0.9812 for looks (3, 6, 12), where 95% at each look
    would exclude a true value at some look 12% of the time."""
    looks = check_looks(looks)
    if not 0 < coverage < 1:
        raise ValueError(f"coverage must be in (0, 1), got {coverage!r}")
    return _sequential_coverage(looks, float(coverage))


def next_look(looks, n: int) -> int | None:
    """The replicate count of the look after a run at ``n`` replicates; None at the last look or off the schedule
    (a run whose count is not one of ``looks`` is judged as it is)."""
    looks = check_looks(looks)
    if n not in looks or n == looks[-1]:
        return None
    return looks[looks.index(n) + 1]


def mean_se(values: Iterable[float]) -> MeanSE:
    """Mean and standard error (``ddof = 1``) of independent replicate values, in float64. A nan value
    makes both nan (the claim then fails as unmeasured); one value has a nan SE."""
    x = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError("values must hold at least one replicate")
    se = float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else math.nan
    return MeanSE(float(x.mean()), se, int(x.size))


def t_band(values, axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, half-width)`` over the replicates along ``axis`` of an array, per remaining index: the mean and
    its 95% Student-t half-width ``t(95%, n - 1) x SE`` (the band of :func:`mean_se` for many cases at once, what
    a figure draws as a seed band; the half-width is nan with one replicate, and a nan value makes its case nan)."""
    x = np.moveaxis(np.asarray(values, dtype=np.float64), axis, -1)
    n = x.shape[-1]
    if n == 0:
        raise ValueError("values must hold at least one replicate along axis")
    mean = x.mean(-1)
    if n == 1:
        return mean, np.full(mean.shape, math.nan)
    return mean, t_multiple(n - 1) * x.std(-1, ddof=1) / math.sqrt(n)


def seed_z(values, axis: int = -1) -> np.ndarray:
    """Per case, the mean over the replicates along ``axis`` in units of its standard error (signed): how far
    each case's seed mean sits from 0, the measure by which a worst-of claim picks the case nearest to failing
    (:func:`worst_case`). ``+-inf`` where the replicates agree exactly (SE 0) on a non-zero mean (a decisive
    case, never dropped); NaN where they agree on 0, with fewer than two replicates, or where a value is NaN."""
    x = np.moveaxis(np.asarray(values, dtype=np.float64), axis, -1)
    n = x.shape[-1]
    if n < 2:
        return np.full(x.shape[:-1], math.nan)
    mean, se = x.mean(-1), x.std(-1, ddof=1) / math.sqrt(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(se > 0, mean / np.where(se > 0, se, 1.0), np.where(mean != 0, np.sign(mean) * np.inf, np.nan))


def worst_case(z) -> int | None:
    """Flat index of the largest ``z`` (e.g. :func:`seed_z`, signed so that larger is nearer to failing) among the
    cases that have one (NaN marks a case that is not a candidate); ``None`` when no case has one."""
    flat = np.asarray(z, dtype=np.float64).ravel()
    ok = ~np.isnan(flat)
    return int(np.flatnonzero(ok)[np.argmax(flat[ok])]) if ok.any() else None


def family_size(z) -> int:
    """How many cases a worst-of claim over ``z`` was chosen among (those with a ``z``, at least 1): its Sidak
    family, ``family=`` in :meth:`analysis.claims.ledger.Ledger.predict` (:func:`family_coverage`)."""
    return max(int((~np.isnan(np.asarray(z, dtype=np.float64))).sum()), 1)


def replicate_seed(seed: int, index: int) -> int:
    """The seed of replicate ``index`` of a run with seed ``seed`` (module docstring): ``seed`` itself for
    replicate 0, a hash of ``(seed, index)`` into :data:`SEED_SPACE` otherwise."""
    for name, v in (("seed", seed), ("index", index)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {v!r}")
    if index == 0:
        return int(seed)
    lo, hi = SEED_SPACE
    word = np.random.SeedSequence([int(seed), int(index), 0x5EED]).generate_state(2, np.uint32)
    return lo + int((int(word[0]) << 32 | int(word[1])) % (hi - lo))


def replicate_seeds(seed: int, n: int) -> list[int]:
    """Seeds of replicates ``0 .. n - 1`` of a run with seed ``seed``."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n (number of replicates) must be an integer >= 1, got {n!r}")
    return [replicate_seed(seed, i) for i in range(int(n))]


def chance_fails(n_two_sided: int, n_one_sided: int = 0, coverage: float = COVERAGE) -> float:
    """Expected number of fails among correct predictions from the band's coverage alone: ``1 - coverage``
    of the two-sided ones and at most half that of the one-sided ones (a sign fails only on one side)."""
    return (1 - coverage) * n_two_sided + (1 - coverage) / 2 * n_one_sided


def resample_quantiles(dof: float, n: int = RESAMPLES) -> np.ndarray:
    """``n`` fixed quantiles (midpoints ``(i + 1/2) / n``) of Student's t with ``dof`` degrees of freedom."""
    q = (np.arange(n) + 0.5) / n
    return stats.norm.ppf(q) if math.isinf(dof) else stats.t.ppf(q, dof)


def stability(
    verdict_at: Callable[[float], str],
    measured: float,
    *,
    se: float | None = None,
    dof: float = math.inf,
    scale: float = 0.0,
    width: float | None = None,
) -> dict:
    """The stability record of a verdict (module docstring).

    ``verdict_at(m)`` is the verdict the claim would reach had it measured ``m`` (its band fixed).
    ``se``/``dof`` give the measurement's sampling law (None: no uncertainty, the rounding check alone);
    ``scale`` is the size of the numbers behind the measurement (the expected value, bound or alternative)
    and ``width`` the half-width of the claim's band (None for a bound or a range): the rounding perturbation
    is :func:`rounding_step`.
    """
    verdict = verdict_at(measured)
    delta = rounding_step(measured, scale, width)
    rounding = all(verdict_at(measured + s * delta) == verdict for s in (-1.0, 1.0))
    record: dict = {"verdict": verdict, "rounding": bool(rounding)}
    if se is not None and math.isfinite(se) and se > 0:
        t = resample_quantiles(dof)
        same = sum(verdict_at(float(measured + se * ti)) == verdict for ti in t)
        record.update(method="resample", resamples=len(t), resampled=float(same / len(t)))
        value = record["resampled"]
    else:
        record.update(method="rounding")
        value = 1.0
    record["value"] = float(value) if rounding else 0.0
    return record


def rounding_step(measured: float, scale: float = 0.0, width: float | None = None) -> float:
    """The perturbation standing for another platform's rounding: ``ROUNDING_RTOL max(|measured|, |scale|)``,
    at most a tenth of the band's half-width ``width`` where the claim has a band. A band narrower than the
    relative step (a measurement resolved to better than 1e-4: a float64 sum, a paired difference of seeds that
    agree to 1e-5) states the precision its own computation reaches; a tenth of it is then what rounding may
    move it, and a measurement that close to the band's edge is still flagged."""
    step = ROUNDING_RTOL * max(abs(measured), abs(scale))
    if width is not None and math.isfinite(width) and width >= 0:  # a zero band (five seeds all at 1.0): exact
        step = min(step, width / 10)
    return step
