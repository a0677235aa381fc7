r"""Signal propagation at initialisation: closed forms for our ``fan_in`` initialisation, and the metrics.

Everything here is float64 and model-free: it is the theory side of the ``signal_propagation`` probe
(how the norm placement shapes activations, gradients and updates across depth: Xiong et al. 2020,
Pre-LN variance growth, Peri-LN, Mix-LN, DeepNet, and Dong et al.'s rank collapse; see REFERENCES.md). The laws
of softmax attention across its phase transition (inverse temperature against token correlation, the finite-T
random-energy expectations and the post-LN block map of the token cosine) are in
:mod:`analysis.theory.attention_phase`, the theory side of the probe's ``phase`` part.
Notation: ``d`` model width, ``x_l`` the residual stream after block ``l`` (``x_0`` the
embedding), ``m_l = E[x_l^2]`` its second moment per coordinate (the "residual variance": every
coordinate has mean zero over the weight draw), ``N`` a LayerNorm with gain 1 and no bias, so that
``|N(x)|^2 = d sigma^2 / (sigma^2 + eps)`` exactly, with ``sigma^2`` the variance of ``x`` over its features.

Initialisation (``ModelConfig(init="fan_in")``): every ``nn.Linear`` weight is ``N(0, 1/fan_in)``, token
embeddings ``N(0, 1)``, so ``m_0 = 1``.

1. Branches are uncorrelated with the stream. Every branch ends in a weight matrix (``W_o`` or
   ``W_out``) that is drawn independently of everything before it and enters the branch output
   *oddly* (flipping its sign flips the output, also after Peri-LN's output norm). So
   ``E[x . F(x)] = 0`` and the second moments add: ``m_{l+1} = m_l + E|F_attn|^2/d + E|F_mlp|^2/d``.

2. MLP branch of a Pre-LN block. Its input ``u = s N(x)`` (``s = 1`` or LayerNorm scaling's
   ``1/sqrt(l)``) has ``|u|^2/d = s^2`` (up to eps), so each hidden pre-activation ``h_i = (W_in u)_i``
   is exactly ``N(0, s^2)`` over the draw of ``W_in``, and ``W_out`` (fan-in ``4d``) averages:
   ``E|F_mlp|^2/d = E[gelu(s z)^2]``, ``z ~ N(0, 1)``. With ``gelu(x) = x Phi(x)`` (exact erf GELU),
   integrating by parts (:func:`gelu_second_moment`)::

       E[gelu(s z)^2] = s^2 [ 1/4 + arcsin(s^2/(1+s^2)) / (2 pi) + s^2 / (pi (1+s^2) sqrt(1+2 s^2)) ]

   which at ``s = 1`` is ``1/3 + 1/(2 pi sqrt 3)``.

3. Attention branch. Over the draw of ``W_v`` (fan-in ``d``) and ``W_o`` (fan-in ``H dh``), given the
   pattern ``A^h`` (which depends on ``W_q, W_k`` only) and the normalised inputs ``u_j``::

       E|F_attn,t|^2 / d = (1/H) sum_h |sum_j A^h_tj u_j|^2 / d  =: a_t      (:func:`attention_branch_moment`)

   ``a_t`` lies in ``[0, s^2]`` (a convex combination of vectors of squared norm ``s^2 d``): it is ``s^2``
   when all tokens coincide, and ``s^2 sum_j (A_tj)^2`` for orthogonal tokens. It depends on the
   token correlations, which grow with depth, so it is not a constant: the probe measures it from
   the pattern and inputs and checks the *sum rule* ``E[m_L] = m_0 + sum_l (a_l + g_l)``
   (:func:`pre_ln_moment`), plus the closed-form envelope ``m_0 + L g <= m_L <= m_0 + L (1 + g)``.
   Hence Pre-LN residual variance grows **linearly** in depth at initialisation, not exponentially.

4. Peri-LN: both branch outputs are LayerNorm outputs, ``|.|^2/d = 1`` each (up to eps), so
   ``E[m_L] = m_0 + 2 L`` (``m_0 + L`` without MLP) exactly (:func:`peri_ln_moment`).
   Post-LN: the stream is a LayerNorm output, ``m_l = sigma^2/(sigma^2+eps)`` per token, i.e. 1.

5. Last-layer gradient (Xiong et al. 2020, adapted). For Pre-LN the loss sees ``x_L`` only through
   the final LayerNorm, whose Jacobian is ``(I - 11^T/d - n n^T/d) / sigma_L`` with ``sigma_L ~ sqrt(m_L)``;
   the last MLP's input is normalised, so its weights' gradients scale as ``m_L^{-1/2}``
   (:func:`pre_ln_last_layer_gradient_scale`): ``~ L^{-1/2}`` once ``m_L`` is linear in ``L``. In Post-LN
   the last block's output norm sees a stream of fixed variance whatever ``L``: the last layer's
   gradient is ``O(1)`` in ``L`` (exponent 0).

6. Jacobian of a Pre-LN block: ``J_l - I`` is the branch Jacobian, which carries the input norm's
   ``1/sigma_l``, so ``|J_l - I|_F ~ m_l^{-1/2}``: deep Pre-LN blocks approach the identity because
   the stream grows (the "Curse of Depth" mechanism, here at initialisation and polynomially).

7. Rank collapse (Dong et al. 2021). ``res(X) = X - 1 mean(X)`` (mean over tokens), measured in the
   composite norm ``|M|_{1,inf} = sqrt(|M|_1 |M|_inf)`` (max column sum times max row sum), relative to
   ``|X|_{1,inf}`` (:func:`rank_residual`). For pure attention (no skip, MLP or norm) Dong et al. bound
   ``r_{l+1} <= c r_l^3``, so ``r_l <= c^{(3^l - 1)/2} r_0^{3^l}`` (:func:`dong_bound`): doubly
   exponential. Its signature is a log-decrement ``log(r_l / r_{l+1})`` that *grows* with ``l``
   (:func:`log_decrement_growth`); an exponential decay has a constant one.

8. No norm: exponential growth. Without norms the branches read the raw stream. Given the block input
   with per-token moments ``q_t = |x_t|^2/d`` and the pattern, section 3 (with ``u = x``) gives the
   attention moment ``a_t = (1/H) sum_h |sum_j A^h_tj x_j|^2/d``, and section 2 with ``s^2 = q`` gives the
   MLP moment ``G(q) = E[gelu(sqrt(q) z)^2]`` exactly (:func:`no_norm_mlp_moment`). Cross terms vanish
   as in section 1, so ``E[m_{l+1} | x_l, x_mid] = m_l + a_l + mean_t G(q_mid,t)`` (the probe's sum rule,
   a martingale identity that holds summed over blocks). Writing ``a = kappa q``, the mean-field map is
   ``q -> q(1+kappa) + G(q(1+kappa))`` (:func:`no_norm_block_step`), exact as ``d -> inf`` (the per-token
   moments concentrate). ``G(q)/q`` increases from 1/4 to 1/2, so ``G(q) >= q/4`` and, with ``a_l >= 0``
   and linearity of expectation, ``E m_L >= (5/4)^L m_0`` rigorously at any width
   (:func:`no_norm_lower_bound`; the map itself is convex only up to ``q ~ 3``, so the iterate is not a
   Jensen bound). The growth is exponential:
   ``m_{l+1}/m_l -> (1 + kappa)(1 + 1/2)``, a factor between 3/2 (orthogonal tokens) and 3
   (identical tokens) per block (:func:`no_norm_growth_factor`; 1 to 2 without MLP).

9. DeepNorm (Wang et al. 2022): ``x_{l+1} = LN(alpha x_l + F(x_l))`` with ``alpha = (2L)^{1/4}`` and the
   value, output and MLP weights' init multiplied by ``beta = (8L)^{-1/4}``. Both of a branch's
   matrices carry ``beta``, so ``|F| ~ beta^2 |x|`` (exactly for attention; for the MLP to leading order,
   ``gelu(x) ~ x/2``). As ``F`` is uncorrelated with ``x`` (section 1) the sublayer turns the stream by
   ``theta ~ arctan(|F| / (alpha |x|)) ~ beta^2/alpha ~ L^{-3/4}`` (:func:`deepnorm_angle_scale`): the
   per-layer change of the stream shrinks as alpha grows, which is DeepNorm's bounded-update
   mechanism at initialisation. Post-LN (``alpha = beta = 1``): ``theta`` does not depend on ``L``.

10. DeepNorm's actual claim: the model update after an optimiser step. Wang et al.'s Theorem bounds
   ``|F(x; theta + dtheta) - F(x; theta)|`` by ``sum_i sqrt(v_i^2 + w_i^2)/alpha |dtheta_i|`` over the
   ``2N`` sublayers. With SGD the depth factor is ``4 N beta^2/alpha^2``: exactly 1 for DeepNorm's alpha,
   beta (O(1) in depth), ``4N`` for Post-LN; with Adam (``|dtheta_i|`` depth-free) it is ``sqrt(2N)``
   against ``2 sqrt 2 N`` (:func:`deepnorm_update_bound`). The bound holds the attention pattern and
   the LayerNorm gains fixed; the probe steps the sublayers' weight matrices.

11. LayerNorm without skips (pure attention + LN). A LayerNorm maps a nearly collapsed
   ``X = 1 xbar^T + e E`` to ``1 n^T + e res(E) P / sigma + O(e^2)``: it rescales the residual and the
   stream alike and projects out two directions, so ``r(LN X) / r(X)`` tends to a finite, nonzero
   constant (:func:`layernorm_residual_gain`). The recursion ``r_{l+1} <= c r_l^3`` keeps its cube:
   the norm changes ``c``, not the doubly exponential collapse.

12. Growth exponent of the Pre-LN stream. By the sum rule (sections 1-3) every block adds a bounded
   moment ``a_l + g_l`` in ``[g, s^2 + g]``, so ``m_l - m_0`` grows linearly in ``l``: the exponent ``p`` of
   ``m_l - m_0 ~ c l^p`` is exactly 1 for a constant increment (:data:`PRE_LN_INIT_GROWTH_EXPONENT`,
   :func:`variance_growth_exponent`). The attention moment ``a_l`` grows as the tokens correlate with depth
   (Noci et al.), so the sum rule with the measured ``a_l`` gives an exponent somewhat above 1 at
   initialisation (at most that of ``a_l`` rising from 0 to 1). GPAS (000#2) and the Curse of Depth (000#50)
   report faster growth in trained Pre-LN models (exponential: ``p`` rises above 1 over any finite range of
   layers); that is a claim about trained weights, which the sum rule (an initialisation statement) does not
   cover, so 1 and the exponent of the same seed's sum rule at initialisation are the alternatives there.

13. Training stability at depth (DeepNet, 000#65). A model that ignores the context can do no better than
   the unigram entropy ``H(pi)`` of a Markov language; the entropy rate ``H <= H(pi)`` is the best
   possible loss. A run is classified (:func:`classify_training`) as *diverged* (a non-finite loss, or the
   final loss above the first), *stalled* (final loss not below ``H(pi) - delta``, ``delta`` a tenth of the
   context gap ``H(pi) - H``: :func:`stall_margin`) or *trained*. The final loss is the mean training loss
   over the last tenth of the steps. The Theorem's depth factors (section 10) give the ratio of the
   Post-LN and DeepNorm update bounds at one depth (:func:`deepnorm_update_ratio`): ``2 sqrt N`` for Adam,
   ``4 N`` for SGD.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy import integrate, stats

# ------------------------------------------------------------------------------------------------
# MLP and norm closed forms
# ------------------------------------------------------------------------------------------------


def gelu_second_moment(scale: float = 1.0) -> float:
    r"""``E[gelu(s z)^2]`` for ``z ~ N(0, 1)``, ``gelu(x) = x Phi(x)``, in closed form.

    Derivation: ``E[gelu(sz)^2] = s^2 E[z . z Phi(sz)^2]``; Stein's identity ``E[z f(z)] = E[f'(z)]``
    gives ``s^2 (E[Phi(sz)^2] + 2 s E[z Phi(sz) phi(sz)])``. ``E[Phi(sz)^2] = P(X_1 <= sZ, X_2 <= sZ)``
    is a bivariate normal orthant with correlation ``s^2/(1+s^2)``: ``1/4 + arcsin(.)/(2 pi)``.
    ``phi(sz) phi(z)`` is a Gaussian in ``z`` of variance ``1/(1+s^2)``, and Stein once more gives
    ``2 s E[z Phi(sz) phi(sz)] = s^2 / (pi (1+s^2) sqrt(1+2 s^2))``.
    """
    s2 = float(scale) ** 2
    return s2 * (0.25 + math.asin(s2 / (1 + s2)) / (2 * math.pi) + s2 / (math.pi * (1 + s2) * math.sqrt(1 + 2 * s2)))


def gelu_second_moment_quad(scale: float = 1.0) -> float:
    """``E[gelu(s z)^2]`` by adaptive quadrature (independent check of :func:`gelu_second_moment`)."""

    def f(z: float) -> float:
        x = scale * z
        return (x * stats.norm.cdf(x)) ** 2 * stats.norm.pdf(z)

    value, _ = integrate.quad(f, -np.inf, np.inf, epsabs=1e-14, epsrel=1e-13)
    return float(value)


def layernorm_square_mean(var: np.ndarray | float, eps: float) -> np.ndarray:
    """``|N(x)|^2 / d = sigma^2 / (sigma^2 + eps)`` for a LayerNorm with gain 1, bias 0."""
    var = np.asarray(var, dtype=np.float64)
    return var / (var + eps)


def ln_scaling_factor(layer: int) -> float:
    """LayerNorm scaling (Sun et al. 2025): block ``layer`` (1-based) multiplies its norms' output by 1/sqrt(l)."""
    if layer < 1:
        raise ValueError(f"layer must be >= 1 (1-based), got {layer}")
    return 1.0 / math.sqrt(layer)


# ------------------------------------------------------------------------------------------------
# Residual-variance laws
# ------------------------------------------------------------------------------------------------


def attention_branch_moment(pattern: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    r"""Conditional second moment per coordinate of the attention branch, ``a_t`` (section 3).

    ``pattern`` (B, H, T, T) attention weights, ``u`` (B, T, d) the attention's input (the norm's
    output). Returns (B, T): ``(1/H) sum_h |sum_j A^h_tj u_j|^2 / d``, the expectation over ``W_v, W_o``
    of ``|F_attn,t|^2 / d`` for our fan-in initialisation.
    """
    pattern, u = pattern.to(torch.float64), u.to(torch.float64)
    mixed = torch.einsum("bhtj,bjd->bhtd", pattern, u)  # (B, H, T, d)
    return mixed.pow(2).sum(-1).mean(1) / u.shape[-1]  # (B, T)


def pre_ln_moment(m0: float, attn_terms: np.ndarray, mlp_terms: np.ndarray) -> np.ndarray:
    """``E[m_l] = m_0 + sum_{k<=l} (a_k + g_k)`` for l = 0..L (section 1): the Pre-LN sum rule.

    ``attn_terms`` (L,) the attention moments ``a_k`` (0 for no attention), ``mlp_terms`` (L,) the MLP
    moments ``g_k`` (0 without MLP). Returns (L + 1,).
    """
    inc = np.asarray(attn_terms, dtype=np.float64) + np.asarray(mlp_terms, dtype=np.float64)
    return float(m0) + np.concatenate([[0.0], np.cumsum(inc)])


def pre_ln_envelope(m0: float, depth: int, mlp: bool = True, ln_scaling: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Closed-form envelope of the Pre-LN second moment, l = 0..depth: ``a_l`` in ``[0, s_l^2]``.

    Returns ``(lower, upper)`` with ``lower_l = m0 + sum g(s_k)``, ``upper_l = lower_l + sum s_k^2``.
    """
    s = np.array([ln_scaling_factor(k) if ln_scaling else 1.0 for k in range(1, depth + 1)])
    g = np.array([gelu_second_moment(v) if mlp else 0.0 for v in s])
    lower = float(m0) + np.concatenate([[0.0], np.cumsum(g)])
    upper = lower + np.concatenate([[0.0], np.cumsum(s**2)])
    return lower, upper


def peri_ln_moment(m0: float, depth: int, mlp: bool = True) -> np.ndarray:
    """``E[m_l] = m_0 + (sublayers per block) l`` for Peri-LN, l = 0..depth (section 4)."""
    return float(m0) + (2.0 if mlp else 1.0) * np.arange(depth + 1, dtype=np.float64)


def pre_ln_last_layer_gradient_scale(m_last: np.ndarray | float) -> np.ndarray:
    """Predicted Pre-LN last-layer gradient up to a depth-independent constant: ``m_L^{-1/2}`` (section 5)."""
    return np.asarray(m_last, dtype=np.float64) ** -0.5


POST_LN_LAST_LAYER_EXPONENT = 0.0  # Post-LN: the last layer's gradient does not depend on depth (section 5)
PRE_LN_GRADIENT_VS_MOMENT_EXPONENT = -0.5  # Pre-LN: gradient ~ m_L^(-1/2) (section 5)
PRE_LN_JACOBIAN_VS_MOMENT_EXPONENT = -0.5  # Pre-LN: |J_l - I| ~ m_l^(-1/2) (section 6)


def loglog_slope(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least-squares slope of ``log y`` on ``log x`` and its standard error (needs >= 3 points)."""
    lx, ly = np.log(np.asarray(x, dtype=np.float64)), np.log(np.asarray(y, dtype=np.float64))
    if lx.size < 3:
        raise ValueError(f"need at least 3 points for a slope and its error, got {lx.size}")
    fit = stats.linregress(lx, ly)
    return float(fit.slope), float(fit.stderr)


# ------------------------------------------------------------------------------------------------
# Metrics (definitions shared by the probe and its tests)
# ------------------------------------------------------------------------------------------------


def composite_norm(m: torch.Tensor) -> torch.Tensor:
    """Dong et al.'s ``|M|_{1,inf} = sqrt(|M|_1 |M|_inf)`` of (..., T, d) matrices: max column abs sum
    times max row abs sum, square-rooted. Returns (...)."""
    col = m.abs().sum(-2).amax(-1)  # |M|_1: max over columns of the column sums
    row = m.abs().sum(-1).amax(-1)  # |M|_inf: max over rows of the row sums
    return (col * row).sqrt()


def rank_residual(x: torch.Tensor) -> torch.Tensor:
    """``|X - 1 mean(X)|_{1,inf} / |X|_{1,inf}`` per sequence of (..., T, d); mean over the T tokens."""
    x = x.to(torch.float64)
    res = x - x.mean(-2, keepdim=True)  # (..., T, d)
    return composite_norm(res) / composite_norm(x)


def mean_token_cosine(x: torch.Tensor) -> torch.Tensor:
    """Mean pairwise cosine similarity between distinct tokens of (..., T, d); returns (...)."""
    x = x.to(torch.float64)
    n = x / x.norm(dim=-1, keepdim=True).clamp_min(1e-300)
    gram = n @ n.transpose(-1, -2)  # (..., T, T)
    T = x.shape[-2]
    if T < 2:
        raise ValueError("mean_token_cosine needs at least 2 tokens")
    return (gram.sum((-1, -2)) - gram.diagonal(dim1=-2, dim2=-1).sum(-1)) / (T * (T - 1))


def angular_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``arccos(cos(a, b)) / pi`` per vector over the last axis (Gromov et al.; Sun et al. 2025), in [0, 1]."""
    a, b = a.to(torch.float64), b.to(torch.float64)
    cos = (a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1)).clamp_min(1e-300)
    return torch.arccos(cos.clamp(-1.0, 1.0)) / math.pi


def dong_bound(r0: float, c: float, layers: np.ndarray) -> np.ndarray:
    """Shape of Dong et al.'s bound iterated from ``r_{l+1} = c r_l^3``: ``c^{(3^l - 1)/2} r0^{3^l}``."""
    layers = np.asarray(layers, dtype=np.float64)
    log_r = ((3.0**layers - 1) / 2) * math.log(c) + (3.0**layers) * math.log(r0)
    return np.exp(np.maximum(log_r, -745.0))  # below the float64 range: 0


def log_decrement_growth(r: np.ndarray, floor: float = 1e-12) -> tuple[float, int]:
    """Mean of ``log(delta_{l+1} / delta_l)`` with ``delta_l = log(r_l / r_{l+1})`` the log-decrement.

    0 for an exponential decay, > 0 when the decay accelerates (``log 3`` for ``r_{l+1} = c r_l^3``
    once ``r`` is small). Only steps where both ``r`` values exceed ``floor`` (float64 round-off of a
    collapsed stream sits near 1e-16) and the decrement is positive are used. Returns (mean, count).
    """
    r = np.asarray(r, dtype=np.float64)
    ok = (r[:-1] > floor) & (r[1:] > floor)
    delta = np.where(ok, np.log(r[:-1] / np.where(ok, r[1:], 1.0)), np.nan)
    pairs = [
        math.log(delta[i + 1] / delta[i])
        for i in range(delta.size - 1)
        if np.isfinite(delta[i]) and np.isfinite(delta[i + 1]) and delta[i] > 0 and delta[i + 1] > 0
    ]
    return (float(np.mean(pairs)) if pairs else float("nan")), len(pairs)


# ------------------------------------------------------------------------------------------------
# No norm: exponential growth of the residual variance (section 8)
# ------------------------------------------------------------------------------------------------


def no_norm_mlp_moment(q: np.ndarray | float) -> np.ndarray:
    r"""``E|MLP(x)|^2 / d`` given ``|x|^2/d = q``, for an un-normalised input (section 8), vectorised.

    ``W_in ~ N(0, 1/d)`` makes every hidden pre-activation exactly ``N(0, q)``, so the moment is
    :func:`gelu_second_moment` at ``s = sqrt(q)``::

        G(q) = q [ 1/4 + arcsin(q/(1+q)) / (2 pi) + q / (pi (1+q) sqrt(1+2q)) ]

    ``G(q)/q`` rises from ``1/4`` (``q -> 0``) to ``1/2`` (``q -> inf``, with a ``q^{-3/2}`` correction:
    the ``q^{-1/2}`` and ``q^{-1}`` terms of the arcsine and of the last term cancel).
    """
    q = np.asarray(q, dtype=np.float64)
    return q * (0.25 + np.arcsin(q / (1 + q)) / (2 * np.pi) + q / (np.pi * (1 + q) * np.sqrt(1 + 2 * q)))


def no_norm_block_step(q: np.ndarray | float, kappa: float = 0.0, mlp: bool = True) -> np.ndarray:
    """Mean-field map of one no-norm block: ``q -> q (1 + kappa) + G(q (1 + kappa))`` (section 8).

    ``kappa = a / q`` is the attention branch's moment relative to the stream (0 for orthogonal tokens
    attended uniformly over many positions, 1 for identical tokens); ``G`` is :func:`no_norm_mlp_moment`.
    """
    q_mid = np.asarray(q, dtype=np.float64) * (1.0 + kappa)
    return q_mid + (no_norm_mlp_moment(q_mid) if mlp else 0.0)


def no_norm_moment(m0: float, depth: int, kappa: float | np.ndarray = 0.0, mlp: bool = True) -> np.ndarray:
    """Iterate :func:`no_norm_block_step` from ``m0``: (depth + 1,) values, l = 0..depth.

    The mean-field (``d -> inf``) moment for a given attention ratio ``kappa`` (section 8).
    """
    kappas = np.broadcast_to(np.asarray(kappa, dtype=np.float64), (depth,))
    m = [float(m0)]
    for k in kappas:
        m.append(float(no_norm_block_step(m[-1], k, mlp)))
    return np.array(m)


def no_norm_lower_bound(m0: float, depth: int, mlp: bool = True) -> np.ndarray:
    """Rigorous lower bound ``E m_l >= (5/4)^l m_0`` (``m_0`` without MLP), l = 0..depth (section 8):
    ``G(q) >= q/4`` and the attention adds ``a_l >= 0``; both are linear, so no Jensen step is needed."""
    return float(m0) * (1.25 if mlp else 1.0) ** np.arange(depth + 1, dtype=np.float64)


def no_norm_growth_factor(kappa: float = 0.0, mlp: bool = True) -> float:
    """Asymptotic growth factor per block, ``lim m_{l+1}/m_l = (1 + kappa) (1 + G(q)/q -> 3/2)``.

    So ``m_L ~ C rho^L`` with ``rho`` in ``[3/2, 3]`` (``kappa`` in [0, 1]) with the MLP, ``[1, 2]`` without.
    """
    return (1.0 + kappa) * (1.5 if mlp else 1.0)


# ------------------------------------------------------------------------------------------------
# DeepNorm (section 9)
# ------------------------------------------------------------------------------------------------

DEEPNORM_ANGLE_EXPONENT = -0.75  # DeepNorm at init: per-layer angular change ~ beta^2 / alpha ~ L^(-3/4)
POST_LN_ANGLE_EXPONENT = 0.0  # Post-LN at init: the per-layer angular change does not depend on L


def deepnorm_angle_scale(depth: np.ndarray | float) -> np.ndarray:
    """``beta^2 / alpha`` with DeepNorm's ``alpha = (2L)^{1/4}``, ``beta = (8L)^{-1/4}``: the predicted
    per-layer rotation of the stream at initialisation up to a depth-free constant (section 9)."""
    L = np.asarray(depth, dtype=np.float64)
    return (8.0 * L) ** -0.5 / (2.0 * L) ** 0.25


# ------------------------------------------------------------------------------------------------
# DeepNorm: the model update after one optimiser step (section 10)
# ------------------------------------------------------------------------------------------------

OPTIMISERS = ("sgd", "adam")
# exponents in L of the update bound (section 10): DeepNorm's design makes the SGD factor exactly 1
UPDATE_BOUND_EXPONENT = {
    ("deepnorm", "sgd"): 0.0,
    ("post", "sgd"): 1.0,
    ("deepnorm", "adam"): 0.5,
    ("post", "adam"): 1.0,
}


def deepnorm_update_bound(depth: np.ndarray | float, deepnorm: bool, optimiser: str) -> np.ndarray:
    r"""Depth factor of Wang et al.'s bound on the model update ``|F(x; theta*) - F(x; theta)|`` (section 10).

    Their Theorem: for ``N`` Post-LN blocks ``x_{l+1} = LN(alpha x_l + G_l(x_l))`` whose ``2N`` sublayers
    have value/output (resp. MLP) weight scales ``v_i, w_i``,
    ``|dF| <= sum_i sqrt(v_i^2 + w_i^2) / alpha |theta*_i - theta_i|``. One step of

    * SGD moves ``theta_i`` by ``eta |dL/dtheta_i| <= eta sqrt(v_i^2 + w_i^2)/alpha |dL/dF|``, so the factor
      is ``sum_i (v_i^2 + w_i^2)/alpha^2 = 4 N beta^2 / alpha^2``: with ``alpha = (2N)^{1/4}``,
      ``beta = (8N)^{-1/4}`` exactly ``1`` at every depth (DeepNorm's design condition), ``4N`` for
      Post-LN (``alpha = beta = 1``);
    * Adam moves every coordinate by about ``eta`` (the first step is ``eta sign(g)``), so
      ``|theta*_i - theta_i|`` does not depend on ``N`` and the factor is
      ``sum_i sqrt(v_i^2 + w_i^2)/alpha = 2 sqrt 2 N beta / alpha = sqrt(2N)`` for DeepNorm, ``2 sqrt 2 N``
      for Post-LN.

    Returns the factor (the constant in front, ``eta |dL/dF|`` or ``eta sqrt(params)``, is depth-free).
    The bound treats the attention pattern and the LayerNorm affine parameters as fixed: only the
    sublayers' weight matrices move.
    """
    if optimiser not in OPTIMISERS:
        raise ValueError(f"optimiser must be one of {OPTIMISERS}, got {optimiser!r}")
    N = np.asarray(depth, dtype=np.float64)
    alpha = (2.0 * N) ** 0.25 if deepnorm else np.ones_like(N)
    beta = (8.0 * N) ** -0.25 if deepnorm else np.ones_like(N)
    vw = 2.0 * beta**2  # v_i^2 + w_i^2 with v_i = w_i = beta
    if optimiser == "sgd":
        return 2.0 * N * vw / alpha**2
    return 2.0 * N * np.sqrt(vw) / alpha


# ------------------------------------------------------------------------------------------------
# LayerNorm and rank collapse (section 11)
# ------------------------------------------------------------------------------------------------


def layernorm_residual_gain(xbar: torch.Tensor, E: torch.Tensor) -> float:
    r"""First-order effect of a LayerNorm (gain 1, no bias, eps 0) on the rank residual (section 11).

    For a nearly collapsed ``X = 1 xbar^T + e E`` (T, d), ``e -> 0``, returns
    ``lim r(LN X) / r(X)`` with ``r`` = :func:`rank_residual`. Per token ``LN(xbar + e E_t) = n + e E_t P /
    sigma + O(e^2)`` with ``n = LN(xbar)`` (``|n|^2 = d``), ``sigma`` the std of ``xbar`` over features and
    ``P = I - 1 1^T/d - n n^T/d`` the symmetric projection of the LN Jacobian. Hence
    ``res(LN X) = e res(E) P / sigma`` and ``LN X -> 1 n^T``::

        gain = [|res(E) P|_{1,inf} / (sigma |1 n^T|_{1,inf})] / [|res(E)|_{1,inf} / |1 xbar^T|_{1,inf}]

    finite and nonzero: the norm rescales the residual by an O(1) factor (``P`` only removes two
    directions) and cannot restore rank lost to averaging. Iterated with ``r_{l+1} <= c r_l^3`` this
    changes the constant ``c``, not the doubly exponential rate.
    """
    xbar, E = xbar.to(torch.float64), E.to(torch.float64)
    d = xbar.numel()
    mu, sigma = xbar.mean(), xbar.var(unbiased=False).sqrt()
    n = (xbar - mu) / sigma  # (d,)
    P = torch.eye(d, dtype=torch.float64) - torch.ones(d, d, dtype=torch.float64) / d - torch.outer(n, n) / d
    res = E - E.mean(0, keepdim=True)  # (T, d)
    ones = torch.ones(E.shape[0], 1, dtype=torch.float64)
    num = composite_norm(res @ P) / (sigma * composite_norm(ones * n))
    den = composite_norm(res) / composite_norm(ones * xbar)
    return float(num / den)


# ------------------------------------------------------------------------------------------------
# Trained Pre-LN: the growth exponent of the stream (section 12)
# ------------------------------------------------------------------------------------------------

PRE_LN_INIT_GROWTH_EXPONENT = 1.0  # sum rule: a bounded increment per block, so m_l - m_0 grows as l^1


def variance_growth_exponent(m: np.ndarray) -> tuple[float, float]:
    """Least-squares slope ``p`` of ``log(m_l - m_0)`` on ``log l`` over ``l = 1..L`` and its standard error.

    ``m`` (L + 1,) second moments after the embedding (``l = 0``) and after every block. Only layers with
    ``m_l > m_0`` enter (a logarithm needs a positive increase); NaN, NaN with fewer than 3 such layers.
    A constant increment per block (the sum rule at initialisation, section 12) gives exactly 1.
    """
    m = np.asarray(m, dtype=np.float64)
    if m.ndim != 1 or m.size < 2:
        raise ValueError(f"m must be a 1-d array of L + 1 >= 2 moments, got shape {m.shape}")
    inc = m[1:] - m[0]
    layers = np.arange(1, m.size, dtype=np.float64)
    ok = np.isfinite(inc) & (inc > 0)
    if ok.sum() < 3:
        return math.nan, math.nan
    return loglog_slope(layers[ok], inc[ok])


# ------------------------------------------------------------------------------------------------
# Training stability at depth (section 13)
# ------------------------------------------------------------------------------------------------

TRAINING_OUTCOMES = ("trained", "stalled", "diverged")
STALL_FRACTION = 0.1  # delta = this fraction of the context gap H(pi) - H
TAIL_FRACTION = 0.1  # the final loss: mean over the last tenth of the steps


def stall_margin(unigram_entropy: float, entropy_rate: float) -> float:
    """``delta = STALL_FRACTION (H(pi) - H)``: how far below the context-free loss a run must end to count as
    trained (section 13). Needs ``H(pi) >= H >= 0``."""
    hu, hr = float(unigram_entropy), float(entropy_rate)
    if not (math.isfinite(hu) and math.isfinite(hr)) or hr < 0 or hu < hr:
        raise ValueError(f"need unigram_entropy >= entropy_rate >= 0, got {hu!r} and {hr!r}")
    return STALL_FRACTION * (hu - hr)


def final_loss(losses: np.ndarray) -> float:
    """Mean of the last ``max(1, round(TAIL_FRACTION n))`` losses of a curve of ``n`` steps."""
    losses = np.asarray(losses, dtype=np.float64)
    if losses.ndim != 1 or losses.size < 1:
        raise ValueError(f"losses must be a non-empty 1-d curve, got shape {losses.shape}")
    tail = max(1, int(round(TAIL_FRACTION * losses.size)))
    return float(losses[-tail:].mean())


def classify_training(losses: np.ndarray, floor: float, margin: float) -> str:
    """``"diverged"``, ``"stalled"`` or ``"trained"`` for one training-loss curve (section 13).

    diverged: a non-finite loss anywhere, or the final loss (:func:`final_loss`) above the first loss;
    stalled: the final loss not below ``floor - margin`` (``floor`` = the context-free optimum ``H(pi)``);
    trained: otherwise.
    """
    losses = np.asarray(losses, dtype=np.float64)
    if losses.ndim != 1 or losses.size < 2:
        raise ValueError(f"losses must be a 1-d curve of at least 2 steps, got shape {losses.shape}")
    if not (math.isfinite(floor) and math.isfinite(margin) and margin >= 0):
        raise ValueError(f"floor must be finite and margin finite and >= 0, got {floor!r}, {margin!r}")
    if not np.isfinite(losses).all():
        return "diverged"
    final = final_loss(losses)
    if final > losses[0]:
        return "diverged"
    return "stalled" if final >= floor - margin else "trained"


def deepnorm_update_ratio(depth: np.ndarray | float, optimiser: str) -> np.ndarray:
    """Post-LN's update bound over DeepNorm's at the same depth (section 10): ``2 sqrt N`` (Adam), ``4 N`` (SGD)."""
    return deepnorm_update_bound(depth, False, optimiser) / deepnorm_update_bound(depth, True, optimiser)
