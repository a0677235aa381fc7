"""Probe prompt_forgetting (smoke-sized): protocol, exact relay identity, cancelling bias, validation."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
import torch

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


class _NoOptionalHooks(TinyTransformer):
    """A zoo model that, like the Hugging Face adapter, lists no norm or attention-internal hooks."""

    def hook_names(self) -> list[str]:
        drop = (".hook_in", ".hook_normalized", "attn.hook_scores", "attn.hook_pattern")
        return [n for n in super().hook_names() if not n.endswith(drop)]


def _external(cfg, **over):
    """A zoo model standing in for a passed-in one: learned positions, a larger vocabulary than cfg's."""
    changes = dict(pos="learned", max_len=cfg.prompt_len + cfg.cont_len, vocab_size=2 * cfg.vocab_size, seed=5)
    return mod.model_config(cfg).replace(**{**changes, **over})


def test_passed_model_with_learned_positions_and_its_own_vocabulary():
    cfg = mod.Config.preset("smoke", **SMALL)
    model = TinyTransformer(_external(cfg)).eval()
    a, b, c = mod.draw_pairs(cfg, model)
    # ids are drawn from the model's vocabulary (2x the config's), not the config's
    assert int(torch.cat([a, b, c], dim=1).max()) >= cfg.vocab_size
    assert int(torch.cat([a, b, c], dim=1).max()) < 2 * cfg.vocab_size
    r = run_probe(mod, cfg, model=model, progress=False)
    assert r.data["distance"].shape == (model.n_layers, cfg.cont_len)
    assert np.isfinite(r.scalars["alpha"]) and not r.ledger.failed
    assert r.ledger["condition_prenorm_rms"].status == "pass"  # the zoo lists its norm inputs
    assert r.ledger["alpha_seed_range"].status == "not_evaluated"  # untrained/trained unknown to the probe
    assert r.meta["model_vocab_size"] == 2 * cfg.vocab_size
    # P + T beyond the model's positions, and a Markov language larger than the model's vocabulary
    short = TinyTransformer(_external(cfg, max_len=cfg.prompt_len + cfg.cont_len - 1)).eval()
    with pytest.raises(ValueError, match="prompt_len \\+ cont_len"):
        run_probe(mod, cfg, model=short, progress=False)
    small_vocab = TinyTransformer(_external(cfg, vocab_size=cfg.vocab_size // 2)).eval()
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
    over = dict(SMALL, data="corpus", trained=True, d_model=32, mlp=64)
    plain = _run(**over)
    biased = _run(**over, logit_bias="cancel")
    assert plain.meta["checkpoint"] == biased.meta["checkpoint"]  # one trained model, two measurements
    assert np.isfinite(biased.scalars["alpha"]) and not biased.ledger.failed
    # the bias ln(t - P) on the prompt keys raises the prompt's attention share late in the continuation
    late = plain.data["t"].values > plain.data["t"].values[-1] / 2
    assert biased.data["prompt_share"].values[:, late].mean() > plain.data["prompt_share"].values[:, late].mean()


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


def test_untrained_deviation_text_uses_the_runs_own_depth_and_length():
    for layers, T in ((2, 1024), (3, 4096)):
        cfg = mod.Config.preset("full", layers=layers, cont_len=T, fit_lo=32.0)
        N = cfg.prompt_len + T
        text = mod._seed_deviation(cfg)
        assert f"L = {layers}" in text and f"t = {N}" in text
        assert f"{1 - (layers - 1) / math.log(N):.2f}" in text  # the bound's local exponent at the window end
