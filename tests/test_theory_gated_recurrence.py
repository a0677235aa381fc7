"""Theory of gated linear recurrences (analysis/theory/gated_recurrence.py), against independent computations."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from analysis.theory import gated_recurrence as gth
from analysis.zoo.recurrent import parallel_form


def _weights(gen, d, H, dh):
    return [torch.randn(H * dh, d, generator=gen, dtype=torch.float64) for _ in range(3)] + [
        torch.randn(d, H * dh, generator=gen, dtype=torch.float64)
    ]


@pytest.mark.parametrize("gated", [False, True])
def test_gated_rnn_equals_linear_attention_through_the_recurrent_mixer(gated):
    gen = torch.Generator().manual_seed(0)
    B, T, d, H, dh, scale = 3, 9, 5, 2, 3, 0.7
    Wq, Wk, Wv, Wo = _weights(gen, d, H, dh)
    x = torch.randn(B, T, d, generator=gen, dtype=torch.float64)
    gate = torch.rand(B, T, H, generator=gen, dtype=torch.float64) * 0.9 + 0.05 if gated else None
    w = gth.lsa_as_gated_rnn(Wq, Wk, Wv, Wo, H, scale)
    assert w["A"].shape == (H * dh * dh, d) and w["O"].shape == (d, H * dh * dh)
    units = None if gate is None else gth.head_gate_units(gate, dh)
    y = gth.gated_rnn(x, w["A"], w["B"], w["C"], w["O"], units)
    # independent: analysis.zoo.recurrent's attention-like form (cumulative-log decay mask), heads concatenated
    q, k, v = ((x @ W.T).view(B, T, H, dh).transpose(1, 2) for W in (Wq, Wk, Wv))
    log_alpha = None if gate is None else gate.log().transpose(1, 2)
    z, _ = parallel_form(scale * q, k, v, log_alpha=log_alpha)
    ref = z.transpose(1, 2).reshape(B, T, H * dh) @ Wo.T
    assert torch.allclose(y, ref, rtol=0, atol=1e-12 * float(ref.abs().max()))
    again = gth.causal_lsa(x, Wq, Wk, Wv, Wo, H, scale, gate)
    assert torch.allclose(again, ref, rtol=0, atol=1e-12 * float(ref.abs().max()))


def test_the_rnn_without_its_output_gate_is_not_attention():
    gen = torch.Generator().manual_seed(1)
    Wq, Wk, Wv, Wo = _weights(gen, 4, 1, 4)
    x = torch.randn(2, 6, 4, generator=gen, dtype=torch.float64)
    w = gth.lsa_as_gated_rnn(Wq, Wk, Wv, Wo, 1)
    y = gth.gated_rnn(x, w["A"], w["B"], torch.ones_like(w["C"]), w["O"])
    assert (y - gth.causal_lsa(x, Wq, Wk, Wv, Wo, 1)).abs().max() > 1e-3


def test_order_position_pmf_matches_sampled_positions():
    L, n, R = 9, 3, 200_000
    rng = np.random.default_rng(0)
    pos = np.sort(np.argsort(rng.random((R, L)), axis=1)[:, :n], axis=1)
    pmf = gth.order_position_pmf(L, n)
    assert np.allclose(pmf.sum(-1), 1.0, atol=1e-12)
    emp = np.stack([np.bincount(pos[:, j], minlength=L) / R for j in range(n)])
    assert np.abs(emp - pmf).max() < 5 * math.sqrt(0.25 / R)


def test_fixed_tap_accuracy_is_the_best_one_tap_readout_by_simulation():
    from analysis.data.tasks import SelectiveCopying

    task = SelectiveCopying(n_copy=3, n_values=4, length=8, spacing="random")
    x, y = task.sample(100_000, torch.Generator().manual_seed(2))
    region, targets = x[:, : task.length], y[:, task.length :]
    # every one-tap read-out (output j copies position p; a blank gives a fixed guess, the best any can do)
    best = []
    for j in range(task.n_copy):
        accs = [
            float(((region[:, p] == targets[:, j]) | ((region[:, p] == 0) & (targets[:, j] == 2))).double().mean())
            for p in range(task.length)
        ]
        best.append(max(accs))
    theory = gth.fixed_tap_accuracy(task.length, task.n_copy, task.n_values)
    assert abs(np.mean(best) - theory) < 5 * math.sqrt(0.25 / 100_000)
    assert gth.fixed_tap_accuracy(8, 3, 4, "fixed") == 1.0
    with pytest.raises(ValueError, match="spacing"):
        gth.fixed_tap_accuracy(8, 3, 4, "sometimes")


def test_linear_predictor_loss_is_the_least_squares_floor():
    from analysis.data.tasks import LinearRegressionTask

    d, N, sigma, R = 3, 4, 0.5, 200_000
    law = LinearRegressionTask(d=d, n_points=N, x_dist="gaussian", noise_std=sigma).law
    b = law.sample(R, N, np.random.default_rng(3))
    feats = np.concatenate([b.x_ctx.reshape(R, -1), b.y_ctx, b.x_q, np.ones((R, 1))], axis=1)
    coef, *_ = np.linalg.lstsq(feats, b.y_q, rcond=None)
    fitted = float(np.mean((feats @ coef - b.y_q) ** 2))
    floor = gth.linear_predictor_loss(d, sigma)
    sq = b.y_q**2
    assert abs(fitted - floor) < 5 * float(sq.std()) / math.sqrt(R) + feats.shape[1] * floor / R
