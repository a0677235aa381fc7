"""In-context PCA (analysis/theory/power_method.py, analysis/data/pca_data.py): the power method's closed forms
against independent float64 computations, the exact construction in the zoo against numpy power iteration,
and the data law (spectrum, sign of the target, determinism, refused inputs).

Tolerances are float64 round-off: eigen-decompositions of 4 x 4 to 6 x 6 matrices and <= 10 loops of sums
over <= 65 tokens (1e-12 absolute on unit vectors).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from analysis.data.pca_data import PCALaw, PowerMethodTask, readout, tokens
from analysis.theory import power_method as pm
from analysis.zoo.hooks import hooks
from analysis.zoo.model import ModelConfig, TinyTransformer

ATOL = 1e-12


def _law(d=4, n=32, rho=0.5, radius=4.0):
    return PCALaw(d=d, n=n, rho=rho, radius=radius)


def _zoo(d: int, n: int, radius: float, norm: str, loops: int) -> TinyTransformer:
    """The construction's weights in a float64 zoo model (norm epsilon 0)."""
    D = pm.width(d)
    cfg = ModelConfig(
        input="embedded",
        d_in=D,
        output="none",
        vocab_size=2,
        d_model=D,
        n_layers=1,
        n_heads=1,
        d_head=D,
        d_mlp=0,
        norm=norm,
        norm_eps=0.0,
        attention="linear",
        logit_scale=1.0,
        causal=False,
        loops=loops,
        dtype="float64",
    )
    model = TinyTransformer(cfg).eval()
    W = pm.construction_weights(d, n, radius)
    state = model.state_dict()
    for name in ("W_q", "W_k", "W_v", "W_o"):
        state[f"blocks.0.attn.{name}.weight"] = torch.from_numpy(W[name])
    if norm != "none":
        state["blocks.0.ln1.weight"] = torch.from_numpy(W["ln"])
    model.load_state_dict(state)
    return model


def _iterates(model, x, v0, radius):
    seen = []
    with torch.no_grad(), hooks(model, [("blocks.0.hook_resid_post", lambda t, _: seen.append(t.numpy().copy()))]):
        model(torch.from_numpy(tokens(x, v0, radius)))
    return np.stack(seen)  # (loops, B, n + 1, D)


@pytest.mark.parametrize(("d", "n"), [(4, 32), (6, 64)])
def test_construction_with_layernorm_is_one_power_iteration_per_loop(d, n):
    x, v0 = _law(d=d, n=n).sample(64, np.random.default_rng(3))
    loops = 10
    got = _iterates(_zoo(d, n, 4.0, "post", loops), x, v0, 4.0)
    ref = pm.power_iterates(x, v0, loops)
    np.testing.assert_allclose(np.stack([readout(g, d) for g in got]), ref[1:], atol=ATOL)
    np.testing.assert_allclose(
        got[:, :, :-1], np.broadcast_to(tokens(x, v0, 4.0)[:, :-1], got[:, :, :-1].shape), atol=ATOL
    )


def test_construction_without_norm_is_one_unnormalised_step_then_departs():
    x, v0 = _law().sample(64, np.random.default_rng(4))
    got = _iterates(_zoo(4, 32, 4.0, "none", 2), x, v0, 4.0)[:, :, -1, 4:8]
    S = pm.covariance(x)
    v1 = np.einsum("bde,be->bd", S, v0)
    np.testing.assert_allclose(got[0], v1, atol=ATOL)  # loop 1: S v0 exactly (|v0| = 1)
    v2 = (1 - (v1 * v1).sum(-1, keepdims=True)) * v1 + np.einsum("bde,be->bd", S, v1)
    np.testing.assert_allclose(got[1], v2, atol=ATOL)  # loop 2: the cancellation is off the unit sphere
    assert np.abs(got[1] - np.einsum("bde,be->bd", S, v1)).max() > 1e-3


def test_power_iterates_are_normalised_matrix_powers_and_reach_the_target():
    x, v0 = _law().sample(32, np.random.default_rng(5))
    S = pm.covariance(x)
    it = pm.power_iterates(x, v0, 6)
    P = np.linalg.matrix_power(S, 6)
    direct = np.einsum("bde,be->bd", P, v0)
    np.testing.assert_allclose(it[6], direct / np.linalg.norm(direct, axis=-1, keepdims=True), atol=ATOL)
    far = pm.power_iterates(x, v0, 400)[-1]
    np.testing.assert_allclose(far, pm.target(x, v0), atol=1e-8)  # the sign-fixed top eigenvector


def test_tan_angle_obeys_the_gap_bound_and_the_eigenbasis_closed_form():
    x, v0 = _law(rho=0.6).sample(200, np.random.default_rng(6))
    it = pm.power_iterates(x, v0, 12)
    tan = pm.tan_angle(it, pm.target(x, v0)[None])
    bound = pm.tan_bound(x, v0, 12)
    assert np.all(tan <= bound * (1 + 1e-9) + 1e-15)
    np.testing.assert_allclose(tan[0], bound[0], rtol=1e-12)
    # the closed form of item 1 through the eigen-decomposition: tan_t = |(l_k/l_1)^t c_k|_{k>=2} / |c_1|
    lam, U = pm.eigh_desc(x)
    c = np.einsum("bdk,bd->bk", U, v0)
    t = np.arange(13)[:, None, None]
    closed = np.linalg.norm((lam[None, :, 1:] / lam[None, :, :1]) ** t * c[None, :, 1:], axis=-1) / np.abs(c[:, 0])
    np.testing.assert_allclose(tan, closed, rtol=1e-9, atol=1e-14)
    # hence the per-loop ratio tends to l_2/l_1 (= shifted_rate at shift 0) wherever c_2 != 0
    np.testing.assert_allclose(pm.shifted_rate(lam, 0.0), pm.gap_ratio(x), rtol=1e-14)


def test_shifted_iteration_rate_and_the_shift_fit():
    x, v0 = _law().sample(100, np.random.default_rng(7))
    lam, _ = pm.eigh_desc(x)
    eta = 2.0
    np.testing.assert_allclose(pm.shifted_rate(lam, 1 / eta), (1 + eta * lam[:, 1]) / (1 + eta * lam[:, 0]), rtol=1e-12)
    v1 = pm.power_iterates(x, v0, 1, shift=0.3, normalise=False)[1]
    fit = pm.fit_shift(v0, 2.5 * v1, x)  # any scale: a/b is the shift
    np.testing.assert_allclose(fit["shift"], 0.3, rtol=1e-9)
    assert fit["residual"].max() < 1e-12
    rate = pm.per_loop_rate(pm.tan_angle(pm.power_iterates(x, v0, 8), pm.target(x, v0)[None]), 1, 8)
    assert np.all(rate <= pm.gap_ratio(x) * (1 + 1e-9))  # the geometric mean obeys the bound too


def test_law_spectrum_rotation_and_determinism():
    law = _law(d=5, n=64, rho=0.4, radius=6.0)
    x, v0 = law.sample(3000, np.random.default_rng(8))
    assert x.shape == (3000, 64, 5) and v0.shape == (3000, 5)
    np.testing.assert_allclose(np.linalg.norm(v0, axis=-1), 1.0, atol=1e-14)
    assert np.linalg.norm(x, axis=-1).max() <= 6.0
    # population covariance: Q diag(spectrum) Q^T with Haar Q; its eigenvalues per prompt are the spectrum
    # (the mean of S's eigenvalues matches within sampling error, 4 SE)
    lam, _ = pm.eigh_desc(x)
    se = lam.std(0) / np.sqrt(len(lam))
    bias_free = pm.spectrum(5, 0.4)
    assert abs(lam.sum(-1).mean() - bias_free.sum()) < 4 * lam.sum(-1).std() / np.sqrt(len(lam)) + 0.01
    assert lam[:, 0].mean() > bias_free[0] - 4 * se[0]  # top eigenvalue biased upwards, never down
    again = law.sample(3000, np.random.default_rng(8))
    np.testing.assert_array_equal(again[0], x)
    tx, tv = law.sample(4, torch.Generator().manual_seed(0))
    tx2, _ = law.sample(4, torch.Generator().manual_seed(0))
    assert tx.dtype == torch.float64 and torch.equal(tx, tx2) and tv.shape == (4, 5)


def test_task_target_is_the_sign_fixed_top_eigenvector_and_the_loss_reads_the_query():
    task = PowerMethodTask(d=4, n=16)
    x_tok, y = task.sample(8, torch.Generator().manual_seed(1), dtype=torch.float64)
    assert x_tok.shape == (8, 17, pm.width(4))
    np.testing.assert_allclose(x_tok[..., :9].numpy(), -x_tok[..., 9:].numpy())  # mirrored layout
    np.testing.assert_allclose(x_tok[:, :-1, :9].norm(dim=-1).numpy(), 1.0, atol=1e-14)  # |a| = 1 on context
    x = x_tok[:, :-1, :4].numpy() * task.radius
    v0 = x_tok[:, -1, 4:8].numpy()
    np.testing.assert_allclose(y.numpy(), pm.target(x, v0), atol=1e-14)
    assert np.all((y.numpy() * v0).sum(-1) >= 0)
    out = x_tok.clone()
    out[:, -1, 4:8] = y
    assert float(task.loss(out, y)) == 0.0
    with pytest.raises(ValueError, match="outputs"):
        task.loss(out[..., :5], y)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"d": 1}, "d must"),
        ({"n": 0}, "n must"),
        ({"rho": 1.5}, "rho"),
        ({"rho": 0.0}, "rho"),
        ({"radius": 1.0}, "radius"),
    ],
)
def test_bad_inputs_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PCALaw(**kwargs)


def test_bad_theory_inputs_are_refused():
    x, v0 = _law().sample(4, np.random.default_rng(0))
    with pytest.raises(ValueError, match="x must"):
        pm.covariance(x[0])
    with pytest.raises(ValueError, match="v0 must"):
        pm.power_iterates(x, v0[:, :3], 2)
    with pytest.raises(ValueError, match="loops"):
        pm.power_iterates(x, v0, -1)
    with pytest.raises(ValueError, match="last"):
        pm.per_loop_rate(np.ones((3, 4)), 1, 5)
    with pytest.raises(ValueError, match="radius"):
        pm.construction_weights(4, 32, 0.0)
    with pytest.raises(ValueError, match="rng"):
        _law().sample(2, 0)
    with pytest.raises(ValueError, match="v0 must"):
        tokens(x, v0[:2], 4.0)
