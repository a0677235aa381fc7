"""Hook points: golden names, caching only what is asked, interventions, clean-up after exceptions."""

from __future__ import annotations

import pytest
import torch

from analysis.zoo.hooks import active_hook_names, hooks, resid_names, resolve_names, run_with_cache
from analysis.zoo.model import ModelConfig, TinyTransformer
from analysis.zoo.protocol import ProbeModel, describe

ATTN = ["attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_attn_scores", "attn.hook_pattern", "attn.hook_z"]


def _block(l, placement, mlp=True):
    ln = lambda n: [f"blocks.{l}.{n}.hook_in", f"blocks.{l}.{n}.hook_normalized"]
    names = [f"blocks.{l}.hook_resid_pre"]
    names += ln("ln1") if placement != "none" else []
    names += [f"blocks.{l}.{a}" for a in ATTN]
    names += ln("ln1_out") if placement == "peri" else []
    names += [f"blocks.{l}.hook_attn_out", f"blocks.{l}.hook_resid_mid"]
    if mlp:
        names += ln("ln2") if placement != "none" else []
        names += [f"blocks.{l}.mlp.hook_pre", f"blocks.{l}.mlp.hook_post"]
        names += ln("ln2_out") if placement == "peri" else []
        names += [f"blocks.{l}.hook_mlp_out"]
    return names + [f"blocks.{l}.hook_resid_post"]


GOLDEN = {
    # pre-LN, learned positions: the TransformerLens vocabulary plus the inputs of every norm
    "pre": ["hook_embed", "hook_pos_embed"]
    + _block(0, "pre")
    + _block(1, "pre")
    + ["ln_final.hook_in", "ln_final.hook_normalized"],
    "post": ["hook_embed", "hook_pos_embed"] + _block(0, "post") + _block(1, "post"),
    "peri": ["hook_embed", "hook_pos_embed"]
    + _block(0, "peri")
    + _block(1, "peri")
    + ["ln_final.hook_in", "ln_final.hook_normalized"],
    "none": ["hook_embed", "hook_pos_embed"] + _block(0, "none") + _block(1, "none"),
}


@pytest.mark.parametrize("placement", list(GOLDEN))
def test_golden_hook_names(placement):
    model = TinyTransformer(ModelConfig(norm=placement, n_layers=2, pos="learned"))
    assert model.hook_names() == GOLDEN[placement]


def test_golden_names_mix_attention_only_qk_norm():
    model = TinyTransformer(ModelConfig(norm="mix", n_layers=2, mix_post_layers=1, d_mlp=0, qk_norm=True))
    qk = lambda l: [f"blocks.{l}.attn.{n}_norm.{h}" for n in "qk" for h in ("hook_in", "hook_normalized")]
    expected = ["hook_embed"]
    for l in range(2):
        b = _block(l, "pre", mlp=False)
        i = b.index(f"blocks.{l}.attn.hook_q")
        expected += b[:i] + qk(l) + b[i:]
    expected += ["ln_final.hook_in", "ln_final.hook_normalized"]
    assert model.hook_names() == expected


def test_every_hook_point_fires_exactly_once_per_forward():
    model = TinyTransformer(ModelConfig(norm="peri", n_layers=2, pos="learned", qk_norm=True))
    seen: list[str] = []
    with hooks(model, [("*", lambda x, name: seen.append(name))]):
        model(torch.zeros(1, 5, dtype=torch.long))
    assert seen == model.hook_names()


def test_cache_holds_only_what_is_asked():
    model = TinyTransformer(ModelConfig(n_layers=3))
    x = torch.randint(0, 64, (2, 8), generator=torch.Generator().manual_seed(0))
    out, cache = run_with_cache(model, x, names=["blocks.1.hook_resid_post", "blocks.*.attn.hook_pattern"])
    assert list(cache) == [
        "blocks.0.attn.hook_pattern",
        "blocks.1.attn.hook_pattern",
        "blocks.1.hook_resid_post",
        "blocks.2.attn.hook_pattern",
    ]
    assert cache["blocks.1.attn.hook_pattern"].shape == (2, 4, 8, 8)
    assert not cache["blocks.1.hook_resid_post"].requires_grad
    assert torch.equal(out, model(x))
    assert active_hook_names(model) == []


def test_unknown_names_raise_with_the_available_list():
    model = TinyTransformer(ModelConfig(n_layers=1))
    with pytest.raises(ValueError, match=r"names: no hook point matches 'blocks.7.hook_resid_post'"):
        run_with_cache(model, torch.zeros(1, 2, dtype=torch.long), names=["blocks.7.hook_resid_post"])
    assert resolve_names(model, lambda n: n.endswith("resid_pre")) == ["blocks.0.hook_resid_pre"]


def test_intervention_replaces_the_activation():
    model = TinyTransformer(ModelConfig(n_layers=2, dtype="float64"))
    x = torch.randint(0, 64, (1, 6), generator=torch.Generator().manual_seed(0))
    # zero-ablate the whole stream after block 0's attention: block 1 then sees only what it writes itself
    zero = lambda t, name: torch.zeros_like(t)
    out, cache = run_with_cache(
        model, x, names=["blocks.0.hook_resid_mid"], fwd_hooks=[("blocks.0.hook_resid_mid", zero)]
    )
    assert torch.count_nonzero(cache["blocks.0.hook_resid_mid"]) == 0
    assert not torch.allclose(out, model(x))
    # an identity intervention changes nothing
    out2, _ = run_with_cache(model, x, names=[], fwd_hooks=[("blocks.*.hook_resid_post", lambda t, n: t.clone())])
    assert torch.equal(out2, model(x))
    with pytest.raises(ValueError, match="returned shape"):
        run_with_cache(model, x, names=[], fwd_hooks=[("hook_embed", lambda t, n: t[:, :1])])


def test_hooks_are_removed_when_the_forward_raises():
    model = TinyTransformer(ModelConfig(n_layers=2))

    def boom(t, name):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        run_with_cache(
            model,
            torch.zeros(1, 3, dtype=torch.long),
            names="blocks.*.hook_resid_pre",
            fwd_hooks=[("blocks.1.hook_resid_mid", boom)],
        )
    assert active_hook_names(model) == []


def test_gradients_through_the_cache():
    model = TinyTransformer(ModelConfig(n_layers=2, dtype="float64"))
    x = torch.randint(0, 64, (1, 5), generator=torch.Generator().manual_seed(0))
    out, cache = run_with_cache(model, x, names="hook_embed", detach=False)
    (g,) = torch.autograd.grad(out[0, -1].sum(), cache["hook_embed"])
    assert g.shape == (1, 5, 64) and g[0, 0].abs().sum() > 0


def test_model_satisfies_the_probe_protocol():
    model = TinyTransformer(ModelConfig(n_layers=2, causal=False, input="vectors", d_in=3, output="linear", d_out=1))
    assert isinstance(model, ProbeModel)
    assert describe(model) == {"n_layers": 2, "causal": False, "input_kind": "vectors"}
    with pytest.raises(ValueError, match="ProbeModel"):
        describe(torch.nn.Linear(2, 2))


# ---- TransformerLens names: hook_attn_scores, and the older spelling hook_scores -------------------
def test_attention_scores_have_the_transformerlens_name():
    names = TinyTransformer(ModelConfig(n_layers=2)).hook_names()
    assert [n for n in names if n.endswith("scores")] == [
        "blocks.0.attn.hook_attn_scores",
        "blocks.1.attn.hook_attn_scores",
    ]


@pytest.mark.parametrize("query_block", [None, 3])  # whole matrices, and blocks of query rows reassembled
def test_the_older_name_hook_scores_is_accepted_everywhere(query_block):
    model = TinyTransformer(ModelConfig(n_layers=2, dtype="float64")).eval()
    model.query_block = query_block
    x = torch.randint(0, 64, (2, 7), generator=torch.Generator().manual_seed(0))
    _, new = run_with_cache(model, x, names="blocks.*.attn.hook_attn_scores")
    for names in (
        "blocks.*.attn.hook_scores",
        ["blocks.0.attn.hook_scores", "blocks.1.attn.hook_scores"],
        "*hook_scores",
        lambda n: n.endswith(".attn.hook_scores"),
    ):
        _, old = run_with_cache(model, x, names=names)
        assert list(old) == list(new) == ["blocks.0.attn.hook_attn_scores", "blocks.1.attn.hook_attn_scores"]
        for layer in range(2):
            canon, alias = f"blocks.{layer}.attn.hook_attn_scores", f"blocks.{layer}.attn.hook_scores"
            assert canon in old and alias in old and old.get(alias) is old[canon]
            assert torch.equal(old[alias], new[canon])
            assert torch.isinf(old[alias]).any()  # causal: masked logits are -inf, also after reassembly
    with pytest.raises(KeyError):
        new["blocks.0.attn.hook_nope"]
    assert new.get("blocks.0.attn.hook_nope") is None and "blocks.0.attn.hook_nope" not in new
    seen = []
    with hooks(model, [("blocks.1.attn.hook_scores", lambda t, name: seen.append(name))]):
        model(x)
    assert set(seen) == {"blocks.1.attn.hook_attn_scores"}  # a hook function sees the canonical name
    with pytest.raises(ValueError, match="no hook point matches"):
        resolve_names(model, "blocks.2.attn.hook_scores")


# ---- residual-stream names --------------------------------------------------------------------------
def test_resid_names_are_the_models_residual_hooks():
    model = TinyTransformer(ModelConfig(n_layers=3))
    have = model.hook_names()
    for stage in ("pre", "mid", "post"):
        assert resid_names(3, stage) == [n for n in have if n.endswith(f".hook_resid_{stage}")]
    assert resid_names(3) == resid_names(3, "post")
    assert resid_names(3, "depth") == [
        "blocks.0.hook_resid_pre",
        "blocks.0.hook_resid_post",
        "blocks.1.hook_resid_post",
        "blocks.2.hook_resid_post",
    ]
    assert resid_names(0, "depth") == [] == resid_names(0)
    for bad in (-1, 1.0, True, "2"):
        with pytest.raises(ValueError, match="n_layers"):
            resid_names(bad)
    with pytest.raises(ValueError, match="stage"):
        resid_names(2, "middle")


def test_exact_names_attach_without_pattern_matching(monkeypatch):
    """run_with_cache(names=None) attaches one function per point; exact names skip resolve_names (which
    matches every pattern against every point: quadratic in the number of points)."""
    import analysis.zoo.hooks as H
    from analysis.zoo.model import ModelConfig, TinyTransformer

    model = TinyTransformer(ModelConfig(n_layers=2, d_model=16, n_heads=2, vocab_size=32))
    calls = []
    real = H.resolve_names
    monkeypatch.setattr(H, "resolve_names", lambda m, n: calls.append(n) or real(m, n))
    x = torch.randint(0, 32, (1, 8))
    _, cache = H.run_with_cache(model, x, names=None)
    assert calls == [None]  # once, for the names argument itself
    assert set(cache) == set(model.hook_names())
    with H.hooks(model, [("blocks.*.hook_resid_post", lambda t, n: None)]):
        assert len(H.active_hook_names(model)) == 2
    assert calls[-1] == "blocks.*.hook_resid_post"


# ---- TransformerLens conveniences on the cache: short keys, stack, accumulated_resid, keys_per_row -------
def _tl_cache(names=None, **fields):
    cfg = dict(n_layers=3, d_model=16, n_heads=2, vocab_size=32, dtype="float64", pos="learned", max_len=16)
    model = TinyTransformer(ModelConfig(**{**cfg, **fields})).eval()
    x = torch.randint(0, 32, (2, 7), generator=torch.Generator().manual_seed(1))
    out, cache = run_with_cache(model, x, names=names)
    return model, x, out, cache


def test_get_act_name_matches_transformerlens_examples():
    from analysis.zoo.hooks import get_act_name

    assert get_act_name("k", 6, "a") == "blocks.6.attn.hook_k"
    assert get_act_name("pre", 2) == "blocks.2.mlp.hook_pre"
    assert get_act_name("embed") == "hook_embed"
    assert get_act_name("normalized", 27, "ln2") == "blocks.27.ln2.hook_normalized"
    assert get_act_name("k6") == "blocks.6.attn.hook_k"
    assert get_act_name("scale4ln1") == "blocks.4.ln1.hook_scale"
    assert get_act_name("pre5") == "blocks.5.mlp.hook_pre"
    assert get_act_name("attn", 3) == "blocks.3.attn.hook_pattern"  # TransformerLens's alias
    assert get_act_name("attn_logits", 0) == "blocks.0.attn.hook_attn_scores"
    assert get_act_name("scores", 1) == "blocks.1.attn.hook_attn_scores"  # our older spelling
    assert get_act_name("resid_post", 2) == "blocks.2.hook_resid_post"
    assert get_act_name("blocks.0.hook_resid_pre") == "blocks.0.hook_resid_pre"  # full names pass through


TL_KEYS = {
    ("pattern", 0): "blocks.0.attn.hook_pattern",
    ("attn", 1): "blocks.1.attn.hook_pattern",
    ("attn_scores", 1): "blocks.1.attn.hook_attn_scores",
    ("scores", 1): "blocks.1.attn.hook_attn_scores",
    ("resid_post", 2): "blocks.2.hook_resid_post",
    ("resid_pre", 0): "blocks.0.hook_resid_pre",
    ("resid_mid", 1): "blocks.1.hook_resid_mid",
    ("q", 0): "blocks.0.attn.hook_q",
    ("k", 1, "attn"): "blocks.1.attn.hook_k",
    ("v", 2, "a"): "blocks.2.attn.hook_v",
    ("z", 0): "blocks.0.attn.hook_z",
    ("attn_out", 1): "blocks.1.hook_attn_out",
    ("mlp_out", 0): "blocks.0.hook_mlp_out",
    ("pre", 2): "blocks.2.mlp.hook_pre",
    ("post", 0, "mlp"): "blocks.0.mlp.hook_post",
    ("normalized", 1, "ln2"): "blocks.1.ln2.hook_normalized",
    ("in", 0, "ln1"): "blocks.0.ln1.hook_in",
    ("normalized",): "ln_final.hook_normalized",
    ("resid_post", -1): "blocks.2.hook_resid_post",  # negative layers count from the end
    ("pattern", -3): "blocks.0.attn.hook_pattern",
    ("scores", -2): "blocks.1.attn.hook_attn_scores",
    "embed": "hook_embed",
    "pos_embed": "hook_pos_embed",
    "k1": "blocks.1.attn.hook_k",
    "pattern2": "blocks.2.attn.hook_pattern",
    "normalized": "ln_final.hook_normalized",
    "blocks.0.attn.hook_scores": "blocks.0.attn.hook_attn_scores",
}


@pytest.mark.parametrize("key", list(TL_KEYS), ids=str)
def test_transformerlens_keys_give_the_full_name_entry(key):
    *_, cache = _tl_cache()
    full = TL_KEYS[key]
    assert full in dict.keys(cache)
    assert cache[key] is dict.__getitem__(cache, full)
    assert torch.equal(cache[key], dict.__getitem__(cache, full))
    assert key in cache and cache.get(key) is cache[full]


def test_negative_layers_need_and_use_the_model_depth():
    *_, cache = _tl_cache()
    assert cache.n_layers == 3
    assert not torch.equal(cache["resid_post", -1], cache["resid_post", 1])  # -1 is layer 2, not layer 1
    with pytest.raises(KeyError, match=r"'blocks\.-1\.attn\.hook_pattern' \(for key \('pattern', -4\)\)"):
        cache["pattern", -4]
    with pytest.raises(KeyError, match=r"'blocks\.3\.attn\.hook_pattern' .* is not a hook point of the model"):
        cache["pattern", 3]


def test_a_key_not_cached_names_the_full_hook_and_the_names_argument():
    names = ["blocks.*.attn.hook_pattern", "blocks.1.hook_resid_post"]
    *_, cache = _tl_cache(names=names)
    with pytest.raises(KeyError) as err:
        cache["attn_scores", 0]
    msg = str(err.value)
    assert "'blocks.0.attn.hook_attn_scores' (for key ('attn_scores', 0)) is not cached" in msg
    assert f"run_with_cache was called with names={names!r}, not caching it" in msg
    assert "the cache holds blocks.{0,1,2}.attn.hook_pattern, blocks.1.hook_resid_post" in msg  # short
    with pytest.raises(KeyError, match=r"'blocks\.0\.hook_resid_post' \(for key \('resid_post', 0\)\) is not cached"):
        cache["resid_post", 0]
    with pytest.raises(KeyError, match=r"'blocks\.0\.hook_state' .* not a hook point of the model"):
        cache["state", 0]  # a recurrent mixer's hook: blocks.0.attn.hook_state, ("state", 0, "attn")
    assert ("attn_scores", 0) not in cache and cache.get(("attn_scores", 0)) is None
    assert ("pattern", 1) in cache
    with pytest.raises(TypeError, match="a cache key is a hook name or a"):
        cache[0]


def test_stack_is_layer_ordered_and_stops_before_layer():
    *_, cache = _tl_cache()
    for short, full in (("pattern", "attn.hook_pattern"), ("resid_post", "hook_resid_post"), ("q", "attn.hook_q")):
        stacked = cache.stack(short)
        assert stacked.shape == (3, *cache[f"blocks.0.{full}"].shape)
        for layer in range(3):
            assert torch.equal(stacked[layer], cache[f"blocks.{layer}.{full}"])
        assert torch.equal(cache.stack_activation(short, layer=2), stacked[:2])
        assert torch.equal(cache.stack(short, layer=None), stacked)
    assert torch.equal(cache.stack("normalized", sublayer_type="ln1")[2], cache["blocks.2.ln1.hook_normalized"])
    with pytest.raises(ValueError, match="layer must be None, -1 or an integer in 0..3"):
        cache.stack("pattern", layer=4)


def test_stack_of_an_uncached_name_raises_naming_it():
    *_, cache = _tl_cache(names=["blocks.1.attn.hook_pattern", "hook_embed"])
    with pytest.raises(ValueError, match=r"no layer l < 3 of this cache has 'attn_scores'"):
        cache.stack("attn_scores")
    with pytest.raises(KeyError, match=r"'blocks\.0\.attn\.hook_pattern' \(for key \('pattern', 0\)\) is not cached"):
        cache.stack("pattern")  # only some layers cached: the first missing one is named
    *_, cache = _tl_cache(d_mlp=0)  # attention-only: no layer has an MLP
    with pytest.raises(ValueError, match="'mlp_out'"):
        cache.stack("mlp_out")


def test_accumulated_resid_is_resid_pre_of_each_layer_then_the_last_resid_post():
    model, x, out, cache = _tl_cache()
    stream, labels = cache.accumulated_resid(return_labels=True)
    expected = [cache[f"blocks.{l}.hook_resid_pre"] for l in range(3)] + [cache["blocks.2.hook_resid_post"]]
    assert torch.equal(stream, torch.stack(expected))
    assert labels == ["0_pre", "1_pre", "2_pre", "final_post"]
    assert torch.equal(cache.accumulated_resid(layer=-1), stream) and torch.equal(cache.accumulated_resid(3), stream)
    assert torch.equal(model.head(model.ln_final(stream[-1])), out)  # the final entry is what the head reads
    part, labels = cache.accumulated_resid(layer=1, incl_mid=True, mlp_input=True, return_labels=True)
    assert labels == ["0_pre", "0_mid", "1_pre", "1_mid"]
    for entry, label in zip(part, labels, strict=True):
        l, stage = label.split("_")
        assert torch.equal(entry, cache[f"blocks.{l}.hook_resid_{stage}"])
    assert cache.accumulated_resid(layer=0).shape == (1, *cache["hook_embed"].shape)
    with pytest.raises(TypeError):
        cache.accumulated_resid(apply_ln=True)  # not offered: the cache holds no model (see the docstring)
    with pytest.raises(ValueError, match="layer must be"):
        cache.accumulated_resid(layer=-2)


def _allowed_keys(mask: torch.Tensor) -> torch.Tensor:
    """Per query row, the number of keys a boolean (..., T, K) mask lets it see."""
    return mask.sum(-1)


@pytest.mark.parametrize("query_block", [None, 3])
def test_keys_per_row_counts_the_causal_mask(query_block):
    model = TinyTransformer(ModelConfig(n_layers=2, d_model=16, n_heads=2, vocab_size=32, dtype="float64"))
    model.query_block = query_block  # row blocks are reassembled with -inf beyond each block's keys
    x = torch.randint(0, 32, (2, 7), generator=torch.Generator().manual_seed(0))
    _, cache = run_with_cache(model, x, names="blocks.*.attn.hook_attn_scores")
    causal = torch.ones(7, 7, dtype=torch.bool).tril()
    for layer in range(2):
        counts = cache.keys_per_row(layer)
        assert counts.shape == (2, 2, 7) and counts.dtype == torch.int64
        assert torch.equal(counts, _allowed_keys(causal).expand(2, 2, 7))
        assert counts[0, 0].tolist() == [1, 2, 3, 4, 5, 6, 7]  # row i has i + 1 keys


def test_keys_per_row_follows_the_mask_applied_not_an_assumed_causal_one():
    from analysis.zoo.hooks import keys_per_row

    T = 9
    cfg = dict(n_layers=1, d_model=16, n_heads=2, vocab_size=32, dtype="float64")
    x = torch.randint(0, 32, (2, T), generator=torch.Generator().manual_seed(0))
    # bidirectional: every row sees every key
    _, cache = run_with_cache(TinyTransformer(ModelConfig(causal=False, **cfg)), x, names="*attn_scores")
    assert torch.equal(cache.keys_per_row(0), torch.full((2, 2, T), T))
    # local attention: a causal model with an -inf bias outside a window, a different width per batch element
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    windows = torch.stack([(i - j < w) for w in (3, 5)])[:, None]  # (B, 1, T, T), True inside the window
    bias = torch.zeros(windows.shape, dtype=torch.float64).masked_fill(~windows, float("-inf"))
    model = TinyTransformer(ModelConfig(**cfg))
    _, cache = run_with_cache(model, x, names="*attn_scores", attn_bias=bias)
    allowed = windows & (j <= i)  # what the window and the causal mask together let each row see
    assert torch.equal(cache.keys_per_row(0), _allowed_keys(allowed).expand(2, 2, T))
    assert cache.keys_per_row(0)[1, 0].tolist() == [1, 2, 3, 4, 5, 5, 5, 5, 5]
    # sparsemax gives exact zeros to keys a row sees: the count comes from the scores, not from the pattern
    sparse = TinyTransformer(ModelConfig(attention="sparsemax", logit_scale=4.0, **cfg))
    _, cache = run_with_cache(sparse, x, names=["*attn_scores", "*hook_pattern"])
    assert ((cache["pattern", 0] != 0).sum(-1) < cache.keys_per_row(0)).any()
    assert torch.equal(
        keys_per_row(cache["scores", 0]), _allowed_keys(torch.ones(T, T, dtype=torch.bool).tril()).expand(2, 2, T)
    )
    with pytest.raises(KeyError, match="hook_attn_scores.*not cached"):
        run_with_cache(model, x, names="*hook_pattern")[1].keys_per_row(0)
