"""The attention phase diagram of signal_propagation (probes.signal_propagation.phase): exact checks of the measurement,
the claims judged and flipped by planted inputs, keys, validation and the command line."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from analysis.probing import base, cli
from probes import signal_propagation as sp
from probes.signal_propagation import phase, phase_claims

SMALL = dict(norms=("pre",), depths=(1, 2), collapse_depth=3)


@pytest.fixture(scope="module")
def smoke():
    return base.run_probe(sp, sp.Config.preset("smoke", phase=True, **SMALL), progress=False)


def test_phase_fields_leave_every_existing_key_alone():
    for preset in ("smoke", "full"):
        d = sp.Config.preset(preset).to_dict()
        assert not [k for k in d if k.startswith("phase")], d
    d = sp.Config.preset("smoke", phase=True, phase_tokens=16, phase_d_model=17).to_dict()
    assert d["phase"] is True and d["phase_tokens"] == 16 and "phase_betas" not in d
    assert phase.design(sp.Config.preset("smoke", phase_seeds=3))["seeds"] == 3
    assert phase.design(sp.Config.preset("full"))["tokens"] == phase.DESIGN["full"]["tokens"]


def test_smoke_result_and_claims(smoke):
    data, led = smoke.data, smoke.ledger
    d = phase.design(smoke.config)
    assert data["phase_entropy"].shape == (len(d["cosines"]), len(d["betas"]), d["seeds"], d["depth"])
    assert data["phase_cosine"].shape[-1] == d["depth"] + 1
    np.testing.assert_allclose(
        data["phase_cosine"].values[..., 0],
        np.broadcast_to(np.asarray(d["cosines"])[:, None, None], data["phase_cosine"].shape[:-1]),
        atol=1e-12,
    )  # the input cosine
    assert led["phase_attention_overlap_identity"].status == "pass"
    for p in d["cosines"]:
        for name in ("entropy_finite_T", "participation_finite_T", "depth_cosine_above", "depth_cosine_below"):
            c = led[f"phase_{name}_{phase.tag(p)}"]
            assert c.role == "prediction" and c.status == "not_evaluated"  # smoke: requires the full preset


def _rejudge(smoke, data):
    led = sp.Ledger(sp.NAME, preset="full")
    phase_claims.claims(led, dataclasses.replace(smoke, data=data, scalars={}))
    return led


def test_claims_at_full_and_planted_inputs_flip_them(smoke):
    led = _rejudge(smoke, smoke.data)
    for p in phase.design(smoke.config)["cosines"]:
        c = led[f"phase_entropy_finite_T_{phase.tag(p)}"]
        assert c.outcome is not None and c.alternative["value"] != 0.0
        assert c.tolerance["family"] >= 1
    # rows far more condensed than the random-energy model says (by 0.3, the same in every seed): the claims fail
    data = smoke.data.copy(deep=True)
    noise = np.random.default_rng(1).normal(0, 1e-3, data["phase_yard_entropy"].shape)
    data["phase_entropy"].values[..., 0] = data["phase_yard_entropy"].values - 0.3 + noise
    data["phase_participation"].values[..., 0] = data["phase_yard_participation"].values + 0.3 + noise
    led = _rejudge(smoke, data)
    for p in phase.design(smoke.config)["cosines"]:
        assert led[f"phase_entropy_finite_T_{phase.tag(p)}"].status == "fail"
        assert led[f"phase_participation_finite_T_{phase.tag(p)}"].status == "fail"
    # a stream that keeps its input cosine: the below-beta_c depth claim fails (its alternative is then right)
    data = smoke.data.copy(deep=True)
    data["phase_cosine"].values[:] = data["phase_cosine"].values[..., :1]
    data["phase_cosine"].values[:] += np.random.default_rng(0).normal(0, 1e-3, data["phase_cosine"].shape)
    c = _rejudge(smoke, data)["phase_depth_cosine_below_p050"]
    assert c.status == "fail" and c.alternative["consistent"]
    # a broken overlap identity is a bug, reported
    data = smoke.data.copy(deep=True)
    data["phase_identity_gap"].values[0, 0, 0] = 1e-6
    assert _rejudge(smoke, data)["phase_attention_overlap_identity"].status == "fail"


def test_uniform_attention_at_zero_inverse_temperature_is_exact():
    """beta = 0: every row is uniform, so H / ln T = 1, sum a^2 = 1/T and the shared weight is 1/T exactly."""
    T, d, p = 12, 16, 0.3
    x = torch.from_numpy(phase._tokens(np.random.default_rng(0).standard_normal((d, T + 1)), d, p))
    np.testing.assert_allclose(x.numpy() @ x.numpy().T / d, p + (1 - p) * np.eye(T), atol=1e-12)
    m = phase.measure(sp.TinyTransformer(phase.model_config(d, 2, 0.0, T, 5)), x, p)
    np.testing.assert_allclose(m["entropy"], 1.0, rtol=1e-12)
    np.testing.assert_allclose(m["participation"], 1 / T, rtol=1e-12)
    np.testing.assert_allclose(m["shared"], 1 / T, rtol=1e-12)
    assert m["identity_gap"] < 1e-13 and np.all(m["row_sigma"] == 0.0)
    assert m["cosine"][0] == pytest.approx(p, abs=1e-12)


def test_model_is_the_theory_block():
    cfg = phase.model_config(40, 3, 2.0, 32, 1)
    assert (cfg.norm, cfg.activation, cfg.n_heads, cfg.causal, cfg.pos, cfg.bias) == (
        "post",
        "relu",
        1,
        False,
        "none",
        False,
    )
    assert cfg.scale == pytest.approx(2.0 * math.sqrt(math.log(32)) / math.sqrt(40))


def test_bad_phase_fields_are_refused():
    with pytest.raises(ValueError, match=r"^phase_d_model must be >= phase_tokens \+ 1 = 25"):
        sp.Config.preset("smoke", phase=True, phase_d_model=20)
    with pytest.raises(ValueError, match="^phase needs trained=false"):
        sp.Config.preset("smoke", phase=True, trained=True)
    with pytest.raises(ValueError, match="^phase_betas must not repeat"):
        sp.Config.preset("smoke", phase_betas=(1.0, 1.0))
    with pytest.raises(ValueError, match="phase_cosines"):
        sp.Config.preset("smoke", phase_cosines=(1.0,))
    with pytest.raises(ValueError, match="^phase needs the zoo sweep"):
        sp.run(
            sp.Config.preset("smoke", phase=True),
            model=sp.TinyTransformer(sp.model_config(sp.Config.preset("smoke"), "pre", 1, 0)),
        )


def test_cli_refuses_a_bad_phase_field_in_one_line(capsys):
    rc = cli.main(["run", "signal_propagation", "--preset", "smoke", "--phase", "true", "--phase-d-model", "3"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "phase_d_model" in err[0], err
