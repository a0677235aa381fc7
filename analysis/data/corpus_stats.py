"""Statistics of a token sequence that a language model's loss is read against: the unigram entropy (the
least loss of a predictor that ignores context) and the held-out cross-entropy of a fitted bigram model (the
least loss of one that sees one token of context)."""

from __future__ import annotations

import numpy as np


def unigram_entropy(tokens) -> float:
    """Entropy of the empirical unigram distribution, in nats: ``-sum_v p_v ln p_v`` (float64).

    This is the cross-entropy a model that ignores context would reach on the same text, so it is
    the natural "no learning beyond frequencies" reference line for a language-model loss curve.
    """
    arr = np.asarray(tokens).astype(np.int64).ravel()
    if arr.size == 0:
        raise ValueError("tokens must not be empty")
    counts = np.bincount(arr).astype(np.float64)
    p = counts[counts > 0] / arr.size
    return float(-(p * np.log(p)).sum())


def bigram_cross_entropy(train_tokens, val_tokens, vocab_size: int, prior: float = 0.5) -> float:
    """Held-out cross-entropy (nats per token) of the bigram model fitted on ``train_tokens``.

    ``p(b | a) = (n_ab + prior) / (n_a + V prior)`` from the train split's transition counts (the
    Krichevsky-Trofimov estimator at ``prior = 0.5``), scored on every transition of ``val_tokens``
    (float64). It is the loss of the best model that sees one token of context, estimated without
    looking at the held-out text: a language model whose held-out loss is below it uses more context.
    """
    tr = np.asarray(train_tokens).astype(np.int64).ravel()
    va = np.asarray(val_tokens).astype(np.int64).ravel()
    if tr.size < 2 or va.size < 2:
        raise ValueError("train_tokens and val_tokens need at least 2 tokens each")
    if not prior > 0:
        raise ValueError(f"prior must be > 0, got {prior}")
    if max(tr.max(), va.max()) >= vocab_size or min(tr.min(), va.min()) < 0:
        raise ValueError(f"token ids must lie in [0, vocab_size = {vocab_size})")
    counts = np.zeros((vocab_size, vocab_size), dtype=np.float64)
    np.add.at(counts, (tr[:-1], tr[1:]), 1.0)
    row = counts.sum(axis=1)
    p = (counts[va[:-1], va[1:]] + prior) / (row[va[:-1]] + vocab_size * prior)
    return float(-np.log(p).mean())
