"""The test suite's two tiers: one set of test functions, run at two settings.

``make test`` runs the **fast** tier (every test function, at settings chosen for speed: few generated examples,
smoke presets, shared fixtures, a budget per test of 30 s of CPU time and 60 s on the wall clock);
``make test-thorough`` runs the **thorough** tier (the same functions with many generated examples that change from
run to run, the full-preset runs, every notebook through the figure pipeline, no budget). ``WORKBENCH_TEST_TIER``
chooses (``fast`` when unset); the hypothesis profile of the same name is loaded by ``tests/conftest.py``.

A test reads its setting from :data:`TIER` (``from tier import TIER``) instead of carrying a quick and a slow copy
of itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

ENV = "WORKBENCH_TEST_TIER"
BUDGET_ENV = "WORKBENCH_TEST_BUDGET_S"  # seconds: overrides the tier's per-test budget (a slower machine, a test)


@dataclass(frozen=True)
class Tier:
    name: str
    examples: int  # hypothesis examples of a cheap property (a config validated, a command line parsed)
    probe_examples: int  # generated configs each probe runs end to end (tests/test_properties.py)
    budget_s: float | None  # CPU seconds: a test's setup or call doing more work fails the run (None: no budget)

    @property
    def wall_budget_s(self) -> float | None:
        """Wall-clock seconds: a setup or call waiting longer than this fails the run (twice the CPU budget: a
        busy machine stretches the wall clock, not the work)."""
        return None if self.budget_s is None else 2 * self.budget_s

    @property
    def fast(self) -> bool:
        return self.name == "fast"

    # What the thorough tier does and the fast tier does not, each named where a test reads it.
    @property
    def derandomize(self) -> bool:
        """The same examples every run (fast: a failure reproduces), else new ones each run."""
        return self.fast

    @property
    def every_notebook(self) -> bool:
        """The figure pipeline renders every committed notebook (else the small ones)."""
        return not self.fast

    @property
    def full_runs(self) -> bool:
        """Tests may run a probe's full preset (else they read the committed full-preset fixture)."""
        return not self.fast

    @property
    def whole_files_after_walkthrough(self) -> bool:
        """After CONTRIBUTING's worked example, every test file it edited runs whole (else only its own checks)."""
        return not self.fast

    @property
    def subprocess_every_case(self) -> bool:
        """Every command-line case in a fresh interpreter (else the first of each probe)."""
        return not self.fast


TIERS: dict[str, Tier] = {
    "fast": Tier(name="fast", examples=25, probe_examples=3, budget_s=30.0),
    "thorough": Tier(name="thorough", examples=300, probe_examples=200, budget_s=None),
}


def tier_from_env(environ=os.environ) -> Tier:
    """The tier ``WORKBENCH_TEST_TIER`` names; a ``ValueError`` of one line for any other value."""
    name = environ.get(ENV, "fast")
    if name not in TIERS:
        raise ValueError(f"{ENV} must be one of {sorted(TIERS)}, got {name!r}")
    return TIERS[name]


def budget_from_env(tier: Tier, environ=os.environ) -> float | None:
    """The per-test budget: ``WORKBENCH_TEST_BUDGET_S`` when set (a number > 0), else the tier's."""
    text = environ.get(BUDGET_ENV)
    if text is None:
        return tier.budget_s
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{BUDGET_ENV} must be a number of seconds > 0, got {text!r}")
    return value


# The session's tier. An unknown name leaves the fast tier here, but conftest.pytest_configure stops the run
# with tier_from_env's one line before any test module is imported.
TIER: Tier = TIERS.get(os.environ.get(ENV, "fast"), TIERS["fast"])
