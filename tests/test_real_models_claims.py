"""The claims of ``06_real_models`` (``probes/real_models``): recorded with the right role and names,
one per quantity, identities passing on the same function and failing on a planted difference,
predictions failing on planted data that contradicts them."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import xarray as xr
from scipy import stats

from analysis.claims.evidence import replicate_seed
from analysis.claims.ledger import Ledger
from analysis.zoo.hf import HFModel, gpt2_config, zoo_from_gpt2
from companions import real_models as rm


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
    pre = ("m",)  # one pretrained network: its SE over text batches stands alone (within-run)
    rm.dong_claims(
        led, _rank(np.array([0.5, 0.6, 0.55, 0.52]), np.array([1e-7, 2e-7, 1.5e-7, 1e-7])), {"m": "tag"}, pre
    )
    c = led["dong_noskip_collapses_tag"]
    assert len(led) == 1 and c.role == "prediction" and c.status == "pass"
    assert c.alternative["value"] == 0.0 and c.alternative["hypothesis"]
    assert c.tolerance["policy"] == "t95" and c.tolerance["k"] == pytest.approx(stats.t.ppf(0.975, 3))
    assert c.tolerance["within_run"] and "pretrained" in c.tolerance["within_run"]
    assert led.against_alternatives()["dong_noskip_collapses_tag"].status == "fail"
    # planted: removing the skips changes nothing (the alternative) -> not a pass
    same = np.array([0.5, 0.6, 0.55, 0.52])
    rm.dong_claims(led, _rank(same, same * np.array([1.01, 0.99, 1.0, 1.02])), {"m": "tag"}, pre)
    assert led["dong_noskip_collapses_tag"].status in ("fail", "inconclusive")
    # planted: removing the skips raises the residual -> fail
    rm.dong_claims(led, _rank(same, same * 1.5), {"m": "tag"}, pre)
    assert led["dong_noskip_collapses_tag"].status == "fail"


def test_dong_claim_over_initialisations_takes_their_band_and_a_random_model_alone_none():
    rng = np.random.default_rng(0)
    runs = [_rank(0.5 + 0.05 * rng.random(4), 1e-7 * (1 + rng.random(4))) for _ in range(5)]
    rank = {key: np.stack([r[key] for r in runs]) for key in runs[0]}  # (inits, L + 1, batches)
    led = Ledger(rm.CONTEXT, preset="smoke")
    rm.dong_claims(led, rank, {"m": "tag"})
    c = led["dong_noskip_collapses_tag"]
    per_init = (np.log10(rank["m", False][:, -1]) - np.log10(rank["m", True][:, -1])).mean(-1)
    assert c.status == "pass" and c.measured == pytest.approx(per_init.mean())
    assert c.tolerance["n"] == 5 and not c.tolerance["within_run"]
    assert c.tolerance["se"] == pytest.approx(per_init.std(ddof=1) / np.sqrt(5))
    # one initialisation of a random model, not declared pretrained: nothing to claim about initialisations
    rm.dong_claims(led, _rank(np.array([0.5, 0.6]), np.array([1e-7, 2e-7])), {"m": "tag"})
    assert led["dong_noskip_collapses_tag"].status == "not_evaluated"


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
    eps = 0.01 * rng.standard_normal((3, 4))
    # the theory within a spread over heads, every layer's mean exactly on it (+-eps pairs): the worst of the three
    # layers is then no false fail at 95% (a random spread would give one 14% of the time, worst of 3)
    good = _Run(theory * (1 + np.concatenate([eps, -eps], axis=-1)), theory)
    led = Ledger(rm.CONTEXT, preset="smoke")
    ratios = rm.entropy_claims(led, {"a": good}, {"a": "a"}, 64, pretrained=("a",))
    c = led["entropy_deficit_gaussian_a"]
    assert len(led) == 1 and c.role == "prediction" and c.status == "pass", led.report()
    # the worst of 3 layers: the Sidak band keeps 95% for the three together
    assert c.tolerance["family"] == 3 and c.tolerance["k"] == pytest.approx(stats.t.ppf(0.5 + 0.95 ** (1 / 3) / 2, 7))
    assert c.alternative["value"] == 0.0 and c.tolerance["k"] > stats.t.ppf(0.975, 7)
    assert c.tolerance["within_run"]  # one pretrained network: its heads are the draws
    mean, se = ratios["a"]
    assert mean.shape == (3,) and np.all(se > 0)
    # one layer 30% off: the worst layer is recorded and the claim fails (no diagnosis is declared)
    off = theory * (1 + 0.01 * rng.standard_normal((3, 8)))
    off[1] *= 1.3
    rm.entropy_claims(led, {"a": _Run(off, theory)}, {"a": "a"}, 64, pretrained=("a",))
    c = led["entropy_deficit_gaussian_a"]
    assert c.status == "fail" and c.measured == pytest.approx(1.3, rel=0.02) and "worst layer, 1" in c.statement
    assert not c.diagnosed_by


def test_entropy_claim_over_initialisations_and_a_random_model_alone():
    rng = np.random.default_rng(1)
    theory = np.full((3, 8), 0.01)
    inits = [_Run(theory * (1 + 0.01 * rng.standard_normal((3, 8))), theory) for _ in range(5)]
    for r in inits:  # layer 1 of every initialisation 30% off the theory
        r.data["entropy"][1] -= 0.3 * 0.01
    led = Ledger(rm.CONTEXT, preset="smoke")
    ratios = rm.entropy_claims(led, {"a": inits}, {"a": "a"}, 64)
    c = led["entropy_deficit_gaussian_a"]
    per_init = np.array([rm.deficit_ratio(r, 64)[0][1] for r in inits])  # layer 1, mean over heads
    assert c.status == "fail" and "worst layer, 1" in c.statement and c.measured == pytest.approx(per_init.mean())
    assert c.tolerance["n"] == 5 and not c.tolerance["within_run"]
    np.testing.assert_allclose(ratios["a"][0], rm.deficit_ratio(inits[0], 64)[0])  # the first initialisation's
    rm.entropy_claims(led, {"a": inits[0]}, {"a": "a"}, 64)  # random weights, one initialisation
    assert led["entropy_deficit_gaussian_a"].status == "not_evaluated"


def test_probe_claims_filter_by_role():
    led = Ledger("a_probe", preset="smoke")  # a context without declarations takes any claim name
    led.identity("eq", measured=0.0, source="s", why="w")
    led.bound("b", measured=1.0, bound=2.0, source="s")

    class R:
        ledger = led

    assert [c.name for c in rm.probe_claims(R(), roles=("bound",))] == ["b"]
    assert [c.name for c in rm.probe_claims(R())] == ["eq", "b"]


def test_no_skip_collapse_runs_signal_propagation_on_each_pair():
    from analysis.zoo.model import ModelConfig, TinyTransformer

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

    def pair(seed):
        c = cfg.replace(seed=seed)
        return TinyTransformer(c).eval(), TinyTransformer(c.replace(attn_residual=False, mlp_residual=False)).eval()

    sp = dict(data="corpus", seq_len=12, n_samples=3, batch_size=2, jacobian=False, seed=0)
    inits = [pair(replicate_seed(0, i)) for i in range(2)]  # random weights: two independent initialisations
    res = rm.no_skip_collapse({"tiny": inits}, {"tiny": "tiny"}, sp, "smoke")
    assert res.data["rank"]["tiny", True].shape == (4, 3) and set(res.runs) == {"tiny_skip", "tiny_noskip"}
    assert res.data["rank_inits"]["tiny", True].shape == (2, 4, 3)
    np.testing.assert_array_equal(res.data["rank_inits"]["tiny", True][0], res.data["rank"]["tiny", True])
    c = res.ledger["dong_noskip_collapses_tiny"]
    assert len(res.ledger) == 1 and c.role == "prediction" and c.status != "not_evaluated"
    ranks = res.data["rank_inits"]
    logratio = np.log10(np.maximum(ranks["tiny", False][:, -1], rm.RESOLUTION)) - np.log10(
        np.maximum(ranks["tiny", True][:, -1], rm.RESOLUTION)
    )  # (inits, batches)
    assert c.measured == pytest.approx(logratio.mean()) and c.tolerance["n"] == 2
    # one initialisation alone, not declared pretrained: not evaluated
    alone = rm.no_skip_collapse({"tiny": inits[0]}, {"tiny": "tiny"}, sp, "smoke")
    assert alone.ledger["dong_noskip_collapses_tiny"].status == "not_evaluated"


def test_the_design_is_the_committed_figures_and_builds_the_preset():
    """``companions.real_models.design`` is the experiment behind the committed figures: its probe configurations
    hash to their recorded inputs (full preset, seed 0); ``build`` gives the preset's models, independent
    initialisations with replicate seeds, and names a bad parameter."""
    import json

    from analysis.core.io import content_hash
    from analysis.core.paths import REPO
    from companions.real_models import design

    def inputs(figure):
        return json.loads((REPO / "figures" / f"{figure}.json").read_text())["inputs"]

    assert content_hash(design.signal_config("full", 0)) == inputs("real_rank_collapse")["config"]
    assert content_hash(design.collapse_config("full", 0)) == inputs("real_representational_collapse")["config"]
    assert content_hash(list(design.DESIGN["full"]["ctx_lens"])) == inputs("real_attention_entropy")["ctx_lens"]
    built = design.build("smoke", seed=2, gpt2_layers=1)
    assert len(built.encoder_inits) == len(built.tiny_pairs) == 2
    assert [p[0].config.seed for p in built.tiny_pairs] == [2, replicate_seed(2, 1)]
    assert not built.tiny_pairs[0][1].config.attn_residual and built.gpt2_label == "gpt2_random_L1_d64"
    assert set(built.models) == set(built.tags) and built.tags[built.gpt2_name] == built.gpt2_label
    assert built.sp_config["seq_len"] == 48 and built.rc_config["max_len"] == 48 and built.ctx_lens == (16, 64, 128)
    assert len(built.sp_models[design.REINIT]) == 2 and tuple(built.agreement_tokens.shape) == (2, 64)
    for kwargs, message in (({"preset": "big"}, "preset must be one of"), ({"gpt2_layers": 0}, "gpt2_layers")):
        with pytest.raises(ValueError, match=message):
            design.build(**kwargs)
