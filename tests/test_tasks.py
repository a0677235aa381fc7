"""Tests for analysis/data/tasks.py and the collapse pairs of probes/representational_collapse/pairs.py: layouts,
determinism, exact and statistical properties of the tasks."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from analysis.data.corpus import CorpusSpec
from analysis.data.tasks import (
    AssociativeRecall,
    CorpusLM,
    LinearRegressionTask,
    MarkovLanguage,
    Task,
    _is_primitive,
    concat_tokens,
    interleaved_tokens,
    model_io,
    task_from_config,
)
from probes.representational_collapse.pairs import (
    apply_to_pair,
    counting_pair,
    early_token_pair,
    repeat_last_pair,
    repeated_token_pair,
    with_separators,
)


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ------------------------------------------------------------------------------------------------
# linear regression: layouts


def test_concat_layout_positions():
    task = LinearRegressionTask(d=4, n_points=6, layout="concat")
    b = task.draw(3, gen(0))
    inputs, targets = task.sample(3, gen(0))
    N, d = 6, 4
    assert inputs.shape == (3, N + 1, d + 1) and targets.shape == (3,)
    assert inputs.dtype == torch.float32
    assert torch.equal(inputs[:, :N, :d], b.x_ctx)  # x_i in the first d columns
    assert torch.equal(inputs[:, :N, d], b.y_ctx)  # y_i in the last column
    assert torch.equal(inputs[:, N, :d], b.x_q)  # query last ...
    assert torch.all(inputs[:, N, d] == 0)  # ... with a zero label slot
    assert torch.equal(targets, b.y_q)
    assert torch.equal(concat_tokens(b.x_ctx, b.y_ctx, b.x_q), inputs)


def test_interleaved_layout_positions():
    task = LinearRegressionTask(d=3, n_points=5, layout="interleaved")
    b = task.draw(2, gen(1))
    inputs, targets = task.sample(2, gen(1))
    assert inputs.shape == (2, 10, 4) and targets.shape == (2, 5)
    assert torch.equal(inputs[:, 0::2, :3], b.x_ctx)  # x-tokens at even positions
    assert torch.all(inputs[:, 0::2, 3] == 0)
    assert torch.all(inputs[:, 1::2, :3] == 0)  # y-tokens at odd positions: zeros, then y
    assert torch.equal(inputs[:, 1::2, 3], b.y_ctx)
    assert torch.equal(targets, b.y_ctx)
    assert torch.equal(interleaved_tokens(b.x_ctx, b.y_ctx), inputs)


@pytest.mark.parametrize("layout", ["concat", "interleaved"])
def test_regression_loss_convention(layout):
    task = LinearRegressionTask(d=3, n_points=4, layout=layout)
    inputs, targets = task.sample(5, gen(2), dtype=torch.float64)
    out = torch.randn(5, task.seq_len, 1, generator=gen(3), dtype=torch.float64)
    c = 0.7
    if layout == "concat":
        out[:, -1, 0] = targets + c  # read-out at the query token
        expected = 0.5 * c**2  # von Oswald: 1/2 squared error
    else:
        out[:, 0::2, 0] = targets + c  # read-out at every x-token
        expected = c**2  # Garg: plain mean squared error
    assert task.loss(out, targets).item() == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="outputs"):
        task.loss(out[..., :0], targets)


def test_regression_targets_are_linear_when_noiseless():
    task = LinearRegressionTask(d=5, n_points=7, x_dist="gaussian")
    b = task.draw(4, gen(4), dtype=torch.float64)
    # float64 round-off of a 5-term dot product of O(1) numbers is ~1e-15
    assert (b.y_ctx - torch.einsum("bnd,bd->bn", b.x_ctx, b.w)).abs().max() <= 1e-12
    assert (b.y_q - (b.x_q * b.w).sum(-1)).abs().max() <= 1e-12


def test_relu_link_task_keeps_linear_keys_and_rectifies():
    """A new field must not move existing checkpoint keys: the linear task's config has no ``link``; the ReLU
    task's has it, a name of its own, and targets max(0, w.x) of the same draws."""
    lin, relu = (
        LinearRegressionTask(d=4, n_points=5, x_dist="gaussian"),
        LinearRegressionTask(d=4, n_points=5, x_dist="gaussian", link="relu"),
    )
    assert "link" not in lin.config() and relu.config()["link"] == "relu"
    assert relu.name == "linreg_d4_n5_gaussian_relu_concat" and lin.name == "linreg_d4_n5_gaussian_concat"
    a, b = lin.draw(3, gen(6), dtype=torch.float64), relu.draw(3, gen(6), dtype=torch.float64)
    assert torch.equal(a.x_ctx, b.x_ctx) and torch.equal(a.w, b.w)
    assert torch.allclose(b.y_ctx, a.y_ctx.clamp_min(0.0), rtol=0, atol=1e-12)  # noiseless: relu of the linear y
    with pytest.raises(ValueError, match="link"):
        LinearRegressionTask(link="abs")


def test_noise_and_layout_share_the_stream():
    # same seed: x and w identical whatever the noise level or layout (paired comparisons)
    a = LinearRegressionTask(noise_std=0.0).draw(3, gen(5))
    b = LinearRegressionTask(noise_std=0.5, layout="interleaved").draw(3, gen(5))
    assert torch.equal(a.x_ctx, b.x_ctx) and torch.equal(a.w, b.w) and not torch.equal(a.y_ctx, b.y_ctx)


# ------------------------------------------------------------------------------------------------
# linear regression: moments against theory


def _fourth_moment_var(task: LinearRegressionTask) -> np.ndarray:
    """Var[(x x^T)_ij] for one input, exactly."""
    s = task.covariance
    if task.x_dist == "uniform":
        # U(-1/2,1/2): E x^2 = 1/12, E x^4 = 1/80; Var x_i^2 = 1/80 - 1/144, Var x_i x_j = 1/144
        v = np.full(s.shape, 1 / 144)
        np.fill_diagonal(v, 1 / 80 - 1 / 144)
        return v
    # Gaussian (Isserlis): E[x_i^2 x_j^2] = S_ii S_jj + 2 S_ij^2, so Var = S_ii S_jj + S_ij^2
    return np.outer(np.diag(s), np.diag(s)) + s**2


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(x_dist="uniform"),
        dict(x_dist="gaussian"),
        dict(x_dist="anisotropic", spectrum=(4.0, 1.0, 0.5, 0.25, 0.1)),
        dict(x_dist="anisotropic", spectrum=(4.0, 1.0, 0.5, 0.25, 0.1), basis_seed=3),
    ],
)
def test_input_second_moment_matches_theory(kwargs):
    task = LinearRegressionTask(d=5, n_points=9, **kwargs)
    b = task.draw(2000, gen(6), dtype=torch.float64)
    x = torch.cat([b.x_ctx.reshape(-1, 5), b.x_q]).numpy()  # all inputs are i.i.d.: n = B (N+1)
    n = x.shape[0]
    emp = x.T @ x / n
    se = np.sqrt(_fourth_moment_var(task) / n)  # standard error of each empirical entry
    assert np.all(np.abs(emp - task.covariance) <= 5 * se), np.abs(emp - task.covariance) / se
    # the mean is zero: SE of each coordinate mean is sqrt(S_ii / n)
    assert np.all(np.abs(x.mean(0)) <= 5 * np.sqrt(np.diag(task.covariance) / n))


def test_rotated_covariance_has_the_requested_spectrum():
    spec = (3.0, 2.0, 1.0, 0.5)
    task = LinearRegressionTask(d=4, x_dist="anisotropic", spectrum=spec, basis_seed=11)
    q = task.basis
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-14)
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(task.covariance)), np.sort(spec), atol=1e-13)
    assert not np.allclose(task.covariance, np.diag(spec))  # really rotated
    plain = LinearRegressionTask(d=4, x_dist="anisotropic", spectrum=spec)
    np.testing.assert_array_equal(plain.covariance, np.diag(spec))


def test_noise_and_weight_moments():
    sigma, w_std = 0.3, 2.0
    task = LinearRegressionTask(d=4, n_points=10, x_dist="gaussian", noise_std=sigma, w_std=w_std)
    b = task.draw(3000, gen(7), dtype=torch.float64)
    resid = (b.y_ctx - torch.einsum("bnd,bd->bn", b.x_ctx, b.w)).reshape(-1).numpy()
    n = resid.size
    # sample variance of n Gaussians: SE = sigma^2 sqrt(2 / (n - 1))
    assert abs(resid.var(ddof=1) - sigma**2) <= 5 * sigma**2 * math.sqrt(2 / (n - 1))
    assert abs(resid.mean()) <= 5 * sigma / math.sqrt(n)
    w = b.w.numpy()
    # E[w w^T] = w_std^2 I; entry SEs: diag w_std^2 sqrt(2/B), off-diagonal w_std^2 / sqrt(B)
    se = w_std**2 * np.where(np.eye(4, dtype=bool), math.sqrt(2), 1.0) / math.sqrt(w.shape[0])
    assert np.all(np.abs(w.T @ w / w.shape[0] - w_std**2 * np.eye(4)) <= 5 * se)


# ------------------------------------------------------------------------------------------------
# determinism and the global RNG, for every task


def _tasks(small_corpus_spec):
    return [
        LinearRegressionTask(d=3, n_points=4),
        LinearRegressionTask(d=3, n_points=4, x_dist="anisotropic", spectrum=(1.0, 2.0, 3.0), basis_seed=0),
        LinearRegressionTask(d=3, n_points=4, layout="interleaved", noise_std=0.1),
        MarkovLanguage(vocab_size=5, seq_len=12),
        CorpusLM(seq_len=16, corpus=small_corpus_spec),
    ]


@pytest.fixture
def small_corpus_spec(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache"))
    return CorpusSpec(max_bytes=40_000)


def test_determinism_and_global_rng(small_corpus_spec):
    for task in _tasks(small_corpus_spec):
        assert isinstance(task, Task)
        task.config()  # builds the corpus (if any) before the RNG snapshot
        torch_state = torch.random.get_rng_state()
        np_state = np.random.get_state()[1].copy()
        a = task.sample(4, gen(0))
        b = task.sample(4, gen(0))
        c = task.sample(4, gen(1))
        assert torch.equal(torch.random.get_rng_state(), torch_state), task.name
        assert np.array_equal(np.random.get_state()[1], np_state), task.name
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]), task.name
        assert not torch.equal(a[0], c[0]), task.name


def test_task_from_config_round_trip(small_corpus_spec):
    import json

    for task in _tasks(small_corpus_spec):
        cfg = json.loads(json.dumps(task.config()))  # JSON-safe
        again = task_from_config(cfg)
        assert again.config() == task.config()
        assert torch.equal(again.sample(2, gen(3))[0], task.sample(2, gen(3))[0])
    with pytest.raises(ValueError, match="kind"):
        task_from_config({"kind": "nope"})
    with pytest.raises(ValueError, match="unknown field"):
        task_from_config({"kind": "markov", "vocab": 3})
    with pytest.raises(ValueError, match="unknown field"):
        CorpusLM(corpus={"encoding": "byte", "size": 3})


def test_sample_moves_to_device_and_dtype():
    task = LinearRegressionTask(d=2, n_points=3)
    x, y = task.sample(2, gen(0), device="cpu", dtype=torch.float64)
    assert x.dtype == torch.float64 and y.dtype == torch.float64
    m = MarkovLanguage(vocab_size=4, seq_len=5)
    x, y = m.sample(2, gen(0))
    assert x.dtype == torch.long and x.shape == y.shape == (2, 5)


# ------------------------------------------------------------------------------------------------
# Markov language


@pytest.mark.parametrize("vocab_size,concentration,seed", [(16, 0.5, 0), (8, 0.1, 1), (32, 2.0, 2)])
def test_markov_stationary_and_entropies(vocab_size, concentration, seed):
    m = MarkovLanguage(vocab_size=vocab_size, concentration=concentration, seed=seed)
    p, pi = m.transition, m.stationary
    assert p.dtype == np.float64 and p.shape == (vocab_size, vocab_size)
    np.testing.assert_allclose(p.sum(1), 1.0, atol=1e-12)
    assert np.all(p > 0)  # Dirichlet rows are a.s. strictly positive at these concentrations
    assert np.max(np.abs(pi @ p - pi)) <= 1e-12
    assert abs(pi.sum() - 1.0) <= 1e-12 and np.all(pi > 0)
    # conditioning reduces entropy: 0 <= H(X1 | X0) <= H(X1) = H(pi) <= ln V
    assert 0.0 <= m.entropy_rate <= m.unigram_entropy <= math.log(vocab_size) + 1e-12
    assert m.bayes_loss == m.entropy_rate


def test_markov_bigram_statistics_match_transition():
    m = MarkovLanguage(vocab_size=6, seq_len=8, concentration=0.7, seed=4)
    s = m.sample_sequences(200, 600, gen(8)).numpy()
    prev, nxt = s[:, :-1].ravel(), s[:, 1:].ravel()
    counts = np.zeros((6, 6))
    np.add.at(counts, (prev, nxt), 1)
    n_i = counts.sum(1, keepdims=True)
    p_hat = counts / n_i
    p = m.transition
    # given n_i visits to state i the next states are n_i i.i.d. draws from row i: binomial SE per entry,
    # plus one count of slack for the discreteness of tiny probabilities
    tol = 5 * np.sqrt(p * (1 - p) / n_i) + 1 / n_i
    assert np.all(np.abs(p_hat - p) <= tol), np.abs(p_hat - p) / tol


def test_markov_first_token_follows_stationary():
    m = MarkovLanguage(vocab_size=6, concentration=0.7, seed=4)
    x0 = m.sample_sequences(20000, 1, gen(9)).numpy().ravel()
    freq = np.bincount(x0, minlength=6) / x0.size
    pi = m.stationary
    assert np.all(np.abs(freq - pi) <= 5 * np.sqrt(pi * (1 - pi) / x0.size))


def test_markov_loss_of_true_model_is_the_entropy_rate():
    m = MarkovLanguage(vocab_size=8, seq_len=64, concentration=0.5, seed=5)
    x, y = m.sample(400, gen(10), dtype=torch.float64)
    logp = torch.log(torch.tensor(m.transition))  # (V, V)
    logits = logp[x]  # (B, T, V): the true conditional as logits
    loss = m.loss(logits, y).item()
    # per-sequence mean NLLs are independent across sequences: SE from their spread
    nll = -logp[x, y].mean(1).numpy()
    se = nll.std(ddof=1) / math.sqrt(nll.size)
    assert loss == pytest.approx(nll.mean(), rel=1e-12)
    assert abs(loss - m.entropy_rate) <= 5 * se


def test_markov_near_uniform_limit():
    # Dirichlet(alpha) rows concentrate on the uniform law as alpha -> inf: H -> ln V (deficit O(1/alpha))
    m = MarkovLanguage(vocab_size=10, concentration=1e6, seed=0)
    assert m.entropy_rate == pytest.approx(math.log(10), abs=1e-4)


def test_primitivity_check():
    assert not _is_primitive(np.array([[0, 1], [1, 0]]) > 0)  # periodic
    assert not _is_primitive(np.eye(3) > 0)  # reducible
    assert _is_primitive(np.array([[0, 1], [1, 1]]) > 0)
    # a 3-cycle with one self-loop is primitive, but only from exponent (n-1)^2 + 1 = 5 on
    assert _is_primitive(np.array([[1, 1, 0], [0, 0, 1], [1, 0, 0]]) > 0)


def test_markov_rejects_non_ergodic_underflow():
    # at concentration 1e-6 float64 Dirichlet draws underflow to exact zeros and the chain breaks apart
    with pytest.raises(ValueError, match="concentration"):
        MarkovLanguage(vocab_size=16, concentration=1e-6, seed=0)


# ------------------------------------------------------------------------------------------------
# corpus LM task


def test_corpus_lm_windows_and_eval(small_corpus_spec):
    task = CorpusLM(seq_len=16, corpus=small_corpus_spec)
    assert task.vocab_size == 256 and task.input_kind == "tokens"
    x, y = task.sample(8, gen(0))
    assert x.shape == y.shape == (8, 16) and x.dtype == torch.long
    assert torch.equal(x[:, 1:], y[:, :-1])  # targets are the inputs shifted by one
    train = task.data.train_tokens
    for row, off in zip(x, task.window_offsets(8, gen(0)), strict=True):
        np.testing.assert_array_equal(row.numpy(), train[int(off) : int(off) + 16])
    # evaluation: deterministic, only validation tokens, every val token after the first predicted once
    val = task.data.val_tokens
    batches = list(task.eval_batches(batch_size=7))
    assert sum(b[0].shape[0] for b in batches) == task.n_eval_windows
    targets = torch.cat([b[1] for b in batches]).reshape(-1).numpy()
    np.testing.assert_array_equal(targets, val[1 : 1 + task.n_eval_windows * 16])
    again = list(task.eval_batches(batch_size=7, max_batches=2))
    assert len(again) == 2 and torch.equal(again[1][0], batches[1][0])
    logits = torch.zeros(8, 16, 256)
    assert task.loss(logits, y).item() == pytest.approx(math.log(256), rel=1e-6)


def test_corpus_lm_char_vocab(small_corpus_spec):
    task = CorpusLM(seq_len=8, corpus=CorpusSpec(max_bytes=40_000, encoding="char"))
    x, y = task.sample(4, gen(0))
    assert task.vocab_size == task.data.vocab_size < 128
    assert int(x.max()) < task.vocab_size


# ------------------------------------------------------------------------------------------------
# validation


@pytest.mark.parametrize(
    "kwargs,field",
    [
        (dict(x_dist="cauchy"), "x_dist"),
        (dict(layout="stacked"), "layout"),
        (dict(d=0), "d"),
        (dict(n_points=0), "n_points"),
        (dict(noise_std=-0.1), "noise_std"),
        (dict(w_std=0.0), "w_std"),
        (dict(x_dist="anisotropic"), "spectrum"),
        (dict(d=2, x_dist="anisotropic", spectrum=(1.0,)), "spectrum"),
        (dict(d=2, x_dist="anisotropic", spectrum=(1.0, -1.0)), r"spectrum\[1\]"),
        (dict(d=2, x_dist="anisotropic", spectrum=(1.0, 1.0), basis_seed=-1), "basis_seed"),
        (dict(spectrum=(1.0,) * 10), "spectrum"),
        (dict(basis_seed=0), "basis_seed"),
    ],
)
def test_regression_validation(kwargs, field):
    with pytest.raises(ValueError, match=field):
        LinearRegressionTask(**kwargs)


@pytest.mark.parametrize(
    "kwargs,field",
    [
        (dict(vocab_size=1), "vocab_size"),
        (dict(seq_len=0), "seq_len"),
        (dict(concentration=0.0), "concentration"),
        (dict(seed=-1), "seed"),
        (dict(seed=1.5), "seed"),
    ],
)
def test_markov_validation(kwargs, field):
    with pytest.raises(ValueError, match=field):
        MarkovLanguage(**kwargs)


def test_sample_validation():
    task = LinearRegressionTask()
    with pytest.raises(ValueError, match="batch_size"):
        task.sample(0, gen(0))
    with pytest.raises(ValueError, match="generator"):
        task.sample(2, 0)
    with pytest.raises(ValueError, match="seq_len"):
        CorpusLM(seq_len=0)
    with pytest.raises(ValueError, match="corpus"):
        CorpusLM(corpus="stdlib")


# ------------------------------------------------------------------------------------------------
# sequence families (Barbero et al. 2024)


def test_repeat_last_pair():
    a, b = repeat_last_pair([3, 1, 2])
    assert a.tolist() == [3, 1, 2] and b.tolist() == [3, 1, 2, 2]
    a, b = repeated_token_pair(1024, 5)
    assert a.tolist() == [5] * 1024 and b.tolist() == [5] * 1025
    assert a.dtype == b.dtype == torch.long


def test_counting_pair():
    a, b = counting_pair(3)
    assert a.tolist() == [1, 1, 1, 0] and b.tolist() == [1, 1, 1, 1, 0]
    a, b = counting_pair(1024, one=7, zero=2)
    assert a.tolist() == [7] * 1024 + [2] and b.tolist() == [7] * 1025 + [2]


def test_early_token_pair():
    base = torch.arange(10)
    a, b = early_token_pair(base, 2, 42)
    assert a.tolist() == list(range(10))
    assert b.tolist() == [0, 1, 42, 3, 4, 5, 6, 7, 8, 9]
    assert base.tolist() == list(range(10))  # input not modified


def test_with_separators():
    assert with_separators([1] * 7, 9, 3).tolist() == [1, 1, 1, 9, 1, 1, 1, 9, 1]
    assert with_separators([1] * 6, 9, 3).tolist() == [1, 1, 1, 9, 1, 1, 1]  # no trailing separator
    assert with_separators([4, 5], 9, 3).tolist() == [4, 5]
    for n in (1, 2, 5, 12, 1024):
        seq = torch.arange(n) % 7
        for every in (1, 2, 5):
            out = with_separators(seq, 99, every)
            assert out.numel() == n + (n - 1) // every
            keep = out != 99
            assert torch.equal(out[keep], seq) and out[-1] == seq[-1]
            sep_idx = torch.nonzero(~keep).ravel()
            assert torch.equal(sep_idx, torch.arange(1, (n - 1) // every + 1) * (every + 1) - 1)
    a, b = apply_to_pair(counting_pair(5), with_separators, 2, 2)
    assert a.tolist() == [1, 1, 2, 1, 1, 2, 1, 0]
    assert b.tolist() == [1, 1, 2, 1, 1, 2, 1, 1, 2, 0]


@pytest.mark.parametrize(
    "call,field",
    [
        (lambda: repeat_last_pair([]), "base"),
        (lambda: repeat_last_pair([1, -2]), "base"),
        (lambda: repeat_last_pair(torch.ones(3)), "base"),
        (lambda: repeat_last_pair(torch.ones(2, 2, dtype=torch.long)), "base"),
        (lambda: repeat_last_pair([1, 5], vocab_size=5), "base"),
        (lambda: repeated_token_pair(0, 1), "n"),
        (lambda: counting_pair(0), "k"),
        (lambda: counting_pair(3, one=1, zero=1), "one and zero"),
        (lambda: counting_pair(3, one=4, vocab_size=4), "one"),
        (lambda: early_token_pair([1, 2, 3], 2, 0), "position"),
        (lambda: early_token_pair([1, 2, 3], 0, 1), "replacement"),
        (lambda: with_separators([1, 2], 3, 0), "every"),
        (lambda: with_separators([1, 2], -1, 2), "sep_token"),
    ],
)
def test_family_validation(call, field):
    with pytest.raises(ValueError, match=field):
        call()


# ================================================================================================
# multi-query associative recall


@pytest.mark.parametrize("layout", ["tokens", "paired"])
def test_associative_recall_layout(layout):
    from analysis.data.tasks import AssociativeRecall

    task = AssociativeRecall(n_pairs=5, n_keys=7, n_values=6, n_queries=3, layout=layout)
    keys, values, asked = task.draw(4, gen(3))
    inputs, targets = task.sample(4, gen(3))
    assert task_from_config(task.config()) == task
    N, M = 5, 3
    assert all(len(set(row.tolist())) == N for row in keys)  # distinct keys in a sequence
    assert all(len(set(row.tolist())) == M for row in asked)  # queries: distinct stored keys
    assert targets.shape == (4, task.seq_len) and (targets[:, :-M] == -1).all()
    if layout == "tokens":
        assert inputs.shape == (4, 2 * N + M) and inputs.dtype == torch.long
        assert torch.equal(inputs[:, 0 : 2 * N : 2], keys) and torch.equal(inputs[:, 1 : 2 * N : 2], values + 7)
        assert (inputs[:, : 2 * N : 2] < 7).all() and (inputs[:, 1 : 2 * N : 2] >= 7).all()  # disjoint ranges
        assert torch.equal(inputs[:, 2 * N :], keys.gather(1, asked))
        assert torch.equal(targets[:, -M:], values.gather(1, asked) + 7)
        logits = torch.zeros(4, task.seq_len, 13)
    else:
        assert inputs.shape == (4, N + M, 13) and inputs.dtype == torch.float32
        assert torch.equal(inputs[:, :N, :7].argmax(-1), keys) and torch.equal(inputs[:, :N, 7:].argmax(-1), values)
        assert (inputs[:, :N].sum(-1) == 2).all() and (inputs[:, N:].sum(-1) == 1).all()
        assert torch.equal(inputs[:, N:, :7].argmax(-1), keys.gather(1, asked))
        assert torch.equal(targets[:, -M:], values.gather(1, asked))
        logits = torch.zeros(4, task.seq_len, 6)
    # a model answering every query right: loss -> 0 and accuracy 1, counting query positions only
    logits.scatter_(-1, targets.clamp_min(0)[..., None], 50.0)
    assert float(task.loss(logits, targets)) < 1e-12
    assert task.accuracy(logits, targets).shape == (4, M) and task.accuracy(logits, targets).all()
    again = task.sample(4, gen(3))
    assert torch.equal(again[0], inputs) and torch.equal(again[1], targets)  # deterministic from the generator


def test_associative_recall_refuses_more_pairs_than_keys():
    from analysis.data.tasks import AssociativeRecall

    with pytest.raises(ValueError, match="^n_pairs"):
        AssociativeRecall(n_pairs=9, n_keys=8)
    with pytest.raises(ValueError, match="^n_queries"):
        AssociativeRecall(n_pairs=3, n_queries=4)


# ---------------------------------------------------------------------------------------------- induction, convolution
def test_induction_layout_targets_and_determinism():
    from analysis.data.tasks import Induction

    task = Induction(vocab_size=20, seq_len=14, segment=4)
    x, y = task.sample(64, torch.Generator().manual_seed(3))
    x2, y2 = task.sample(64, torch.Generator().manual_seed(3))
    assert torch.equal(x, x2) and torch.equal(y, y2)
    tokens, p = task.draw(64, torch.Generator().manual_seed(3))
    assert torch.equal(tokens, x) and set(p.tolist()) <= set(range(task.n_offsets))
    T, L = 14, 4
    for b in range(64):
        prefix = x[b, : T - L].tolist()
        assert len(set(prefix)) == T - L  # distinct: every repeated token occurred exactly once before
        assert x[b, T - L :].tolist() == prefix[p[b] : p[b] + L]
        assert (y[b, : T - L] == -1).all()
        for i in range(L):  # the token that followed the previous occurrence of the current token
            t = T - L + i
            j = x[b, :t].tolist().index(int(x[b, t]))
            assert int(y[b, t]) == int(x[b, j + 1])
    logits = torch.nn.functional.one_hot(y.clamp(min=0), 20).double() * 10
    assert task.accuracy(logits, y).all() and task.accuracy(logits, y).shape == (64, L)
    assert float(task.loss(logits, y)) < 1e-3
    assert task_from_config(task.config()) == task


@pytest.mark.parametrize(
    "kwargs,field",
    [(dict(segment=1), "segment"), (dict(seq_len=15, segment=8), "seq_len"), (dict(vocab_size=10), "vocab_size")],
)
def test_induction_validation(kwargs, field):
    from analysis.data.tasks import Induction

    with pytest.raises(ValueError, match=field):
        Induction(**kwargs)


def test_convolution_regression_is_deterministic_and_its_loss_skips_the_padded_rows():
    from analysis.data.tasks import ConvolutionRegression

    task = ConvolutionRegression(d=2, taps=3, seq_len=8, kernel_seed=1)
    x, y = task.sample(4, torch.Generator().manual_seed(0))
    x2, y2 = task.sample(4, torch.Generator().manual_seed(0))
    assert torch.equal(x, x2) and torch.equal(y, y2) and x.shape == y.shape == (4, 8, 2)
    wrong = y.clone()
    wrong[:, :2] += 5.0  # the first K - 1 rows see the zero padding: not scored
    assert float(task.loss(wrong, y)) == 0.0
    assert task_from_config(task.config()) == task
    with pytest.raises(ValueError, match="seq_len"):
        ConvolutionRegression(taps=4, seq_len=3)


# ---------------------------------------------------------------------------------------------- selective copying
@pytest.mark.parametrize("spacing", ["random", "fixed"])
def test_selective_copying_layout_targets_and_determinism(spacing):
    from analysis.data.tasks import SelectiveCopying

    task = SelectiveCopying(n_copy=3, n_values=5, length=10, spacing=spacing)
    x, y = task.sample(64, gen(4))
    L, n = task.length, task.n_copy
    assert task_from_config(task.config()) == task
    assert x.shape == y.shape == (64, L + n) and x.dtype == torch.long and task.vocab_size == 7
    region = x[:, :L]
    assert ((region != task.BLANK).sum(-1) == n).all()  # exactly n data tokens among blanks
    assert (x[:, L:] == task.GO).all() and (y[:, :L] == -1).all()
    data = region[region != task.BLANK].view(64, n)  # in order of position
    assert torch.equal(y[:, L:], data) and (data >= 2).all() and (data < 7).all()
    pos = (region != task.BLANK).nonzero()[:, 1].view(64, n)
    if spacing == "fixed":
        assert (pos == torch.tensor([2, 5, 8])).all()  # (i + 1) * (10 // 3) - 1
    else:
        assert len({tuple(p.tolist()) for p in pos}) > 10  # the positions move from sequence to sequence
    logits = torch.zeros(64, L + n, 7).scatter_(-1, y.clamp_min(0)[..., None], 50.0)
    assert float(task.loss(logits, y)) < 1e-12 and task.accuracy(logits, y).shape == (64, n)
    assert task.accuracy(logits, y).all() and not task.accuracy(-logits, y).any()
    again = task.sample(64, gen(4))
    assert torch.equal(again[0], x) and torch.equal(again[1], y)
    # the same seed gives both spacings the same data tokens
    other = SelectiveCopying(n_copy=3, n_values=5, length=10, spacing="random" if spacing == "fixed" else "fixed")
    assert torch.equal(other.sample(64, gen(4))[1], y)


def test_selective_copying_validates_its_fields():
    from analysis.data.tasks import SelectiveCopying

    with pytest.raises(ValueError, match="^length"):
        SelectiveCopying(n_copy=5, length=4)
    with pytest.raises(ValueError, match="^spacing"):
        SelectiveCopying(spacing="sometimes")
    with pytest.raises(ValueError, match="^n_values"):
        SelectiveCopying(n_values=1)


# ---------------------------------------------------------------------------------------------- nearest neighbour
def test_nearest_neighbour_layout_targets_by_loops_and_determinism():
    from analysis.data.tasks import NearestNeighbour

    task = NearestNeighbour(d=5, n_keys=6, n_queries=3)
    x, y = task.sample(4, torch.Generator().manual_seed(0), dtype=torch.float64)
    x2, y2 = task.sample(4, torch.Generator().manual_seed(0), dtype=torch.float64)
    assert torch.equal(x, x2) and torch.equal(y, y2)
    assert x.shape == (4, 9, 10) and y.shape == (4, 3, 5) and task.seq_len == 9 and task.d_in == 10
    keys, queries = x[:, :6, :5], x[:, 6:, 5:]
    assert (x[:, :6, 5:] == 0).all() and (x[:, 6:, :5] == 0).all()  # keys and queries in separate channels
    np.testing.assert_allclose(keys.norm(dim=-1).numpy(), 1.0, atol=1e-15)
    for b in range(4):
        for m in range(3):
            best = max(range(6), key=lambda j: float(queries[b, m] @ keys[b, j]))
            assert torch.equal(y[b, m], keys[b, best])
    assert task_from_config(task.config()) == task


def test_nearest_neighbour_queries_are_isotropic_gaussian_with_variance_one_over_d():
    from analysis.data.tasks import NearestNeighbour

    task = NearestNeighbour(d=4, n_keys=2, n_queries=8)
    _, q = task.draw(4000, torch.Generator().manual_seed(1))
    cov = torch.einsum("bmi,bmj->ij", q, q).numpy() / (4000 * 8)
    np.testing.assert_allclose(cov, np.eye(4) / 4, atol=0.01)


def test_nearest_neighbour_loss_is_relative_mse_at_queries_and_the_bias_hides_queries():
    from analysis.data.tasks import NearestNeighbour
    from analysis.training.train import forward
    from analysis.zoo.model import ModelConfig, TinyTransformer

    task = NearestNeighbour(d=3, n_keys=4, n_queries=2)
    x, y = task.sample(5, torch.Generator().manual_seed(2), dtype=torch.float64)
    out = torch.zeros(5, 6, 3, dtype=torch.float64)
    assert float(task.loss(out, y)) == pytest.approx(1.0, abs=1e-12)  # |k*| = 1: predicting 0 costs exactly 1
    out[:, 4:] = y
    out[:, :4] = 7.0  # key rows are not scored
    assert float(task.loss(out, y)) == 0.0
    bias = task.attn_bias(6)
    assert torch.isinf(bias[:, 4:]).all() and (bias[:, :4] == 0).all()
    model = TinyTransformer(
        ModelConfig(
            input="embedded",
            output="linear",
            d_out=3,
            d_model=6,
            n_layers=1,
            n_heads=2,
            d_mlp=0,
            norm="none",
            attn_residual=False,
            dtype="float64",
        )
    ).eval()
    x2 = x.clone()
    x2[:, 4, 3:] += 1.0  # change the first query: the second query's output must not move (it sees keys only)
    with torch.no_grad():
        a, b = forward(model, task, x), forward(model, task, x2)
    assert torch.equal(a[:, 5], b[:, 5]) and not torch.equal(a[:, 4], b[:, 4])
    with torch.no_grad():
        c = model(x2)  # without the bias the second query sees the first one
    assert not torch.equal(c[:, 5], model(x)[:, 5])
    with pytest.raises(ValueError, match="outputs"):
        task.loss(torch.zeros(5, 5, 3), y)


@pytest.mark.parametrize(
    "kwargs,field", [(dict(d=0), "d"), (dict(n_keys=0), "n_keys"), (dict(n_queries=0), "n_queries")]
)
def test_nearest_neighbour_validation(kwargs, field):
    from analysis.data.tasks import NearestNeighbour

    with pytest.raises(ValueError, match=field):
        NearestNeighbour(**kwargs)


# ------------------------------------------------------------------------------------------------
# planted-key retrieval


def test_planted_key_retrieval_layout_targets_and_determinism():
    import json

    from analysis.data.tasks import PlantedKeyRetrieval

    task = PlantedKeyRetrieval(n_pairs=40, n_keys=5, n_values=3)
    keys, values, planted, query = task.draw(64, gen(0))
    B = 64
    # exactly one key per sequence matches the query, at the planted position (40 pairs > 5 keys: distractor keys
    # repeat, the query's never does)
    match = keys == query[:, None]
    assert torch.equal(match.sum(1), torch.ones(B, dtype=torch.long))
    assert torch.equal(match.float().argmax(1), planted)
    assert keys.min() >= 0 and keys.max() < 5 and values.min() >= 0 and values.max() < 3
    x, y = task.sample(B, gen(0))
    assert x.shape == (B, 41, 8) and y.shape == (B, 41) and task.seq_len == 41
    # the one-hot layout, decoded back
    assert torch.equal(x[:, :40, :5].argmax(-1), keys) and torch.equal(x[:, :40, 5:].argmax(-1), values)
    assert torch.equal(x[:, :40].sum(-1), torch.full((B, 40), 2.0))
    assert torch.equal(x[:, 40, :5].argmax(-1), query) and float(x[:, 40, 5:].abs().sum()) == 0.0
    assert torch.equal(y[:, 40], values[torch.arange(B), planted]) and bool((y[:, :40] == -1).all())
    # determinism: the same generator seed gives the same batch; another seed another
    assert torch.equal(task.sample(B, gen(0))[0], x) and not torch.equal(task.sample(B, gen(1))[0], x)
    # the loss and accuracy read the query position only; a read-out naming the planted value is always right
    out = torch.zeros(B, 41, 3)
    out[torch.arange(B), 40, y[:, 40]] = 10.0
    assert bool(task.accuracy(out, y).all()) and float(task.loss(out, y)) < 1e-3
    again = task_from_config(json.loads(json.dumps(task.config())))
    assert again == task and torch.equal(again.sample(3, gen(5))[0], task.sample(3, gen(5))[0])


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"n_keys": 1}, "n_keys"),
        ({"n_values": 1}, "n_values"),
        ({"n_pairs": 0}, "n_pairs"),
        ({"n_keys": 2.5}, "n_keys"),
    ],
)
def test_planted_key_retrieval_validation(kwargs, field):
    from analysis.data.tasks import PlantedKeyRetrieval

    with pytest.raises(ValueError, match=field):
        PlantedKeyRetrieval(**kwargs)
    with pytest.raises(ValueError, match="outputs"):
        PlantedKeyRetrieval().loss(torch.zeros(2, 65, 5), torch.zeros(2, 65, dtype=torch.long))


# ------------------------------------------------------------------------------------------------
# model_io: the model a task plugs into


@pytest.mark.parametrize(
    "task",
    [
        AssociativeRecall(n_pairs=3, n_keys=8, n_values=5, layout="paired"),
        AssociativeRecall(n_pairs=3, n_keys=8, n_values=5, layout="tokens"),
        MarkovLanguage(vocab_size=7, seq_len=6),
        LinearRegressionTask(d=3, n_points=4),
    ],
)
def test_model_io_builds_a_model_that_reads_and_writes_the_task(task):
    """The fields of model_io give a model whose forward pass takes the task's inputs and whose loss is finite."""
    from analysis.zoo.model import ModelConfig, TinyTransformer

    io = model_io(task)
    assert io["input"] == task.input_kind
    model = TinyTransformer(ModelConfig(**io, d_model=8, n_layers=1, n_heads=1, d_mlp=0, max_len=64, seed=0))
    inputs, targets = task.sample(2, gen(0))
    loss = task.loss(model(inputs), targets)
    assert torch.isfinite(loss)


def test_model_io_refuses_an_unknown_input_kind():
    class Odd:
        input_kind = "images"

    with pytest.raises(ValueError, match="task.input_kind"):
        model_io(Odd())


def test_query_slot_readout_reads_minus_the_query_y_slot():
    """QuerySlotReadout samples exactly as its regression task and scores minus the last token's last coordinate
    with half the mean squared error (von Oswald's convention), whatever the rest of the output holds."""
    from analysis.data.tasks import QuerySlotReadout

    inner = LinearRegressionTask(d=3, n_points=5, layout="concat")
    task = QuerySlotReadout(inner)
    x, y = task.sample(4, torch.Generator().manual_seed(1))
    x0, y0 = inner.sample(4, torch.Generator().manual_seed(1))
    assert torch.equal(x, x0) and torch.equal(y, y0) and task.d_in == inner.d_in == 4
    out = torch.randn(4, 6, 4, generator=torch.Generator().manual_seed(2))
    expected = 0.5 * float(((-out[:, -1, -1] - y) ** 2).mean())
    assert float(task.loss(out, y)) == pytest.approx(expected, rel=1e-6)
    out[:, :, :-1] = 7.0  # only the query's y-slot is read
    assert float(task.loss(out, y)) == pytest.approx(expected, rel=1e-6)
