"""muP and depth-muP in the zoo and the trainer (analysis/zoo/parameterisation.py): the standard parameterisation is
untouched, muP at its base width is the standard model, and away from it every rule is its definition."""

from __future__ import annotations

import math

import pytest
import torch

from analysis.training.optim import make_optimizer, set_lr
from analysis.training.train_config import TrainConfig
from analysis.zoo.model import ModelConfig, TinyTransformer
from analysis.zoo.parameterisation import lr_multipliers, parameter_classes

GDN = dict(attention="recurrent", write_rule="delta", decay="gated")


def _cfg(d: int, **kw) -> ModelConfig:
    return ModelConfig(vocab_size=40, d_model=d, n_heads=4, n_layers=2, seed=3, **kw)


def test_the_standard_parameterisation_keeps_every_key_and_weight():
    cfg = _cfg(64)
    assert not {"parameterisation", "base_d_model", "base_n_layers", "depth_alpha"} & set(cfg.to_dict())
    assert cfg.branch_multiplier == cfg.branch_scale and cfg.width_mult == 1.0
    assert cfg.scale == 1.0 / math.sqrt(cfg.head_size)
    model = TinyTransformer(cfg)
    opt = make_optimizer(model, TrainConfig())
    assert len(opt.param_groups) == 2 and all("lr_mult" not in g for g in opt.param_groups)


@pytest.mark.parametrize("extra", [{}, GDN, {"init": "gpt2"}])
@pytest.mark.parametrize("optimizer", ["adamw", "sgd"])
def test_mup_at_its_base_width_is_the_standard_model(extra, optimizer):
    std, mup = _cfg(32, **extra), _cfg(32, parameterisation="mup", base_d_model=32, **extra)
    a, b = TinyTransformer(std), TinyTransformer(mup)
    for (n, p), (_, q) in zip(a.named_parameters(), b.named_parameters(), strict=True):
        assert torch.equal(p, q), n
    x = torch.randint(0, 40, (2, 6), generator=torch.Generator().manual_seed(0))
    assert torch.equal(a(x), b(x))
    assert set(lr_multipliers(b, optimizer).values()) == {1.0}


def test_mup_away_from_its_base_width_follows_its_definition():
    cfg = _cfg(128, parameterisation="mup", base_d_model=32)
    m = 4.0
    assert cfg.width_mult == m
    assert cfg.scale == pytest.approx((1 / math.sqrt(8)) * 8 / 32)  # sqrt(dh0) / dh: 1/d_head scaling
    model = TinyTransformer(cfg)
    # the read-out: its base width's init std 1/sqrt(d0), its output divided by m
    assert model.head.weight.std().item() == pytest.approx(1 / math.sqrt(32), rel=0.05)
    x = torch.randint(0, 40, (2, 6), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        h = model.ln_final(model.blocks[1](model.blocks[0](model.embed(x))))
        assert torch.allclose(model(x), model.head(h) / m)
    # gpt2 init: a hidden matrix's std times sqrt(base fan-in / fan-in), the read-out's unchanged
    g = TinyTransformer(_cfg(128, parameterisation="mup", base_d_model=32, init="gpt2", init_std=0.02))
    assert g.blocks[0].attn.W_q.weight.std().item() == pytest.approx(0.02 * math.sqrt(32 / 128), rel=0.05)
    assert g.head.weight.std().item() == pytest.approx(0.02, rel=0.05)


def test_learning_rate_multipliers_are_the_table():
    model = TinyTransformer(_cfg(128, parameterisation="mup", base_d_model=32, **GDN))
    classes = parameter_classes(model)
    adam, sgd = lr_multipliers(model, "adam"), lr_multipliers(model, "sgd")
    want = {  # class -> (Adam, SGD) at m = 4
        "hidden": (1 / 4, 1.0), "readout": (1.0, 4.0), "gate": (1 / 4, 1 / 4), "input": (1.0, 4.0),
        "scalar": (1.0, 1.0),
    }  # fmt: skip
    seen = set()
    for name, (kind, _, _) in classes.items():
        assert (adam[name], sgd[name]) == want[kind], name
        seen.add(kind)
    assert seen == set(want)
    assert classes["blocks.0.attn.W_gate.weight"][0] == "gate" and classes["head.weight"][0] == "readout"
    assert classes["embed.weight"][0] == "input" and classes["blocks.0.mlp.W_in.weight"][0] == "hidden"
    assert model.base_shapes()["blocks.0.mlp.W_in.weight"] == (128, 32)


@pytest.mark.parametrize("alpha", [0.5, 1.0])
def test_depth_mup_scales_branches_and_block_learning_rates(alpha):
    cfg = ModelConfig(vocab_size=40, d_model=32, n_heads=4, n_layers=8, parameterisation="depth_mup",
                      base_d_model=32, base_n_layers=2, depth_alpha=alpha)  # fmt: skip
    assert cfg.branch_multiplier == pytest.approx((2 / 8) ** alpha)
    model = TinyTransformer(cfg)
    adam, sgd = lr_multipliers(model, "adam"), lr_multipliers(model, "sgd")
    for name in adam:
        inside = name.startswith("blocks.")
        assert adam[name] == pytest.approx((8 / 2) ** (alpha - 1) if inside else 1.0), name
        assert sgd[name] == pytest.approx((8 / 2) ** (2 * alpha - 1) if inside else 1.0), name
    # the branch output as added to the stream is the sublayer's output times the multiplier
    x = torch.randint(0, 40, (1, 5), generator=torch.Generator().manual_seed(1))
    seen = {}
    block = model.blocks[0]
    handle = block.attn.register_forward_hook(lambda _m, _i, out: seen.setdefault("attn", out.detach()))
    from analysis.zoo.hooks import run_with_cache

    _, cache = run_with_cache(model, x, names=["blocks.0.hook_attn_out"])
    handle.remove()
    assert torch.allclose(cache["blocks.0.hook_attn_out"], seen["attn"] * cfg.branch_multiplier)


def test_the_trainer_applies_each_groups_multiplier():
    model = TinyTransformer(_cfg(64, parameterisation="mup", base_d_model=32))
    opt = make_optimizer(model, TrainConfig(optimizer="sgd", lr=0.1))
    set_lr(opt, 0.05)
    mults = lr_multipliers(model, "sgd")
    by_param = {id(p): g["lr"] for g in opt.param_groups for p in g["params"]}
    for name, p in model.named_parameters():
        assert by_param[id(p)] == pytest.approx(0.05 * mults[name]), name


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"parameterisation": "mu_p"}, "parameterisation"),
        ({"parameterisation": "depth_mup", "depth_alpha": 0.7}, "depth_alpha"),
        ({"base_d_model": 16}, "base_d_model"),
        ({"parameterisation": "mup", "depth_alpha": 1.0}, "depth_alpha"),
        ({"parameterisation": "mup", "init": "mimetic"}, "init"),
        ({"parameterisation": "mup", "base_d_model": 30}, "base_d_model"),
    ],
)
def test_bad_parameterisations_name_their_field(fields, named):
    with pytest.raises(ValueError, match=named):
        _cfg(64, **fields)


def test_muon_has_no_mup_rule():
    model = TinyTransformer(_cfg(64, parameterisation="mup", base_d_model=32))
    with pytest.raises(ValueError, match="optimizer 'muon'"):
        make_optimizer(model, TrainConfig(optimizer="muon"))
