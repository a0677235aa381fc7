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
    """A folder holding this suite's conftest.py and tier.py beside tests that work, wait or do both a while."""
    for name in ("conftest.py", "tier.py"):
        shutil.copy(TESTS / name, tmp_path / name)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # the rootdir: the project's addopts stay out
    (tmp_path / "test_sleeps.py").write_text(
        textwrap.dedent(
            """\
            import subprocess
            import sys
            import time

            def _spin(seconds):
                end = time.process_time() + seconds
                while time.process_time() < end:
                    pass

            def test_works_a_while():
                _spin(0.6)

            def test_a_child_works_a_while():
                child = "import time; end = time.process_time() + 0.6\\nwhile time.process_time() < end: pass"
                subprocess.run([sys.executable, "-c", child], check=True)

            def test_waits_a_little():
                time.sleep(0.45)

            def test_sleeps_a_long_while():
                time.sleep(0.8)

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
    # budget 0.3 s of CPU time, so 0.6 s on the wall clock
    res = _pytest(suite_copy, {ENV: "fast", BUDGET_ENV: "0.3"})
    assert res.returncode == pytest.ExitCode.TESTS_FAILED, res.stdout + res.stderr
    lines = res.stdout.strip().splitlines()
    assert "5 passed" in res.stdout
    # listed after pytest's own last line, so that a log's tail shows them
    head = next(i for i, ln in enumerate(lines) if "over the fast tier's budget" in ln)
    assert "over the fast tier's budget of 0.3 s of CPU time or 0.6 s of wall-clock time per test" in lines[head]
    assert "passed" in lines[head - 1] and lines[-1].startswith("give each a fast setting")
    offenders = {ln.split()[-1].split("::")[-1]: ln.split() for ln in lines[head + 1 : -1]}
    # work counts in this process and in a child it waited for; a long wait counts on the wall clock; a short
    # wait (0.45 s, no work: a busy machine or a lock held by another worker) does not count
    assert set(offenders) == {"test_works_a_while", "test_a_child_works_a_while", "test_sleeps_a_long_while"}, lines
    for name in ("test_works_a_while", "test_a_child_works_a_while"):
        assert float(offenders[name][0]) >= 0.55 and offenders[name][6] == "call", offenders[name]
    slept = offenders["test_sleeps_a_long_while"]
    assert float(slept[0]) < 0.3 and float(slept[3]) >= 0.8, slept


def test_the_thorough_tier_has_no_budget(suite_copy):
    assert TIERS["thorough"].budget_s is None and TIERS["thorough"].wall_budget_s is None
    res = _pytest(suite_copy, {ENV: "thorough"})
    assert res.returncode == pytest.ExitCode.OK, res.stdout + res.stderr
    assert "5 passed" in res.stdout and "budget of" not in res.stdout


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
