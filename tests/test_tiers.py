"""The suite's own machinery (tests/tier.py, tests/conftest.py): the tier a run chooses, its hypothesis profile,
the per-test budget of the fast tier, the session's shared smoke results and the committed full-preset fixtures."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import settings

from analysis.core.paths import REPO

from tier import BUDGET_ENV, ENV, TIER, TIERS, budget_from_env, tier_from_env

TESTS = Path(__file__).resolve().parent


def _pytest(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """pytest in a fresh interpreter on ``folder`` (its own rootdir: no project options), with ``env`` on top of
    this process's environment."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", str(folder), *args],
        cwd=folder,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def suite_copy(tmp_path) -> Path:
    """A folder holding this suite's conftest.py and tier.py beside one test that sleeps 0.6 s."""
    for name in ("conftest.py", "tier.py"):
        shutil.copy(TESTS / name, tmp_path / name)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # the rootdir: the project's addopts stay out
    (tmp_path / "test_sleeps.py").write_text(
        textwrap.dedent(
            """\
            import time

            def test_sleeps_a_while():
                time.sleep(0.6)

            def test_is_quick():
                pass
            """
        )
    )
    return tmp_path


@pytest.mark.parametrize(("value", "name"), [(None, "fast"), ("fast", "fast"), ("thorough", "thorough")])
def test_the_environment_chooses_the_tier(value, name):
    environ = {} if value is None else {ENV: value}
    assert tier_from_env(environ) is TIERS[name]


def test_an_unknown_tier_stops_the_run_with_one_line_naming_the_allowed_values(suite_copy):
    res = _pytest(suite_copy, {ENV: "medium"})
    assert res.returncode == pytest.ExitCode.USAGE_ERROR, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert lines == ["ERROR: WORKBENCH_TEST_TIER must be one of ['fast', 'thorough'], got 'medium'"], res.stderr
    with pytest.raises(ValueError, match=r"^WORKBENCH_TEST_BUDGET_S must be a number of seconds > 0, got 'soon'$"):
        budget_from_env(TIERS["fast"], {BUDGET_ENV: "soon"})


def test_the_loaded_hypothesis_profile_is_the_tiers():
    assert settings.default.max_examples == TIER.examples and settings.default.derandomize == TIER.derandomize
    for tier in TIERS.values():
        profile = settings.get_profile(tier.name)
        assert profile.max_examples == tier.examples and profile.derandomize == tier.derandomize
        assert profile.deadline is None
    # the fast tier repeats its examples (a failure reproduces), the thorough tier draws many new ones each run
    assert TIERS["fast"].derandomize and not TIERS["thorough"].derandomize
    assert TIERS["thorough"].probe_examples > TIERS["fast"].probe_examples


def test_a_test_over_the_fast_tiers_budget_fails_the_run_naming_it(suite_copy):
    res = _pytest(suite_copy, {ENV: "fast", BUDGET_ENV: "0.3"})
    assert res.returncode == pytest.ExitCode.TESTS_FAILED, res.stdout + res.stderr
    assert "2 passed" in res.stdout
    assert "over the fast tier's budget of 0.3 s per test" in res.stdout
    offenders = [ln for ln in res.stdout.splitlines() if "test_sleeps.py::" in ln]
    assert len(offenders) == 1 and "call   test_sleeps.py::test_sleeps_a_while" in offenders[0], res.stdout
    assert float(offenders[0].split()[0]) >= 0.6


def test_the_thorough_tier_has_no_budget(suite_copy):
    assert TIERS["thorough"].budget_s is None
    res = _pytest(suite_copy, {ENV: "thorough"})
    assert res.returncode == pytest.ExitCode.OK, res.stdout + res.stderr
    assert "2 passed" in res.stdout and "budget of" not in res.stdout


def test_smoke_result_is_computed_once_and_each_call_is_a_fresh_copy(smoke_result):
    first, again = smoke_result("representational_collapse"), smoke_result("representational_collapse")
    assert again.from_cache and again is not first and again.identical(first)
    name = next(iter(first.data.data_vars))
    first.data[name].values[...] = 0  # a test planting numbers in its copy
    assert not again.identical(first)
    assert smoke_result("representational_collapse").identical(again)


def _fixtures_script():
    spec = importlib.util.spec_from_file_location("test_fixtures_script", REPO / "scripts" / "test_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_full_preset_fixtures_carry_todays_keys(capsys):
    script = _fixtures_script()
    assert script.main(["--check"]) == 0, capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        script.main(["--check", "no_such_probe"])
    assert info.value.code == 2 and "probes must be among ['softmax_alternatives']" in capsys.readouterr().err
