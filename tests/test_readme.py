"""Every Python block of the README runs as written, each in a fresh namespace (a reader pastes one
block at a time), with the test session's own cache."""

from __future__ import annotations

import re

import pytest

from analysis.paths import REPO

BLOCKS = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 3


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs(index, monkeypatch):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    code = compile(BLOCKS[index], f"README.md python block {index}", "exec")
    exec(code, {"__name__": f"readme_block_{index}"})  # noqa: S102 - the README is our own text
