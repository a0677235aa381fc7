"""analysis/theory/width.py: the premises of the derived exponents, checked by Monte Carlo and brute force in float64,
and the exponents' structure (what muP changes is exactly its learning-rate, backward and multiplier terms)."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.theory import width as th


def test_adams_first_step_moves_an_output_by_lr_times_fan_in():
    """The Adam rows' premise: E|sum_j sign(G_ij) x_j| / d does not depend on d (Monte Carlo, 4 positions)."""
    rng = np.random.default_rng(0)
    small = th.fan_in_correlation(64, 4, 2000, rng)
    large = th.fan_in_correlation(1024, 4, 500, rng)
    assert small > 0.2  # a correlation of order one, not sqrt(1/d)
    assert large == pytest.approx(small, rel=0.1)


def test_sgd_on_a_linear_layer_moves_it_by_lr_delta_fan_in():
    """Brute force: a read-out y = W x (W N(0, 1/d)) on a squared loss, one SGD step; dW x grows like d (exponent
    lr 0 + delta 0 + fan-in 1 of the read-out row) and an Adam step likewise."""
    rng = np.random.default_rng(1)
    widths = np.array([64, 128, 256, 512, 1024])
    for opt in ("sgd", "adam"):
        sizes = []
        for d in widths:
            x = rng.standard_normal((4, d))
            w = rng.standard_normal((3, d)) / np.sqrt(d)
            g = (x @ w.T - rng.standard_normal((4, 3))).T @ x  # dL/dW of 0.5 |W x - t|^2 summed over 4 inputs
            dw = -0.01 * (g if opt == "sgd" else np.sign(g))
            sizes.append(np.sqrt(((x @ dw.T) ** 2).mean()))
        slope = np.polyfit(np.log(widths), np.log(sizes), 1)[0]
        assert slope == pytest.approx(th.own_update_exponent("readout", opt, "standard"), abs=0.1)


@pytest.mark.parametrize("mixer", th.MIXERS)
def test_mup_changes_exactly_its_learning_rate_backward_and_multiplier_terms(mixer):
    for layer in th.MIXER_LAYERS[mixer]:
        mult = -1.0 if layer == "readout" else 0.0
        for opt in th.OPTIMIZERS:
            diff = th.own_update_exponent(layer, opt, "mup", mixer) - th.own_update_exponent(
                layer, opt, "standard", mixer
            )
            d_lr = th.lr_exponent(layer, opt, "mup") - th.lr_exponent(layer, opt, "standard")
            d_back = th.backward_exponent(layer, mixer, "mup") - th.backward_exponent(layer, mixer, "standard")
            assert diff == d_lr + mult + (d_back if opt == "sgd" else 0.0), (layer, opt)
        # muP keeps Adam's first update at the base width's scaling wherever the layer's input is O(1)
        if th.input_exponent(layer, mixer) == 0.0:
            assert th.own_update_exponent(layer, "adam", "mup", mixer) == 0.0


def test_depth_exponents():
    assert th.branch_sum_exponent("standard") == 0.5
    for alpha in (0.5, 1.0):
        assert th.branch_sum_exponent("depth_mup", alpha) == 0.5 - alpha
    assert th.block_update_exponent("depth_mup") + 1 == th.stream_update_exponent("depth_mup") == 0.0
    assert th.stream_update_exponent("standard") == 1.0


def test_a_branch_sum_of_uncorrelated_branches_grows_like_root_L():
    """The branch-sum premise: 2L independent O(1) branches times (L0/L)^alpha: RMS slope 1/2 - alpha (brute force)."""
    rng = np.random.default_rng(2)
    depths = np.array([2, 4, 8, 16, 32])
    for alpha in (0.0, 0.5, 1.0):
        rms = [np.sqrt((((2 / L) ** alpha * rng.standard_normal((2 * L, 4000))).sum(0) ** 2).mean()) for L in depths]
        assert np.polyfit(np.log(depths), np.log(rms), 1)[0] == pytest.approx(0.5 - alpha, abs=0.05)


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda: th.own_update_exponent("qk", "rmsprop", "mup"), "optimizer"),
        (lambda: th.own_update_exponent("qk", "adam", "ntk"), "parameterisation"),
        (lambda: th.own_update_exponent("gate", "adam", "mup", "softmax"), "layer"),
        (lambda: th.init_exponent("attn_scores", "mup", "gated_delta"), "quantity"),
    ],
)
def test_bad_names_are_refused(call, named):
    with pytest.raises(ValueError, match=named):
        call()


@pytest.mark.parametrize("mixer", th.MIXERS)
@pytest.mark.parametrize("optimizer", th.OPTIMIZERS)
def test_the_optimal_rate_drifts_only_where_some_layer_grows(mixer, optimizer):
    """muP's defining property: no layer's first update grows with width, so its optimal rate does not drift; under
    the standard parameterisation the fastest layer's exponent sets the drift."""
    for p in th.PARAMETERISATIONS:
        fastest = max(th.own_update_exponent(layer, optimizer, p, mixer) for layer in th.MIXER_LAYERS[mixer])
        assert th.lr_drift(optimizer, p, mixer) == -fastest
    assert th.lr_drift(optimizer, "mup", mixer) == 0.0
    assert th.lr_drift(optimizer, "standard", mixer) < 0.0
