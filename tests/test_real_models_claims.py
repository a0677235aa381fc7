"""The claims of ``06_real_models`` (``probes/_real_models.py``): recorded with the right role and names,
one per quantity, identities passing on the same function and failing on a planted difference,
predictions failing on planted data that contradicts them."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import xarray as xr

from analysis.hf import HFModel, gpt2_config, zoo_from_gpt2
from analysis.ledger import Ledger
from probes import _real_models as rm
from probes._overview import t_multiplier


@pytest.fixture(scope="module")
def gpt2() -> HFModel:
    return HFModel.from_config(
        gpt2_config(vocab_size=256, n_positions=64, n_layer=2, n_embd=32, n_head=2), seed=1, dtype="float64"
    )


def test_gpt2_label_says_random_depth_and_width(gpt2):
    assert rm.gpt2_label(gpt2) == "gpt2_random_L2_d32"


def test_gpt2_zoo_identities_pass_on_a_copy_and_fail_on_a_planted_difference(gpt2, monkeypatch):
    # the probes' agreement is tested in tests/test_hf.py; here only how it is recorded
    monkeypatch.setattr(rm, "probe_agreement", lambda probe, a, b: {"x": 0.0, "y": 1e-15})
    tokens = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(0))
    zoo = zoo_from_gpt2(gpt2)
    res = rm.gpt2_zoo_agreement(gpt2, zoo, tokens, "smoke")
    names = [c.name for c in res.ledger]
    assert names[0] == "gpt2_random_L2_d32_zoo_hook_points"
    assert names[1:] == [f"gpt2_random_L2_d32_zoo_probe_{p}" for p in rm.PROBE_AGREEMENT]
    assert all(c.role == "identity" and c.status == "pass" for c in res.ledger), res.ledger.report()
    assert "random weights, 2 blocks, width 32" in res.ledger.claims[0].statement
    with torch.no_grad():
        zoo.blocks[1].mlp.W_out.bias.add_(1e-6)  # a planted bug in the copy
    bad = rm.gpt2_zoo_agreement(gpt2, zoo, tokens, "smoke")
    assert bad.ledger["gpt2_random_L2_d32_zoo_hook_points"].status == "fail"


def _rank(with_skip: np.ndarray, without: np.ndarray) -> dict:
    """(L + 1, batches) relative residuals: 0.7 at the embedding, the given last-block values."""
    first = np.full_like(with_skip, 0.7)
    return {("m", True): np.stack([first, with_skip]), ("m", False): np.stack([first, without])}


def test_dong_claim_is_a_direction_against_no_collapse():
    led = Ledger(rm.CONTEXT, preset="smoke")
    rm.dong_claims(led, _rank(np.array([0.5, 0.6, 0.55, 0.52]), np.array([1e-7, 2e-7, 1.5e-7, 1e-7])), {"m": "tag"})
    c = led["dong_noskip_collapses_tag"]
    assert len(led) == 1 and c.role == "prediction" and c.status == "pass"
    assert c.alternative["value"] == 0.0 and c.alternative["hypothesis"]
    assert c.tolerance["k"] == pytest.approx(t_multiplier(4))
    assert led.against_alternatives()["dong_noskip_collapses_tag"].status == "fail"
    # planted: removing the skips changes nothing (the alternative) -> not a pass
    same = np.array([0.5, 0.6, 0.55, 0.52])
    rm.dong_claims(led, _rank(same, same * np.array([1.01, 0.99, 1.0, 1.02])), {"m": "tag"})
    assert led["dong_noskip_collapses_tag"].status in ("fail", "inconclusive")
    # planted: removing the skips raises the residual -> fail
    rm.dong_claims(led, _rank(same, same * 1.5), {"m": "tag"})
    assert led["dong_noskip_collapses_tag"].status == "fail"


class _Run:
    """A stand-in for an attention_entropy Result: entropy and theory over (layer, head, n)."""

    def __init__(self, deficit: np.ndarray, theory: np.ndarray, n: int = 64):
        dims = ("layer", "head", "n")
        self.data = xr.Dataset(
            {
                "entropy": (dims, (np.log(n) - deficit)[..., None]),
                "theory_entropy": (dims, (np.log(n) - theory)[..., None]),
            },
            coords={"n": [n]},
        )


def test_entropy_claim_worst_layer_and_planted_miss():
    rng = np.random.default_rng(0)
    theory = np.full((3, 8), 0.01)
    good = _Run(theory * (1 + 0.01 * rng.standard_normal((3, 8))), theory)
    led = Ledger(rm.CONTEXT, preset="smoke")
    ratios = rm.entropy_claims(led, {"a": good}, {"a": "a"}, 64)
    c = led["entropy_deficit_gaussian_a"]
    assert len(led) == 1 and c.role == "prediction" and c.status == "pass", led.report()
    assert c.alternative["value"] == 0.0 and c.tolerance["k"] == pytest.approx(t_multiplier(8))
    mean, se = ratios["a"]
    assert mean.shape == (3,) and np.all(se > 0)
    # one layer 30% off: the worst layer is recorded and the claim fails (no diagnosis is declared)
    off = theory * (1 + 0.01 * rng.standard_normal((3, 8)))
    off[1] *= 1.3
    rm.entropy_claims(led, {"a": _Run(off, theory)}, {"a": "a"}, 64)
    c = led["entropy_deficit_gaussian_a"]
    assert c.status == "fail" and c.measured == pytest.approx(1.3, rel=0.02) and "worst layer, 1" in c.statement
    assert not c.diagnosed_by


def test_probe_claims_filter_by_role():
    led = Ledger("attention_entropy", preset="smoke")
    led.identity("eq", measured=0.0, source="s", why="w")
    led.bound("b", measured=1.0, bound=2.0, source="s")

    class R:
        ledger = led

    assert [c.name for c in rm.probe_claims(R(), roles=("bound",))] == ["b"]
    assert [c.name for c in rm.probe_claims(R())] == ["eq", "b"]


def test_no_skip_collapse_runs_signal_propagation_on_each_pair():
    from analysis.model import ModelConfig, TinyTransformer

    cfg = ModelConfig(
        input="tokens",
        vocab_size=256,
        output="none",
        d_model=16,
        n_layers=3,
        n_heads=2,
        d_mlp=32,
        norm="post",
        causal=False,
        pos="learned",
        max_len=64,
        seed=0,
    )
    pair = (TinyTransformer(cfg).eval(), TinyTransformer(cfg.replace(attn_residual=False, mlp_residual=False)).eval())
    sp = dict(data="corpus", seq_len=12, n_samples=3, batch_size=2, jacobian=False, seed=0)
    res = rm.no_skip_collapse({"tiny": pair}, {"tiny": "tiny"}, sp, "smoke")
    assert res.data["rank"]["tiny", True].shape == (4, 3) and set(res.runs) == {"tiny_skip", "tiny_noskip"}
    c = res.ledger["dong_noskip_collapses_tiny"]
    assert len(res.ledger) == 1 and c.role == "prediction" and c.status != "not_evaluated"
    logratio = np.log10(np.maximum(res.data["rank"]["tiny", False][-1], rm.RESOLUTION)) - np.log10(
        np.maximum(res.data["rank"]["tiny", True][-1], rm.RESOLUTION)
    )
    assert c.measured == pytest.approx(logratio.mean())
