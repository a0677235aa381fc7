"""Replicates of one configuration at independent seeds (analysis.probing.replicates) and the claims judged over
them."""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest

import probes
from analysis.claims.evidence import mean_se, replicate_seeds, t_multiple
from analysis.probing.replicates import Replicates, replicate_configs, replicated_run

PROBE_SOURCE = textwrap.dedent(
    '''
    """A probe whose claim is the mean of draws that depend on the seed (for analysis.probing.replicates)."""

    import os
    from dataclasses import dataclass

    import numpy as np

    from analysis.claims.ledger import Ledger
    from analysis.probing.base import ProbeConfig, Result, param

    NAME = "repfake"
    VERSION = "1"
    REQUIRES = None


    @dataclass(frozen=True)
    class Config(ProbeConfig):
        PRESETS = {"smoke": {"n": 8}, "full": {}}
        n: int = param(32, "draws", minimum=2)
        offset: float = param(0.0, "added to every draw")
        seed: int = param(0, "seed of the draws", minimum=0)


    def run(config, model=None, progress=True):
        with open(os.environ["REPFAKE_LOG"], "a") as f:
            f.write(f"{config.seed}\\n")
        x = np.random.default_rng(config.seed).normal(config.offset, 1.0, config.n)
        r = Result(probe=NAME, config=config, scalars={"mean": float(x.mean()), "se": float(x.std(ddof=1) / 8)})
        r.ledger = check_claims(r)
        return r


    def check_claims(r):
        return check_claims_over((r,))


    def check_claims_over(results):
        led = Ledger(NAME, preset=results[0].config.preset_name)
        if len(results) > 1:
            band = dict(replicates=[x.scalars["mean"] for x in results])
        else:
            band = dict(measured=results[0].scalars["mean"], se=results[0].scalars["se"], dof=7,
                        within_run="the draws of one run")
        led.predict("mean_is_offset", expected=results[0].config.offset, **band, alternative=50.0,
                    hypothesis="a far mean", source="construction", why="95% t band")
        return led
    '''
)


@pytest.fixture
def fake(tmp_path, monkeypatch):
    folder = tmp_path / "probe"
    folder.mkdir()
    (folder / "repfake.py").write_text(PROBE_SOURCE)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("WORKBENCH_PROBES", "repfake")
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("REPFAKE_LOG", str(tmp_path / "log"))
    monkeypatch.setenv("TQDM_DISABLE", "1")
    return probes.get("repfake")


def runs_logged(tmp_path) -> list[int]:
    log = tmp_path / "log"
    return [int(s) for s in log.read_text().split()] if log.exists() else []


def test_replicates_are_independent_seeds_and_replicate_zero_is_the_config(fake, tmp_path):
    cfg = fake.Config.preset("smoke", seed=3)
    rep = replicated_run("repfake", cfg, 4, progress=False)
    assert rep.seeds == replicate_seeds(3, 4) and rep.main.config == cfg
    assert sorted(runs_logged(tmp_path)) == sorted(replicate_seeds(3, 4))
    assert rep.keys == [probes.cache_key(fake, r.config) for r in rep.results] and len(set(rep.keys)) == 4
    assert list(rep.inputs("main")) == [f"main seed {s}" for s in rep.seeds]
    assert rep.scalars is rep.main.scalars and rep.config == cfg


def test_band_is_the_spread_over_seeds(fake, tmp_path):
    rep = replicated_run("repfake", fake.Config.preset("smoke"), 5, progress=False)
    c = rep.ledger["mean_is_offset"]
    values = [r.scalars["mean"] for r in rep.results]
    stats = mean_se(values)
    assert c.measured == pytest.approx(stats.mean, rel=1e-12)
    assert c.tolerance["policy"] == "t95" and c.tolerance["n"] == 5 and c.tolerance["within_run"] is None
    assert c.tolerance["k"] == pytest.approx(t_multiple(4)) and c.tolerance["se"] == pytest.approx(stats.se)
    # one run alone: its within-run band
    single = rep.main.ledger["mean_is_offset"]
    assert single.tolerance["within_run"] and single.tolerance["n"] is None


def test_spread_is_the_seed_mean_and_its_t_interval(fake):
    rep = replicated_run("repfake", fake.Config.preset("smoke"), 4, progress=False)
    values = [r.scalars["mean"] for r in rep.results]
    mean, half = rep.spread("mean")
    assert mean == pytest.approx(np.mean(values), rel=1e-12)
    assert half == pytest.approx(t_multiple(3) * np.std(values, ddof=1) / 2, rel=1e-12)
    one = replicated_run("repfake", fake.Config.preset("smoke"), 1, progress=False)
    assert one.spread("mean")[0] == one.scalars["mean"] and math.isnan(one.spread("mean")[1])
    with pytest.raises(ValueError, match="^scalar must be one of"):
        rep.spread("alpha")


def test_warm_rerun_computes_nothing_and_an_interrupted_set_resumes(fake, tmp_path):
    cfg = fake.Config.preset("smoke")
    probes.cached_run("repfake", cfg.replace(seed=replicate_seeds(0, 3)[1]), progress=False)  # one done earlier
    replicated_run("repfake", cfg, 3, progress=False)
    assert len(runs_logged(tmp_path)) == 3  # the earlier one was not run again
    again = replicated_run("repfake", cfg, 3, progress=False)
    assert len(runs_logged(tmp_path)) == 3 and all(r.from_cache for r in again.results)


def test_bad_input_names_the_parameter(fake):
    cfg = fake.Config.preset("smoke")
    for n in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="^n must be"):
            replicate_configs(fake, cfg, n)
    with pytest.raises(ValueError, match="no check_claims_over"):
        Replicates(probes.get("icl_gd"), (probes.cached_run("repfake", cfg, progress=False),))
    with pytest.raises(ValueError, match="at least one"):
        Replicates(fake, ())


def test_a_hook_must_keep_the_replicate_seed(fake, monkeypatch):
    monkeypatch.setattr(fake, "replicate_config", lambda config, i: config.replace(seed=config.seed + i), raising=False)
    with pytest.raises(ValueError, match="replicate_seed"):
        replicate_configs(fake, fake.Config.preset("smoke"), 2)


# ---------------------------------------------------------------------- representational collapse


@pytest.fixture(scope="module")
def collapse_pair(tmp_path_factory):
    mod = probes.get("representational_collapse")
    cfg = mod.Config.preset("smoke", family="counting", extend_dtype="float32", n_layers=2)
    rep = replicated_run(mod, cfg, 2, cache_root=tmp_path_factory.mktemp("rc"), progress=False)
    return mod, rep


def test_collapse_replicates_drop_the_extension_after_the_first(collapse_pair):
    mod, rep = collapse_pair
    first, second = (r.config for r in rep.results)
    assert first.extend.dtype == "float32" and second.extend.dtype == "" and second.seed == rep.seeds[1]
    assert second == first.replace(seed=rep.seeds[1], extend_dtype="", extend_lo=0.5, extend_hi=2.0)
    assert "ext_collapse_n" in rep.results[0].scalars and "ext_collapse_n" not in rep.results[1].scalars


def test_collapse_claims_over_seeds_take_the_seed_spread(collapse_pair):
    mod, rep = collapse_pair
    led = rep.ledger
    c = led["slope_matches_prediction"]
    slopes = [float(r.data["layer_slope"].sel(layer=2)) for r in rep.results]
    assert c.measured == pytest.approx(float(np.mean(slopes)), rel=1e-12)
    assert c.tolerance["n"] == 2 and c.tolerance["within_run"] is None
    assert "2 independent seeds" in c.why
    identity = led["uniform_equals_linear_stack"] if "uniform_equals_linear_stack" in led else None
    assert identity is None  # softmax: no exact linear stack
    # the collapse length compares one model with its own fit: the first seed, its within-run interval
    length = led["collapse_length_float32"]
    assert length.to_dict() == rep.results[0].ledger["collapse_length_float32"].to_dict()
    # every other evaluated claim is over the seeds
    for claim in led.claims:
        if claim.status != "not_evaluated" and claim.role == "prediction" and claim.name != length.name:
            assert not claim.tolerance.get("within_run"), (claim.name, claim.tolerance)


def test_collapse_claims_of_one_result_are_its_own_ledger(collapse_pair):
    mod, rep = collapse_pair
    for r in rep.results:
        assert mod.check_claims_over((r,)).to_dict() == mod.check_claims(r).to_dict()


def test_collapse_refuses_results_that_are_not_replicates(collapse_pair):
    mod, rep = collapse_pair
    a, b = rep.results
    with pytest.raises(ValueError, match="distinct seeds"):
        mod.check_claims_over((a, a))
    other = probes.Result(probe=mod.NAME, config=b.config.replace(n_layers=1), data=b.data, scalars=b.scalars)
    with pytest.raises(ValueError, match=r"results\[1\] is not a replicate"):
        mod.check_claims_over((a, other))
    with pytest.raises(ValueError, match="at least one"):
        mod.check_claims_over(())


def test_collapse_slope_band_matches_the_t_rule(collapse_pair):
    mod, rep = collapse_pair
    c = rep.ledger["slope_layer1"]
    slopes = [float(r.data["layer_slope"].sel(layer=1)) for r in rep.results]
    half = t_multiple(1) * float(np.std(slopes, ddof=1)) / math.sqrt(2)
    assert c.tolerance["k"] * c.tolerance["se"] == pytest.approx(half, rel=1e-9)


# ---------------------------------------------------------------------- worst_of


def _record(kind: str, measured: float, **kw):
    from analysis.claims.ledger import Ledger

    led = Ledger("w")
    if kind == "identity":
        led.identity("c", measured=measured, atol=1.0, source="s", why="w")
    else:
        led.bound(
            "c", measured=measured, bound=kw.get("bound", 10.0), relation=kw.get("relation", "<="), source="s", why="w"
        )
    return led["c"]


def test_worst_of_takes_the_record_furthest_from_holding():
    from analysis.probing.replicates import worst_of

    w = worst_of([_record("identity", x) for x in (0.1, -0.7, 0.3)])
    assert w.measured == -0.7 and w.statement.endswith("(worst of 3 seeds)")
    assert worst_of([_record("bound", x) for x in (2.0, 9.0, 4.0)]).measured == 9.0
    assert worst_of([_record("bound", x, relation=">", bound=1.0) for x in (2.0, 9.0, 4.0)]).measured == 2.0
    failing = worst_of([_record("bound", x) for x in (9.5, 12.0, 11.0)])
    assert failing.measured == 12.0 and failing.status == "fail"
    assert worst_of([_record("identity", x) for x in (0.1, math.nan, 3.0)]).outcome is None
    one = _record("identity", 0.2)
    assert worst_of([one]) is one
    with pytest.raises(ValueError, match="one claim"):
        worst_of([one, _record("bound", 1.0)])
    with pytest.raises(ValueError, match="one record per replicate"):
        worst_of([])


# ---------------------------------------------------------------------- prompt forgetting


@pytest.fixture(scope="module")
def forgetting(tmp_path_factory):
    mod = probes.get("prompt_forgetting")
    root = tmp_path_factory.mktemp("pf")
    base = mod.Config.preset("smoke")
    reps = {L: replicated_run(mod, base.replace(n_layers=L), 2, cache_root=root, progress=False) for L in (1, 2, 3)}
    reps["bias"] = replicated_run(mod, base.replace(logit_bias="cancel"), 2, cache_root=root, progress=False)
    return mod, reps


def test_forgetting_alpha_claims_take_the_seed_spread(forgetting):
    mod, reps = forgetting
    rep = reps[2]
    alphas = [r.scalars["alpha"] for r in rep.results]
    c = rep.ledger["alpha_matches_relay"]
    assert c.measured == pytest.approx(float(np.mean(alphas)), rel=1e-12)
    assert c.tolerance["policy"] == "t95" and c.tolerance["n"] == 2 and not c.tolerance.get("within_run")
    assert "2 independent seeds" in c.why and "mean over 2 seeds" in c.statement
    # one run alone keeps its bootstrap CI over prompt pairs
    assert rep.main.ledger["alpha_matches_relay"].tolerance["policy"] == "ci95"
    assert mod.check_claims_over(rep.results[:1]).to_dict() == mod.check_claims(rep.main).to_dict()


def test_forgetting_bounds_over_seeds_are_the_worst_replicate(forgetting):
    mod, reps = forgetting
    rep = reps[2]
    led = rep.ledger
    worst_logit = max(r.scalars["max_logit"] for r in rep.results)
    assert led["condition_dilution_regime"].measured == pytest.approx(worst_logit, rel=1e-12)
    assert led["condition_prenorm_rms"].measured == pytest.approx(
        min(r.scalars["min_prenorm_rms"] for r in rep.results), rel=1e-12
    )
    assert led["condition_dilution_regime"].statement.endswith("(worst of 2 seeds)")
    # the regime triage of the alpha claim reads the worst replicate's condition
    alpha = led["alpha_matches_relay"]
    if alpha.status == "fail" and led["condition_dilution_regime"].status == "fail":
        assert alpha.finding == {"kind": "regime", "claims": ["condition_dilution_regime"]}


def test_forgetting_cross_run_claims_over_seeds(forgetting):
    mod, reps = forgetting
    stops = mod.bias_claims(reps[2], reps["bias"])["bias_stops_decay"]
    biased = [r.scalars["alpha"] for r in reps["bias"].results]
    assert stops.measured == pytest.approx(float(np.mean(biased)), rel=1e-12) and stops.tolerance["n"] == 2
    assert stops.alternative["value"] == pytest.approx(float(np.mean([r.scalars["alpha"] for r in reps[2].results])))
    slope = mod.depth_sweep_claims([reps[1], reps[2], reps[3]])["alpha_depth_slope_matches_relay"]
    Ls = np.array([1.0, 2.0, 3.0])
    w = (Ls - Ls.mean()) / ((Ls - Ls.mean()) ** 2).sum()
    per_seed = [float(w @ [reps[L].results[j].scalars["alpha"] for L in (1, 2, 3)]) for j in range(2)]
    assert slope.measured == pytest.approx(float(np.mean(per_seed)), rel=1e-12) and slope.tolerance["n"] == 2
    # single results still give the one-model bands
    single = mod.depth_sweep_claims([reps[L].main for L in (1, 2, 3)])["alpha_depth_slope_matches_relay"]
    assert single.tolerance["within_run"]
    with pytest.raises(ValueError, match="same seeds"):
        mod.bias_claims(reps[2], reps["bias"].main)
    with pytest.raises(ValueError, match="not a replicate"):
        mod.check_claims_over((reps[2].main, reps[3].results[1]))


# ---------------------------------------------------------------------- the command line


def test_run_with_replicate_seeds_judges_over_them(fake, tmp_path, capsys):
    import json

    from analysis.probing import cli

    rc = cli.main(["run", "repfake", "--preset", "smoke", "--replicate-seeds", "3", "--json", "-", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0
    d = json.loads(out)
    assert d["replicate_seeds"] == replicate_seeds(0, 3)
    [check] = d["checks"]
    means = [
        probes.cached_run("repfake", fake.Config.preset("smoke", seed=s)).scalars["mean"] for s in replicate_seeds(0, 3)
    ]
    assert check["measured"] == pytest.approx(float(np.mean(means)), rel=1e-12)
    assert sorted(runs_logged(tmp_path)) == sorted(replicate_seeds(0, 3))  # each seed ran once, into the cache
    rc = cli.main(["run", "repfake", "--preset", "smoke", "--replicate-seeds", "3", "--no-progress"])
    assert rc == 0 and "claims judged over 3 independent seeds" in capsys.readouterr().out
    assert len(runs_logged(tmp_path)) == 3


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--replicate-seeds", "0"], "must be an integer >= 1, got '0'"),
        (["--replicate-seeds", "two"], "must be an integer >= 1"),
        (["--replicate-seeds", "2.5"], "must be an integer >= 1"),
        (["--replicate-seeds", "2", "--save", "SAVE"], "--save writes one run's folder"),
        (["--replicate-seeds", "2", "--model", "minilm"], "cannot take --model"),
    ],
)
def test_replicate_seeds_bad_input_exits_2_with_one_line(fake, tmp_path, capsys, extra, needle):
    from analysis.probing import cli

    extra = [str(tmp_path / "res") if a == "SAVE" else a for a in extra]
    rc = cli.main(["run", "repfake", "--preset", "smoke", *extra])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and needle in err
    assert runs_logged(tmp_path) == []


def test_replicate_seeds_needs_a_probe_that_judges_replicates(capsys):
    from analysis.probing import cli

    rc = cli.main(["run", "icl_gd", "--preset", "smoke", "--replicate-seeds", "2"])
    err = capsys.readouterr().err
    assert rc == 2 and "icl_gd judges no replicates" in err and len(err.strip().splitlines()) == 1
