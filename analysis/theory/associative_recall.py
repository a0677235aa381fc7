r"""Associative recall in a matrix memory: interference, the delta rule's overwrite, FAVOR+ (float64).

1. Additive outer-product memory (:func:`additive_readout_error`). ``S = sum_i v_i k_i^T`` with ``N`` keys
   i.i.d. uniform on the unit sphere of ``R^{d_k}`` and values i.i.d., independent of the keys, with mean
   zero and ``E|v|^2 = sigma^2`` (unit vectors uniform on the sphere of ``R^{d_v}``: ``sigma^2 = 1``; or
   ``N(0, I/d_v)``: the same). Reading key ``j``: ``S k_j = v_j + e_j``, ``e_j = sum_{i != j} v_i c_i`` with
   ``c_i = k_i . k_j``. The ``c_i`` are independent of the values, so ``E|e_j|^2 = sum_{i,l != j}
   E[v_i . v_l] E[c_i c_l] = sum_{i != j} sigma^2 E[c_i^2]`` (``E[v_i . v_l] = 0`` for ``i != l``), and for a
   uniform unit vector ``E[(k_i . k_j)^2] = 1/d_k`` (by symmetry the ``d_k`` squared coordinates of
   ``k_i`` in a basis containing ``k_j`` share the sum 1). Hence, exactly, for every ``N`` and ``d_k``::

       E|S k_j - v_j|^2 / E|v_j|^2 = (N - 1) / d_k.

   The law of the values enters only through ``E[v_i . v_l] = sigma^2 [i = l]``.
2. Delta rule with orthonormal keys (:func:`delta_orthonormal_readout`). ``S <- S + beta (v - S k) k^T``.
   With orthonormal keys ``S k_j`` changes only when ``k_j`` is written: after writes of key ``j`` with
   strengths ``beta_1, beta_2, ...`` and values ``w_1, w_2, ...`` the read-out obeys
   ``r <- r + beta (w - r) = (1 - beta) r + beta w``. With ``beta = 1`` it is the last value written --
   an overwrite recalls exactly -- while the additive rule (``r <- r + w``) returns ``w_1 + w_2``.
3. FAVOR+ (Choromanski et al., 004#70; :func:`favor_variance`). Positive random features
   ``phi(x)_i = exp(w_i . x - |x|^2/2)/sqrt(m)``, ``w_i ~ N(0, I)`` i.i.d.: each term
   ``Z = exp(w . (x + y) - (|x|^2 + |y|^2)/2)`` has ``E Z = exp(|x + y|^2/2 - (|x|^2 + |y|^2)/2) = e^{x . y}``
   (the Gaussian moment generating function) and ``E Z^2 = e^{2 x . y} e^{|x + y|^2}``, so the estimator
   ``phi(x) . phi(y)`` (the mean of ``m`` such terms) is unbiased with variance::

       Var = e^{2 x . y} (e^{|x + y|^2} - 1) / m        (Performer, Lemma 2, i.i.d. features)

   The trigonometric features ``e^{|x|^2/2} [sin w_i . x, cos w_i . x] / sqrt(m)`` (Performer, Lemma 1;
   :func:`trig_variance`) estimate the same kernel with variance
   ``e^{|x + y|^2} e^{-2 x . y} (1 - e^{-|x - y|^2})^2 / (2 m)`` (``E cos(w . z) = e^{-|z|^2/2}``,
   ``E cos^2 = (1 + e^{-2|z|^2})/2``): the competing estimator, distinct where ``x . y`` is not large.
4. A FAVOR+ attention row (:func:`favor_row_mse`): ``p_j = a_j / A`` with ``a_j = e^{q . k_j}``, estimated by
   ``a^_j / A^`` from one set of ``m`` features. Each feature contributes the vector ``Z_j``; the
   estimator is a smooth function of the mean of ``m`` i.i.d. vectors, so by the delta method
   ``E|p^ - p|^2 = c / m + O(m^{-2})`` with ``c = sum_j Var(Z_j - p_j sum_l Z_l) / A^2`` and
   ``Cov(Z_j, Z_l) = exp(|2q + k_j + k_l|^2/2 - |q|^2 - (|k_j|^2 + |k_l|^2)/2) - a_j a_l``: the row's
   RMS error falls as ``m^{-1/2}`` (slope ``-1/2`` on log-log axes; the bias of the ratio is ``O(1/m)``,
   below the fluctuation at every ``m``).
5. Softmax attention over i.i.d. Gaussian tokens becomes a linear map (000#39; :func:`linearisation_limit`,
   :func:`linearisation_mse_constant`). One head reads a query ``x_q`` over ``n`` keys ``x_j ~ N(0, I_d)``
   i.i.d.: logits ``s_j = c (W_q x_q) . (W_k x_j) = a . x_j`` with ``a = c W_k^T W_q x_q``, output
   ``o = M sum_j w_j x_j / sum_j w_j`` with ``w_j = e^{a . x_j}`` and ``M = W_o W_v``. By the law of large
   numbers ``o -> M E[w x] / E[w]``, and exponential tilting of the Gaussian (``E[e^{a . x} f(x)] =
   e^{|a|^2/2} E_{N(a, I)} f``) gives ``E[w x] / E[w] = a``: the limit is ``M a = c W_o W_v W_k^T W_q x_q``,
   linear in the query. The estimator is self-normalised importance sampling, so by the delta method
   ``E|o - M a|^2 = C / n + O(n^{-2})`` with ``C = E[w^2 |M (x - a)|^2] / E[w]^2``; tilting by ``2a``
   (``E[w^2 f] = e^{2|a|^2} E_{N(2a, I)} f``, ``x - a ~ N(a, I)`` there) gives::

       C = e^{|a|^2} (|M|_F^2 + |M a|^2)

   and the RMS error falls as ``n^{-1/2}``. The competing hypothesis "the softmax average is as good as
   ``n`` draws from the tilted law" (effective sample size ``n``) predicts ``C = |M|_F^2``
   (:func:`linearisation_mse_iid`); the true effective sample size is smaller by about ``e^{|a|^2}``.
   The next term of the expansion is smaller than the first by a factor of order ``E[w^2]/(n E[w]^2) =
   e^{|a|^2}/n`` times moments of the same tilted law (order ``e^{2|a|^2}/n`` at most,
   :func:`linearisation_remainder`): the ``n^{-1/2}`` law is asymptotic, and a slope measured where this is
   not small is biased (the measured ``n E|o - M a|^2`` approaches ``C`` from below).
6. The delta rule with momentum (Momentum DeltaNet, 003#112; :func:`momentum_overlap`). Online regression of a
   fixed map ``W`` (``v_t = W k_t``, keys uniform on the unit sphere of ``R^d``, ``S_0 = M_0 = 0``) by
   ``M_t = mu M_{t-1} + beta (v_t - S_{t-1} k_t) k_t^T``, ``S_t = S_{t-1} + M_t``. The error ``E_t = S_t - W``
   obeys ``E_t = E_{t-1} + M_t``, ``M_t = mu M_{t-1} - beta E_{t-1} k_t k_t^T``; ``k_t`` is independent of
   ``(E_{t-1}, M_{t-1})`` and ``E[k k^T] = I/d`` exactly, so the means follow, with ``b = beta/d``,

       E[E_t] = r_t E_0,   r_t = (1 + mu - b) r_{t-1} - mu r_{t-2},   r_0 = 1,  r_1 = 1 - b,

   exactly (no large-d limit): a second-order system with roots ``lambda^2 - (1 + mu - b) lambda + mu = 0``,
   complex (the overlap ``r_t = <E_0, E_t> / |E_0|^2`` in expectation oscillates through zero, with modulus
   ``sqrt(mu)`` per step) iff ``(1 - sqrt(mu))^2 < b < (1 + sqrt(mu))^2``, real otherwise (two decaying
   exponentials, no oscillation, for ``b < (1 - sqrt(mu))^2``), and stable iff ``0 < b < 2 (1 + mu)``. The competing
   first-order picture, momentum as a larger step ``b / (1 - mu)`` (the heavy ball's long-run step; it has the same
   sum ``sum_t r_t = (1 - mu)/b``), gives ``(1 - b/(1 - mu))^t``, which never changes sign for ``b < 1 - mu``.

   The second moments are exact too (:func:`momentum_second_moment`): with ``P = k k^T`` a projector (``P^2 = P``),
   every quadratic form of the update is linear in P (``|E P|^2 = tr(E^T E P)``, ``<M, E P>``), so with ``a =
   E|E|^2``, ``c = E<E, M>``, ``m = E|M|^2`` (all over ``|E_0|^2``; start ``(1, 0, 0)``)::

       m' = mu^2 m - 2 mu beta c / d + beta^2 a / d
       c' = mu c - beta a / d + m'
       a' = a + 2 (mu c - beta a / d) + m'

   a linear map whose spectral radius decides whether the memory's error converges. It is not the first moment's:
   at ``mu = 0.9``, ``beta/d = 1/32`` the mean overlap contracts by ``sqrt(mu) = 0.949`` per write while
   ``E|E_t|^2`` grows by 1.10 per write (the key noise, amplified by the momentum, outruns the mean's decay); at
   ``mu = 0`` it is the delta rule's ``1 - beta (2 - beta)/d``.
7. An additive memory with a global decay (RetNet, TransNormerLLM; the premise of gated linear attention, 003#2;
   :func:`decayed_readout_error`). ``S_t = gamma S_{t-1} + v_t k_t^T`` over N writes leaves
   ``S = sum_i gamma^(N-i) v_i k_i^T``. Reading key j, item 1's argument with the weights ``gamma^(N-i)``: the own
   term is attenuated to ``gamma^(N-j) v_j`` and every other value enters with ``E[c_i^2] = 1/d_k``, so exactly::

       E|S k_j - v_j|^2 / E|v_j|^2 = (1 - gamma^(N-j))^2 + (1/d_k) sum_{i != j} gamma^(2(N-i)),

   with ``sum_i gamma^(2(N-i)) = (1 - gamma^(2N)) / (1 - gamma^2)``. The interference is bounded by
   ``1 / (d_k (1 - gamma^2))`` at every N, where the undecayed memory's ``(N - 1)/d_k`` grows without bound; the
   price is forgetting (old items' own term fades, their error tends to 1 + the interference). Averaged over the N
   items the error therefore tends to a constant, ``1 + 1/(d_k (1 - gamma^2))``, as N grows.
"""

from __future__ import annotations

import math

import numpy as np

from analysis.core.validation import check_float, check_int

ROW_ERROR_EXPONENT = -0.5  # d ln RMS / d ln m of a FAVOR+ row (item 4: c / m to leading order)


def additive_readout_error(n_pairs: int | np.ndarray, d_key: int) -> float | np.ndarray:
    """``(N - 1) / d_k``: the exact relative squared read-out error of an additive memory (item 1)."""
    return (np.asarray(n_pairs, dtype=np.float64) - 1.0) / float(d_key)


def decayed_readout_error(n_pairs: int, d_key: int, gamma: float) -> np.ndarray:
    """(N,) the exact relative squared read-out error of item j = 1..N of an additive memory with decay ``gamma``
    (item 7): ``(1 - gamma^(N-j))^2 + (sum_i gamma^(2(N-i)) - gamma^(2(N-j))) / d_k``; ``gamma = 1`` gives item 1's
    ``(N - 1)/d_k`` for every j."""
    check_int("n_pairs", n_pairs, minimum=1)
    check_int("d_key", d_key, minimum=1)
    check_float("gamma", gamma, minimum=0.0, maximum=1.0)
    age = np.arange(n_pairs - 1, -1, -1, dtype=np.float64)  # N - j for j = 1..N
    weight = gamma**age
    total = float(np.sum(weight * weight))
    return (1.0 - weight) ** 2 + (total - weight * weight) / d_key


def unit_vectors(rng: np.random.Generator, shape: tuple[int, ...], d: int) -> np.ndarray:
    """i.i.d. uniform unit vectors of ``R^d`` (normalised Gaussians), shape ``(*shape, d)``."""
    g = rng.standard_normal((*shape, d))
    return g / np.linalg.norm(g, axis=-1, keepdims=True)


def mc_additive_readout_error(
    n_pairs: int, d_key: int, d_value: int, draws: int, rng: np.random.Generator, values: str = "unit"
) -> np.ndarray:
    """Per-draw mean over the N keys of ``|S k_j - v_j|^2 / E|v|^2`` for ``draws`` independent memories
    (values ``"unit"`` on the sphere or ``"gaussian"`` ``N(0, I/d_v)``, both with ``E|v|^2 = 1``)."""
    keys = unit_vectors(rng, (draws, n_pairs), d_key)
    if values == "unit":
        vals = unit_vectors(rng, (draws, n_pairs), d_value)
    elif values == "gaussian":
        vals = rng.standard_normal((draws, n_pairs, d_value)) / math.sqrt(d_value)
    else:
        raise ValueError(f"values must be 'unit' or 'gaussian', got {values!r}")
    S = np.einsum("rnv,rnk->rvk", vals, keys)
    read = np.einsum("rvk,rnk->rnv", S, keys)
    return ((read - vals) ** 2).sum(-1).mean(-1)


def delta_orthonormal_readout(betas: np.ndarray, writes: np.ndarray) -> np.ndarray:
    """``S k`` after writing values ``writes[0], writes[1], ...`` (rows) to one key of an orthonormal set
    with strengths ``betas``, from ``S = 0``: ``r <- (1 - beta) r + beta w`` (item 2)."""
    r = np.zeros(writes.shape[1:])
    for beta, w in zip(betas, writes, strict=True):
        r = (1.0 - beta) * r + beta * w
    return r


def additive_overwrite_readout(writes: np.ndarray) -> np.ndarray:
    """``S k`` after additive writes of ``writes`` to one key of an orthonormal set: their sum (item 2)."""
    return writes.sum(0)


def softmax_kernel(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.exp(x @ y))


def favor_variance(x: np.ndarray, y: np.ndarray, m: int) -> float:
    """Variance of the FAVOR+ estimate of ``e^{x . y}`` with ``m`` i.i.d. positive features (item 3)."""
    s = x + y
    return float(np.exp(2.0 * (x @ y)) * np.expm1(s @ s) / m)


def trig_variance(x: np.ndarray, y: np.ndarray, m: int) -> float:
    """Variance of the trigonometric random-feature estimate of ``e^{x . y}`` with ``m`` frequencies (item 3)."""
    s, d = x + y, x - y
    return float(np.exp(s @ s - 2.0 * (x @ y)) * (-np.expm1(-(d @ d))) ** 2 / (2.0 * m))


def favor_row_mse_constant(q: np.ndarray, keys: np.ndarray) -> float:
    """``c`` of item 4: ``E|p^ - p|^2 = c / m + O(m^-2)`` for the softmax row of ``q`` over ``keys`` (n, d)."""
    a = np.exp(keys @ q)  # (n,) = E Z_j
    A = a.sum()
    p = a / A
    s = 2.0 * q[None, :] + keys  # (n, d): 2q + k_j; |2q + k_j + k_l|^2 = |s_j|^2 + 2 s_j . k_l + |k_l|^2
    kk = (keys * keys).sum(-1)
    log_second = 0.5 * ((s * s).sum(-1)[:, None] + 2.0 * s @ keys.T + kk[None, :])
    log_second -= (q @ q) + 0.5 * (kk[:, None] + kk[None, :])
    cov = np.exp(log_second) - np.outer(a, a)  # Cov(Z_j, Z_l) (symmetric)
    # Var(Z_j - p_j sum_l Z_l) = C_jj - 2 p_j sum_l C_jl + p_j^2 sum_{l,l'} C_ll'
    var = np.diag(cov) - 2.0 * p * cov.sum(1) + p**2 * cov.sum()
    return float(var.sum() / A**2)


def favor_row_rms(q: np.ndarray, keys: np.ndarray, m: np.ndarray | int) -> np.ndarray:
    """Leading-order RMS error ``sqrt(c / m)`` of a FAVOR+ attention row (item 4)."""
    return np.sqrt(favor_row_mse_constant(q, keys) / np.asarray(m, dtype=np.float64))


LINEARISATION_EXPONENT = -0.5  # d ln RMS / d ln n of softmax attention around its linear limit (item 5)


LINEARISATION_REMAINDER_MAX = 0.05  # the n where the slope is measured: remainder estimate below 5%


def linearisation_remainder(a_norm: float, n: int | np.ndarray) -> float | np.ndarray:
    """``e^{2|a|^2}/n``: the order of the O(n^-2) term relative to ``C/n`` (item 5)."""
    return np.exp(2.0 * float(a_norm) ** 2) / np.asarray(n, dtype=np.float64)


def linearisation_limit(M: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``M a``: the n -> infinity output of softmax attention over N(0, I) tokens (item 5); ``a`` (..., d)."""
    return np.asarray(a, dtype=np.float64) @ np.asarray(M, dtype=np.float64).T


def linearisation_mse_constant(M: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``C = e^{|a|^2} (|M|_F^2 + |M a|^2)`` of item 5: ``E|o - M a|^2 = C / n + O(n^-2)``; ``a`` (..., d)."""
    a = np.asarray(a, dtype=np.float64)
    Ma = linearisation_limit(M, a)
    return np.exp((a * a).sum(-1)) * (np.sum(np.asarray(M, dtype=np.float64) ** 2) + (Ma * Ma).sum(-1))


def linearisation_mse_iid(M: np.ndarray) -> float:
    """``|M|_F^2``: the constant if the softmax average were as good as n draws of the tilted law (item 5's
    competing hypothesis)."""
    return float(np.sum(np.asarray(M, dtype=np.float64) ** 2))


def mc_linearisation_mse(
    M: np.ndarray, a: np.ndarray, n: int, reps: int, rng: np.random.Generator
) -> tuple[float, float]:
    """Monte Carlo ``E|o - M a|^2`` (mean and SE over ``reps`` independent key sets) for checking item 5."""
    x = rng.standard_normal((reps, n, a.shape[-1]))
    s = x @ a
    w = np.exp(s - s.max(-1, keepdims=True))
    o = (w[..., None] * x).sum(1) / w.sum(-1, keepdims=True) @ np.asarray(M).T
    err = ((o - linearisation_limit(M, a)) ** 2).sum(-1)
    return float(err.mean()), float(err.std(ddof=1) / math.sqrt(reps))


def momentum_roots(b: float, mu: float) -> tuple[complex, complex]:
    """The roots of ``lambda^2 - (1 + mu - b) lambda + mu`` (item 6)."""
    check_float("b", b, minimum=0.0)
    check_float("mu", mu, minimum=0.0, maximum=1.0)
    r = np.roots([1.0, -(1.0 + mu - b), mu])
    return complex(r[0]), complex(r[1])


def momentum_oscillates(b: float, mu: float) -> bool:
    """Whether the mean overlap of item 6 oscillates: ``(1 - sqrt(mu))^2 < b < (1 + sqrt(mu))^2``."""
    check_float("b", b, minimum=0.0)
    check_float("mu", mu, minimum=0.0, maximum=1.0)
    return (1.0 - math.sqrt(mu)) ** 2 < b < (1.0 + math.sqrt(mu)) ** 2


def momentum_overlap(b: float, mu: float, T: int) -> np.ndarray:
    """``r_0 .. r_T`` of item 6: the mean overlap ``E<E_0, E_t>/|E_0|^2`` of the momentum delta rule's error with its
    start, ``b = beta / d``."""
    check_float("b", b, minimum=0.0)
    check_float("mu", mu, minimum=0.0, maximum=1.0)
    check_int("T", T, minimum=1)
    r = np.empty(T + 1)
    r[0], r[1] = 1.0, 1.0 - b
    for t in range(2, T + 1):
        r[t] = (1.0 + mu - b) * r[t - 1] - mu * r[t - 2]
    return r


def first_order_overlap(b: float, T: int) -> np.ndarray:
    """``(1 - b)^t``, t = 0..T: the delta rule's mean overlap at step ``b`` (item 6's alternative at ``b/(1 - mu)``)."""
    check_float("b", b, minimum=0.0)
    check_int("T", T, minimum=1)
    return (1.0 - b) ** np.arange(T + 1, dtype=np.float64)


def _second_moment_map(beta: float, d: int, mu: float) -> np.ndarray:
    """The 3 x 3 map of ``(a, c, m)`` of item 6's second moments."""
    m_row = np.array([beta * beta / d, -2.0 * mu * beta / d, mu * mu])
    c_row = np.array([-beta / d, mu, 0.0]) + m_row
    a_row = np.array([1.0 - 2.0 * beta / d, 2.0 * mu, 0.0]) + m_row
    return np.stack([a_row, c_row, m_row])


def momentum_second_moment(beta: float, d: int, mu: float, T: int) -> np.ndarray:
    """``E|E_t|^2 / |E_0|^2``, t = 0..T, of item 6's momentum delta rule (unit keys in R^d, exact)."""
    check_float("beta", beta, minimum=0.0)
    check_int("d", d, minimum=1)
    check_float("mu", mu, minimum=0.0, maximum=1.0)
    check_int("T", T, minimum=1)
    A = _second_moment_map(beta, d, mu)
    state = np.array([1.0, 0.0, 0.0])
    out = [1.0]
    for _ in range(T):
        state = A @ state
        out.append(state[0])
    return np.array(out)


def momentum_second_moment_rate(beta: float, d: int, mu: float) -> float:
    """The spectral radius of item 6's second-moment map: ``E|E_t|^2`` grows (> 1) or decays (< 1) like it^t."""
    check_float("beta", beta, minimum=0.0)
    check_int("d", d, minimum=1)
    check_float("mu", mu, minimum=0.0, maximum=1.0)
    return float(np.abs(np.linalg.eigvals(_second_moment_map(beta, d, mu))).max())
