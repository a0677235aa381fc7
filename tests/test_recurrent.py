"""The recurrent-state token mixers (analysis/zoo/recurrent.py, ``attention="recurrent"`` in the zoo).

* the parallel (attention-like, UT-transform) form equals the sequential scan in float64 for every write
  rule x decay x feature map x normalisation (x fixed or learned beta), on the functions and in the model;
* the additive, undecayed, identity-feature mixer is the zoo's ``attention="linear"`` kernel;
* the delta rule with beta = 1 and orthonormal keys overwrites a key exactly, the additive rule adds;
* weight-tied looping applies the same weights T times; hooks; validation;
* the new ModelConfig fields leave every existing config's ``to_dict()`` (a checkpoint key) as it was.
"""

from __future__ import annotations

import itertools
import json

import pytest
import torch

from analysis.zoo.hooks import run_with_cache
from analysis.zoo.model import ModelConfig, TinyTransformer
from analysis.zoo.recurrent import (
    DECAYS,
    FEATURE_MAPS,
    WRITE_RULES,
    momentum_delta_scan,
    parallel_form,
    recurrent_scan,
    unit_rows,
)
from tests.test_config import MODEL_DEFAULTS, MODEL_VARIANTS

F64 = torch.float64
NEW_FIELDS = ("write_rule", "delta_beta", "decay", "feature_map", "n_features", "state_norm", "loops", "loop_unit")


def _combinations():
    for rule, decay, fmap, norm in itertools.product(WRITE_RULES, DECAYS, FEATURE_MAPS, (False, True)):
        if norm and fmap == "identity":
            continue  # refused: q . k may vanish
        for beta in (None, 0.7) if rule == "delta" else (None,):
            yield rule, decay, fmap, norm, beta


COMBOS = list(_combinations())


def _cfg(rule, decay, fmap, norm, beta, **over) -> ModelConfig:
    base = dict(
        attention="recurrent",
        write_rule=rule,
        decay=decay,
        feature_map=fmap,
        state_norm=norm,
        delta_beta=beta,
        n_features=24 if fmap == "favor" else 64,
        d_model=16,
        n_heads=2,
        n_layers=2,
        vocab_size=20,
        dtype="float64",
    )
    return ModelConfig(**{**base, **over})


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-300))


def _random_inputs(B=2, H=3, T=17, dk=5, dv=4, seed=0, positive=False):
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(B, H, T, dk, generator=g, dtype=F64) for _ in range(2))
    v = torch.randn(B, H, T, dv, generator=g, dtype=F64)
    if positive:
        q, k = q.exp(), k.exp()
    beta = torch.rand(B, H, T, generator=g, dtype=F64) * 1.5 + 0.25
    log_alpha = torch.log(torch.rand(B, H, T, generator=g, dtype=F64) * 0.5 + 0.5)
    return q, k, v, beta, log_alpha


# ================================================================================================ the two forms


@pytest.mark.parametrize(
    ("rule", "decayed", "normalize"), list(itertools.product(WRITE_RULES, (False, True), (False, True)))
)
def test_parallel_form_equals_the_scan_on_random_tensors(rule, decayed, normalize):
    q, k, v, beta, log_alpha = _random_inputs(positive=normalize)
    if rule == "delta":
        q, k = unit_rows(q), unit_rows(k)  # the delta rule's keys (a contraction for beta < 2)
    kw = dict(beta=beta if rule == "delta" else None, log_alpha=log_alpha if decayed else None, normalize=normalize)
    z_par, s_par = parallel_form(q, k, v, **kw)
    z_rec, s_rec = recurrent_scan(q, k, v, **kw)
    assert _rel(z_par, z_rec) < 1e-12 and _rel(s_par, s_rec) < 1e-12


def test_the_scan_is_the_defining_recursion_written_out():
    # one head, three tokens, delta rule with decay: the state after each step by hand
    q, k, v, beta, log_alpha = _random_inputs(B=1, H=1, T=3, seed=3)
    k = unit_rows(k)
    a, b = log_alpha.exp()[0, 0], beta[0, 0]
    S = torch.zeros(4, 5, dtype=F64)
    for t in range(3):
        kt, vt = k[0, 0, t], v[0, 0, t]
        S = a[t] * S @ (torch.eye(5, dtype=F64) - b[t] * torch.outer(kt, kt)) + b[t] * torch.outer(vt, kt)
    z, state = recurrent_scan(q, k, v, beta=beta, log_alpha=log_alpha)
    assert torch.allclose(state[0, 0], S, rtol=1e-13, atol=1e-14)
    assert torch.allclose(z[0, 0, -1], S @ q[0, 0, -1], rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize(("rule", "decay", "fmap", "norm", "beta"), COMBOS)
def test_model_parallel_equals_recurrent_for_every_combination(rule, decay, fmap, norm, beta):
    model = TinyTransformer(_cfg(rule, decay, fmap, norm, beta)).eval()
    x = torch.randint(0, 20, (2, 13), generator=torch.Generator().manual_seed(1))
    names = [f"blocks.{i}.attn.hook_{h}" for i in range(2) for h in ("z", "state")]
    with torch.no_grad():
        out_p, cache_p = run_with_cache(model, x, names=names)
        model.recurrent_form = "recurrent"
        out_r, cache_r = run_with_cache(model, x, names=names)
    assert model.recurrent_form == "recurrent"
    assert _rel(out_p, out_r) < 1e-12
    for name in names:
        assert _rel(cache_p[name], cache_r[name]) < 1e-12, name


def test_additive_identity_mixer_is_the_linear_attention_kernel():
    base = dict(d_model=16, n_heads=2, n_layers=2, vocab_size=20, dtype="float64", seed=4)
    x = torch.randint(0, 20, (2, 9), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        linear = TinyTransformer(ModelConfig(attention="linear", **base)).eval()(x)
        recurrent = TinyTransformer(ModelConfig(attention="recurrent", **base)).eval()(x)
    assert _rel(recurrent, linear) < 1e-12


def test_delta_rule_overwrites_an_orthonormal_key_and_the_additive_rule_adds():
    g = torch.Generator().manual_seed(5)
    d, n = 6, 4
    keys = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=F64))[0][:, :n].T  # (n, d) orthonormal
    vals = torch.randn(n + 1, 3, generator=g, dtype=F64)
    k = torch.cat([keys, keys[:1]])[None, None]  # key 0 written again at the end, with a new value
    v = vals[None, None]
    q = keys[:1].expand(n + 1, d)[None, None]  # every row reads key 0
    z_delta, _ = recurrent_scan(q, k, v, beta=torch.ones(1, 1, n + 1, dtype=F64))
    z_add, _ = recurrent_scan(q, k, v)
    assert torch.allclose(z_delta[0, 0, -1], vals[n], atol=1e-14)  # the new value, exactly
    assert torch.allclose(z_add[0, 0, -1], vals[0] + vals[n], atol=1e-14)  # old + new


def test_gradients_flow_in_float32_through_the_parallel_form():
    cfg = _cfg("delta", "gated", "elu1", True, None, dtype="float32")
    model = TinyTransformer(cfg)
    x = torch.randint(0, 20, (2, 12), generator=torch.Generator().manual_seed(0))
    model(x).logsumexp(-1).mean().backward()
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert model.blocks[0].attn.W_beta.weight.grad.abs().sum() > 0
    assert model.blocks[0].attn.gate_bias.grad.abs().sum() > 0


# ================================================================================================ hooks, looping


def test_hook_points_and_their_shapes():
    cfg = _cfg("delta", "gated", "favor", False, None)
    model = TinyTransformer(cfg).eval()
    for h in ("hook_q", "hook_k", "hook_v", "hook_beta", "hook_log_alpha", "hook_state", "hook_z"):
        assert f"blocks.1.attn.{h}" in model.hook_names()
    assert "blocks.0.hook_attn_out" in model.hook_names()
    x = torch.randint(0, 20, (2, 7), generator=torch.Generator().manual_seed(0))
    _, cache = run_with_cache(model, x, names=lambda n: n.startswith("blocks.0."))
    assert cache["blocks.0.attn.hook_q"].shape == (2, 7, 2, 24)  # m = 24 random features
    assert cache["blocks.0.attn.hook_v"].shape == (2, 7, 2, 8)
    assert cache["blocks.0.attn.hook_beta"].shape == (2, 7, 2)
    assert (cache["blocks.0.attn.hook_log_alpha"] < 0).all()
    assert cache["blocks.0.attn.hook_state"].shape == (2, 2, 8, 24)
    norms = cache["blocks.0.attn.hook_k"].norm(dim=-1)  # the delta rule's unit keys
    assert torch.allclose(norms, torch.ones_like(norms))


@pytest.mark.parametrize("unit", ["stack", "block"])
@pytest.mark.parametrize("attention", ["softmax", "recurrent"])
def test_looping_applies_the_same_weights_again(unit, attention):
    base = dict(attention=attention, d_model=16, n_heads=2, n_layers=2, vocab_size=20, dtype="float64")
    plain = TinyTransformer(ModelConfig(**base)).eval()
    looped = TinyTransformer(ModelConfig(**base, loops=3, loop_unit=unit)).eval()
    assert plain.state_dict().keys() == looped.state_dict().keys()
    assert all(torch.equal(plain.state_dict()[k], looped.state_dict()[k]) for k in plain.state_dict())
    x = torch.randint(0, 20, (2, 6), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        h = plain.embed_inputs(x)
        order = (
            [b for _ in range(3) for b in plain.blocks]
            if unit == "stack"
            else [b for b in plain.blocks for _ in range(3)]
        )
        for block in order:
            h = block(h)
        want = plain.head(plain.ln_final(h))
        assert _rel(looped(x), want) < 1e-14
        assert _rel(plain(x), want) > 1e-3  # looping changes the function


# ================================================================================================ validation


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"write_rule": "delta"}, r"^write_rule is only used with attention 'recurrent'"),
        ({"decay": "gated"}, r"^decay is only used with attention 'recurrent'"),
        ({"attention": "recurrent", "causal": False}, r"^causal must be true for attention 'recurrent'"),
        ({"attention": "recurrent", "state_norm": True}, r"^state_norm needs a positive feature_map"),
        ({"attention": "recurrent", "delta_beta": 0.5}, r"^delta_beta is only used with write_rule 'delta'"),
        ({"attention": "recurrent", "write_rule": "delta", "delta_beta": 0.0}, r"^delta_beta must be"),
        ({"attention": "recurrent", "n_features": 8}, r"^n_features is only used with feature_map 'favor'"),
        ({"loop_unit": "block"}, r"^loop_unit is only used with loops > 1"),
        ({"loops": 0}, r"^loops must be"),
        ({"attention": "recurrent", "feature_map": "relu"}, r"^feature_map must be one of"),
    ],
)
def test_bad_recurrent_settings_are_refused_naming_the_field(over, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig(**over)


def test_the_recurrent_mixer_refuses_an_attention_bias():
    model = TinyTransformer(_cfg("additive", "none", "identity", False, None))
    with pytest.raises(ValueError, match="takes no attention bias"):
        model(torch.zeros(1, 4, dtype=torch.long), attn_bias=torch.zeros(4, 4, dtype=F64))


# ================================================================================================ cache keys


def test_new_fields_leave_every_existing_to_dict_unchanged():
    assert json.dumps(ModelConfig().to_dict()) == json.dumps(MODEL_DEFAULTS)  # exactly the old keys and values
    for over in MODEL_VARIANTS:
        d = ModelConfig(**over).to_dict()
        assert not set(NEW_FIELDS) & set(d), over
        assert list(d) == list(MODEL_DEFAULTS)


def test_new_fields_appear_only_when_set_and_round_trip():
    cfg = _cfg("delta", "gated", "favor", True, 0.5, loops=2)
    d = cfg.to_dict()
    assert {
        "attention",
        "write_rule",
        "delta_beta",
        "decay",
        "feature_map",
        "n_features",
        "state_norm",
        "loops",
    } <= set(d)
    assert "loop_unit" not in d  # still its default
    assert ModelConfig.from_dict(json.loads(json.dumps(d))) == cfg
    old = ModelConfig.from_dict(dict(MODEL_DEFAULTS))  # a stored dict without the new keys
    assert old == ModelConfig() and old.write_rule == "additive" and old.loops == 1


def test_momentum_delta_scan_is_the_delta_rule_at_zero_momentum_and_the_heavy_ball_written_out():
    g = torch.Generator().manual_seed(5)
    k = unit_rows(torch.randn(3, 6, 4, generator=g, dtype=torch.float64))
    v = torch.randn(3, 6, 5, generator=g, dtype=torch.float64)
    states = momentum_delta_scan(k, v, beta=0.7, mu=0.0)
    beta = torch.full((3, 1, 6), 0.7, dtype=torch.float64)
    _, final = recurrent_scan(k[:, None], k[:, None], v[:, None], beta=beta)
    torch.testing.assert_close(states[:, -1], final[:, 0], rtol=0, atol=1e-14)
    states = momentum_delta_scan(k, v, beta=0.7, mu=0.6)
    S, M = torch.zeros(3, 5, 4, dtype=torch.float64), torch.zeros(3, 5, 4, dtype=torch.float64)
    assert torch.equal(states[:, 0], S)
    for t in range(6):  # M_t = mu M_(t-1) + beta (v_t - S_(t-1) k_t) k_t^T, S_t = S_(t-1) + M_t
        err = v[:, t] - torch.einsum("bij,bj->bi", S, k[:, t])
        M = 0.6 * M + 0.7 * torch.einsum("bi,bj->bij", err, k[:, t])
        S = S + M
        torch.testing.assert_close(states[:, t + 1], S, rtol=0, atol=1e-14)
