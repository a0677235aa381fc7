r"""Attention-only layers: convolution by relative-position heads, the one-layer induction ceiling, and rank against
heads on nearest-neighbour search (float64).

1. **Convolution by attention** (Li et al., "Can Vision Transformers Perform Convolution?", seed 004#89; the 1-D
   causal version). A ``K``-tap convolution ``y_t = sum_{k<K} W_k x_{t-k}`` (``W_k`` d x d, zero padding) is one
   attention layer with ``K`` heads (:func:`construction`): head ``h`` gets the relative-position logit bias
   ``b_h[s] = 0`` at offset ``s = h`` and ``-inf`` at every other offset, zero content logits, value ``W_v,h = I``
   and output ``W_o,h = W_h``. Its softmax row is then exactly one-hot at ``t - h`` (``exp(-inf) = 0``, ``0/1`` and
   ``1/1`` are exact), so ``sum_h W_o,h W_v,h x_{t-h} = y_t``: only the matrix products round. Zero padding: the
   ``K - 1`` positions before the sequence are zero vectors (a softmax row cannot sum to 0, so an empty row is
   not the padding; a zero key/value is).
2. **Fewer heads: the rank bound** (:func:`rank_bound`). Any attention-only layer whose patterns do not depend
   on the content -- ``a_{h,t}[s]`` (head ``h``, query row ``t``, offset ``s``), e.g. a uniform kernel plus a
   relative-position bias -- and whose maps are linear computes ``yhat_t = sum_s sum_h a_{h,t}[s] M_h x_{t-s}``
   with ``M_h`` the product of the read-in, value, output and read-out maps of head ``h``. For i.i.d. white inputs
   ``x_t ~ N(0, I)`` and a row ``t >= K - 1`` (all taps inside the sequence), independence across offsets gives

       E|y_t - yhat_t|^2 = sum_{s<K} ||W_s - sum_h a_{h,t}[s] M_h||_F^2 + sum_{s>=K} ||sum_h a_{h,t}[s] M_h||_F^2
                         >= ||U - A_t M||_F^2,

   where ``U`` is the *unfolded kernel* (K x d^2, row ``k = vec W_k``), ``A_t`` the K x H matrix of the
   weights on the offsets ``s < K`` and ``M`` the H x d^2 matrix of rows ``vec M_h``. ``A_t M`` has rank
   ``<= H``, so by Eckart--Young ``||U - A_t M||_F^2 >= sum_{i>H} sigma_i^2`` (``sigma_i`` the singular values
   of ``U``), and ``E|y_t|^2 = ||U||_F^2 = sum_i sigma_i^2``. Hence, for every such layer and every row
   ``t >= K - 1``::

       relative MSE = E|y_t - yhat_t|^2 / E|y_t|^2 >= sum_{i>H} sigma_i^2 / sum_i sigma_i^2.

   The bound holds row by row, so the patterns need not even be Toeplitz. It is attained by the truncated SVD
   ``U_H = A M`` (:func:`rank_h_factors`) when ``A`` may be any real matrix; a softmax pattern is nonnegative
   (and sums to 1, a scale ``M_h`` absorbs), so the attainable minimum is that of a *nonnegative* left factor
   and may lie above the bound: for ``H = 1`` it is the bound only if the top left singular vector of ``U`` has
   one sign. ``H >= K`` reaches 0 (item 1).
3. **Induction with one position-free layer** (:func:`bag_ceiling`; seed 004#24). On the
   :class:`analysis.data.tasks.Induction` task (a prefix of ``T - L`` distinct tokens, its segment ``x[p:p+L]``
   repeated at the end, ``p`` uniform over ``n = T - 2L + 1`` offsets), an attention-only layer without
   positional information outputs at ``t`` a function of ``x_t`` and the *multiset* ``{x_0, ..., x_t}``: a
   softmax-weighted sum over keys is invariant under permuting the keys, norms and the residual act per position.
   At the repeated position ``i`` (``t = T - L + i``) the multiset shows the ``i + 1`` tokens seen twice (the
   segment so far) and the ``T - L - i - 1`` seen once. Relabelling the once-seen tokens among themselves maps
   sequences to equally likely sequences with the same observation, so for ``i < L - 1`` the target
   ``x[p+i+1]`` (a once-seen token) is uniform over them: Bayes accuracy ``1/(T - L - i - 1)``. At ``i = L - 1``
   the target is ``x[p+L]``: with probability ``1/n`` (``p = T - 2L``) it is ``x[p]``, one of the ``L - 1``
   twice-seen tokens other than ``x_t`` (by the same symmetry, each equally likely), else one of the ``T - 2L``
   once-seen tokens: Bayes accuracy ``max((1 - 1/n)/(T - 2L), (1/n)/(L - 1))``. The mean over the ``L``
   positions is the ceiling of every position-free one-layer model, trained or not. KV shifting breaks the
   invariance (a key carries ``k(x_j)`` and ``k(x_{j-1})``: a multiset of bigrams), which is what lets one layer
   match "the previous token is the current one" and copy the value (:func:`kv_shift_induction_weights`).
4. **Rank against heads: nearest neighbour** (Amsel, Yehudai and Bruna, "On the Benefits of Rank in Attention
   Layers", seed 004#72; the task :class:`analysis.data.tasks.NearestNeighbour`). ``N`` unit keys ``k_j`` (uniform on
   the
   sphere of R^d), a query ``q ~ N(0, I/d)``, target ``f(q, K) = k_(j*)``, ``j* = argmax_j q . k_j``; relative MSE
   ``E|yhat - f|^2`` (``|f| = 1``).

   * *One full-rank head* (:func:`softmax_nn_error`): logits ``beta q . k_j`` (QK matrix ``beta I``, rank d), value
     the key: ``yhat = sum_j softmax_j(beta q . k) k_j``. As ``beta -> inf`` the weights go one-hot on ``j*``
     (ties have probability 0), so the error tends to 0; off the nearest key the weights total at most
     ``(N - 1) e^(-beta delta)`` with ``delta`` the query's gap between its best and second-best alignment, so
     ``|yhat - f|^2 <= (2 (N - 1) e^(-beta delta))^2`` (:func:`hardmax_error_bound`). At finite ``beta`` the
     error is an expectation over keys and queries, computed by Monte Carlo in float64 (it falls like ``1/beta``:
     near-ties are what is left).
   * *Heads of rank r* (:func:`additive_floor`). A head whose query/key matrices have rank ``r`` sees the query
     only through an ``r``-dimensional projection ``A_h^T q``: its output is ``g_h(A_h^T q, K)`` and ``H`` heads
     (their read-outs summed) compute an *additive* function ``sum_h g_h(A_h^T q, K)``. If the heads' query
     projections are orthogonal (``H r = d``: a partition of R^d into blocks ``q_h``; by rotation invariance of the
     law any orthogonal set is equivalent to coordinate blocks), the blocks of the Gaussian query are independent
     given ``K``, and the least squared error of *any* additive function is the residual of the first-order
     Hoeffding (ANOVA) decomposition:

         A(r) = E_K[ Var(f | K) - sum_h Var(E[f | q_h, K] | K) ]     (traces over the d coordinates).

     With ``q'`` sharing block ``h`` with ``q`` and independent elsewhere, ``E|f(q) - f(q')|^2 / 2 = Var(f|K) -
     Var(E[f|q_h, K]|K)`` (pick-freeze), so ``A(r) = E_K[ sum_h E|f(q) - f(q'_h)|^2 / 2 - (H - 1) Var(f | K) ]``,
     estimated without bias by Monte Carlo (``Var(f|K)`` as the sample variance over the queries of one key set).
     ``A(d) = 0`` (one block: a full-rank head), and ``E Var(f|K)`` is the error of the best query-free output
     ``E[f | K]`` (heads that ignore the query). ``A(r)`` is a lower bound for heads on orthogonal projections
     whatever their softmax and value maps (it bounds every additive function); heads whose query projections
     overlap or are oblique are not covered. The separation of the paper (``H`` exponential in ``d`` for low rank)
     is asymptotic; ``A(r)`` is the workbench's computable number at ``d = 16``.
5. **Attention-only networks** (Simple Attention Networks, seed 004#1).

   * *Parameter counts* (:func:`param_count`, :func:`block_params`). A zoo model on tokens with an LM read-out
     has ``V d`` embedding and ``V d`` read-out weights (+ ``V`` biases), ``P_pos`` learned positions, a final norm
     and ``L`` blocks. One block: attention ``4 d H dh`` (+ ``3 H dh + d`` biases), QK-norm ``2 n(dh)``, the MLP
     ``2 d m`` (+ ``m + d``) and its norms, where a norm of width ``w`` holds ``n(w) = w`` gains (+ ``w`` biases
     for a LayerNorm with biases). Pre-, post- and mix placements put one norm before (or after) each sublayer,
     peri two, none zero. With ``H dh = d``, no biases and ``m = 4d``, a pre-LN standard block holds
     ``12 d^2 + 2 d`` and an attention-only block ``4 d^2 + d``: ``3 L`` attention-only blocks hold
     ``12 L d^2 + 3 L d``, so the parameter-matched attention-only stack (:func:`matched_attention_depth`)
     is three times as deep and carries ``L d`` more parameters (one norm's gains per standard block: the
     residual difference, a fraction ``1 / (12 d + 2)`` of the blocks).
   * *The QK-norm logit bound* (:func:`qk_norm_logit_bound`). With QK-norm each head's query is
     ``q = w_q * xhat + b_q`` with ``xhat`` the LayerNorm (or RMSNorm) of the raw query over its ``dh`` entries,
     ``|xhat|^2 = dh var / (var + eps) < dh`` (RMSNorm: ``dh ms / (ms + eps)``); RoPE rotates pairs of entries
     and keeps the norm. So ``|q| <= sqrt(dh) max|w_q| + |b_q|`` and, by Cauchy--Schwarz, every logit obeys

         |scale q . k| <= scale (sqrt(dh) max|w_q| + |b_q|) (sqrt(dh) max|w_k| + |b_k|),

     whatever the weights W_q, W_k and the input: with the default ``scale = 1/sqrt(dh)`` and unit gains,
     ``sqrt(dh)``. It is attained up to the factor ``var / (var + eps)`` at a query's own key when
     ``W_q = W_k`` and the gains are constant (``q = k``). Without QK-norm no such bound exists: the logit
     grows with ``|W_q^T W_k|`` and the stream.
"""

from __future__ import annotations

import numpy as np

# ================================================================================================ convolution


def conv1d(x: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """``y_t = sum_{k<K} W_k x_{t-k}`` (zero padding): ``x`` (..., T, d), ``kernel`` (K, d_out, d), float64."""
    x = np.asarray(x, dtype=np.float64)
    T = x.shape[-2]
    y = np.zeros((*x.shape[:-1], kernel.shape[1]))
    for k in range(min(len(kernel), T)):
        y[..., k:, :] += np.einsum("ij,...tj->...ti", kernel[k], x[..., : T - k, :])
    return y


def unfold(kernel: np.ndarray) -> np.ndarray:
    """The unfolded kernel ``U`` (K, d_out d): row ``k`` is ``vec W_k``."""
    kernel = np.asarray(kernel, dtype=np.float64)
    return kernel.reshape(kernel.shape[0], -1)


def singular_values(kernel: np.ndarray) -> np.ndarray:
    """Singular values of ``U``, decreasing."""
    return np.linalg.svd(unfold(kernel), compute_uv=False)


def rank_bound(kernel: np.ndarray, heads: int) -> float:
    """``sum_{i>H} sigma_i^2 / sum_i sigma_i^2``: the least relative MSE of ``H`` content-free heads (item 2)."""
    s2 = singular_values(kernel) ** 2
    return float(s2[heads:].sum() / s2.sum())


def rank_h_factors(kernel: np.ndarray, heads: int) -> tuple[np.ndarray, np.ndarray]:
    """``(A (K, H), M (H, d_out, d))`` with ``A M = U_H``, the truncated SVD (signed ``A``: attains the bound)."""
    kernel = np.asarray(kernel, dtype=np.float64)
    u, s, vt = np.linalg.svd(unfold(kernel), full_matrices=False)
    h = min(heads, len(s))
    A = np.zeros((kernel.shape[0], heads))
    M = np.zeros((heads, *kernel.shape[1:]))
    A[:, :h] = u[:, :h]
    M[:h] = (s[:h, None] * vt[:h]).reshape(h, *kernel.shape[1:])
    return A, M


def mixed_error(kernel: np.ndarray, weights: np.ndarray, maps: np.ndarray) -> float:
    """Relative MSE of ``yhat_t = sum_s sum_h weights[s, h] maps[h] x_{t-s}`` on white inputs (item 2's
    identity): ``weights`` (S, H) over offsets ``s = 0..S-1`` (``W_s = 0`` for ``s >= K``)."""
    kernel = np.asarray(kernel, dtype=np.float64)
    K, S = kernel.shape[0], weights.shape[0]
    target = np.zeros((max(K, S), *kernel.shape[1:]))
    target[:K] = kernel
    fit = np.zeros_like(target)
    fit[:S] = np.einsum("sh,hij->sij", weights, maps)
    return float(((target - fit) ** 2).sum() / (kernel**2).sum())


def construction(kernel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Item 1: ``(bias (K, K + 1), W_o (K, d_out, d))``: head ``h`` has bias 0 at offset ``h`` and -inf at every
    other offset (the last column is the shared edge of farther offsets), output map ``W_h`` (values: identity)."""
    K = len(kernel)
    bias = np.full((K, K + 1), -np.inf)
    bias[np.arange(K), np.arange(K)] = 0.0
    return bias, np.asarray(kernel, dtype=np.float64).copy()


# ================================================================================================ induction


def bag_ceiling_per_position(seq_len: int, segment: int) -> np.ndarray:
    """(L,) Bayes accuracy of a position-free one-layer model at each repeated position ``i`` (item 3)."""
    T, L = seq_len, segment
    n = T - 2 * L + 1
    acc = np.array([1.0 / (T - L - i - 1) for i in range(L - 1)] + [0.0])
    once = (1.0 - 1.0 / n) / (T - 2 * L) if T > 2 * L else 0.0
    acc[-1] = max(once, (1.0 / n) / (L - 1))
    return acc


def bag_ceiling(seq_len: int, segment: int) -> float:
    """Mean over the ``L`` repeated positions of :func:`bag_ceiling_per_position`."""
    return float(bag_ceiling_per_position(seq_len, segment).mean())


def offset_guess(seq_len: int, segment: int) -> float:
    """``1 / (T - 2L + 1)``: accuracy of guessing the repeat's source offset (a model with positions but no
    previous-token information at its keys copying the token at the guessed distance)."""
    return 1.0 / (seq_len - 2 * segment + 1)


def kv_shift_induction_weights(vocab: int, scale: float) -> dict[str, np.ndarray]:
    """Weights (float64, ``nn.Linear`` layout: out x in) of a one-layer, one-head KV-shift model that solves
    induction (item 3): d_model = 2V (the token one-hot in the first half; the head writes the copied token into
    the second half, which alone feeds the read-out), no norm, no positions, head size V.
    ``q_t = scale onehot(x_t)``, raw keys and values ``onehot(x_j)``; with ``shift_k = (0, 1)`` the key at ``j``
    is ``onehot(x_(j-1))`` and with ``shift_v = (1, 0)`` the value is ``onehot(x_j)``, so the head reads the
    token that followed the earlier occurrence of ``x_t`` (weight ``1 / (1 + O(t e^-scale))``)."""
    d = 2 * vocab
    eye = np.eye(vocab)
    first = np.zeros((vocab, d))
    first[:, :vocab] = eye  # reads the token half of the stream
    second = np.zeros((d, vocab))
    second[vocab:, :] = eye  # writes into the copy half
    return {
        "embed": first.copy(),  # nn.Embedding (V, d): token v -> e_v
        "W_q": scale * first,
        "W_k": first.copy(),
        "W_v": first.copy(),
        "W_o": second,
        "head": second.T.copy(),  # (V, d): logits = the copy half
        "shift_k": np.array([[0.0, 1.0]]),
        "shift_v": np.array([[1.0, 0.0]]),
    }


# ================================================================================================ nearest neighbour


def nn_draw(
    n_sets: int, n_keys: int, d: int, n_queries: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``(keys (S, N, d) unit, queries (S, M, d) ~ N(0, I/d))`` in float64 (item 4's law)."""
    keys = rng.standard_normal((n_sets, n_keys, d))
    keys /= np.linalg.norm(keys, axis=-1, keepdims=True)
    return keys, rng.standard_normal((n_sets, n_queries, d)) / np.sqrt(d)


def nn_target(keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """(S, M, d): ``k_(j*)``, ``j* = argmax_j q . k_j`` (keys (S, N, d), queries (S, M, d))."""
    j = np.einsum("smd,snd->smn", queries, keys).argmax(-1)
    return np.take_along_axis(keys, j[..., None], axis=1)


def softmax_head(keys: np.ndarray, queries: np.ndarray, beta: float) -> np.ndarray:
    """(S, M, d): ``sum_j softmax_j(beta q . k_j) k_j``, the full-rank head with QK matrix ``beta I``."""
    logits = beta * np.einsum("smd,snd->smn", queries, keys)
    w = np.exp(logits - logits.max(-1, keepdims=True))
    return np.einsum("smn,snd->smd", w / w.sum(-1, keepdims=True), keys)


def alignment_gap(keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """(S, M): best minus second-best ``q . k_j`` (needs N >= 2)."""
    top = np.sort(np.einsum("smd,snd->smn", queries, keys), axis=-1)
    return top[..., -1] - top[..., -2]


def hardmax_error_bound(gap: np.ndarray, n_keys: int, beta: float) -> np.ndarray:
    """``(2 (N - 1) e^(-beta delta))^2``: the largest squared error of the full-rank head at a query with gap
    ``delta`` (weights off the nearest key total at most ``(N - 1) e^(-beta delta)``, unit keys: ``|k_j - k_(j*)|
    <= 2``)."""
    return (2.0 * (n_keys - 1) * np.exp(-beta * np.asarray(gap, dtype=np.float64))) ** 2


def softmax_nn_error(
    beta: float, n_keys: int, d: int, n_sets: int = 2000, n_queries: int = 16, seed: int = 0
) -> tuple[float, float]:
    """``(relative MSE, its Monte Carlo SE)`` of one full-rank head with logit scale ``beta`` (item 4)."""
    keys, queries = nn_draw(n_sets, n_keys, d, n_queries, np.random.default_rng(seed))
    err = ((softmax_head(keys, queries, beta) - nn_target(keys, queries)) ** 2).sum(-1).mean(-1)  # per key set
    return float(err.mean()), float(err.std(ddof=1) / np.sqrt(n_sets))


def additive_floor(
    n_keys: int, d: int, rank: int, n_sets: int = 2000, n_queries: int = 32, seed: int = 0
) -> dict[str, float]:
    """Item 4: the least relative MSE ``A(r)`` of any sum of ``H = d / rank`` functions of orthogonal rank-``r``
    projections of the query (and the keys), by pick-freeze Monte Carlo; ``floor``, ``floor_se`` (over key sets),
    and ``query_free`` (``E Var(f | K)``, the error of the best output that ignores the query) with its SE."""
    if d % rank:
        raise ValueError(f"rank must divide d ({d}), got {rank}")
    rng = np.random.default_rng(seed)
    H = d // rank
    keys, q = nn_draw(n_sets, n_keys, d, n_queries, rng)
    f = nn_target(keys, q)
    var = ((f - f.mean(1, keepdims=True)) ** 2).sum(-1).sum(1) / (n_queries - 1)  # (S,) unbiased Var(f | K)
    half = np.zeros(n_sets)
    for h in range(H):
        block = slice(h * rank, (h + 1) * rank)
        q2 = rng.standard_normal(q.shape) / np.sqrt(d)
        q2[..., block] = q[..., block]
        half += 0.5 * ((f - nn_target(keys, q2)) ** 2).sum(-1).mean(1)
    floor = half - (H - 1) * var
    se = lambda a: float(a.std(ddof=1) / np.sqrt(n_sets))  # noqa: E731
    return {
        "floor": float(floor.mean()),
        "floor_se": se(floor),
        "query_free": float(var.mean()),
        "query_free_se": se(var),
    }


def nn_construction(d: int, beta: float) -> dict[str, np.ndarray]:
    """Item 4's full-rank head on the 2d-wide stream of :class:`analysis.data.tasks.NearestNeighbour` (keys in channels
    ``[:d]``, queries in ``[d:]``), ``nn.Linear`` layout (out x in): ``q = beta * query``, ``k = v = key``, the head
    writes into the key channels and the read-out reads them (a query's own token is zero there)."""
    eye, zero = np.eye(d), np.zeros((d, d))
    return {
        "W_q": beta * np.hstack([zero, eye]),
        "W_k": np.hstack([eye, zero]),
        "W_v": np.hstack([eye, zero]),
        "W_o": np.vstack([eye, zero]),
        "head": np.hstack([eye, zero]),
    }


# ============================================================================================== attention-only networks

PLACEMENT_NORMS = {"pre": 1, "post": 1, "mix": 1, "peri": 2, "none": 0}  # norms per sublayer


def norm_params(width: int, norm_type: str = "layernorm", bias: bool = False) -> int:
    """Parameters of one norm of ``width``: gains, plus biases for a LayerNorm with biases."""
    return width * (2 if (bias and norm_type == "layernorm") else 1)


def block_params(
    d_model: int,
    n_heads: int,
    d_head: int,
    d_mlp: int,
    norm: str = "pre",
    norm_type: str = "layernorm",
    bias: bool = False,
    qk_norm: bool = False,
) -> int:
    """Parameters of one block (item 5): attention, QK-norm, MLP (``d_mlp = 0``: none) and their norms."""
    if norm not in PLACEMENT_NORMS:
        raise ValueError(f"norm must be one of {list(PLACEMENT_NORMS)}, got {norm!r}")
    for name, v in (("d_model", d_model), ("n_heads", n_heads), ("d_head", d_head)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if int(d_mlp) != d_mlp or d_mlp < 0:
        raise ValueError(f"d_mlp must be a nonnegative integer, got {d_mlp!r}")
    d, inner = d_model, n_heads * d_head
    attn = 4 * d * inner + (3 * inner + d if bias else 0)
    attn += 2 * norm_params(d_head, norm_type, bias) if qk_norm else 0
    sublayers = 1 + (d_mlp > 0)
    mlp = 2 * d * d_mlp + (d_mlp + d if bias else 0) if d_mlp > 0 else 0
    return attn + mlp + sublayers * PLACEMENT_NORMS[norm] * norm_params(d, norm_type, bias)


def param_count(
    *,
    vocab: int,
    d_model: int,
    n_layers: int,
    n_heads: int,
    d_head: int,
    d_mlp: int,
    norm: str = "pre",
    norm_type: str = "layernorm",
    bias: bool = False,
    qk_norm: bool = False,
    final_norm: bool = True,
    learned_positions: int = 0,
) -> int:
    """Every parameter of a token-in, LM-out zoo model (item 5): embedding, learned positions, blocks, final
    norm, read-out."""
    if int(vocab) != vocab or vocab < 2:
        raise ValueError(f"vocab must be an integer >= 2, got {vocab!r}")
    if int(n_layers) != n_layers or n_layers < 0:
        raise ValueError(f"n_layers must be a nonnegative integer, got {n_layers!r}")
    d = d_model
    blocks = n_layers * block_params(d, n_heads, d_head, d_mlp, norm, norm_type, bias, qk_norm)
    ends = vocab * d + learned_positions * d + vocab * d + (vocab if bias else 0)
    return ends + blocks + (norm_params(d, norm_type, bias) if final_norm else 0)


def matched_attention_depth(
    n_layers: int, d_model: int, n_heads: int, d_head: int, d_mlp: int, **block: object
) -> dict[str, int]:
    """Item 5: the depth ``L'`` of the attention-only stack (same width, heads, norms) whose blocks hold the
    parameters of ``n_layers`` standard blocks with MLP width ``d_mlp``, rounded to the nearest depth, and the
    residual ``difference`` = attention-only minus standard (the embeddings and read-out are shared)."""
    std = n_layers * block_params(d_model, n_heads, d_head, d_mlp, **block)
    san_block = block_params(d_model, n_heads, d_head, 0, **block)
    layers = max(1, int(np.floor(std / san_block + 0.5)))
    return {"layers": layers, "difference": layers * san_block - std}


def qk_norm_logit_bound(
    w_q: np.ndarray,
    w_k: np.ndarray,
    head_size: int,
    scale: float,
    b_q: np.ndarray | None = None,
    b_k: np.ndarray | None = None,
) -> float:
    """Item 5: ``scale (sqrt(dh) max|w_q| + |b_q|) (sqrt(dh) max|w_k| + |b_k|)``, the largest |logit| a head with
    QK-norm gains ``w_q``, ``w_k`` (biases ``b_q``, ``b_k``) can produce, whatever its inputs and weights."""
    root = np.sqrt(float(head_size))

    def side(w, b):
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (head_size,):
            raise ValueError(f"gains must have shape ({head_size},), got {w.shape}")
        extra = 0.0 if b is None else float(np.linalg.norm(np.asarray(b, dtype=np.float64)))
        return root * float(np.abs(w).max()) + extra

    return float(abs(scale) * side(w_q, b_q) * side(w_k, b_k))
