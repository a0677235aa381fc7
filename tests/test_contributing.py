"""CONTRIBUTING.md's worked examples, each followed literally on its own copy of the repository.

Every block the guide marks ``<!-- walkthrough NAME: FILE | ACTION -->`` is applied to the copy as the prose says
(``append``; ``before the last line``; ``replace the last line``; ``after the line: TEXT``), then every
``<!-- walkthrough NAME: run -->`` block runs there in bash (``set -euo pipefail``): each command must succeed. A
guide whose steps no longer apply (a file moved, a line changed, a signature renamed) fails here, not in a
newcomer's hands."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.core.paths import REPO

from tier import TIER

GUIDE = REPO / "CONTRIBUTING.md"
STEP = re.compile(r"<!-- walkthrough (?P<name>\w+): (?P<what>.+?) -->\n```\w*\n(?P<body>.*?)\n```", re.S)
SKIPPED = ("bench/results/",)  # what no test reads (the golden tests read figures/ and notebooks/)


def walkthroughs(text: str) -> dict[str, list[tuple[str, str, str]]]:
    """The guide's worked examples by name, each its marked steps in order: (file or "run", action, body)."""
    out: dict[str, list[tuple[str, str, str]]] = {}
    for m in STEP.finditer(text):
        target, _, action = (part.strip() for part in m.group("what").partition("|"))
        out.setdefault(m.group("name"), []).append((target, action, m.group("body")))
    return out


WALKTHROUGHS = walkthroughs(GUIDE.read_text())


def _last(lines: list[str]) -> int:
    return max(i for i, line in enumerate(lines) if line.strip())


def apply_step(root: Path, target: str, action: str, body: str) -> None:
    """Edit ``root/target`` as ``action`` says (ValueError for an action or anchor the file does not have)."""
    path = root / target
    lines = path.read_text().split("\n")
    block = body.split("\n")
    gap = [""] * (2 if block[0][:1] not in (" ", ")", "") else 0)  # a top-level definition: two blank lines
    if action == "append":
        lines = lines[: _last(lines) + 1] + [""] * 2 + block + [""]
    elif action == "before the last line":
        i = _last(lines)
        lines = lines[:i] + block + gap + lines[i:]
    elif action == "replace the last line":
        i = _last(lines)
        lines = lines[:i] + block + lines[i + 1 :]
    elif action.startswith("after the line: "):
        anchor = action.removeprefix("after the line: ")
        hits = [i for i, line in enumerate(lines) if line.strip() == anchor]
        if len(hits) != 1:
            raise ValueError(f"{target}: the line {anchor!r} occurs {len(hits)} times, not once")
        lines = lines[: hits[0] + 1] + block + lines[hits[0] + 1 :]
    else:
        raise ValueError(f"unknown walkthrough action {action!r} for {target}")
    path.write_text("\n".join(lines))


def _copy_repository(dest: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for name in files.split("\n"):
        if name and not name.startswith(SKIPPED) and (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)


def test_the_guide_marks_a_complete_walkthrough_of_a_claim_a_study_and_a_zoo_knob():
    assert set(WALKTHROUGHS) == {"claim", "knob", "study"}
    for name, steps in WALKTHROUGHS.items():
        targets = [t for t, _, _ in steps]
        assert targets[-1] == "run", f"walkthrough {name} ends by running its checks"
        assert any(t.startswith(("probes/", "analysis/")) for t in targets), name
        assert any(t.startswith("tests/") for t in targets), name


def test_apply_step_refuses_a_missing_anchor(tmp_path):
    (tmp_path / "f.py").write_text("a = 1\nb = 2\n")
    apply_step(tmp_path, "f.py", "after the line: a = 1", "c = 3")
    apply_step(tmp_path, "f.py", "replace the last line", "b = 4")
    assert (tmp_path / "f.py").read_text() == "a = 1\nc = 3\nb = 4\n"
    with pytest.raises(ValueError, match="occurs 0 times"):
        apply_step(tmp_path, "f.py", "after the line: z = 9", "d = 4")
    with pytest.raises(ValueError, match="unknown walkthrough action"):
        apply_step(tmp_path, "f.py", "somewhere", "d = 4")


@pytest.mark.parametrize("name", sorted(WALKTHROUGHS))
def test_following_the_worked_example_literally_works(name, tmp_path):
    root = tmp_path / "repo"
    _copy_repository(root)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # `python` is this one
    env["TQDM_DISABLE"] = "1"
    for cache in ("WORKBENCH_CACHE", "WORKBENCH_TEST_CACHE"):  # nothing the edited copy computes is stored elsewhere
        env[cache] = str(tmp_path / "cache")
    where = subprocess.run(
        [sys.executable, "-c", "from analysis.core.paths import REPO; print(REPO)"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    assert where.stdout.strip() == str(root), f"the copy must be the one imported, got {where.stdout}"
    steps = WALKTHROUGHS[name]
    for target, action, body in steps:
        if target != "run":
            apply_step(root, target, action, body)
            continue
        _run(body, root, env)
    if TIER.whole_files_after_walkthrough:  # every pinned test of the edited files still passes
        edited = sorted({t for t, _, _ in steps if t.startswith("tests/")})
        # at the fast tier's settings: the pins are what this checks; the numbers are the probe's own tests' job
        _run(
            f"python -m pytest -q -p no:cacheprovider {' '.join(edited)}", root, {**env, "WORKBENCH_TEST_TIER": "fast"}
        )


def _run(body: str, root: Path, env: dict) -> None:
    done = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + body], cwd=root, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, f"walkthrough step failed:\n{body}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
