"""The one config machinery (analysis/core/config.py) and the configs built on it.

What is pinned here keys every cache: ``ModelConfig.to_dict()`` and ``TrainConfig.to_dict()`` are
hashed into checkpoint keys, a probe config's ``to_dict()`` into result-cache keys. So the field
names, their order, the defaults and their JSON types are spelled out below (no hash values: a hash
says *that* something changed, these say *what*), and every probe's model fields must build exactly
the ModelConfig the probe built by hand before they were shared.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from typing import Literal

import pytest

import probes
from analysis.claims.evidence import replicate_seed
from analysis.core.config import BaseConfig, param, renamed_fields
from analysis.core.io import content_hash
from analysis.core.validation import check_distinct, check_increasing
from analysis.probing import cli
from analysis.probing.base import FieldSpec, ProbeConfig, model_param
from analysis.training.train import TrainConfig, probe_lm_train_config
from analysis.zoo.model import NORM_PLACEMENTS, ModelConfig

MODEL_DEFAULTS = {
    "input": "tokens",
    "vocab_size": 64,
    "d_in": 0,
    "output": "lm",
    "d_out": 0,
    "d_model": 64,
    "n_layers": 2,
    "n_heads": 4,
    "d_head": None,
    "d_mlp": None,
    "activation": "gelu",
    "bias": False,
    "norm": "pre",
    "mix_post_layers": None,
    "norm_type": "layernorm",
    "norm_eps": 1e-5,
    "ln_scaling": False,
    "deepnorm": False,
    "qk_norm": False,
    "final_norm": None,
    "attention": "softmax",
    "logit_scale": None,
    "ssmax_s": 1.0,
    "sigmoid_bias": 0.0,
    "causal": True,
    "attn_residual": True,
    "mlp_residual": True,
    "branch_scale": 1.0,
    "pos": "none",
    "max_len": 1024,
    "rope_base": 10000.0,
    "init": "fan_in",
    "init_std": 0.02,
    "dtype": "float32",
    "seed": 0,
}
TRAIN_DEFAULTS = {
    "steps": 1000,
    "batch_size": 64,
    "lr": 1e-3,
    "weight_decay": 0.0,
    "betas": [0.9, 0.999],
    "eps": 1e-8,
    "momentum": 0.0,
    "warmup_steps": 0,
    "schedule": "cosine",
    "min_lr_ratio": 0.1,
    "grad_clip": 1.0,
    "seed": 0,
    "eval_every": 0,
    "eval_batches": 4,
    "checkpoint_every": 0,
    "optimizer": "adamw",
}

MODEL_VARIANTS = [
    {},
    {"input": "vectors", "d_in": 3, "output": "linear", "d_out": 2},
    {"d_head": 8, "d_mlp": 0},
    {"norm": "mix", "n_layers": 4, "mix_post_layers": 1},
    {"norm": "post", "deepnorm": True, "final_norm": False},
    {"attention": "ssmax", "ssmax_s": 2.0, "logit_scale": 0.5, "pos": "rope"},
    {"pos": "learned", "max_len": 32},
    {"init": "gpt2", "init_std": 0.01, "dtype": "float64", "seed": 3},
    {"input": "embedded", "output": "none"},
]


def _exact(d: dict) -> str:
    """JSON text in the dict's own key order, with Python types visible (1 vs 1.0, list vs tuple)."""
    return json.dumps(d) + repr(d)


# ================================================================================================
# model and trainer configs: the cache-key contract
# ================================================================================================


@pytest.mark.parametrize(("cls", "defaults"), [(ModelConfig, MODEL_DEFAULTS), (TrainConfig, TRAIN_DEFAULTS)])
def test_to_dict_is_the_fields_in_declaration_order_with_pinned_defaults(cls, defaults):
    names = [f.name for f in dataclasses.fields(cls)]
    assert names == cls.field_names() == [s.name for s in cls.field_specs()]
    # fields added later (omit_at_default) stay out of the dict at their defaults: the stored keys do not move
    kept = [s.name for s in cls.field_specs() if not s.omit_at_default]
    assert list(cls().to_dict()) == kept
    assert _exact(cls().to_dict()) == _exact(defaults)  # names, order, values and their types


@pytest.mark.parametrize("over", MODEL_VARIANTS)
def test_model_config_round_trips_through_json(over):
    cfg = ModelConfig(**over)
    again = ModelConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert again == cfg and _exact(again.to_dict()) == _exact(cfg.to_dict())
    assert cfg.replace() == cfg and cfg.replace(seed=5).seed == 5


def test_ints_given_for_floats_are_kept_in_model_and_train_configs():
    # their to_dict() keys stored checkpoints: converting 1 to 1.0 would move the key of such a config
    assert ModelConfig(norm_eps=1).to_dict()["norm_eps"] == 1 and type(ModelConfig(norm_eps=1).norm_eps) is int
    assert TrainConfig(lr=1).to_dict()["lr"] == 1 and type(TrainConfig(lr=1).lr) is int
    assert TrainConfig(betas=[0, 0]).betas == (0, 0)


def test_train_config_betas_is_a_fixed_length_pair():
    spec = {s.name: s for s in TrainConfig.field_specs()}["betas"]
    assert (spec.base, spec.is_seq, spec.min_len, spec.max_len) == (float, True, 2, 2)
    assert "(exactly 2)" in spec.allowed()
    cfg = TrainConfig(betas=[0.8, 0.95])  # lists (from JSON) become tuples
    assert cfg.betas == (0.8, 0.95) and cfg.to_dict()["betas"] == [0.8, 0.95]
    assert TrainConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    for bad, match in [
        ((0.9,), "betas must have at least 2"),
        ((0.9, 0.9, 0.9), "betas must have exactly 2"),
        ((0.9, 1.0), r"betas\[1\] must be <= 0.999999"),
        ("ab", "betas must be a list"),
    ]:
        with pytest.raises(ValueError, match=match):
            TrainConfig(betas=bad)


def test_probe_lm_train_config_is_unchanged():
    assert probe_lm_train_config(400, 3).to_dict() == {
        **TRAIN_DEFAULTS,
        "steps": 400,
        "batch_size": 16,
        "lr": 3e-3,
        "warmup_steps": 50,
        "weight_decay": 0.01,
        "seed": 3,
    }


@pytest.mark.parametrize(
    ("cls", "over", "match"),
    [
        (ModelConfig, {"norm": "middle"}, r"^norm must be one of \['pre', 'post', 'peri', 'mix', 'none'\]"),
        (ModelConfig, {"n_heads": 3}, r"^d_model must be divisible by n_heads"),
        (ModelConfig, {"pos": "rope", "d_model": 12, "n_heads": 4}, r"^pos 'rope' needs an even head size"),
        (ModelConfig, {"pos": "rope", "d_head": 3}, r"^pos 'rope' needs an even head size, got d_head=3"),
        (ModelConfig, {"deepnorm": True}, r"^deepnorm requires norm 'post'"),
        (ModelConfig, {"norm": "mix", "mix_post_layers": 3}, r"^mix_post_layers must be <= 2"),
        (ModelConfig, {"vocab_size": 1}, r"^vocab_size must be >= 2"),
        (ModelConfig, {"input": "vectors"}, r"^d_in must be >= 1"),
        (ModelConfig, {"input": "embedded", "d_in": 5}, r"^d_in must equal d_model"),
        (ModelConfig, {"output": "linear"}, r"^d_out must be >= 1"),
        (ModelConfig, {"rope_base": 1.0}, r"^rope_base must be > 1.0"),
        (ModelConfig, {"init_std": 0.0}, r"^init_std must be > 0.0"),
        (ModelConfig, {"d_head": 0}, r"^d_head must be >= 1"),
        (ModelConfig, {"final_norm": 1}, r"^final_norm must be true or false"),
        (TrainConfig, {"lr": 0.0}, r"^lr must be > 0.0"),
        (TrainConfig, {"eps": -1.0}, r"^eps must be > 0.0"),
        (TrainConfig, {"warmup_steps": 11, "steps": 10}, r"^warmup_steps must be <= 10"),
        (TrainConfig, {"eval_every": 5, "eval_batches": 0}, r"^eval_batches must be >= 1"),
        (TrainConfig, {"schedule": "linear"}, r"^schedule must be one of \['cosine', 'constant'\]"),
    ],
)
def test_each_rule_names_its_field(cls, over, match):
    with pytest.raises(ValueError, match=match):
        cls(**over)


def test_conditional_fields_are_free_when_unused():
    # vocab_size only matters for token input or an lm head; eval_batches only when evaluating
    assert ModelConfig(input="vectors", d_in=2, output="linear", d_out=1, vocab_size=0).vocab_size == 0
    assert TrainConfig(eval_every=0, eval_batches=0).eval_batches == 0


@pytest.mark.parametrize("cls", [ModelConfig, TrainConfig])
def test_unknown_fields_are_refused(cls):
    with pytest.raises(ValueError, match=rf"unknown {cls.__name__} field\(s\) \['colour'\]; allowed: \["):
        cls.from_dict({**cls().to_dict(), "colour": "red"})
    with pytest.raises(ValueError, match=rf"unknown {cls.__name__} field"):
        cls().replace(colour="red")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cls().seed = 3  # type: ignore[misc]


def test_literal_annotations_are_the_choices():
    spec = {s.name: s for s in ModelConfig.field_specs()}["norm"]
    assert spec.base is str and spec.choices == NORM_PLACEMENTS == ("pre", "post", "peri", "mix", "none")
    assert spec.allowed() == "one of pre, post, peri, mix, none"


# ================================================================================================
# the machinery on toy configs
# ================================================================================================


@dataclass(frozen=True)
class Toy(BaseConfig):
    kind: Literal["a", "b"] = param("a", "a kind")
    kinds: tuple[Literal["x", "y"], ...] = param(("x",), "some kinds")
    pair: tuple[int, int] | None = param(None, "an optional pair", minimum=0)
    rate: float = param(0.5, "a rate", minimum=0.0, maximum=1.0)


def test_toy_config_validates_from_its_annotations():
    assert Toy(kinds=["y", "x"], pair=[1, 2], rate=1).to_dict() == {
        "kind": "a",
        "kinds": ["y", "x"],
        "pair": [1, 2],
        "rate": 1.0,
    }
    assert type(Toy(rate=1).rate) is float  # BaseConfig turns ints into floats for float fields
    for over, match in [
        ({"kind": "c"}, r"^kind must be one of \['a', 'b'\], got 'c'"),
        ({"kinds": ("x", "z")}, r"^kinds\[1\] must be one of \['x', 'y'\]"),
        ({"pair": (1,)}, "^pair must have at least 2"),
        ({"pair": (1, 2, 3)}, "^pair must have exactly 2"),
        ({"pair": (1, -1)}, r"^pair\[1\] must be >= 0"),
        ({"rate": 2.0}, "^rate must be <= 1.0"),
        ({"kind": None}, "^kind must be one of a, b, got None"),
    ]:
        with pytest.raises(ValueError, match=match):
            Toy(**over)
    specs = {s.name: s for s in Toy.field_specs()}
    assert specs["pair"].optional and specs["pair"].parse("none") is None and specs["pair"].parse("3,4") == (3, 4)
    assert specs["kinds"].allowed() == "a comma-separated list of values from x, y"


def test_unsupported_declarations_are_type_errors():
    @dataclass(frozen=True)
    class Both(BaseConfig):
        kind: Literal["a", "b"] = param("a", "twice", choices=("a", "b"))

    @dataclass(frozen=True)
    class Mixed(BaseConfig):
        pair: tuple[int, float] = param((1, 1.0), "mixed items")

    for cls, match in [(Both, "give the choices once"), (Mixed, "unsupported type")]:
        with pytest.raises(TypeError, match=match):
            cls()


# ================================================================================================
# probe configs
# ================================================================================================

PROBE_CONFIGS = [(name, preset) for name in probes.available() for preset in ("smoke", "full")]


@pytest.mark.parametrize(("name", "preset"), PROBE_CONFIGS)
def test_probe_config_dict_is_its_fields_in_order_and_round_trips(name, preset):
    Config = probes.get(name).Config
    cfg = Config.preset(preset)
    d = cfg.to_dict()
    # every field in order, but the fields added later (`device`, signal_propagation's `phase*`): absent at
    # their defaults, so every stored key is as it was; present once set
    later = [s.name for s in Config.field_specs(include_preset=True) if s.omit_at_default]
    assert "device" in later
    # a field of the config itself under its name, a nested part's under <part>_<field> (its switch: <part>), the
    # model part's (config.model) under the model's own names
    for spec in Config.field_specs(include_preset=True):
        outer, *inner = spec.attrs
        if not inner:
            want = outer
        else:
            part_cls = Config.__dataclass_fields__[outer].metadata["part"]
            is_switch = "switch" in part_cls.__dataclass_fields__[inner[0]].metadata
            want = inner[0] if part_cls.FLAT else outer if is_switch else f"{outer}_{inner[0]}"
        assert spec.name == want, spec
    assert list(d) == [n for n in Config.field_names() if n not in later]  # each under its one name
    assert list(d)[0] == "preset_name" and d["preset_name"] == preset
    again = Config.from_dict(json.loads(json.dumps(d)))
    assert again == cfg and _exact(again.to_dict()) == _exact(d) and cfg.digest() == content_hash(d)
    assert Config() == Config.preset("full")
    auto = Config.preset(preset, device="auto")
    assert list(auto.to_dict()) == [n for n in Config.field_names() if n not in later or n == "device"]
    assert auto.to_dict()["device"] == "auto"
    assert Config.from_dict(json.loads(json.dumps(auto.to_dict()))) == auto and auto.digest() != cfg.digest()


# Each probe's model fields: each sets the ModelConfig field of its own name (analysis.probing.config.MODEL_FIELDS:
# one vocabulary from the model to the command line).
PROBE_MODEL_FIELDS = {
    "attention_entropy": (
        "attention",
        "logit_scale",
        "n_layers",
        "n_heads",
        "d_model",
        "seed",
        "ssmax_s",
        "sigmoid_bias",
    ),
    "icl_gd": ("attention", "init_std", "seed"),
    "prompt_forgetting": (
        "n_layers",
        "d_model",
        "n_heads",
        "attention",
        "norm",
        "norm_type",
        "d_mlp",
        "pos",
        "dtype",
        "vocab_size",
        "seed",
    ),
    "representational_collapse": (
        "n_layers",
        "d_model",
        "n_heads",
        "attention",
        "norm",
        "d_mlp",
        "pos",
        "vocab_size",
        "seed",
    ),
    "signal_propagation": ("d_model", "n_heads", "attention", "vocab_size", "seed"),
}


def test_every_probe_declares_its_model_fields():
    got = {name: set(probes.get(name).Config.model_fields()) for name in PROBE_MODEL_FIELDS}
    assert got == {name: set(fields) for name, fields in PROBE_MODEL_FIELDS.items()}


def _configs(name: str, *variants: dict) -> list:
    Config = probes.get(name).Config
    return [Config.preset("smoke"), Config.preset("full")] + [Config.preset("smoke", **v) for v in variants]


def _same(got: ModelConfig, want: ModelConfig) -> None:
    assert got == want and _exact(got.to_dict()) == _exact(want.to_dict())


# The explicit constructions below are how each probe built its model before the model fields were
# shared; the mapping must reproduce them exactly (their to_dict() keys the probes' trained checkpoints).


def test_attention_entropy_model_is_unchanged():
    ae = probes.get("attention_entropy")
    for c in _configs("attention_entropy", {"attention": "ssmax", "logit_scale": 0.3}, {"n_heads": 4, "n_layers": 3}):
        for vocab, scale, qk, att, seed in [(64, None, False, None, None), (300, 0.7, True, "softmax", 12345)]:
            want = ModelConfig(
                input="tokens",
                vocab_size=vocab,
                output="lm",
                d_model=c.model.d_model,
                n_layers=c.model.n_layers,
                n_heads=c.model.n_heads,
                norm="pre",
                attention=att or c.model.attention,
                logit_scale=scale if scale is not None else c.model.logit_scale,
                qk_norm=qk,
                ssmax_s=c.model.ssmax_s,
                sigmoid_bias=c.model.sigmoid_bias,
                pos="none",
                seed=c.seed if seed is None else seed,
            )
            _same(ae.model_config(c, vocab=vocab, logit_scale=scale, qk_norm=qk, attention=att, seed=seed), want)


def test_icl_gd_models_are_unchanged():
    icl = probes.get("icl_gd")
    for c in _configs("icl_gd", {"attention": "softmax", "init_std": 0.1, "seed": 4}):
        for n_layers, dtype, seed in [(1, "float32", None), (3, "float64", 5)]:
            D = c.d + 1
            want = ModelConfig(
                input="embedded",
                d_in=D,
                output="none",
                vocab_size=2,
                d_model=D,
                n_layers=n_layers,
                n_heads=1,
                d_head=D,
                d_mlp=0,
                norm="none",
                attention=c.model.attention,
                logit_scale=1.0 if c.model.attention == "linear" else None,
                causal=False,
                dtype=dtype,
                seed=c.seed if seed is None else seed,
                init="gpt2",
                init_std=c.model.init_std,
            )
            _same(icl.model_config(c, n_layers, dtype=dtype, seed=seed), want)
        want = ModelConfig(
            input="vectors",
            d_in=c.garg.d + 1,
            output="linear",
            d_out=1,
            d_model=c.garg.d_model,
            n_layers=c.garg.n_layers,
            n_heads=c.garg.n_heads,
            norm="pre",
            attention="softmax",
            pos="learned",
            max_len=2 * c.garg.n_points,
            causal=True,
            init="gpt2",
            dtype="float32",
            seed=c.seed,
        )
        _same(icl.garg_model_config(c), want)


def test_prompt_forgetting_model_is_unchanged():
    pf = probes.get("prompt_forgetting")
    variants = [
        {"data": "corpus"},
        {"logit_gain": 0.5},
        {"pos": "rope", "norm": "post", "norm_type": "rmsnorm"},
        {"d_mlp": 0, "n_layers": 3, "n_heads": 4, "dtype": "float64", "vocab_size": 17, "seed": 3},
    ]
    for c in _configs("prompt_forgetting", *variants):
        want = ModelConfig(
            input="tokens",
            vocab_size=256 if c.data == "corpus" else c.model.vocab_size,
            output="lm",
            d_model=c.model.d_model,
            n_layers=c.model.n_layers,
            n_heads=c.model.n_heads,
            d_mlp=c.model.d_mlp,
            norm=c.model.norm,
            norm_type=c.model.norm_type,
            attention=c.model.attention,
            pos=c.model.pos,
            dtype=c.model.dtype,
            seed=c.seed,
            logit_scale=None if c.logit_gain == 1.0 else c.logit_gain / math.sqrt(c.model.d_model // c.model.n_heads),
        )
        _same(pf.model_config(c), want)


def test_representational_collapse_model_is_unchanged():
    rc = probes.get("representational_collapse")
    variants = [
        {"pos": "learned", "separator_every": 5},
        {"pos": "rope", "norm": "post", "d_mlp": 0},
        {"attention": "uniform", "vocab_size": 9, "seed": 2, "n_layers": 3},
    ]
    for c in _configs("representational_collapse", *variants):
        want = ModelConfig(
            input="tokens",
            vocab_size=c.model.vocab_size,
            output="lm",
            d_model=c.model.d_model,
            n_layers=c.model.n_layers,
            n_heads=c.model.n_heads,
            d_mlp=c.model.d_mlp,
            norm=c.model.norm,
            attention=c.model.attention,
            pos=c.model.pos,
            max_len=max(rc.seq_bound(c), c.sens.len, c.train.seq_len) if c.model.pos == "learned" else 1024,
            dtype="float32",
            seed=c.seed,
        )
        _same(rc.model_config(c), want)


def test_signal_propagation_models_are_unchanged(monkeypatch):
    sp = probes.get("signal_propagation")
    variants = [
        {"data": "corpus"},
        {"attn_only": True, "skip": False, "mask": "full"},
        {"attention": "ssmax", "d_model": 16, "n_heads": 2, "vocab_size": 300},
    ]
    for c in _configs("signal_propagation", *variants):
        for norm in sp.NORM_VARIANTS:
            want = ModelConfig(
                input="tokens",
                vocab_size=sp.model_vocab(c),
                output="lm",
                d_model=c.model.d_model,
                n_layers=3,
                n_heads=c.model.n_heads,
                d_mlp=0 if c.attn_only else None,
                attention=c.model.attention,
                causal=c.mask == "causal",
                attn_residual=c.skip,
                mlp_residual=c.skip,
                dtype="float64",
                seed=7,
                **sp.NORM_VARIANTS[norm],
            )
            _same(sp.model_config(c, norm, 3, 7), want)
    built: list[ModelConfig] = []  # the collapse variants' configs, caught before any computation
    monkeypatch.setattr(sp.updates, "run_with_cache", lambda model, *a, **k: built.append(model.config) or 1 / 0)
    for c in _configs("signal_propagation", *variants):
        for variant, over in sp.COLLAPSE_VARIANTS.items():
            over = {**over, **({"branch_scale": 1 / math.sqrt(c.collapse_depth)} if "branch_scale" in over else {})}
            with pytest.raises(ZeroDivisionError):
                sp.collapse_curve(c, variant, "full", 2)
            want = ModelConfig(
                input="tokens",
                vocab_size=c.model.vocab_size,
                output="none",
                d_model=c.model.d_model,
                n_layers=c.collapse_depth,
                n_heads=c.model.n_heads,
                attention=c.model.attention,
                causal=False,
                dtype="float64",
                seed=replicate_seed(c.seed, 2),  # replicate 2 of the run
                **over,
            )
            _same(built[-1], want)


# ------------------------------------------------------------------------------------------------
# errors of the shared model fields: the probe's name is the model's
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "over", "match"),
    [
        ("attention_entropy", {"n_heads": 3}, r"^d_model must be divisible by n_heads, got d_model=32, n_heads=3$"),
        (
            "prompt_forgetting",
            {"d_model": 30, "n_heads": 4},
            r"^d_model must be divisible by n_heads, got d_model=30, n_heads=4$",
        ),
        (
            "prompt_forgetting",
            {"pos": "rope", "d_model": 6, "n_heads": 2},
            r"^pos 'rope' needs an even head size, got d_model / n_heads = 6 / 2 = 3$",
        ),
        ("representational_collapse", {"pos": "rope", "d_model": 6, "n_heads": 2}, r"^pos 'rope' needs an even head"),
        ("signal_propagation", {"d_model": 30}, r"^d_model must be divisible by n_heads, got d_model=30, n_heads=4$"),
        ("icl_gd", {"init_std": 0.0}, r"^init_std must be > 0.0, got 0.0$"),
    ],
)
def test_model_errors_name_the_probe_fields(name, over, match):
    with pytest.raises(ValueError, match=match):
        probes.get(name).Config.preset("smoke", **over)


def test_command_line_reports_a_model_error_in_option_names():
    mod = probes.get("signal_propagation")
    with pytest.raises(cli.UsageError, match=r"^probe signal_propagation: d_model must be divisible by n_heads"):
        cli.parse_config(mod, "signal_propagation", ["--preset", "smoke", "--n-heads", "5"])


def test_model_param_is_checked_where_declared():
    with pytest.raises(TypeError, match="unknown model field 'width'"):
        model_param("width", 3)

    @dataclass(frozen=True)
    class Swapped(ProbeConfig):
        n_heads: int = model_param("n_layers", 2)

    with pytest.raises(TypeError, match=r"Swapped.n_heads is declared as model_param\('n_layers'"):
        Swapped()


def test_probe_model_config_applies_overrides_and_keeps_the_rest_default():
    @dataclass(frozen=True)
    class Tiny(ProbeConfig):
        n_layers: int = model_param("n_layers", 3)
        n_heads: int = model_param("n_heads", 2, maximum=8)
        extra: int = param(1, "not a model field")

    cfg = Tiny()
    assert Tiny.model_fields() == ("n_layers", "n_heads")
    assert cfg.model_config() == ModelConfig(n_layers=3, n_heads=2)
    assert cfg.model_config(n_layers=5, dtype="float64") == ModelConfig(n_layers=5, n_heads=2, dtype="float64")
    spec = {s.name: s for s in Tiny.field_specs()}["n_heads"]
    assert isinstance(spec, FieldSpec) and (spec.minimum, spec.maximum) == (1, 8)
    assert spec.help == "attention heads per layer (must divide d_model)"
    with pytest.raises(ValueError, match=r"^d_model must be divisible by n_heads"):
        Tiny(n_heads=5)
    with pytest.raises(ValueError, match=r"^d_model must be divisible by n_heads"):
        cfg.model_config(n_heads=5)


def test_omit_at_default_fields_stay_out_of_to_dict_until_set():
    @dataclass(frozen=True)
    class Later(BaseConfig):
        FLOATS_FROM_INTS = False
        a: int = param(1, "an old field")
        b: float = param(0.5, "a field added later", omit_at_default=True)
        c: tuple[int, ...] = param((1, 2), "another one", omit_at_default=True)

    assert Later().to_dict() == {"a": 1}
    assert Later(b=0.25).to_dict() == {"a": 1, "b": 0.25}
    assert Later(c=(3,)).to_dict() == {"a": 1, "c": [3]}
    assert Later.from_dict({"a": 2}) == Later(a=2)  # filled in from the defaults
    assert Later.from_dict(Later(b=0.25).to_dict()) == Later(b=0.25)
    assert "b" in Later(b=0).to_dict()  # an int 0 is not the float default (its JSON differs)
    assert {s.name: s.omit_at_default for s in Later.field_specs()} == {"a": False, "b": True, "c": True}


def test_a_former_name_is_refused_naming_the_new_one():
    @dataclass(frozen=True)
    class Renamed(BaseConfig):
        a: int = param(1, "an old field")
        n_layers: int = param(2, "blocks L", formerly="layers")

    assert Renamed(n_layers=3).to_dict() == {"a": 1, "n_layers": 3}  # one name, stored as it is called
    message = r"^Renamed: field 'layers' is now 'n_layers' \(blocks L\)$"
    for build in (
        lambda: Renamed(layers=3),
        lambda: Renamed().replace(layers=3),
        lambda: Renamed.from_dict({"a": 1, "layers": 3}),
    ):
        with pytest.raises(TypeError, match=message):
            build()
    with pytest.raises(ValueError, match="unknown Renamed field"):
        Renamed.from_dict({"layer": 3})
    assert [s.formerly for s in Renamed.field_specs()] == [(), ("layers",)]

    @dataclass(frozen=True)
    class Clash(BaseConfig):
        layers: int = param(1, "a field")
        n_layers: int = param(2, "a field formerly named like another", formerly="layers")

    with pytest.raises(TypeError, match=r"former name\(s\) \['layers'\] given twice or still a field's name"):
        Clash.field_specs()


@pytest.mark.parametrize("name", probes.available())
def test_every_former_probe_field_name_is_refused_naming_the_new_one(name):
    """The old vocabulary (``layers``, ``heads``, ``mlp``, ``*_width``, ``*_batch``...) raises, in Python and on the
    command line, an error naming the new field."""
    mod = probes.get(name)
    renamed = renamed_fields(mod.Config)
    for old, new in renamed.items():
        with pytest.raises(TypeError, match=rf"^Config: field '{old}' is now '{new}' \("):
            mod.Config.preset("smoke", **{old: mod.Config.preset("smoke").value_of(new)})
        option, new_option = "--" + old.replace("_", "-"), "--" + new.replace("_", "-")
        with pytest.raises(cli.UsageError, match=rf"^{option} is now {new_option} \(.*\), for probe {name}$"):
            cli.parse_config(mod, name, ["--preset", "smoke", option, "1"])


# The one vocabulary: a field named after a model or trainer knob ends in that knob's ModelConfig/TrainConfig name.
OLD_SUFFIXES = ("layers", "heads", "mlp", "width", "hidden", "batch")


@pytest.mark.parametrize("name", probes.available())
def test_probe_fields_speak_the_model_and_trainer_vocabulary(name):
    fields = probes.get(name).Config.field_names()
    old = [f for f in fields if f.split("_")[-1] in OLD_SUFFIXES and not f.endswith(("n_layers", "n_heads", "d_mlp"))]
    assert not old, f"{name}: name these after the ModelConfig/TrainConfig field they set (n_layers, n_heads, "
    f"d_mlp, d_model, batch_size): {old}"


@pytest.mark.parametrize(
    ("values", "at_least", "match"),
    [
        ((1, 1), 0, r"^grid must be strictly increasing, got \[1, 1\]$"),
        ((2, 1), 0, r"^grid must be strictly increasing, got \[2, 1\]$"),
        ((1, 2), 3, r"^grid must be strictly increasing with at least 3 values, got \[1, 2\]$"),
    ],
)
def test_an_increasing_grid_is_checked_with_one_message(values, at_least, match):
    with pytest.raises(ValueError, match=match):
        check_increasing("grid", values, at_least=at_least)
    check_increasing("grid", (1, 2, 3), at_least=at_least)  # a valid grid passes
    check_increasing("grid", ())  # an empty grid is increasing


def test_a_repeated_coordinate_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"^dtypes must not repeat, got \['float32', 'float32'\]$"):
        check_distinct("dtypes", ("float32", "float32"))
    check_distinct("dtypes", ("float64", "float32"))  # any order


TRAINED_MARKOV = {"trained": True, "data": "markov"}


@pytest.mark.parametrize(
    ("name", "over", "match"),
    [
        ("softmax_alternatives", {"memory_slots": (16, 64)}, "memory_slots must be strictly increasing with at least"),
        ("associative_recall", {"lin_ns": (8, 8)}, "lin_ns must be strictly increasing"),
        ("prompt_forgetting", {**TRAINED_MARKOV, "train_checkpoints": (4, 2)}, "train_checkpoints must be strictly"),
        ("signal_propagation", {"depths": (2, 2)}, "depths must not repeat"),
        ("representational_collapse", {"dtypes": ("float32", "float32")}, "dtypes must not repeat"),
        ("attention_only", {"trend_widths": (16, 16)}, "trend_widths must not repeat"),
    ],
)
def test_probe_grids_use_the_shared_checks(name, over, match):
    """The probes' grids go through the one check of analysis/core/validation.py, so every message reads alike."""
    with pytest.raises(ValueError, match=f"^{match}"):
        probes.get(name).Config(**over)
