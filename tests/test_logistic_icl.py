"""In-context classification: the normalised-GD closed forms, the softmax construction, the data and task."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from analysis.data.logistic_data import ClassificationLaw, OneStepGDTask, gd_step_torch, query_hidden_bias, tokens
from analysis.theory import logistic_icl as th
from probes.icl_gd import logistic as lg


def _prompts(B=64, d=4, n=12, seed=0):
    return ClassificationLaw(d, n).sample(B, np.random.default_rng(seed))


def test_gd_step_is_minus_the_gradient_of_log_mean_exp():
    """The closed-form gradient against central finite differences of L(w), in float64."""
    Z, _ = _prompts()
    w = np.random.default_rng(1).standard_normal((Z.shape[0], Z.shape[2]))
    g = th.lse_grad(w, Z)
    h = 1e-6
    fd = np.stack(
        [(th.lse_loss(w + h * e, Z) - th.lse_loss(w - h * e, Z)) / (2 * h) for e in np.eye(Z.shape[2])], axis=-1
    )
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(th.gd_step(w, Z, 0.7), w - 0.7 * g, rtol=0, atol=1e-15)


def test_gd_decreases_the_loss_and_first_step_is_the_mean_direction():
    Z, _ = _prompts()
    it = th.gd_iterates(Z, 0.5, 6)
    losses = np.stack([th.lse_loss(w, Z) for w in it])
    assert np.all(np.diff(losses, axis=0) < 0)  # eta = 0.5 <= 1 / max|z|^2 would guarantee it; holds here too
    # uniform weights 1/n summed against a mean: n-term sums, <= 2 n u max|z| apart (times eta)
    tol = 2 * Z.shape[1] * np.finfo(float).eps * 0.5 * np.abs(Z).max()
    np.testing.assert_allclose(it[1], 0.5 * Z.mean(axis=1), rtol=0, atol=tol)
    cos = th.mean_direction_cosine(Z, it)
    np.testing.assert_allclose(cos[1], 1.0, atol=1e-14)
    assert np.all(cos[3] < 1 - 1e-6)  # later steps leave the class-mean direction


def test_construction_runs_gd_within_the_rounding_bound_and_loops_exactly():
    Z, _ = _prompts()
    it = th.gd_iterates(Z, 1.0, 4)
    one = lg.construction_model(Z.shape[2], 1.0)
    for t in range(4):
        err = np.linalg.norm(lg.query_w(one, Z, it[t]) - it[t + 1], axis=-1)
        assert np.all(err <= th.step_rounding_bound(Z, it[t], 1.0))
    four = lg.construction_model(Z.shape[2], 1.0, loops=4)
    w4 = lg.query_w(four, Z, np.zeros_like(it[0]))
    np.testing.assert_allclose(w4, it[4], rtol=1e-12, atol=1e-12)


def test_a_wrong_construction_breaks_the_identity():
    """W_k = +I instead of -I gives softmax(+Z w): the step then moves towards the largest margins."""
    Z, _ = _prompts()
    it = th.gd_iterates(Z, 1.0, 2)
    bad = lg.construction_model(Z.shape[2], 1.0)
    with torch.no_grad():
        bad.blocks[0].attn.W_k.weight.mul_(-1)
    err = np.linalg.norm(lg.query_w(bad, Z, it[1]) - it[2], axis=-1)
    assert err.max() > 1e6 * th.step_rounding_bound(Z, it[1], 1.0).max()


def test_law_is_separable_and_backends_agree_in_shape():
    Z, w = _prompts()
    assert np.all(np.einsum("bnd,bd->bn", Z, w) >= 0)  # z_i . w* = |x_i . w*| >= 0
    Zt, wt = ClassificationLaw(4, 12).sample(8, torch.Generator().manual_seed(0), dtype=torch.float64)
    assert Zt.shape == (8, 12, 4) and wt.shape == (8, 4)
    assert torch.all(torch.einsum("bnd,bd->bn", Zt, wt) >= 0)


def test_task_targets_are_one_gd_step_and_context_w_slots_vary():
    task = OneStepGDTask(d=3, n=7, eta=0.8, w_radius=2.0)
    x, y = task.sample(16, torch.Generator().manual_seed(0), dtype=torch.float64)
    assert x.shape == (16, 8, 6) and y.shape == (16, 6)
    Z, w = x[:, :-1, :3], x[:, -1, 3:]
    assert torch.all(x[:, -1, :3] == 0)
    torch.testing.assert_close(y[:, 3:], gd_step_torch(w, Z, 0.8), rtol=0, atol=1e-12)
    assert torch.all(y[:, :3] == 0)
    ctx_w = x[:, :-1, 3:]
    assert torch.all(ctx_w.norm(dim=-1) <= 2.0 + 1e-12) and ctx_w.std() > 0.1  # per-token draws, not zeros
    assert task.loss(torch.cat([x[:, :-1], y[:, None]], dim=1), y).item() == 0.0
    bias = task.attn_bias(8)
    assert torch.isinf(bias[:, -1]).all() and (bias[:, :-1] == 0).all()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"d": 0}, "d must be"),
        ({"n": 0}, "n must be"),
        ({"eta": -1.0}, "eta must be"),
        ({"w_radius": -1.0}, "w_radius"),
    ],
)
def test_bad_task_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        OneStepGDTask(**kwargs)


def test_bad_rng_and_steps():
    with pytest.raises(ValueError, match="rng must be a numpy Generator or a torch.Generator"):
        ClassificationLaw(2, 3).sample(4, 0)
    with pytest.raises(ValueError, match="steps must be"):
        th.gd_iterates(np.zeros((1, 2, 2)), 1.0, -1)


def test_tokens_layout():
    Z, w = _prompts(B=2, d=2, n=3)
    x = tokens(Z, w[:, ::-1].copy())
    assert x.shape == (2, 4, 4)
    np.testing.assert_array_equal(x[:, :3, :2], Z)
    np.testing.assert_array_equal(x[:, :3, 2:], 0)
    np.testing.assert_array_equal(x[:, 3, 2:], w[:, ::-1])
    assert query_hidden_bias(4)[0, -1] == -np.inf


def test_replicate_seeds_of_two_runs_are_disjoint():
    """The trained layers' seeds are replicate seeds: replicate 0 is the run's seed, and runs with seed 0 and
    seed 1 share no layer (seed + i would share all but one)."""
    from types import SimpleNamespace

    s0, s1 = (lg.seeds(SimpleNamespace(seed=s, logistic=SimpleNamespace(seeds=5))) for s in (0, 1))
    assert s0[0] == 0 and s1[0] == 1 and len(set(s0)) == 5 and not set(s0) & set(s1)
    assert lg.model_config(4, s1[3]).seed == s1[3]
