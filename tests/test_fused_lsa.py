"""The hand-fused LSA loss (analysis/zoo/fused_lsa.py) against the plain autograd path, and its use by the trainer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from analysis.training.train import TrainConfig, forward, train, training_loss
from analysis.zoo import fused_lsa
from analysis.zoo.hooks import hooks
from probes import icl_gd as P


def _setup(dtype: str, batch: int = 64, init_std: float = 0.3, **model_over):
    cfg = P.Config.preset("smoke")
    model = P.TinyTransformer(P.model_config(cfg, 1, dtype=dtype).replace(init_std=init_std, **model_over))
    task = P.NegYReadoutTask(P.regression_task(cfg), hide_query=True)
    x, y = task.sample(batch, torch.Generator().manual_seed(3), dtype=model.config.torch_dtype)
    return model, task, x, y


def _rounding_bound(model, x, y, dtype: torch.dtype) -> list[torch.Tensor]:
    """Per entry, 2 gamma_k sum |terms| (Higham, Thm 3.5): each path's rounding error on a gradient entry is at
    most gamma_k times the sum of the absolute values of the products it sums, k the roundings on any
    product's way (its <= 6 factors, the B N products summed over tasks and context tokens, four inner
    products of length D). sum |terms| is the gradient's expansion evaluated at absolute values: the
    fused formulas applied to |tokens|, |weights| and |dL/d out|."""
    cfg = model.config
    W = [p.detach().abs() for p in model.parameters()]  # W_q, W_k, W_v, W_o
    with torch.no_grad():
        f = fused_lsa.forward_parts(x.abs(), *W, abs(cfg.scale), False)
        out = fused_lsa.forward_parts(x, *[p.detach() for p in model.parameters()], cfg.scale, True)["out"]
        g_abs = (out + y).abs() / x.shape[0]  # |dL/d out_q[-1]| = |pred - y| / B
        mags = fused_lsa.backward_parts(f["C"], f["e_q"], f["q"], f["Ca"], f["Cu"], g_abs, *W[1:], abs(cfg.scale))
    B, T, D = x.shape
    k = 6 + B * (T - 1) + 4 * D
    u = float(torch.finfo(dtype).eps) / 2
    gamma = k * u / (1 - k * u)
    return [2 * gamma * m for m in mags]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fused_gradients_equal_autograd_to_rounding(dtype):
    model, task, x, y = _setup(dtype)
    params = list(model.parameters())
    plain = task.loss(forward(model, task, x), y)
    g_plain = torch.autograd.grad(plain, params)
    fused = fused_lsa.query_readout_loss(model, x, y)
    g_fused = torch.autograd.grad(fused, params)
    tol = _rounding_bound(model, x, y, model.config.torch_dtype)
    for name, a, b, t in zip(("W_q", "W_k", "W_v", "W_o"), g_plain, g_fused, tol, strict=True):
        assert bool(((a - b).abs() <= t).all()), (name, float((a - b).abs().max()), float(t.max()))
        assert float(a.abs().max()) > 0  # not trivially equal
    # the loss: a sum of B squared errors, each out_q[-1] as above
    eps = float(torch.finfo(model.config.torch_dtype).eps)
    assert abs(float((plain - fused).detach())) <= 4 * (x.shape[0] + x.shape[1] * x.shape[2]) * eps * float(
        plain.detach()
    )


def test_fused_path_without_residual_and_with_branch_scale():
    model, task, x, y = _setup("float64", attn_residual=False, branch_scale=0.5)
    params = list(model.parameters())
    g_plain = torch.autograd.grad(task.loss(forward(model, task, x), y), params)
    g_fused = torch.autograd.grad(fused_lsa.query_readout_loss(model, x, y), params)
    tol = _rounding_bound(model, x, y, torch.float64)
    for a, b, t in zip(g_plain, g_fused, tol, strict=True):
        # the bound above is for branch_scale 1 and the residual; both only shrink the terms here
        assert bool(((a - b).abs() <= t).all())


def test_eligibility():
    model, task, x, y = _setup("float32")
    assert fused_lsa.eligible(model)
    assert task.fused_loss(model, x, y) is not None
    cfg = P.Config.preset("smoke")
    deep = P.TinyTransformer(P.model_config(cfg, 2))
    soft = P.TinyTransformer(P.model_config(cfg.replace(attention="softmax"), 1))
    assert not fused_lsa.eligible(deep) and not fused_lsa.eligible(soft)
    assert task.fused_loss(deep, x, y) is None
    visible = P.NegYReadoutTask(P.regression_task(cfg), hide_query=False)
    assert visible.fused_loss(model, x, y) is None  # the fused path hides the query
    with hooks(model, [("blocks.0.attn.hook_pattern", lambda t, n: None)]):
        assert not fused_lsa.eligible(model)  # a watched model runs its own forward
    with pytest.raises(ValueError, match="eligible"):
        fused_lsa.query_readout_loss(deep, x, y)


def test_trainer_takes_the_fused_path_and_stays_deterministic(monkeypatch):
    cfg = P.Config.preset("smoke")
    task = P.NegYReadoutTask(P.regression_task(cfg), hide_query=True)
    assert task.config()["fused"] == P.FUSED_LSA  # the path is part of the checkpoint key
    calls = []
    real = fused_lsa.query_readout_loss
    monkeypatch.setattr(fused_lsa, "query_readout_loss", lambda *a: calls.append(1) or real(*a))
    tcfg = TrainConfig(steps=5, batch_size=32, lr=1e-2, optimizer="adam", grad_clip=0.0, seed=0)
    runs = [train(P.model_config(cfg, 1), task, tcfg, cache=None, progress=False) for _ in range(2)]
    assert len(calls) == 10
    for a, b in zip(runs[0].model.state_dict().values(), runs[1].model.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    assert np.array_equal(runs[0].history["loss"], runs[1].history["loss"])
    # training_loss falls back to the plain path for a task without fused_loss
    inner = P.regression_task(cfg)
    assert not hasattr(inner, "fused_loss")
    model, _, x, y = _setup("float32")
    assert torch.equal(training_loss(model, task, x, y), real(model, x, y))
