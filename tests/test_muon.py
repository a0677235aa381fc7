"""Muon in the trainer (analysis.training.muon): its update is the Newton–Schulz map of the momentum, its AdamW part is
torch's AdamW, it trains a tiny model deterministically, and it moves no existing cache key."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from analysis.theory import muon as theory
from analysis.training.muon import Muon, is_hidden_matrix, muon_optimizer
from analysis.training.train import TrainConfig, train
from analysis.zoo.model import ModelConfig, TinyTransformer


def test_muon_fields_move_no_existing_key():
    assert not {"muon_lr", "muon_momentum"} & set(TrainConfig().to_dict())
    assert {"muon_lr", "muon_momentum"} <= set(TrainConfig(optimizer="muon", muon_lr=0.01, muon_momentum=0.9).to_dict())
    with pytest.raises(ValueError, match="muon_lr"):
        TrainConfig(optimizer="muon", muon_lr=0.0)
    with pytest.raises(ValueError, match="optimizer"):
        TrainConfig(optimizer="lion")


def test_a_muon_step_is_the_newton_schulz_map_of_the_nesterov_momentum():
    """First step: B = G, U = G + mu G; the update is -lr * U_svd phi^5(S_U / (|U|_F + eps)) V^T * sqrt(rows/cols)."""
    rng = np.random.default_rng(0)
    rows, cols, lr, mu = 6, 4, 0.05, 0.9
    w0 = torch.tensor(rng.normal(size=(rows, cols)))
    p = torch.nn.Parameter(w0.clone())
    s = np.array([3.0, 2.0, 1.0, 0.5])
    u, _ = np.linalg.qr(rng.normal(size=(rows, rows)))
    v, _ = np.linalg.qr(rng.normal(size=(cols, cols)))
    g = (u[:, :cols] * s) @ v.T
    p.grad = torch.tensor(g)
    opt = Muon([dict(params=[p], kind="muon", momentum=mu, nesterov=True, weight_decay=0.0)])
    opt.param_groups[0]["lr"] = lr
    opt.step()
    norm_u = (1 + mu) * np.linalg.norm(s)  # U = (1 + mu) G; the iteration divides by |U|_F + 1e-7
    mapped = theory.phi_iterated((1 + mu) * s / (norm_u + 1e-7), 5)
    expected = w0.numpy() - lr * math.sqrt(rows / cols) * (u[:, :cols] * mapped) @ v.T
    np.testing.assert_allclose(p.detach().numpy(), expected, rtol=0, atol=1e-12)
    m, top = theory.band()
    assert ((mapped >= m) & (mapped <= top)).all()  # none of these is small enough to be left behind


def test_the_adamw_part_is_torch_adamw():
    torch.manual_seed(0)
    a = torch.nn.Parameter(torch.randn(5, 3, dtype=torch.float64))
    b = torch.nn.Parameter(a.detach().clone())
    ours = Muon([dict(params=[a], kind="adamw", betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1)])
    ref = torch.optim.AdamW([b], lr=0.01, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1, foreach=False)
    for step in range(5):
        grad = torch.randn(5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(step))
        a.grad, b.grad = grad.clone(), grad.clone()
        ours.param_groups[0]["lr"] = 0.01
        ours.step()
        ref.step()
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-13, atol=1e-15)


def test_groups_split_the_blocks_matrices_from_the_rest():
    model = TinyTransformer(ModelConfig(vocab_size=16, d_model=16, n_layers=2, n_heads=2, max_len=8))
    opt = muon_optimizer(model, TrainConfig(optimizer="muon", lr=1e-3, muon_lr=0.02))
    kinds = {id(p): g["kind"] for g in opt.param_groups for p in g["params"]}
    for name, p in model.named_parameters():
        assert kinds[id(p)] == ("muon" if name.startswith("blocks.") and p.dim() == 2 else "adamw"), name
        assert is_hidden_matrix(name, p) == (kinds[id(p)] == "muon")
    assert opt.param_groups[0]["lr_scale"] == pytest.approx(20.0)


def test_muon_trains_a_tiny_model_deterministically():
    from analysis.data.tasks import MarkovLanguage

    task = MarkovLanguage(vocab_size=12, seq_len=16)
    mcfg = ModelConfig(vocab_size=12, d_model=32, n_layers=2, n_heads=4, max_len=16, seed=3)
    tcfg = TrainConfig(steps=60, batch_size=16, lr=3e-3, warmup_steps=5, optimizer="muon", muon_lr=0.02, seed=3)
    first = train(mcfg, task, tcfg, cache=None, progress=False)
    again = train(mcfg, task, tcfg, cache=None, progress=False)
    loss = first.history["loss"]
    assert np.isfinite(loss).all() and loss[-10:].mean() < loss[:5].mean() - 0.1
    for k, v in first.model.state_dict().items():
        assert torch.equal(v, again.model.state_dict()[k]), k


def test_a_muon_state_packs_and_resumes_bit_for_bit():
    """The partial state a run saves (safetensors + JSON) restores Muon's buffers and AdamW's moments exactly."""
    import json

    from analysis.training.train_state import _pack_state, _unpack_state

    cfg = TrainConfig(optimizer="muon", lr=1e-3, muon_lr=0.02)
    mcfg = ModelConfig(vocab_size=16, d_model=16, n_layers=2, n_heads=2, max_len=8, seed=1)
    x = torch.randint(0, 16, (4, 8), generator=torch.Generator().manual_seed(0))

    def step(model, opt):
        opt.zero_grad()
        model(x).float().logsumexp(-1).mean().backward()
        for g in opt.param_groups:
            g["lr"] = 1e-3
        opt.step()

    a = TinyTransformer(mcfg)
    opt_a = muon_optimizer(a, cfg)
    for _ in range(3):
        step(a, opt_a)
    tensors, state = _pack_state(a, opt_a, torch.zeros(1), 3, {"loss": [1.0, 0.9, 0.8]})
    state = json.loads(json.dumps(state))  # what the cache stores
    b = TinyTransformer(mcfg)
    opt_b = muon_optimizer(b, cfg)
    _unpack_state({k: v.clone() for k, v in tensors.items()}, state, b, opt_b)
    step(a, opt_a)
    step(b, opt_b)
    for k, v in a.state_dict().items():
        assert torch.equal(v, b.state_dict()[k]), k
