r"""The Bayes-optimal predictor (ridge at lambda* = sigma^2 / w_std^2) against the context length:
exact inverse-Wishart traces where they exist, the Marchenko-Pastur limit otherwise.
"""

from __future__ import annotations

import math
from typing import Any

from analysis.core.validation import check_bool, check_float, check_int


def wishart_trace_inverse(d: int, k: int) -> float:
    r"""E tr((X^T X)^{-1}) for X (k, d) with i.i.d. N(0, 1) entries: the inverse-Wishart mean.

    X^T X ~ Wishart_d(k, I), E (X^T X)^{-1} = I / (k - d - 1) for k >= d + 2, so the trace is
    d / (k - d - 1); infinite for k < d + 2 (k in {d, d + 1}: the mean diverges; k < d: singular).
    This is the exact finite-k case of the ridge trace below (s = 0); for s > 0 the real Wishart
    ensemble has no elementary closed form (the one-point density of the Laguerre *orthogonal*
    ensemble is not a finite sum), so :func:`ridge_bayes_loss_theory` uses the Marchenko-Pastur limit.
    """
    check_int("d", d, minimum=1)
    check_int("k", k, minimum=0)
    return d / (k - d - 1) if k >= d + 2 else math.inf


def marchenko_pastur_trace_inverse(d: int, k: int, s: float) -> float:
    r"""The Marchenko-Pastur approximation of E tr((X^T X + s I)^{-1}) (d, k -> inf, d/k = c fixed).

    tr((X^T X + s I)^{-1}) = (d/k) (1/d) tr((X^T X/k + lam I)^{-1}), lam = s/k, and the normalised trace
    tends to the MP Stieltjes transform at -lam (ratio c):
        m(-lam) = [sqrt((1 - c + lam)^2 + 4 c lam) - (1 - c + lam)] / (2 c lam).
    s = 0, c < 1: the limit d/(k - d) (the exact finite value is d/(k - d - 1)).
    """
    check_int("d", d, minimum=1)
    check_int("k", k, minimum=1)
    check_float("s", s, minimum=0.0)
    c = d / k
    if s == 0.0:
        return d / (k - d) if k > d else math.inf
    lam = s / k
    b = 1.0 - c + lam
    m = (math.sqrt(b * b + 4.0 * c * lam) - b) / (2.0 * c * lam)
    return d / k * m


def ridge_bayes_loss_theory(
    d: int,
    k: int,
    sigma: float,
    w_std: float = 1.0,
    v: float = 1.0,
    query_noise: bool = True,
) -> dict[str, Any]:
    r"""Expected loss of the Bayes-optimal predictor (ridge at lam* = sigma^2/w_std^2) with k examples.

    Isotropic inputs with E x x^T = v I (Gaussian N(0, v I) for sigma > 0), w ~ N(0, w_std^2 I). The
    posterior of w given the context is N(w_hat, sigma^2 (X^T X + lam* I)^{-1}) whatever the law of x
    (w_hat the ridge solution), and x_q is independent of the context, so with q = sigma^2 (query noise)
        loss(k) = q + v E |w_hat - w|^2 = q + v sigma^2 E tr((X^T X + lam* I)^{-1})
                = q + sigma^2 E tr((Z^T Z + (lam*/v) I)^{-1}),   X = sqrt(v) Z.
    * sigma = 0 (exact, any isotropic law whose X has rank min(k, d) a.s.): lam* -> 0 is min-norm least
      squares, which recovers w for k >= d and leaves the d - k unseen directions:
      loss = w_std^2 v max(d - k, 0).
    * sigma > 0: the trace by its Marchenko-Pastur limit :func:`marchenko_pastur_trace_inverse` (exact as
      d, k -> inf at fixed d/k, O(1/d) relative error at finite size, universal for i.i.d. entries); the
      exact finite-k value at lam* -> 0 is the inverse-Wishart mean (:func:`least_squares_theory`).
    No predictor using the same k examples has a lower expected loss (it is the posterior mean).
    Returns dict(loss, method) with method "exact" or "marchenko_pastur".
    """
    check_int("d", d, minimum=1)
    check_int("k", k, minimum=0)
    check_float("sigma", sigma, minimum=0.0)
    check_float("w_std", w_std, minimum=0.0, strict_minimum=True)
    check_float("v", v, minimum=0.0, strict_minimum=True)
    check_bool("query_noise", query_noise)
    s2, w2, v = float(sigma) ** 2, float(w_std) ** 2, float(v)
    q = s2 * float(query_noise)
    if s2 == 0.0:
        return {"loss": w2 * v * max(d - k, 0), "method": "exact"}
    if k == 0:
        return {"loss": q + w2 * v * d, "method": "exact"}  # predicts 0: the prior variance
    tr = marchenko_pastur_trace_inverse(d, k, s2 / (w2 * v))
    return {"loss": q + s2 * tr, "method": "marchenko_pastur"}
