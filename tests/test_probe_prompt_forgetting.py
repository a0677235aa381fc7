"""Probe prompt_forgetting (smoke-sized): protocol, exact relay identity, cancelling bias, validation."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import probes
from analysis.model import TinyTransformer
from analysis.paths import REPO
from probes.base import run_probe

mod = probes.get("prompt_forgetting")
SMALL = dict(cont_len=96, n_pairs=3, d_model=16, heads=2, mlp=0, n_boot=50, fit_lo=20.0, prompt_len=4)


def _run(**over):
    return run_probe(mod, mod.Config.preset("smoke", **over), progress=False)


def test_smoke_result_has_the_interface_fields():
    r = _run()
    cfg = r.config
    L, T = cfg.layers, cfg.cont_len
    assert r.data["distance"].shape == (L, T)
    np.testing.assert_array_equal(r.data["t"].values, np.arange(cfg.prompt_len + 1, cfg.prompt_len + T + 1))
    for name in ("alpha", "alpha_ci", "alpha_local", "bound_ratio", "relay", "prompt_share"):
        assert name in r.data
    for name in ("alpha", "alpha_ci_lo", "alpha_ci_hi", "max_logit", "min_prenorm_rms"):
        assert np.isfinite(r.scalars[name])
    lo, hi = r.data["alpha_ci"].values[-1]
    assert lo <= r.scalars["alpha"] <= hi
    assert r.scalars["min_prenorm_rms"] > 0 and r.scalars["max_logit"] > 0
    assert not r.ledger.failed
    assert r.ledger["alpha_untrained_seed_range"].status == "not_evaluated"  # requires the full preset
    assert "relay_matrix" not in r.data  # softmax with LN and MLP is not the matrix relay model
    # the geometric mean really is over pairs
    gm = np.exp(np.log(r.data["distance_pairs"].values).mean(axis=0))
    np.testing.assert_allclose(r.data["distance"].values, gm, rtol=1e-12)


@pytest.mark.parametrize("layers", [1, 2])
def test_uniform_network_is_the_matrix_relay_model(layers):
    r = _run(**SMALL, layers=layers, attention="uniform", norm="none", dtype="float64")
    claim = r.ledger["uniform_equals_matrix_relay"]
    assert claim.status == "pass", claim.line()
    # the stored exact prediction is the one the claim checked (pair-averaged like `distance`)
    scale = r.data["distance"].values.max()
    # float64 rounding is ~N L sqrt(d) eps ~ 1e-12 of scale here; 1e-9 still fails any non-relay model (>1e-6)
    np.testing.assert_allclose(r.data["relay_matrix"].values, r.data["distance"].values, rtol=0, atol=1e-9 * scale)
    if layers == 1:
        assert r.ledger["uniform_one_layer_alpha_is_1"].status == "pass"
        assert abs(r.scalars["alpha"] - 1.0) < 1e-9


def test_relay_check_detects_a_broken_model():
    """The exact check must fail when the network is not the relay model (an MLP is added)."""
    cfg = mod.Config.preset("smoke", **SMALL, attention="uniform", norm="none", dtype="float64")
    model = TinyTransformer(mod.model_config(cfg).replace(d_mlp=8)).eval()
    a, b, c = mod.draw_pairs(cfg)
    m = mod.measure(model, a, b, c, progress=False)
    pred = mod.relay_prediction(model, m["embed_delta"], cfg.prompt_len + cfg.cont_len)[:, :, cfg.prompt_len :]
    assert np.max(np.abs(m["distance"] - pred)) / m["norm"].max() > 1e-6


def test_cancel_bias_keeps_share_and_slows_forgetting():
    base = dict(SMALL, attention="uniform", norm="none", dtype="float64", layers=2)
    plain = _run(**base)
    biased = _run(**base, logit_bias="cancel")
    assert biased.ledger["cancel_bias_share_constant"].status == "pass"
    assert "relay_matrix" not in biased.data  # the bias breaks the relay identity: no prediction stored
    share = plain.data["prompt_share"].values
    P = plain.config.prompt_len
    np.testing.assert_allclose(share[0], P / plain.data["t"].values, rtol=1e-12)  # dilution: P / t
    assert biased.scalars["alpha"] < plain.scalars["alpha"] - 0.3  # the bias removes most of the decay


def test_model_passed_in_and_softmax_share_bound():
    cfg = mod.Config.preset("smoke", **SMALL)
    model = TinyTransformer(mod.model_config(cfg)).eval()
    r = run_probe(mod, cfg, model=model, progress=False)
    assert r.ledger["prompt_share_dilution_bound"].status == "pass"
    with pytest.raises(ValueError, match="causal"):
        run_probe(mod, cfg, model=TinyTransformer(mod.model_config(cfg).replace(causal=False)), progress=False)


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"trained": True}, "trained"),
        ({"fit_lo": 2.0}, "fit_lo"),
        ({"heads": 3}, "divisible"),
        ({"logit_bias": "other"}, "logit_bias"),
        ({"pos": "learned"}, "pos"),
    ],
)
def test_config_validation(over, match):
    with pytest.raises(ValueError, match=match):
        mod.Config.preset("smoke", **over)


def test_command_line_json():
    proc = subprocess.run(
        [sys.executable, "-m", "probes", "run", "prompt_forgetting", "--preset", "smoke", "--cont-len", "64",
         "--n-pairs", "2", "--fit-lo", "20", "--json", "-", "--no-progress"],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    out = json.loads(proc.stdout)
    assert out["probe"] == "prompt_forgetting"
    assert set(out["arrays"]) >= {"distance", "alpha", "alpha_ci", "alpha_local", "bound_ratio"}
    assert out["arrays"]["distance"]["dims"] == ["layer", "t"]
