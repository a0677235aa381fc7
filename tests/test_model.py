"""The model zoo: every knob's shape/finiteness, exact identities in float64, determinism, validation."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from analysis.zoo.hooks import hooks, run_with_cache
from analysis.zoo.model import (
    ATTENTION_KERNELS,
    DTYPES,
    NORM_PLACEMENTS,
    POSITIONAL,
    ModelConfig,
    PrefixKeyBias,
    TinyTransformer,
)

F64 = dict(dtype="float64")
# float64 round-off of a forward pass through a few layers of width <= 64: the exact identities below
# hold to a small multiple of eps * (number of accumulated terms), far below 1e-10.
EXACT = dict(rtol=0, atol=1e-10)


def tokens(B=2, T=12, V=64, seed=0):
    return torch.randint(0, V, (B, T), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize(
    "norm,attention,pos",
    list(itertools.product(NORM_PLACEMENTS, ATTENTION_KERNELS, POSITIONAL)),
)
def test_every_knob_combination_runs_and_is_causal(norm, attention, pos):
    cfg = ModelConfig(norm=norm, attention=attention, pos=pos, n_layers=2, d_model=32, **F64)
    model = TinyTransformer(cfg)
    x = tokens(T=10)
    y = model(x)
    assert y.shape == (2, 10, 64) and torch.isfinite(y).all()
    # causality: changing tokens after position t leaves outputs at positions <= t unchanged
    t = 4
    x2 = x.clone()
    x2[:, t + 1 :] = (x2[:, t + 1 :] + 7) % 64
    y2 = model(x2)
    torch.testing.assert_close(y[:, : t + 1], y2[:, : t + 1], **EXACT)
    assert not torch.allclose(y[:, t + 1 :], y2[:, t + 1 :])


def test_full_mask_is_not_causal():
    model = TinyTransformer(ModelConfig(causal=False, **F64))
    x = tokens()
    x2 = x.clone()
    x2[:, -1] = (x2[:, -1] + 1) % 64
    assert not torch.allclose(model(x)[:, 0], model(x2)[:, 0])


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize(
    "knobs",
    [
        dict(),
        dict(norm="post", deepnorm=True),
        dict(norm="peri", norm_type="rmsnorm", qk_norm=True),
        dict(norm="mix", n_layers=4, mix_post_layers=2, ln_scaling=True),
        dict(norm="none", branch_scale=0.5, attn_residual=False),
        dict(attention="ssmax", pos="rope"),
        dict(attention="sigmoid", sigmoid_bias=-2.0, pos="learned"),
        dict(attention="linear", d_mlp=0, bias=True),
        dict(activation="relu", d_head=8, init="gpt2"),
        dict(input="vectors", d_in=5, output="linear", d_out=3),
        dict(input="embedded", output="none", d_mlp=0, norm="none", attention="linear"),
    ],
)
def test_shapes_and_finiteness_in_every_dtype(dtype, knobs):
    cfg = ModelConfig(d_model=32, dtype=dtype, **knobs)
    model = TinyTransformer(cfg)
    if cfg.input == "tokens":
        x = tokens(T=9)
    else:
        width = cfg.d_in if cfg.input == "vectors" else cfg.d_model
        x = torch.randn(2, 9, width, generator=torch.Generator().manual_seed(1))
    out, cache = run_with_cache(model, x, names=None)
    width = {"lm": cfg.vocab_size, "linear": cfg.d_out, "none": cfg.d_model}[cfg.output]
    assert out.shape == (2, 9, width)
    assert out.dtype == DTYPES[dtype]
    assert torch.isfinite(out).all()
    for name, t in cache.items():
        if name.endswith("hook_attn_scores"):
            t = t.masked_fill(torch.isinf(t), 0)  # masked logits are -inf by definition
        assert torch.isfinite(t).all(), name
        assert t.dtype == DTYPES[dtype], name


def test_uniform_attention_is_the_causal_running_mean():
    cfg = ModelConfig(attention="uniform", n_layers=1, d_model=16, n_heads=2, **F64)
    model = TinyTransformer(cfg)
    _, cache = run_with_cache(model, tokens(T=15), names=["blocks.0.attn.hook_v", "blocks.0.attn.hook_z"])
    v, z = cache["blocks.0.attn.hook_v"], cache["blocks.0.attn.hook_z"]  # (B, T, H, dh)
    counts = torch.arange(1, 16, dtype=torch.float64)[None, :, None, None]
    torch.testing.assert_close(z, v.cumsum(dim=1) / counts, **EXACT)


def test_pre_layernorm_equals_pre_rmsnorm_once_the_residual_mean_is_removed():
    """Pre-LN == Pre-RMSNorm (seed 000#7): centre every write into the residual stream (embeddings,
    positions, the output projections of attention and MLP) so the stream has zero mean over features;
    LayerNorm then equals RMSNorm, and the LayerNorm model's own output is unchanged because every
    norm already removed that mean."""
    kw = dict(norm="pre", pos="learned", n_layers=3, d_model=32, bias=False, **F64)
    ln_model = TinyTransformer(ModelConfig(norm_type="layernorm", **kw))
    x = tokens(T=11)
    before = ln_model(x)
    with torch.no_grad():
        ln_model.embed.weight -= ln_model.embed.weight.mean(dim=1, keepdim=True)  # (V, d): centre rows
        ln_model.pos_embed.weight -= ln_model.pos_embed.weight.mean(dim=1, keepdim=True)
        for block in ln_model.blocks:
            for lin in (block.attn.W_o, block.mlp.W_out):  # weight (d, in): centre over the output axis
                lin.weight -= lin.weight.mean(dim=0, keepdim=True)
    torch.testing.assert_close(ln_model(x), before, **EXACT)

    rms_model = TinyTransformer(ModelConfig(norm_type="rmsnorm", **kw))
    rms_model.load_state_dict(ln_model.state_dict())
    _, cache = run_with_cache(rms_model, x, names="blocks.*.hook_resid_post")
    for t in cache.values():
        assert t.mean(dim=-1).abs().max() < 1e-12
    torch.testing.assert_close(rms_model(x), before, **EXACT)
    # without centring they differ: the identity is not vacuous
    plain_rms = TinyTransformer(ModelConfig(norm_type="rmsnorm", **kw))
    assert not torch.allclose(plain_rms(x), TinyTransformer(ModelConfig(norm_type="layernorm", **kw))(x))


def test_fused_and_materialised_softmax_paths_agree():
    cfg = ModelConfig(n_layers=2, pos="rope", **F64)
    model = TinyTransformer(cfg)
    x = tokens()
    assert not model.allow_fused  # off by default: a cached run equals a plain forward pass bit for bit
    materialised = model(x)
    model.allow_fused = True
    torch.testing.assert_close(model(x), materialised, **EXACT)


def _pattern_and_scores(cfg, x):
    model = TinyTransformer(cfg)
    _, cache = run_with_cache(
        model,
        x,
        names=[
            "blocks.0.attn.hook_q",
            "blocks.0.attn.hook_k",
            "blocks.0.attn.hook_attn_scores",
            "blocks.0.attn.hook_pattern",
        ],
    )
    q = cache["blocks.0.attn.hook_q"].transpose(1, 2)  # (B, H, T, dh)
    k = cache["blocks.0.attn.hook_k"].transpose(1, 2)
    return q, k, cache["blocks.0.attn.hook_attn_scores"], cache["blocks.0.attn.hook_pattern"]


def test_attention_kernels_match_their_definitions():
    x = tokens(T=8)
    T = 8
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    n = torch.arange(1, T + 1, dtype=torch.float64)[:, None]
    base = dict(n_layers=1, d_model=16, n_heads=2, logit_scale=0.7, **F64)

    q, k, scores, pattern = _pattern_and_scores(ModelConfig(attention="softmax", **base), x)
    logits = 0.7 * q @ k.transpose(-1, -2)
    torch.testing.assert_close(scores[..., causal], logits[..., causal], **EXACT)
    assert torch.isinf(scores[..., ~causal]).all()
    torch.testing.assert_close(pattern.sum(-1), torch.ones_like(pattern.sum(-1)), **EXACT)

    q, k, scores, pattern = _pattern_and_scores(ModelConfig(attention="ssmax", ssmax_s=0.8, **base), x)
    logits = 0.7 * q @ k.transpose(-1, -2) * (0.8 * torch.log(n))
    expected = torch.softmax(logits.masked_fill(~causal, float("-inf")), -1)
    torch.testing.assert_close(pattern, expected, **EXACT)

    q, k, scores, pattern = _pattern_and_scores(ModelConfig(attention="sigmoid", sigmoid_bias=-1.5, **base), x)
    logits = 0.7 * q @ k.transpose(-1, -2)
    expected = torch.sigmoid(logits - 1.5) * causal
    torch.testing.assert_close(pattern, expected, **EXACT)

    q, k, scores, pattern = _pattern_and_scores(ModelConfig(attention="linear", **base), x)
    torch.testing.assert_close(pattern, 0.7 * q @ k.transpose(-1, -2) * causal, **EXACT)

    q, k, scores, pattern = _pattern_and_scores(ModelConfig(attention="sa_softmax", **base), x)
    logits = (0.7 * q @ k.transpose(-1, -2)).masked_fill(~causal, float("-inf"))
    expected = torch.where(causal, logits.masked_fill(~causal, 0.0) * torch.softmax(logits, -1), 0.0)
    torch.testing.assert_close(pattern, expected, **EXACT)

    q, k, scores, pattern = _pattern_and_scores(ModelConfig(attention="softplus_l1", **base), x)
    f = torch.log1p(torch.exp(0.7 * q @ k.transpose(-1, -2))) * causal  # softplus, zero off the support
    torch.testing.assert_close(pattern, f / f.sum(-1, keepdim=True), **EXACT)
    torch.testing.assert_close(pattern.sum(-1), torch.ones_like(pattern[..., 0]), **EXACT)  # rows on the simplex

    q, k, scores, pattern = _pattern_and_scores(ModelConfig(attention="cog", **base), x)
    logits = 0.7 * q @ k.transpose(-1, -2)
    e = torch.exp(logits.abs()) * causal  # SignExp: sign(z) e^|z| over the row's sum of e^|z|, zero off the support
    torch.testing.assert_close(pattern, torch.sign(logits) * e / e.sum(-1, keepdim=True), **EXACT)
    torch.testing.assert_close(pattern.abs().sum(-1), torch.ones_like(pattern[..., 0]), **EXACT)  # |w| on the simplex
    assert (pattern < 0).any()

    model = TinyTransformer(ModelConfig(attention="shaped", **base))
    with torch.no_grad():
        model.blocks[0].attn.shape_coef.copy_(torch.tensor([[0.9, 1.3, 0.4], [1.1, 0.7, 0.8]], dtype=torch.float64))
    _, cache = run_with_cache(
        model, x, names=["blocks.0.attn.hook_q", "blocks.0.attn.hook_k", "blocks.0.attn.hook_pattern"]
    )
    q, k = (cache[f"blocks.0.attn.hook_{n}"].transpose(1, 2) for n in "qk")
    logits = (0.7 * q @ k.transpose(-1, -2)).masked_fill(~causal, float("-inf"))
    uniform = causal / n  # softmax at zero logits: 1/(i + 1) on the visible keys
    coef = torch.tensor([[0.9, 1.3, 0.4], [1.1, 0.7, 0.8]], dtype=torch.float64)[:, :, None, None]
    expected = (
        coef[:, 0] * torch.eye(T, dtype=torch.float64) + coef[:, 1] * torch.softmax(logits, -1) - coef[:, 2] * uniform
    )
    torch.testing.assert_close(
        cache["blocks.0.attn.hook_pattern"], expected.expand_as(cache["blocks.0.attn.hook_pattern"]), **EXACT
    )


@pytest.mark.parametrize(
    "attention", ["softmax", "linear", "sigmoid", "ssmax", "uniform", "softplus_l1", "shaped", "cog"]
)
def test_a_minus_infinity_bias_hides_a_key_for_every_kernel(attention):
    model = TinyTransformer(ModelConfig(attention=attention, n_layers=1, d_model=16, n_heads=2, **F64))
    bias = torch.zeros(6, 6, dtype=torch.float64)
    bias[-1, -1] = float("-inf")  # the last token does not see itself
    _, c = run_with_cache(model, tokens(T=6), names="blocks.0.attn.hook_pattern", attn_bias=bias)
    pattern = c["blocks.0.attn.hook_pattern"]
    assert torch.isfinite(pattern).all()
    assert torch.count_nonzero(pattern[..., -1, -1]) == 0


def test_attention_bias_is_added_to_the_logits_in_every_layer():
    cfg = ModelConfig(n_layers=2, **F64)
    model = TinyTransformer(cfg)
    x = tokens(T=6)
    bias = torch.randn(6, 6, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    _, plain = run_with_cache(model, x, names="blocks.0.attn.hook_attn_scores")
    _, biased = run_with_cache(model, x, names="blocks.0.attn.hook_attn_scores", attn_bias=bias)
    support = torch.ones(6, 6, dtype=torch.bool).tril()
    diff = biased["blocks.0.attn.hook_attn_scores"] - plain["blocks.0.attn.hook_attn_scores"]
    torch.testing.assert_close(diff[..., support], bias.expand_as(diff)[..., support], **EXACT)
    # a bias constant along each query row leaves softmax unchanged
    row_const = torch.arange(6, dtype=torch.float64)[:, None].expand(6, 6)
    torch.testing.assert_close(model(x, attn_bias=row_const), model(x), **EXACT)
    # per-layer biases: a list of n_layers entries
    out = model(x, attn_bias=[None, bias])
    assert not torch.allclose(out, model(x)) and not torch.allclose(out, model(x, attn_bias=bias))
    with pytest.raises(ValueError, match="attn_bias"):
        model(x, attn_bias=[bias])


def _norm_stats(t):
    mu = t.mean(-1)
    var = t.var(-1, unbiased=False)
    return mu, var


def test_norm_placements_write_what_their_equations_say():
    x = tokens(T=7)
    names = [
        "blocks.*.hook_resid_pre",
        "blocks.*.hook_resid_mid",
        "blocks.*.hook_resid_post",
        "blocks.*.hook_attn_out",
        "blocks.*.hook_mlp_out",
    ]
    # post: the stream after every sublayer is LayerNorm-ed (unit gain, no bias)
    m = TinyTransformer(ModelConfig(norm="post", n_layers=2, **F64))
    _, c = run_with_cache(m, x, names=names + ["blocks.*.ln*.hook_in"])
    for key, norm_in in (
        ("blocks.0.hook_resid_mid", "blocks.0.ln1.hook_in"),
        ("blocks.1.hook_resid_post", "blocks.1.ln2.hook_in"),
    ):
        mu, var = _norm_stats(c[key])
        _, var_in = _norm_stats(c[norm_in])
        torch.testing.assert_close(mu, torch.zeros_like(mu), **EXACT)
        torch.testing.assert_close(var, var_in / (var_in + 1e-5), **EXACT)  # LayerNorm with eps = 1e-5
    # peri: the branch output (before it is added) is normalised
    m = TinyTransformer(ModelConfig(norm="peri", n_layers=1, **F64))
    _, c = run_with_cache(m, x, names=names)
    mu, _ = _norm_stats(c["blocks.0.hook_attn_out"])
    torch.testing.assert_close(mu, torch.zeros_like(mu), **EXACT)
    torch.testing.assert_close(
        c["blocks.0.hook_resid_mid"] - c["blocks.0.hook_resid_pre"], c["blocks.0.hook_attn_out"], **EXACT
    )
    # mix: first k layers post, the rest pre
    cfg = ModelConfig(norm="mix", n_layers=4, mix_post_layers=1)
    assert [cfg.placement(i) for i in range(4)] == ["post", "pre", "pre", "pre"]
    assert ModelConfig(norm="mix", n_layers=8).n_mix_post == 2  # round(L/4), Mix-LN's 25%
    # residual off and branch scale
    m = TinyTransformer(ModelConfig(norm="none", attn_residual=False, branch_scale=0.25, n_layers=1, **F64))
    _, c = run_with_cache(m, x, names=names)
    torch.testing.assert_close(c["blocks.0.hook_resid_mid"], c["blocks.0.hook_attn_out"], **EXACT)
    m.blocks[0].attn.allow_fused = False
    _, c2 = run_with_cache(m, x, names="blocks.0.attn.hook_z")
    z = c2["blocks.0.attn.hook_z"].reshape(2, 7, -1)
    torch.testing.assert_close(c["blocks.0.hook_attn_out"], 0.25 * m.blocks[0].attn.W_o(z), **EXACT)


def test_deepnorm_and_layernorm_scaling():
    L = 6
    cfg = ModelConfig(norm="post", deepnorm=True, n_layers=L, d_model=64, **F64)
    assert cfg.deepnorm_alpha == pytest.approx((2 * L) ** 0.25)
    assert cfg.deepnorm_beta == pytest.approx((8 * L) ** -0.25)
    m = TinyTransformer(cfg)
    plain = TinyTransformer(cfg.replace(deepnorm=False))
    # same draws, value/output/MLP weights scaled by beta, queries/keys untouched
    torch.testing.assert_close(
        m.blocks[2].attn.W_v.weight, plain.blocks[2].attn.W_v.weight * cfg.deepnorm_beta, **EXACT
    )
    torch.testing.assert_close(m.blocks[2].attn.W_q.weight, plain.blocks[2].attn.W_q.weight, **EXACT)
    # LayerNorm scaling: block l's input norm outputs 1/sqrt(l) times the plain norm
    m = TinyTransformer(ModelConfig(ln_scaling=True, n_layers=3, **F64))
    _, c = run_with_cache(m, tokens(), names=["blocks.2.ln1.hook_in", "blocks.2.ln1.hook_normalized"])
    h = c["blocks.2.ln1.hook_in"]
    expected = torch.nn.functional.layer_norm(h, h.shape[-1:], eps=1e-5) / math.sqrt(3)
    torch.testing.assert_close(c["blocks.2.ln1.hook_normalized"], expected, **EXACT)
    with pytest.raises(ValueError, match="deepnorm"):
        ModelConfig(norm="pre", deepnorm=True)


def test_initialisation_statistics_follow_the_config():
    m = TinyTransformer(ModelConfig(d_model=256, n_layers=1, **F64))
    w = m.blocks[0].attn.W_q.weight
    # N(0, 1/256): the sample std over 65536 draws has relative SE 1/sqrt(2*65536) ~ 0.3%; allow 5 SE
    assert abs(w.std().item() * 16 - 1) < 0.015
    m = TinyTransformer(ModelConfig(d_model=256, n_layers=2, init="gpt2", init_std=0.02, **F64))
    assert abs(m.blocks[0].attn.W_o.weight.std().item() / (0.02 / 2) - 1) < 0.015


def test_mimetic_init_sets_each_heads_products_and_keeps_the_other_weights():
    base = dict(d_model=16, n_layers=2, **F64)
    one = TinyTransformer(ModelConfig(n_heads=1, init="mimetic", mimetic_qk=(0.0, 0.9), mimetic_vo=(0.0, 0.6), **base))
    eye = torch.eye(16, dtype=torch.float64)
    with torch.no_grad():
        for b in one.blocks:  # alpha = 0: the products are exactly beta I and -beta' I
            torch.testing.assert_close(b.attn.W_q.weight.T @ b.attn.W_k.weight, 0.9 * eye, rtol=0, atol=1e-12)
            torch.testing.assert_close(b.attn.W_o.weight @ b.attn.W_v.weight, -0.6 * eye, rtol=0, atol=1e-12)
    plain = TinyTransformer(ModelConfig(n_heads=1, **base))
    assert torch.equal(one.blocks[1].mlp.W_in.weight, plain.blocks[1].mlp.W_in.weight)  # drawn before the heads
    four = TinyTransformer(
        ModelConfig(n_heads=4, init="mimetic", **base)
    )  # heads of 4: rank-4 factors of 0.7 Z + 0.7 I
    a = four.blocks[0].attn
    with torch.no_grad():
        M = a.W_q.weight[:4].T @ a.W_k.weight[:4]
    assert torch.linalg.matrix_rank(M) == 4
    with pytest.raises(ValueError, match="mimetic_qk is only used with init 'mimetic'"):
        ModelConfig(mimetic_qk=(0.1, 0.2))
    with pytest.raises(ValueError, match="mimetic_vo"):
        ModelConfig(init="mimetic", mimetic_vo=(-1.0, 0.2))


def test_bilinear_mlp_is_the_product_of_two_linear_maps_and_keeps_the_weights_drawn_before_it():
    base = dict(d_model=8, n_layers=2, **F64)
    bil = TinyTransformer(ModelConfig(activation="bilinear", **base))
    plain = TinyTransformer(ModelConfig(**base))
    mlp = bil.blocks[0].mlp
    assert mlp.W_gate.weight.shape == mlp.W_in.weight.shape and not hasattr(plain.blocks[0].mlp, "W_gate")
    for name in ("W_in", "W_out"):  # W_gate is drawn right after W_out
        assert torch.equal(getattr(mlp, name).weight, getattr(plain.blocks[0].mlp, name).weight)
    x = torch.randn(3, 5, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(mlp(x), mlp.W_out(mlp.W_in(x) * mlp.W_gate(x)), rtol=0, atol=0)
    got = {}
    names = [f"blocks.0.mlp.{h}" for h in ("hook_pre", "hook_gate", "hook_post")]
    with torch.no_grad(), hooks(bil, [(n, lambda t, name: got.setdefault(name, t)) for n in names]):
        bil(torch.randint(0, 64, (2, 5)))
    pre, gate, post = (got[n] for n in names)
    torch.testing.assert_close(post, pre * gate, rtol=0, atol=0)


def test_determinism_same_seed_same_bits_other_seed_differs():
    cfg = ModelConfig(n_layers=2, pos="learned", qk_norm=True)
    a, b = TinyTransformer(cfg), TinyTransformer(cfg)
    for (na, pa), (nb, pb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert na == nb and torch.equal(pa, pb)
    x = tokens()
    assert torch.equal(a(x), b(x))
    c = TinyTransformer(cfg.replace(seed=1))
    assert not torch.equal(a.blocks[0].attn.W_q.weight, c.blocks[0].attn.W_q.weight)
    # the same draws in every dtype: the float32 weights are the float64 draws rounded
    d64 = TinyTransformer(cfg.replace(dtype="float64"))
    assert torch.equal(d64.blocks[1].mlp.W_in.weight.float(), a.blocks[1].mlp.W_in.weight)


def test_global_rng_is_untouched():
    state = torch.random.get_rng_state()
    TinyTransformer(ModelConfig(n_layers=2))
    assert torch.equal(state, torch.random.get_rng_state())


@pytest.mark.parametrize(
    "field,value,match",
    [
        ("norm", "middle", r"norm must be one of \['pre', 'post', 'peri', 'mix', 'none'\]"),
        ("attention", "relu", r"attention must be one of"),
        ("pos", "alibi", r"pos must be one of"),
        ("norm_type", "batchnorm", r"norm_type must be one of"),
        ("dtype", "float8", r"dtype must be one of"),
        ("n_layers", -1, r"n_layers must be >= 0"),
        ("d_model", 2.5, r"d_model must be an integer"),
        ("n_heads", 3, r"d_model must be divisible by n_heads"),
        ("branch_scale", float("nan"), r"branch_scale must be a finite number"),
        ("activation", "swish", r"activation must be one of"),
        ("input", "image", r"input must be one of"),
        ("mix_post_layers", 1, r"mix_post_layers is only used with norm 'mix'"),
        ("causal", "yes", r"causal must be true or false"),
    ],
)
def test_invalid_configs_name_the_field(field, value, match):
    with pytest.raises(ValueError, match=match):
        ModelConfig(**{field: value})


def test_config_round_trip_and_unknown_fields():
    cfg = ModelConfig(norm="mix", n_layers=4, mix_post_layers=1, attention="ssmax")
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="unknown ModelConfig field"):
        ModelConfig.from_dict({**cfg.to_dict(), "colour": "red"})
    with pytest.raises(ValueError, match="unknown ModelConfig field"):
        cfg.replace(depth=3)


def test_bad_inputs_are_rejected_with_the_expected_shape():
    m = TinyTransformer(ModelConfig())
    with pytest.raises(ValueError, match="token ids"):
        m(torch.randn(2, 3))
    v = TinyTransformer(ModelConfig(input="vectors", d_in=4, output="linear", d_out=1))
    with pytest.raises(ValueError, match=r"\(B, T, 4\)"):
        v(torch.randn(2, 3, 5))
    learned = TinyTransformer(ModelConfig(pos="learned", max_len=8))
    with pytest.raises(ValueError, match="max_len"):
        learned(tokens(T=9))


def test_device_argument():
    m = TinyTransformer(ModelConfig(n_layers=1), device="cpu")
    assert m.device.type == "cpu"
    if torch.cuda.is_available():  # exercised on the accelerator machine only
        g = TinyTransformer(ModelConfig(n_layers=1), device="cuda")
        x = tokens()
        torch.testing.assert_close(g(x.cuda()).cpu(), m(x), rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------------------------------------
# attention in blocks of query rows (memory linear in T)
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("attention,causal", list(itertools.product(ATTENTION_KERNELS, (True, False))))
def test_query_blocks_equal_the_whole_matrix(attention, causal):
    """Blocks of rows (not dividing T) give the whole-matrix outputs, patterns and scores to float64
    rounding, with a compact prefix bias equal to its dense form; run_with_cache reassembles the blocks."""
    cfg = ModelConfig(
        vocab_size=16,
        d_model=16,
        n_layers=2,
        n_heads=2,
        d_mlp=32,
        attention=attention,
        causal=causal,
        pos="rope",
        seed=3,
        **F64,
    )
    model = TinyTransformer(cfg).eval()
    x = tokens(2, 37, 16)
    compact = PrefixKeyBias(torch.linspace(0.0, 2.0, 37, dtype=torch.float64), 5)
    names = ["blocks.0.attn.hook_attn_scores", "blocks.1.attn.hook_pattern", "blocks.1.hook_resid_post"]
    whole, c_whole = run_with_cache(model, x, names=names, attn_bias=compact.dense())
    per_batch = torch.randn(2, 1, 37, 37, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    whole_b = model(x, attn_bias=per_batch)  # a bias with leading (B, 1) dims broadcasts in blocks too
    model.query_block = 8
    torch.testing.assert_close(model(x, attn_bias=per_batch), whole_b, **EXACT)
    blocked, c_blocked = run_with_cache(model, x, names=names, attn_bias=compact)
    assert model.query_block == 8 and all(b.attn.query_block == 8 for b in model.blocks)
    model.query_block = None
    torch.testing.assert_close(blocked, whole, **EXACT)
    for name in names:
        assert c_blocked[name].shape == c_whole[name].shape
        assert torch.equal(torch.isinf(c_blocked[name]), torch.isinf(c_whole[name]))
        torch.testing.assert_close(
            c_blocked[name].nan_to_num(0.0, 0.0, 0.0), c_whole[name].nan_to_num(0.0, 0.0, 0.0), **EXACT
        )


def test_query_block_hooks_see_row_blocks_with_their_offsets():
    cfg = ModelConfig(vocab_size=16, d_model=16, n_layers=1, n_heads=2, d_mlp=0, seed=1, **F64)
    model = TinyTransformer(cfg).eval()
    point = model.named_hook_points()["blocks.0.attn.hook_pattern"]
    seen = []
    model.query_block = 8
    with hooks(model, [("blocks.0.attn.hook_pattern", lambda p, name: seen.append((point.rows, tuple(p.shape))))]):
        model(tokens(1, 20, 16))
    assert seen == [((0, 8), (1, 2, 8, 8)), ((8, 16), (1, 2, 8, 16)), ((16, 20), (1, 2, 4, 20))]
    assert point.rows is None  # only set while a block passes
    model.query_block = 64  # one block covers the sequence: a whole-matrix call
    seen.clear()
    with hooks(model, [("blocks.0.attn.hook_pattern", lambda p, name: seen.append((point.rows, tuple(p.shape))))]):
        model(tokens(1, 20, 16))
    assert seen == [(None, (1, 2, 20, 20))]


def test_prefix_key_bias_and_query_block_validation():
    b = PrefixKeyBias(torch.arange(6, dtype=torch.float64), 2)
    dense = b.dense()
    assert dense.shape == b.shape == (6, 6)
    assert torch.equal(dense[:, :2], torch.arange(6, dtype=torch.float64)[:, None].expand(6, 2))
    assert torch.equal(dense[:, 2:], torch.zeros(6, 4, dtype=torch.float64))
    assert torch.equal(b.block(2, 5, 3), dense[2:5, :3])
    assert b.to(torch.float32).dtype == torch.float32
    with pytest.raises(ValueError, match="n_keys"):
        PrefixKeyBias(torch.zeros(4), 5)
    with pytest.raises(ValueError, match="1-D"):
        PrefixKeyBias(torch.zeros(4, 4), 1)
    model = TinyTransformer(ModelConfig(vocab_size=8, d_model=8, n_layers=1, n_heads=1, seed=0))
    for bad in (0, -3, 2.5):
        with pytest.raises(ValueError, match="query_block"):
            model.query_block = bad


def test_unwatched_large_attention_runs_in_row_blocks(monkeypatch):
    """Above AUTO_BLOCK_BYTES an unwatched forward computes attention in row blocks (causal blocks skip the
    keys they cannot see); it equals the watched whole-matrix forward to float64 rounding."""
    import analysis.zoo.attention as M  # where Attention reads AUTO_BLOCK_BYTES
    from analysis.zoo.hooks import run_with_cache

    cfg = ModelConfig(n_layers=2, d_model=16, n_heads=2, vocab_size=32, dtype="float64", pos="rope")
    model = TinyTransformer(cfg).eval()
    x = torch.randint(0, 32, (2, 40), generator=torch.Generator().manual_seed(0))
    monkeypatch.setattr(M, "AUTO_BLOCK_BYTES", 2 * 2 * 40 * 8 * 8)  # 8 rows of (B, H, ., T) float64 per block
    calls = []
    real = M.Attention._rows
    monkeypatch.setattr(M.Attention, "_rows", lambda self, *a, **k: calls.append(a[4:6]) or real(self, *a, **k))
    with torch.no_grad():
        blocked = model(x)
        assert calls[:5] == [(0, 8), (8, 16), (16, 24), (24, 32), (32, 40)]
        calls.clear()
        watched, cache = run_with_cache(model, x, names="blocks.*.attn.hook_pattern")
        assert calls == [(0, 40), (0, 40)]  # hooks see whole matrices
    assert cache["blocks.0.attn.hook_pattern"].shape == (2, 2, 40, 40)
    # a softmax row sums <= 40 terms, then pattern @ v sums <= 40 more: rounding of order 80 eps x the scale
    scale = float(blocked.abs().max())
    assert float((blocked - watched).abs().max()) <= 100 * torch.finfo(torch.float64).eps * scale


def test_row_blocks_broadcast_a_key_padding_bias(monkeypatch):
    """A (B, 1, 1, T) bias (key padding, as for bidirectional models with padded batches) broadcasts over the
    rows of every block; it was once sliced like a (T, T) matrix, leaving later blocks an empty bias."""
    import analysis.zoo.attention as M  # where Attention reads AUTO_BLOCK_BYTES

    cfg = ModelConfig(n_layers=1, d_model=16, n_heads=2, vocab_size=32, dtype="float64", causal=False)
    model = TinyTransformer(cfg).eval()
    x = torch.randint(0, 32, (2, 40), generator=torch.Generator().manual_seed(0))
    pad = torch.zeros(2, 1, 1, 40, dtype=torch.float64)
    pad[1, ..., 30:] = -math.inf  # the second sequence is 30 tokens long
    with torch.no_grad():
        whole = model(x, attn_bias=pad)
        monkeypatch.setattr(M, "AUTO_BLOCK_BYTES", 2 * 2 * 40 * 8 * 8)  # blocks of 8 rows
        blocked = model(x, attn_bias=pad)
    assert float((blocked - whole).abs().max()) <= 100 * torch.finfo(torch.float64).eps * float(whole.abs().max())


# ---------------------------------------------------------------------------------------------- rel_pos and kv_shift
@pytest.mark.parametrize("attention", ATTENTION_KERNELS)
@pytest.mark.parametrize("causal", [True, False])
def test_rel_pos_bias_is_added_to_the_logits_by_offset(attention, causal):
    """rel_pos = R: the logits gain b_h[i - j] (offsets clipped to the table); at init (zeros) nothing changes."""
    base = dict(attention=attention, causal=causal, n_layers=1, d_model=8, n_heads=2, **F64)
    plain = TinyTransformer(ModelConfig(**base))
    model = TinyTransformer(ModelConfig(**base, rel_pos=3))
    model.load_state_dict(plain.state_dict(), strict=False)
    x = tokens(T=7)
    torch.testing.assert_close(model(x), plain(x), **EXACT)  # zero table: the plain model
    table = torch.randn(model.blocks[0].attn.rel_bias.shape, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        model.blocks[0].attn.rel_bias.copy_(table)
    name = "blocks.0.attn.hook_attn_scores"
    _, a = run_with_cache(plain, x, names=name)
    _, b = run_with_cache(model, x, names=name)
    want = torch.empty(2, 7, 7, dtype=torch.float64)  # by hand: offset i - j clipped to |i - j| <= 2
    for i, j in itertools.product(range(7), range(7)):
        off = max(-2, min(2, i - j))
        want[:, i, j] = table[:, max(off, 0)] if causal else table[:, off + 2]
    seen = torch.isfinite(a[name])
    torch.testing.assert_close((b[name] - a[name])[seen], want.expand_as(a[name])[seen], **EXACT)
    assert torch.equal(torch.isfinite(b[name]), seen)  # the mask is unchanged
    model.query_block = 3  # row blocks see their own offsets
    torch.testing.assert_close(run_with_cache(model, x, names=name)[1][name], b[name], **EXACT)


def test_rel_pos_minus_infinity_selects_one_offset_per_head():
    """A table of -inf except at offset h (the edge offset R - 1, shared by farther keys, -inf too) makes head h
    copy the value h tokens back: the convolution construction of the attention_only probe."""
    cfg = ModelConfig(
        input="embedded",
        output="none",
        n_layers=1,
        d_model=4,
        n_heads=2,
        rel_pos=3,
        d_mlp=0,
        norm="none",
        attn_residual=False,
        attention="uniform",
        **F64,
    )
    model = TinyTransformer(cfg)
    with torch.no_grad():
        model.blocks[0].attn.rel_bias.copy_(torch.tensor([[0.0, -math.inf, -math.inf], [-math.inf, 0.0, -math.inf]]))
    _, c = run_with_cache(model, torch.randn(1, 5, 4, dtype=torch.float64), names="blocks.0.attn.hook_pattern")
    p = c["blocks.0.attn.hook_pattern"][0]
    torch.testing.assert_close(p[0], torch.eye(5, dtype=torch.float64), **EXACT)
    torch.testing.assert_close(p[1, 1:], torch.eye(5, dtype=torch.float64)[:-1], **EXACT)  # row t reads t - 1


def test_kv_shift_at_init_is_plain_attention_and_mixes_the_previous_key_and_value():
    base = dict(n_layers=2, d_model=8, n_heads=2, pos="rope", **F64)
    plain = TinyTransformer(ModelConfig(**base))
    model = TinyTransformer(ModelConfig(**base, kv_shift=True))
    assert set(model.state_dict()) - set(plain.state_dict()) == {
        f"blocks.{i}.attn.shift_{w}" for i in range(2) for w in "kv"
    }
    model.load_state_dict(plain.state_dict(), strict=False)
    x = tokens(T=6)
    torch.testing.assert_close(model(x), plain(x), **EXACT)  # a2 = b2 = 0: exactly plain attention
    model = TinyTransformer(ModelConfig(**{**base, "pos": "none"}, kv_shift=True))  # hook_k: the shifted keys
    attn = model.blocks[0].attn
    with torch.no_grad():
        attn.shift_k.copy_(torch.tensor([[0.5, 2.0], [1.0, -1.0]]))
        attn.shift_v.copy_(torch.tensor([[0.0, 1.0], [3.0, 0.25]]))
    names = ["blocks.0.attn.hook_k", "blocks.0.attn.hook_v", "blocks.0.ln1.hook_normalized"]
    _, c = run_with_cache(model, x, names=names)
    h = c["blocks.0.ln1.hook_normalized"]
    with torch.no_grad():
        k, v = attn.W_k(h).view(2, 6, 2, 4), attn.W_v(h).view(2, 6, 2, 4)
        for t in range(6):  # by hand, token by token; k_(-1) = v_(-1) = 0
            kp = k[:, t - 1] if t else torch.zeros_like(k[:, 0])
            vp = v[:, t - 1] if t else torch.zeros_like(v[:, 0])
            want_k = attn.shift_k[:, 0, None] * k[:, t] + attn.shift_k[:, 1, None] * kp
            want_v = attn.shift_v[:, 0, None] * v[:, t] + attn.shift_v[:, 1, None] * vp
            torch.testing.assert_close(c["blocks.0.attn.hook_k"][:, t], want_k, **EXACT)
            torch.testing.assert_close(c["blocks.0.attn.hook_v"][:, t], want_v, **EXACT)


@pytest.mark.parametrize(
    "over,match",
    [
        (dict(kv_shift=True, causal=False), "kv_shift needs causal attention"),
        (dict(kv_shift=True, attention="recurrent"), "kv_shift needs an attention kernel with a pattern"),
        (dict(rel_pos=2, attention="recurrent"), "rel_pos needs an attention kernel with a pattern"),
        (dict(rel_pos=-1), "rel_pos must be >= 0"),
    ],
)
def test_rel_pos_and_kv_shift_refuse_what_they_cannot_do(over, match):
    with pytest.raises(ValueError, match=match):
        ModelConfig(**over)


def test_rel_pos_and_kv_shift_stay_out_of_existing_keys():
    assert "rel_pos" not in ModelConfig().to_dict() and "kv_shift" not in ModelConfig().to_dict()
    assert ModelConfig(rel_pos=4, kv_shift=True).to_dict()["rel_pos"] == 4


@pytest.mark.parametrize("attention", ["softmax", "ssmax", "sigmoid", "linear"])
def test_the_in_place_scores_buffer_is_the_out_of_place_formula_bit_for_bit(attention):
    """Attention scales, biases and masks one scores buffer in place: a hook that keeps the scores sees exactly
    the out-of-place arithmetic (the same ops in the same order: equal bits, float32 and float64), nothing
    changes them after the hook, and the in-place ops leave autograd's gradients right (float64 gradcheck)."""
    T = 7
    for dtype in ("float32", "float64"):
        cfg = ModelConfig(attention=attention, n_layers=1, d_model=16, n_heads=2, rel_pos=3, dtype=dtype, seed=2)
        model = TinyTransformer(cfg)
        with torch.no_grad():
            model.blocks[0].attn.rel_bias.normal_(generator=torch.Generator().manual_seed(3))
        bias = torch.randn(T, T, generator=torch.Generator().manual_seed(4)).to(cfg.torch_dtype)
        names = [f"blocks.0.attn.hook_{n}" for n in ("q", "k", "attn_scores", "pattern")]
        _, c = run_with_cache(model, tokens(T=T), names=names, attn_bias=bias)
        q, k = (c[n].transpose(1, 2) for n in names[:2])
        attn = model.blocks[0].attn
        logits = (q @ k.transpose(-1, -2)) * cfg.scale
        if attention == "ssmax":
            logits = logits * (cfg.ssmax_s * torch.log(torch.arange(1, T + 1, dtype=logits.dtype)[:, None]))
        logits = (logits + bias) + attn.rel_bias_rows(0, T, T)[None]
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        expected = logits.masked_fill(~causal, float("-inf"))
        assert torch.equal(c[names[2]], expected), (attention, dtype)
        if attention in ("softmax", "ssmax"):
            assert torch.equal(c[names[3]], torch.softmax(expected, -1))

    cfg = ModelConfig(attention=attention, n_layers=1, d_model=8, n_heads=2, rel_pos=3, **F64)
    attn = TinyTransformer(cfg).blocks[0].attn
    x = torch.randn(1, 5, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(5), requires_grad=True)
    b = torch.randn(5, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(6), requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, b: attn(x, attn_bias=b), (x, b))


@pytest.mark.parametrize("causal", [True, False])
def test_query_blocks_mask_only_the_keys_a_block_can_hide(causal):
    """In blocks of query rows a causal block writes -inf only on keys from its first row on (earlier keys are
    seen by all its rows) and a bidirectional one writes nothing: the reassembled scores hide exactly the keys
    the whole matrix hides, their values and the patterns equal the whole matrix's to float64 rounding (a
    block's product is a different matrix product), and gradients through the partly masked blocks pass
    gradcheck (float64)."""
    T = 11
    cfg = ModelConfig(n_layers=1, d_model=16, n_heads=2, causal=causal, **F64)
    model = TinyTransformer(cfg)
    names = ["blocks.0.attn.hook_attn_scores", "blocks.0.attn.hook_pattern"]
    x = tokens(T=T)
    _, whole = run_with_cache(model, x, names=names)
    seen = torch.ones(T, T, dtype=torch.bool)
    seen = seen.tril() if causal else seen
    assert torch.equal(torch.isfinite(whole[names[0]][0, 0]), seen)
    for rows in (1, 4, 5):
        model.query_block = rows
        _, blocked = run_with_cache(model, x, names=names)
        assert torch.equal(torch.isfinite(blocked[names[0]]), torch.isfinite(whole[names[0]])), rows
        for n in names:
            torch.testing.assert_close(blocked[n], whole[n], rtol=1e-12, atol=1e-12)
    attn = model.blocks[0].attn
    h = torch.randn(1, 6, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(7), requires_grad=True)
    attn.query_block = 4
    assert torch.autograd.gradcheck(lambda h: attn(h), (h,))


def test_rope_rotate_is_the_rotation_formula_bit_for_bit_with_and_without_autograd():
    """RoPE writes its halves in place when no gradient is wanted and concatenates under autograd: both are
    ``[x1 cos - x2 sin, x1 sin + x2 cos]`` with float64 angles cast to the dtype, bit for bit, also for a
    strided input; a table first made under inference mode serves a training step afterwards."""
    from analysis.zoo.model import rope_rotate, rope_table

    def formula(x, base):
        half, T = x.shape[-1] // 2, x.shape[1]
        inv = base ** (-torch.arange(half, dtype=torch.float64) * 2.0 / x.shape[-1])
        angle = torch.arange(T, dtype=torch.float64)[:, None] * inv
        cos, sin = (f(angle).to(x.dtype)[None, :, None, :] for f in (torch.cos, torch.sin))
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)

    rope_table.cache_clear()
    for dtype in (torch.float32, torch.float64):
        x = torch.randn(2, 33, 3, 16, dtype=dtype, generator=torch.Generator().manual_seed(1)) * 5
        with torch.inference_mode():
            assert torch.equal(rope_rotate(x, 500.0), formula(x, 500.0))
        strided = x.transpose(1, 2).contiguous().transpose(1, 2)
        with torch.no_grad():
            assert torch.equal(rope_rotate(strided, 500.0), formula(x, 500.0))
        leaf = x.clone().requires_grad_()
        y = rope_rotate(leaf, 500.0)
        assert torch.equal(y.detach(), formula(x, 500.0))
        y.pow(2).sum().backward()  # a rotation keeps norms: d/dx |R x|^2 = 2 x
        torch.testing.assert_close(leaf.grad, 2 * x)


def test_zero_query_starts_softmax_uniform_and_shaped_attention_at_the_identity():
    """zero_query zeroes W_q after every draw (the other weights are the default draw's); at zero logits softmax is
    the uniform causal average and shaped attention (init (1, 1, 1)) exactly the identity, in a block or in blocks
    of row blocks alike."""
    base = dict(n_layers=2, d_model=16, n_heads=2, **F64)
    plain = TinyTransformer(ModelConfig(**base))
    zero = TinyTransformer(ModelConfig(zero_query=True, **base))
    for (name, a), (_, b) in zip(plain.named_parameters(), zero.named_parameters(), strict=True):
        if name.endswith("attn.W_q.weight"):
            assert not b.any()
        else:
            assert torch.equal(a, b), name
    x = tokens(T=7)
    T = 7
    _, cache = run_with_cache(zero, x, names=["blocks.1.attn.hook_pattern"])
    uniform = torch.ones(T, T, dtype=torch.float64).tril() / torch.arange(1, T + 1, dtype=torch.float64)[:, None]
    got = cache["blocks.1.attn.hook_pattern"]
    torch.testing.assert_close(got, uniform.expand_as(got), **EXACT)
    shaped = TinyTransformer(ModelConfig(attention="shaped", zero_query=True, **base))
    for block in (None, 3):  # whole matrices, then blocks of 3 query rows
        for b in shaped.blocks:
            b.attn.query_block = block
        _, cache = run_with_cache(shaped, x, names=["blocks.1.attn.hook_pattern"])
        got = cache["blocks.1.attn.hook_pattern"]
        torch.testing.assert_close(got, torch.eye(T, dtype=torch.float64).expand_as(got), rtol=0.0, atol=1e-15)


def test_cog_attention_flips_exactly_the_flipped_tokens_outputs():
    """SignExp attention (``attention="cog"``) is odd in each token separately: flipping token i's sign flips its
    logits against every other token (its own is even) and its value, so exactly its own output flips, through a
    deep skipless stack and through a residual pre-norm attention-only stack; softmax attention is not."""
    g = torch.Generator().manual_seed(11)
    x = torch.randn(3, 7, 16, generator=g, dtype=torch.float64)
    flip = torch.tensor([1.0, -1.0, 1.0, 1.0, -1.0, -1.0, 1.0], dtype=torch.float64)[None, :, None]
    for fields in (dict(attn_residual=False, norm="none"), dict(norm="pre")):
        for attention, odd in (("cog", True), ("softmax", False)):
            cfg = ModelConfig(
                input="embedded",
                output="none",
                d_model=16,
                n_layers=4,
                n_heads=2,
                d_mlp=0,
                attention=attention,
                **fields,
                **F64,
            )
            model = TinyTransformer(cfg).eval()
            with torch.no_grad():
                y, y_flipped = model(x), model(flip * x)
            if odd:
                torch.testing.assert_close(y_flipped, flip * y, rtol=0, atol=1e-12)
            else:
                assert (y_flipped - flip * y).abs().max() > 1e-3


def test_one_head_layer_is_the_config_written_out():
    """one_head_layer(d, **fields) is the one-layer, one-head, attention-only, embedded-in, stream-out config, field
    for field (so its weights and cache keys are those of the config written out); fields override its defaults."""
    from analysis.zoo.model import one_head_layer

    written = ModelConfig(
        input="embedded", output="none", d_model=8, n_layers=1, n_heads=1, d_mlp=0, norm="none", seed=3
    )
    assert one_head_layer(8, norm="none", seed=3) == written
    assert one_head_layer(8, norm="none", seed=3).to_dict() == written.to_dict()
    assert one_head_layer(8, d_mlp=16).d_mlp == 16 and one_head_layer(8, output="lm", vocab_size=5).output == "lm"
    a, b = (
        TinyTransformer(one_head_layer(8, seed=3)),
        TinyTransformer(ModelConfig(**{**written.to_dict(), "norm": "pre"})),
    )
    for (na, pa), (nb, pb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert na == nb and torch.equal(pa, pb)
