"""The probe framework: configs and presets, the registry, Result persistence and the result cache.

The probe used here is real arithmetic: the running mean of x_i = a + b*i (i = 1..n) compared with
its closed form a + b*(t + 1)/2.
"""

from __future__ import annotations

import json
import math
import types
from dataclasses import dataclass

import numpy as np
import pytest
import xarray as xr

import probes
from analysis.claims.ledger import Ledger
from analysis.probing.base import (
    CorruptResultError,
    ProbeConfig,
    Result,
    cache_key,
    cached_run,
    check_model_compat,
    judged,
    param,
    run_probe,
    validate_probe,
)

# ---------------------------------------------------------------------- the fake probe


@dataclass(frozen=True)
class MeanConfig(ProbeConfig):
    PRESETS = {"smoke": {"n": 64, "checkpoints": (1, 64)}, "full": {}}

    n: int = param(4096, "number of terms", minimum=1)
    offset: float = param(1.0, "a in x_i = a + b*i")
    slope: float = param(0.5, "b in x_i = a + b*i")
    method: str = param("cumsum", "how the running mean is computed", choices=("cumsum", "incremental"))
    checkpoints: tuple[int, ...] = param((1, 2, 4096), "times t reported separately", minimum=1)
    bias: float | None = param(None, "added to the measurement, to make claims fail on purpose")

    def validate(self) -> None:
        super().validate()
        if max(self.checkpoints) > self.n:
            raise ValueError(f"checkpoints must be <= n={self.n}, got {list(self.checkpoints)}")


CALLS: list[MeanConfig] = []  # every config the fake probe actually ran (to tell cache hits from misses)


def mean_run(config: MeanConfig, model=None, progress: bool = True) -> Result:
    CALLS.append(config)
    t = np.arange(1, config.n + 1, dtype=np.float64)  # (n,)
    x = config.offset + config.slope * t  # (n,)
    if config.method == "cumsum":
        running = np.cumsum(x) / t
    else:  # m_t = m_{t-1} + (x_t - m_{t-1}) / t
        running = np.empty_like(x)
        m = 0.0
        for i, (ti, xi) in enumerate(zip(t, x, strict=True)):
            m += (xi - m) / ti
            running[i] = m
    running = running + (config.bias or 0.0)
    theory = config.offset + config.slope * (t + 1) / 2
    # Recursive summation of t terms has error <= (t-1) u sum|x_i| (Higham, Accuracy and Stability,
    # eq. 4.4); dividing by t, the mean is off by at most n u max|x|. The incremental update has the
    # same order. 4x that leaves room for the final division and the closed form's own rounding.
    tol = 4 * config.n * np.finfo(np.float64).eps * (abs(config.offset) + abs(config.slope) * config.n)
    err = np.abs(running - theory)
    led = Ledger("running_mean", preset=config.preset_name)
    led.identity(
        "final_mean",
        measured=running[-1],
        expected=theory[-1],
        atol=tol,
        source="closed form a + b(n+1)/2",
        why="float64 summation bound, 4 n u max|x|",
    )
    led.bound(
        "max_abs_error", measured=err.max(), bound=tol, role="identity", source="closed form", why="same bound, every t"
    )
    led.bound(
        "max_abs_error_full",
        measured=err.max(),
        bound=tol,
        role="identity",
        source="closed form",
        why="as above",
        requires_full=True,
    )
    idx = np.asarray(config.checkpoints) - 1
    data = xr.Dataset(
        {
            "running_mean": ("t", running, {"long_name": "running mean"}),
            "theory": ("t", theory),
            "at_checkpoint": ("checkpoint", running[idx].astype(np.float32)),
            "exact": ("checkpoint", err[idx] == 0.0),
        },
        coords={
            "t": t.astype(np.int64),
            "checkpoint": list(config.checkpoints),
            "label": ("t", [f"t{i}" for i in range(1, config.n + 1)]),
        },
    )
    scalars = {
        "final_mean": running[-1],
        "max_abs_error": err.max(),
        "n": np.int64(config.n),
        "method": config.method,
    }
    return Result(probe="running_mean", config=config, data=data, scalars=scalars, ledger=led)


def make_module(version: str = "1") -> types.ModuleType:
    mod = types.ModuleType("running_mean", "Running mean of an arithmetic sequence against its closed form.")
    mod.NAME = "running_mean"
    mod.VERSION = version
    mod.REQUIRES = {"causal": True, "input": ("tokens", "vectors")}
    mod.Config = MeanConfig
    mod.run = mean_run
    return mod


@pytest.fixture
def probe():
    CALLS.clear()
    mod = probes.register("running_mean", make_module())
    yield mod
    probes.unregister("running_mean")


# ---------------------------------------------------------------------- configs


def test_presets_and_defaults():
    assert MeanConfig() == MeanConfig.preset("full")
    smoke = MeanConfig.preset("smoke")
    assert smoke.n == 64 and smoke.checkpoints == (1, 64) and smoke.preset_name == "smoke"
    assert MeanConfig.preset("smoke", n=100).n == 100  # overrides win over the preset
    with pytest.raises(ValueError, match=r"preset must be one of \['smoke', 'full'\], got 'medium'"):
        MeanConfig.preset("medium")
    with pytest.raises(ValueError, match="unknown field 'm' .* allowed: preset_name, n, offset"):
        MeanConfig.preset("smoke", m=3)


def test_normalisation_lists_to_tuples_and_ints_to_floats():
    cfg = MeanConfig(n=10, offset=2, checkpoints=[1, 10])
    assert cfg.checkpoints == (1, 10) and type(cfg.offset) is float
    hash(cfg)  # frozen and hashable


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": 0}, "n must be >= 1, got 0"),
        ({"n": 2.0}, "n must be an integer"),
        ({"n": True}, "n must be an integer"),
        ({"offset": math.nan}, "offset must be a finite number"),
        ({"offset": "1"}, "offset must be a finite number"),
        ({"method": "sum"}, r"method must be one of \['cumsum', 'incremental'\], got 'sum'"),
        ({"checkpoints": ()}, "checkpoints must have at least 1 item"),
        ({"checkpoints": (1, 0)}, r"checkpoints\[1\] must be >= 1, got 0"),
        ({"checkpoints": "1,2"}, "checkpoints must be a list"),
        ({"checkpoints": (1, 9999)}, "checkpoints must be <= n=4096"),  # the subclass's own check
        ({"n": None}, "n must be an integer >= 1, got None"),
        ({"preset_name": "huge"}, "preset_name must be one of"),
    ],
)
def test_validation_names_field_and_what_is_allowed(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MeanConfig(**kwargs)


def test_optional_field_accepts_none_and_value():
    assert MeanConfig(bias=None).bias is None
    assert MeanConfig(bias=1).bias == 1.0


def test_replace_and_dict_round_trip():
    cfg = MeanConfig.preset("smoke", bias=0.5)
    assert cfg.replace(n=128).n == 128 and cfg.replace(n=128).preset_name == "smoke"
    with pytest.raises(ValueError, match="n must be >= 1"):
        cfg.replace(n=0)
    with pytest.raises(ValueError, match="unknown field 'nn'"):
        cfg.replace(nn=3)
    d = json.loads(json.dumps(cfg.to_dict()))
    assert d["checkpoints"] == [1, 64]
    assert MeanConfig.from_dict(d) == cfg
    assert cfg.digest() == MeanConfig.from_dict(d).digest() != MeanConfig().digest()


def test_field_specs_describe_fields():
    specs = {s.name: s for s in MeanConfig.field_specs()}
    assert "preset_name" not in specs
    assert specs["checkpoints"].option == "--checkpoints" and specs["checkpoints"].type_name == "list[int]"
    assert specs["bias"].type_name == "float | none"
    assert specs["method"].allowed() == "one of cumsum, incremental"
    assert specs["n"].allowed() == "an integer >= 1"
    assert specs["checkpoints"].allowed() == "a comma-separated list of integers >= 1"


def test_unsupported_field_type_is_reported():
    @dataclass(frozen=True)
    class Bad(ProbeConfig):
        PRESETS = {"smoke": {}}
        blob: bytes = param(b"", "bytes are not a supported field type")

    with pytest.raises(TypeError, match="Bad.blob: unsupported type"):
        Bad()


# ---------------------------------------------------------------------- contract and registry


def test_validate_probe_contract():
    validate_probe(make_module(), "running_mean")
    with pytest.raises(ValueError, match="NAME must be 'other'"):
        validate_probe(make_module(), "other")
    mod = make_module(version="")
    with pytest.raises(ValueError, match="VERSION must be a non-empty string"):
        validate_probe(mod, "running_mean")

    @dataclass(frozen=True)
    class FullDiffers(MeanConfig):
        PRESETS = {"smoke": {"n": 64, "checkpoints": (1,)}, "full": {"n": 10_000}}

    mod = make_module()
    mod.Config = FullDiffers
    with pytest.raises(ValueError, match=r"PRESETS\['full'\] must agree with the field defaults"):
        validate_probe(mod, "running_mean")

    @dataclass(frozen=True)
    class Clash(MeanConfig):
        strict: bool = param(False, "clashes with the --strict option")

    mod.Config = Clash
    with pytest.raises(ValueError, match=r"field\(s\) \['strict'\] clash"):
        validate_probe(mod, "running_mean")


def test_registry(probe):
    assert "running_mean" in probes.available()
    assert probes.get("running_mean") is probe
    with pytest.raises(ValueError, match="unknown probe 'nope'; available: .*running_mean"):
        probes.get("nope")
    probes.unregister("running_mean")
    assert "running_mean" not in probes.available()
    with pytest.raises(ValueError, match="probe name must be a Python identifier"):
        probes.register("not a name", probe)


# ---------------------------------------------------------------------- running


def test_run_matches_closed_form_and_records_claims(probe):
    result = run_probe("running_mean", "smoke")
    assert result.version == "1" and result.meta["elapsed_s"] >= 0
    n = 64
    assert result.scalars["final_mean"] == pytest.approx(1.0 + 0.5 * (n + 1) / 2, abs=1e-12)
    assert result.scalars["n"] == n and type(result.scalars["n"]) is int
    statuses = {c.name: c.status for c in result.checks}
    assert statuses == {"final_mean": "pass", "max_abs_error": "pass", "max_abs_error_full": "not_evaluated"}

    full = run_probe(probe, MeanConfig(n=1000, checkpoints=(1000,), method="incremental"))
    assert {c.status for c in full.checks} == {"pass"}


def test_run_with_bias_fails_its_claims(probe):
    result = run_probe(probe, MeanConfig.preset("smoke", bias=1e-6))
    assert [c.name for c in result.ledger.failed] == ["final_mean", "max_abs_error"]


def test_check_model_compat():
    # protocol properties on the model itself, anything else from its config
    model = types.SimpleNamespace(
        n_layers=2, causal=True, input_kind="vectors", cfg=types.SimpleNamespace(input="vectors", norm="post")
    )
    check_model_compat("p", model, {"causal": True, "input": ("tokens", "vectors"), "n_layers": 2})
    check_model_compat("p", model, {"norm": "post"})
    check_model_compat("p", model, {})
    with pytest.raises(ValueError, match=r"probe p needs a model with causal=False \(got True\)"):
        check_model_compat("p", model, {"causal": False})
    with pytest.raises(ValueError, match=r"input='tokens' \(got 'vectors'\); norm in \['pre', 'peri'\] \(got 'post'\)"):
        check_model_compat("p", model, {"input": "tokens", "norm": ("pre", "peri")})
    with pytest.raises(ValueError, match="rope=True \\(SimpleNamespace exposes no 'rope', nor does its config\\)"):
        check_model_compat("p", model, {"rope": True})
    config_only = types.SimpleNamespace(config=types.SimpleNamespace(causal=False))
    with pytest.raises(ValueError, match=r"causal=True \(got False\)"):
        check_model_compat("p", config_only, {"causal": True})
    with pytest.raises(ValueError, match="exposes no 'causal'"):
        check_model_compat("p", object(), {"causal": True})
    with pytest.raises(ValueError, match="does not take a model"):
        check_model_compat("p", model, None)


def test_run_probe_checks_the_model_first(probe):
    bidirectional = types.SimpleNamespace(causal=False, input_kind="tokens")
    with pytest.raises(ValueError, match="probe running_mean needs a model with causal=True"):
        run_probe(probe, "smoke", model=bidirectional)
    assert CALLS == []


# ---------------------------------------------------------------------- Result


def test_result_save_load_round_trip(probe, tmp_path):
    result = run_probe(probe, MeanConfig.preset("smoke", bias=None))
    result.scalars["nan_scalar"] = math.nan
    result.scalars["flag"] = True
    path = result.save(tmp_path / "res")
    assert sorted(p.name for p in path.iterdir()) == ["data.nc", "manifest.json", "result.json"]
    loaded = Result.load(path)
    assert loaded.identical(result)
    assert loaded.config == result.config
    assert loaded.checks == result.checks
    xr.testing.assert_identical(loaded.data, result.data)
    assert loaded.data["running_mean"].dtype == np.float64
    assert loaded.data["at_checkpoint"].dtype == np.float32
    assert loaded.data["exact"].dtype == bool
    assert list(loaded.data["label"].values[:2]) == ["t1", "t2"]
    assert math.isnan(loaded.scalars["nan_scalar"]) and loaded.scalars["flag"] is True
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())


def test_result_save_replaces_atomically_and_failed_save_keeps_old(probe, tmp_path):
    first = run_probe(probe, "smoke")
    path = first.save(tmp_path / "res")
    second = run_probe(probe, MeanConfig.preset("smoke", n=80, checkpoints=(80,)))
    second.save(path)
    assert Result.load(path).config.n == 80
    broken = run_probe(probe, "smoke")
    broken.data.attrs["nested"] = {"not": "serialisable"}  # netCDF attributes cannot be dicts
    with pytest.raises((TypeError, ValueError)):
        broken.save(path)
    assert Result.load(path).config.n == 80
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]


@pytest.mark.parametrize("damage", ["data", "result", "manifest", "missing"])
def test_result_load_detects_corruption(probe, tmp_path, damage):
    path = run_probe(probe, "smoke").save(tmp_path / "res")
    if damage == "data":
        raw = bytearray((path / "data.nc").read_bytes())
        raw[-10] ^= 0xFF
        (path / "data.nc").write_bytes(bytes(raw))
    elif damage == "result":
        text = (path / "result.json").read_text().replace('"n": 64', '"n": 65')
        (path / "result.json").write_text(text)
    elif damage == "manifest":
        (path / "manifest.json").write_text("{not json")
    else:
        (path / "data.nc").unlink()
    with pytest.raises(CorruptResultError):
        Result.load(path)


def test_result_to_json_dict(probe):
    result = run_probe(probe, MeanConfig.preset("smoke", bias=1e-6))
    result.scalars["nan_scalar"] = math.nan
    d = json.loads(json.dumps(result.to_json_dict(), allow_nan=False))
    assert d["probe"] == "running_mean" and d["version"] == "1" and d["preset"] == "smoke"
    assert d["config"] == result.config.to_dict()
    assert d["scalars"]["n"] == 64 and d["scalars"]["method"] == "cumsum" and d["scalars"]["nan_scalar"] is None
    assert d["arrays"]["running_mean"]["dims"] == ["t"]
    assert d["arrays"]["running_mean"]["values"] == result.data["running_mean"].values.tolist()
    assert d["arrays"]["running_mean"]["attrs"] == {"long_name": "running mean"}
    assert d["coords"]["checkpoint"]["values"] == [1, 64]
    assert [c["name"] for c in d["checks"]] == ["final_mean", "max_abs_error", "max_abs_error_full"]
    assert d["check_summary"] == {
        "pass": 0,
        "fail": 2,
        "deviation": 0,
        "inconclusive": 0,
        "loose": 0,
        "unstable": 0,
        "not_evaluated": 1,
    }


def test_result_summary_and_validation(probe):
    result = run_probe(probe, "smoke")
    text = result.summary()
    assert "probe running_mean (preset smoke, version 1)" in text
    assert "final_mean" in text and "running_mean(t=64)" in text
    assert "checks: 3 claims: 2 agree, 0 disagree, 1 undecided (1 not evaluated), 0 out of scope" in text
    with pytest.raises(ValueError, match="ledger preset 'full' must match config.preset_name 'smoke'"):
        Result(probe="running_mean", config=MeanConfig.preset("smoke"), ledger=Ledger("running_mean"))
    with pytest.raises(ValueError, match="scalar 'v' must be a number or a string"):
        Result(probe="running_mean", config=MeanConfig(), scalars={"v": np.zeros(3)})


# ---------------------------------------------------------------------- cache


def test_cache_miss_then_hit(probe, tmp_path):
    cfg = MeanConfig.preset("smoke")
    first = cached_run("running_mean", cfg, cache_root=tmp_path, progress=False)
    assert len(CALLS) == 1 and not first.from_cache
    folder = tmp_path / "running_mean" / cache_key(probe, cfg)
    assert (folder / "manifest.json").exists()
    second = cached_run("running_mean", cfg, cache_root=tmp_path, progress=False)
    assert len(CALLS) == 1 and second.from_cache and second.identical(first)
    cached_run("running_mean", cfg.replace(slope=0.25), cache_root=tmp_path)  # another config: miss
    assert len(CALLS) == 2
    cached_run("running_mean", cfg, cache_root=tmp_path, refresh=True)
    assert len(CALLS) == 3


def test_a_cache_hit_is_judged_by_todays_claims_without_recompute(probe, tmp_path):
    """Claims read only the result, so a hit is judged again by the probe's ``check_claims``: a claim added
    (or corrected) after the entry was stored appears without a recompute or a VERSION bump."""
    cfg = MeanConfig.preset("smoke")
    first = cached_run("running_mean", cfg, cache_root=tmp_path, progress=False)
    assert [c.name for c in first.ledger.claims] == ["final_mean", "max_abs_error", "max_abs_error_full"]

    def check_claims(result):  # today's claims: one new, read from the stored arrays
        led = Ledger("running_mean", preset=result.config.preset_name)
        running = result.data["running_mean"].values
        led.identity(
            "final_mean_again",
            measured=float(running[-1]),
            expected=float(result.data["theory"].values[-1]),
            atol=1e-9,
            source="closed form",
            why="float64 summation of at most 4096 terms",
        )
        return led

    probe.check_claims = check_claims
    hit = cached_run("running_mean", cfg, cache_root=tmp_path, progress=False)
    assert len(CALLS) == 1 and hit.from_cache  # no recompute
    assert [c.name for c in hit.ledger.claims] == ["final_mean_again"] and hit.ledger.claims[0].status == "pass"
    assert hit.data.identical(first.data) and hit.scalars == first.scalars  # the stored measurement
    del probe.check_claims  # a probe without check_claims keeps the stored ledger
    kept = cached_run("running_mean", cfg, cache_root=tmp_path, progress=False)
    assert kept.ledger.to_dict() == first.ledger.to_dict()


def test_judged_refuses_a_result_of_another_probe(probe):
    other = types.SimpleNamespace(probe="something_else")
    with pytest.raises(ValueError, match="cannot judge a result of probe 'something_else'"):
        judged(probe, other)


def test_check_claims_must_be_a_function(probe):
    probe.check_claims = "not a function"
    with pytest.raises(ValueError, match="check_claims must be a function"):
        validate_probe(probe, "running_mean")


def test_cache_key_depends_on_version_and_config(probe):
    cfg = MeanConfig.preset("smoke")
    key = cache_key(probe, cfg)
    assert key == cache_key("running_mean", MeanConfig.preset("smoke"))
    assert key != cache_key(make_module(version="2"), cfg)
    assert key != cache_key(probe, cfg.replace(n=65, checkpoints=(1,)))
    assert key != cache_key(probe, cfg.replace(preset_name="full"))


def test_cache_recomputes_corrupt_entry(probe, tmp_path):
    cfg = MeanConfig.preset("smoke")
    first = cached_run(probe, cfg, cache_root=tmp_path)
    folder = tmp_path / "running_mean" / cache_key(probe, cfg)
    raw = bytearray((folder / "data.nc").read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    (folder / "data.nc").write_bytes(bytes(raw))
    with pytest.warns(RuntimeWarning, match="recomputing corrupt cache entry"):
        again = cached_run(probe, cfg, cache_root=tmp_path)
    assert len(CALLS) == 2 and not again.from_cache and again.identical(first)
    third = cached_run(probe, cfg, cache_root=tmp_path)  # the repaired entry is a hit
    assert third.from_cache and len(CALLS) == 2


def test_cache_rejects_entry_saved_under_another_key(probe, tmp_path):
    cfg = MeanConfig.preset("smoke")
    other = run_probe(probe, cfg.replace(slope=3.0))
    other.save(tmp_path / "running_mean" / cache_key(probe, cfg))  # no cache_key in meta
    with pytest.warns(RuntimeWarning, match="another key"):
        result = cached_run(probe, cfg, cache_root=tmp_path)
    assert result.config == cfg


def test_cache_root_defaults_to_workbench_cache(probe, tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path))
    cfg = MeanConfig.preset("smoke")
    cached_run(probe, cfg, progress=False)
    assert (tmp_path / "results" / "running_mean" / cache_key(probe, cfg) / "result.json").exists()


def test_a_field_declares_its_smoke_value_and_smoke_overrides_it():
    """param(..., smoke=v) puts v in the smoke preset (replicates_param declares 2, the fewest with a spread); the
    config's SMOKE entries win; the full preset stays the defaults."""
    from dataclasses import dataclass

    from analysis.probing.base import ProbeConfig, param, replicates_param

    @dataclass(frozen=True)
    class Config(ProbeConfig):
        SMOKE = {"b_seeds": 3}
        n: int = param(100, "draws", minimum=1, smoke=10)
        a_seeds: int = replicates_param("draws")
        b_seeds: int = replicates_param("draws")

    assert Config.presets()["smoke"] == {"n": 10, "a_seeds": 2, "b_seeds": 3}
    smoke, full = Config.preset("smoke"), Config.preset("full")
    assert (smoke.n, smoke.a_seeds, smoke.b_seeds) == (10, 2, 3) and (full.n, full.a_seeds, full.b_seeds) == (100, 5, 5)
