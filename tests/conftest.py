"""Test-suite configuration: the tier, hypothesis's profiles, the session's caches and the time budget.

**Tiers** (``tests/tier.py``): ``WORKBENCH_TEST_TIER=fast`` (the default; ``make test``) or ``thorough``
(``make test-thorough``) chooses the settings every test reads from ``tier.TIER`` and loads the hypothesis profile
of the same name: few examples drawn the same way every run (a failure reproduces) in the fast tier, many examples
drawn afresh each run in the thorough tier. Any other value stops the run with one line naming the allowed values.

**Caches.** Tests never touch the repository's own caches or figures. Every session shares one result and
checkpoint cache (``WORKBENCH_CACHE``; with pytest-xdist, one for all workers; ``WORKBENCH_TEST_CACHE`` names it,
as ``make test`` does so that nbval runs the notebooks on the cache the tests warmed), so each probe's smoke result
is computed once (the ``smoke_result`` fixture) and read by the contract, falsification and probe tests; a test
that needs an empty cache makes its own. Figures go to a per-worker folder (``WORKBENCH_FIGURES``). Hypothesis's
``.hypothesis/`` folder (its example database and the constants its pytest plugin reads while collecting) goes to
a temporary folder, removed at the end.

**Budget.** In the fast tier a test whose setup or call does more than ``TIER.budget_s`` of work (30 s of CPU
time: its process's, all threads, plus the child processes it waited for; ``WORKBENCH_TEST_BUDGET_S`` overrides it)
or waits longer than ``TIER.wall_budget_s`` (twice that, on the wall clock) fails the run. CPU time is the measure
because it does not grow when the machine is busy with other work (another xdist worker, a neighbouring job) or
when a test waits for a lock another worker holds; the wall-clock ceiling catches a test that sleeps or hangs. The
offenders are listed after pytest's last line, where a log's tail shows them. A slow test gets a fast setting; it
does not leave the fast tier.
"""

from __future__ import annotations

import dataclasses
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.configuration import set_hypothesis_home_dir

import tier as tiers

_HYPOTHESIS_HOME: str | None = None
_OVER_BUDGET: list[tuple[str, str, float, float]] = []  # (test, phase, CPU s, wall s) over the fast tier's budget


def _register_hypothesis_profiles() -> None:
    for t in tiers.TIERS.values():
        settings.register_profile(
            t.name,
            max_examples=t.examples,
            derandomize=t.derandomize,
            database=None if t.derandomize else settings.default.database,
            deadline=None,  # wall-clock deadlines flake on a loaded 2-core machine; the budget below times tests
            print_blob=True,  # a failure in the thorough tier prints the @reproduce_failure line
            suppress_health_check=[HealthCheck.too_slow],
        )


def pytest_configure(config):
    try:
        tier = tiers.tier_from_env()
        tiers.TIER = dataclasses.replace(tier, budget_s=tiers.budget_from_env(tier))
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None
    # before collection: hypothesis's plugin writes .hypothesis/constants while collecting
    global _HYPOTHESIS_HOME
    _HYPOTHESIS_HOME = tempfile.mkdtemp(prefix="workbench-hypothesis-")
    set_hypothesis_home_dir(_HYPOTHESIS_HOME)
    _register_hypothesis_profiles()
    settings.load_profile(tiers.TIER.name)
    if os.environ.get("PYTEST_XDIST_WORKER"):  # one torch thread per worker: the workers share the cores
        import torch

        torch.set_num_threads(1)


def pytest_unconfigure(config):
    _report_over_budget(config)
    set_hypothesis_home_dir(None)
    if _HYPOTHESIS_HOME is not None:
        shutil.rmtree(_HYPOTHESIS_HOME, ignore_errors=True)


def pytest_report_header(config):
    budget = f"{tiers.TIER.budget_s:g} s per test" if tiers.TIER.budget_s else "none"
    return f"test tier: {tiers.TIER.name} (hypothesis profile {tiers.TIER.name}; budget: {budget})"


def _cpu_seconds() -> float:
    """CPU time of this process (every thread) and of the child processes it has waited for."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


_CPU_AT_START = pytest.StashKey[float]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    item.stash[_CPU_AT_START] = _cpu_seconds()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    item.stash[_CPU_AT_START] = _cpu_seconds()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if call.when in ("setup", "call") and _CPU_AT_START in item.stash:
        report.cpu_s = _cpu_seconds() - item.stash[_CPU_AT_START]  # an attribute pytest-xdist carries across
    return report


def pytest_runtest_logreport(report):
    budget = tiers.TIER.budget_s
    if budget is None or report.when not in ("setup", "call"):
        return
    cpu = getattr(report, "cpu_s", 0.0)
    if cpu > budget or report.duration > tiers.TIER.wall_budget_s:
        _OVER_BUDGET.append((report.nodeid, report.when, cpu, report.duration))


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")  # a pytest-xdist worker: the controller judges the budget


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    if _OVER_BUDGET and not _is_worker(session.config) and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _report_over_budget(config) -> None:
    """After pytest's last line (the counts), so that the tail of a log names the tests over the budget."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if not _OVER_BUDGET or _is_worker(config) or reporter is None:
        return
    tier = tiers.TIER
    reporter.write_sep(
        "=",
        f"over the {tier.name} tier's budget of {tier.budget_s:g} s of CPU time or {tier.wall_budget_s:g} s of "
        "wall-clock time per test",
        red=True,
    )
    for nodeid, when, cpu, wall in sorted(_OVER_BUDGET, key=lambda r: -max(r[2], r[3])):
        reporter.write_line(f"{cpu:7.1f} s CPU  {wall:7.1f} s wall  {when:<5}  {nodeid}")
    reporter.write_line("give each a fast setting (tests/tier.py); the thorough tier has no budget")


def _session_cache(tmp_path_factory) -> Path:
    """The session's cache folder: ``WORKBENCH_TEST_CACHE`` when set, else one under pytest's temporary folder
    shared by every xdist worker of this run."""
    given = os.environ.get("WORKBENCH_TEST_CACHE")
    if given:
        return Path(given).resolve()
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # .../pytest-N/popen-gw0 -> .../pytest-N, the same for every worker
    return base / "session-cache"


@pytest.fixture(scope="session", autouse=True)
def _isolated_workbench_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("workbench")
    old = {k: os.environ.get(k) for k in ("WORKBENCH_CACHE", "WORKBENCH_FIGURES")}
    os.environ["WORKBENCH_CACHE"] = str(_session_cache(tmp_path_factory))
    os.environ["WORKBENCH_FIGURES"] = str(root / "figures")
    yield
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture
def patch_in_package(monkeypatch):
    """``patch(package, name, value)``: stand ``value`` in for ``name`` in every module of the probe package
    ``package`` that holds it (each module of a probe package imports what it calls, so a spy or a stub must
    stand in each of them); undone at the end of the test like any ``monkeypatch``. Returns the patched
    modules."""
    import importlib
    import pkgutil

    def patch(package, name: str, value) -> list:
        names = [f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__)]
        holders = [m for m in map(importlib.import_module, names) if name in vars(m)]
        if not holders:  # a stand-in that stands nowhere would leave the test checking nothing
            raise AssertionError(f"no module of {package.__name__} holds {name!r}")
        for module in holders:
            monkeypatch.setattr(module, name, value)
        return holders

    return patch


@pytest.fixture(scope="session")
def smoke_result():
    """``smoke_result(name)``: probe ``name``'s smoke-preset result, computed once per session in the session's
    cache (by whichever worker asks first; the other waits on the entry's lock and reads it) and read from there
    afterwards. Each call loads a fresh copy, so a test that plants numbers in it changes nobody else's."""
    import probes

    def get(name: str):
        return probes.cached_run(name, "smoke", progress=False)

    return get
