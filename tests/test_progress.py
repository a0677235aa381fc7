"""Progress bars obey both the caller's switch and TQDM_DISABLE (tqdm alone lets disable=False win)."""

from __future__ import annotations

import pytest

from analysis.core.progress import bar, disabled_by_env


@pytest.mark.parametrize(
    ("value", "silent"), [("1", True), ("true", True), ("", False), ("0", False), ("false", False)]
)
def test_env_variable(monkeypatch, value, silent):
    monkeypatch.setenv("TQDM_DISABLE", value)
    assert disabled_by_env() is silent
    assert bar(range(3), progress=True).disable is silent


def test_progress_switch_and_env_absent(monkeypatch, capsys):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    assert bar(range(3), progress=False).disable is True
    assert bar(range(3), progress=True, disable=True).disable is False  # the switch decides, not the kwarg
    monkeypatch.setenv("TQDM_DISABLE", "1")
    for _ in bar(range(5), progress=True, desc="quiet"):
        pass
    assert "quiet" not in capsys.readouterr().err
