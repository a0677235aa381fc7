"""Hook points: golden names, caching only what is asked, interventions, clean-up after exceptions."""

from __future__ import annotations

import pytest
import torch

from analysis.hooks import active_hook_names, hooks, resid_names, resolve_names, run_with_cache
from analysis.model import ModelConfig, TinyTransformer
from analysis.protocol import ProbeModel, describe

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
    import analysis.hooks as H
    from analysis.model import ModelConfig, TinyTransformer

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
