"""A user's own claim (analysis.claims.own): declared, measured over seeds, judged by the workbench's engine, saved
into a
folder of the user's, listed and scored by ``python -m probes claims --folder DIR``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from analysis.claims import papers, specs
from analysis.claims.own import Study, folder_claims, folder_scorecard
from analysis.core.paths import GALLERY
from analysis.probing.cli import main
from analysis.probing.registry import load_declarations

load_declarations()  # before any test saves the registries: a probe module imports (and declares) once

ROW = "lambda_max(diag p - p p^T) <= 2 max_i p_i (1 - p_i) on every softmax row"


@pytest.fixture(autouse=True)
def _clean_registries():
    """Papers and declarations a test registers vanish with it (the registries are the process's: restored in place)."""
    saved = dict(papers.PAPERS), dict(papers.USER_PAPERS), dict(specs._REGISTRY)
    yield
    for live, before in zip((papers.PAPERS, papers.USER_PAPERS, specs._REGISTRY), saved, strict=True):
        live.clear()
        live.update(before)


def _rows(seed: int, scale: float = 2.0, keys: int = 8) -> np.ndarray:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(100, keys)) * scale
    p = np.exp(z - z.max(1, keepdims=True))
    return p / p.sum(1, keepdims=True)


def _ratio(p: np.ndarray) -> np.ndarray:
    lam = np.array([np.linalg.eigvalsh(np.diag(r) - np.outer(r, r))[-1] for r in p])
    return lam / (2 * np.max(p * (1 - p), axis=1))


def _study(tmp_path, name="softmax_rows"):
    nb = tmp_path / "my_bound.ipynb"
    nb.write_text("{}")
    st = Study(name, folder=tmp_path / "results", notebook=nb, params={"preset": "smoke", "keys": 8})
    st.paper("mine", "My derivation: the softmax Jacobian's norm is at most 2 max_i p_i (1 - p_i)")
    st.declare(
        "row_bound",
        tests="derivation",
        comparison="bound",
        paper="mine",
        statement=ROW,
        scope="every softmax row meets it by construction",
        source="Gershgorin's circle theorem",
    )
    return st


def test_a_bound_of_ones_own_is_judged_saved_and_scored(tmp_path):
    st = _study(tmp_path)
    reps = st.replicates(lambda s: {"ratio": _ratio(_rows(s))}, seeds=3, progress=False)
    assert reps["ratio"].shape == (3, 100) and reps.pooled("ratio").shape == (300,)
    c = st.judge("row_bound", population=reps.pooled("ratio"), bound=1.0, why="every row of every seed")
    assert c.verdict == "agrees" and c.statement == ROW and c.paper == "mine" and c.tests == "derivation"
    pop = c.tolerance["population"]
    assert pop["n"] == 300 and pop["holding"] == 1.0
    assert pop["worst"] == pytest.approx(reps.pooled("ratio").max()) and pop["worst"] <= 1.0
    assert 0 < pop["tightness_median"] < pop["worst"]
    folder = st.save()
    declared = json.loads((folder / "my_bound.declared.json").read_text())
    assert declared["context"] == "softmax_rows" and declared["params"]["keys"] == 8
    assert "notebook my_bound.ipynb" in declared["inputs"] and declared["papers"][0]["key"] == "mine"
    score = json.loads((folder / "papers.json").read_text())
    [paper] = score["papers"]
    assert paper["key"] == "mine" and paper["statements"][0]["statement"] == ROW
    assert paper["statements"][0]["verdict"] == "agrees" and paper["notebooks"] == ["my_bound"]


def test_a_violated_bound_disagrees_and_an_attained_one_agrees(tmp_path):
    st = _study(tmp_path)
    two = _rows(0, keys=2)  # two keys: lambda_max = 2 p1 p2 exactly, the bound attained on every row
    c = st.judge("row_bound", population=_ratio(two), bound=1.0, why="two-key rows")
    assert c.verdict == "agrees" and c.tolerance["population"]["worst"] == pytest.approx(1.0, abs=1e-12)
    loose = 2 * np.max(two * (1 - two), axis=1) / 0.4  # the same rows against a bound too small for them
    c = st.judge("row_bound", population=loose, bound=1.0, why="a bound that fails")
    assert c.verdict == "disagrees" and c.tolerance["population"]["holding"] < 1.0


def test_a_prediction_of_ones_own_is_judged_over_seeds_against_its_alternative(tmp_path):
    st = _study(tmp_path)
    st.declare(
        "mean_logit",
        tests="derivation",
        comparison="prediction",
        paper="mine",
        statement="the mean logit of a row is mu",
        scope="logits drawn i.i.d.",
        source="linearity of expectation",
        hypothesis="the mean is mu + 1/2",
    )

    def measure(mu, size=400):
        return lambda s: {"mean": np.random.default_rng(s).normal(mu, 1.0, size=size).mean()}

    reps = st.replicates(measure(0.0), seeds=6, progress=False)
    assert reps.per_seed("mean").shape == (6,)
    c = st.judge("mean_logit", replicates=reps.per_seed("mean"), expected=0.0, alternative=0.5, why="6 seeds")
    assert c.verdict == "agrees" and c.tolerance["n"] == 6 and c.tolerance["policy"] == "t95"
    reps = st.replicates(measure(0.5), seeds=6, progress=False)
    c = st.judge("mean_logit", replicates=reps.per_seed("mean"), expected=0.0, alternative=0.5, why="6 seeds")
    assert c.verdict == "disagrees"
    reps = st.replicates(measure(0.25, size=4), seeds=[0, 1], progress=False)  # a band holding both
    c = st.judge("mean_logit", replicates=reps.per_seed("mean"), expected=0.0, alternative=0.5, why="2 seeds")
    assert c.verdict == "undecided"


def test_bad_input_gets_one_line_naming_it(tmp_path):
    st = _study(tmp_path)
    with pytest.raises(ValueError, match="missing field statement"):
        st.declare("x", tests="derivation", comparison="bound", paper="mine", scope="by construction")
    with pytest.raises(ValueError, match="bogus is not a declaration field"):
        st.declare("x", bogus=1)
    with pytest.raises(ValueError, match="paper must be a key"):
        st.declare("x", tests="paper", comparison="bound", paper="nobody", statement="s", scope="s")
    with pytest.raises(ValueError, match="tests must be paper, derivation or toy_model"):
        st.declare("x", tests="software", comparison="identity", statement="s")
    with pytest.raises(ValueError, match="judge takes a declared claim"):
        st.judge("undeclared", measured=1.0, bound=2.0)
    with pytest.raises(ValueError, match="seeds must be at least two distinct"):
        st.replicates(lambda s: 1.0, seeds=[3, 3])
    with pytest.raises(ValueError, match="committed gallery"):
        Study("x", folder=GALLERY / "mine", notebook="n", params={"preset": "smoke"})
    with pytest.raises(ValueError, match="a workbench probe's"):
        Study("icl_gd", folder=tmp_path, notebook="n", params={"preset": "smoke"})
    with pytest.raises(ValueError, match="preset"):
        Study("y", folder=tmp_path, notebook="n", params={})
    with pytest.raises(ValueError, match="is a paper of the workbench's registry"):
        st.paper("dong2021", "not Dong et al.")
    with pytest.raises(ValueError, match="already registered with another summary"):
        st.paper("mine", "something else")


def test_the_command_line_reads_a_folder(tmp_path, capsys):
    st = _study(tmp_path)
    st.judge("row_bound", population=_ratio(_rows(1)), bound=1.0, why="rows")
    folder = st.save()
    assert main(["claims", "--folder", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "softmax_rows: 1 claims (1 agrees) in my_bound" in out and "1 papers, 1 statements: 1 agree" in out
    assert main(["claims", "--folder", str(folder), "--paper", "mine"]) == 0
    assert ROW in capsys.readouterr().out
    assert main(["claims", "--folder", str(folder), "softmax_rows", "--json", "-"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["name"] == "row_bound" and row["verdict"] == "agrees"
    (tmp_path / "empty").mkdir()
    for argv, msg in (
        (["claims", "--folder", str(tmp_path / "empty")], "holds no <notebook>.claims.json ledger"),
        (["claims", "--folder", str(tmp_path / "nowhere")], "does not exist"),
        (["claims", "--folder", str(folder), "--declared"], "--folder takes no --declared"),
    ):
        assert main(argv) == 2
        [line] = capsys.readouterr().err.strip().splitlines()
        assert msg in line, line


def test_the_committed_gallery_read_as_a_folder_gives_its_scorecard():
    """The folder reader is the scorecard's builder: on the committed figures/ it gives the committed papers.json."""
    doc = folder_scorecard(GALLERY)
    committed = json.loads((GALLERY / "papers.json").read_text())
    assert doc["headline"] == committed["headline"]
    assert [p["key"] for p in doc["papers"]] == [p["key"] for p in committed["papers"]]
    assert len(folder_claims(GALLERY)) == sum(len(json.load(open(p))["claims"]) for p in GALLERY.glob("*.claims.json"))


def test_a_second_bound_written_from_the_template(tmp_path):
    """What a user writes following notebooks/10_your_claim.ipynb for another bound (row entropy <= ln keys): a
    trained recipe's attention rows through the checkpoint cache, judged and saved, in well under 60 lines."""
    from analysis.training.checkpoints import CheckpointCache
    from analysis.zoo.hooks import run_with_cache

    cache = CheckpointCache(tmp_path / "ckpt")
    study = Study("entropy_rows", folder=tmp_path / "out", notebook="second.ipynb", params={"preset": "smoke"})
    study.paper("mine", "My note: an attention row's entropy is at most the log of the keys it sees")
    study.declare("entropy_bound", tests="derivation", comparison="bound", paper="mine", source="Jensen",
                  statement="H(p) <= ln(keys seen) on every attention row", scope="every softmax row")  # fmt: skip

    def measure(seed):
        t = study.trained("tiny_lm", seed=seed, cache=cache, progress=False)
        x, _ = next(iter(t.task.eval_batches(batch_size=2, max_batches=1)))
        _, c = run_with_cache(t.model, x, names=lambda n: n.endswith("hook_pattern"))
        p = c.stack("pattern").double().numpy()[..., 1:, :]  # query rows that see at least two keys
        p = p.reshape(-1, p.shape[-1])
        h = -(p * np.log(np.where(p > 0, p, 1.0))).sum(-1)
        return {"ratio": h / np.log((p > 0).sum(-1))}

    reps = study.replicates(measure, seeds=2, progress=False)
    c = study.judge("entropy_bound", population=reps.pooled("ratio"), bound=1.0, why="every row, layer, head, seed")
    study.save()
    assert c.verdict == "agrees" and c.tolerance["population"]["n"] == reps.pooled("ratio").size > 0
    assert sorted(study.inputs) == ["tiny_lm seed 0", "tiny_lm seed 1"]  # the checkpoint keys, for provenance
    assert study.inputs["tiny_lm seed 0"] == study.trained("tiny_lm", seed=0, cache=cache, progress=False).key
