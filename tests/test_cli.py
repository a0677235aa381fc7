"""``python -m probes``: parsing of every field type, one-line usage errors (exit 2), JSON output.

The probe used here lives in a file written to a temporary folder and is found through
``WORKBENCH_PROBES``, so that a subprocess sees it too. Its arithmetic is real: the sum of the first
n squares (or integers) against Faulhaber's closed forms.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import probes
from analysis.core.paths import REPO
from analysis.probing import cli
from analysis.probing.base import Result

PROBE_SOURCE = textwrap.dedent(
    '''
    """Sum of the first n squares (or integers) against its closed form."""

    from __future__ import annotations

    from dataclasses import dataclass

    import numpy as np
    import xarray as xr

    from analysis.claims.ledger import Ledger
    from analysis.probing.base import ProbeConfig, Result, param

    NAME = "clifake"
    VERSION = "1"
    REQUIRES = None


    @dataclass(frozen=True)
    class Config(ProbeConfig):
        PRESETS = {"smoke": {"n": 5}, "full": {}}

        n: int = param(20, "number of terms", minimum=1)
        scale: float = param(1.0, "multiplies every term", minimum=0.0)
        squares: bool = param(True, "sum squares (true) or integers (false)")
        mode: str = param("exact", "how to sum", choices=("exact", "float"))
        layers: tuple[int, ...] = param((0, 1), "layers to report", minimum=0)
        lrs: tuple[float, ...] = param((0.1, 0.2), "learning rates")
        norms: tuple[str, ...] = param(("pre",), "norm placements", choices=("pre", "post", "peri"))
        seed: int | None = param(None, "optional seed", minimum=0)
        bias: float | None = param(None, "added to the sum, to make the claim fail on purpose")
        tag: str = param("run", "free-form label (100% free)")


    def run(config: Config, model=None, progress: bool = True) -> Result:
        n = config.n
        k = np.arange(1, n + 1, dtype=np.int64 if config.mode == "exact" else np.float64)
        terms = k**2 if config.squares else k
        partial = config.scale * np.cumsum(terms).astype(np.float64)  # (n,)
        total = float(partial[-1]) + (config.bias or 0.0)
        expected = config.scale * (n * (n + 1) * (2 * n + 1) / 6 if config.squares else n * (n + 1) / 2)
        led = Ledger(NAME, preset=config.preset_name)
        # the sums are integers below 2**53, exact in float64; `scale` adds one rounding: 1e-12 is ample.
        # The competing hypothesis: the other sum (squares <-> plain integers).
        other = config.scale * (n * (n + 1) / 2 if config.squares else n * (n + 1) * (2 * n + 1) / 6)
        led.predict("sum", measured=total, expected=expected, atol=1e-12 * abs(expected), alternative=other,
                    hypothesis="the other Faulhaber sum", source="Faulhaber", why="exact ints, one rounding")
        grid = np.outer(np.asarray(config.layers, float), np.asarray(config.lrs))  # (layer, lr)
        data = xr.Dataset(
            {"partial_sum": ("k", partial), "grid": (("layer", "lr"), grid)},
            coords={"k": np.arange(1, n + 1), "layer": list(config.layers), "lr": list(config.lrs)},
        )
        scalars = {"total": total, "n": n, "tag": config.tag}
        return Result(probe=NAME, config=config, data=data, scalars=scalars, ledger=led)
    '''
)


@pytest.fixture(scope="module")
def probe_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli_probe")
    (folder / "clifake.py").write_text(PROBE_SOURCE)
    return folder


@pytest.fixture
def fake(probe_dir, monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(probe_dir))
    monkeypatch.setenv("WORKBENCH_PROBES", "clifake")
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TQDM_DISABLE", "1")
    return probes.get("clifake")


def run_main(capsys, *args: str) -> tuple[int, str, str]:
    rc = cli.main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def run_subprocess(probe_dir, tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(probe_dir), str(REPO)]),
        "WORKBENCH_PROBES": "clifake",
        "WORKBENCH_CACHE": str(tmp_path / "cache"),
        "TQDM_DISABLE": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "probes", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


# ---------------------------------------------------------------------- parsing


def test_parse_every_field_type(fake):
    args = [
        "--preset",
        "smoke",
        "--n",
        "7",
        "--scale",
        "2.5e-1",
        "--squares",
        "FALSE",
        "--mode",
        "float",
        "--layers",
        "0, 2,3",
        "--lrs=-1e-3,0.5",
        "--norms",
        "pre,post",
        "--seed",
        "3",
        "--bias",
        "none",
        "--tag",
        "hello world",
    ]
    config, ns = cli.parse_config(fake, "clifake", args)
    assert config == fake.Config.preset(
        "smoke",
        n=7,
        scale=0.25,
        squares=False,
        mode="float",
        layers=(0, 2, 3),
        lrs=(-1e-3, 0.5),
        norms=("pre", "post"),
        seed=3,
        bias=None,
        tag="hello world",
    )
    assert type(config.scale) is float and config.squares is False
    assert ns.json is None and not ns.strict and not ns.no_progress


def test_parse_defaults_and_optional_none(fake):
    config, _ = cli.parse_config(fake, "clifake", [])
    assert config == fake.Config() and config.preset_name == "full"
    config, _ = cli.parse_config(fake, "clifake", ["--seed", "None", "--bias", "0.5", "--squares", "true"])
    assert config.seed is None and config.bias == 0.5 and config.squares is True
    config, _ = cli.parse_config(fake, "clifake", ["--n", "3", "--n", "4"])  # the last one wins
    assert config.n == 4


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "nope"], "unknown probe 'nope'; available: "),
        (["run", "clifake", "--nn", "3"], "unknown option --nn for probe clifake; fields: --n, --scale"),
        (["run", "clifake", "--sca", "2"], "unknown option --sca"),  # no abbreviations
        (["run", "clifake", "--bogus=1"], "unknown option --bogus "),
        (["run", "clifake", "stray"], "unexpected argument 'stray'"),
        (["run", "clifake", "--n", "x"], "--n must be an integer >= 1, got 'x'"),
        (["run", "clifake", "--n", "1.5"], "--n must be an integer"),
        (["run", "clifake", "--n", "0"], "n must be >= 1, got 0"),
        (["run", "clifake", "--n", "none"], "--n must be an integer"),
        (["run", "clifake", "--scale", "abc"], "--scale must be a number >= 0.0, got 'abc'"),
        (["run", "clifake", "--scale", "-1"], "scale must be >= 0.0, got -1.0"),
        (["run", "clifake", "--scale", "nan"], "scale must be a finite number"),
        (["run", "clifake", "--squares", "yes"], "--squares must be true or false, got 'yes'"),
        (["run", "clifake", "--mode", "fast"], "mode must be one of ['exact', 'float'], got 'fast'"),
        (["run", "clifake", "--layers", "0,x"], "--layers must be a comma-separated list"),
        (["run", "clifake", "--layers", ""], "layers must have at least 1 item"),
        (["run", "clifake", "--layers", "0,-1"], "layers[1] must be >= 0, got -1"),
        (
            ["run", "clifake", "--norms", "pre,mid"],
            "norms[1] must be one of ['pre', 'post', 'peri'], got 'mid'",
        ),
        (["run", "clifake", "--seed", "-2"], "seed must be >= 0, got -2"),
        (["run", "clifake", "--preset", "medium"], "preset must be one of ['smoke', 'full'], got 'medium'"),
        (
            ["run", "clifake", "--n"],
            "argument --n: expected one argument (a value starting with '-' is written --option=VALUE)",
        ),
        (["run"], "run needs a probe name; available: "),
        (["show", "nope"], "unknown probe 'nope'"),
        (["frobnicate"], "unknown command 'frobnicate'; allowed: list, show, run"),
    ],
)
def test_usage_errors_exit_2_with_one_line(fake, capsys, args, needle):
    rc, out, err = run_main(capsys, *args)
    assert rc == 2
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err  # exactly one line
    assert err.startswith("probes: error: ")
    assert needle in err
    assert "Traceback" not in err
    if needle.endswith("available: "):  # the list names every probe, the test's own among them
        assert "clifake" in err.split("available: ", 1)[1].strip().split(", ")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "nope"], "unknown probe 'nope'; available: "),
        (["run", "clifake", "--preset", "smoke", "--width", "3"], "unknown option --width for probe clifake"),
        (["run", "clifake", "--norms", "pre,mid"], "norms[1] must be one of ['pre', 'post', 'peri']"),
    ],
)
def test_usage_errors_in_a_subprocess(probe_dir, tmp_path, args, needle):
    proc = run_subprocess(probe_dir, tmp_path, *args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and needle in proc.stderr, proc.stderr
    if needle.endswith("available: "):  # the list names every probe, the test's own among them
        assert "clifake" in proc.stderr.split("available: ", 1)[1].strip().split(", ")


# ---------------------------------------------------------------------- running


def test_run_prints_summary(fake, capsys):
    rc, out, err = run_main(capsys, "run", "clifake", "--preset", "smoke", "--no-progress")
    assert rc == 0, err
    assert "probe clifake (preset smoke, version 1)" in out
    assert "total = 55" in out  # 1 + 4 + 9 + 16 + 25
    assert "checks: 1 claims: 1 agree, 0 disagree" in out


def test_json_to_stdout_is_only_json(fake, capsys):
    rc, out, _ = run_main(capsys, "run", "clifake", "--preset", "smoke", "--squares", "false", "--json", "-")
    assert rc == 0
    d = json.loads(out)
    assert d["probe"] == "clifake" and d["preset"] == "smoke" and d["version"] == "1"
    assert d["config"] == fake.Config.preset("smoke", squares=False).to_dict()
    assert d["scalars"] == {"total": 15.0, "n": 5, "tag": "run"}  # 5 * 6 / 2
    assert d["arrays"]["partial_sum"] == {"dims": ["k"], "values": [1.0, 3.0, 6.0, 10.0, 15.0], "attrs": {}}
    assert d["arrays"]["grid"]["dims"] == ["layer", "lr"]
    assert d["arrays"]["grid"]["values"] == [[0.0, 0.0], [0.1, 0.2]]
    assert d["coords"]["lr"]["values"] == [0.1, 0.2]
    [check] = d["checks"]
    assert check["name"] == "sum" and check["status"] == "pass" and check["expected"] == 15.0


def test_json_to_file_and_save(fake, capsys, tmp_path):
    target = tmp_path / "out" / "r.json"
    target.parent.mkdir()
    rc, out, _ = run_main(
        capsys, "run", "clifake", "--preset", "smoke", "--json", str(target), "--save", str(tmp_path / "res")
    )
    assert rc == 0 and f"wrote {target}" in out and "total = 55" in out
    d = json.loads(target.read_text())
    assert d["scalars"]["total"] == 55.0 and d["checks"][0]["status"] == "pass"
    loaded = Result.load(tmp_path / "res")
    assert loaded.config == fake.Config.preset("smoke") and loaded.scalars["total"] == 55.0


def test_strict_exits_1_only_when_a_claim_fails(fake, capsys):
    failing = ["run", "clifake", "--preset", "smoke", "--bias", "1"]
    rc, out, err = run_main(capsys, *failing)
    assert rc == 0 and "0 agree, 1 disagree" in out
    rc, out, err = run_main(capsys, *failing, "--strict")
    assert rc == 1 and "--strict: 1 claim(s) disagree: sum" in err
    rc, _, _ = run_main(capsys, "run", "clifake", "--preset", "smoke", "--strict")
    assert rc == 0


def test_against_alternatives_rejudges_predictions(fake, capsys):
    rc, out, _ = run_main(capsys, "run", "clifake", "--preset", "smoke", "--against-alternatives", "--json", "-")
    assert rc == 0
    [check] = json.loads(out)["checks"]
    assert check["status"] == "fail" and check["statement"].startswith("[against alternative 15:")
    # measured at the alternative (the plain sum 15 = the squares' 55 - 40), it passes against it
    rc, out, _ = run_main(
        capsys, "run", "clifake", "--preset", "smoke", "--bias", "-40", "--against-alternatives", "--json", "-"
    )
    assert json.loads(out)["checks"][0]["status"] == "pass"


def test_failing_identity_exits_1_without_strict(fake, capsys, monkeypatch):
    real_run = fake.run

    def broken_run(config, model=None, progress=True):
        result = real_run(config, model=model, progress=progress)
        result.ledger.identity("cumsum", measured=1.0, source="arithmetic", why="exact")  # |1 - 0| > 0: a bug
        return result

    monkeypatch.setattr(fake, "run", broken_run)
    rc, _, err = run_main(capsys, "run", "clifake", "--preset", "smoke", "--no-progress")
    assert rc == 1 and "1 identity claim(s) failed (a bug): cumsum" in err


def test_cache_option(fake, capsys, tmp_path):
    args = ["run", "clifake", "--preset", "smoke", "--cache"]
    rc, out, _ = run_main(capsys, *args)
    assert rc == 0 and "from cache" not in out
    rc, out, _ = run_main(capsys, *args)
    assert rc == 0 and "from cache" in out
    assert (tmp_path / "cache" / "results" / "clifake").is_dir()


def test_list_show_and_help(fake, capsys):
    rc, out, _ = run_main(capsys, "list")
    assert rc == 0
    rows = {line.split(maxsplit=1)[0]: line.split(maxsplit=1)[1] for line in out.splitlines()}
    assert rows["clifake"] == "Sum of the first n squares (or integers) against its closed form."
    rc, out, _ = run_main(capsys, "show", "clifake")
    assert rc == 0
    assert "--layers LIST[INT]  (default 0,1)" in out
    assert "--seed INT | NONE  (default none)" in out
    assert "how to sum; allowed: one of exact, float" in out
    assert "layers to report; allowed: a comma-separated list of integers >= 0" in out
    assert "  smoke: n=5\n  full: (the defaults)" in out
    assert "model requirements: takes no model" in out
    rc, out, _ = run_main(capsys, "run", "clifake", "--help")
    assert rc == 0 and "--norms" in out and "--strict" in out


def test_subprocess_end_to_end(probe_dir, tmp_path):
    proc = run_subprocess(probe_dir, tmp_path, "run", "clifake", "--preset", "smoke", "--n", "4", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["scalars"]["total"] == 30.0 and d["checks"][0]["status"] == "pass"  # 1 + 4 + 9 + 16


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # examples: the tier's hypothesis profile
@given(
    n=st.integers(1, 10**6),
    scale=st.floats(0.0, 1e300, allow_nan=False),
    layers=st.lists(st.integers(0, 99), min_size=1, max_size=4),
    lrs=st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=1, max_size=4),
    norms=st.lists(st.sampled_from(["pre", "post", "peri"]), min_size=1, max_size=3),
    seed=st.none() | st.integers(0, 2**31),
    squares=st.booleans(),
)
def test_values_printed_by_show_parse_back_exactly(fake, n, scale, layers, lrs, norms, seed, squares):
    # `show` prints defaults with cli._fmt; the same text given as --field=TEXT must give the value back
    want = fake.Config(
        n=n, scale=scale, layers=tuple(layers), lrs=tuple(lrs), norms=tuple(norms), seed=seed, squares=squares
    )
    args = [f"--{k}={cli._fmt(getattr(want, k))}" for k in ("n", "scale", "layers", "lrs", "norms", "seed", "squares")]
    config, _ = cli.parse_config(fake, "clifake", args)
    assert config == want


@pytest.mark.parametrize("option", ["--json", "--save"])
def test_unwritable_output_is_refused_before_the_run(fake, capsys, monkeypatch, tmp_path, option):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")

    def must_not_run(*args, **kwargs):
        raise AssertionError("the probe ran although its output could not be written")

    monkeypatch.setattr(fake, "run", must_not_run)
    rc, out, err = run_main(capsys, "run", "clifake", "--preset", "smoke", option, str(blocker / "out" / "r.json"))
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith(f"probes: error: {option}: cannot write to ")


def test_a_missing_output_folder_exits_2_before_the_probe_is_imported(tmp_path):
    """A file output needs an existing folder: the mistake is reported before the (heavy) probe module is
    imported or anything runs, even where the folder could be created (as root)."""
    code = (
        "import sys; from analysis.probing import cli; "
        f"rc = cli.main(['run', 'icl_gd', '--json', {str(tmp_path / 'missing' / 'x' / 'out.json')!r}]); "
        "print(rc, 'probes.icl_gd' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.stdout.split() == ["2", "False"], proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("probes: error: --json: cannot write to ") and "does not exist" in line
    assert not (tmp_path / "missing").exists()


def test_with_model_only_incompatibility_is_a_usage_error(fake, capsys, monkeypatch):
    from analysis.probing.base import ModelIncompatibleError

    monkeypatch.setattr(cli, "_load_model", lambda module, name, ns: object())
    monkeypatch.setattr(fake, "REQUIRES", {}, raising=False)  # takes any model

    def lacking(config, model=None, progress=True):
        raise ModelIncompatibleError("the model lacks blocks.{l}.attn.hook_attn_scores")

    monkeypatch.setattr(fake, "run", lacking)
    rc, _, err = run_main(capsys, "run", "clifake", "--preset", "smoke", "--model", "somewhere")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "hook_attn_scores" in err

    def buggy(config, model=None, progress=True):
        raise ValueError("an internal bug")

    monkeypatch.setattr(fake, "run", buggy)
    with pytest.raises(ValueError, match="an internal bug"):  # a bug keeps its traceback, never exit 2
        cli.main(["run", "clifake", "--preset", "smoke", "--model", "somewhere"])


# ---------------------------------------------------------------------- cache ls | size | prune


class _Shift:
    """Tiny token task (target = token + 1 mod 4) for the probe below, which trains a model."""

    name, input_kind, vocab_size, seq_len, d_in, d_out = "shift1", "tokens", 4, 4, 0, 0

    def config(self) -> dict:
        return {"name": self.name, "vocab_size": self.vocab_size, "seq_len": self.seq_len}

    def sample(self, batch_size, generator, device="cpu", dtype=None):
        import torch

        x = torch.randint(0, self.vocab_size, (batch_size, self.seq_len), generator=generator)
        return x, (x + 1) % self.vocab_size

    def loss(self, outputs, targets):
        import torch

        return torch.nn.functional.cross_entropy(outputs.flatten(0, 1), targets.flatten())


def _trained_probe():
    """A probe whose result comes from a trained checkpoint (with a snapshot). It does not name the
    checkpoint itself: ``run_probe`` records the runs ``train`` was asked for in ``meta["checkpoints"]``."""
    import types
    from dataclasses import dataclass

    import xarray as xr

    from analysis.probing.base import ProbeConfig, param

    @dataclass(frozen=True)
    class Config(ProbeConfig):
        PRESETS = {"smoke": {}, "full": {}}
        seed: int = param(0, "training seed", minimum=0)

    def run(config, model=None, progress=True):
        from analysis.training.train import TrainConfig, train
        from analysis.zoo.model import ModelConfig

        res = train(
            ModelConfig(vocab_size=4, d_model=8, n_layers=1, n_heads=1, d_mlp=0, seed=1),
            _Shift(),
            TrainConfig(steps=4, batch_size=4, lr=1e-2, seed=config.seed),
            progress=False,
            snapshots=(2,),
        )
        data = xr.Dataset({"loss": ("step", res.history["loss"])})
        return Result(probe="clitrained", config=config, data=data, scalars={"final_loss": res.final_loss})

    mod = types.ModuleType("clitrained", "Trains a tiny model and reports its loss.")
    mod.NAME, mod.VERSION, mod.REQUIRES, mod.Config, mod.run = "clitrained", "1", None, Config, run
    return mod


def _only(items):
    assert len(items) == 1, items
    return items[0]


@pytest.fixture
def filled_cache(fake, tmp_path, monkeypatch):
    """Real entries: two clifake results, a clitrained result with its checkpoint and snapshot, and the
    temporary folder a killed write leaves."""
    from analysis.training.checkpoints import CheckpointCache

    monkeypatch.setenv("WORKBENCH_FIGURES", str(tmp_path / "figs"))
    probes.register("clitrained", _trained_probe())
    try:
        small = probes.cached_run("clifake", fake.Config.preset("smoke"), progress=False)
        large = probes.cached_run("clifake", fake.Config.preset("smoke", n=6), progress=False)
        trained = probes.cached_run("clitrained", "smoke", progress=False)
        results = tmp_path / "cache" / "results"
        leftover = results / "clifake" / f".{small.meta['cache_key']}.x1y2z3.tmp"
        leftover.mkdir()
        (leftover / "data.nc").write_bytes(b"half")
        ckpts = CheckpointCache().list_entries()
        yield {
            "small": results / "clifake" / small.meta["cache_key"],
            "large": results / "clifake" / large.meta["cache_key"],
            "trained": results / "clitrained" / trained.meta["cache_key"],
            "checkpoint": _only(trained.meta["checkpoints"]),
            "checkpoints": ckpts,
            "leftover": leftover,
        }
    finally:
        probes.unregister("clitrained")


def _files_size(folder) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def test_cache_ls_and_size(filled_cache, capsys, tmp_path):
    from analysis.training.cache import entries

    c = filled_cache
    assert len(c["checkpoints"]) == 2 and c["checkpoint"] in c["checkpoints"]  # the run and its snapshot
    rc, out, err = run_main(capsys, "cache", "ls")
    assert rc == 0 and err == ""
    rows = [line.split() for line in out.splitlines()[1:-1]]
    by_key = {row[1]: row for row in rows}
    assert out.splitlines()[0].split() == ["kind", "key", "name", "size", "age"]
    for name in ("small", "large"):
        assert by_key[c[name].name][:3] == ["result", c[name].name, "clifake"]
    assert by_key[c["trained"].name][:3] == ["result", c["trained"].name, "clitrained"]
    snapshot = next(k for k in c["checkpoints"] if k != c["checkpoint"])
    assert by_key[c["checkpoint"]][0] == "checkpoint" and "snapshot@2" not in by_key[c["checkpoint"]]
    assert by_key[snapshot][0] == "checkpoint" and "snapshot@2" in by_key[snapshot]
    assert [row for row in rows if row[0] == "temp"] and len(rows) == 6
    found = {e.path: e for e in entries()}  # sizes are every byte inside
    for name in ("small", "large", "trained", "leftover"):
        assert found[c[name]].size == _files_size(c[name])
    rc, out, _ = run_main(capsys, "cache", "size")
    counts = {line.split()[0]: int(line.split()[1]) for line in out.splitlines()[1:-1]}
    assert rc == 0 and counts == {"result": 3, "checkpoint": 2, "temp": 1, "total": 6}
    assert sum(e.size for e in found.values()) == _files_size(tmp_path / "cache")


def test_cache_prune_older_than(filled_cache, capsys, fake):
    c = filled_cache
    ten_days_ago = time.time() - 10 * 86400
    os.utime(c["small"], (ten_days_ago, ten_days_ago))  # last used ten days ago
    rc, out, _ = run_main(capsys, "cache", "prune", "--older-than", "5")
    assert rc == 0 and f"removed result      {c['small'].name}" in out
    assert "removed 1 entries" in out and "kept 5 used within 5 days" in out
    assert not c["small"].exists() and c["large"].is_dir() and c["trained"].is_dir() and c["leftover"].is_dir()
    assert not probes.cached_run("clifake", fake.Config.preset("smoke")).from_cache  # gone: a miss
    assert probes.cached_run("clifake", fake.Config.preset("smoke", n=6)).from_cache
    rc, out, _ = run_main(capsys, "cache", "prune")
    assert rc == 0 and "removed 6 entries" in out  # the recomputed one, the rest and the leftover
    rc, out, _ = run_main(capsys, "cache", "ls")
    assert "is empty" in out
    assert not [p for p in c["small"].parent.parent.rglob("*") if p.is_file()]  # nothing half left


def test_cache_prune_keep_figures(filled_cache, capsys, tmp_path):
    from analysis.training.checkpoints import CheckpointCache

    c = filled_cache
    figs = tmp_path / "figs"
    figs.mkdir()
    sidecar = {"kind": "figure", "figure": "loss", "notebook": "00_x", "inputs": {"run": c["trained"].name}}
    (figs / "loss.json").write_text(json.dumps(sidecar))
    (figs / "00_x.claims.json").write_text(json.dumps({"claims": [], "inputs": {"no": c["small"].name}}))
    rc, out, _ = run_main(capsys, "cache", "prune", "--keep-figures")
    assert rc == 0 and "removed 3 entries" in out and "kept 3 used by the figures" in out
    assert c["trained"].is_dir() and sorted(CheckpointCache().list_entries()) == sorted(c["checkpoints"])
    assert not c["small"].exists() and not c["large"].exists() and not c["leftover"].exists()
    assert probes.cached_run("clitrained", "smoke").from_cache


def test_cache_prune_skips_an_entry_in_use(filled_cache, capsys):
    from analysis.core.io import entry_lock

    c = filled_cache
    with entry_lock(c["large"]):  # as a process computing or writing it holds it
        rc, out, _ = run_main(capsys, "cache", "prune")
    assert rc == 0 and "removed 5 entries" in out and "skipped 1 in use by another process" in out
    assert c["large"].is_dir() and not c["small"].exists()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["cache"], "cache needs a command; allowed: ls, size, prune"),
        (["cache", "rm"], "unknown cache command 'rm'; allowed: ls, size, prune"),
        (["cache", "prune", "--older-than", "abc"], "argument --older-than: must be a number of days >= 0, got 'abc'"),
        (["cache", "prune", "--older-than", "-1"], "argument --older-than: must be a number of days >= 0, got '-1'"),
        (["cache", "prune", "--older-than", "nan"], "argument --older-than: must be a number of days >= 0"),
        (["cache", "prune", "--older-than"], "argument --older-than: expected one argument"),
        (["cache", "prune", "--keep"], "unrecognized arguments: --keep"),
        (["cache", "ls", "--older-than", "3"], "unrecognized arguments: --older-than 3"),
        (["cache", "size", "extra"], "unrecognized arguments: extra"),
        (["cache", "prune", "--keep-figures"], "--keep-figures: no figures folder at "),
    ],
)
def test_cache_usage_errors_exit_2_with_one_line(filled_cache, capsys, args, needle):
    rc, out, err = run_main(capsys, *args)
    assert rc == 2 and out == ""
    assert err.startswith("probes: error: ") and err.count("\n") == 1 and needle in err, err
    assert filled_cache["small"].is_dir()  # nothing deleted


def test_cache_keep_figures_refuses_an_unreadable_figures_file(filled_cache, capsys, tmp_path):
    (tmp_path / "figs").mkdir()
    (tmp_path / "figs" / "broken.json").write_text('{"kind": "figure", "inputs": ')
    rc, out, err = run_main(capsys, "cache", "prune", "--keep-figures")
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert "--keep-figures: cannot read " in err and "broken.json" in err
    assert all(filled_cache[k].is_dir() for k in ("small", "large", "trained", "leftover"))


def test_cache_command_in_a_subprocess(probe_dir, tmp_path):
    proc = run_subprocess(probe_dir, tmp_path, "cache", "prune", "--older-than", "soon")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == "probes: error: argument --older-than: must be a number of days >= 0, got 'soon'\n"
    proc = run_subprocess(probe_dir, tmp_path, "cache", "size")
    assert proc.returncode == 0 and proc.stdout.splitlines()[-2].split() == ["total", "0", "0", "B"]


def test_keep_follows_a_checkpoint_to_its_snapshots_and_corpus(tmp_path, monkeypatch):
    """What ``--keep-figures`` keeps besides the named entries: every snapshot of a kept training run
    and the corpus whose text (``corpus_sha256`` of the task) the run was trained on."""
    import types

    import torch

    from analysis.core.io import sha256_bytes
    from analysis.data import corpus
    from analysis.training import cache
    from analysis.training.checkpoints import CheckpointCache, checkpoint_key

    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache"))
    text = "print('hello')\n" * 8
    spec = corpus.CorpusSpec()
    fake_corpus = types.SimpleNamespace(
        text=text, spec=spec, sha256=sha256_bytes(text.encode()), n_files=1, python_version="3"
    )
    corpus._store(fake_corpus, corpus.corpus_dir(spec), 0.0)
    meta = {
        "model": {"n_layers": 1},
        "task": {"kind": "corpus_lm", "corpus_sha256": fake_corpus.sha256},
        "train": {"steps": 2},
        "trainer_version": "t",
        "callback_id": None,
    }
    run = checkpoint_key(meta["model"], meta["task"], meta["train"], trainer_version="t")
    snap = checkpoint_key(meta["model"], meta["task"], meta["train"], trainer_version="t", extra={"snapshot": 1})
    other = checkpoint_key(meta["model"], meta["task"], {"steps": 3}, trainer_version="t")
    ckpts = CheckpointCache()
    ckpts.save_state(run, {"w": torch.zeros(2)}, meta)
    ckpts.save_state(snap, {"w": torch.ones(2)}, dict(meta, snapshot_step=1))
    ckpts.save_state(other, {"w": torch.ones(2)}, dict(meta, train={"steps": 3}))
    found = cache.entries()
    assert sorted(e.kind for e in found) == ["checkpoint", "checkpoint", "checkpoint", "corpus"]
    kept = {(e.kind, e.key) for e in cache.kept_by(found, {run})}
    assert kept == {("checkpoint", run), ("checkpoint", snap), ("corpus", spec.cache_key())}
    report = cache.prune(keep={run})
    assert [(e.kind, e.key) for e in report.removed] == [("checkpoint", other)]
    assert {(e.kind, e.key) for e in report.kept} == kept


def test_run_records_every_training_run_it_used(tmp_path, monkeypatch):
    """``run_probe`` records the key of every ``train`` call (nested ones too) and nothing for a probe that
    trains nothing; ``record_checkpoints`` blocks nest."""
    from analysis.training.train import record_checkpoints

    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache"))
    mod = _trained_probe()
    probes.register("clitrained", mod)
    try:
        with record_checkpoints() as outer:
            first = probes.run_probe("clitrained", "smoke", progress=False)
            second = probes.run_probe("clitrained", mod.Config.preset("smoke", seed=1), progress=False)
    finally:
        probes.unregister("clitrained")
    assert len(first.meta["checkpoints"]) == len(second.meta["checkpoints"]) == 1
    assert first.meta["checkpoints"] != second.meta["checkpoints"]  # the seed is part of the run key
    assert outer == {*first.meta["checkpoints"], *second.meta["checkpoints"]}
    from analysis.training.checkpoints import CheckpointCache

    assert set(first.meta["checkpoints"]) <= set(CheckpointCache().list_entries())


def test_run_cache_on_a_read_only_cache_is_one_line(probe_dir, tmp_path):
    """``run --cache`` where the cache cannot take the entry: exit 1 and one line naming the path, before
    the probe runs (a read-only cache still serves its hits: tests/test_faults.py)."""
    cache_root = tmp_path / "cache"
    cache_root.mkdir()
    (cache_root / "results").write_text("a file where the results folder should be")
    proc = run_subprocess(probe_dir, tmp_path, "run", "clifake", "--preset", "smoke", "--cache")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("probes: error: --cache: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert str(cache_root / "results") in proc.stderr
