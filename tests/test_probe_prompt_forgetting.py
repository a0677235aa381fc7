"""Probe prompt_forgetting (smoke-sized): protocol, exact relay identity, cancelling bias, validation."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import xarray as xr

import probes
from analysis.claims.ledger import Ledger
from analysis.core.paths import REPO
from analysis.probing.base import Result, run_probe
from analysis.theory import prompt_forgetting as pf_theory
from analysis.zoo.model import PrefixKeyBias, TinyTransformer
from probes.prompt_forgetting import offsets
from probes.prompt_forgetting.claims import claim_bound_ratio
from probes.prompt_forgetting.laws import bound_constants

mod = probes.get("prompt_forgetting")
SMALL = dict(cont_len=96, n_pairs=3, d_model=16, n_heads=2, d_mlp=0, n_boot=50, fit_lo=20.0, prompt_len=4)


def _run(**over):
    return run_probe(mod, mod.Config.preset("smoke", **over), progress=False)


def test_smoke_result_has_the_interface_fields():
    r = _run()
    cfg = r.config
    L, T = cfg.model.n_layers, cfg.cont_len
    assert r.data["distance"].shape == (L, T)
    np.testing.assert_array_equal(r.data["t"].values, np.arange(cfg.prompt_len + 1, cfg.prompt_len + T + 1))
    for name in ("alpha", "alpha_ci", "alpha_local", "bound_ratio", "relay", "prompt_share"):
        assert name in r.data
    for name in ("alpha", "alpha_ci_lo", "alpha_ci_hi", "max_logit", "min_prenorm_rms"):
        assert np.isfinite(r.scalars[name])
    lo, hi = r.data["alpha_ci"].values[-1]
    assert lo <= r.scalars["alpha"] <= hi
    assert r.scalars["min_prenorm_rms"] > 0 and r.scalars["max_logit"] > 0
    assert r.ledger.ok  # no identity fails (predictions and bounds may: findings)
    seed_range = r.ledger["alpha_untrained_seed_range"]
    assert seed_range.role == "paper" and seed_range.status == "not_evaluated"  # requires the full preset
    assert seed_range.diagnosed_by == ["alpha_matches_relay"]
    relay = r.ledger["alpha_matches_relay"]
    assert relay.role == "prediction" and relay.alternative["value"] == 1.0
    assert relay.tolerance["ci"] == [r.scalars["alpha_ci_lo"], r.scalars["alpha_ci_hi"]]
    bound = r.ledger["bound_ratio_not_growing"]
    assert bound.role == "bound" and bound.diagnosed_by == []  # the in-regime runs refute the condition as its cause
    lo = r.data["bound_plateau_slope_ci"].sel(end="lo").values
    assert bound.measured in [2.0**v for v in lo] and bound.expected >= 1.0  # the relay model's growth, or 1
    # no such claim: the theorem's upper bound O(P (ln t)^(L-1)/t) on the offset does not forbid a faster
    # decay, so "local exponent <= 1" would read the theorem backwards
    assert "alpha_local_below_one" not in r.ledger
    for claim in r.ledger:
        assert claim.seed == "000#1", claim.line()
    # the plateau slope is the mean of the pairs' own slopes (it is linear in ln D), and its CI is ordered
    t, D = r.data["t"].values, r.data["distance_pairs"].values
    last = t >= t[-1] / 2
    shape = np.stack([mod.th.bound_shape(cfg.prompt_len, k, t) for k in range(1, L + 1)])
    per_pair = [np.polyfit(np.log(t[last]), np.log(D[i][:, last] / shape[:, last]).T, 1)[0] for i in range(len(D))]
    np.testing.assert_allclose(np.mean(per_pair, axis=0), r.data["bound_plateau_slope"].values, rtol=1e-9, atol=1e-12)
    ci = r.data["bound_plateau_slope_ci"].values
    assert np.all(ci[:, 0] <= ci[:, 1])
    assert "relay_matrix" not in r.data  # softmax with LN and MLP is not the matrix relay model
    # the geometric mean really is over pairs
    gm = np.exp(np.log(r.data["distance_pairs"].values).mean(axis=0))
    np.testing.assert_allclose(r.data["distance"].values, gm, rtol=1e-12)


@pytest.mark.parametrize("layers", [1, 2])
def test_uniform_network_is_the_matrix_relay_model(layers):
    r = _run(**SMALL, n_layers=layers, attention="uniform", norm="none", dtype="float64")
    claim = r.ledger["uniform_equals_matrix_relay"]
    assert claim.status == "pass", claim.line()
    # the stored exact prediction is the one the claim checked (pair-averaged like `distance`)
    scale = r.data["distance"].values.max()
    # float64 rounding is ~N L sqrt(d) eps ~ 1e-12 of scale here; 1e-9 still fails any non-relay model (>1e-6)
    np.testing.assert_allclose(r.data["relay_matrix"].values, r.data["distance"].values, rtol=0, atol=1e-9 * scale)
    if layers == 1:
        assert r.ledger["uniform_one_layer_alpha_is_1"].status == "pass"
        assert abs(r.scalars["alpha"] - 1.0) < 1e-9
    # the first layer's bound ratio is its exact limit |A_1 sum delta| / P at every t
    assert r.ledger["uniform_layer1_bound_ratio_is_limit"].status == "pass"
    limit = r.data["relay_matrix_limit"].values
    np.testing.assert_allclose(r.data["bound_ratio"].values[0], limit[0], rtol=1e-9)
    # the smallest constant valid on the window is at least the plateau inside it (fit_lo < N/2 here)
    assert np.all(r.data["bound_constant"].values >= r.data["bound_plateau"].values)
    np.testing.assert_allclose(r.data["relay_limit"].values, [1 / math.factorial(k) for k in range(layers)])


def test_relay_check_detects_a_broken_model():
    """The exact check must fail when the network is not the relay model (an MLP is added)."""
    cfg = mod.Config.preset("smoke", **SMALL, attention="uniform", norm="none", dtype="float64")
    model = TinyTransformer(mod.model_config(cfg).replace(d_mlp=8)).eval()
    a, b, c = mod.draw_pairs(cfg)
    m = mod.measure(model, a, b, c, progress=False)
    pred = mod.relay_prediction(model, m["embed_delta"], cfg.prompt_len + cfg.cont_len)[:, :, cfg.prompt_len :]
    assert np.max(np.abs(m["distance"] - pred)) / m["norm"].max() > 1e-6


def test_cancel_bias_keeps_share_and_slows_forgetting():
    base = dict(SMALL, attention="uniform", norm="none", dtype="float64", n_layers=2)
    plain = _run(**base)
    biased = _run(**base, logit_bias="cancel")
    assert biased.ledger["cancel_bias_share_constant"].status == "pass"
    assert "relay_matrix" not in biased.data  # the bias breaks the relay identity: no prediction stored
    share = plain.data["prompt_share"].values
    P = plain.config.prompt_len
    np.testing.assert_allclose(share[0], P / plain.data["t"].values, rtol=1e-12)  # dilution: P / t
    assert biased.scalars["alpha"] < plain.scalars["alpha"] - 0.3  # the bias removes most of the decay
    const = biased.ledger["uniform_bias_offset_constant"]
    assert const.role == "identity" and const.status == "pass", const.line()
    with pytest.raises(ValueError, match="exact"):  # the relay network's bias claim is that identity
        mod.bias_claims(plain, biased)


def test_model_passed_in_and_softmax_share_bound():
    cfg = mod.Config.preset("smoke", **SMALL)
    model = TinyTransformer(mod.model_config(cfg)).eval()
    r = run_probe(mod, cfg, model=model, progress=False)
    assert r.ledger["prompt_share_dilution_bound"].status == "pass"
    with pytest.raises(ValueError, match="causal"):
        run_probe(mod, cfg, model=TinyTransformer(mod.model_config(cfg).replace(causal=False)), progress=False)


def test_max_abs_logit_blocks_equal_the_full_matrix():
    """The row-blocked max |logit| equals the direct one over the whole masked matrix, bias removed."""
    gen = torch.Generator().manual_seed(3)
    N, P = 37, 5
    s = torch.randn(2, 3, N, N, generator=gen) * 4  # (B, H, N, N)
    s = s.masked_fill(~torch.ones(N, N, dtype=torch.bool).tril(), float("-inf"))
    bias = mod.cancel_bias_matrix(P, N, s.dtype)
    for biased, b in ((s, None), (s + bias, bias)):
        own = biased - b if b is not None else biased
        direct = float(torch.where(torch.isfinite(own), own.abs(), 0).amax())
        for rows in (1, 8, 64):  # blocks smaller than, not dividing, and larger than N
            assert mod.max_abs_logit(biased, b, rows=rows) == direct
    # the largest entry may be negative, and a fully masked matrix gives 0
    s[0, 0, -1, 0] = -100.0
    assert mod.max_abs_logit(s, rows=8) == 100.0
    assert mod.max_abs_logit(torch.full((1, 1, 4, 4), float("-inf"))) == 0.0


def test_measure_in_query_blocks_equals_the_whole_matrix(monkeypatch):
    """Row blocks (the probe's memory-linear path) give the whole-matrix statistics: offsets and norms to
    float64 rounding, prompt shares per row, the largest logit with the compact bias removed."""
    cfg = mod.Config.preset("smoke", **SMALL, dtype="float64", n_layers=2, logit_bias="cancel")
    model = TinyTransformer(mod.model_config(cfg)).eval()
    a, b, c = mod.draw_pairs(cfg)
    N = cfg.prompt_len + cfg.cont_len
    bias = mod.cancel_bias(cfg.prompt_len, N, torch.float64)
    monkeypatch.setattr(offsets, "QUERY_BLOCK", 10**6)  # one block: the whole matrix
    whole = mod.measure(model, a, b, c, attn_bias=bias.dense(), progress=False)
    monkeypatch.setattr(offsets, "QUERY_BLOCK", 13)  # 8 blocks, the last one short
    blocked = mod.measure(model, a, b, c, attn_bias=bias, progress=False)
    assert model.query_block is None  # restored
    for key in ("distance", "norm", "share", "share_max", "max_logit", "min_rms"):
        assert np.isfinite(blocked[key]).all(), key
        np.testing.assert_allclose(blocked[key], whole[key], rtol=1e-12, atol=1e-12, err_msg=key)


class _NoOptionalHooks(TinyTransformer):
    """A zoo model that, like the Hugging Face adapter, lists no norm or attention-internal hooks."""

    def hook_names(self) -> list[str]:
        drop = (".hook_in", ".hook_normalized", "attn.hook_attn_scores", "attn.hook_pattern")
        return [n for n in super().hook_names() if not n.endswith(drop)]


def _external(cfg, **over):
    """A zoo model standing in for a passed-in one: learned positions, a larger vocabulary than cfg's."""
    changes = dict(pos="learned", max_len=cfg.prompt_len + cfg.cont_len, vocab_size=2 * cfg.model.vocab_size, seed=5)
    return mod.model_config(cfg).replace(**{**changes, **over})


def test_passed_model_with_learned_positions_and_its_own_vocabulary():
    cfg = mod.Config.preset("smoke", **SMALL)
    model = TinyTransformer(_external(cfg)).eval()
    a, b, c = mod.draw_pairs(cfg, model)
    # ids are drawn from the model's vocabulary (2x the config's), not the config's
    assert int(torch.cat([a, b, c], dim=1).max()) >= cfg.model.vocab_size
    assert int(torch.cat([a, b, c], dim=1).max()) < 2 * cfg.model.vocab_size
    r = run_probe(mod, cfg, model=model, progress=False)
    assert r.data["distance"].shape == (model.n_layers, cfg.cont_len)
    assert np.isfinite(r.scalars["alpha"]) and r.ledger.ok
    assert r.ledger["condition_prenorm_rms"].status in ("pass", "loose")  # evaluated: the zoo lists its norm inputs
    seed_range = r.ledger["alpha_seed_range"]
    assert seed_range.role == "paper" and seed_range.status == "not_evaluated"  # trained or not: unknown to the probe
    assert "alpha_matches_relay" not in r.ledger  # the relay prediction is for the probe's own untrained model
    assert r.meta["model_vocab_size"] == 2 * cfg.model.vocab_size
    # P + T beyond the model's positions, and a Markov language larger than the model's vocabulary
    short = TinyTransformer(_external(cfg, max_len=cfg.prompt_len + cfg.cont_len - 1)).eval()
    with pytest.raises(ValueError, match="prompt_len \\+ cont_len"):
        run_probe(mod, cfg, model=short, progress=False)
    small_vocab = TinyTransformer(_external(cfg, vocab_size=cfg.model.vocab_size // 2)).eval()
    with pytest.raises(ValueError, match="vocab"):
        run_probe(mod, cfg.replace(data="markov"), model=small_vocab, progress=False)
    # a bidirectional encoder is refused before anything runs
    with pytest.raises(ValueError, match="causal"):
        run_probe(mod, cfg, model=TinyTransformer(_external(cfg, causal=False)), progress=False)


def test_passed_model_without_optional_hooks_degrades_to_nan():
    cfg = mod.Config.preset("smoke", **SMALL)
    model = _NoOptionalHooks(_external(cfg)).eval()
    r = run_probe(mod, cfg, model=model, progress=False)
    assert np.isnan(r.scalars["min_prenorm_rms"]) and np.isnan(r.scalars["max_logit"])
    assert np.isfinite(r.scalars["alpha"]) and np.all(np.isnan(r.data["prompt_share"].values))
    for name in ("condition_prenorm_rms", "prompt_share_dilution_bound", "condition_dilution_regime"):
        claim = r.ledger[name]
        assert claim.status == "not_evaluated" and "hook" in claim.why, claim
    # the measured offsets do not depend on which hooks are listed
    full = run_probe(mod, cfg, model=TinyTransformer(_external(cfg)).eval(), progress=False)
    np.testing.assert_array_equal(r.data["distance"].values, full.data["distance"].values)


def test_corpus_text_is_encoded_by_the_model():
    """A byte-level passed model gets exactly the validation bytes the probe's own corpus model gets."""
    cfg = mod.Config.preset("smoke", **SMALL, data="corpus")
    model = TinyTransformer(_external(cfg, vocab_size=256)).eval()
    for own, passed in zip(mod.draw_pairs(cfg), mod.draw_pairs(cfg, model), strict=True):
        assert torch.equal(own, passed)


def test_corpus_trained_model_with_cancelling_bias():
    over = dict(SMALL, data="corpus", trained=True, d_model=32, d_mlp=64)
    plain = _run(**over)
    biased = _run(**over, logit_bias="cancel")
    assert plain.meta["checkpoint"] == biased.meta["checkpoint"]  # one trained model, two measurements
    assert np.isfinite(biased.scalars["alpha"]) and biased.ledger.ok
    # the bias ln(t - P) on the prompt keys raises the prompt's attention share late in the continuation
    late = plain.data["t"].values > plain.data["t"].values[-1] / 2
    assert biased.data["prompt_share"].values[:, late].mean() > plain.data["prompt_share"].values[:, late].mean()


def test_alpha_along_training_is_the_same_measurement_at_each_checkpoint():
    """The trajectory at step 0 is the untrained model, at the last step the trained one: its alphas
    (with and without the bias) equal those of the separate runs, and the held-out loss falls."""
    over = dict(SMALL, data="corpus", d_model=32, d_mlp=64, train_steps=30)
    traj = _run(**over, trained=True, train_checkpoints=(0, 3, 30))
    d = traj.data
    assert d["alpha_trajectory"].dims == ("train_step",) and list(d["train_step"].values) == [0, 3, 30]
    for name in ("alpha_trajectory_ci", "alpha_bias_trajectory_ci"):
        lo, hi = d[name].values.T
        assert np.all(lo <= hi)
    untrained = _run(**over)
    trained = _run(**over, trained=True)
    trained_b = _run(**over, trained=True, logit_bias="cancel")
    assert d["alpha_trajectory"].values[0] == pytest.approx(untrained.scalars["alpha"], abs=1e-12)
    assert d["alpha_trajectory"].values[-1] == pytest.approx(trained.scalars["alpha"], abs=1e-12)
    assert d["alpha_bias_trajectory"].values[-1] == pytest.approx(trained_b.scalars["alpha"], abs=1e-12)
    assert traj.scalars["alpha"] == trained.scalars["alpha"]  # the snapshots leave the run unchanged
    loss = d["heldout_loss_trajectory"].values
    assert loss[-1] == pytest.approx(traj.scalars["heldout_loss"], abs=1e-12)
    assert loss[0] > loss[-1]  # 30 updates already learn the byte frequencies
    assert untrained.scalars["heldout_loss"] == pytest.approx(loss[0], abs=1e-12)
    assert traj.scalars["bigram_entropy"] < traj.scalars["unigram_entropy"] < math.log(256)
    names = {c.name for c in traj.ledger.claims}
    assert {"bias_stops_decay_step0", "bias_reverses_decay_trained"} <= names
    assert "bias_stops_decay_step3" not in names  # 3 of 30 updates is past 1%: measured, not claimed


def test_bias_trajectory_claims_judge_the_sign(smoke_run):
    r = smoke_run
    cfg = mod.Config.preset("full", data="markov", trained=True, train_steps=400, train_checkpoints=(0, 4, 40, 400))

    def judged(bias_alpha, half=0.02, plain=0.8):
        steps = np.array(cfg.train.checkpoints)
        data = r.data.assign(
            alpha_trajectory=("train_step", np.full(4, plain)),
            alpha_bias_trajectory=("train_step", np.array(bias_alpha, dtype=float)),
            alpha_bias_trajectory_ci=(
                ("train_step", "end"),
                np.stack([np.array(bias_alpha) - half, np.array(bias_alpha) + half], axis=1),
            ),
        ).assign_coords(train_step=steps)
        led = mod.Ledger(mod.NAME, preset="full")
        mod.claim_bias_trajectory(led, (_result(cfg, data),))
        return led

    led = judged([0.01, 0.0, 0.3, -0.2])
    assert led["bias_stops_decay_step0"].status == "pass" and led["bias_stops_decay_step4"].status == "pass"
    assert led["bias_stops_decay_step0"].alternative["value"] == 0.8
    assert led["bias_reverses_decay_trained"].status == "pass"
    assert "bias_stops_decay_step40" not in {c.name for c in led.claims}
    led = judged([0.5, 0.0, 0.3, 0.01])
    assert led["bias_stops_decay_step0"].status == "fail"
    assert led["bias_reverses_decay_trained"].status == "inconclusive"  # alpha = 0 within the CI
    assert judged([0.0, 0.0, 0.0, 0.3])["bias_reverses_decay_trained"].status == "fail"


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"trained": True}, "trained"),
        ({"fit_lo": 2.0}, "fit_lo"),
        ({"n_heads": 3}, "divisible"),
        ({"n_heads": 3, "d_model": 2, "logit_gain": 2.0}, "divisible"),  # the gain's scale needs the head size first
        ({"logit_gain": 1.5e308, "d_model": 2, "n_heads": 4}, "^logit_gain must keep the logit scale"),
        ({"logit_bias": "other"}, "logit_bias"),
        ({"pos": "learned"}, "pos"),
        ({"train_checkpoints": (0, 5)}, "needs trained=true"),
        ({"trained": True, "data": "markov", "train_checkpoints": (5, 0)}, "increasing"),
        ({"trained": True, "data": "markov", "train_checkpoints": (0, 31)}, "train_steps"),
        ({"trained": True, "data": "markov", "train_checkpoints": (-1,)}, "train_checkpoints"),
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
            "prompt_forgetting",
            "--preset",
            "smoke",
            "--cont-len",
            "64",
            "--n-pairs",
            "2",
            "--fit-lo",
            "20",
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
    assert out["probe"] == "prompt_forgetting"
    assert set(out["arrays"]) >= {"distance", "alpha", "alpha_ci", "alpha_local", "bound_ratio"}
    assert out["arrays"]["distance"]["dims"] == ["layer", "t"]


def test_untrained_diagnosis_uses_the_runs_own_depth_and_length():
    for layers, T in ((2, 1024), (3, 4096)):
        cfg = mod.Config.preset("full", n_layers=layers, cont_len=T, fit_lo=32.0)
        N = cfg.prompt_len + T
        relay = mod.th.relay_alpha_window(cfg.prompt_len, layers, 32.0, N)
        text = mod._untrained_diagnosis(cfg, {"fit_lo": 32.0, "alpha_relay_window": relay})
        assert f"L = {layers}" in text and f"t = {N}" in text
        assert f"{1 - (layers - 1) / math.log(N):.2f}" in text  # the bound's local exponent at the window end
        assert f"{relay:.2f}" in text


# ------------------------------------------------------------------ claims on planted inputs


@pytest.fixture(scope="module")
def smoke_run():
    return run_probe(mod, mod.Config.preset("smoke", **SMALL), progress=False)


def _result(cfg, data, scalars=None):
    """A result of the probe's own model holding ``data`` and ``scalars``: what its claim functions read."""
    return Result(probe=mod.NAME, config=cfg, data=data, scalars=dict(scalars or {}))


def _planted(r, preset="smoke", **scalars):
    """The run's data with some scalars replaced, judged again by the probe's claim functions."""
    cfg = r.config.replace(preset_name=preset)
    return mod.claims((_result(cfg, r.data, {**r.scalars, **scalars}),))


def test_relay_prediction_fails_on_a_planted_alpha(smoke_run):
    r = smoke_run
    relay = mod.th.relay_alpha_window(
        r.config.prompt_len, r.config.model.n_layers, r.scalars["fit_lo"], int(r.scalars["fit_hi"])
    )
    good = _planted(r, alpha=relay, alpha_ci_lo=relay - 0.01, alpha_ci_hi=relay + 0.01)["alpha_matches_relay"]
    assert good.status == "pass" and good.alternative["consistent"] is False
    bad = _planted(r, alpha=relay - 0.3, alpha_ci_lo=relay - 0.31, alpha_ci_hi=relay - 0.29)["alpha_matches_relay"]
    assert bad.status == "fail"
    near_one = _planted(r, alpha=0.99, alpha_ci_lo=0.9, alpha_ci_hi=1.1)["alpha_matches_relay"]
    assert near_one.status in ("inconclusive", "fail")  # consistent with the alternative alpha = 1: never a pass


def test_seed_range_deviates_only_when_the_relay_claim_passes(smoke_run):
    r = smoke_run
    relay = mod.th.relay_alpha_window(
        r.config.prompt_len, r.config.model.n_layers, r.scalars["fit_lo"], int(r.scalars["fit_hi"])
    )
    led = _planted(r, "full", alpha=relay, alpha_ci_lo=relay - 0.01, alpha_ci_hi=relay + 0.01)
    claim = led["alpha_untrained_seed_range"]
    expected = "deviation" if not 0.2 <= relay <= 0.5 else "pass"
    assert claim.status == expected and claim.role == "paper"
    led = _planted(r, "full", alpha=0.9, alpha_ci_lo=0.89, alpha_ci_hi=0.91)  # outside, relay claim fails
    assert led["alpha_matches_relay"].status == "fail" and led["alpha_untrained_seed_range"].status == "fail"
    trained = mod.claims(
        (
            _result(
                r.config.replace(preset_name="full", data="markov", trained=True), r.data, {**r.scalars, "alpha": 0.9}
            ),
        )
    )
    claim = trained["alpha_trained_seed_range"]
    assert claim.status == "fail" and not claim.diagnosed_by  # no measured cause: an honest fail


def test_bound_ratio_claim_fails_when_the_ratio_grows(smoke_run):
    r = smoke_run
    data = r.data.copy()
    data["bound_plateau_slope_ci"] = data["bound_plateau_slope_ci"] * 0 + np.array([0.2, 0.3])  # growing like t^0.2
    P, T = r.config.prompt_len, r.config.cont_len
    inside = 0.25 * math.log(T / P)  # the window reaches the dilution regime: the condition holds
    led = mod.claims((_result(r.config, data, {**r.scalars, "max_logit": inside}),))
    assert led["condition_dilution_regime"].status in ("pass", "loose")
    assert led["bound_ratio_not_growing"].status == "fail"
    led = mod.claims((_result(r.config, data, {**r.scalars, "max_logit": 4 * inside}),))
    assert led["condition_dilution_regime"].status == "fail"
    assert led["bound_ratio_not_growing"].status == "fail"  # the condition does not diagnose it (in-regime runs)
    data["bound_plateau_slope_ci"] = data["bound_plateau_slope_ci"] * 0 + np.array([-0.1, 0.05])
    led = mod.claims((_result(r.config, data, {**r.scalars, "max_logit": inside}),))
    bound = led["bound_ratio_not_growing"]
    assert bound.status == "pass" and bound.verdict == "agrees"
    assert bound.tightness == pytest.approx(2**-0.1 / bound.expected)


@pytest.mark.parametrize("P", [16, 64])
def test_the_bounds_extremal_case_meets_its_finite_window_form(P):
    """The relay model attains the theorem's rate; over one octave its ratio to the bound still grows while it
    converges (at P = 64 by about 2% per octave). Measured growing exactly as the relay model does, the bound is
    attained (agrees); growing twice as fast, it is contradicted."""
    cfg = mod.Config.preset("smoke", prompt_len=P, fit_lo=float(P + 8), cont_len=1024)
    L, N = cfg.model.n_layers, P + cfg.cont_len
    t = np.arange(P + 1, N + 1, dtype=np.float64)
    relay = np.stack([pf_theory.relay_offsets(P, k, N)[P:] for k in range(1, L + 1)])
    shape = np.stack([pf_theory.bound_shape(P, k, t) for k in range(1, L + 1)])
    slope = bound_constants(t, relay / shape, cfg.fit_lo)["bound_plateau_slope"]
    lo = slope.copy()
    lo[0] -= 1.0  # the first layer well inside: the deepest (L = 2) is the layer nearest its allowance
    data = xr.Dataset(
        {"relay": (("layer", "t"), relay), "bound_plateau_slope_ci": (("layer", "end"), np.stack([lo, lo], 1))},
        coords={"t": t, "end": ["lo", "hi"]},
    )
    led = Ledger(mod.NAME, preset="full")
    claim_bound_ratio(led, (_result(cfg, data),))
    c = led["bound_ratio_not_growing"]
    assert c.measured <= c.expected and c.verdict == "agrees"
    if P == 64:  # the extremal case grows in a finite window (2% here): a plateau test would refute it
        assert c.measured == pytest.approx(c.expected, rel=1e-12)
        assert c.expected == pytest.approx(2.0 ** slope[1], rel=1e-12) and c.expected > 1.01
    data["bound_plateau_slope_ci"] = data["bound_plateau_slope_ci"] * 0 + 2 * max(slope.max(), 0.02)
    led = Ledger(mod.NAME, preset="full")
    claim_bound_ratio(led, (_result(cfg, data),))
    assert led["bound_ratio_not_growing"].status == "fail"


def _fake(preset="smoke", alpha=0.5, half=0.05, **over):
    cfg = mod.Config.preset(preset, **over)
    return SimpleNamespace(
        config=cfg,
        scalars={
            "alpha": alpha,
            "alpha_ci_lo": alpha - half,
            "alpha_ci_hi": alpha + half,
            "fit_lo": cfg.fit_lo,
            "fit_hi": float(cfg.prompt_len + cfg.cont_len),
        },
    )


def test_bias_claims_judge_the_sign():
    plain = _fake(alpha=0.8)
    stops = mod.bias_claims(plain, _fake(alpha=0.01, logit_bias="cancel"))["bias_stops_decay"]
    assert stops.role == "prediction" and stops.status == "pass" and stops.alternative["value"] == 0.8
    assert mod.bias_claims(plain, _fake(alpha=0.78, logit_bias="cancel"))["bias_stops_decay"].status == "fail"
    assert mod.bias_claims(plain, _fake(alpha=0.3, logit_bias="cancel"))["bias_stops_decay"].status == "fail"
    tr = dict(preset="full", data="markov", trained=True)
    rev = mod.bias_claims(_fake(**tr, alpha=0.8), _fake(**tr, alpha=-0.2, logit_bias="cancel"))["bias_reverses_decay"]
    assert rev.role == "prediction" and rev.status == "pass" and rev.alternative["value"] == 0.0
    stop = mod.bias_claims(_fake(**tr, alpha=0.8), _fake(**tr, alpha=-0.01, logit_bias="cancel"))
    assert stop["bias_reverses_decay"].status == "inconclusive"  # alpha = 0 within its CI: not shown reversed
    up = mod.bias_claims(_fake(**tr, alpha=0.8), _fake(**tr, alpha=0.3, logit_bias="cancel"))
    assert up["bias_reverses_decay"].status == "fail"  # still decaying
    with pytest.raises(ValueError, match="differ only"):
        mod.bias_claims(plain, _fake(alpha=0.0, logit_bias="cancel", n_layers=3))


def test_trained_vs_untrained_direction():
    un = _fake("full", alpha=0.5, data="markov")
    faster = mod.trained_vs_untrained_claims(un, _fake("full", alpha=0.8, data="markov", trained=True))
    claim = faster["trained_forgets_faster"]
    assert claim.role == "prediction" and claim.status == "pass" and claim.alternative["value"] == 0.0
    assert claim.tolerance["se"] == pytest.approx(math.hypot(0.05, 0.05) / 1.959964)
    slower = mod.trained_vs_untrained_claims(un, _fake("full", alpha=0.3, data="markov", trained=True))
    assert slower["trained_forgets_faster"].status == "fail"
    same = mod.trained_vs_untrained_claims(un, _fake("full", alpha=0.52, data="markov", trained=True))
    assert same["trained_forgets_faster"].status == "inconclusive"  # within the uncertainty of no effect
    with pytest.raises(ValueError, match="differ only"):
        mod.trained_vs_untrained_claims(un, _fake("full", alpha=0.8, data="corpus", trained=True))


def test_depth_sweep_slope_against_the_relay_model():
    def at(L, alpha):
        return _fake(alpha=alpha, half=0.02, n_layers=L)

    relay = [mod.th.relay_alpha_window(16, L, 24.0, 16 + 192) for L in (1, 2, 3)]
    good = mod.depth_sweep_claims([at(L, a) for L, a in zip((1, 2, 3), relay, strict=True)])
    claim = good["alpha_depth_slope_matches_relay"]
    assert claim.role == "prediction" and claim.status == "pass" and claim.alternative["value"] == 0.0
    flat = mod.depth_sweep_claims([at(L, 0.8) for L in (1, 2, 3)])
    assert flat["alpha_depth_slope_matches_relay"].status == "fail"
    with pytest.raises(ValueError, match="differ only"):
        mod.depth_sweep_claims([at(1, 0.9), _fake(alpha=0.8, n_layers=2, prompt_len=8)])


def test_relay_model_claims():
    led = mod.relay_model_claims(16, 10**4, "smoke")
    assert led["relay_closed_form_exact"].role == "identity" and led["relay_closed_form_exact"].status == "pass"
    rate = led["relay_asymptotic_rate"]
    assert rate.role == "bound" and rate.outcome is True and rate.tightness == rate.measured


def _depth_run(L: int, s: int, alpha: float, half: float = 0.02):
    cfg = mod.Config.preset("smoke", n_layers=L, seed=s)
    return SimpleNamespace(
        config=cfg,
        scalars={
            "alpha": alpha,
            "alpha_ci_lo": alpha - half,
            "alpha_ci_hi": alpha + half,
            "max_logit": 4.0,
            "fit_lo": cfg.fit_lo,
            "alpha_relay_window": _relay(L),
            "fit_hi": float(cfg.prompt_len + cfg.cont_len),
        },
    )


def _relay(L: int) -> float:
    cfg = mod.Config.preset("smoke")
    return pf_theory.relay_alpha_window(cfg.prompt_len, L, cfg.fit_lo, cfg.prompt_len + cfg.cont_len)


def test_depth_law_claims_follow_the_planted_law():
    Ls, jitter = (1, 2, 4, 8), (-0.004, 0.0, 0.004)
    on_relay = [_depth_run(L, s, _relay(L) + j) for L in Ls for s, j in enumerate(jitter)]
    law = mod.depth_law(on_relay)
    assert law["alpha"].dims == ("layers", "seed") and list(law["layers"].values) == list(Ls)
    np.testing.assert_allclose(law["alpha_mean"].values, [_relay(L) for L in Ls], atol=1e-12)
    np.testing.assert_allclose(law["alpha_half95"].values, law.attrs["k95"] * law["alpha_se"].values)
    led = mod.depth_law_claims(law)
    assert led["alpha_falls_with_depth"].status == "pass" and led["alpha_falls_with_depth"].role == "prediction"
    assert led["alpha_vs_relay_L1"].status == "not_evaluated"  # the relay value is the alternative itself
    for L in Ls[1:]:
        c = led[f"alpha_vs_relay_L{L}"]
        assert c.status == "pass" and c.alternative["value"] == 1.0, c.line()
    deepest = led["alpha_untrained_seed_range_deepest"]
    relay_deep = _relay(Ls[-1])
    expected = "pass" if 0.2 <= relay_deep <= 0.5 else "deviation"  # outside: diagnosed by the relay claim passing
    assert deepest.role == "paper" and deepest.status == expected, deepest.line()

    flat = mod.depth_law_claims(mod.depth_law([_depth_run(L, s, 1.0 + j) for L in Ls for s, j in enumerate(jitter)]))
    assert all(flat[f"alpha_vs_relay_L{L}"].status == "fail" for L in Ls[1:])
    assert flat["alpha_falls_with_depth"].status in ("fail", "inconclusive")
    assert flat["alpha_untrained_seed_range_deepest"].status == "fail"  # the relay claim failed: no diagnosis


def test_depth_law_needs_the_same_seeds_at_every_depth():
    with pytest.raises(ValueError, match="missing"):
        mod.depth_law([_depth_run(1, 0, 1.0), _depth_run(1, 1, 1.0), _depth_run(2, 0, 0.8)])
    with pytest.raises(ValueError, match="differ only"):
        mod.depth_law(
            [
                _depth_run(1, 0, 1.0),
                SimpleNamespace(config=mod.Config.preset("smoke", n_layers=2, seed=1, prompt_len=8), scalars={}),
            ]
        )


def test_alpha_relay_window_scalar_is_the_relay_models_alpha_over_the_run_window():
    r = _run(**SMALL, n_layers=2)
    expected = pf_theory.relay_alpha_window(r.config.prompt_len, 2, r.scalars["fit_lo"], int(r.scalars["fit_hi"]))
    assert r.scalars["alpha_relay_window"] == expected and 0.0 < expected < 1.0


def test_logit_gain_scales_the_default_logit_scale_and_leaves_gain_1_unchanged():
    plain = mod.model_config(mod.Config.preset("smoke"))
    assert plain.logit_scale is None  # gain 1: the same model config, so the same checkpoint keys as before
    cfg = mod.Config.preset("smoke", logit_gain=0.25)
    scaled = mod.model_config(cfg)
    assert scaled.logit_scale == 0.25 / math.sqrt(cfg.model.d_model // cfg.model.n_heads)
    assert scaled.replace(logit_scale=None) == plain
    with pytest.raises(ValueError, match="logit_gain"):
        mod.Config.preset("smoke", logit_gain=0.0)


def _absmax_direct(own: torch.Tensor) -> float:
    """The definition: the largest |x| over the finite entries of the causal support (0 if none)."""
    N = own.shape[-1]
    causal = torch.ones(N, N, dtype=torch.bool).tril()
    return float(torch.where(torch.isfinite(own) & causal, own.abs(), 0).amax())


def test_max_abs_logit_regions_equal_the_definition(monkeypatch):
    """The region split (keys every row sees read in place, the causal triangle by halves, the prefix bias
    subtracted on its keys only) gives the definition's value exactly, also with non-finite entries among
    the seen keys (an overflowed logit, a NaN, a -inf bias) and query blocks that start mid-matrix."""
    gen = torch.Generator().manual_seed(11)
    N, P = 203, 7
    s = torch.randn(2, 3, N, N, generator=gen, dtype=torch.float64) * 3
    s = s.masked_fill(~torch.ones(N, N, dtype=torch.bool).tril(), float("-inf"))
    values = torch.randn(N, generator=gen, dtype=torch.float64)
    compact = PrefixKeyBias(values, P)
    dense = compact.dense()
    monkeypatch.setattr(offsets, "CAUSAL_LEAF", 4)  # the halving recursion runs several levels deep
    for poison in (None, "inf", "nan", "neg", "diag"):
        t = s.clone()
        if poison == "inf":
            t[1, 2, 150, 3] = float("inf")  # a key every row of its block sees
        elif poison == "nan":
            t[0, 1, 190, 120] = float("nan")
        elif poison == "neg":
            t[0, 0, 100, 50] = -1e6  # the largest |logit| is a negative entry among the seen keys
        elif poison == "diag":
            t[1, 0, 180, 179] = 1e6  # ... an entry of the causal triangle, next to the diagonal
        expect = _absmax_direct(t)
        for rows in (1, 16, 50, 1024):
            assert mod.max_abs_logit(t, rows=rows) == expect, (poison, rows)
            assert mod.max_abs_logit(t + dense, compact, rows=rows) == _absmax_direct(t + dense - dense), (poison, rows)
            assert mod.max_abs_logit(t + dense, dense, rows=rows) == _absmax_direct(t + dense - dense), (poison, rows)
        for r0 in (0, 37, 128):  # one hooked block of query rows r0.. (as the model's query blocks call the hook)
            later = t.clone()
            later[..., :r0, :] = float("-inf")  # the rows before the block do not count
            assert mod.max_abs_logit(t[..., r0:, :], rows=64, row0=r0) == _absmax_direct(later), (poison, r0)
    # a -inf bias hides a seen key: the compact bias's prefix goes through the copying path
    hidden = PrefixKeyBias(values.clone().index_fill_(0, torch.tensor([120]), float("-inf")), P)
    t = s + hidden.dense()
    own = t - hidden.dense()  # -inf - (-inf) = NaN on the hidden entries: not finite, skipped
    assert mod.max_abs_logit(t, hidden, rows=32) == _absmax_direct(own)


def test_weight_seeds_of_two_runs_share_no_replicate():
    a, b = mod.weight_seeds(0, 5), mod.weight_seeds(1, 5)
    assert a[0] == 0 and b[0] == 1  # replicate 0 keeps the run's own seed (its first model's key)
    assert len(set(a)) == 5 and not set(a) & set(b)  # seed + i would share all but one


def test_depth_law_claims_take_the_seed_replicates():
    seeds = mod.weight_seeds(0, 3)
    Ls = (1, 2, 4)
    runs = [_depth_run(L, s, _relay(L) + 0.01 * j) for L in Ls for j, s in enumerate(seeds)]
    law = mod.depth_law(runs)
    led = mod.depth_law_claims(law)
    c = led["alpha_vs_relay_L2"]
    per_seed = law["alpha"].sel(layers=2).values
    assert c.tolerance["n"] == 3 and c.tolerance["dof"] == 2.0
    assert c.tolerance["se"] == pytest.approx(per_seed.std(ddof=1) / math.sqrt(3))
    assert c.tolerance["k"] == pytest.approx(law.attrs["k95"])
    assert led["alpha_falls_with_depth"].tolerance["n"] == 3


def test_trained_vs_untrained_over_weight_seeds_takes_the_per_seed_differences():
    seeds = mod.weight_seeds(0, 3)
    un = [_fake("full", alpha=0.5 + 0.01 * i, data="markov", seed=s) for i, s in enumerate(seeds)]
    tr = [_fake("full", alpha=0.8 - 0.02 * i, data="markov", trained=True, seed=s) for i, s in enumerate(seeds)]
    claim = mod.trained_vs_untrained_claims(un, tr)["trained_forgets_faster"]
    diffs = [t.scalars["alpha"] - u.scalars["alpha"] for u, t in zip(un, tr, strict=True)]
    assert claim.status == "pass" and claim.tolerance["n"] == 3 and claim.tolerance["within_run"] is None
    assert claim.measured == pytest.approx(float(np.mean(diffs)))
    assert claim.tolerance["se"] == pytest.approx(float(np.std(diffs, ddof=1) / math.sqrt(3)))
    single = mod.trained_vs_untrained_claims(un[0], tr[0])["trained_forgets_faster"]
    assert single.tolerance["within_run"] and single.tolerance["dof"] == un[0].config.n_pairs - 1
    with pytest.raises(ValueError, match="same weight seeds"):
        mod.trained_vs_untrained_claims(un, tr[:2])
