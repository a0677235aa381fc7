"""Probe representational_collapse (smoke-sized): interface, exact uniform checks, rates, precision, validation."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
import torch

import probes
from analysis.claims.evidence import t_multiple
from analysis.core.paths import REPO
from analysis.probing.base import run_probe
from analysis.zoo.model import TinyTransformer

mod = probes.get("representational_collapse")
UNIFORM = dict(attention="uniform", norm="none", d_mlp=0)


def _run(**over):
    return run_probe(mod, mod.Config.preset("smoke", **over), progress=False)


def test_smoke_result_has_the_interface_fields():
    r = _run(family="counting")
    cfg = r.config
    ns = r.data["n"].values
    assert ns[0] == cfg.min_len and ns[-1] == cfg.max_len and np.all(np.diff(ns) > 0)
    assert list(r.data["dtype"].values) == ["float64", *cfg.dtypes]
    assert r.data["distance"].dims == ("dtype", "n")
    assert r.data["sensitivity"].shape == (cfg.model.n_layers, cfg.sens.len)
    assert r.data["rank_residual"].shape == (cfg.model.n_layers + 1,)
    assert r.data["collapse_n"].dims == ("dtype",)
    lo, hi = r.data["slope_ci"].values
    assert lo <= r.scalars["slope"] <= hi
    assert np.all(r.data["distance"].values[0] > 0)
    assert r.ledger.ok, r.ledger.report()  # no identity fails; predictions may (findings)
    for c in r.ledger.claims:
        assert c.role in ("identity", "prediction", "bound", "paper")
        if c.role == "prediction" and c.status != "not_evaluated":
            assert c.alternative and c.alternative["hypothesis"], c.line()
        for ref in c.diagnosed_by:
            assert ref in r.ledger, c.line()
    # the geometric mean really is over samples
    gm = np.exp(np.log(r.data["distance_samples"].values[:, 0]).mean(axis=0))
    np.testing.assert_allclose(r.data["distance"].values[0], gm, rtol=1e-12)


@pytest.mark.parametrize("family", ["repeat_last", "counting"])
def test_uniform_stack_is_exact_and_rates_match(family):
    r = _run(family=family, **UNIFORM)
    for name in ("uniform_equals_linear_stack", "sensitivity_equals_path_sum"):
        assert r.ledger[name].role == "identity" and r.ledger[name].status == "pass", r.ledger[name].line()
    assert r.scalars["predicted_slope"] == (2.0 if family == "counting" else 1.0)
    c = r.ledger["slope_matches_prediction"]
    assert c.role == "prediction" and c.status != "not_evaluated" and c.expected == r.scalars["predicted_slope"]
    assert c.alternative["value"] == (1.0 if family == "counting" else 2.0)  # n^-1 against n^-2
    # the 95% t band of the bootstrap SE over the bases, n_bases - 1 dof, stated as a claim about this one model
    assert c.tolerance["dof"] == r.config.n_bases - 1 and c.tolerance["within_run"]
    assert c.tolerance["k"] == pytest.approx(t_multiple(r.config.n_bases - 1))
    assert c.tolerance["se"] == pytest.approx(float(r.data["layer_slope_se"][-1]))


def _rejudge(r, preset="full", **planted):
    """The claims of ``r`` re-made from its data with ``planted`` arrays/scalars replaced (preset ``full``)."""
    data, scalars = r.data.copy(), dict(r.scalars)
    for k, v in planted.items():
        if k in data:
            data[k] = (data[k].dims, np.broadcast_to(v, data[k].shape).copy())
        else:
            scalars[k] = v
    res = type(r)(probe=r.probe, config=r.config.replace(preset_name=preset), data=data, scalars=scalars, meta=r.meta)
    return mod.check_claims(res)


def test_a_planted_wrong_slope_fails_and_the_alternative_is_named():
    r = _run(family="repeat_last", **UNIFORM)
    led = _rejudge(r, layer_slope=2.0, layer_drift=0.0)  # the counting law, no drift to diagnose a miss
    c = led["slope_matches_prediction"]
    assert c.status == "fail", c.line()
    assert c.against_alternative().status == "pass"  # the measurement sits on the alternative
    # a miss whose drift toward the prediction is measured is a deviation naming that claim
    led = _rejudge(r, layer_slope=0.5, layer_drift=5.0, layer_drift_se=0.01)
    c = led["slope_matches_prediction"]
    assert c.status == "deviation" and c.diagnosed_by == ["slope_matches_prediction_drifts_toward_prediction"]
    # the drift against the prediction does not diagnose it
    assert (
        _rejudge(r, layer_slope=0.5, layer_drift=-5.0, layer_drift_se=0.01)["slope_matches_prediction"].status == "fail"
    )


def test_sensitivity_claim_is_recorded_once_and_a_flat_profile_fails():
    r = _run(family="counting")
    c = r.ledger["sensitivity_first_exceeds_middle"]
    assert c.role == "prediction" and c.alternative["value"] == 0.0 and c.tolerance["sign"] == 1
    x = np.log(r.data["sensitivity_samples"].values[:, -1, 0] / r.data["sensitivity_samples"].values[:, -1, 16])
    assert c.measured == pytest.approx(x.mean())
    assert [k.name for k in r.ledger.claims].count("sensitivity_first_exceeds_middle") == 1
    flat = _rejudge(r, sensitivity_samples=1.0)["sensitivity_first_exceeds_middle"]
    assert flat.status in ("fail", "inconclusive"), flat.line()


def test_collapse_length_prediction_beyond_max_len():
    r = _run(
        family="counting",
        dtypes=("float32",),
        extend_dtype="float32",
        extend_lo=3.0,
        extend_hi=6.0,
        extend_lengths=4,
        extend_bases=2,
    )
    assert r.ledger["collapse_length_float32"].status == "not_evaluated"  # requires the full preset
    assert r.data["ext_distance"].dims == ("ext_dtype", "n_ext") and r.data["n_ext"].values[-1] == 6 * 128
    p = mod.collapse_prediction(r, "float32", grid_ratio=r.scalars["ext_grid_ratio"])
    good = _rejudge(r, ext_collapse_n=p["n_star"])["collapse_length_float32"]
    assert good.role == "prediction" and good.status in ("pass", "inconclusive"), good.line()
    # the competing law (k^-1 from the same anchor) crosses later, at n_a ratio^(1/1)
    assert good.alternative["value"] == pytest.approx(p["n_a"] * p["ratio"])
    assert _rejudge(r, ext_collapse_n=p["hi"] * 10)["collapse_length_float32"].status == "fail"
    assert _rejudge(r, ext_collapse_n=math.nan)["collapse_length_float32"].status == "fail"  # no collapse measured


def test_exact_check_detects_a_broken_model():
    """A model passed in with an MLP is not the linear stack: its states must differ from the stack's."""
    cfg = mod.Config.preset("smoke", family="counting", **UNIFORM)
    model = TinyTransformer(mod.model_config(cfg).replace(d_mlp=8, dtype="float64")).eval()
    models = {"float64": model}
    m = mod.measure_distances(models, cfg, mod.lengths(cfg)[:2], progress=False)
    (h0, idx), h_last = m["exact"]["h0"][0], m["exact"]["last"][0]
    from analysis.theory import representational_collapse as theory

    pred = theory.linear_stack(h0[0, : idx[0] + 1], mod.uniform_matrices(model))[-1]
    assert np.abs(pred - h_last[0]).max() > 1e-6


def test_counting_decays_faster_than_repeat_and_learned_positions_do_not_collapse():
    rep = _run(family="repeat_last")
    cnt = _run(family="counting")
    assert cnt.scalars["slope_ci_lo"] > rep.scalars["slope_ci_hi"]
    learned = _run(family="counting", pos="learned")
    c = learned.ledger["learned_positions_no_collapse"]
    assert c.role == "prediction" and c.expected == 0.0 and c.alternative["value"] == 2.0
    assert "slope_matches_prediction" not in learned.ledger


def test_precision_collapse_is_consistent():
    r = _run(family="counting", **UNIFORM)
    c = dict(zip(r.data["dtype"].values, r.data["collapse_n"].values, strict=True))
    # coarser formats collapse no later than finer ones
    assert c["float16"] <= c.get("float32", math.inf) or math.isnan(c["float32"])
    assert c["bfloat16"] <= c["float16"]
    assert math.isnan(c["float64"])
    c = r.ledger["collapse_float16_unresolved"]
    assert c.role == "prediction" and c.tolerance["sign"] == 1 and c.alternative["value"] == 0.0
    # a format that tracked float64 past the crossing (planted: equal distances) does not pass
    D = r.data["distance_samples"].values.copy()
    noise = np.random.default_rng(0).uniform(0.5, 1.5, size=D[:, 0].shape)  # same error law before and after
    D[:, list(r.data["dtype"].values).index("float16")] = D[:, 0] * (1 + 1e-3 * noise)
    assert _rejudge(r, distance_samples=D)["collapse_float16_unresolved"].status in ("fail", "inconclusive")
    assert 0.0 <= r.scalars["identical_after_collapse_float16"] <= 1.0
    # the fit's collapse prediction is the probe's extrapolation, inside its own interval
    pred = mod.collapse_prediction(r, "float16", grid_ratio=1.5)
    assert pred["n_star"] == pytest.approx(r.scalars["collapse_n_extrapolated_float16"], rel=1e-9)
    assert pred["lo"] <= pred["n_star"] <= pred["hi"] / 1.5 * (1 + 1e-12)
    # where the float64 distance is far above the resolution, float32 tracks it
    res = r.data["resolution"].sel(dtype="float32").values
    far = r.data["distance"].values[0] > 1e3 * res
    assert np.all(r.data["rel_error"].sel(dtype="float32").values[far] < 0.05)


def test_separators_turn_the_counting_rate_from_two_to_one():
    r = _run(family="counting", separator_every=3, **UNIFORM)
    assert r.scalars["predicted_slope"] == 1.0
    c = r.ledger["slope_matches_prediction"]
    assert c.expected == 1.0 and c.alternative["value"] == 2.0, c.line()  # against the no-separator rate


def _zoo(**over):
    from analysis.zoo.model import ModelConfig

    base = dict(vocab_size=300, d_model=24, n_layers=2, n_heads=2, d_mlp=48, seed=3)
    return TinyTransformer(ModelConfig(**{**base, **over})).eval()


PASSED = dict(max_len=48, n_lengths=5, n_bases=2, sens_len=12, n_boot=20, fit_lo=8.0, dtypes=("float32",))


def test_bidirectional_model_is_measured_and_causal_claims_not_evaluated():
    cfg = mod.Config.preset("smoke", **PASSED)
    r = run_probe(mod, cfg, model=_zoo(causal=False), progress=False)
    assert r.scalars["causal"] == 0.0
    assert np.all(r.data["distance"].sel(dtype="float64").values > 0)
    assert r.data["sensitivity"].shape == (2, cfg.sens.len) and np.all(np.isfinite(r.data["sensitivity"].values))
    for name in ("slope_matches_prediction", "slope_layer1", "sensitivity_first_exceeds_middle"):
        c = r.ledger[name]
        assert c.status == "not_evaluated" and c.why == mod.BIDIRECTIONAL, c.line()
    assert r.ledger.ok, r.ledger.report()


def test_bidirectional_padding_is_hidden_exactly():
    """Padded keys are hidden by the -inf bias: each member's state equals the one of running it alone."""
    cfg = mod.Config.preset("smoke", family="repeat_last", **PASSED)
    model = _zoo(causal=False, dtype="float64")
    ns = mod.lengths(cfg)[:2]
    m = mod.measure_distances({"float64": model}, cfg, ns, progress=False, vocab=300)
    a, b = mod.make_pair(cfg, mod.draw_samples(cfg, 300), 0, int(ns[-1]))
    from analysis.zoo.hooks import run_with_cache

    last = "blocks.1.hook_resid_post"
    ha, hb = (run_with_cache(model, x[None], names=[last])[1][last][0, -1] for x in (a, b))
    # same arithmetic up to the order of the masked (zero-weight) terms: float64 rounding only
    np.testing.assert_allclose(m["per_dtype"]["float64"]["distance"][0, -1], float((ha - hb).norm()), rtol=1e-10)
    # without the bias the padding would leak into the shorter member: the distances would differ
    assert float((ha - hb).norm()) > 0


def test_passed_model_with_too_few_positions_is_refused():
    cfg = mod.Config.preset("smoke", **PASSED)
    with pytest.raises(ValueError, match=r"max_len=48.*40 positions"):
        run_probe(mod, cfg, model=_zoo(pos="learned", max_len=40), progress=False)


def test_token_ids_follow_the_model_vocabulary():
    cfg = mod.Config.preset("smoke", separator_every=3, family="counting")
    s1, s2 = mod.draw_samples(cfg, 1000), mod.draw_samples(cfg, 1000)
    assert all(torch.equal(s1[k], s2[k]) for k in ("base", "one", "zero", "replacement"))  # seeded
    assert s1["separator"] == 999 and int(s1["base"].max()) < 999 and int(s1["one"].max()) < 999
    a, b = mod.make_pair(cfg, s1, 0, 10)
    assert int(a.max()) == 999 and int(b.max()) == 999  # the separator is the model's last id
    # a causal model with a larger vocabulary runs end to end; learned positions -> no-decay claim
    r = run_probe(
        mod,
        mod.Config.preset("smoke", **PASSED),
        model=_zoo(vocab_size=1000, pos="learned", max_len=64),
        progress=False,
    )
    assert r.meta["pos_assumed"] == "learned" and "learned_positions_no_collapse" in [c.name for c in r.ledger.claims]


def test_rope_repeat_prediction_and_depth_claims():
    assert mod.th.predicted_slope("repeat_last", "rope") == 0.5
    assert mod.th.predicted_slope("repeat_last", "rope", attention="uniform") == 1.0
    r = _run(family="early_token", max_len=64, n_lengths=6, sens_len=8)
    pred = r.data["layer_slope_predicted"].values
    assert pred[0] == pytest.approx(1.0) and pred[1] < pred[0]  # the relay lowers the exponent with depth
    for name in ("slope_matches_prediction", "slope_layer1"):
        assert r.ledger[name].status == "not_evaluated"  # softmax: requires the full preset
    assert r.ledger["slope_matches_prediction"].expected == pytest.approx(pred[1])  # the relay at depth 2
    assert r.ledger["slope_matches_prediction"].alternative["value"] == 1.0  # no relay
    assert "floor_float32_exponent" in [c.name for c in r.ledger.claims]


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"family": "other"}, "family"),
        ({"dtypes": ("int8",)}, "dtypes"),
        ({"dtypes": ("float16", "float16")}, "dtypes"),
        ({"n_heads": 3}, "divisible"),
        ({"min_len": 200}, "min_len"),
        ({"fit_lo": 100.0}, "fit_lo"),
        ({"family": "early_token", "early_position": 10}, "early_position"),
        ({"pos": "alibi"}, "pos"),
        ({"extend_dtype": "float16", "extend_lo": 1.0, "extend_hi": 1.5}, "extend_hi"),
        ({"extend_dtype": "float16", "pos": "learned"}, "learned"),
    ],
)
def test_config_validation(over, match):
    with pytest.raises(ValueError, match=match):
        mod.Config.preset("smoke", **over)


def test_command_line_json():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "probes",
            "run",
            "representational_collapse",
            "--preset",
            "smoke",
            "--family",
            "counting",
            "--max-len",
            "64",
            "--dtypes",
            "float16",
            "--json",
            "-",
            "--no-progress",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    out = json.loads(proc.stdout)
    assert out["probe"] == "representational_collapse"
    assert set(out["arrays"]) >= {"distance", "collapse_n", "sensitivity", "rank_residual", "slope_ci"}
    assert out["arrays"]["distance"]["dims"] == ["dtype", "n"]
    assert "slope" in out["scalars"]


def test_sensitivity_can_be_switched_off():
    """Large real models skip the one-backward-per-coordinate sensitivity; its claims then say so."""
    import probes.representational_collapse as rc
    from analysis.probing.base import run_probe

    cfg = rc.Config.preset("smoke", sensitivity=False, dtypes=("float32",), max_len=32, n_lengths=4, n_boot=20)
    r = run_probe("representational_collapse", cfg, progress=False)
    assert np.isnan(r.data["sensitivity"].values).all()
    by_name = {c.name: c for c in r.ledger.claims}
    assert by_name["sensitivity_first_exceeds_middle"].status == "not_evaluated"
    assert np.isfinite(r.data["distance"].values).any()
