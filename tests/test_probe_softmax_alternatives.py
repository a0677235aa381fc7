"""The softmax_alternatives probe: the memories are the zoo's MLP with the closed form's weights, the claims pass at
the full preset (a few seconds) and fail on planted wrong numbers, and bad configs are refused by name."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from analysis.ledger import Ledger
from probes import softmax_alternatives as sa
from probes.base import run_probe
from probes.softmax_alternatives import memory


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WORKBENCH_CACHE", str(tmp_path_factory.mktemp("cache")))
        return run_probe("softmax_alternatives", "full", progress=False)


def test_smoke_claims_wait_for_the_full_preset(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path))
    r = run_probe("softmax_alternatives", "smoke", progress=False)
    assert {c.status for c in r.checks} == {"not_evaluated"}
    assert {c.seed for c in r.checks} == {sa.SEED_SLOTS}
    assert r.data["memory_moment"].dims == ("activation", "slots", "memory_seed")


def test_full_claims_pass_with_the_other_activation_outside_the_band(full):
    by_name = {c.name: c for c in full.checks}
    assert set(by_name) == {"memory_relu_slot_slope", "memory_softmax_slot_slope", "memory_softmax_concentration"}
    for c in by_name.values():
        assert c.role == "prediction" and c.status == "pass", (c.name, c.status, c.measured, c.expected)
        assert c.tolerance["n"] == full.config.memory_seeds
    assert by_name["memory_relu_slot_slope"].expected == pytest.approx(1.0, abs=1e-12)
    assert by_name["memory_softmax_slot_slope"].expected < -0.9


def test_the_memory_is_the_zoos_mlp_with_the_closed_forms_weights():
    cfg = sa.Config.preset("full")
    relu = sa.memory_model(cfg, "relu", 4096, seed=3).blocks[0].mlp
    soft = sa.memory_model(cfg, "softmax", 4096, seed=3).blocks[0].mlp
    assert torch.equal(relu.W_in.weight, soft.W_in.weight) and torch.equal(relu.W_out.weight, soft.W_out.weight)
    keys, values = (
        relu.W_in.weight.detach().numpy(),
        relu.W_out.weight.detach().numpy(),
    )  # (n, d), (d, n): 262144 entries each
    assert keys.std() == pytest.approx(cfg.memory_std, rel=0.01)
    assert values.std() == pytest.approx(memory.value_std(cfg), rel=0.01)
    assert all(b is None or not b.any() for b in (relu.W_in.bias, relu.W_out.bias))  # no read-out offset
    x = sa.sphere_inputs(cfg, seed=0)
    np.testing.assert_allclose(x.pow(2).sum(-1).numpy(), cfg.memory_width, rtol=1e-13)
    with torch.no_grad():  # softmax over the hidden units: the read is a convex combination of the values
        p = torch.softmax(relu.W_in(x), dim=-1)
        torch.testing.assert_close(soft(x), relu.W_out(p), rtol=1e-12, atol=1e-15)


def test_same_seed_same_numbers(full, tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path))
    again = sa.run(full.config, progress=False)
    np.testing.assert_array_equal(again.data["memory_moment"].values, full.data["memory_moment"].values)


def _judged(result, moment) -> Ledger:
    data = result.data.copy(deep=True)
    data["memory_moment"].values[:] = moment
    led = Ledger(sa.NAME, preset="full")
    memory.claims(led, (dataclasses.replace(result, data=data),))
    return led


def test_planted_wrong_numbers_fail_the_claims(full):
    m = full.data["memory_moment"].values
    n = full.data["slots"].values.astype(np.float64)
    flat = m.copy()
    flat[1] *= n[:, None] / n[0]  # a softmax memory that does not shrink with its slot count
    led = _judged(full, flat)
    assert led["memory_softmax_slot_slope"].status == "fail"
    assert led["memory_relu_slot_slope"].status == "pass"
    uniform = m.copy()
    uniform[1] *= math.exp(-(full.scalars["memory_logit_std"] ** 2))  # weights that do not concentrate
    assert _judged(full, uniform)["memory_softmax_concentration"].status == "fail"


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"memory_slots": (16, 64)}, "memory_slots"),
        ({"memory_slots": (64, 16, 256)}, "memory_slots"),
        ({"memory_seeds": 1}, "memory_seeds"),
        ({"memory_std": 0.0}, "memory_std"),
    ],
)
def test_bad_configs_are_refused_by_name(over, match):
    with pytest.raises(ValueError, match=match):
        sa.Config.preset("full", **over)
