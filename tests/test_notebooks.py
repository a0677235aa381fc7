"""Committed notebooks: clean (no outputs), a proper `parameters` cell, and parameters that matter.

Executing the notebooks as tests is nbval's job (the nbval step of ``make test``); here the overview
notebook is executed through papermill (via ``scripts/make_figures.py``) with two injected values of
``n_layers`` to prove that injected parameters change what a notebook computes.
"""

from __future__ import annotations

import ast
import io
import json
import os
import subprocess
import sys
import tokenize
from pathlib import Path

import nbformat
import pytest

from analysis.claims.ledger import Ledger
from analysis.core.paths import NOTEBOOKS, REPO

ALL = sorted(NOTEBOOKS.glob("*.ipynb"))
NUMBERED = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
# one BLAS/OpenMP thread per notebook: on a shared 2-core machine spinning threads double the run time
ENV = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}


def test_there_are_notebooks():
    assert (NOTEBOOKS / "00_overview.ipynb") in NUMBERED
    assert ALL == NUMBERED, "notebooks must be named NN_name.ipynb so make figures finds them"


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_committed_without_outputs(path):
    raw = json.loads(path.read_text(encoding="utf-8"))  # as committed: nbformat.read would add missing ids
    missing = [i for i, c in enumerate(raw["cells"]) if "id" not in c]
    assert not missing, f"cells {missing} have no id (nbformat >= 4.5 needs one; nbstripout --keep-id keeps them)"
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert "papermill" not in nb.metadata, "strip papermill metadata before committing"
    assert "widgets" not in nb.metadata
    for i, cell in enumerate(nb.cells):
        assert "papermill" not in cell.metadata and "execution" not in cell.metadata, f"cell {i} metadata"
        assert not {"injected-parameters", "papermill-error-cell-tag"} & set(cell.metadata.get("tags", []))
        if cell.cell_type == "code":
            assert cell.outputs == [], f"cell {i} has outputs"
            assert cell.execution_count is None, f"cell {i} has an execution count"


def _parameters_cell(nb):
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "a notebook needs code cells"
    return code[0]


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_parameters_cell(path):
    """First code cell tagged `parameters`: only `name: type = literal  # comment` lines, incl. preset."""
    cell = _parameters_cell(nbformat.read(path, as_version=4))
    assert "parameters" in cell.metadata.get("tags", []), "first code cell must be tagged 'parameters'"
    tree = ast.parse(cell.source)
    names = {}
    for stmt in tree.body:
        assert isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name), (
            f"parameters cell: line {stmt.lineno} must be `name: type = value`; derived values go in the next cell"
        )
        names[stmt.target.id] = ast.literal_eval(stmt.value)  # a literal, so papermill can override it
    comments = {
        tok.start[0]
        for tok in tokenize.generate_tokens(io.StringIO(cell.source).readline)
        if tok.type == tokenize.COMMENT
    }
    for stmt in tree.body:
        assert stmt.lineno in comments, f"parameter {stmt.target.id!r} needs a comment saying what it is"
    assert names.get("preset") == "full", 'every notebook has `preset: str = "full"  # smoke | full`'


def _render_overview(tmp_path: Path, n_layers: int) -> Path:
    out = tmp_path / f"figs_{n_layers}"
    res = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "make_figures.py"),
            "--preset",
            "smoke",
            "--only",
            "00_overview",
            "-p",
            "n_layers",
            str(n_layers),
            "--out",
            str(out),
            "--build",
            str(tmp_path / f"build_{n_layers}"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
        env=ENV,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    return out


@pytest.fixture(scope="session")  # not module: xdist may run other modules' tests between this group's
def overview_renders(tmp_path_factory):
    """``render(n_layers)``: the overview rendered at the smoke preset with ``n_layers`` injected, once per depth:
    its ledger, the residual figure's sidecar and PNG bytes."""
    root, done = tmp_path_factory.mktemp("overview"), {}

    def render(n_layers: int):
        if n_layers not in done:
            out = _render_overview(root, n_layers)
            done[n_layers] = (
                Ledger.load(out / "00_overview.claims.json"),
                json.loads((out / "overview_residual_rms.json").read_text()),
                (out / "overview_residual_rms.png").read_bytes(),
            )
        return done[n_layers]

    return render


@pytest.mark.slow
@pytest.mark.xdist_group("overview_renders")
@pytest.mark.parametrize("n_layers", [1, 3])
def test_injected_n_layers_sets_the_depth(overview_renders, n_layers):
    """n_layers injected by papermill sets the depth: the identities cover every layer, one RMS per block."""
    led, side, _ = overview_renders(n_layers)
    assert led.preset == "smoke" and side["params"]["n_layers"] == n_layers and side["preset"] == "smoke"
    pattern = next(c for c in led.claims if c.name == "uniform_pattern")  # one claim: the worst layer
    assert f"worst of {n_layers} layers" in pattern.statement
    assert all(c.status == "pass" for c in led.claims if c.role == "identity"), led.report()


@pytest.mark.slow
@pytest.mark.xdist_group("overview_renders")
def test_injected_parameters_change_the_results(overview_renders):
    """The residual stream of a 3-block Pre-LN model grows further than that of a 1-block model, and the figure
    differs (both depths rendered by the test above when it ran first on this worker)."""
    results = {n: overview_renders(n) for n in (1, 3)}
    growth = {n: next(c for c in r[0].claims if c.name == "pre_ln_rms_grows").measured for n, r in results.items()}
    assert growth[3] > growth[1] > 1.0
    assert results[1][2] != results[3][2]
