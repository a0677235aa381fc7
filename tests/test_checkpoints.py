"""Checkpoint cache: content keys, verified loads, atomic layout, partial states, no pickle."""

from __future__ import annotations

import dataclasses
import json
import logging

import numpy as np
import pytest
import torch

from analysis.training import train as train_mod
from analysis.training.checkpoints import CheckpointCache, checkpoint_key, history_from_json, history_to_json
from analysis.training.train import TrainConfig
from analysis.zoo.model import ModelConfig, TinyTransformer

MODEL = ModelConfig(vocab_size=8, d_model=16, n_layers=1, n_heads=2, d_mlp=32, seed=1)
TASK = {"name": "shift", "vocab_size": 8, "seq_len": 8, "shift": 3}
TRAIN = TrainConfig(steps=10, batch_size=8)
V = train_mod.TRAINER_VERSION  # the trainer passes its version into every key

# A changed value for every TrainConfig field. The test below fails when a field is added without
# an entry here, so no field can silently drop out of the cache key.
TRAIN_CHANGES = {
    "steps": 11,
    "batch_size": 9,
    "lr": 2e-3,
    "weight_decay": 0.1,
    "betas": (0.8, 0.99),
    "eps": 1e-6,
    "momentum": 0.9,
    "warmup_steps": 2,
    "schedule": "constant",
    "min_lr_ratio": 0.2,
    "grad_clip": 0.5,
    "seed": 1,
    "eval_every": 5,
    "eval_batches": 2,
    "checkpoint_every": 3,
    "optimizer": "sgd",
    "muon_lr": 0.01,
    "muon_momentum": 0.9,
}


def entry(cache: CheckpointCache, model_cfg: ModelConfig = MODEL) -> tuple[str, TinyTransformer]:
    model = TinyTransformer(model_cfg)
    key = cache.key(model_cfg, TASK, TRAIN, trainer_version=V)
    meta = {
        "model": model_cfg.to_dict(),
        "task": TASK,
        "train": TRAIN.to_dict(),
        "history": history_to_json({"step": np.arange(3), "loss": np.array([2.0, np.nan, np.inf])}),
    }
    cache.save(key, model, meta)
    return key, model


# ------------------------------------------------------------------------------------------------
# keys
# ------------------------------------------------------------------------------------------------
def test_key_is_a_pure_function_of_the_values():
    k = checkpoint_key(MODEL, TASK, TRAIN, trainer_version=V)
    assert k == checkpoint_key(
        ModelConfig.from_dict(MODEL.to_dict()),
        dict(reversed(TASK.items())),
        TrainConfig.from_dict(TRAIN.to_dict()),
        trainer_version=V,
    )
    assert k == CheckpointCache("/nonexistent").key(MODEL, TASK, TRAIN, trainer_version=V)  # independent of the root
    assert len(k) == 16 and int(k, 16) >= 0


def test_key_changes_with_every_train_field():
    assert set(TRAIN_CHANGES) == {f.name for f in dataclasses.fields(TrainConfig)}
    base = checkpoint_key(MODEL, TASK, TRAIN, trainer_version=V)
    keys = {checkpoint_key(MODEL, TASK, TRAIN.replace(**{f: v}), trainer_version=V) for f, v in TRAIN_CHANGES.items()}
    assert base not in keys and len(keys) == len(TRAIN_CHANGES)


def test_key_changes_with_every_model_field():
    # a valid changed value for each ModelConfig field, derived from its type or its allowed choices
    alt = {
        "input": "vectors",
        "output": "linear",
        "activation": "relu",
        "norm": "post",
        "norm_type": "rmsnorm",
        "attention": "linear",
        "pos": "rope",
        "init": "gpt2",
        "dtype": "float64",
        "d_head": 4,
        "d_mlp": 0,
        "mix_post_layers": None,
        "final_norm": True,
        "logit_scale": 0.5,
        "write_rule": "delta",
        "delta_beta": 1.0,
        "decay": "gated",
        "feature_map": "elu1",
        "loop_unit": "block",
        "k_interval_mode": "round",
        "mimetic_qk": (0.0, 1.0),
        "mimetic_vo": (0.0, 1.0),
        "parameterisation": "mup",
        "base_d_model": 16,
        "depth_alpha": 1.0,
        "residual": "attnres",
    }
    # fields only valid together with others: the extra changes that make the changed value valid
    needs = {
        "input": {"d_in": 4},
        "output": {"d_out": 2},
        "deepnorm": {"norm": "post"},
        "write_rule": {"attention": "recurrent"},
        "delta_beta": {"attention": "recurrent", "write_rule": "delta"},
        "decay": {"attention": "recurrent"},
        "feature_map": {"attention": "recurrent"},
        "n_features": {"attention": "recurrent", "feature_map": "favor"},
        "state_norm": {"attention": "recurrent", "feature_map": "elu1"},
        "loop_unit": {"loops": 2},
        "mimetic_qk": {"init": "mimetic"},
        "mimetic_vo": {"init": "mimetic"},
        "base_d_model": {"parameterisation": "mup"},
        "base_n_layers": {"parameterisation": "depth_mup"},
        "depth_alpha": {"parameterisation": "depth_mup"},
    }
    base = checkpoint_key(MODEL, TASK, TRAIN, trainer_version=V)
    seen = set()
    for f in dataclasses.fields(ModelConfig):
        old = getattr(MODEL, f.name)
        if f.name in alt:
            new = alt[f.name]
        elif isinstance(old, bool):
            new = not old
        elif isinstance(old, int):
            new = old + 2
        elif isinstance(old, float):
            new = old * 2 + 1
        else:
            pytest.fail(f"no changed value for ModelConfig.{f.name}")
        if new == old:  # e.g. mix_post_layers is only valid with norm "mix"
            cfg = MODEL.replace(norm="mix", mix_post_layers=1)
        else:
            cfg = MODEL.replace(**{**needs.get(f.name, {}), f.name: new})
        seen.add(checkpoint_key(cfg, TASK, TRAIN, trainer_version=V))
    assert base not in seen and len(seen) == len(dataclasses.fields(ModelConfig))


def test_key_changes_with_task_version_and_extra():
    base = checkpoint_key(MODEL, TASK, TRAIN, trainer_version=V)
    assert checkpoint_key(MODEL, {**TASK, "shift": 4}, TRAIN, trainer_version=V) != base
    assert checkpoint_key(MODEL, {**TASK, "new_field": 0}, TRAIN, trainer_version=V) != base
    assert checkpoint_key(MODEL, TASK, TRAIN, extra={"callback": "x"}, trainer_version=V) != base
    assert checkpoint_key(MODEL, TASK, TRAIN, trainer_version=V + "+changed") != base


# ------------------------------------------------------------------------------------------------
# save / load
# ------------------------------------------------------------------------------------------------
def test_save_load_round_trip_and_layout(tmp_path):
    cache = CheckpointCache(tmp_path)
    key, model = entry(cache)
    assert cache.contains(key) and cache.list_entries() == [key]
    assert sorted(p.name for p in (tmp_path / key).iterdir()) == ["meta.json", "model.safetensors"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp folder left behind
    state, meta = cache.load(key)
    assert state.keys() == model.state_dict().keys()
    for name, t in model.state_dict().items():
        assert torch.equal(state[name], t), name
    assert meta["key"] == key and meta["torch_version"] == torch.__version__ and len(meta["sha256"]) == 64
    h = history_from_json(meta["history"])
    assert h["step"].dtype == np.int64 and h["loss"][0] == 2.0 and np.isnan(h["loss"][1]) and h["loss"][2] == np.inf


def test_load_model_rebuilds_strictly(tmp_path):
    cache = CheckpointCache(tmp_path)
    key, model = entry(cache)
    rebuilt = cache.load_model(key)
    assert not rebuilt.training and rebuilt.config == MODEL
    x = torch.randint(0, 8, (2, 5), generator=torch.Generator().manual_seed(0))
    assert torch.equal(rebuilt(x), model(x))
    assert cache.load_model("0" * 16) is None


def test_missing_and_removed_entries(tmp_path):
    cache = CheckpointCache(tmp_path)
    assert cache.load("0" * 16) is None and cache.list_entries() == []
    key, _ = entry(cache)
    cache.remove(key)
    assert not cache.contains(key) and cache.load(key) is None
    with pytest.raises(ValueError, match="key"):
        cache.load("../escape")


def test_save_replaces_an_existing_entry(tmp_path):
    cache = CheckpointCache(tmp_path)
    key, _ = entry(cache)
    other = TinyTransformer(MODEL.replace(seed=2))
    cache.save(key, other, {"model": MODEL.to_dict()})
    state, _ = cache.load(key)
    assert torch.equal(state["head.weight"], other.head.weight)
    assert cache.list_entries() == [key]


@pytest.mark.parametrize(
    "damage", ["truncate", "flip_byte", "garbage_meta", "meta_not_object", "wrong_key", "empty_weights"]
)
def test_damaged_entry_is_deleted_not_used(tmp_path, damage, caplog):
    cache = CheckpointCache(tmp_path)
    key, _ = entry(cache)
    weights, meta = tmp_path / key / "model.safetensors", tmp_path / key / "meta.json"
    data = weights.read_bytes()
    if damage == "truncate":
        weights.write_bytes(data[:-10])
    elif damage == "flip_byte":
        weights.write_bytes(data[:-3] + bytes([data[-3] ^ 0x80]) + data[-2:])
    elif damage == "garbage_meta":
        meta.write_bytes(b"\xff\xfe garbage")
    elif damage == "meta_not_object":
        meta.write_text("[1, 2]")
    elif damage == "wrong_key":
        m = json.loads(meta.read_text())
        m["key"] = "f" * 16
        meta.write_text(json.dumps(m))
    else:
        weights.write_bytes(b"")
    with caplog.at_level(logging.WARNING, logger="analysis.training.checkpoints"):
        assert cache.load(key) is None
    assert "damaged" in caplog.text
    assert not (tmp_path / key).exists() and cache.list_entries() == []


def test_safetensors_that_does_not_load_is_caught(tmp_path, caplog):
    # hash consistent with the file, but the file is not safetensors: only the load step can catch it
    from analysis.core.io import sha256_file

    cache = CheckpointCache(tmp_path)
    key, _ = entry(cache)
    weights, meta = tmp_path / key / "model.safetensors", tmp_path / key / "meta.json"
    weights.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{broken}")
    m = json.loads(meta.read_text())
    m["sha256"] = sha256_file(weights)
    meta.write_text(json.dumps(m))
    with caplog.at_level(logging.WARNING, logger="analysis.training.checkpoints"):
        assert cache.load(key) is None
    assert "does not load" in caplog.text


def test_tied_and_non_contiguous_tensors_are_saved(tmp_path):
    cache = CheckpointCache(tmp_path)
    model = TinyTransformer(MODEL)
    with torch.no_grad():  # tie the read-out to the embedding and save both names (shared storage)
        model.head.weight = model.embed.weight
    key = cache.key(MODEL, TASK, TRAIN, trainer_version=V)
    cache.save(key, model, {})
    state, _ = cache.load(key)
    assert torch.equal(state["head.weight"], state["embed.weight"])


# ------------------------------------------------------------------------------------------------
# partial states
# ------------------------------------------------------------------------------------------------
def test_partial_round_trip_and_isolation(tmp_path):
    cache = CheckpointCache(tmp_path)
    key = cache.key(MODEL, TASK, TRAIN, trainer_version=V)
    gen = torch.Generator().manual_seed(3)
    tensors = {"gen": gen.get_state(), "x": torch.arange(6.0).view(2, 3).t()}  # non-contiguous view
    cache.save_partial(key, tensors, {"step": 4})
    assert cache.has_partial(key) and cache.list_entries() == []  # partials are not entries
    got, state = cache.load_partial(key)
    assert state["step"] == 4 and torch.equal(got["x"], tensors["x"])
    restored = torch.Generator()
    restored.set_state(got["gen"])
    assert torch.equal(torch.rand(4, generator=restored), torch.rand(4, generator=gen))
    (cache.partial_dir(key) / "state.safetensors").write_bytes(b"junk")
    assert cache.load_partial(key) is None and not cache.has_partial(key)


def test_only_safetensors_and_json_files(tmp_path):
    cache = CheckpointCache(tmp_path)
    key, _ = entry(cache)
    cache.save_partial(key, {"a": torch.zeros(2)}, {"step": 1})
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files and {p.suffix for p in files} == {".safetensors", ".json"}
