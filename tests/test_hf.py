"""The Hugging Face adapter: our hook names on real ``transformers`` models, never a hub.

The reference for a randomly initialised GPT-2 is our own zoo model carrying the same weights
(``zoo_from_gpt2``): the two compute the same function with different code, so in float64 they agree
to rounding (a few ulps of the activations, ~1e-15 relative; we allow 1e-10 because errors grow through
layers and the softmax amplifies logit differences by at most the logit range). The reference for the
pretrained encoder is ``transformers``' own eager attention on a second copy of the same weights.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import transformers  # the hf extra is part of `make test`: missing it is a failure, not a skip)

from analysis.zoo.hf import (
    HFModel,
    gpt2_config,
    minilm_dir,
    zoo_config_for_gpt2,
    zoo_from_gpt2,
)
from analysis.zoo.hooks import hooks, run_with_cache
from analysis.zoo.model import ModelConfig, PrefixKeyBias
from analysis.zoo.protocol import ProbeModel, encode_text, max_positions, vocab_size
from companions.real_models import PROBE_AGREEMENT, probe_agreement

TOL = 1e-10  # float64, same weights, different code: rounding only (see the module docstring)


@pytest.fixture(scope="module")
def gpt2() -> HFModel:
    return HFModel.from_config(gpt2_config(vocab_size=512, n_positions=128, n_layer=3), seed=3, dtype="float64")


@pytest.fixture(scope="module")
def zoo(gpt2):
    return zoo_from_gpt2(gpt2)


@pytest.fixture(scope="module")
def minilm() -> HFModel:
    return HFModel.from_pretrained(minilm_dir())


def tokens(vocab: int, shape=(2, 24), seed: int = 0) -> torch.Tensor:
    return torch.randint(0, vocab, shape, generator=torch.Generator().manual_seed(seed))


# ---- the protocol ----------------------------------------------------------------------------------
def test_adapter_satisfies_the_probe_protocol(gpt2, minilm):
    for m in (gpt2, minilm):
        assert isinstance(m, ProbeModel)
        assert m.input_kind == "tokens"
    assert gpt2.causal and not minilm.causal
    assert (gpt2.n_layers, minilm.n_layers) == (3, 6)
    assert vocab_size(minilm) == 30522 and max_positions(minilm) == 512
    assert vocab_size(gpt2) == 512 and max_positions(gpt2) == 128


def test_gpt2_hook_names_are_the_zoo_names(gpt2, zoo):
    assert gpt2.hook_names() == zoo.hook_names()


def test_gpt2_equals_its_zoo_equivalent_at_every_hook_point(gpt2, zoo):
    x = tokens(512)
    out_hf, c_hf = run_with_cache(gpt2, x)
    out_zoo, c_zoo = run_with_cache(zoo, x)
    scale = out_zoo.abs().max().item()
    assert (out_hf - out_zoo).abs().max().item() <= TOL * scale
    assert set(c_hf) == set(c_zoo)
    for name in c_zoo:
        a, b = c_hf[name], c_zoo[name]
        assert a.shape == b.shape, name
        finite = torch.isfinite(b)
        assert torch.equal(finite, torch.isfinite(a)), name  # -inf exactly where the zoo masks
        assert (a[finite] - b[finite]).abs().max().item() <= TOL * max(b[finite].abs().max().item(), 1.0), name


def test_attention_bias_and_interventions_act_as_in_the_zoo(gpt2, zoo):
    x = tokens(512, (1, 16), seed=1)
    T = x.shape[1]
    bias = torch.zeros(T, T, dtype=torch.float64)
    bias[:, 0] = float("-inf")  # hide the first key from every query but the first
    bias[0, 0] = 0.0
    per_layer = [None, bias, torch.full((T, T), 0.5, dtype=torch.float64)]
    for b in (bias, per_layer):
        _, c_hf = run_with_cache(gpt2, x, names="blocks.*.attn.hook_pattern", attn_bias=b)
        _, c_zoo = run_with_cache(zoo, x, names="blocks.*.attn.hook_pattern", attn_bias=b)
        for name in c_zoo:
            assert (c_hf[name] - c_zoo[name]).abs().max().item() <= TOL
    _, c = run_with_cache(gpt2, x, names="blocks.1.attn.hook_pattern", attn_bias=bias)
    assert c["blocks.1.attn.hook_pattern"][0, :, 1:, 0].abs().max().item() == 0.0
    compact = PrefixKeyBias(torch.linspace(0.0, 3.0, T, dtype=torch.float64), 4)  # expanded by the adapter
    assert torch.equal(gpt2(x, attn_bias=compact), gpt2(x, attn_bias=compact.dense()))

    def uniform(p, name):  # an intervention: replace the pattern by uniform causal attention
        return torch.tril(torch.ones_like(p)) / torch.arange(1, p.shape[-1] + 1, dtype=p.dtype)[:, None]

    with hooks(gpt2, [("blocks.0.attn.hook_pattern", uniform)]), hooks(zoo, [("blocks.0.attn.hook_pattern", uniform)]):
        a, b = gpt2(x), zoo(x)
    assert (a - b).abs().max().item() <= TOL * b.abs().max().item()
    assert (a - gpt2(x)).abs().max().item() > 1e-3  # the intervention changed the output


def test_zoo_config_for_gpt2_refuses_what_the_zoo_lacks():
    with pytest.raises(ValueError, match="scale_attn_by_inverse_layer_idx"):
        zoo_config_for_gpt2(gpt2_config(scale_attn_by_inverse_layer_idx=True))
    with pytest.raises(ValueError, match="activation_function"):
        zoo_config_for_gpt2(gpt2_config(activation_function="swish"))
    assert isinstance(zoo_config_for_gpt2(gpt2_config()), ModelConfig)


def test_from_config_is_deterministic_and_leaves_the_global_rng_alone():
    state = torch.random.get_rng_state()
    a = HFModel.from_config(gpt2_config(n_layer=1), seed=5)
    assert torch.equal(state, torch.random.get_rng_state())
    b = HFModel.from_config(gpt2_config(n_layer=1), seed=5)
    c = HFModel.from_config(gpt2_config(n_layer=1), seed=6)
    wa, wb, wc = (m.hf.transformer.h[0].attn.c_attn.weight for m in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)


# ---- skip connections removed (Dong et al.) --------------------------------------------------------
def test_gpt2_without_skips_computes_f_of_x(gpt2):
    bare = gpt2.with_residual(False)
    x = tokens(512, (1, 12), seed=2)
    _, c = run_with_cache(bare, x)
    for layer in range(bare.n_layers):
        mid, attn = c[f"blocks.{layer}.hook_resid_mid"], c[f"blocks.{layer}.hook_attn_out"]
        post, mlp = c[f"blocks.{layer}.hook_resid_post"], c[f"blocks.{layer}.hook_mlp_out"]
        pre = c[f"blocks.{layer}.hook_resid_pre"]
        # y = f(x): the stream after each sublayer is its branch output, computed as (f(x) - x) + x,
        # i.e. f(x) up to one rounding of a sum of magnitude max(|x|, |f(x)|)
        eps = 4 * torch.finfo(torch.float64).eps
        assert (mid - attn).abs().max().item() <= eps * max(pre.abs().max().item(), attn.abs().max().item())
        assert (post - mlp).abs().max().item() <= eps * max(mid.abs().max().item(), mlp.abs().max().item())
    _, c_skip = run_with_cache(gpt2, x, names="blocks.0.hook_resid_mid")
    assert (c_skip["blocks.0.hook_resid_mid"] - c["blocks.0.hook_resid_mid"]).abs().max().item() > 1e-3


def test_bert_without_skips_feeds_no_residual(minilm):
    bare = minilm.with_residual(False)
    ids = minilm.encode("Return the sum of a and b. Raise ValueError if either is negative.")[None]
    _, c = run_with_cache(bare, ids)
    for layer in range(bare.n_layers):
        # Post-LN: ln1's input is attn_out + x with skips, attn_out alone without (exactly: zeros added)
        assert torch.equal(c[f"blocks.{layer}.ln1.hook_in"], c[f"blocks.{layer}.hook_attn_out"])
        assert torch.equal(c[f"blocks.{layer}.ln2.hook_in"], c[f"blocks.{layer}.hook_mlp_out"])
    _, c_skip = run_with_cache(minilm, ids, names="blocks.0.ln1.hook_in")
    assert not torch.equal(c_skip["blocks.0.ln1.hook_in"], c["blocks.0.hook_attn_out"])


# ---- the pretrained encoder ------------------------------------------------------------------------
def test_minilm_with_our_attention_equals_transformers_eager(minilm):
    stock = transformers.AutoModel.from_pretrained(
        minilm_dir(), local_files_only=True, attn_implementation="eager"
    ).eval()
    assert stock.config._attn_implementation == "eager"
    ids = minilm.encode("Open the file and return its lines, stripped of trailing whitespace.")[None]
    with torch.no_grad():
        ref = stock(input_ids=ids).last_hidden_state
        ours = minilm(ids)
    # float32, 6 layers, same operations in a different order: a few ulps of O(1) activations
    assert (ours - ref).abs().max().item() <= 1e-5
    _, c = run_with_cache(minilm, ids, names="blocks.*.attn.hook_pattern")
    for p in c.values():
        assert torch.allclose(p.sum(-1), torch.ones(()), atol=1e-6)  # bidirectional: full rows


def test_minilm_tokenizer_is_offline_and_deterministic(minilm):
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    a = encode_text(minilm, "attention is all you need")
    assert a.dtype == torch.long and a.dim() == 1 and torch.equal(a, minilm.encode("attention is all you need"))
    assert int(a.max()) < minilm.vocab_size


def test_bad_inputs_are_refused(minilm, tmp_path):
    with pytest.raises(ValueError, match="config.json"):
        HFModel.from_pretrained(tmp_path)
    with pytest.raises(ValueError, match="512 positions"):
        minilm(torch.zeros(1, 513, dtype=torch.long))
    with pytest.raises(ValueError, match="integer token ids"):
        minilm(torch.zeros(1, 4, 384))
    with pytest.raises(ValueError, match="residual"):
        HFModel(transformers.BertModel(minilm.hf.config), residual="no")
    with pytest.raises(ValueError, match="already wrapped"):
        HFModel(minilm.hf)


# ---- probes on real models -------------------------------------------------------------------------
def test_causal_only_probe_refuses_the_encoder(minilm):
    from analysis.probing.base import run_probe

    with pytest.raises(ValueError, match="causal"):
        run_probe("prompt_forgetting", "smoke", model=minilm, progress=False)


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TQDM_DISABLE": "1"}
    return subprocess.run([sys.executable, "-m", "probes", *args], capture_output=True, text=True, env=env, timeout=300)


def test_cli_model_option_errors_are_one_line_exit_2(tmp_path):
    r = _cli("run", "prompt_forgetting", "--preset", "smoke", "--model", "minilm")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "causal" in r.stderr
    r = _cli("run", "attention_entropy", "--preset", "smoke", "--model", str(tmp_path / "nowhere"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--model" in r.stderr
    r = _cli("run", "attention_entropy", "--preset", "smoke", "--model", "minilm", "--cache")
    assert r.returncode == 2 and "--cache" in r.stderr


def test_cli_runs_a_probe_on_a_local_gpt2_folder(tmp_path):
    model = HFModel.from_config(gpt2_config(vocab_size=1024, n_positions=1024, n_layer=2), seed=0)
    model.hf.save_pretrained(tmp_path / "gpt2")  # safetensors by default
    assert (tmp_path / "gpt2" / "model.safetensors").is_file()
    r = _cli("run", "attention_entropy", "--preset", "smoke", "--model", str(tmp_path / "gpt2"), "--json", "-")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["probe"] == "attention_entropy"
    ent = np.array(out["arrays"]["entropy"]["values"], dtype=float)
    assert ent.shape[0] == 2 and np.isfinite(ent).any()


# ---- every probe measures the same numbers on a GPT-2 and on its zoo equivalent ----------------------
# (float64; the two models agree to ~1e-15 relative at every hook point, see above. A probe's statistics
# are smooth functions of those activations (fits, logs and bootstrap CIs included), so they agree to
# rounding too; 1e-12 leaves three orders of magnitude for the amplification through fits and logs.)
@pytest.fixture(scope="module")
def gpt2_pair():
    hf = HFModel.from_config(
        gpt2_config(vocab_size=1024, n_positions=512, n_layer=2, n_embd=32, n_head=2), seed=11, dtype="float64"
    )
    return hf, zoo_from_gpt2(hf)


@pytest.mark.parametrize("probe", sorted(PROBE_AGREEMENT))
def test_probe_numbers_agree_between_gpt2_and_its_zoo_equivalent(probe, gpt2_pair):
    hf, zoo = gpt2_pair
    diff = probe_agreement(probe, hf, zoo)
    assert set(diff) == set(PROBE_AGREEMENT[probe][1])
    assert all(v <= 1e-12 for v in diff.values()), diff  # NaN (an all-NaN array) fails too


def test_loading_never_touches_the_network(monkeypatch):
    """Loading the pretrained encoder and its tokenizer, building GPT-2 and running it: no socket opens."""
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    enc = HFModel.from_pretrained(minilm_dir())
    ids = enc.encode("no network at run time")
    assert enc(ids[None]).shape == (1, ids.numel(), 384)
    g = HFModel.from_config(gpt2_config(n_layer=1), seed=0)
    assert g(torch.zeros(1, 4, dtype=torch.long)).shape == (1, 4, 256)


def test_both_families_expose_hook_attn_scores_and_accept_the_older_name(gpt2, minilm):
    for model, n_layers in ((gpt2, 3), (minilm, 6)):
        want = [f"blocks.{layer}.attn.hook_attn_scores" for layer in range(n_layers)]
        assert [n for n in model.hook_names() if n.endswith("scores")] == want
        x = tokens(vocab_size(model), shape=(1, 9))
        _, new = run_with_cache(model, x, names="blocks.*.attn.hook_attn_scores")
        _, old = run_with_cache(model, x, names="blocks.*.attn.hook_scores")
        assert list(old) == list(new) == want
        assert all(torch.equal(old[f"blocks.{layer}.attn.hook_scores"], new[w]) for layer, w in enumerate(want))
