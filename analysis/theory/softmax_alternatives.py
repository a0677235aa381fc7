"""Softmax and its alternatives as key-value memories (float64).

1. Slot count (after Shen et al. 2023, seed 000#40). A key-value memory with ``n`` slots reads

    o = sum_i f(h)_i v_i,      h_i = k_i . x,

with keys ``k_i`` in R^d and values ``v_i`` in R^m; a transformer's MLP is one (``k_i`` the rows of ``W_in``,
``v_i`` the columns of ``W_out``, f an elementwise activation), and a memory with softmax reads
``f(h) = softmax(h)`` over the slots. Let the keys be i.i.d. N(0, a^2 I_d) and the values i.i.d. N(0, b^2 I_m),
independent of the keys, and let the input have a fixed norm, ``|x|^2 = r``. Then, given x, the ``h_i`` are
i.i.d. N(0, s^2) with ``s^2 = a^2 r`` exactly (a Gaussian vector's projection on a fixed direction), and since
the values are zero-mean and independent of everything else, every cross term ``E[f_i f_j v_i . v_j]``,
``i != j``, vanishes:

    E|o|^2 = m b^2 E[sum_i f(h)_i^2]                                                   (slot moment)

for an elementwise f and for softmax alike. The two differ in how ``E[sum_i f_i^2]`` scales with n:

    ReLU:     E[sum_i relu(h_i)^2] = n s^2 / 2                   grows like n
    softmax:  E[sum_i p_i^2] = n E[e^{2 h_1} / Z^2],  Z = sum_j e^{h_j}                 shrinks like 1/n

For softmax, ``1/Z^2 = int_0^oo t e^{-t Z} dt`` and the independence of the ``h_j`` give the exact 1-D form

    E[sum_i p_i^2] = n int_0^oo t chi(t) phi(t)^(n-1) dt,
    phi(t) = E[exp(-t e^h)],   chi(t) = E[e^{2h} exp(-t e^h)],

evaluated on ``u = ln t`` by the trapezoid rule (the integrand is smooth in u and decays like ``e^{2u}`` below
and like a Gaussian in ``u / s`` above), with ``phi``, ``chi`` as Gaussian integrals on a fixed z grid. Checks:
``n = 1`` gives 1, ``s = 0`` gives ``1/n``; by the law of large numbers ``Z/n -> E e^h = e^{s^2/2}`` and
``n E[e^{2h_1}/Z^2] -> E e^{2h} / (n (E e^h)^2)`` so

    E[sum_i p_i^2] ~ e^{s^2} / n        (n >> e^{s^2}),

the ``1/n`` of uniform weights times ``e^{s^2}``, the concentration of the weights on the larger logits. The
slopes in ``ln n`` are therefore +1 (ReLU) and close to -1 (softmax, exactly -1 in the limit): a ReLU memory's
output grows with its slot count and a softmax memory's shrinks, the difference in normalisation Shen et al.
give for ReLU handling many slots and softmax needing a LayerNorm after it to match.

2. Sparse attention isolates a planted key (after the entmax paper, seed 000#29). One query row sees ``n`` keys: a
planted one with logit ``z_0 = g + s xi_0`` and ``n - 1`` distractors ``z_j = s xi_j``, the ``xi`` i.i.d. N(0, 1)
(a random layer at initialisation, given its weights and the query: module section 1's argument). Sparsemax, the
Euclidean projection of the logits onto the simplex, gives the planted key weight exactly 1 iff its logit exceeds
every other by at least 1 (support of size one: ``1 + 2 z_(2) <= z_(1) + z_(2)``). Hence

    P(isolated) = P(z_0 - max_j z_j >= 1) = int phi(u) Phi(u + (g - 1)/s)^(n-1) du,

exactly; it falls with n (the largest distractor grows like ``s sqrt(2 ln n)``), from 1 at ``n = 1`` (for
``g >= 1``). With the distractors at their mean (``s -> 0``) it would be 1 at every n for ``g > 1``: the fixed-logit
picture in which sparse attention never disperses. Softmax never isolates (every weight is positive).

3. K-interval softmax (after the K-interval attention paper, seed 000#16). Each row's exponential ``e^(z - M)`` is
read off the grid ``e^(-k h)``, ``k = 0..K``, ``h = (M - m)/K`` between the row's largest and smallest logits.
Every key's approximation is its exponential times a ratio ``rho``: hard rounding moves the exponent by at most
``h/2``, so ``rho`` lies in ``[e^(-h/2), e^(h/2)]``; linear interpolation of the convex exponential overestimates it,
``rho(t) = ((1 - t) + t e^(-h)) e^(t h) = 1 + t (1 - t) h^2 / 2 + O(h^3)`` at the fraction ``t`` of the cell, so
``rho`` lies in ``[1, r(h)]``, ``r(h) = rho(t*)`` at ``t* = (1 - (1 - e^(-h))/h) / (1 - e^(-h))``, the maximiser
(``r(h) - 1 = h^2/8 + O(h^3)``). If every ratio lies in ``[a, b]`` the weights ``p_i rho_i / sum_j p_j rho_j`` differ
from softmax's by ``sum_i |dp_i| <= b/a - 1``:

    rounding:       sum_i |dp_i| <= e^h - 1       (order h = (M - m)/K: error ~ 1/K)
    interpolation:  sum_i |dp_i| <= r(h) - 1      (order h^2 / 8: error ~ 1/K^2)

To first order ``dp_i = p_i (delta_i - sum_j p_j delta_j)`` with ``delta`` the exponent shift (rounding) or
``t(1 - t) h^2 / 2`` (interpolation); the next terms are odd in the cell position and average out over many keys,
so the mean error falls like ``K^-1`` and ``K^-2`` with corrections of relative order ``h^2``.

4. Mimetic initialisation (after Trockman & Kolter 2023, seed 000#115). Set the product of the query and key weights
to ``W_q^T W_k = M = alpha Z + beta I`` (Z with i.i.d. N(0, 1/d) entries; the zoo's ``init="mimetic"``). With logit
scale c, row i's own logit is ``a_i = c x_i^T M x_i`` and, for Gaussian tokens ``x_j ~ N(0, I)`` independent of
``x_i``, the other ``n - 1`` logits ``c x_i^T M x_j`` are i.i.d. N(0, s_i^2), ``s_i = c |M^T x_i|``, exactly, given
the weights and the query. Since ``1/(1 + S) = int_0^oo e^{-t (1 + S)} dt`` and the other logits are independent,

    E[p_ii | x_i, M] = E[1 / (1 + sum_j e^{z_j - a_i})] = int_0^oo e^{-t} phi_{s_i}(t e^{-a_i})^(n-1) dt,

with section 1's ``phi_s(t) = E[exp(-t e^{s xi})]``, a 1-D quadrature on ``u = ln t`` (exact; checked against
Monte Carlo and the two-token case ``int phi(xi) sigmoid(a - s xi) dxi``). ``1/(1 + x)`` is convex, so Jensen's
inequality gives the mean-field value as a lower bound,

    E[p_ii] >= 1 / (1 + (n - 1) e^{s^2/2 - a}),

which for ``alpha = 0`` and ``|x_i|^2 = d`` is ``1/(1 + (n - 1) exp(beta^2 d c^2 / 2 - beta d c))``: the identity
product makes every token attend to itself once ``beta d c`` beats ``ln n + beta^2 d c^2 / 2``, where a random
initialisation (``E[a_i] = 0``) spreads its weight over the row.

5. The softmax Jacobian against the logit scale (after the SA-Softmax paper, seed 000#23). For logits ``z = s u``
the Jacobian of softmax, ``J = diag(p) - p p^T``, vanishes on a row whose top two logits differ by ``delta``
like ``e^{-s delta}``; the self-adjusting variant ``f(z) = z * softmax(z)`` has ``J' = diag(p) + diag(z) J`` whose
top-key entry ``p_1 + z_1 p_1 (1 - p_1)`` tends to 1. Over rows of n i.i.d. N(0, 1) logits the gap has a density
at 0, so the row-wise exponential does not carry over to the mean: when ``s`` is large only the top two keys
carry weight (the third's share is ``e^{-s delta_13}``), and with the joint density of the top value u and the gap
delta,

    f(u, delta) = n (n - 1) phi(u) phi(u - delta) Phi(u - delta)^(n-2),

    E|J|_F  = int int f(u, delta) 2 p_1 p_2 du ddelta            ~ f_delta(0) / s       (s -> oo)
    E|J'|_F = int int f(u, delta) |J'_2x2(s u, s (u - delta))|_F du ddelta
            -> 1 + n (n - 1) int |u| phi(u)^2 Phi(u)^(n-2) du                       (s -> oo)

with ``p_1 = 1/(1 + e^{-s delta})``, ``p_2 = 1 - p_1`` and the two-key Jacobian ``J'_2x2`` (``J'_11 = p_1 + z_1
p_1 p_2``, ``J'_12 = -z_1 p_1 p_2``, ...). So softmax's mean Jacobian falls like ``1/s`` (not exponentially: the
rows with near-ties carry it) and SA-Softmax's stays of order 1. Both are 2-D Gauss-Legendre quadratures in
``(u, t = s delta)``; the neglected third-key terms are of relative order ``1/s`` with a small coefficient (below
0.5% at ``s >= 16``, ``n = 32``, in the tests against Monte Carlo). A row of i.i.d. N(0, sigma^2) logits at scale s
is the unit row at scale ``s sigma``.

6. Linear attention's weights and their entropy (after the Linear Log-Normal attention paper, seed 003#74). A
kernelised row gives key j the weight ``p_j = s_j / sum_i s_i`` with ``s_j = phi(q) . phi(k_j) = sum_d a_d
phi(kappa_jd)``, ``a = phi(q)`` (elu + 1: ``phi(x) = x + 1`` for ``x > 0``, ``e^x`` below). For keys with i.i.d.
N(0, sigma^2) coordinates the ``s_j`` are i.i.d. given the query, and every moment we need factorises over d: with
``L_m(tau) = E[phi(kappa)^m e^{-tau phi(kappa)}]`` (1-D Gaussian integrals) the Laplace transform of s is
``psi(u) = prod_d L_0(u a_d)``, ``E[s e^{-us}] = psi sum_d a_d L_1/L_0`` and ``E[s^2 e^{-us}] = psi ((sum_d a_d
L_1/L_0)^2 + sum_d a_d^2 (L_2/L_0 - (L_1/L_0)^2))``. Frullani's ``ln x = int_0^oo (e^{-u} - e^{-ux}) du/u`` then gives,
for ``x = s/E[s]`` (mean 1, variance v),

    D = E[x ln x] = int_0^oo (e^{-u} - E[x e^{-ux}]) du/u,
    E[x^2 ln x] = int_0^oo ((1 + v) e^{-u} - E[x^2 e^{-ux}]) du/u,

and with ``A = mean_j x_j``, ``B = mean_j x_j ln x_j`` the row's entropy ``H = ln n + ln A - B/A`` has, to first order
in 1/n (the delta method; the next terms are O(n^-2)),

    ln n - E[H] = D + v/(2n) - c/n + D v/n,     c = Cov(x, x ln x) = E[x^2 ln x] - D.

Softmax is the same with ``s = e^z``, ``z ~ N(0, s_z^2)``: ``D = s_z^2/2`` (the deficit ln n - s_z^2/2 of section 1's
concentration); elu + 1 averages d bounded-below terms, so its x has variance of order 1/d and its deficit stays
near 0: the kernel does not concentrate the weights.

7. The second-order Taylor feature map (after Hedgehog, seed 000#51). ``phi(x) = [1, x / d^(1/4), x (x) x / sqrt(2 d)]``
gives ``phi(q) . phi(k) = 1 + z + z^2/2`` with ``z = q . k / sqrt(d)``, softmax's ``e^z`` to second order. For
Gaussian keys the row's z are i.i.d. N(0, sigma^2), ``sigma = |q| / sqrt(d)``. The score is a function of z alone but
not a monotone one: it falls for ``z < -1`` and is symmetric about -1, so for ``z_1 < z_2`` the scores disagree with
the logits iff ``z_1 + z_2 < -2``; with ``u = z_1 + z_2`` and ``w = z_2 - z_1`` independent N(0, 2 sigma^2),

    P(a pair of keys is ordered differently by the score than by the logit) = Phi(-sqrt(2) / sigma)

exactly (softmax's ``e^z``: 0). Its weights are spikier than elu + 1's: the deficit is section 6's expansion with
``x = s / E[s]``, ``E[s] = 1 + sigma^2/2``, every moment a 1-D Gaussian integral.

8. How linear is an MLP sublayer, with and without its residual (after "Your transformer is secretly linear",
seed 003#37). The paper scores the map from one layer's token embeddings X to the next's Y by regressing Y on X
after centring and scaling both to unit Frobenius norm: ``score = 1 - min_A |X A - Y|_F^2``, the fraction of Y's
variance a linear map of X explains. Take an MLP sublayer ``y = r x + W_out g(W_in x)`` (``r = 1`` with its skip
connection, 0 without, g elementwise) on Gaussian inputs ``x ~ N(0, Sigma)``, the weights fixed. Then
``z = W_in x ~ N(0, C)``, ``C = W_in Sigma W_in^T``, and Stein's lemma ``E[g(z_k) x] = E[g'(z_k)] Sigma w_k`` makes
the best linear predictor of ``g(z)`` from x exactly ``D z``, ``D = diag(E g'(z_k))``. The part no linear map
reaches is ``W_out (g(z) - E g(z) - D z)``, with covariance ``W_out (Cov g(z) - D C D) W_out^T``, so the population
score is exactly

    1 - score = tr(W_out (Cov g(z) - D C D) W_out^T) / tr Cov(y),
    tr Cov(y) = r^2 tr Sigma + tr(W_out Cov g(z) W_out^T) + 2 r tr(W_out D W_in Sigma).

``Cov g(z)`` is Mehler's expansion: with ``g(s_k u) = sum_n a_n(s_k) He_n(u)`` (u ~ N(0, 1), ``s_k^2 = C_kk``; the
coefficients by the trapezoid rule on a fine grid) and ``rho_kl = C_kl / (s_k s_l)``,
``Cov(g(z_k), g(z_l)) = sum_{n >= 1} n! a_n(s_k) a_n(s_l) rho_kl^n`` (truncated at order 40, the diagonal exact).
The residual adds ``tr Sigma`` to the denominator only: for a random GELU layer at unit scale the unexplained
fraction is about 0.27 without the skip connection and about 0.07 with it, the paper's "linearity decreases when
the residual component is removed".

9. The bilinear MLP and its eigendecomposition (after Pearce et al., "Bilinear MLPs enable weight-based mechanistic
interpretability", seed 003#57). ``y = W_out ((W_in x) * (W_gate x))`` has no elementwise nonlinearity: output o is
the quadratic form ``y_o = x^T B_o x`` of the symmetric interaction matrix ``B_o = sum_k W_out[o, k] (w_k g_k^T +
g_k w_k^T) / 2`` (``w_k``, ``g_k`` the k-th rows of ``W_in``, ``W_gate``): the layer is the third-order tensor B,
exactly, and each ``B_o`` (or any output direction's ``sum_o u_o B_o``) has an eigendecomposition that reads the
layer's weights. Plant a rank-r target ``y_o = x^T Q_o x + sigma eps_o``, ``Q_o = U diag(lambda_o) U^T`` (U an
orthonormal d x r basis shared by the outputs), on N Gaussian inputs. The loss is least squares in B, so a layer
with enough units trained to its minimum holds the least-squares fit ``theta_hat = G^-1 Phi^T y`` in the quadratic
features ``Phi`` (``x_i x_j``, i <= j, off-diagonal ones doubled; ``G = Phi^T Phi``): the planted part exactly plus
the fitted noise ``G^-1 Phi^T eps``. Outside the planted subspace (``P = I - U U^T``) the target is 0, so
``P B_o P`` is noise alone and, given the inputs,

    E sum_o |P B_o P|_F^2 = d_out sigma^2 tr(L G^-1 L^T),      L: theta -> vec(P B(theta) P),

exactly. The r planted eigenvalues carry the rest: the eigendecomposition finds the planted rank, and what lies
outside it is the fitted noise, at a size set by sigma^2 and the design (of order sigma^2 (d - r)^2 / (2 N) per
output). Gradient descent from a small start fits the planted directions first (an implicit low-rank bias); at its
minimum it holds all of the noise the design lets through.

10. Token isolation at initialisation (after Richter & Wattenhofer, "Normalized attention without probability cage",
seed 000#118). Softmax weights lie on the simplex, so a row passes on a convex combination of the values; with
i.i.d. values (random tokens at initialisation) its energy is ``sum_j p_j^2`` times theirs, the row's weight
collision. Given the weights and a Gaussian query, a row's own logit is ``a`` and its other ``n - 1`` logits are
i.i.d. N(0, s^2) (section 4); with ``w_j = e^{z_j - a}`` and ``1/Z^2 = int_0^oo t e^{-tZ} dt``,

    E[sum_j p_j^2] = int_0^oo t e^{-t} [phi(t e^-a)^(n-1) + (n - 1) e^{-2a} chi(t e^-a) phi(t e^-a)^(n-2)] dt,

with section 1's ``phi`` and ``chi`` at std s, exactly; for large n it falls like ``e^{s^2}/n`` (section 1's
concentration). So the attention branch's share of each token's update shrinks with the sequence length and the
residual stream keeps each token to itself: the length-dependent bias towards token isolation the paper finds at
initialisation, where sum pooling's weights (all 1) pass ``n`` times the energy and uniform ones ``1/n``.

11. The denominator of linear attention (after TransNormer, "The devil in linear transformer", seed 003#31). With the
identity feature map, normalised linear attention reads, for a query q over keys ``k_j`` and values ``v_j``,

    o = y / D,      y = c M^T q = c sum_j (q . k_j) v_j,      D = c q . s,      M = sum_j k_j v_j^T,  s = sum_j k_j,

(c the logit scale). Unlike softmax's, the denominator has no sign: it crosses zero. (a) If q ~ N(0, I) given the
keys and values, each ``(y_a, D)`` is a zero-mean Gaussian pair, so ``o_a = y_a / D`` is exactly Cauchy with
location ``m_a . s / |s|^2`` and scale ``|m_a - (m_a . s / |s|^2) s| / |s|`` (``m_a`` column a of M): the read-out
has no mean. (b) Whatever ties q to the keys, as long as D has a continuous density ``f_D`` with ``f_D(0) > 0`` and
``y != 0`` where ``D = 0``: ``P(|o| > t) = P(|D| < |y| / t) ~ 2 f_D(0) E[|y| | D = 0] / t``, tail index 1. The
gradient in the query,

    J = do/dq = c (M^T - o s^T) / D,      |J|_F ~ c |y| |s| / D^2  as D -> 0,

has ``P(|J|_F > t) ~ P(|D| < sqrt(c |y| |s| / t)) ~ t^(-1/2)``: tail index 1/2, no finite moment of order 1/2 or more
(a few rows carry unbounded gradients: the instability the paper traces to the scaling). (c) TransNormer drops the
denominator and normalises the output instead, ``o = sqrt(d_v) y / |y|`` (an RMSNorm without gain): |o| is fixed and

    J = c sqrt(d_v) (I - y^ y^T) M^T / |y|,      |J|_F <= c sqrt(d_v) |M|_F / |y|,

and ``y = c M^T q`` has a density in R^{d_v} (M of rank d_v), so ``P(|y| < r) ~ r^(d_v)``: tail index ``d_v``, every
moment below ``d_v`` finite. Hill's estimator (:func:`analysis.claims.fitting.hill_tail_index`) reads the index off the
largest samples.

12. Softplus and the l1 norm (after the paper that splits softmax into a nonlinearity and an l1 normalisation, seed
000#85). Its attention weighs key j by ``p_j = softplus(z_j) / sum_i softplus(z_i)``. For a row with i.i.d.
N(0, sigma^2) logits, section 6's expansion holds with ``x = softplus(sigma Z) / E[softplus(sigma Z)]`` (every moment
a 1-D Gaussian integral). Softplus is scale-free at large logits, ``softplus(sigma z) / sigma -> relu(z)``, so x tends
to ``sqrt(2 pi) relu(Z)``, and with ``E[Z ln Z; Z > 0] = (ln 2 - gamma) / (2 sqrt(2 pi))``

    D -> (ln(4 pi) - gamma) / 2 = 0.9766...,      v -> pi - 1,

as sigma -> oo: the row's entropy stays within about a nat of ``ln n`` at any logit scale (half the keys get almost
nothing, the rest are weighed linearly), where softmax's deficit ``sigma^2/2`` grows without bound (until the row
is one-hot): the l1 normalisation of a function that grows linearly cannot concentrate the weights, which is what
keeps its entropy, and so its behaviour, the same at every length.

13. Shaped attention keeps the token kernel at initialisation (after He & Hofmann, "Simplifying transformer blocks",
seed 004#82, and the shaped transformer). With zero logits (``W_q = 0`` at init) causal softmax is the uniform average
``C`` (``C_ij = 1/(i + 1)`` for ``j <= i``), so a skipless attention-only stack with value and output weights maps the
tokens ``X`` (T, d) to ``C^L X W``, ``W`` the product of the layers' ``W_v^T W_o^T``. For tokens with i.i.d.
N(0, I_d) rows, given the weights,

    E[X_L X_L^T] = tr(W^T W) C^L (C^L)^T,

exactly: the token kernel collapses at the rate of the powers of C (every row of ``C^L`` tends to the first token's
indicator, so every pair of tokens tends to correlation 1: rank collapse). Shaped attention ``alpha I + beta softmax
- gamma C`` starts at ``I`` (``beta = gamma``, zero logits), so the same stack maps ``X`` to ``X W`` and the kernel
stays ``tr(W^T W) I``: independent tokens stay uncorrelated, at any depth. The summary both are compared on is the
mean correlation ``rho_L = mean_{i != j} K_ij / sqrt(K_ii K_jj)`` of the kernel K.

14. Sigmoid attention's row mass at initialisation (after "Theory, analysis, and best practices for sigmoid
self-attention", seed 004#109). Sigmoid attention weighs each key independently, ``p_j = sigmoid(z_j + b)``, so a row's
weights need not sum to 1. For a row with n i.i.d. N(0, s^2) logits

    E[sum_j p_j] = n int sigmoid(s u + b) phi(u) du,

a 1-D Gaussian integral. With ``b = 0`` it is about ``n/2``: the attention output's norm grows with the sequence
length (the large initial attention norms the paper stabilises). With ``b = -ln n``, ``n sigmoid(z - ln n) = e^z /
(1 + e^z / n) -> e^z``, so the mass tends to ``E e^z = e^{s^2/2}``, of order one at every n: like softmax's, but not 1.

15. Cog attention keeps tokens uncorrelated at initialisation (after "More expressive attention with negative
weights", seed 004#28). Cog attention's SignExp weighs key j of row i by ``w_ij = sign(z_ij) e^{|z_ij|} / sum_k
e^{|z_ik|}``, ``z_ij = c q_i . k_j`` (the zoo's ``attention="cog"``). Flip the sign of one token, ``x_i -> -x_i``, in
a layer without biases: ``q_i, k_i, v_i`` flip, so ``z_ij`` and ``z_ji`` flip for ``j != i`` while ``z_ii`` does not,
and every ``|z|`` (hence every normaliser) stays. Row i's output ``sum_j w_ij v_j`` flips term by term (``w_ij``
flips for ``j != i``, ``v_i`` flips for ``j = i``); row ``k != i`` keeps its terms (``w_ki v_i``: both flip). So

    f(D X) = D f(X)        for every diagonal sign matrix D acting on the tokens,

exactly (negation is exact in floating point, so the zoo's float64 layer satisfies it bit for bit), and so does a
stack of such layers, with or without skip connections and bias-free LayerNorm (both odd). For tokens whose joint
law is invariant under flipping any one of them (i.i.d. N(0, I) rows), the output's law is too, at every depth, so
``E[y_i . y_k] = 0`` for ``i != k`` and, flipping token i in each sequence of a batch separately, the batch kernel's
correlation ``K_ik / sqrt(K_ii K_kk)`` is symmetric about 0:

    E[rho_L] = 0        at every depth L,

where softmax's positive weights average the tokens and drive ``rho_L`` towards 1 (section 13's ``C^L`` at zero
logits; with random queries the same collapse, measured). Softmax has no such symmetry: flipping ``x_i`` flips the
logits ``z_ij`` and so changes the weights themselves.

16. The cost of running a block's sublayers in parallel (after "Three things everyone should know about vision
transformers", seed 000#96, insight 1). A pre-norm block feeds its MLP ``u = N(x + a)`` (``x`` the block's input,
``a`` its attention output, N the norm); a parallel block feeds it ``v = N(x)``. Given u and v, an MLP ``W_out g(W_in
.)`` with fan-in Gaussian weights (``W_in`` N(0, 1/d), ``W_out`` N(0, 1/m), no biases), independent of u and v at
initialisation (they depend on earlier layers and on this block's attention only), has per hidden unit
``(W_in u, W_in v)`` jointly Gaussian with variances ``s_u^2 = |u|^2/d``, ``s_v^2 = |v|^2/d`` and correlation
``rho = cos(u, v)``, so exactly

    E|M(u) - M(v)|^2 / d = E g(s_u a)^2 + E g(s_v b)^2 - 2 sum_n c_n(s_u) c_n(s_v) rho^n,

Mehler's expansion of ``E g(s_u a) g(s_v b)`` in the normalised Hermite coefficients ``c_n(s)`` of ``g(s .)``
(section 8; ``c_0`` the mean), and ``E|M(v)|^2 / d = E g(s_v b)^2``. In a pre-norm stack the stream's variance grows
by about one branch per sublayer while the attention output stays of order one, so ``1 - rho``, the attention
output's share of the stream, falls with depth, and with it the parallel block's error relative to the MLP's output
(its slope in ``ln l`` is read off the law at the measured inputs); a post-norm stack, renormalising the stream after
every sublayer, would pay the same at every depth.

17. Persistent memory vectors in self-attention (after "Augmenting self-attention with persistent memory", seed
004#90). An all-attention layer lets each query attend to its T context tokens and to N learned persistent key-value
vectors, which take the feed-forward layer's place. At initialisation a row's logits on the context keys are i.i.d.
N(0, s^2) given the weights and the query (section 2's argument) and, for persistent vectors drawn N(0, r^2 I), its
logits on them are i.i.d. N(0, (r s)^2). With ``1/S = int e^{-tS} dt`` and the two groups independent, the share of
the row's weight on the persistent memory is exactly

    E[sum_{j in P} p_j] = N int chi_{rs}(t) phi_{rs}(t)^(N-1) phi_s(t)^T dt,
    phi_s(t) = E[exp(-t e^{s xi})],   chi_s(t) = E[e^{s xi} exp(-t e^{s xi})],

a 1-D quadrature on ``u = ln t``. By the law of large numbers it tends to ``N e^{(rs)^2/2} / (N e^{(rs)^2/2} + T
e^{s^2/2})``: exchangeable keys (r = 1) give ``N/(N + T)``, and at any r the memory's share falls like 1/T as the
context grows, so the persistent vectors' contribution, unlike a feed-forward layer's, depends on the context length.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special, stats

from analysis.core.validation import check_float, check_int
from analysis.theory.attention_entropy import log_t_grid

_Z = np.linspace(-12.0, 12.0, 961)  # z grid of the Gaussian integrals (tails below e^{-72})
_WZ = np.exp(-0.5 * _Z**2) / math.sqrt(2.0 * math.pi) * (_Z[1] - _Z[0])  # trapezoid weights (ends ~0)

ACTIVATIONS = ("relu", "softmax")


def _check_ns(ns) -> np.ndarray:
    ns = np.asarray(ns, dtype=np.int64)
    if ns.size == 0 or ns.min() < 1:
        raise ValueError(f"n must be >= 1 (slots), got {ns.tolist()}")
    return ns


def relu_slot_moment(ns, s: float) -> np.ndarray:
    """``E[sum_i relu(h_i)^2] = n s^2 / 2`` for ``n`` i.i.d. N(0, s^2) pre-activations, every n in ``ns``."""
    check_float("s", s, minimum=0.0)
    return _check_ns(ns).astype(np.float64) * float(s) ** 2 / 2.0


def _phi_moment(log_t: np.ndarray, s: float, k: float) -> tuple[np.ndarray, np.ndarray]:
    """``phi(t) = E[exp(-t e^{sz})]`` and ``E[e^{ksz} exp(-t e^{sz})]`` at ``t = e^{log_t}`` (a vector; z ~ N(0, 1),
    Gauss-Hermite nodes)."""
    x = s * _Z
    kern = np.exp(-np.exp(np.minimum(log_t[:, None] + x[None, :], 700.0)))  # exp(-t e^x), (Nt, Nz)
    return kern @ _WZ, (kern * np.exp(k * x)[None, :]) @ _WZ


def _phi_chi(t: np.ndarray, s: float) -> tuple[np.ndarray, np.ndarray]:
    """``phi(t) = E[exp(-t e^{sz})]`` and ``chi(t) = E[e^{2sz} exp(-t e^{sz})]`` on a t vector (z ~ N(0, 1))."""
    return _phi_moment(np.log(t), s, 2.0)


def _row_args(n: int, a, s) -> tuple[np.ndarray, np.ndarray]:
    """A row's own logit ``a`` and the others' spread ``s``, broadcast together (float64), ``n`` and ``s`` checked."""
    check_int("n", n, minimum=1)
    a_b, s_b = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(s, dtype=np.float64))
    if s_b.size and (s_b.min() < 0 or s_b.max() > 20):
        raise ValueError(f"s must lie in [0, 20], got [{s_b.min():g}, {s_b.max():g}]")
    return a_b, s_b


def softmax_slot_moment(ns, s: float, n_u: int = 2001) -> np.ndarray:
    """``E[sum_i p_i^2]`` of ``p = softmax(h)`` over ``n`` i.i.d. N(0, s^2) logits, every n in ``ns``: the exact
    1-D quadrature of the module docstring (float64; checked against Monte Carlo, ``n = 1`` and ``s = 0``)."""
    ns = _check_ns(ns)
    check_float("s", s, minimum=0.0, maximum=20.0)
    check_int("n_u", n_u, minimum=101)
    s = float(s)
    if s == 0.0:
        return 1.0 / ns.astype(np.float64)
    t, du = log_t_grid(s, int(ns.max()), n_u)
    phi, chi = _phi_chi(t, s)
    out = np.empty(ns.shape, dtype=np.float64)
    for i, n in np.ndenumerate(ns):
        out[i] = n * np.sum(t * t * chi * phi ** (int(n) - 1)) * du  # dt = t du
    return out


def softmax_slot_moment_lln(ns, s: float) -> np.ndarray:
    """The large-n form ``e^{s^2} / n`` of :func:`softmax_slot_moment`."""
    check_float("s", s, minimum=0.0)
    return math.exp(float(s) ** 2) / _check_ns(ns).astype(np.float64)


def slot_moment(activation: str, ns, s: float) -> np.ndarray:
    """``E[sum_i f(h)_i^2]`` for ``activation`` ``relu`` or ``softmax`` (over the slots)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    return relu_slot_moment(ns, s) if activation == "relu" else softmax_slot_moment(ns, s)


def memory_output_moment(activation: str, ns, key_std: float, value_std: float, d: int, m: int) -> np.ndarray:
    """``E|o|^2`` of a memory with ``n`` slots (every n in ``ns``), keys N(0, key_std^2 I_d), values
    N(0, value_std^2 I_m) and an input of norm ``sqrt(d)``: ``m value_std^2 E[sum_i f_i^2]`` at
    ``s = key_std sqrt(d)`` (module docstring)."""
    check_float("key_std", key_std, minimum=0.0)
    check_float("value_std", value_std, minimum=0.0)
    check_int("d", d, minimum=1)
    check_int("m", m, minimum=1)
    return m * float(value_std) ** 2 * slot_moment(activation, ns, float(key_std) * math.sqrt(d))


def softmax_slot_moment_mc(
    n: int, s: float, reps: int, rng: np.random.Generator, batch: int = 4096
) -> tuple[float, float]:
    """Monte Carlo ``E[sum_i p_i^2]`` over ``reps`` draws of ``n`` i.i.d. N(0, s^2) logits: (mean, its SE)."""
    check_int("n", n, minimum=1)
    check_int("reps", reps, minimum=2)
    vals = []
    done = 0
    while done < reps:
        b = min(batch, reps - done)
        h = s * rng.standard_normal((b, n))
        h -= h.max(axis=1, keepdims=True)
        p = np.exp(h)
        p /= p.sum(axis=1, keepdims=True)
        vals.append((p * p).sum(axis=1))
        done += b
    v = np.concatenate(vals)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size))


def sparsemax(z: np.ndarray) -> np.ndarray:
    """Sparsemax over the last axis (float64 reference): the projection of ``z`` onto the simplex by sorting;
    ``-inf`` entries get weight 0."""
    z = np.asarray(z, dtype=np.float64)
    zs = -np.sort(-z, axis=-1)
    seen = np.isfinite(zs)
    csum = np.cumsum(np.where(seen, zs, 0.0), axis=-1)
    k = np.arange(1, z.shape[-1] + 1)
    with np.errstate(invalid="ignore"):
        k_z = np.sum(seen & (1.0 + k * zs > csum), axis=-1, keepdims=True)
    tau = (np.take_along_axis(csum, np.maximum(k_z - 1, 0), axis=-1) - 1.0) / k_z
    return np.maximum(z - tau, 0.0)


def sparsemax_isolation(n, g: float, s) -> np.ndarray:
    """``P(z_0 - max_j z_j >= 1)``: the probability that sparsemax gives a planted key (logit ``g + s xi_0``) weight
    exactly 1 against ``n - 1`` i.i.d. N(0, s^2) distractors (section 2), for every ``n`` in ``n`` (broadcast with
    ``s``); trapezoid on the module's z grid."""
    n = np.asarray(n, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    if n.size and n.min() < 1:
        raise ValueError(f"n must be >= 1 (keys), got {n.min():g}")
    if s.size and s.min() < 0:
        raise ValueError(f"s must be >= 0, got {s.min():g}")
    check_float("g", g)
    n_b, s_b = np.broadcast_arrays(n, s)
    out = np.empty(n_b.shape, dtype=np.float64)
    for idx in np.ndindex(n_b.shape):
        nn, ss = float(n_b[idx]), float(s_b[idx])
        if ss == 0.0 or nn == 1.0:
            out[idx] = 1.0 if (nn == 1.0 or g >= 1.0) else 0.0
            continue
        cdf = 0.5 * special.erfc(-(_Z + (g - 1.0) / ss) / math.sqrt(2.0))
        out[idx] = float(np.sum(_WZ * cdf ** (nn - 1.0)))
    return out


K_INTERVAL_MODES = ("interpolate", "round")


def k_interval_weights(z: np.ndarray, K: int, mode: str) -> np.ndarray:
    """K-interval softmax over the last axis (float64 reference of section 3; ``-inf`` entries weight 0; a row of
    equal logits uniform)."""
    if mode not in K_INTERVAL_MODES:
        raise ValueError(f"mode must be one of {K_INTERVAL_MODES}, got {mode!r}")
    check_int("K", K, minimum=1)
    z = np.asarray(z, dtype=np.float64)
    seen = np.isfinite(z)
    top = np.max(np.where(seen, z, -np.inf), axis=-1, keepdims=True)
    low = np.min(np.where(seen, z, np.inf), axis=-1, keepdims=True)
    h = (top - low) / K
    flat = h <= 0
    h = np.where(flat, 1.0, h)
    u = np.where(seen, (top - np.where(seen, z, 0.0)) / h, 0.0)
    if mode == "round":
        approx = np.exp(-np.round(u) * h)
    else:
        k0 = np.minimum(np.floor(u), K - 1)
        t = u - k0
        approx = (1 - t) * np.exp(-k0 * h) + t * np.exp(-(k0 + 1) * h)
    approx = np.where(seen & ~flat, approx, np.where(seen, 1.0, 0.0))
    return approx / approx.sum(axis=-1, keepdims=True)


def k_interval_l1_bound(h, mode: str) -> np.ndarray:
    """The bound ``b/a - 1`` on a row's ``sum_i |dp_i|`` against softmax at grid step ``h`` (section 3)."""
    if mode not in K_INTERVAL_MODES:
        raise ValueError(f"mode must be one of {K_INTERVAL_MODES}, got {mode!r}")
    h = np.asarray(h, dtype=np.float64)
    if h.size and h.min() < 0:
        raise ValueError(f"h must be >= 0, got {h.min():g}")
    if mode == "round":
        return np.expm1(h)
    safe = np.where(h > 0, h, 1.0)
    c = -np.expm1(-safe)  # 1 - e^(-h)
    t = (1.0 - c / safe) / c
    return np.where(h > 0, (1.0 - t) * np.exp(t * safe) + t * np.exp((t - 1.0) * safe) - 1.0, 0.0)


def _row_quadrature(n: int, a, s, n_u: int, at_zero, integrand) -> np.ndarray:
    """A softmax row's expectation over its own logit ``a`` and ``n - 1`` i.i.d. N(0, s^2) others, for every (a, s)
    pair (broadcast): ``at_zero(a)`` where ``s = 0`` (and 1 where ``n = 1``), else the trapezoid rule on ``u = ln t``
    of ``integrand(t, a, phi, chi)`` (``phi, chi`` of :func:`_phi_chi` at ``t e^-a``). The rule converges
    geometrically on these smooth integrands: 201 points agree with 3201 to 1e-13."""
    check_int("n_u", n_u, minimum=101)
    a_b, s_b = _row_args(n, a, s)
    out = np.empty(a_b.shape, dtype=np.float64)
    if n == 1:
        out.fill(1.0)
        return out
    u = np.linspace(-40.0, 6.0, n_u)  # t = e^u: below, 1 - e^{-t} ~ t is negligible; above, e^{-t} is
    t, du = np.exp(u), float(u[1] - u[0])
    for idx in np.ndindex(a_b.shape):
        aa, ss = float(a_b[idx]), float(s_b[idx])
        if ss == 0.0:
            out[idx] = at_zero(aa)
            continue
        phi, chi = _phi_chi(t * math.exp(-aa), ss)
        out[idx] = float(np.sum(integrand(t, aa, phi, chi)) * du)
    return out


def mimetic_self_weight(n: int, a, s, n_u: int = 241) -> np.ndarray:
    """``E[1 / (1 + sum_{j<n} e^{z_j - a})]``, ``z_j`` i.i.d. N(0, s^2): a row's expected weight on its own key when
    its own logit is ``a`` and the ``n - 1`` others are i.i.d. N(0, s^2) (section 4), for every (a, s) pair
    (broadcast); exact 1-D quadrature on ``u = ln t`` (:func:`_row_quadrature`)."""
    return _row_quadrature(
        n,
        a,
        s,
        n_u,
        lambda aa: 1.0 / (1.0 + (n - 1) * math.exp(-aa)),
        lambda t, aa, phi, chi: t * np.exp(-t) * phi ** (n - 1),
    )


def _collision_at_zero(n: int, aa: float) -> float:
    z = 1.0 + (n - 1) * math.exp(-aa)
    return (1.0 + (n - 1) * math.exp(-2.0 * aa)) / (z * z)


def self_collision(n: int, a, s, n_u: int = 241) -> np.ndarray:
    """``E[sum_j p_j^2]`` of a softmax row over its own logit ``a`` and ``n - 1`` i.i.d. N(0, s^2) others (section 10),
    for every (a, s) pair (broadcast); the 1-D quadrature of :func:`mimetic_self_weight` on ``u = ln t``."""
    return _row_quadrature(
        n,
        a,
        s,
        n_u,
        lambda aa: _collision_at_zero(n, aa),
        lambda t, aa, phi, chi: (
            t * t * np.exp(-t) * (phi ** (n - 1) + (n - 1) * math.exp(-2.0 * aa) * chi * phi ** (n - 2))
        ),
    )


def mimetic_self_weight_jensen(n: int, a, s) -> np.ndarray:
    """The mean-field lower bound ``1 / (1 + (n - 1) e^{s^2/2 - a})`` on :func:`mimetic_self_weight` (section 4)."""
    check_int("n", n, minimum=1)
    a = np.asarray(a, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    return 1.0 / (1.0 + (n - 1) * np.exp(s * s / 2.0 - a))


JACOBIAN_KERNELS = ("softmax", "sa_softmax")
_GU = np.polynomial.legendre.leggauss(120)  # 120 x 80 nodes agree with 240 x 160 to 1e-10
_GT = np.polynomial.legendre.leggauss(80)


def _legendre(lo: float, hi: float, rule) -> tuple[np.ndarray, np.ndarray]:
    x, w = rule
    return lo + (hi - lo) * (x + 1) / 2, w * (hi - lo) / 2


def two_key_jacobian_norm(kernel: str, scale, n: int) -> np.ndarray:
    """``E |J|_F`` of ``kernel`` (softmax or sa_softmax, ``z * softmax(z)``) on ``scale * u``, u n i.i.d. N(0, 1)
    logits, in the two-key approximation of section 5 (exact as ``scale -> oo``), for every scale (>= 0).

    At scale 0 every logit is 0 and the two keys weigh 1/2 each: ``|J|_F = 2 p1 p2 = 1/2`` for softmax and
    ``sqrt(p1^2 + p2^2) = 1/sqrt(2)`` for sa_softmax (its Jacobian at z = 0 is diag(p)), the limits as scale -> 0."""
    if kernel not in JACOBIAN_KERNELS:
        raise ValueError(f"kernel must be one of {JACOBIAN_KERNELS}, got {kernel!r}")
    check_int("n", n, minimum=2)
    scale = np.asarray(scale, dtype=np.float64)
    if scale.size and not scale.min() >= 0:
        raise ValueError(f"scale must be >= 0, got {scale.min():g}")

    u, wu = _legendre(-7.0, 9.0, _GU)  # the top of n >= 2 Gaussians
    out = np.empty(scale.shape, dtype=np.float64)
    for idx in np.ndindex(scale.shape):
        s = float(scale[idx])
        if s == 0.0:
            out[idx] = 0.5 if kernel == "softmax" else math.sqrt(0.5)
            continue
        total = 0.0
        # delta = t / s: the near-tie region t in [0, 60] (where p_2 matters), then the rest of the gap out to 12
        # (the top-two gap of Gaussians exceeds 12 with probability < 1e-30); below s = 5 the whole gap is near-tie
        tie = 60.0 / s
        for lo, hi in ((0.0, tie), (tie, max(12.0, 120.0 / s))) if tie <= 12.0 else ((0.0, 12.0),):
            d, wd = _legendre(lo, hi, _GT)
            U, D = u[:, None], d[None, :]
            dens = n * (n - 1) * stats.norm.pdf(U) * stats.norm.pdf(U - D) * stats.norm.cdf(U - D) ** (n - 2)
            p2 = special.expit(-s * D)  # the second key's weight
            p1, x = 1.0 - p2, (1.0 - p2) * p2
            if kernel == "softmax":
                norm = 2.0 * x
            else:
                z1, z2 = s * U, s * (U - D)
                norm = np.sqrt((p1 + z1 * x) ** 2 + (p2 + z2 * x) ** 2 + (z1 * x) ** 2 + (z2 * x) ** 2)
            total += float(np.sum(wu[:, None] * wd[None, :] * dens * norm))
        out[idx] = total
    return out


def jacobian_limit(kernel: str, n: int) -> float:
    """The ``scale -> oo`` limit of section 5: ``scale * E|J|_F -> f_delta(0)`` (softmax) and ``E|J'|_F ->
    1 + n (n - 1) int |u| phi(u)^2 Phi(u)^(n-2) du`` (sa_softmax)."""
    if kernel not in JACOBIAN_KERNELS:
        raise ValueError(f"kernel must be one of {JACOBIAN_KERNELS}, got {kernel!r}")
    check_int("n", n, minimum=2)

    u, wu = _legendre(-7.0, 9.0, _GU)
    dens = n * (n - 1) * stats.norm.pdf(u) ** 2 * stats.norm.cdf(u) ** (n - 2)
    return float(np.sum(wu * dens)) if kernel == "softmax" else 1.0 + float(np.sum(wu * np.abs(u) * dens))


def median_top_gap(n: int) -> float:
    """The median gap between the largest and second largest of n i.i.d. N(0, 1) (the typical row's delta)."""
    check_int("n", n, minimum=2)

    u, wu = _legendre(-7.0, 9.0, _GU)

    def cdf(g: float) -> float:  # P(delta <= g) = 1 - P(all others below u - g | top u) integrated
        return 1.0 - float(np.sum(wu * n * stats.norm.pdf(u) * stats.norm.cdf(u - g) ** (n - 1)))

    return float(optimize.brentq(lambda g: cdf(g) - 0.5, 1e-9, 10.0))


FEATURE_KINDS = ("elu1", "exp")
_TAU = np.exp(np.linspace(-40.0, 25.0, 3001))  # the tau grid of the 1-D transforms L_m (log-interpolated)
_U = np.exp(np.linspace(-30.0, 12.0, 2001))  # the Frullani grid in u = ln t (x has mean 1)


def feature_of(kind: str, x: np.ndarray) -> np.ndarray:
    """``phi(x)``: elu + 1 (``elu1``) or ``e^x`` (``exp``)."""
    if kind not in FEATURE_KINDS:
        raise ValueError(f"kind must be one of {FEATURE_KINDS}, got {kind!r}")
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0))) if kind == "elu1" else np.exp(x)


def feature_transforms(kind: str, sigma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``L_0, L_1, L_2`` of section 6 on the module's tau grid, for kappa ~ N(0, sigma^2)."""
    check_float("sigma", sigma, minimum=0.0, strict_minimum=True, maximum=10.0)
    f = feature_of(kind, sigma * np.linspace(-12.0, 12.0, 1921))
    w = np.exp(-0.5 * np.linspace(-12.0, 12.0, 1921) ** 2) / math.sqrt(2 * math.pi) * (24.0 / 1920)
    e = np.exp(-_TAU[:, None] * f[None, :]) * w  # weighted; summed by numpy (pairwise, one thread: no BLAS order)
    return e.sum(1), (f * e).sum(1), (f * f * e).sum(1)


def feature_entropy_deficit(kind: str, a, n: int, sigma: float = 1.0, transforms=None) -> float:
    """``ln n - E[H]`` of a kernelised row with coefficients ``a = phi(q)`` (d,) over n keys with i.i.d. N(0, sigma^2)
    coordinates (section 6; ``transforms`` from :func:`feature_transforms`, computed when None)."""
    check_int("n", n, minimum=1)
    a = np.asarray(a, dtype=np.float64)
    if a.ndim != 1 or a.size == 0 or a.min() <= 0:
        raise ValueError(f"a must be a non-empty vector of positive coefficients, got shape {a.shape}")
    L0, L1, L2 = feature_transforms(kind, sigma) if transforms is None else transforms
    Ef, Ef2 = float(L1[0]), float(L2[0])  # tau -> 0: E[phi], E[phi^2]
    a = a / float((a * Ef).sum())  # x = s / E[s]
    v = float((a * a * (Ef2 - Ef * Ef)).sum())
    ta, lt = np.log(_U[:, None] * a[None, :]), np.log(_TAU)
    l0 = np.exp(np.interp(ta, lt, np.log(np.maximum(L0, 1e-300))))  # L_0 underflows at large tau
    l1 = np.interp(ta, lt, L1) / l0
    r1 = (a * l1).sum(1)
    r2 = (a * a * (np.interp(ta, lt, L2) / l0 - l1 * l1)).sum(1)
    psi = np.exp(np.log(l0).sum(1))
    du = float(np.log(_U[1]) - np.log(_U[0]))  # du/u on the log grid
    D = float(np.sum(np.exp(-_U) - psi * r1) * du)
    x2lnx = float(np.sum((1.0 + v) * np.exp(-_U) - psi * (r1 * r1 + r2)) * du)
    c = x2lnx - D
    return D + v / (2 * n) - c / n + D * v / n


def taylor_discordance(sigma) -> np.ndarray:
    """``Phi(-sqrt(2) / sigma)``: the fraction of key pairs the Taylor score orders against their logits (section 7)."""
    sigma = np.asarray(sigma, dtype=np.float64)
    if sigma.size and sigma.min() <= 0:
        raise ValueError(f"sigma must be > 0, got {sigma.min():g}")
    return 0.5 * special.erfc(1.0 / sigma)  # Phi(-sqrt(2)/sigma) = erfc(1/sigma)/2


def _ratio_deficit(x: np.ndarray, w: np.ndarray, n: int) -> float:
    """Section 6's ``D + v/(2n) - c/n + D v/n`` for ``x`` (mean 1 under the quadrature weights ``w``) on a z grid."""
    xlx = np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0)), 0.0)
    D = float(np.sum(w * xlx))
    v = float(np.sum(w * x * x)) - 1.0
    c = float(np.sum(w * x * xlx)) - D
    return D + v / (2 * n) - c / n + D * v / n


def taylor_entropy_deficit(sigma: float, n: int) -> float:
    """``ln n - E[H]`` of a Taylor-feature row over n keys with logits N(0, sigma^2) (section 7, to O(n^-2))."""
    check_float("sigma", sigma, minimum=0.0, strict_minimum=True, maximum=20.0)
    check_int("n", n, minimum=1)
    z = sigma * _Z
    return _ratio_deficit((1.0 + z + 0.5 * z * z) / (1.0 + 0.5 * sigma * sigma), _WZ, n)


# a finer z grid for softplus: at logit scale sigma its kink has width 1/sigma
_Z_FINE = np.linspace(-12.0, 12.0, 24001)
_WZ_FINE = np.exp(-0.5 * _Z_FINE**2) / math.sqrt(2.0 * math.pi) * (_Z_FINE[1] - _Z_FINE[0])
SOFTPLUS_DEFICIT_LIMIT = 0.5 * (math.log(4.0 * math.pi) - np.euler_gamma)  # section 12's sigma -> oo limit of D


def softplus_l1_entropy_deficit(sigma: float, n: int) -> float:
    """``ln n - E[H]`` of an l1-normalised softplus row over n keys with logits N(0, sigma^2) (section 12, to
    O(n^-2)); tends to :data:`SOFTPLUS_DEFICIT_LIMIT` (plus its 1/n terms) as sigma grows."""
    check_float("sigma", sigma, minimum=0.0, strict_minimum=True, maximum=1000.0)
    check_int("n", n, minimum=1)
    f = np.logaddexp(0.0, sigma * _Z_FINE)  # softplus, stable at any scale
    return _ratio_deficit(f / float(np.sum(_WZ_FINE * f)), _WZ_FINE, n)


# ------------------------------------------------------------------------------------------------
# 8. The linearity of an MLP sublayer (seed 003#37)
# ------------------------------------------------------------------------------------------------
LINEARITY_ACTIVATIONS = ("gelu", "gelu_tanh", "silu", "tanh")
HERMITE_ORDER = 40  # Mehler's series is truncated here (|rho| < 1 off the diagonal; the diagonal is exact)
# the u grid of the Gaussian integrals of section 8: the trapezoid rule on a fine uniform grid converges geometrically
# for analytic integrands at a rate set by the distance of their poles from the real axis over the spacing (tanh's
# at i pi / (2 s): Gauss-Hermite at 160 nodes leaves 1e-4 at s = 3, this grid agrees with a finer one to 1e-10)
_HU = np.linspace(-14.0, 14.0, 2801)
_HW = np.exp(-0.5 * _HU**2) / math.sqrt(2.0 * math.pi) * (_HU[1] - _HU[0])


def activation_of(name: str, z: np.ndarray) -> np.ndarray:
    """The zoo's smooth activations (``analysis.zoo.model``) in float64 numpy."""
    if name == "gelu":
        return z * special.ndtr(z)
    if name == "gelu_tanh":
        return 0.5 * z * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z**3)))
    if name == "silu":
        return z * special.expit(z)
    if name == "tanh":
        return np.tanh(z)
    raise ValueError(f"activation must be one of {list(LINEARITY_ACTIVATIONS)}, got {name!r}")


def hermite_coefficients(activation: str, s, order: int = HERMITE_ORDER) -> np.ndarray:
    """(len(s), order + 1) coefficients ``a_n`` of ``g(s u) = sum_n a_n He_n(u)``, ``u ~ N(0, 1)``, scaled by
    ``sqrt(n!)`` (so ``Var g(s u) = sum_{n >= 1} (sqrt(n!) a_n)^2``): ``a_n = E[g(s u) He_n(u)] / n!``."""
    s = np.atleast_1d(np.asarray(s, dtype=np.float64))
    check_int("order", order, minimum=1, maximum=80)
    he = np.empty((order + 1, _HU.size))  # He_n(u) / sqrt(n!) by the normalised recurrence
    he[0] = 1.0
    he[1] = _HU
    for n in range(1, order):
        he[n + 1] = (_HU * he[n] - math.sqrt(n) * he[n - 1]) / math.sqrt(n + 1)
    g = activation_of(activation, s[:, None] * _HU[None, :])  # (k, nodes)
    return (g * _HW) @ he.T


def activation_covariance(activation: str, C: np.ndarray, order: int = HERMITE_ORDER) -> np.ndarray:
    """``Cov g(z)`` for ``z ~ N(0, C)`` (Mehler's expansion off the diagonal, the exact variance on it)."""
    C = np.asarray(C, dtype=np.float64)
    s = np.sqrt(np.diag(C))
    if s.min() <= 0:
        raise ValueError("C must have a positive diagonal")
    a = hermite_coefficients(activation, s, order)[:, 1:]  # (k, order)
    rho = C / np.outer(s, s)
    out = np.zeros_like(C)
    power = np.ones_like(C)
    for n in range(order):
        power = power * rho
        out += np.outer(a[:, n], a[:, n]) * power
    g = activation_of(activation, s[:, None] * _HU[None, :])
    mean = g @ _HW
    np.fill_diagonal(out, (g * g) @ _HW - mean * mean)
    return out


def mlp_linearity(W_in, W_out, sigma, residual: bool, activation: str = "gelu") -> dict[str, float]:
    """The exact population linearity of ``y = r x + W_out g(W_in x)``, ``x ~ N(0, sigma)`` (section 8):
    ``{"unexplained": 1 - score, "score", "nonlinear": tr W_out (Cov g - D C D) W_out^T, "total": tr Cov y}``."""
    W_in, W_out, sigma = (np.asarray(a, dtype=np.float64) for a in (W_in, W_out, sigma))
    if W_in.ndim != 2 or W_out.shape != (W_in.shape[1], W_in.shape[0]) or sigma.shape != (W_in.shape[1],) * 2:
        raise ValueError(
            f"need W_in (m, d), W_out (d, m) and sigma (d, d); got {W_in.shape}, {W_out.shape}, {sigma.shape}"
        )
    r = 1.0 if residual else 0.0
    C = W_in @ sigma @ W_in.T
    cov = activation_covariance(activation, C)
    slope = hermite_coefficients(activation, np.sqrt(np.diag(C)))[:, 1] / np.sqrt(np.diag(C))  # E g'(z_k)
    nonlinear_cov = cov - slope[:, None] * C * slope[None, :]
    nonlinear = float(np.sum((W_out @ nonlinear_cov) * W_out))
    total = r * r * float(np.trace(sigma)) + float(np.sum((W_out @ cov) * W_out))
    total += 2.0 * r * float(np.sum(W_out.T * ((slope[:, None] * W_in) @ sigma)))
    return {"unexplained": nonlinear / total, "score": 1.0 - nonlinear / total, "nonlinear": nonlinear, "total": total}


def _centred_unit(a: np.ndarray) -> np.ndarray:
    a = a - a.mean(0)
    return a / np.linalg.norm(a)


def _unexplained(x: np.ndarray, y: np.ndarray, coef: np.ndarray) -> float:
    resid = _centred_unit(x) @ coef - _centred_unit(y)
    return float(np.sum(resid * resid))


def _fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    coef, *_ = np.linalg.lstsq(_centred_unit(x), _centred_unit(y), rcond=None)
    return coef


def _check_xy(x, y, n_min: int) -> tuple[np.ndarray, np.ndarray]:
    x, y = (np.asarray(a, dtype=np.float64) for a in (x, y))
    if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0] or x.shape[0] < n_min * (x.shape[1] + 1):
        raise ValueError(f"need x (N, d), y (N, d') with N >= {n_min} (d + 1), got {x.shape}, {y.shape}")
    return x, y


def linearity_score(x: np.ndarray, y: np.ndarray) -> float:
    """The paper's score ``1 - min_A |X A - Y|_F^2`` of token embeddings ``x`` (N, d) -> ``y`` (N, d'), both centred
    and scaled to unit Frobenius norm (least squares in float64, fitted and scored on the same tokens)."""
    x, y = _check_xy(x, y, 2)
    return 1.0 - _unexplained(x, y, _fit(x, y))


def linearity_unexplained(x: np.ndarray, y: np.ndarray) -> float:
    """``1 - score`` estimated without its O(d/N) bias: a fitted map explains its own tokens too well (by
    ``tr(Sigma^-1 E[e^2 x x^T]) / N`` to first order, whatever the residual's dependence on x) and fresh tokens too
    badly (by the same amount), so the mean of the in-sample and the out-of-sample fractions over the two halves of
    the tokens (rows ``[:N/2]`` and ``[N/2:]``, fitted on each, scored on both) is unbiased to first order."""
    x, y = _check_xy(x, y, 4)
    h = x.shape[0] // 2
    halves = ((x[:h], y[:h]), (x[h:], y[h:]))
    fits = [_fit(a, b) for a, b in halves]
    return float(np.mean([_unexplained(a, b, f) for f in fits for a, b in halves]))


# ------------------------------------------------------------------------------------------------
# 9. The bilinear MLP (seed 003#57)
# ------------------------------------------------------------------------------------------------
def bilinear_interaction(W_in, W_gate, W_out) -> np.ndarray:
    """(d_out, d, d) symmetric interaction matrices ``B_o = sum_k W_out[o, k] (w_k g_k^T + g_k w_k^T) / 2`` of the
    bilinear MLP ``W_out ((W_in x) * (W_gate x))`` (section 9): ``y_o = x^T B_o x`` exactly."""
    W_in, W_gate, W_out = (np.asarray(a, dtype=np.float64) for a in (W_in, W_gate, W_out))
    if W_in.ndim != 2 or W_gate.shape != W_in.shape or W_out.ndim != 2 or W_out.shape[1] != W_in.shape[0]:
        raise ValueError(
            f"need W_in, W_gate (m, d) and W_out (d_out, m); got {W_in.shape}, {W_gate.shape}, {W_out.shape}"
        )
    B = np.einsum("ok,ki,kj->oij", W_out, W_in, W_gate)
    return 0.5 * (B + B.transpose(0, 2, 1))


def quadratic_features(x) -> np.ndarray:
    """(N, d (d + 1) / 2) features ``x_i x_j``, i <= j (row-major upper triangle), the off-diagonal ones doubled: a
    symmetric B's quadratic form is ``x^T B x = features(x) . B[triu]``."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"x must be (N, d), got shape {x.shape}")
    i, j = np.triu_indices(x.shape[1])
    return x[:, i] * x[:, j] * np.where(i == j, 1.0, 2.0)


def symmetric_from_upper(theta, d: int) -> np.ndarray:
    """(..., d, d) symmetric matrices from their upper triangles (..., d (d + 1) / 2), row-major."""
    theta = np.asarray(theta, dtype=np.float64)
    check_int("d", d, minimum=1)
    if theta.shape[-1] != d * (d + 1) // 2:
        raise ValueError(f"theta's last axis must be d (d + 1) / 2 = {d * (d + 1) // 2}, got {theta.shape[-1]}")
    i, j = np.triu_indices(d)
    B = np.zeros((*theta.shape[:-1], d, d))
    B[..., i, j] = theta
    B[..., j, i] = theta
    return B


def quadratic_least_squares(x, y) -> np.ndarray:
    """(d_out, d, d): the least-squares symmetric interaction matrices of ``y_o ~ x^T B_o x`` (no intercept: the
    bilinear MLP has none; the trace term carries the mean)."""
    phi = quadratic_features(x)
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 2 or y.shape[0] != phi.shape[0] or phi.shape[0] < phi.shape[1]:
        raise ValueError(f"need y (N, d_out) with N >= d (d + 1) / 2 = {phi.shape[1]}, got {y.shape}")
    theta, *_ = np.linalg.lstsq(phi, y, rcond=None)
    return symmetric_from_upper(theta.T, np.asarray(x).shape[1])


def _outside_projector(U, d: int) -> np.ndarray:
    U = np.asarray(U, dtype=np.float64)
    if U.ndim != 2 or U.shape[0] != d or U.shape[1] >= d:
        raise ValueError(f"U must be (d, r) with r < d = {d}, got {U.shape}")
    if not np.allclose(U.T @ U, np.eye(U.shape[1]), atol=1e-10):
        raise ValueError("U must have orthonormal columns")
    return np.eye(d) - U @ U.T


def outside_energy(B, U) -> float:
    """``sum_o |P B_o P|_F^2``, ``P = I - U U^T``: the interaction matrices' energy outside the planted subspace."""
    B = np.asarray(B, dtype=np.float64)
    P = _outside_projector(U, B.shape[-1])
    return float(np.sum((P @ B @ P) ** 2))


def outside_noise_energy(x, U, noise: float, outputs: int) -> float:
    """``E sum_o |P B_hat_o P|_F^2 = outputs sigma^2 tr(L G^-1 L^T)`` for the least-squares fit of a target planted in
    span U with i.i.d. N(0, noise^2) label noise, given the inputs x (section 9, exact)."""
    check_float("noise", noise, minimum=0.0)
    check_int("outputs", outputs, minimum=1)
    phi = quadratic_features(x)
    d = phi.shape[1]
    d = int(round((math.sqrt(8 * d + 1) - 1) / 2))
    P = _outside_projector(U, d)
    basis = symmetric_from_upper(np.eye(phi.shape[1]), d)  # (p, d, d): B(e_k)
    L = (P @ basis @ P).reshape(phi.shape[1], d * d).T  # (d^2, p)
    G_inv_Lt = np.linalg.solve(phi.T @ phi, L.T)
    return outputs * noise * noise * float(np.sum(L * G_inv_Lt.T))


def top_eigen_fraction(B, r: int) -> np.ndarray:
    """(d_out,) the fraction of each ``|B_o|_F^2`` carried by its r largest-magnitude eigenvalues."""
    B = np.asarray(B, dtype=np.float64)
    check_int("r", r, minimum=1, maximum=B.shape[-1])
    ev = np.sort(np.linalg.eigvalsh(B) ** 2, axis=-1)[..., ::-1]
    return ev[..., :r].sum(-1) / ev.sum(-1)


def normalised_readout_cauchy(M, s) -> tuple[np.ndarray, np.ndarray]:
    """Section 11 (a): the location and scale (each (d_v,)) of the Cauchy law of ``o_a = (M^T q)_a / (s . q)`` for
    ``q ~ N(0, I_d)`` given ``M`` (d, d_v) and ``s`` (d,), ``s != 0`` (the logit scale cancels)."""
    M = np.asarray(M, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    if M.ndim != 2 or s.shape != (M.shape[0],):
        raise ValueError(f"M must be (d, d_v) and s (d,), got {M.shape} and {s.shape}")
    ss = float(s @ s)
    if not ss > 0:
        raise ValueError("s must be non-zero")
    loc = (M.T @ s) / ss  # (d_v,)
    perp = M - s[:, None] * loc[None, :]  # columns with their s-component removed
    return loc, np.linalg.norm(perp, axis=0) / math.sqrt(ss)


def linear_readouts(q, k, v, c: float) -> dict[str, np.ndarray]:
    """Section 11 for every query row: ``q`` (..., T, d) over keys ``k`` (..., n, d) and values ``v`` (..., n, d_v)
    (full attention, identity features, logit scale c). Returns per row (shape (..., T)): ``numerator`` |y|,
    ``denominator`` D, ``readout`` |y / D|, ``gradient`` |do/dq|_F of the normalised read-out y / D and
    ``norm_gradient`` |do/dq|_F of the normalised output ``sqrt(d_v) y / |y|`` (TransNormer's NormAttention)."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    if q.ndim < 2 or k.shape[:-1] != v.shape[:-1] or q.shape[:-2] != k.shape[:-2] or q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q (..., T, d), k (..., n, d) and v (..., n, d_v) do not fit: {q.shape}, {k.shape}, {v.shape}"
        )
    check_float("c", c, minimum=0.0, strict_minimum=True)
    M = np.swapaxes(k, -1, -2) @ v  # (..., d, d_v)
    s = k.sum(axis=-2)  # (..., d)
    y = c * q @ M  # (..., T, d_v)
    D = c * q @ s[..., :, None]  # (..., T, 1)
    o = y / D
    ny = np.linalg.norm(y, axis=-1)  # (..., T)
    Mf2 = np.sum(M * M, axis=(-2, -1))[..., None]  # |M|_F^2, (..., 1)
    s2 = np.sum(s * s, axis=-1)[..., None]
    Ms = np.einsum("...ka,...k->...a", M, s)  # M^T s, (..., d_v)
    # |M^T - o s^T|_F^2 = |M|_F^2 - 2 o . M^T s + |o|^2 |s|^2
    grad2 = Mf2 - 2.0 * np.einsum("...ta,...a->...t", o, Ms) + np.sum(o * o, axis=-1) * s2
    yh = y / ny[..., None]
    # |(I - y^ y^T) M^T|_F^2 = |M|_F^2 - |M y^|^2
    My = np.einsum("...ka,...ta->...tk", M, yh)
    norm2 = Mf2 - np.sum(My * My, axis=-1)
    dv = v.shape[-1]
    return {
        "numerator": ny,
        "denominator": D[..., 0],
        "readout": np.abs(ny / D[..., 0]),
        "gradient": c * np.sqrt(np.clip(grad2, 0.0, None)) / np.abs(D[..., 0]),
        "norm_gradient": c * math.sqrt(dv) * np.sqrt(np.clip(norm2, 0.0, None)) / ny,
    }


def linear_attention_tail_indices(d_v: int) -> dict[str, float]:
    """Section 11 (b, c): the tail indices of the normalised read-out |y / D| (1), of its query gradient (1/2) and of
    NormAttention's query gradient (d_v, the output width)."""
    check_int("d_v", d_v, minimum=1)
    return {"readout": 1.0, "gradient": 0.5, "norm_gradient": float(d_v)}


def uniform_causal(T: int) -> np.ndarray:
    """(T, T) ``C``: causal softmax at zero logits, ``1/(i + 1)`` on ``j <= i`` (section 13)."""
    check_int("T", T, minimum=1)
    return np.tril(np.ones((T, T))) / np.arange(1, T + 1, dtype=np.float64)[:, None]


def collapse_kernel(T: int, depth: int) -> np.ndarray:
    """(T, T) ``C^L (C^L)^T``: the token kernel (up to ``tr(W^T W)``) after ``depth`` skipless layers of uniform
    causal attention over i.i.d. Gaussian tokens (section 13); the identity at depth 0."""
    check_int("depth", depth, minimum=0)
    P = np.linalg.matrix_power(uniform_causal(T), depth)
    return P @ P.T


def mean_token_correlation(K) -> float:
    """``mean_{i != j} K_ij / sqrt(K_ii K_jj)`` of a (T, T) kernel with a positive diagonal, T >= 2 (section 13)."""
    K = np.asarray(K, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] < 2:
        raise ValueError(f"K must be a square kernel of at least 2 tokens, got shape {K.shape}")
    diag = np.diag(K)
    if not np.all(diag > 0):
        raise ValueError("K must have a positive diagonal")
    R = K / np.sqrt(np.outer(diag, diag))
    T = K.shape[0]
    return float((R.sum() - np.trace(R)) / (T * (T - 1)))


def sigmoid_row_mass(n: int, b: float, s) -> np.ndarray:
    """``n E[sigmoid(s u + b)]``, u ~ N(0, 1): the expected sum of a sigmoid-attention row's weights over n keys with
    i.i.d. N(0, s^2) logits and bias b (section 14), for every s (broadcast); ``n sigmoid(b)`` at s = 0."""
    check_int("n", n, minimum=1)
    check_float("b", b, minimum=-1e3, maximum=1e3)
    s = np.asarray(s, dtype=np.float64)
    if s.size and (s.min() < 0 or s.max() > 100):
        raise ValueError(f"s must lie in [0, 100], got [{s.min():g}, {s.max():g}]")
    z = s[..., None] * _Z_FINE + b
    return n * np.sum(_WZ_FINE * special.expit(z), axis=-1)


def distractor_mass(n: int, a, s, n_u: int = 801) -> np.ndarray:
    """``E[sum_{j>=1} p_j] = 1 - E[p_0]``: the expected softmax weight on ``n - 1`` keys with i.i.d. N(0, s^2) logits
    beside one key of logit ``a`` (sections 2 and 4; the irrelevant mass of a planted key), computed directly as
    ``(n - 1) int e^{-t e^a} psi_s(t) phi_s(t)^(n-2) dt`` (``psi_s = E[e^{s xi} exp(-t e^{s xi})]``) so that a mass far
    below 1e-16 keeps its relative precision; every (a, s) pair (broadcast)."""
    a_b, s_b = _row_args(n, a, s)
    out = np.zeros(a_b.shape, dtype=np.float64)
    if n == 1:
        return out
    for idx in np.ndindex(a_b.shape):
        aa, ss = float(a_b[idx]), float(s_b[idx])
        u = np.linspace(-(abs(aa) + ss * ss / 2 + math.log(n) + 40.0), 14.0 * ss + abs(aa) + 40.0, n_u)
        t, du = np.exp(u), float(u[1] - u[0])
        phi, psi = _phi_moment(u, ss, 1.0)
        with np.errstate(divide="ignore"):  # psi and phi underflow to 0 far in the tail: their terms vanish
            log_terms = np.log(psi) + special.xlogy(n - 2, phi) - t * math.exp(min(aa, 700.0)) + u
        out[idx] = (n - 1) * float(np.sum(np.exp(log_terms)) * du)
    return out


def persistent_share(n_memory: int, n_context: int, s, ratio: float, n_u: int = 801) -> np.ndarray:
    """Section 17: ``E[sum_{j in P} p_j]``, the expected softmax weight a row puts on ``n_memory`` keys with i.i.d.
    N(0, (ratio s)^2) logits among them and ``n_context`` keys with i.i.d. N(0, s^2) logits, for every row spread
    ``s`` (array; exact 1-D quadrature on ``u = ln t``)."""
    check_int("n_memory", n_memory, minimum=1)
    check_int("n_context", n_context, minimum=0)
    check_float("ratio", ratio, minimum=0.0, maximum=20.0)
    s = np.asarray(s, dtype=np.float64)
    if s.size and (s.min() < 0 or s.max() > 20 or ratio * s.max() > 20):
        raise ValueError(f"s and ratio * s must lie in [0, 20], got s in [{s.min():g}, {s.max():g}]")
    out = np.empty(s.shape, dtype=np.float64)
    for idx in np.ndindex(s.shape):
        sc, sp = float(s[idx]), ratio * float(s[idx])
        t, du = log_t_grid(max(sc, sp), n_memory + n_context, n_u)
        log_t = np.log(t)
        (phi_p, chi_p), (phi_c, _) = _phi_moment(log_t, sp, 1.0), _phi_moment(log_t, sc, 0.0)
        with np.errstate(divide="ignore"):  # chi and phi underflow to 0 far in the tail: their terms vanish
            log_terms = np.log(chi_p) + special.xlogy(n_memory - 1, phi_p) + special.xlogy(n_context, phi_c)
        out[idx] = n_memory * float(np.sum(np.exp(log_terms + np.log(t))) * du)
    return out


def sign_exp(z) -> np.ndarray:
    """Cog attention's SignExp weights over the last axis (section 15): ``sign(z) e^{|z|} / sum e^{|z|}``, a logit of
    ``-inf`` a key the row does not see (weight 0); float64."""
    z = np.asarray(z, dtype=np.float64)
    unseen = np.isneginf(z)
    a = np.where(unseen, -np.inf, np.abs(z))
    top = a.max(axis=-1, keepdims=True)
    if not np.all(np.isfinite(top)):
        raise ValueError("every row of z needs at least one finite logit")
    e = np.exp(a - top)
    return np.where(unseen, 0.0, np.sign(z) * e / e.sum(axis=-1, keepdims=True))


def parallel_mlp_discrepancy(activation: str, s_u, s_v, rho, order: int = HERMITE_ORDER) -> dict[str, np.ndarray]:
    """Section 16: for inputs of RMS ``s_u``, ``s_v`` and cosine ``rho`` (broadcast together) of a fan-in Gaussian MLP
    with activation ``activation``, ``{"difference": E|M(u) - M(v)|^2 / d, "output": E|M(v)|^2 / d}`` exactly (the
    difference by Mehler's expansion, truncated at ``order``; the output's second moment by quadrature)."""
    s_u, s_v, rho = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (s_u, s_v, rho)))
    if s_u.size and (min(s_u.min(), s_v.min()) <= 0 or max(s_u.max(), s_v.max()) > 100):
        raise ValueError("s_u and s_v must lie in (0, 100]")
    if rho.size and (np.abs(rho).max() > 1 + 1e-12 or not np.all(np.isfinite(rho))):
        raise ValueError(f"rho must lie in [-1, 1], got [{rho.min():g}, {rho.max():g}]")
    rho = np.clip(rho, -1.0, 1.0)
    shape = s_u.shape
    su, sv, r = s_u.ravel(), s_v.ravel(), rho.ravel()
    cu, cv = hermite_coefficients(activation, su, order), hermite_coefficients(activation, sv, order)  # (k, order+1)
    powers = r[:, None] ** np.arange(order + 1)[None, :]
    cross = np.sum(cu * cv * powers, axis=1)

    def second(s: np.ndarray) -> np.ndarray:
        g = activation_of(activation, s[:, None] * _HU[None, :])
        return (g * g) @ _HW

    mu, mv = second(su), second(sv)
    return {"difference": (mu + mv - 2.0 * cross).reshape(shape), "output": mv.reshape(shape)}


__all__ = [
    "ACTIVATIONS",
    "FEATURE_KINDS",
    "JACOBIAN_KERNELS",
    "K_INTERVAL_MODES",
    "LINEARITY_ACTIVATIONS",
    "feature_entropy_deficit",
    "feature_of",
    "feature_transforms",
    "hermite_coefficients",
    "activation_covariance",
    "activation_of",
    "bilinear_interaction",
    "collapse_kernel",
    "distractor_mass",
    "jacobian_limit",
    "k_interval_l1_bound",
    "k_interval_weights",
    "linear_attention_tail_indices",
    "linear_readouts",
    "linearity_score",
    "linearity_unexplained",
    "mean_token_correlation",
    "median_top_gap",
    "memory_output_moment",
    "mimetic_self_weight",
    "mimetic_self_weight_jensen",
    "mlp_linearity",
    "normalised_readout_cauchy",
    "outside_energy",
    "outside_noise_energy",
    "parallel_mlp_discrepancy",
    "persistent_share",
    "quadratic_features",
    "quadratic_least_squares",
    "self_collision",
    "sigmoid_row_mass",
    "sign_exp",
    "relu_slot_moment",
    "slot_moment",
    "softplus_l1_entropy_deficit",
    "softmax_slot_moment",
    "softmax_slot_moment_lln",
    "softmax_slot_moment_mc",
    "sparsemax",
    "sparsemax_isolation",
    "symmetric_from_upper",
    "taylor_discordance",
    "taylor_entropy_deficit",
    "top_eigen_fraction",
    "two_key_jacobian_norm",
    "uniform_causal",
]
