"""Full Attention Residuals (ModelConfig(residual="attnres")): the forward pass against a direct computation of its
definition, the uniform mix at initialisation, the weights it shares with the plain model, and the rules it keeps."""

from __future__ import annotations

import pytest
import torch

from analysis.zoo.hooks import hooks, run_with_cache
from analysis.zoo.model import ModelConfig, TinyTransformer


def _cfg(**over) -> ModelConfig:
    return ModelConfig(**{**dict(vocab_size=20, d_model=16, n_layers=3, n_heads=2, residual="attnres", seed=3,
                                 dtype="float64"), **over})  # fmt: skip


def _mix(values: list[torch.Tensor], w: torch.Tensor, eps: float) -> torch.Tensor:
    """The definition, written out: alpha_i = exp(w . k_i) / sum_j exp(w . k_j), k_i = v_i / rms(v_i)."""
    scores = torch.stack([(v / torch.sqrt((v * v).mean(-1, keepdim=True) + eps)) @ w for v in values], dim=-1)
    alpha = torch.exp(scores - scores.max(-1, keepdim=True).values)
    alpha = alpha / alpha.sum(-1, keepdim=True)
    return sum(alpha[..., i : i + 1] * v for i, v in enumerate(values))


@pytest.mark.parametrize("d_mlp", [None, 0])
def test_forward_is_the_softmax_over_depth_of_the_definition(d_mlp):
    cfg = _cfg(d_mlp=d_mlp)
    model = TinyTransformer(cfg)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():  # trained-like queries: the mix is no longer uniform
        for name, p in model.named_parameters():
            if name.endswith("query"):
                p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64))
    x = torch.randint(0, 20, (2, 6), generator=gen)
    values = [model.embed(x)]
    h = values[0]
    for b in model.blocks:
        values.append(b.attn(b.ln1(h)))
        h = _mix(values, b.attnres_mid.query, cfg.norm_eps)
        if b.mlp is not None:
            values.append(b.mlp(b.ln2(h)))
            h = _mix(values, b.attnres_post.query, cfg.norm_eps)
    expected = model.head(model.ln_final(h))
    torch.testing.assert_close(model(x), expected, rtol=1e-12, atol=1e-12)


def test_at_initialisation_every_earlier_output_weighs_the_same():
    model = TinyTransformer(_cfg())
    x = torch.randint(0, 20, (2, 6), generator=torch.Generator().manual_seed(0))
    _, cache = run_with_cache(model, x, names=lambda n: n.endswith(("attnres_weights", "hook_resid_post")))
    for layer in range(3):
        for point, n in (("mid", 2 * layer + 2), ("post", 2 * layer + 3)):
            alpha = cache[f"blocks.{layer}.attnres_{point}.hook_attnres_weights"]
            assert alpha.shape == (2, 6, n)
            torch.testing.assert_close(alpha, torch.full_like(alpha, 1.0 / n))
    _, outs = run_with_cache(model, x, names=lambda n: n.endswith(("hook_embed", "_out")) and "attn." not in n)
    values = [outs["hook_embed"]] + [outs[f"blocks.{l}.hook_{s}_out"] for l in range(3) for s in ("attn", "mlp")]
    torch.testing.assert_close(cache["blocks.2.hook_resid_post"], torch.stack(values).mean(0))


def test_every_other_weight_is_the_plain_models_and_every_hook_fires_once():
    model = TinyTransformer(_cfg())
    plain = dict(TinyTransformer(_cfg(residual="add")).named_parameters())
    extra = {n for n, _ in model.named_parameters()} - set(plain)
    assert extra == {f"blocks.{l}.attnres_{p}.query" for l in range(3) for p in ("mid", "post")}
    assert all(torch.equal(p, plain[n]) for n, p in model.named_parameters() if n in plain)
    assert "residual" not in _cfg(residual="add").to_dict()  # the default leaves every cache key as it was
    seen: list[str] = []
    with hooks(model, [("*", lambda x, name: seen.append(name))]):
        model(torch.zeros(1, 4, dtype=torch.long))
    assert seen == model.hook_names()


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"residual": "hyper"}, "residual"),
        ({"norm": "post"}, "residual 'attnres' needs norm 'pre'"),
        ({"mlp_residual": False}, "mlp_residual must be true"),
        ({"loops": 2}, "loops must be 1"),
        ({"parameterisation": "mup"}, "parameterisation 'standard' only"),
    ],
)
def test_bad_combinations_name_the_field(over, match):
    with pytest.raises(ValueError, match=match):
        _cfg(**over)
