"""Declared studies (analysis.probing.studies): the experiment behind a figure, the same from a notebook and the
command line."""

from __future__ import annotations

import json

import pytest

import probes
from analysis.core.paths import REPO
from analysis.probing.cli import main
from analysis.probing.studies import get_study, run_study, studies, study_configs
from probes import prompt_forgetting as pf
from probes import signal_propagation as sp


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TQDM_DISABLE", "1")
    return tmp_path / "cache"


def test_depth_law_study_is_the_committed_figures_experiment():
    """Golden: the declared study builds exactly the runs behind the committed pf_alpha_depth figure (the same
    result-cache keys, so the same configs, seeds and draws), before and after the design left the notebook."""
    sidecar = json.loads((REPO / "figures" / "pf_alpha_depth.json").read_text())
    keys = [probes.cache_key(pf, c) for c in study_configs(pf, "depth_law", "full")]
    assert len(keys) == len(set(keys)) == len(pf.DEPTH_LAW_LAYERS["full"]) * pf.REPLICATES["full"]
    assert set(keys) == set(sidecar["inputs"].values())


def test_depth_sweep_study_is_the_committed_figures_experiment():
    """Golden: the depth-sweep study's runs are the depth half of the committed pf_alpha_summary figure's inputs."""
    sidecar = json.loads((REPO / "figures" / "pf_alpha_summary.json").read_text())
    keys = {probes.cache_key(pf, c) for c in study_configs(pf, "depth_sweep", "full")}
    assert keys == {v for k, v in sidecar["inputs"].items() if k.startswith("L")}
    assert len(keys) == len(pf.DEPTH_SWEEP_LAYERS["full"]) * pf.REPLICATES["full"]


@pytest.mark.parametrize(
    "figure", ["signal_variance_profiles", "signal_attention_phase", "signal_curse_of_depth_trained"]
)
def test_signal_propagation_studies_are_the_committed_figures_experiments(figure):
    """Golden: notebook 01's two declared studies (one run each) are the init and trained inputs of its figures."""
    sidecar = json.loads((REPO / "figures" / f"{figure}.json").read_text())
    for name in ("init", "trained"):
        [cfg] = study_configs(sp, name, "full")
        assert probes.cache_key(sp, cfg) == sidecar["inputs"][name], name
    assert study_configs(sp, "init", "full")[0].phase.enabled is True
    assert study_configs(sp, "trained", "smoke", {"trained_depth": 8})[0].depths == (4,)  # smoke: depth 4
    with pytest.raises(ValueError, match="^trained_depth must be an integer >= 4"):
        study_configs(sp, "trained", "full", {"trained_depth": 2})


def test_depth_sweep_study_gives_one_replicate_set_per_depth(cache):
    res = run_study(pf, "depth_sweep", "smoke", progress=False)
    assert [r.config.model.n_layers for r in res.combined] == list(pf.DEPTH_SWEEP_LAYERS["smoke"])
    base = pf.sweep_base("smoke")
    for rep in res.combined:  # the replicates probes.replicated_run gives that design, in its order
        want = probes.replicated_run(
            pf, base.replace(n_layers=rep.config.model.n_layers), pf.REPLICATES["smoke"], progress=False
        )
        assert rep.keys == want.keys
    assert [c.name for c in res.ledger.claims] == [c.name for c in pf.depth_sweep_claims(res.combined).claims]


def test_bound_regime_study_is_the_committed_figures_experiment():
    sidecar = json.loads((REPO / "figures" / "pf_bound_regime.json").read_text())
    cfgs = study_configs(pf, "bound_regime", "full")
    assert {probes.cache_key(pf, c) for c in cfgs} == set(sidecar["inputs"].values())
    assert {c.logit_gain for c in cfgs} == {pf.REGIME_GAIN["full"]}


def test_a_study_of_designs_keeps_each_designs_ledger_tagged(cache):
    res = run_study(pf, "bound_regime", "smoke", progress=False)
    tags = {c.context for c in res.ledger.claims}
    assert tags == {f"prompt_forgetting[L{L}]" for L in pf.REGIME_LAYERS["smoke"]}
    for rep in res.combined:
        mine = [c for c in res.ledger.claims if c.context == f"prompt_forgetting[L{rep.config.model.n_layers}]"]
        assert [(c.name, c.status) for c in mine] == [(c.name, c.status) for c in rep.ledger.claims]


def test_study_configs_follow_the_parameters():
    cfgs = study_configs(pf, "depth_law", "smoke", {"seed": 3, "prompt_len": 8})
    assert [c.model.n_layers for c in cfgs] == [
        L for L in pf.DEPTH_LAW_LAYERS["smoke"] for _ in range(pf.REPLICATES["smoke"])
    ]
    assert sorted({c.seed for c in cfgs}) == sorted(pf.weight_seeds(3, pf.REPLICATES["smoke"]))
    assert {c.prompt_len for c in cfgs} == {8} and {c.cont_len for c in cfgs} == {128}  # smoke's shorter T
    assert cfgs[0] == pf.notebook_base("smoke", seed=3, prompt_len=8).replace(n_layers=1)


def test_run_study_through_the_cache(cache):
    res = run_study(pf, "depth_law", "smoke", progress=False)
    assert len(res.results) == 6 and not any(res.from_cache)
    law = pf.depth_law(list(res.results))
    assert res.combined.equals(law)
    expect = pf.depth_law_claims(law)
    assert [(c.name, c.status, c.measured) for c in res.ledger.claims] == [
        (c.name, c.status, c.measured) for c in expect.claims
    ]
    again = run_study(pf, "depth_law", "smoke", progress=False)
    assert all(again.from_cache) and again.keys == res.keys


def test_bad_input_names_the_parameter():
    known = ", ".join(sorted(pf.STUDIES))
    with pytest.raises(
        ValueError, match=f"^study must be one of probe prompt_forgetting's studies: {known}; got 'nope'"
    ):
        get_study(pf, "nope")
    with pytest.raises(ValueError, match="parameter must be one of seed, n_layers"):
        study_configs(pf, "depth_law", "smoke", {"widht": 3})
    with pytest.raises(ValueError, match="^preset must be one of smoke, full"):
        study_configs(pf, "depth_law", "medium")
    # from Python a parameter the grid varies takes the grid's values (a notebook passes all its parameters to
    # each of its studies); the command line refuses it (test_command_line_lists_runs_and_refuses_bad_input)
    grid_layers = {c.model.n_layers for c in study_configs(pf, "depth_law", "smoke")}
    assert {c.model.n_layers for c in study_configs(pf, "depth_law", "smoke", {"n_layers": 3})} == grid_layers
    without = [n for n in probes.available() if not hasattr(probes.get(n), "STUDIES")]
    assert without and all(studies(n) == {} for n in without)  # a probe that declares none has none


def test_command_line_lists_runs_and_refuses_bad_input(cache, tmp_path, capsys):
    assert main(["study", "prompt_forgetting"]) == 0
    assert "depth_law:" in capsys.readouterr().out
    out = tmp_path / "law.json"
    assert main(["study", "prompt_forgetting", "depth_law", "--preset", "smoke", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "6 runs, 6 computed, 0 from cache" in text and "alpha_falls_with_depth" in text
    payload = json.loads(out.read_text())
    assert payload["study"] == "depth_law" and len(payload["keys"]) == 6
    assert {c["name"] for c in payload["checks"]} >= {"alpha_falls_with_depth", "alpha_vs_relay_L2"}
    assert main(["study", "prompt_forgetting", "depth_law", "--preset", "smoke", "--seed", "3", "--json", "-"]) == 0
    seeds = {c["seed"] for c in json.loads(capsys.readouterr().out)["configs"]}
    assert seeds == set(pf.weight_seeds(3, pf.REPLICATES["smoke"]))  # the replicate seeds of seed 3
    for args, needle in (
        (["nope"], "study must be one of"),
        (["depth_law", "--seed", "x"], "--seed must be a int"),
        (["depth_law", "--widht", "3"], "unknown option --widht"),
        (["depth_law", "--json", str(tmp_path / "no" / "x.json")], "--json: cannot write"),
        (["depth_law", "--scheduler", "udp://x"], "--scheduler must be"),
        (["depth_law", "--n-layers", "3"], "study depth_law varies n_layers itself"),
    ):
        assert main(["study", "prompt_forgetting", *args]) == 2
        err = capsys.readouterr().err.strip()
        assert needle in err and len(err.splitlines()) == 1, err


# ---------------------------------------------------------------------- studies of designs (notebook 05)


def _old_notebook_05_designs(preset, seed=0, n_layers=2, max_len=1024, n_bases=6):
    """Golden: notebook 05's designs as its cells wrote them before they moved into the probe (verbatim)."""
    from analysis.probing.replicates import replicate_configs
    from analysis.theory import representational_collapse as th
    from probes import representational_collapse as mod

    full = preset == "full"
    base = mod.Config.preset(
        preset, seed=seed, n_layers=n_layers, **(dict(max_len=max_len, n_bases=n_bases) if full else {})
    )
    CHEAP = dict(dtypes=("bfloat16",), sensitivity=False)
    UNIFORM = dict(attention="uniform", norm="none", d_mlp=0)
    SENS = dict(max_len=128, n_lengths=6, fit_lo=8.0) if full else {}
    EXTEND = {
        "repeat_last": dict(extend_dtype="float16", extend_lo=0.5, extend_hi=2.0, extend_lengths=5),
        "counting": dict(extend_dtype="float32", extend_lo=3.0, extend_hi=6.0, extend_lengths=4, extend_bases=2),
        "early_token": {},
    }

    def run(**over):
        return replicate_configs(mod, base.replace(**over), mod.REPLICATES[preset])

    main = {f: run(family=f, sensitivity=False, **EXTEND[f]) for f in th.FAMILIES}
    depths = (1, 2, 3) if full else (1, 2)
    SWEEP = dict(CHEAP, sensitivity=True)
    sens = {f"sens_softmax_L{L_}": run(n_layers=L_, **SWEEP, **SENS) for L_ in depths}
    sens |= {f"sens_uniform_L{L_}": run(n_layers=L_, **UNIFORM, **SWEEP, **SENS) for L_ in depths}
    pos = {
        f"{f}_pos_{p}": run(family=f, pos=p, **CHEAP) for f in ("repeat_last", "counting") for p in ("rope", "learned")
    }
    pos |= {f"{f}_sep3": run(family=f, separator_every=3, **CHEAP) for f in ("repeat_last", "counting")}
    trained = {
        f"{f}_trained": run(family=f, trained=True, **dict(CHEAP, sensitivity=f == th.FAMILIES[0])) for f in th.FAMILIES
    }
    return {"main": main, "sensitivity": sens, "positions": pos, "trained": trained}


@pytest.mark.parametrize("preset", ["smoke", "full"])
def test_notebook_05_studies_are_its_old_designs(preset):
    from analysis.probing.studies import _plan
    from probes import representational_collapse as rc

    old = _old_notebook_05_designs(preset)
    for name, designs in old.items():
        *_, planned = _plan(rc, name, preset, {})
        assert list(planned) == list(designs), name  # the same tags in the same order (the ledger's order)
        for tag in designs:
            assert [probes.cache_key(rc, c) for c in planned[tag]] == [probes.cache_key(rc, c) for c in designs[tag]]
    sidecar = json.loads((REPO / "figures" / "rc_distance.json").read_text())
    keys = {probes.cache_key(rc, c) for c in study_configs(rc, "main", "full")}
    assert keys == set(sidecar["inputs"].values())


def test_a_study_of_designs_runs_and_tags_each_designs_ledger(cache):
    from probes import representational_collapse as rc

    res = run_study(rc, "positions", "smoke", progress=False)
    assert list(res.combined) == list(rc.position_designs("smoke", None))
    assert len(res.results) == len(res.combined) * rc.REPLICATES["smoke"] and not any(res.from_cache)
    tags = {c.context for c in res.ledger.claims}
    assert tags == {f"representational_collapse[{t}]" for t in res.combined}
    again = run_study(rc, "positions", "smoke", progress=False)
    assert all(again.from_cache) and [c.status for c in again.ledger.claims] == [c.status for c in res.ledger.claims]
    with pytest.raises(ValueError, match="give exactly one of grid and designs"):
        probes.Study(name="x", description="", base=rc.notebook_base, grid=None, combine=dict, claims=dict)


def _old_notebook_03_designs(
    preset, seed=0, n_layers=2, d_model=64, n_heads=2, prompt_len=16, cont_len=4096, n_pairs=6
):
    """Golden: notebook 03's single-design sections as its cells wrote them before they moved into the probe."""
    from analysis.probing.replicates import replicate_configs

    base = pf.notebook_base(
        preset,
        seed=seed,
        n_layers=n_layers,
        d_model=d_model,
        n_heads=n_heads,
        prompt_len=prompt_len,
        cont_len=cont_len,
        n_pairs=n_pairs,
    )
    T_main = base.cont_len
    T_sweep = T_main // 4 if preset == "full" else 96
    fit_sweep = base.fit_lo / 2 if preset == "full" else 24.0
    UNIFORM = dict(attention="uniform", norm="none", d_mlp=0, dtype="float64")
    n_seeds = pf.REPLICATES[preset]

    def run(**over):
        cfg = base.replace(**over)
        return replicate_configs(pf, cfg, 1 if cfg.trained else n_seeds)

    def sweep(**over):
        return run(cont_len=T_sweep, fit_lo=fit_sweep, **over)

    out = {"kernels": {"softmax": run(), "uniform": run(**UNIFORM)}}
    train_Ls = (2, 4, 6, 8) if preset == "full" else (1, 2)
    TRAINING = {
        "corpus": dict(train_steps=2000, train_seq_len=128) if preset == "full" else {},
        "markov": dict(train_steps=600, train_seq_len=128) if preset == "full" else {},
    }
    traj_L, traj_data = (4 if preset == "full" else 2), "corpus"
    traj_steps = base.replace(**TRAINING[traj_data]).train.steps
    checkpoints = tuple(sorted({0, *(round(f * traj_steps) for f in (0.01, 0.1, 0.3, 0.5, 0.7, 1.0))}))
    training = {}
    for data_ in ("corpus", "markov"):
        for L_ in train_Ls:
            extra = dict(train_checkpoints=checkpoints) if (data_, L_) == (traj_data, traj_L) else {}
            training[f"untrained_{data_}_L{L_}"] = run(n_layers=L_, data=data_)
            training[f"trained_{data_}_L{L_}"] = run(n_layers=L_, data=data_, trained=True, **TRAINING[data_], **extra)
    out["training"] = training
    out["bias"] = {
        "plain_softmax": sweep(),
        "plain_uniform": sweep(**UNIFORM),
        "bias_softmax": sweep(logit_bias="cancel"),
        "uniform_bias": sweep(**UNIFORM, logit_bias="cancel"),
    }
    Ps = (4, 16, 64) if preset == "full" else (4, 8)
    out["prompt_lengths"] = {
        f"P{P_}": run(prompt_len=P_, cont_len=T_sweep, fit_lo=max(2.0 * P_, fit_sweep) if preset == "full" else 24.0)
        for P_ in Ps
    }
    VARIANTS = {
        "pre-LN softmax": {},
        "post-LN softmax": dict(norm="post"),
        "pre-RMSNorm softmax": dict(norm_type="rmsnorm"),
        "pre-LN ssmax": dict(attention="ssmax"),
        "pre-LN sigmoid": dict(attention="sigmoid"),
        "uniform (relay)": UNIFORM,
    }
    out["variants"] = {name: sweep(**over) for name, over in VARIANTS.items()}
    Ls = pf.DEPTH_SWEEP_LAYERS[preset]
    out["uniform_depths"] = {f"uniform_L{L_}": sweep(**UNIFORM, n_layers=L_) for L_ in Ls}
    return out


@pytest.mark.parametrize("preset", ["smoke", "full"])
def test_notebook_03_design_studies_are_its_old_cells(preset):
    from analysis.probing.studies import _plan

    for name, designs in _old_notebook_03_designs(preset).items():
        *_, planned = _plan(pf, name, preset, {})
        if name == "variants":  # the plot's labels, in the same order
            assert [pf.VARIANTS[t][0] for t in planned] == list(designs)
            designs = dict(zip(planned, designs.values(), strict=True))
        assert list(planned) == list(designs), name
        for tag in designs:
            got = [probes.cache_key(pf, c) for c in planned[tag]]
            assert got == [probes.cache_key(pf, c) for c in designs[tag]], (name, tag)
    # and the committed figures' inputs where the notebook records them
    sidecar = json.loads((REPO / "figures" / "pf_distance.json").read_text())
    if preset == "full":
        keys = {probes.cache_key(pf, c) for c in study_configs(pf, "kernels", "full")}
        assert keys <= set(sidecar["inputs"].values())


def test_replicates_by_groups_a_grid_per_design_in_order():
    """A grid's runs (field outer, seed inner) as one Replicates per value of the field, seeds in order."""
    from types import SimpleNamespace

    from analysis.probing.studies import replicates_by

    runs = [
        SimpleNamespace(probe="prompt_forgetting", config=pf.Config.preset("smoke", n_layers=L, seed=s))
        for L in (3, 1)
        for s in (0, 7)
    ]
    groups = replicates_by(runs, "n_layers")
    assert [g.config.model.n_layers for g in groups] == [3, 1] and [g.seeds for g in groups] == [[0, 7], [0, 7]]
    assert all(g.module is pf for g in groups)
    with pytest.raises(ValueError, match="runs must hold at least one result"):
        replicates_by([], "n_layers")
