"""Probe signal_propagation: the smoke preset end to end, the exact block Jacobians, the interface."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from analysis.model import TinyTransformer
from probes import base, cli
from probes import signal_propagation as sp

FIELDS = (
    "resid_var",
    "grad_norm",
    "angular_distance",
    "jacobian_identity_gap",
    "token_cosine",
    "rank_residual",
)


@pytest.fixture(scope="module")
def smoke():
    return base.run_probe(sp, sp.Config.preset("smoke"), progress=False)


def test_probe_contract():
    base.validate_probe(sp, "signal_propagation")


def test_smoke_result_fields_and_claims(smoke):
    cfg = smoke.config
    for name in FIELDS:
        assert name in smoke.data, name
    assert list(smoke.data.norm.values) == list(cfg.norms)
    assert list(smoke.data.depth.values) == sorted(cfg.depths)
    for L in cfg.depths:
        for norm in cfg.norms:
            v = smoke.data["resid_var"].sel(norm=norm, depth=L).values  # (pos, sample)
            assert np.isfinite(v[: L + 1]).all() and np.isnan(v[L + 1 :]).all()
            g = smoke.data["grad_norm"].sel(norm=norm, depth=L).values  # (layer, param, sample)
            assert np.isfinite(g[:L]).all() and (g[:L] > 0).all()
            gap = smoke.data["jacobian_identity_gap"].sel(norm=norm, depth=L).values
            assert np.isfinite(gap[:L]).all() and (gap[:L] > 0).all()
    # no claim fails; requires_full claims stay unevaluated in smoke
    assert smoke.ledger.ok, smoke.ledger.report()
    assert all(c.status != "pass" for c in smoke.checks if "doubly_exponential" in c.name)


def test_post_ln_stream_has_unit_second_moment(smoke):
    # Post-LN: every block output is a LayerNorm output, mean x^2 = var/(var + eps) per token;
    # eps = 1e-5 against variances of order 1, so 1e-3 is generous and still far from Pre-LN growth
    v = smoke.data["resid_var"].sel(norm="post")
    for L in smoke.config.depths:
        np.testing.assert_allclose(v.sel(depth=L).values[1 : L + 1], 1.0, atol=1e-3)
    assert float(smoke.data["resid_var"].sel(norm="pre", depth=4, pos=4).mean()) > 2.0


def test_jacobian_gap_is_exact_for_one_block():
    cfg = sp.Config.preset("smoke")
    model = sp.build(cfg, "pre", 2, seed=3)
    inputs, _ = sp.batch(cfg, 0)
    gaps = sp.jacobian_identity_gaps(model, inputs[:1])
    d = cfg.d_model
    x = model.embed_inputs(inputs[:1]).detach()  # (1, T, d)
    for layer in range(2):
        block = model.blocks[layer]

        def f(v, x=x, block=block):
            y = torch.cat([x[:, :-1], v[None, None]], dim=1)  # (1, T, d), last position replaced
            return block(y)[0, -1]

        J = torch.autograd.functional.jacobian(f, x[0, -1])
        expect = (J - torch.eye(d, dtype=torch.float64)).norm().item() / math.sqrt(d)
        assert gaps[layer] == pytest.approx(expect, rel=1e-12)
        with torch.no_grad():
            x = block(x)


def test_config_validation():
    with pytest.raises(ValueError, match="norms"):
        sp.Config(norms=("pre", "sandwich"))
    with pytest.raises(ValueError, match="heads"):
        sp.Config(d_model=30, heads=4)
    with pytest.raises(ValueError, match="depths"):
        sp.Config(depths=(2, 2))
    with pytest.raises(ValueError, match="model"):
        sp.run(sp.Config.preset("smoke"), model=TinyTransformer(sp.model_config(sp.Config(), "pre", 1, 0)))


def test_cli_json(capsys):
    rc = cli.main(["run", "signal_propagation", "--preset", "smoke", "--norms", "pre,qk_norm", "--depths", "1,2",
                   "--collapse-depth", "3", "--no-progress", "--json", "-"])  # fmt: skip
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["probe"] == "signal_propagation"
    for name in FIELDS:
        assert name in out["arrays"], name
