"""Nested part configs (``analysis.core.config``: :class:`PartConfig`, :func:`part`, :func:`switch`): a probe's config
holds one config per part, code reads ``config.sparse.keys``, and everything that names fields by string (the
constructor, ``replace``, ``to_dict``/``from_dict``, presets, the command line, error messages) uses the flat names
generated from the nesting, so that nesting an existing probe's fields moves no stored key."""

from __future__ import annotations

import pickle
from dataclasses import dataclass

import pytest

import probes
from analysis.core.config import BaseConfig, PartConfig, param, part, switch
from analysis.probing import cli
from analysis.probing.base import ModelPart, ProbeConfig, model_param


@dataclass(frozen=True)
class Sparse(PartConfig):
    PART = "sparse"

    enabled: bool = switch(True, "measure the planted key")
    keys: tuple[int, ...] = param((16, 64), "keys n per row", minimum=2, formerly="sparse_n")
    gap: float = param(4.0, "planted logit bias", maximum=50.0, smoke=1.0)

    def validate(self) -> None:
        super().validate()
        if self.enabled and len(self.keys) * self.gap > 100:
            raise ValueError(f"{self.flat('gap')} times the number of keys must be <= 100, got {self.gap}")


@dataclass(frozen=True)
class Memory(PartConfig):
    PART = "memory"

    slots: int = param(64, "slots n", minimum=1)
    lr: float = param(0.1, "step size", formerly="lr")  # once the config's flat 'lr'


@dataclass(frozen=True)
class Looped(PartConfig):
    PART = "looped"

    laws: tuple[str, ...] = switch(
        ("gaussian",), "laws the part runs on (none: off)", choices=("gaussian", "t"), min_len=0
    )
    loops: int = param(4, "loops T", minimum=1)


@dataclass(frozen=True)
class Toy(ProbeConfig):
    SMOKE = {"memory_slots": 8}

    seed: int = param(0, "seed", minimum=0)
    memory: Memory = part(Memory)
    sparse: Sparse = part(Sparse)
    looped: Looped = part(Looped)


def test_flat_names_are_generated_from_the_nesting_in_declaration_order():
    assert Toy.field_names() == [
        "preset_name",
        "device",
        "seed",
        "memory_slots",
        "memory_lr",
        "sparse",
        "sparse_keys",
        "sparse_gap",
        "looped",
        "looped_loops",
    ]
    assert [s.attrs for s in Toy.field_specs()] == [  # the probe's fields, then device
        ("seed",),
        ("memory", "slots"),
        ("memory", "lr"),
        ("sparse", "enabled"),
        ("sparse", "keys"),
        ("sparse", "gap"),
        ("looped", "laws"),
        ("looped", "loops"),
        ("device",),
    ]
    options = [s.option for s in Toy.field_specs()]
    assert options[:4] == ["--seed", "--memory-slots", "--memory-lr", "--sparse"] and "--looped" in options


def test_to_dict_is_flat_and_round_trips():
    cfg = Toy(seed=3, sparse_keys=(8, 32), sparse=Sparse(gap=2.0))
    assert cfg.sparse == Sparse(keys=(8, 32), gap=2.0) and cfg.memory == Memory()
    d = cfg.to_dict()
    assert d == {
        "preset_name": "full",
        "seed": 3,
        "memory_slots": 64,
        "memory_lr": 0.1,
        "sparse": True,
        "sparse_keys": [8, 32],
        "sparse_gap": 2.0,
        "looped": ["gaussian"],
        "looped_loops": 4,
    }
    again = Toy.from_dict(d)
    assert again == cfg and again.digest() == cfg.digest()
    assert pickle.loads(pickle.dumps(cfg)) == cfg  # sweeps send configs to worker processes


def test_flat_and_nested_construction_give_the_same_config():
    flat = Toy(memory_slots=5, sparse=False, sparse_gap=1.5)
    nested = Toy(memory=Memory(slots=5), sparse=Sparse(enabled=False, gap=1.5))
    assert flat == nested and flat.to_dict() == nested.to_dict()
    assert flat.value_of("sparse") is False and flat.value_of("memory_slots") == 5
    with pytest.raises(ValueError, match="unknown field 'sparse_nope'"):
        flat.value_of("sparse_nope")


def test_replace_keeps_the_rest_of_a_part():
    cfg = Toy(sparse_keys=(8, 32), sparse_gap=2.0)
    off = cfg.replace(sparse=False)  # the switch, by its flat name: the part's other values stay
    assert off.sparse == Sparse(enabled=False, keys=(8, 32), gap=2.0)
    assert cfg.replace(sparse_gap=3.0, seed=1).sparse.keys == (8, 32)
    assert cfg.replace(sparse=Sparse()).sparse == Sparse()  # a part given whole replaces it
    with pytest.raises(ValueError, match="unknown field 'sparse_nope'"):
        cfg.replace(sparse_nope=1)


def test_presets_take_smoke_values_declared_in_a_part():
    smoke = Toy.preset("smoke")
    assert smoke.sparse.gap == 1.0 and smoke.memory.slots == 8 and smoke.preset_name == "smoke"
    assert Toy.preset("full") == Toy()


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"sparse_keys": (1, 4)}, "sparse_keys[0] must be >= 2, got 1"),
        ({"sparse_gap": 60.0}, "sparse_gap must be <= 50"),
        ({"sparse": "yes"}, "sparse must be true or false, got 'yes'"),
        ({"memory_slots": 0}, "memory_slots must be >= 1, got 0"),
        ({"sparse_gap": 40.0, "sparse_keys": (2, 3, 4)}, "sparse_gap times the number of keys must be <= 100"),
    ],
)
def test_errors_name_the_flat_field(values, message):
    with pytest.raises(ValueError) as err:
        Toy(**values)
    assert str(err.value).startswith(message), err.value
    with pytest.raises(ValueError) as again:
        Toy().replace(**values)
    assert str(again.value) == str(err.value)


def test_a_switched_off_part_keeps_its_values_for_its_own_validate_to_read():
    """The library always runs a part's validate and keeps a switched-off part's values; the pattern the probes
    follow (``if self.enabled``) leaves an off part's checks across fields unasked."""
    off = Toy(sparse=False, sparse_gap=40.0, sparse_keys=(2, 3, 4))
    assert not off.sparse.enabled and off.sparse.gap == 40.0 and off.value_of("sparse_keys") == (2, 3, 4)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: Toy(memory={"slots": 3}),
            r"^memory must be a Memory config \(or set its fields by their flat names\), "
            r"got \{'slots': 3\}$",
        ),
        (lambda: Toy().replace(memory=5), r"^memory must be a Memory config"),
        (lambda: Toy(memory=Sparse()), r"^memory must be a Memory config .*got Sparse\("),
    ],
)
def test_a_part_given_whole_must_be_its_own_config(build, message):
    with pytest.raises(ValueError, match=message):
        build()
    assert Toy(memory=Memory(slots=3)).value_of("memory_slots") == 3  # the part's own config, given whole


def test_a_former_flat_name_is_refused_naming_the_new_one():
    for build in (
        lambda: Toy(sparse_n=(4,)),
        lambda: Toy().replace(sparse_n=(4,)),
        lambda: Toy.from_dict({"sparse_n": [4]}),
    ):
        with pytest.raises(TypeError, match=r"^Toy: field 'sparse_n' is now 'sparse_keys' \(keys n per row\)$"):
            build()


def test_a_part_attribute_may_carry_a_former_flat_name():
    """Memory.lr was the config's flat 'lr' before the nesting: the part's own constructor takes 'lr', the config's
    refuses it naming 'memory_lr'."""
    assert Toy(memory_lr=0.5).memory == Memory(lr=0.5)
    with pytest.raises(TypeError, match=r"^Toy: field 'lr' is now 'memory_lr'"):
        Toy(lr=0.5)


def test_a_selection_switch_is_spelled_as_the_part():
    cfg = Toy(looped=("t", "gaussian"), looped_loops=2)
    assert cfg.looped.laws == ("t", "gaussian") and cfg.value_of("looped") == ("t", "gaussian")
    assert cfg.to_dict()["looped"] == ["t", "gaussian"] and Toy.from_dict(cfg.to_dict()) == cfg
    assert Toy(looped=()).looped.laws == ()
    with pytest.raises(ValueError, match=r"^looped\[0\] must be one of \[.gaussian., .t.\], got .cauchy.$"):
        Toy(looped=("cauchy",))


def test_declaration_mistakes_are_type_errors():
    with pytest.raises(TypeError, match="set PART"):

        @dataclass(frozen=True)
        class NoName(PartConfig):
            x: int = param(1, "x")

    @dataclass(frozen=True)
    class Misplaced(BaseConfig):
        other: Sparse = part(Sparse)

    with pytest.raises(TypeError, match="Misplaced.other nests Sparse, whose PART must be 'other'"):
        Misplaced.field_names()

    @dataclass(frozen=True)
    class Clash(BaseConfig):
        sparse_keys: int = param(1, "a field of the config under a nested part's flat name")
        sparse: Sparse = part(Sparse)

    with pytest.raises(TypeError, match=r"flat field name\(s\) \['sparse_keys'\] given twice"):
        Clash.field_names()

    @dataclass(frozen=True)
    class BadSwitch(PartConfig):
        PART = "bad"
        on: bool = switch(True, "a switch under another name")

    with pytest.raises(TypeError, match="a switch is a part config's field, its bool one named 'enabled'"):
        BadSwitch.field_names()

    @dataclass(frozen=True)
    class BadSelection(PartConfig):
        PART = "bad"
        enabled: tuple[str, ...] = switch(("a",), "a selection named like a bool switch")

    with pytest.raises(TypeError, match="its bool one named 'enabled'"):
        BadSelection.field_names()


def test_the_command_line_spells_nested_fields_flat(tmp_path, capsys, monkeypatch):
    """softmax_alternatives nests one config per part; its options are the flat names."""
    Config = probes.get("softmax_alternatives").Config
    assert any(s.nested for s in Config.field_specs())
    assert "--sparse-keys" in [s.option for s in Config.field_specs()]
    monkeypatch.chdir(tmp_path)
    rc = cli.main(["run", "softmax_alternatives", "--sparse-keys", "1,4", "--save", "r"])
    err = capsys.readouterr().err
    assert rc == 2 and err.strip() == "probes: error: probe softmax_alternatives: sparse_keys[0] must be >= 2, got 1", (
        err
    )
    rc = cli.main(["run", "softmax_alternatives", "--sparse-width", "8", "--save", "r"])
    err = capsys.readouterr().err
    assert rc == 2 and "--sparse-width is now --sparse-d-model" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "r").exists()


@dataclass(frozen=True)
class ToyModel(ModelPart):
    n_layers: int = model_param("n_layers", 2, maximum=4, smoke=1)
    d_model: int = model_param("d_model", 32)


@dataclass(frozen=True)
class WithModel(ProbeConfig):
    model: ToyModel = part(ToyModel)
    seed: int = model_param("seed", 0)
    sparse: Sparse = part(Sparse)


def test_a_model_part_keeps_the_model_configs_names():
    """config.model.n_layers is spelled n_layers (--n-layers) and sets ModelConfig.n_layers; seed stays the
    probe's own and sets the model's too."""
    assert WithModel.field_names()[2:5] == ["n_layers", "d_model", "seed"]
    assert WithModel.model_fields() == ("n_layers", "d_model", "seed")
    cfg = WithModel(n_layers=3, seed=7)
    assert cfg.model == ToyModel(n_layers=3) and cfg.value_of("n_layers") == 3
    assert cfg.to_dict()["n_layers"] == 3 and "model_n_layers" not in cfg.to_dict()
    mc = cfg.model_config(vocab_size=16)
    assert (mc.n_layers, mc.d_model, mc.seed) == (3, 32, 7)
    assert WithModel.preset("smoke").model.n_layers == 1
    with pytest.raises(ValueError, match=r"^n_layers must be <= 4"):
        WithModel(n_layers=5)
    assert "--n-layers" in [s.option for s in WithModel.field_specs()]


def test_model_fields_belong_in_a_model_part():
    @dataclass(frozen=True)
    class Loose(PartConfig):
        PART = "loose"
        n_heads: int = model_param("n_heads", 2)

    @dataclass(frozen=True)
    class Holder(ProbeConfig):
        loose: Loose = part(Loose)

    with pytest.raises(TypeError, match="model_param fields belong in a ModelPart"):
        Holder.model_fields()

    @dataclass(frozen=True)
    class Switched(ModelPart):
        enabled: bool = switch(True, "a model part has no switch")

    with pytest.raises(TypeError, match="a switch is a part config's field"):
        Switched.field_names()
