"""The sequential design (analysis.claims.evidence, analysis.probing.sequential): a claim undecided at one look runs
again at
its next,
every look's band at the per-look coverage that keeps the claim's overall error rate at 5%."""

from __future__ import annotations

import math
import types
from dataclasses import dataclass

import numpy as np
import pytest
import xarray as xr
from scipy import stats

import probes
from analysis.claims import evidence, specs
from analysis.claims.evidence import next_look, sequential_coverage, sequential_error
from analysis.claims.ledger import Ledger
from analysis.claims.specs import ClaimSpec, declare
from analysis.probing.base import ProbeConfig, Result, param
from analysis.probing.sequential import decided_run, next_looks

SIGN = dict(tests="paper", comparison="sign", paper="000#1", statement="the effect is positive", scope="by design")

# ------------------------------------------------------------------------------------------------ the error rate


def test_one_look_is_the_one_coverage_and_naive_looks_inflate_the_error():
    assert sequential_coverage((5,)) == evidence.COVERAGE
    # judging three looks at 95% each excludes a true value at some look far more often than 5%
    assert sequential_error((3, 6, 12), 0.95) > 0.10


@pytest.mark.parametrize("looks", [(3, 8, 24), (5, 10, 20), (2, 4)])
def test_the_per_look_coverage_is_the_smallest_that_keeps_five_percent(looks):
    c = sequential_coverage(looks)
    assert evidence.COVERAGE < c < 1 - 0.05 / len(looks) / 4
    assert sequential_error(looks, c) <= 0.05
    assert sequential_error(looks, c - 2e-3) > 0.05  # any less and the design errs more often than 5%
    assert sequential_coverage(looks) == c  # deterministic (a fixed simulation)


def test_the_error_rate_holds_on_paths_the_calibration_never_saw():
    """An independent simulation (other seed, non-cumulative code) at the calibrated coverage: 5% within its noise."""
    looks = (3, 8, 24)
    c = sequential_coverage(looks)
    rng = np.random.default_rng(2026)
    x = rng.standard_normal((40_000, looks[-1]))
    excluded = np.zeros(len(x), bool)
    for n in looks:
        xs = x[:, :n]
        t = np.abs(xs.mean(1)) / (xs.std(1, ddof=1) / math.sqrt(n))
        excluded |= t > stats.t.ppf(0.5 + c / 2, n - 1)
    rate = excluded.mean()
    assert abs(rate - 0.05) < 4 * math.sqrt(0.05 * 0.95 / len(x))


def test_next_look_follows_the_schedule_and_stops_at_the_budget_or_off_it():
    assert next_look((3, 8, 24), 3) == 8 and next_look((3, 8, 24), 8) == 24
    assert next_look((3, 8, 24), 24) is None and next_look((3, 8, 24), 5) is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"looks": (3, 8)}, "needs both replicates"),
        ({"replicates": "seeds"}, "needs both replicates"),
        ({"replicates": "seeds", "looks": (8, 3)}, "strictly increasing"),
        ({"replicates": "seeds", "looks": (1, 3)}, "replicate counts >= 2"),
        ({"replicates": "no such", "looks": (3, 8)}, "replicates must be the config field"),
        ({"replicates": "seeds", "looks": (3, 8), "comparison": "bound"}, "not a 'bound' comparison"),
    ],
)
def test_a_bad_design_is_refused_with_one_line(fields, message):
    with pytest.raises(ValueError, match=message) as err:
        ClaimSpec("effect", **{**SIGN, **fields})
    assert "'effect'" in str(err.value) and "\n" not in str(err.value)


# ------------------------------------------------------------------------------------------------ the ledger


@pytest.fixture
def declared():
    name = "seqtoy"
    declare(name, ClaimSpec("effect", **SIGN, replicates="seeds", looks=(3, 8, 24)), ClaimSpec("plain", **SIGN))
    yield name
    specs._REGISTRY.pop(name, None)


def test_a_declared_design_widens_every_look_and_says_so(declared):
    values = [0.9, 1.3, 0.7, 1.1]
    led = Ledger(declared)
    common = dict(replicates=values, sign=1, hypothesis="no effect", source="s", why="seeds")
    seq, plain = led.direction("effect", **common), led.direction("plain", **common)
    c = sequential_coverage((3, 8, 24))
    assert seq.tolerance["looks"] == [3, 8, 24] and seq.tolerance["coverage_per_look"] == c
    assert seq.tolerance["k"] == pytest.approx(evidence.t_multiple(3, c)) and "looks" not in plain.tolerance
    assert seq.tolerance["k"] > plain.tolerance["k"] == pytest.approx(evidence.t_multiple(3))
    assert "sequential design judged at 3, 8, 24 seeds" in seq.why


def test_a_declared_design_refuses_a_band_that_is_not_over_seeds(declared):
    led = Ledger(declared)
    with pytest.raises(ValueError, match="from replicates, not a within-run SE"):
        led.direction(
            "effect",
            measured=1.0,
            se=0.1,
            dof=math.inf,
            within_run="a closed form",
            sign=1,
            hypothesis="h",
            source="s",
            why="w",
        )
    with pytest.raises(ValueError, match="a CI cannot take the per-look coverage"):
        led.direction("effect", measured=1.0, ci=(0.5, 1.5), coverage=0.95, sign=1, hypothesis="h", source="s", why="w")


# ------------------------------------------------------------------------------------------------ the driver

# per-seed effects: the first 3 straddle 0 at the per-look band, the first 8 exclude it
EFFECTS = [0.2, 1.6, -0.4, 0.9, 1.1, 0.8, 1.2, 0.7] + [1.0] * 16
NULL = [1.0, -1.0] * 12  # no effect: undecided at every look


@dataclass(frozen=True)
class ToyConfig(ProbeConfig):
    seeds: int = param(3, "replicate seeds", minimum=2, maximum=32)
    null: bool = param(False, "draw effects with mean 0")


RUNS: list[int] = []


def toy_run(config: ToyConfig, model=None, progress: bool = True) -> Result:
    RUNS.append(config.seeds)
    values = np.array((NULL if config.null else EFFECTS)[: config.seeds])
    led = Ledger("seqtoy", preset=config.preset_name)
    led.direction("effect", replicates=values, sign=1, hypothesis="no effect", source="s", why="seeds")
    data = xr.Dataset({"effect": ("seed", values)})
    return Result(probe="seqtoy", config=config, data=data, scalars={"n": config.seeds}, ledger=led)


@pytest.fixture
def toy(declared):
    mod = types.ModuleType("seqtoy", "A per-seed effect judged by a sequential design.")
    mod.NAME, mod.VERSION, mod.REQUIRES = "seqtoy", "1", {"causal": True, "input": ("tokens",)}
    mod.Config, mod.run = ToyConfig, toy_run
    RUNS.clear()
    yield probes.register("seqtoy", mod)
    probes.unregister("seqtoy")


def test_an_undecided_claim_runs_again_at_its_next_look_until_decided(toy, tmp_path):
    first = probes.cached_run(toy, ToyConfig(), cache_root=tmp_path)
    assert first.ledger.get("effect").verdict == "undecided"
    assert next_looks("seqtoy", first) == {"seeds": (8, ["seqtoy/effect"])}
    result = decided_run(toy, ToyConfig(), cache_root=tmp_path)
    assert result.config.seeds == 8 and result.ledger.get("effect").verdict == "agrees"
    assert result.meta["sequential"] == [{"from": {"seeds": 3}, "to": {"seeds": 8}, "undecided": ["seqtoy/effect"]}]
    assert RUNS == [3, 8]  # the first look came from the cache
    decided_run(toy, ToyConfig(), cache_root=tmp_path)
    assert RUNS == [3, 8]  # a warm rerun computes nothing


def test_the_design_stops_at_its_budget_and_says_the_budget_is_spent(toy, tmp_path):
    result = decided_run(toy, ToyConfig(null=True), cache_root=tmp_path)
    claim = result.ledger.get("effect")
    assert result.config.seeds == 24 and claim.verdict == "undecided" and RUNS == [3, 8, 24]
    assert "budget (24 seeds, looks 3, 8, 24) is spent" in claim.verdict_reason


def test_a_run_off_the_schedule_is_judged_as_it_is(toy, tmp_path):
    result = decided_run(toy, ToyConfig(seeds=4), cache_root=tmp_path)
    assert result.config.seeds == 4 and "sequential" not in result.meta and RUNS == [4]


def test_every_declared_design_fits_its_probe_config():
    """Each design's first look is its probe's full-preset count and its budget a count the config accepts."""
    from analysis.probing.registry import load_declarations

    load_declarations()
    checked = 0
    for name, decl in specs.registered().items():
        for spec in decl:
            if not spec.looks:
                continue
            full = probes.get(name).Config.preset("full")
            assert full.value_of(spec.replicates) == spec.looks[0], (name, spec.name)
            full.replace(**{spec.replicates: spec.budget})  # within the field's bounds (ValueError otherwise)
            checked += 1
    assert checked >= 5


def test_the_command_line_takes_the_looks_and_says_so(toy, tmp_path, monkeypatch, capsys):
    import json

    from analysis.probing import cli

    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TQDM_DISABLE", "1")
    assert cli.main(["run", "seqtoy", "--cache"]) == 0
    assert "sequential design: seeds 3 -> 8 (1 claim(s) undecided)" in capsys.readouterr().out
    assert cli.main(["run", "seqtoy", "--json", "-"]) == 0  # afresh: both looks computed again
    payload = json.loads(capsys.readouterr().out)
    assert payload["config"]["seeds"] == 8 and payload["meta"]["sequential"][0]["to"] == {"seeds": 8}
    assert RUNS == [3, 8, 3, 8]
