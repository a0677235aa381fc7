"""The ``device`` knob (``cpu`` | ``cuda`` | ``auto``): resolution, refusal without a GPU, unchanged CPU keys
and numbers, and the GPU routing of sweeps. The tests marked ``cuda`` run only where torch sees a GPU
(``bench/gpu_check.sh`` runs them there); everything else runs on every machine."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
import torch

import probes
from analysis.core import devices
from analysis.core.devices import model_device, resolve_device, to_numpy, train_key_extra
from analysis.core.paths import REPO
from analysis.data.tasks import MarkovLanguage
from analysis.probing import cli
from analysis.probing.base import run_probe
from analysis.training.checkpoints import checkpoint_key
from analysis.training.train import TRAINER_VERSION, TrainConfig, train
from analysis.zoo.model import ModelConfig, TinyTransformer

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="torch sees no CUDA device on this machine")
no_cuda = pytest.mark.skipif(CUDA, reason="this machine has a GPU: device='cuda' is accepted here")


def test_resolve_device(monkeypatch):
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")
    monkeypatch.setattr(devices, "cuda_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    with pytest.raises(ValueError, match=r"^device='cuda' but torch sees no CUDA device here; allowed: cpu, auto"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match=r"^device must be one of cpu, cuda, auto, got 'tpu0'"):
        resolve_device("tpu0")
    assert resolve_device("cuda:1") == torch.device("cuda", 1)  # library callers may name a device exactly


def test_to_numpy_and_model_device():
    t = torch.arange(3.0, requires_grad=True)
    assert to_numpy(t * 2).tolist() == [0.0, 2.0, 4.0]
    m = TinyTransformer(ModelConfig(n_layers=1, d_model=8, n_heads=2, vocab_size=5, max_len=4))
    assert model_device(m) == torch.device("cpu") and model_device(torch.nn.Identity()) == torch.device("cpu")


def test_checkpoint_keys_name_only_a_non_cpu_training_device():
    assert train_key_extra("cpu") is None and train_key_extra(torch.device("cpu")) is None
    assert train_key_extra("cuda") == {"device": "cuda"} == train_key_extra(torch.device("cuda", 0))
    mcfg = ModelConfig(n_layers=1, d_model=8, n_heads=2, vocab_size=6, max_len=8)
    task = MarkovLanguage(vocab_size=6, seq_len=8, seed=0)
    tcfg = TrainConfig(steps=2, batch_size=2, warmup_steps=0, eval_every=0, seed=0)
    res = train(mcfg, task, tcfg, device="cpu", cache=None, progress=False)
    # a CPU run keeps the key it always had (no device in it); a GPU-trained entry gets its own
    plain = checkpoint_key(mcfg, task.config(), tcfg, trainer_version=TRAINER_VERSION)
    gpu = checkpoint_key(mcfg, task.config(), tcfg, trainer_version=TRAINER_VERSION, extra=train_key_extra("cuda"))
    assert res.key == plain != gpu


def test_every_probe_has_the_device_field():
    for name in probes.available():
        Config = probes.get(name).Config
        spec = {s.name: s for s in Config.field_specs()}["device"]
        assert spec.choices == ("cpu", "cuda", "auto") and spec.omit_at_default
        assert Config.preset("smoke").device == "cpu"
        with pytest.raises(ValueError, match=r"^device must be one of"):
            Config.preset("smoke", device="gpu")


def _same(a, b) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def test_auto_without_a_gpu_gives_the_cpu_numbers(monkeypatch):
    monkeypatch.setattr(devices, "cuda_available", lambda: False)
    cfg = probes.get("signal_propagation").Config.preset("smoke")
    cpu = run_probe("signal_propagation", cfg, progress=False)
    auto = run_probe("signal_propagation", cfg.replace(device="auto"), progress=False)
    assert cpu.meta["device"] == auto.meta["device"] == "cpu"
    assert cpu.data.identical(auto.data)
    assert all(_same(cpu.scalars[k], auto.scalars[k]) for k in cpu.scalars)
    assert [(c.name, c.status) for c in cpu.ledger.claims] == [(c.name, c.status) for c in auto.ledger.claims]


@no_cuda
def test_cuda_without_a_gpu_is_refused_before_running(capsys, tmp_path):
    cfg = probes.get("signal_propagation").Config.preset("smoke", device="cuda")  # a config may name it...
    with pytest.raises(ValueError, match=r"^device='cuda' but torch sees no CUDA device"):
        run_probe("signal_propagation", cfg, progress=False)  # ...a run on this machine may not
    assert cli.main(["run", "signal_propagation", "--preset", "smoke", "--device", "cuda"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["probes: error: --device: device='cuda' but torch sees no CUDA device here; allowed: cpu, auto"]
    out = tmp_path / "s.nc"
    for scheduler in ("none", "local"):
        args = ["sweep", "signal_propagation", "--preset", "smoke", "--grid", "n_heads=1,2", "--device", "cuda"]
        assert cli.main([*args, "--scheduler", scheduler, "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == ["probes: error: --device cuda: torch sees no CUDA device here; allowed: cpu, auto"]
    assert not out.exists()


def test_cuda_points_need_workers_with_the_gpu_resource(tmp_path):
    """A real LocalCluster whose worker declares no GPU: a sweep of device='cuda' points is refused before
    anything is submitted, naming the resource and how to start such a worker."""
    from analysis.probing.sweep import local_client

    with local_client(1) as client:
        with pytest.raises(ValueError, match=r"device='cuda' points run one per GPU on workers that declare the GPU"):
            probes.sweep(
                "signal_propagation",
                {"n_heads": [1, 2]},
                preset="smoke",
                base={"device": "cuda"},
                client=client,
                cache_root=tmp_path,
                progress=False,
            )
    assert not any(tmp_path.iterdir())  # no point ran


@no_cuda
def test_local_gpu_cluster_refused_without_a_gpu():
    from analysis.probing.sweep import local_client

    with pytest.raises(ValueError, match=r"^device='cuda': torch sees no CUDA device here"):
        with local_client(2, gpus=True):
            pass


# ---------------------------------------------------------------------- on a GPU (bench/gpu_check.sh)

# A CUDA run against the CPU one. Identities are exact algebra at either device's rounding: they must hold on
# the GPU as on the CPU, and the GPU run makes the same claims. Other claims compare measurements that the
# GPU's kernels round differently (float32 matmuls accumulate in another order; training amplifies it), so no
# tolerance is asserted for them yet: the largest relative scalar difference and the claims whose status
# differs are printed, for bench/gpu_check.sh to record until a GPU run fixes the tolerances.


@needs_cuda
@pytest.mark.parametrize("name", probes.available())
def test_smoke_on_cuda_keeps_every_identity(name):
    cfg = probes.get(name).Config.preset("smoke")
    cpu = run_probe(name, cfg, progress=False)
    gpu = run_probe(name, cfg.replace(device="cuda"), progress=False)
    assert gpu.meta["device"].startswith("cuda")
    assert not gpu.ledger.broken, [c.name for c in gpu.ledger.broken]
    assert [c.name for c in gpu.ledger.claims] == [c.name for c in cpu.ledger.claims]
    worst = {
        k: abs(gpu.scalars[k] - v) / max(abs(v), 1e-12)
        for k, v in cpu.scalars.items()
        if isinstance(v, float) and math.isfinite(v) and isinstance(gpu.scalars.get(k), float)
    }
    changed = [c.name for c, d in zip(cpu.ledger.claims, gpu.ledger.claims, strict=True) if c.status != d.status]
    print(
        f"\n{name}: largest relative scalar difference cuda/cpu {max(worst.values(), default=0):.2e}; "
        f"claims whose status differs: {changed}"
    )


@needs_cuda
def test_sweep_on_a_local_gpu_cluster(tmp_path):
    code = (
        "import probes\nfrom analysis.probing.sweep import local_client\n"
        "if __name__ == '__main__':\n"
        "    with local_client(2, gpus=True) as c:\n"
        "        ds = probes.sweep('signal_propagation', {'n_heads': [1, 2]}, preset='smoke',"
        f" base={{'device': 'cuda'}}, client=c, cache_root={str(tmp_path)!r}, progress=False)\n"
        "    assert not ds['failed'].any(), ds['error'].values\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=600)
