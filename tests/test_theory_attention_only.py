"""analysis.theory.attention_only against independent computations: brute force, Monte Carlo, enumeration."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
import torch

from analysis.data.tasks import ConvolutionRegression, Induction, causal_conv
from analysis.theory import attention_only as th


def _kernel(K=4, d=3, seed=0):
    return np.random.default_rng(seed).standard_normal((K, d, d))


def test_conv1d_is_the_sum_over_taps_by_loops():
    W, x = _kernel(), np.random.default_rng(1).standard_normal((2, 7, 3))
    want = np.zeros((2, 7, 3))
    for b, t, k in itertools.product(range(2), range(7), range(4)):
        if t - k >= 0:
            want[b, t] += W[k] @ x[b, t - k]
    np.testing.assert_allclose(th.conv1d(x, W), want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(causal_conv(torch.from_numpy(x), torch.from_numpy(W)).numpy(), want, atol=1e-12)


@pytest.mark.parametrize("heads", [1, 2, 3, 4])
def test_rank_bound_is_the_best_signed_rank_h_fit_and_no_random_fit_beats_it(heads):
    W = _kernel()
    bound = th.rank_bound(W, heads)
    A, M = th.rank_h_factors(W, heads)
    assert th.mixed_error(W, A, M) == pytest.approx(bound, abs=1e-12)  # the truncated SVD attains it
    rng = np.random.default_rng(heads)
    for _ in range(200):  # perturbed and random factorisations (with extra offsets) never go below it
        A2 = A + 0.1 * rng.standard_normal(A.shape)
        M2 = M + 0.1 * rng.standard_normal(M.shape)
        assert th.mixed_error(W, A2, M2) >= bound - 1e-12
        S = rng.integers(1, 7)
        assert th.mixed_error(W, rng.random((S, heads)), rng.standard_normal((heads, 3, 3))) >= bound - 1e-12
    assert th.rank_bound(W, 4) == pytest.approx(0.0, abs=1e-15)


def test_rank_bound_matches_a_brute_force_fit_for_one_head():
    """H = 1: min over a of ||U - a m^T||^2 with m optimal = ||U||^2 - max Rayleigh quotient; scan a on a grid."""
    W = _kernel(K=2, d=2, seed=3)
    U = th.unfold(W)
    best = min(
        ((U - np.outer(a, a @ U) / (a @ a)) ** 2).sum()
        for a in (np.array([math.cos(t), math.sin(t)]) for t in np.linspace(0, math.pi, 20001))
    )
    assert best / (U**2).sum() == pytest.approx(th.rank_bound(W, 1), rel=1e-6)


def test_mixed_error_is_the_monte_carlo_relative_mse_on_white_inputs():
    W = _kernel(K=3, d=2, seed=5)
    rng = np.random.default_rng(7)
    A, M = rng.random((5, 2)), rng.standard_normal((2, 2, 2))
    x = rng.standard_normal((4000, 12, 2))
    fit = th.conv1d(x, np.einsum("sh,hij->sij", A, M))
    y = th.conv1d(x, W)
    err = ((y - fit)[:, 4:] ** 2).sum(-1)  # rows t >= S - 1: every offset inside
    rel = err.mean() / (y[:, 4:] ** 2).sum(-1).mean()
    assert rel == pytest.approx(th.mixed_error(W, A, M), rel=0.05)


def test_construction_selects_one_offset_per_head():
    bias, w_o = th.construction(_kernel())
    assert bias.shape == (4, 5) and np.isinf(bias).sum() == 4 * 5 - 4
    np.testing.assert_array_equal(np.argmax(bias, axis=1), np.arange(4))
    np.testing.assert_array_equal(w_o, _kernel())


def _bag_bayes_by_enumeration(T, L):
    """Exact Bayes accuracy of a predictor seeing (x_t, multiset of x_0..x_t), by enumerating every sequence
    (V = T - L tokens: the prefix is a permutation) and every offset p; tokens relabelled so that observations
    are canonical."""
    V = T - L
    n = T - 2 * L + 1
    per_pos = []
    for i in range(L):
        table: dict = {}
        for perm in itertools.permutations(range(V)):
            for p in range(n):
                seq = list(perm) + list(perm[p : p + L])
                t = T - L + i
                counts = Counter(seq[: t + 1])
                obs = (seq[t], frozenset(counts.items()))
                table.setdefault(obs, Counter())[seq[p + i + 1]] += 1
        hits = sum(max(c.values()) for c in table.values())
        per_pos.append(hits / (math.factorial(V) * n))
    return np.array(per_pos)


@pytest.mark.parametrize("T,L", [(5, 2), (6, 2), (7, 3), (7, 2)])
def test_bag_ceiling_is_the_bayes_accuracy_by_enumeration(T, L):
    np.testing.assert_allclose(th.bag_ceiling_per_position(T, L), _bag_bayes_by_enumeration(T, L), atol=1e-12)


def test_offset_guess_by_monte_carlo():
    task = Induction(vocab_size=20, seq_len=14, segment=4)
    x, p = task.draw(20000, torch.Generator().manual_seed(0))
    assert float((p == 2).double().mean()) == pytest.approx(th.offset_guess(14, 4), abs=0.01)
    assert x.shape == (20000, 14)


def test_convolution_task_kernel_is_normalised_and_targets_are_the_convolution():
    task = ConvolutionRegression(d=3, taps=4, seq_len=9, decay=0.5, kernel_seed=2)
    x, y = task.sample(3, torch.Generator().manual_seed(0), dtype=torch.float64)
    np.testing.assert_allclose(y.numpy(), th.conv1d(x.numpy(), task.kernel), atol=1e-12)
    norms = (task.kernel**2).sum(axis=(1, 2))
    assert norms[1] / norms[0] == pytest.approx(0.25, rel=0.8)  # scale ratio 1/2 per tap, Gaussian spread


# ---------------------------------------------------------------------------------------------- nearest neighbour
def test_nn_target_is_the_argmax_by_loops_and_the_task_agrees():
    from analysis.data.tasks import NearestNeighbour

    keys, q = th.nn_draw(3, 5, 4, 2, np.random.default_rng(0))
    f = th.nn_target(keys, q)
    for s, m in itertools.product(range(3), range(2)):
        np.testing.assert_array_equal(f[s, m], keys[s, int(np.argmax([q[s, m] @ k for k in keys[s]]))])
    np.testing.assert_array_equal(NearestNeighbour.nearest(torch.from_numpy(keys), torch.from_numpy(q)).numpy(), f)


def test_softmax_head_error_falls_to_zero_and_obeys_the_hardmax_bound_per_query():
    errs = [th.softmax_nn_error(b, 8, 6, n_sets=300, seed=1)[0] for b in (1.0, 10.0, 100.0, 1000.0)]
    assert all(a > b for a, b in zip(errs, errs[1:], strict=False)) and errs[-1] < 0.01
    keys, q = th.nn_draw(200, 8, 6, 4, np.random.default_rng(3))
    for beta in (5.0, 50.0, 500.0):
        err = ((th.softmax_head(keys, q, beta) - th.nn_target(keys, q)) ** 2).sum(-1)
        assert (err <= th.hardmax_error_bound(th.alignment_gap(keys, q), 8, beta) + 1e-15).all()


def test_additive_floor_is_zero_for_one_full_block_and_below_the_query_free_error():
    a = th.additive_floor(6, 4, 4, n_sets=200)
    assert a["floor"] == pytest.approx(0.0, abs=1e-14)
    for r in (1, 2):
        b = th.additive_floor(6, 4, r, n_sets=400)
        assert 0.0 < b["floor"] < b["query_free"]
    with pytest.raises(ValueError, match="rank"):
        th.additive_floor(6, 4, 3)


@pytest.mark.parametrize("d,rank", [(4, 1), (4, 2), (6, 3)])
def test_additive_floor_matches_the_two_key_closed_form(d, rank):
    """N = 2: f = k_2 + Delta 1[q . Delta > 0] (Delta = k_1 - k_2), and for Gaussian q the main effect of block h is
    |Delta|^2 Var Phi(c Z) = |Delta|^2 arcsin(rho_h) / (2 pi), rho_h = |Delta_h|^2 / |Delta|^2 (Sheppard), so
    A = E |Delta|^2 (1/4 - sum_h arcsin(rho_h) / (2 pi)); the query-free error is E |Delta|^2 / 4 = 1/2."""
    keys, _ = th.nn_draw(20000, 2, d, 1, np.random.default_rng(11))
    delta = keys[:, 0] - keys[:, 1]
    total = (delta**2).sum(-1)
    rho = (delta**2).reshape(-1, d // rank, rank).sum(-1) / total[:, None]
    exact = float((total * (0.25 - np.arcsin(rho).sum(-1) / (2 * math.pi))).mean())
    got = th.additive_floor(2, d, rank, n_sets=4000, n_queries=64, seed=5)
    assert got["floor"] == pytest.approx(exact, abs=4 * got["floor_se"] + 0.01 * exact)
    assert got["query_free"] == pytest.approx(0.5, abs=4 * got["query_free_se"])


# ============================================================================================== attention-only networks


def _model(**over):
    from analysis.zoo.model import ModelConfig, TinyTransformer

    return TinyTransformer(ModelConfig(**{"vocab_size": 11, "d_model": 16, "n_heads": 2, **over}))


@pytest.mark.parametrize(
    "over",
    [
        dict(),
        dict(d_mlp=0, n_layers=5),
        dict(d_mlp=24, bias=True, qk_norm=True),
        dict(norm="post", d_mlp=0, qk_norm=True, norm_type="rmsnorm", bias=True),
        dict(norm="peri", pos="learned", max_len=9, bias=True),
        dict(norm="none", d_head=3, n_heads=3, d_mlp=7),
        dict(norm="mix", n_layers=4, final_norm=False, pos="rope"),
    ],
)
def test_param_count_is_the_models_parameter_count(over):
    model = _model(**over)
    c = model.config
    got = th.param_count(
        vocab=c.vocab_size,
        d_model=c.d_model,
        n_layers=c.n_layers,
        n_heads=c.n_heads,
        d_head=c.head_size,
        d_mlp=c.mlp_width,
        norm=c.norm,
        norm_type=c.norm_type,
        bias=c.bias,
        qk_norm=c.qk_norm,
        final_norm=c.use_final_norm,
        learned_positions=c.max_len if c.pos == "learned" else 0,
    )
    assert got == model.num_params()


@pytest.mark.parametrize("layers,d,heads", [(1, 8, 2), (2, 32, 2), (3, 64, 4)])
def test_matched_depth_is_three_times_deeper_with_one_norm_per_standard_block_left(layers, d, heads):
    m = th.matched_attention_depth(layers, d, heads, d // heads, 4 * d)
    assert m == {"layers": 3 * layers, "difference": layers * d}
    std = _model(d_model=d, n_heads=heads, n_layers=layers, d_mlp=4 * d).num_params()
    san = _model(d_model=d, n_heads=heads, n_layers=m["layers"], d_mlp=0).num_params()
    assert san - std == m["difference"]
    # with biases the rounding still gives the nearest depth: no other depth is closer in parameters
    m = th.matched_attention_depth(layers, d, heads, d // heads, 4 * d, bias=True)
    block = th.block_params(d, heads, d // heads, 0, bias=True)
    assert abs(m["difference"]) <= block / 2


def _scores(model, x):
    from analysis.zoo.hooks import hooks

    found = []
    names = [f"blocks.{i}.attn.hook_attn_scores" for i in range(model.config.n_layers)]
    with torch.no_grad(), hooks(model, [(n, lambda sc, name: found.append(sc.clone())) for n in names]):
        model(x)
    return found


def _bound(attn, cfg):
    get = lambda t: None if t is None else t.detach().numpy()  # noqa: E731
    qn, kn = attn.q_norm, attn.k_norm
    return th.qk_norm_logit_bound(get(qn.weight), get(kn.weight), cfg.head_size, cfg.scale, get(qn.bias), get(kn.bias))


@pytest.mark.parametrize("norm_type,bias,pos", [("layernorm", True, "rope"), ("rmsnorm", False, "none")])
def test_qk_norm_logits_never_exceed_the_bound_in_a_float64_forward(norm_type, bias, pos):
    model = _model(
        n_layers=3, d_mlp=0, qk_norm=True, norm_type=norm_type, bias=bias, pos=pos, dtype="float64", seed=3
    ).eval()
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():  # random gains and biases, and large weights: only the gains may matter
        for name, p in model.named_parameters():
            if "q_norm" in name or "k_norm" in name:
                p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * 2)
            elif "W_q" in name or "W_k" in name:
                p.mul_(30.0)
    x = torch.randint(0, 11, (8, 12), generator=gen)
    for attn, sc in zip((b.attn for b in model.blocks), _scores(model, x), strict=True):
        bound = _bound(attn, model.config)
        worst = float(sc[torch.isfinite(sc)].abs().max())
        assert worst <= bound * (1 + 1e-12)
        assert worst > 0.05 * bound  # the bound is in reach, not vacuous


@pytest.mark.parametrize("gain,pos", [(0.7, "none"), (2.5, "rope")])
def test_qk_norm_bound_is_attained_at_the_diagonal_when_queries_equal_keys(gain, pos):
    """W_k = W_q, constant gains, eps 0: the diagonal logit is scale g^2 dh, the bound, to rounding."""
    model = _model(n_layers=1, d_mlp=0, qk_norm=True, norm_eps=0.0, pos=pos, dtype="float64", seed=1).eval()
    attn = model.blocks[0].attn
    with torch.no_grad():
        attn.W_k.weight.copy_(attn.W_q.weight)
        attn.q_norm.weight.fill_(gain)
        attn.k_norm.weight.fill_(gain)
    sc = _scores(model, torch.randint(0, 11, (3, 7), generator=torch.Generator().manual_seed(2)))[0]
    diag = torch.diagonal(sc, dim1=-2, dim2=-1)
    bound = _bound(attn, model.config)
    assert bound == pytest.approx(model.config.scale * gain**2 * model.config.head_size, rel=1e-15)
    np.testing.assert_allclose(diag.numpy(), bound, rtol=1e-13)
    assert float(sc[torch.isfinite(sc)].abs().max()) <= bound * (1 + 1e-13)


def test_attention_only_theory_refuses_bad_input():
    with pytest.raises(ValueError, match="^gains must have shape"):
        th.qk_norm_logit_bound(np.ones(3), np.ones(4), 4, 0.5)
    with pytest.raises(ValueError, match="^norm must be one of"):
        th.block_params(8, 2, 4, 0, norm="sandwich")
    with pytest.raises(ValueError, match="^d_mlp must be"):
        th.block_params(8, 2, 4, -1)
    with pytest.raises(ValueError, match="^d_model must be"):
        th.block_params(0, 2, 4, 0)
    with pytest.raises(ValueError, match="^vocab must be"):
        th.param_count(vocab=1, d_model=8, n_layers=1, n_heads=2, d_head=4, d_mlp=0)
