"""The one in-context regression data law (analysis/data/regression_data.py): its moments, its random streams,
its token layout against the construction, and the public API of the theory package built on it.

The law replaced two samplers (the training task's torch ``draw`` and the theory's numpy
``sample_regression``) and two token builders (``concat_tokens`` and ``build_tokens``). Frozen copies
of those four functions, as they were before the merge, pin that every caller still draws bit-identical
numbers (so trained checkpoints and measured results do not change) and builds identical tokens.

Statistical checks are |estimate - exact| <= Z SE with fixed seeds (deterministic; a correct law fails
a fresh seed with probability ~6e-5 per check at Z = 4).
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest
import torch

import analysis.data.tasks as tasks
import analysis.theory.icl_gd as th
from analysis.data.regression_data import (
    InputLaw,
    RegressionBatch,
    RegressionLaw,
    concat_tokens,
    interleaved_tokens,
    noiseless_query_target,
)
from analysis.data.tasks import LinearRegressionTask

Z = 4.0
EPS64 = float(np.finfo(np.float64).eps)


# ------------------------------------------------------------------------------------------------
# Frozen copies of the replaced samplers and token builders (commit fc489eb)


def _old_sqrtm_psd(S):
    lam, U = np.linalg.eigh(S)
    return (U * np.sqrt(np.clip(lam, 0.0, None))) @ U.T


def _old_theory_sample(n_tasks, d, N, x_dist, sigma, rng, Sigma=None, w_std=1.0):
    """analysis/theory/icl_gd.py sample_regression: (x_ctx, y_ctx, x_q, y_q, w), numpy float64."""
    shape = (n_tasks, N + 1, d)
    if x_dist == "uniform":
        x = rng.uniform(-0.5, 0.5, size=shape)
    else:
        x = rng.standard_normal(shape)
        if x_dist == "anisotropic":
            S = np.asarray(Sigma, dtype=np.float64)
            S = np.diag(S) if S.shape == (d,) else S
            x = x @ _old_sqrtm_psd(S)
    w = w_std * rng.standard_normal((n_tasks, d))
    eps = rng.standard_normal((n_tasks, N + 1))
    y = np.einsum("btd,bd->bt", x, w) + sigma * eps
    return x[:, :N], y[:, :N], x[:, N], y[:, N], w


def _old_task_draw(task, B, generator, dtype):
    """analysis/data/tasks.py LinearRegressionTask.draw: (x, y, x_q, y_q, w), torch."""
    N, d, dev = task.n_points, task.d, generator.device
    shape = (B, N + 1, d)
    if task.x_dist == "uniform":
        x = torch.rand(shape, generator=generator, device=dev, dtype=dtype) - 0.5
    else:
        x = torch.randn(shape, generator=generator, device=dev, dtype=dtype)
        if task.x_dist == "anisotropic":
            x = x * torch.tensor(np.sqrt(task.spectrum), dtype=dtype, device=dev)
            if task.basis_seed is not None:
                x = x @ torch.tensor(task.basis, dtype=dtype, device=dev).T
    w = task.w_std * torch.randn((B, d), generator=generator, device=dev, dtype=dtype)
    eps = torch.randn((B, N + 1), generator=generator, device=dev, dtype=dtype)
    y = torch.einsum("bnd,bd->bn", x, w) + task.noise_std * eps
    return x[:, :N], y[:, :N], x[:, N], y[:, N], w


def _old_build_tokens(x_ctx, y_ctx, x_q):
    """analysis/theory/icl_gd.py build_tokens (float64, keeps the graph of tensor inputs)."""

    def t(a):
        return a.to(torch.float64) if isinstance(a, torch.Tensor) else torch.as_tensor(np.asarray(a, np.float64))

    xc, yc, xq = t(x_ctx), t(y_ctx), t(x_q)
    ctx = torch.cat([xc, yc.unsqueeze(-1)], dim=-1)
    query = torch.cat([xq, torch.zeros_like(xq[:, :1])], dim=-1).unsqueeze(1)
    return torch.cat([ctx, query], dim=1)


def _old_concat_tokens(x, y, x_q):
    """analysis/data/tasks.py concat_tokens (tensors, their own dtype)."""
    context = torch.cat([x, y.unsqueeze(-1)], dim=-1)
    query = torch.cat([x_q, torch.zeros_like(x_q[:, :1])], dim=-1).unsqueeze(1)
    return torch.cat([context, query], dim=1)


FIELDS = ("x_ctx", "y_ctx", "x_q", "y_q", "w")


def _same(a, b) -> bool:
    """Bit-identical arrays or tensors (same type, dtype, shape and every value)."""
    if type(a) is not type(b) or a.dtype != b.dtype or a.shape != b.shape:
        return False
    return bool(torch.equal(a, b)) if isinstance(a, torch.Tensor) else bool(np.array_equal(a, b))


def _rotated(d: int, seed: int) -> np.ndarray:
    R = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))[0]
    return R @ np.diag(th.geometric_spectrum(d, 8.0)) @ R.T


# ------------------------------------------------------------------------------------------------
# Streams: every call site draws what it drew before


@pytest.mark.parametrize(
    "x_dist,Sigma",
    [
        ("uniform", None),
        ("gaussian", None),
        ("anisotropic", "spectrum"),  # the probe's case: a (d,) geometric spectrum
        ("anisotropic", "rotated"),  # a full (d, d) matrix
    ],
)
@pytest.mark.parametrize("sigma,w_std", [(0.0, 1.0), (0.4, 1.7)])
def test_numpy_stream_is_the_theory_samplers(x_dist, Sigma, sigma, w_std):
    for d in (1, 3, 10):
        S = {"spectrum": th.geometric_spectrum(d, 1e3), "rotated": _rotated(d, d), None: None}[Sigma]
        old = _old_theory_sample(40, d, 6, x_dist, sigma, np.random.default_rng(d), S, w_std)
        new = th.sample_regression(40, d, 6, x_dist, sigma, np.random.default_rng(d), S, w_std)
        assert all(_same(o, getattr(new, f)) for o, f in zip(old, FIELDS, strict=True)), (d, x_dist, Sigma)
        assert new.x_ctx.dtype == np.float64


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(x_dist="uniform"),
        dict(x_dist="gaussian", noise_std=0.5, w_std=2.0),
        dict(x_dist="anisotropic", spectrum=(4.0, 1.0, 0.5, 0.25), noise_std=0.1),
        dict(x_dist="anisotropic", spectrum=(4.0, 1.0, 0.5, 0.25), basis_seed=3),
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_torch_stream_is_the_training_tasks_sampler(kwargs, dtype):
    for layout in ("concat", "interleaved"):
        task = LinearRegressionTask(d=4, n_points=6, layout=layout, **kwargs)
        old = _old_task_draw(task, 32, torch.Generator().manual_seed(11), dtype)
        new = task.draw(32, torch.Generator().manual_seed(11), dtype=dtype)
        assert all(_same(o, getattr(new, f)) for o, f in zip(old, FIELDS, strict=True)), (kwargs, layout)


def test_probe_evaluation_law_is_the_training_law_with_the_old_numbers():
    """The probe now evaluates on its task's own law; for a diagonal Sigma (spectrum) the numpy stream
    is the one the theory's sampler drew from Sigma = diag(spectrum)."""
    spec = th.geometric_spectrum(10, 10.0)
    task = LinearRegressionTask(d=10, n_points=10, x_dist="anisotropic", spectrum=tuple(spec), noise_std=0.3)
    new = task.law.sample(500, 7, np.random.default_rng(4))
    old = _old_theory_sample(500, 10, 7, "anisotropic", 0.3, np.random.default_rng(4), np.diag(spec))
    assert all(_same(o, getattr(new, f)) for o, f in zip(old, FIELDS, strict=True))


def test_draw_order_is_shared_by_noise_levels_and_backends():
    """x first (the query last), then w, then the noise: the noise level changes only the labels."""
    a = RegressionLaw(InputLaw.standard(3, "gaussian"), noise_std=0.0).sample(5, 4, np.random.default_rng(2))
    b = RegressionLaw(InputLaw.standard(3, "gaussian"), noise_std=0.7).sample(5, 4, np.random.default_rng(2))
    assert _same(a.x_ctx, b.x_ctx) and _same(a.x_q, b.x_q) and _same(a.w, b.w)
    assert not np.array_equal(a.y_ctx, b.y_ctx)
    # the query is input N of the same (B, N+1, d) draw: a longer context shifts it, not the first inputs
    rng = np.random.default_rng(3)
    c = RegressionLaw(InputLaw.standard(3, "uniform")).sample(5, 4, rng)
    x_all = np.random.default_rng(3).uniform(-0.5, 0.5, size=(5, 5, 3))
    assert _same(c.x_ctx, x_all[:, :4]) and _same(c.x_q, x_all[:, 4])


def test_generators_and_the_global_state():
    law = RegressionLaw(InputLaw.standard(2, "gaussian"), noise_std=0.1)
    torch_state, np_state = torch.random.get_rng_state(), np.random.get_state()[1].copy()
    t = law.sample(3, 2, torch.Generator().manual_seed(0))
    n = law.sample(3, 2, np.random.default_rng(0))
    assert torch.equal(torch.random.get_rng_state(), torch_state)
    assert np.array_equal(np.random.get_state()[1], np_state)
    assert isinstance(t.x_ctx, torch.Tensor) and t.x_ctx.dtype == torch.get_default_dtype()
    assert isinstance(n.x_ctx, np.ndarray) and n.x_ctx.dtype == np.float64
    with pytest.raises(ValueError, match="rng must be"):
        law.sample(3, 2, 0)
    with pytest.raises(ValueError, match="float64 only"):
        law.sample(3, 2, np.random.default_rng(0), dtype=np.float32)
    with pytest.raises(ValueError, match="rng must be a numpy.random.Generator"):
        th.sample_regression(3, 2, 2, "gaussian", 0.0, torch.Generator())


# ------------------------------------------------------------------------------------------------
# The law: moments of x, w, the noise, and y = <w, x> + noise


def _laws():
    spec = (3.0, 1.0, 0.25)
    q = np.linalg.qr(np.random.default_rng(9).standard_normal((3, 3)))[0]
    return {
        "uniform": InputLaw.standard(3, "uniform"),
        "gaussian": InputLaw.standard(3, "gaussian"),
        "spectrum": InputLaw.from_spectrum(spec),
        "spectrum_basis": InputLaw.from_spectrum(spec, q),
        "matrix": InputLaw.from_covariance(_rotated(3, 1)),
    }


@pytest.mark.parametrize("name", list(_laws()))
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_input_law_moments(name, backend):
    law = _laws()[name]
    rng = np.random.default_rng(6) if backend == "numpy" else torch.Generator().manual_seed(6)
    b = RegressionLaw(law).sample(5000, 3, rng, dtype=None if backend == "numpy" else torch.float64)
    x = np.concatenate([np.asarray(b.x_ctx).reshape(-1, 3), np.asarray(b.x_q)])  # i.i.d. inputs: n = B (N+1)
    n = x.shape[0]
    prod = x[:, :, None] * x[:, None, :]
    se = prod.std(0, ddof=1) / math.sqrt(n)
    assert np.all(np.abs(prod.mean(0) - law.covariance) <= Z * se), (prod.mean(0), law.covariance)
    assert np.all(np.abs(x.mean(0)) <= Z * np.sqrt(np.diag(law.covariance) / n))
    if name == "uniform":  # exact constants of U(-1/2, 1/2): support, E x^2 = 1/12
        assert np.all(np.abs(x) <= 0.5)
        np.testing.assert_array_equal(law.covariance, np.eye(3) * th.UNIFORM_V)


def test_covariance_of_every_construction_is_the_requested_one():
    spec = np.array([3.0, 1.0, 0.25])
    q = np.linalg.qr(np.random.default_rng(9).standard_normal((3, 3)))[0]
    np.testing.assert_array_equal(InputLaw.from_spectrum(spec).covariance, np.diag(spec))
    np.testing.assert_allclose(InputLaw.from_spectrum(spec, q).covariance, q @ np.diag(spec) @ q.T, atol=1e-14)
    S = _rotated(3, 1)
    law = InputLaw.from_covariance(S)
    assert law.covariance is S or np.array_equal(law.covariance, S)
    np.testing.assert_allclose(law.mix.T @ law.mix, S, atol=1e-13)  # x = z @ mix: E x x^T = mix^T mix
    np.testing.assert_array_equal(th.second_moment(3, "anisotropic", spec), np.diag(spec))
    np.testing.assert_array_equal(LinearRegressionTask(d=3, x_dist="gaussian").covariance, np.eye(3))


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_weights_noise_and_labels(backend):
    sigma, w_std, d = 0.3, 2.0, 4
    law = RegressionLaw(InputLaw.standard(d, "gaussian"), noise_std=sigma, w_std=w_std)
    rng = np.random.default_rng(7) if backend == "numpy" else torch.Generator().manual_seed(7)
    b = law.sample(4000, 6, rng, dtype=None if backend == "numpy" else torch.float64)
    x, y, xq, yq, w = (np.asarray(getattr(b, f)) for f in FIELDS)
    assert x.shape == (4000, 6, d) and y.shape == (4000, 6) and xq.shape == (4000, d)
    assert yq.shape == (4000,) and w.shape == (4000, d)
    # E[w w^T] = w_std^2 I; entry SEs: diagonal w_std^2 sqrt(2/B), off-diagonal w_std^2 / sqrt(B)
    se = w_std**2 * np.where(np.eye(d, dtype=bool), math.sqrt(2), 1.0) / math.sqrt(w.shape[0])
    assert np.all(np.abs(w.T @ w / w.shape[0] - w_std**2 * np.eye(d)) <= Z * se)
    assert np.all(np.abs(w.mean(0)) <= Z * w_std / math.sqrt(w.shape[0]))
    # residuals y - <w, x> (context and query alike): N(0, sigma^2), uncorrelated with x
    resid = np.concatenate([(y - np.einsum("bnd,bd->bn", x, w)).ravel(), yq - (xq * w).sum(-1)])
    n = resid.size
    assert abs(resid.var(ddof=1) - sigma**2) <= Z * sigma**2 * math.sqrt(2 / (n - 1))
    assert abs(resid.mean()) <= Z * sigma / math.sqrt(n)
    xr = np.concatenate([x.reshape(-1, d), xq])
    assert np.all(np.abs(xr.T @ resid / n) <= Z * sigma / math.sqrt(n))  # E[x eps] = 0, Var = sigma^2


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_noiseless_labels_are_the_linear_function(backend):
    law = RegressionLaw(InputLaw.from_spectrum((2.0, 0.5, 1.0)), noise_std=0.0, w_std=1.5)
    rng = np.random.default_rng(8) if backend == "numpy" else torch.Generator().manual_seed(8)
    b = law.sample(50, 5, rng, dtype=None if backend == "numpy" else torch.float64)
    x, y, xq, yq, w = (np.asarray(getattr(b, f)) for f in FIELDS)
    scale = np.abs(x).max() * np.abs(w).max()
    np.testing.assert_allclose(y, np.einsum("bnd,bd->bn", x, w), rtol=0, atol=8 * EPS64 * scale)
    np.testing.assert_allclose(yq, (xq * w).sum(-1), rtol=0, atol=8 * EPS64 * scale)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_relu_link_shares_the_draws_and_rectifies_the_response(backend):
    """link="relu" draws the same x, w and noise as the linear law of the same seed (same draw order) and
    responds max(0, w.x) + noise: the labels differ exactly where w.x < 0."""
    sigma, d = 0.4, 3
    laws = [RegressionLaw(InputLaw.standard(d, "gaussian"), noise_std=sigma, link=k) for k in ("linear", "relu")]
    dtype = None if backend == "numpy" else torch.float64
    lin, relu = (
        law.sample(
            500, 6, np.random.default_rng(9) if backend == "numpy" else torch.Generator().manual_seed(9), dtype=dtype
        )
        for law in laws
    )
    for f in ("x_ctx", "x_q", "w"):
        np.testing.assert_array_equal(np.asarray(getattr(lin, f)), np.asarray(getattr(relu, f)))
    x, xq, w = (np.asarray(getattr(lin, f)) for f in ("x_ctx", "x_q", "w"))
    s_ctx, s_q = np.einsum("bnd,bd->bn", x, w), (xq * w).sum(-1)
    noise_ctx, noise_q = np.asarray(lin.y_ctx) - s_ctx, np.asarray(lin.y_q) - s_q  # the linear law's noise
    tol = 8 * EPS64 * np.abs(x).max() * np.abs(w).max()
    np.testing.assert_allclose(np.asarray(relu.y_ctx), np.maximum(s_ctx, 0) + noise_ctx, rtol=0, atol=tol)
    np.testing.assert_allclose(np.asarray(relu.y_q), np.maximum(s_q, 0) + noise_q, rtol=0, atol=tol)
    assert (s_ctx < 0).mean() > 0.4  # about half the responses are rectified
    if backend == "numpy":
        np.testing.assert_array_equal(noiseless_query_target(relu, "relu"), np.maximum(s_q, 0))
        np.testing.assert_array_equal(noiseless_query_target(lin), s_q)


def test_law_validation():
    with pytest.raises(ValueError, match="x_dist"):
        InputLaw.of(2, "laplace")
    with pytest.raises(ValueError, match="Sigma must be given"):
        InputLaw.of(2, "anisotropic")
    with pytest.raises(ValueError, match="Sigma must be None"):
        InputLaw.of(2, "uniform", np.eye(2))
    with pytest.raises(ValueError, match="positive semi-definite"):
        InputLaw.of(2, "anisotropic", np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="symmetric"):
        InputLaw.from_covariance(np.array([[1.0, 0.5], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="basis"):
        InputLaw.from_spectrum((1.0, 2.0), np.eye(3))
    with pytest.raises(ValueError, match="inputs must be an InputLaw"):
        RegressionLaw("gaussian")
    with pytest.raises(ValueError, match="noise_std"):
        RegressionLaw(InputLaw.standard(2, "gaussian"), noise_std=-1.0)
    with pytest.raises(ValueError, match="link"):
        RegressionLaw(InputLaw.standard(2, "gaussian"), link="sigmoid")
    with pytest.raises(ValueError, match="n_points"):
        RegressionLaw(InputLaw.standard(2, "gaussian")).sample(2, 0, np.random.default_rng(0))


# ------------------------------------------------------------------------------------------------
# One token layout: both old builders, gradients, and the construction's expectation


def test_concat_tokens_reproduces_both_old_builders():
    b = th.sample_regression(6, 3, 5, "gaussian", 0.2, np.random.default_rng(1))
    # the theory's call (numpy float64 in, float64 tensor out) and its float64 cast of tensors
    want = _old_build_tokens(b.x_ctx, b.y_ctx, b.x_q)
    assert _same(concat_tokens(b.x_ctx, b.y_ctx, b.x_q), want)
    assert _same(concat_tokens(b.x_ctx, b.y_ctx, b.x_q, dtype=torch.float64), want)
    assert _same(b.tokens(), want)
    f32 = [torch.as_tensor(a, dtype=torch.float32) for a in (b.x_ctx, b.y_ctx, b.x_q)]
    assert _same(concat_tokens(*f32, dtype=torch.float64), _old_build_tokens(*f32))
    # the training task's call (tensors keep their dtype)
    for dtype in (torch.float32, torch.float64):
        t = LinearRegressionTask(d=3, n_points=5).draw(4, torch.Generator().manual_seed(2), dtype=dtype)
        want = _old_concat_tokens(t.x_ctx, t.y_ctx, t.x_q)
        assert _same(concat_tokens(t.x_ctx, t.y_ctx, t.x_q), want) and want.dtype == dtype
        assert _same(t.tokens(), want)
    # the von Oswald layout: e_i = (x_i, y_i), the query (x_q, 0) last
    tok = b.tokens()
    assert tok.shape == (6, 6, 4)
    assert np.array_equal(tok[:, :5, :3].numpy(), b.x_ctx) and np.array_equal(tok[:, :5, 3].numpy(), b.y_ctx)
    assert np.array_equal(tok[:, 5, :3].numpy(), b.x_q) and torch.all(tok[:, 5, 3] == 0)
    with pytest.raises(ValueError, match="x_ctx"):
        concat_tokens(b.x_ctx, b.y_ctx[:, :2], b.x_q)


def test_concat_tokens_keep_the_gradient_to_the_query():
    """d tokens / d x_q flows through the builder (probes/icl_gd.py ModelPredictor and th.sensitivity)."""
    b = th.sample_regression(4, 3, 5, "uniform", 0.0, np.random.default_rng(2))
    for x_q in (
        torch.tensor(b.x_q, requires_grad=True),
        torch.tensor(b.x_q, dtype=torch.float32, requires_grad=True),
    ):
        tok = concat_tokens(b.x_ctx, b.y_ctx, x_q, dtype=torch.float64)
        (g,) = torch.autograd.grad((tok[:, -1, :3] * 2.0).sum(), x_q)
        assert torch.equal(g, torch.full_like(x_q, 2.0))
    # end to end: the sensitivity of one GD step, read through the LSA construction on these tokens
    eta = 0.6
    f = th.LinearSelfAttention(th.gd_lsa_stack(3, eta, 5, 1))
    h = np.einsum("bnd,bn->bd", b.x_ctx, b.y_ctx) / 5
    np.testing.assert_allclose(th.sensitivity(f, b.x_ctx, b.y_ctx, b.x_q).numpy(), eta * h, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("K", [1, 2, 3])
@pytest.mark.parametrize("x_dist", ["uniform", "anisotropic"])
def test_training_tokens_carry_the_construction_exactly(K, x_dist):
    """The tokens the models are trained on (LinearRegressionTask.sample, concat layout), run through the
    K-layer construction, predict exactly K steps of GD on the same draw (float64 round-off)."""
    d, N = 3, 6
    spec = (2.0, 1.0, 0.5) if x_dist == "anisotropic" else None
    task = LinearRegressionTask(d=d, n_points=N, x_dist=x_dist, spectrum=spec, noise_std=0.1)
    tokens, y_q = task.sample(64, torch.Generator().manual_seed(K), dtype=torch.float64)
    b = task.draw(64, torch.Generator().manual_seed(K), dtype=torch.float64)
    assert torch.equal(tokens, b.tokens()) and torch.equal(y_q, b.y_q)
    eta = 0.5 / K
    got = th.read_prediction(th.lsa_forward(tokens, th.gd_lsa_stack(d, eta, N, K)))
    want = th.GD(eta=eta, steps=K)(b.x_ctx, b.y_ctx, b.x_q)
    xmax2 = float((tokens[..., :d] ** 2).sum(-1).max())
    scale = float(b.y_ctx.abs().max()) * (1 + eta * xmax2) ** K
    assert float((got - want).abs().max()) <= 8 * K * (N + d + 1) * EPS64 * scale


def test_interleaved_tokens_positions():
    b = LinearRegressionTask(d=2, n_points=3, layout="interleaved").draw(2, torch.Generator().manual_seed(0))
    tok = interleaved_tokens(b.x_ctx, b.y_ctx)
    assert tok.shape == (2, 6, 3)
    assert torch.equal(tok[:, 0::2, :2], b.x_ctx) and torch.equal(tok[:, 1::2, 2], b.y_ctx)
    assert torch.all(tok[:, 0::2, 2] == 0) and torch.all(tok[:, 1::2, :2] == 0)


# ------------------------------------------------------------------------------------------------
# One implementation, one public API


def test_one_implementation_everywhere():
    import probes.icl_gd as P

    assert tasks.RegressionBatch is RegressionBatch is th.RegressionBatch
    assert tasks.concat_tokens is concat_tokens is th.concat_tokens is P.concat_tokens
    assert tasks.interleaved_tokens is interleaved_tokens is P.interleaved_tokens
    assert isinstance(LinearRegressionTask().law, RegressionLaw)
    assert not hasattr(th, "build_tokens")


OLD_PUBLIC_API = (  # analysis/theory/icl_gd.py's __all__ before the split (build_tokens -> concat_tokens)
    "X_DISTS UNIFORM_V UNIFORM_M4 RegressionBatch geometric_spectrum second_moment sample_regression Predictor "
    "LinearInY ZeroPredictor GD one_step_gd Averaging LeastSquares Ridge KNN read_prediction gd_lsa_weights "
    "gd_lsa_stack lsa_forward LinearSelfAttention preconditioned_gd_loss one_step_gd_theory "
    "optimal_preconditioner conditional_loss_linear expected_loss_mc least_squares_theory baseline_theory "
    "GDPlusPlus gdpp_lsa_stack fit_gd_schedule wishart_trace_inverse marchenko_pastur_trace_inverse "
    "ridge_bayes_loss_theory sympy_symbols sympy_one_step_loss_bruteforce sympy_one_step_loss_closed_form "
    "sympy_eta_star_independent sensitivity preds_diff model_diff sensitivity_cosine compare_predictors fit_eta "
    "fit_preconditioner eta_from_lsa_weights lsa_linear_part concat_tokens"
).split()


def test_package_public_names_are_all_importable():
    assert len(th.__all__) == len(set(th.__all__))
    assert set(OLD_PUBLIC_API) <= set(th.__all__)
    namespace: dict = {}
    exec("from analysis.theory.icl_gd import *", namespace)  # noqa: S102 - a fixed import statement
    assert set(namespace) - {"__builtins__"} == set(th.__all__)
    for name in th.__all__:
        obj = getattr(th, name)
        module = getattr(obj, "__module__", None)
        if module is not None and callable(obj):  # defined in the package or the shared data module
            assert module.startswith(("analysis.theory.icl_gd.", "analysis.data.regression_data")), (name, module)


def test_package_modules_import_each_other_without_cycles():
    """Static check of the package's internal imports: submodules import submodules (never the package
    itself) and the import graph is acyclic, so any submodule can be imported first."""
    root = Path(th.__file__).parent
    graph = {}
    for path in root.glob("*.py"):
        if path.name == "__init__.py":
            continue
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("analysis.theory.icl_gd"):
                assert node.module != "analysis.theory.icl_gd", f"{path.name} imports the package itself"
                deps.add(node.module.rsplit(".", 1)[1])
            assert not (isinstance(node, ast.ImportFrom) and node.level), f"{path.name}: use absolute imports"
        graph[path.stem] = deps
    assert {"data", "baselines", "construction", "closed_forms", "risk", "gdpp", "bayes", "symbolic"} <= set(graph)
    done: set[str] = set()
    while len(done) < len(graph):  # topological sort: fails (no progress) on a cycle
        ready = {m for m, deps in graph.items() if m not in done and deps <= done}
        assert ready, f"import cycle among {sorted(set(graph) - done)}"
        done |= ready
