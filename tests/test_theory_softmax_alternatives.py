"""Theory of softmax and its alternatives as key-value memories (float64): the slot moments of ReLU and softmax."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import integrate

from analysis.theory import softmax_alternatives as th

QUAD_TOL = 1e-10  # the trapezoid quadrature in u = ln t: errors measured below 1e-13 against n = 2's 1-D integral


def _two_slot_moment(s: float) -> float:
    """E[p_1^2 + p_2^2] for two i.i.d. N(0, s^2) logits: p_1 = sigmoid(w), w = h_1 - h_2 ~ N(0, 2 s^2)."""

    def f(w: float) -> float:
        return (
            (1.0 / (1.0 + math.exp(-w)) ** 2 + 1.0 / (1.0 + math.exp(w)) ** 2)
            * math.exp(-w * w / (4.0 * s * s))
            / math.sqrt(4.0 * math.pi * s * s)
        )

    return integrate.quad(f, -60.0 * s, 60.0 * s, limit=400, epsabs=1e-14, epsrel=1e-13)[0]


@pytest.mark.parametrize("s", [0.0, 0.3, 1.0, 2.5])
def test_one_slot_reads_its_value_and_zero_logits_read_the_mean(s):
    assert th.softmax_slot_moment([1], s)[0] == pytest.approx(1.0, abs=QUAD_TOL)
    ns = np.array([1, 3, 100])
    if s == 0.0:
        np.testing.assert_array_equal(th.softmax_slot_moment(ns, s), 1.0 / ns)


@pytest.mark.parametrize("s", [0.3, 0.8, 1.5, 2.5])
def test_two_slots_against_the_gap_integral(s):
    assert th.softmax_slot_moment([2], s)[0] == pytest.approx(_two_slot_moment(s), abs=QUAD_TOL)


@pytest.mark.parametrize(("n", "s"), [(16, 0.8), (256, 1.5), (64, 2.5), (4096, 0.8)])
def test_softmax_slot_moment_matches_monte_carlo(n, s):
    rng = np.random.default_rng(1000 + n)
    mean, se = th.softmax_slot_moment_mc(n, s, 40_000, rng)
    assert abs(mean - th.softmax_slot_moment([n], s)[0]) < 4.5 * se


def test_softmax_slot_moment_tends_to_its_law_of_large_numbers():
    s = 0.8
    ns = np.array([16, 256, 4096, 65536])
    gap = np.abs(th.softmax_slot_moment(ns, s) / th.softmax_slot_moment_lln(ns, s) - 1.0)
    assert np.all(np.diff(gap) < 0) and gap[-1] < 1e-3


@pytest.mark.parametrize(("n", "s"), [(8, 0.5), (128, 1.3)])
def test_relu_slot_moment_matches_monte_carlo(n, s):
    rng = np.random.default_rng(n)
    v = (np.maximum(s * rng.standard_normal((50_000, n)), 0.0) ** 2).sum(axis=1)
    assert abs(v.mean() - th.relu_slot_moment([n], s)[0]) < 4.5 * v.std(ddof=1) / math.sqrt(v.size)


def test_memory_output_moment_matches_a_monte_carlo_memory():
    """E|o|^2 = m b^2 E[sum f_i^2] for random keys and values (independent of each other) and |x|^2 = d."""
    rng = np.random.default_rng(7)
    d, m, n, a, b = 16, 8, 32, 0.3, 0.5
    for activation in th.ACTIVATIONS:
        vals = []
        for _ in range(4000):
            x = rng.standard_normal(d)
            x *= math.sqrt(d) / np.linalg.norm(x)
            h = a * rng.standard_normal((n, d)) @ x
            f = np.maximum(h, 0.0) if activation == "relu" else np.exp(h - h.max()) / np.exp(h - h.max()).sum()
            o = (b * rng.standard_normal((m, n))) @ f
            vals.append(o @ o)
        v = np.array(vals)
        expected = th.memory_output_moment(activation, [n], a, b, d, m)[0]
        assert abs(v.mean() - expected) < 4.5 * v.std(ddof=1) / math.sqrt(v.size), activation


def test_slopes_in_the_slot_count_have_opposite_signs():
    ns = np.array([16, 64, 256, 1024])
    relu = np.polyfit(np.log(ns), np.log(th.slot_moment("relu", ns, 0.8)), 1)[0]
    soft = np.polyfit(np.log(ns), np.log(th.slot_moment("softmax", ns, 0.8)), 1)[0]
    assert relu == pytest.approx(1.0, abs=1e-12) and -1.0 < soft < -0.9


def test_sparsemax_is_the_projection_onto_the_simplex():
    """KKT of min |p - z|^2 on the simplex: p >= 0, sum 1, z_j - p_j = tau on the support, z_j <= tau off it."""
    rng = np.random.default_rng(5)
    z = 2.0 * rng.standard_normal((200, 9))
    z[::7, 4:] = -np.inf  # masked keys
    p = th.sparsemax(z)
    np.testing.assert_allclose(p.sum(-1), 1.0, rtol=1e-13)
    assert (p >= 0).all() and (p[::7, 4:] == 0).all()
    for zi, pi in zip(z, p, strict=True):
        on = pi > 0
        tau = zi[on] - pi[on]
        np.testing.assert_allclose(tau, tau[0], atol=1e-12)
        assert (zi[~on] <= tau[0] + 1e-12).all()
    # a planted logit 1 above every other is isolated exactly; just below 1, it is not
    assert th.sparsemax(np.array([2.0, 1.0, 0.5]))[0] == 1.0 and th.sparsemax(np.array([1.99, 1.0, 0.5]))[0] < 1.0


@pytest.mark.parametrize(("n", "g", "s"), [(2, 2.0, 1.0), (64, 3.0, 1.0), (256, 4.0, 1.3), (16, 0.5, 0.7)])
def test_sparsemax_isolation_matches_monte_carlo(n, g, s):
    rng = np.random.default_rng(n)
    z = s * rng.standard_normal((100_000, n))
    z[:, 0] += g
    isolated = th.sparsemax(z)[:, 0] == 1.0  # the exact event, through the projection itself
    p = th.sparsemax_isolation(n, g, s)
    se = math.sqrt(p * (1 - p) / isolated.size)
    assert abs(isolated.mean() - p) < 4.5 * se + 1e-9


def test_sparsemax_isolation_limits_and_monotonicity():
    ns = np.array([1, 2, 8, 64, 512])
    p = th.sparsemax_isolation(ns, 3.0, 1.0)
    assert p[0] == 1.0 and np.all(np.diff(p) < 0)
    np.testing.assert_array_equal(th.sparsemax_isolation(ns, 3.0, 0.0), 1.0)  # distractors at their mean
    np.testing.assert_array_equal(th.sparsemax_isolation(ns[1:], 0.5, 0.0), 0.0)  # gap below 1
    both = th.sparsemax_isolation(64, 3.0, np.array([0.5, 1.0]))  # per-row stds broadcast against n
    np.testing.assert_allclose(both, [th.sparsemax_isolation(64, 3.0, 0.5), th.sparsemax_isolation(64, 3.0, 1.0)])


@pytest.mark.parametrize("mode", ["interpolate", "round"])
def test_k_interval_weights_match_the_zoo_kernel_and_tend_to_softmax(mode):
    import torch

    from analysis.zoo.model import k_interval_softmax

    rng = np.random.default_rng(11)
    z = 1.5 * rng.standard_normal((40, 33))
    z[::5, 20:] = -np.inf
    z[3] = 0.7  # one flat row: uniform, as softmax
    for K in (1, 4, 64):
        got = k_interval_softmax(torch.tensor(z), K, mode).numpy()
        np.testing.assert_allclose(th.k_interval_weights(z, K, mode), got, rtol=0, atol=1e-15)
    e = np.exp(z - z.max(-1, keepdims=True))
    exact = e / e.sum(-1, keepdims=True)
    np.testing.assert_allclose(th.k_interval_weights(z, 1 << 16, mode), exact, atol=1e-4)
    np.testing.assert_allclose(th.k_interval_weights(z, 8, mode)[3], 1 / 33, rtol=1e-15)


@pytest.mark.parametrize("mode", ["interpolate", "round"])
def test_k_interval_l1_bound_holds_and_is_the_ratio_range(mode):
    """The bound b/a - 1 against brute force: interpolation's largest ratio on a fine cell grid, and the worst rows
    of random logits (every row's L1 error below its bound)."""
    ts = np.linspace(0.0, 1.0, 200_001)
    for h in (0.01, 0.3, 1.5):
        brute = (((1 - ts) + ts * np.exp(-h)) * np.exp(ts * h)).max() - 1 if mode == "interpolate" else np.expm1(h)
        assert th.k_interval_l1_bound(h, mode) == pytest.approx(brute, rel=1e-9)
    assert th.k_interval_l1_bound(0.0, mode) == 0.0
    rng = np.random.default_rng(2)
    z = 2.0 * rng.standard_normal((500, 17))
    e = np.exp(z - z.max(-1, keepdims=True))
    exact = e / e.sum(-1, keepdims=True)
    for K in (8, 32, 128):  # h <= ~1.5: the regime of a grid (at h >> 1 e^h - 1 exceeds the trivial L1 bound 2)
        err = np.abs(th.k_interval_weights(z, K, mode) - exact).sum(-1)
        bound = th.k_interval_l1_bound((z.max(-1) - z.min(-1)) / K, mode)
        assert (err <= bound).all() and (err / bound).max() > 0.1  # holds, and not by orders of magnitude


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: th.softmax_slot_moment([0, 4], 1.0), "n must be >= 1"),
        (lambda: th.softmax_slot_moment([4], -1.0), "s"),
        (lambda: th.relu_slot_moment([], 1.0), "n must be >= 1"),
        (lambda: th.slot_moment("gelu", [4], 1.0), "activation must be one of"),
        (lambda: th.memory_output_moment("relu", [4], 0.1, 0.1, 0, 4), "d"),
        (lambda: th.sparsemax_isolation([0, 4], 3.0, 1.0), "n must be >= 1"),
        (lambda: th.sparsemax_isolation([4], 3.0, -1.0), "s must be >= 0"),
        (lambda: th.k_interval_weights(np.zeros(3), 4, "floor"), "mode must be one of"),
        (lambda: th.k_interval_weights(np.zeros(3), 0, "round"), "K"),
        (lambda: th.k_interval_l1_bound(-0.1, "round"), "h must be >= 0"),
        (lambda: th.mimetic_self_weight(0, 1.0, 1.0), "n"),
        (lambda: th.mimetic_self_weight(8, 1.0, -1.0), "s must lie in"),
        (lambda: th.two_key_jacobian_norm("sparsemax", 8.0, 8), "kernel must be one of"),
        (lambda: th.two_key_jacobian_norm("softmax", -1.0, 8), "scale must be >= 0"),
        (lambda: th.jacobian_limit("softmax", 1), "n"),
        (lambda: th.feature_of("relu", np.zeros(2)), "kind must be one of"),
        (lambda: th.feature_entropy_deficit("elu1", np.array([1.0, -1.0]), 8), "positive coefficients"),
        (lambda: th.feature_transforms("elu1", 0.0), "sigma"),
        (lambda: th.taylor_discordance(np.array([0.0, 1.0])), "sigma must be > 0"),
        (lambda: th.taylor_entropy_deficit(1.0, 0), "n"),
        (lambda: th.activation_of("relu", np.zeros(2)), "activation must be one of"),
        (lambda: th.hermite_coefficients("gelu", 1.0, order=0), "order"),
        (lambda: th.activation_covariance("gelu", np.zeros((2, 2))), "positive diagonal"),
        (lambda: th.mlp_linearity(np.ones((4, 2)), np.ones((4, 2)), np.eye(2), True), "W_out"),
        (lambda: th.linearity_score(np.ones((3, 2)), np.ones((3, 2))), "N >= 2"),
        (lambda: th.linearity_unexplained(np.ones((10, 2)), np.ones((9, 2))), "N >= 4"),
        (lambda: th.bilinear_interaction(np.ones((4, 2)), np.ones((4, 3)), np.ones((2, 4))), "W_gate"),
        (lambda: th.quadratic_features(np.ones(3)), "x must be"),
        (lambda: th.symmetric_from_upper(np.ones(5), 3), "theta's last axis"),
        (lambda: th.quadratic_least_squares(np.ones((4, 3)), np.ones((4, 1))), "N >= d"),
        (lambda: th.outside_energy(np.zeros((1, 3, 3)), np.ones((3, 1))), "orthonormal"),
        (lambda: th.outside_energy(np.zeros((1, 3, 3)), np.eye(3)), "r < d"),
        (lambda: th.outside_noise_energy(np.ones((8, 2)), np.eye(2)[:, :1], -1.0, 1), "noise"),
        (lambda: th.top_eigen_fraction(np.eye(3), 4), "r"),
        (lambda: th.self_collision(0, 0.0, 1.0), "n"),
        (lambda: th.self_collision(4, 0.0, -1.0), "s must lie in"),
    ],
)
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- section 4: mimetic initialisation -----------------------------------------------------------------------


@pytest.mark.parametrize(("n", "a", "s"), [(16, 2.0, 1.0), (64, 4.0, 2.0), (8, 0.5, 0.3), (64, 0.0, 1.5)])
def test_self_weight_matches_monte_carlo_and_sits_above_the_mean_field(n, a, s):
    rng = np.random.default_rng(7)
    z = rng.normal(0.0, s, (200_000, n - 1))
    w = 1.0 / (1.0 + np.exp(z - a).sum(1))
    exact = float(th.mimetic_self_weight(n, a, s))
    assert exact == pytest.approx(w.mean(), abs=5 * w.std() / math.sqrt(w.size))
    assert float(th.mimetic_self_weight_jensen(n, a, s)) <= exact  # Jensen: 1/(1 + x) is convex


@pytest.mark.parametrize(("a", "s"), [(0.0, 0.5), (1.5, 1.0), (3.0, 2.5)])
def test_two_tokens_self_weight_is_a_logistic_normal_integral(a, s):
    def f(x: float) -> float:
        return math.exp(-x * x / 2) / math.sqrt(2 * math.pi) / (1.0 + math.exp(s * x - a))

    ref = integrate.quad(f, -40.0, 40.0, epsabs=1e-14, epsrel=1e-13, limit=400)[0]
    assert float(th.mimetic_self_weight(2, a, s)) == pytest.approx(ref, abs=QUAD_TOL)


def test_self_weight_limits_and_broadcasting():
    assert float(th.mimetic_self_weight(1, 0.3, 1.0)) == 1.0
    assert float(th.mimetic_self_weight(10, 0.7, 0.0)) == pytest.approx(1 / (1 + 9 * math.exp(-0.7)), rel=1e-14)
    both = th.mimetic_self_weight(32, np.array([1.0, 3.0]), np.array([0.5, 1.0]))
    np.testing.assert_allclose(both, [th.mimetic_self_weight(32, 1.0, 0.5), th.mimetic_self_weight(32, 3.0, 1.0)])
    assert both[1] > both[0]
    # the weight rises with the row's own logit
    assert th.mimetic_self_weight(32, 2.0, 1.0) < th.mimetic_self_weight(32, 2.5, 1.0)


# --- section 5: the kernel's Jacobian against the logit scale -----------------------------------------------------


def _jacobian_norms_mc(n: int, scale: float, rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Frobenius norms of softmax's and SA-Softmax's Jacobians on ``rows`` rows of n i.i.d. N(0, scale^2) logits,
    from the closed Jacobians ``diag(p) - p p^T`` and ``diag(p) + diag(z) (diag(p) - p p^T)``."""
    z = scale * np.random.default_rng(seed).standard_normal((rows, n))
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    J = np.einsum("ri,ij->rij", p, np.eye(n)) - p[:, :, None] * p[:, None, :]
    Js = np.einsum("ri,ij->rij", p, np.eye(n)) + z[:, :, None] * J
    return np.linalg.norm(J, axis=(1, 2)), np.linalg.norm(Js, axis=(1, 2))


@pytest.mark.parametrize("scale", [16.0, 64.0])
def test_two_key_law_matches_monte_carlo_at_large_scale(scale):
    soft, sa_ = _jacobian_norms_mc(16, scale, 200_000, seed=int(scale))
    for kernel, v in (("softmax", soft), ("sa_softmax", sa_)):
        law = float(th.two_key_jacobian_norm(kernel, scale, 16))
        se = v.std() / math.sqrt(v.size)
        assert law == pytest.approx(v.mean(), abs=4 * se + 0.005 * law), kernel  # + the neglected third keys


def test_two_key_law_at_scale_zero_is_the_kernels_jacobian_at_equal_logits():
    """At scale 0 every logit is 0: for n = 2 the two-key law is exact, the Jacobian of softmax (diag(p) - p p^T) and
    of z * softmax(z) (diag(p)) at z = 0 by autograd; the law is continuous there."""
    z = torch.zeros(2, dtype=torch.float64)
    jac = {
        "softmax": torch.autograd.functional.jacobian(lambda v: torch.softmax(v, -1), z),
        "sa_softmax": torch.autograd.functional.jacobian(lambda v: v * torch.softmax(v, -1), z),
    }
    for kernel, J in jac.items():
        at_zero = float(th.two_key_jacobian_norm(kernel, 0.0, 2))
        assert at_zero == pytest.approx(float(J.norm()), rel=1e-15), kernel
        # continuous and even in s: 0.5 s^2 (softmax) and 0.69 s^2 (SA-Softmax) off the value at 0, 7e-9 at 1e-4
        assert float(th.two_key_jacobian_norm(kernel, 1e-4, 2)) == pytest.approx(at_zero, rel=1e-7), kernel


def test_two_key_law_tends_to_its_limits():
    n = 32
    s = np.array([1e3, 1e4])
    soft = s * th.two_key_jacobian_norm("softmax", s, n)
    sa_ = th.two_key_jacobian_norm("sa_softmax", s, n)
    assert soft[1] == pytest.approx(th.jacobian_limit("softmax", n), rel=1e-3)
    assert sa_[1] == pytest.approx(th.jacobian_limit("sa_softmax", n), rel=1e-3)
    assert abs(soft[1] - th.jacobian_limit("softmax", n)) < abs(soft[0] - th.jacobian_limit("softmax", n))
    # f_delta(0) for n = 2: the difference of two N(0, 1) is N(0, 2), folded: 2 / sqrt(4 pi)
    assert th.jacobian_limit("softmax", 2) == pytest.approx(1.0 / math.sqrt(math.pi), rel=1e-12)


def test_median_top_gap_matches_monte_carlo():
    x = np.sort(np.random.default_rng(3).standard_normal((200_000, 32)), axis=1)
    gap = x[:, -1] - x[:, -2]
    assert th.median_top_gap(32) == pytest.approx(float(np.median(gap)), abs=0.005)


# --- section 6: linear attention's weights and their entropy -------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "sigma", "d", "n"), [("elu1", 1.0, 16, 1024), ("elu1", 2.0, 4, 256), ("exp", 0.7, 8, 512)]
)
def test_feature_entropy_deficit_matches_monte_carlo(kind, sigma, d, n):
    rng = np.random.default_rng(3)
    a = th.feature_of(kind, rng.normal(size=d))
    s = (th.feature_of(kind, sigma * rng.normal(size=(3000, n, d))) * a).sum(-1)
    p = s / s.sum(1, keepdims=True)
    deficit = np.log(n) + (p * np.log(p)).sum(1)
    se = deficit.std(ddof=1) / math.sqrt(deficit.size)
    assert th.feature_entropy_deficit(kind, a, n, sigma) == pytest.approx(deficit.mean(), abs=5 * se + 2e-4)


def test_one_exponential_feature_is_softmax_and_its_deficit_tends_to_half_the_variance():
    # d = 1, phi = exp: the weights are softmax of sigma kappa, and D = E[x ln x] = sigma^2 / 2 exactly
    for sigma in (0.5, 1.0):
        big = th.feature_entropy_deficit("exp", np.array([1.0]), 10**9, sigma)
        assert big == pytest.approx(sigma * sigma / 2, rel=1e-6)
        from analysis.theory.attention_entropy import gaussian_entropy_exact

        n = 256
        exact = math.log(n) - gaussian_entropy_exact(n, sigma)
        assert th.feature_entropy_deficit("exp", np.array([1.0]), n, sigma) == pytest.approx(exact, rel=0.01)
    # elu + 1 over many coordinates averages out: a deficit of order 1/d
    rng = np.random.default_rng(0)
    small = th.feature_entropy_deficit("elu1", th.feature_of("elu1", rng.normal(size=64)), 10**6)
    assert 0 < small < 0.02


# --- section 7: the Taylor feature map ------------------------------------------------------------------------


@pytest.mark.parametrize(("sigma", "n"), [(1.0, 256), (1.5, 64), (0.5, 1024)])
def test_taylor_discordance_and_deficit_match_monte_carlo(sigma, n):
    rng = np.random.default_rng(5)
    z = sigma * rng.normal(size=(3000, n))
    s = 1 + z + z * z / 2
    p = s / s.sum(1, keepdims=True)
    deficit = np.log(n) + (p * np.log(p)).sum(1)
    se = deficit.std(ddof=1) / math.sqrt(deficit.size)
    assert th.taylor_entropy_deficit(sigma, n) == pytest.approx(deficit.mean(), abs=5 * se + 2e-4)
    z1, z2 = z[:, 0::2].ravel(), z[:, 1::2].ravel()
    disc = (z1 - z2) * ((1 + z1 + z1 * z1 / 2) - (1 + z2 + z2 * z2 / 2)) < 0
    se = math.sqrt(disc.mean() * (1 - disc.mean()) / disc.size)
    assert float(th.taylor_discordance(sigma)) == pytest.approx(disc.mean(), abs=5 * se)


def test_taylor_limits():
    assert float(th.taylor_discordance(1e-3)) < 1e-300  # tiny logits: 1 + z + z^2/2 is increasing where they live
    assert float(th.taylor_discordance(1e6)) == pytest.approx(0.5, abs=1e-5)  # huge logits: a coin flip
    # small logits: the map is softmax to second order, and so is the deficit (sigma^2/2 to leading order)
    assert th.taylor_entropy_deficit(0.1, 10**9) == pytest.approx(0.1**2 / 2, rel=0.05)


# --- section 8: the linearity of an MLP sublayer ---------------------------------------------------------------


def _mlp_weights(d: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, d)) / math.sqrt(d), rng.standard_normal((d, m)) / math.sqrt(m)


@pytest.mark.parametrize("activation", th.LINEARITY_ACTIVATIONS)
@pytest.mark.parametrize("s", [0.3, 1.0, 3.0])
def test_hermite_coefficients_satisfy_parseval_and_steins_lemma(activation, s):
    a = th.hermite_coefficients(activation, s)[0]  # sqrt(n!) a_n
    z = s * np.random.default_rng(0).standard_normal(400_000)
    g = th.activation_of(activation, z)
    assert a[0] == pytest.approx(g.mean(), abs=5 * g.std() / math.sqrt(z.size))
    mean, var = th.hermite_coefficients(activation, s, order=80)[0, 0], None
    u = np.linspace(-20.0, 20.0, 8001)  # an independent, finer grid
    w = np.exp(-0.5 * u * u) / math.sqrt(2 * math.pi) * (u[1] - u[0])
    gq = th.activation_of(activation, s * u)
    var = float(np.sum(w * gq * gq)) - mean**2

    # Parseval: exact to order 80 at s <= 1; at s = 3 the curvature sits at a small scale in u and the series
    # converges slowly (a tail of order 1e-4 is left, shrinking with the order), which is why the covariance takes
    # the exact variance on its diagonal (off it the terms carry rho^n, |rho| < 1)
    def tail(order: int) -> float:
        return 1.0 - float(np.sum(th.hermite_coefficients(activation, s, order=order)[0, 1:] ** 2)) / var

    if s <= 1.0:
        assert abs(tail(80)) < 1e-10
    else:
        assert 0.0 < tail(80) < tail(40) < 1e-2
    # Stein: a_1 = E[g(s u) u] = s E[g'(s u)], by finite differences of g on the same nodes
    h = 1e-5
    slope = float(
        np.sum(w * (th.activation_of(activation, s * u + h) - th.activation_of(activation, s * u - h))) / (2 * h)
    )
    assert a[1] == pytest.approx(s * slope, rel=1e-7)


def test_gelu_slope_is_one_half_at_every_scale():
    """E[gelu'(z)] = E[Phi(z)] + E[z phi(z)] = 1/2 for any centred Gaussian z: a_1 = s/2 exactly."""
    s = np.array([0.1, 1.0, 5.0])
    np.testing.assert_allclose(th.hermite_coefficients("gelu", s)[:, 1], s / 2, rtol=1e-12)


def test_activation_covariance_matches_monte_carlo():
    W_in, _ = _mlp_weights(6, 12, 1)
    C = 1.7 * W_in @ W_in.T
    n = 400_000
    z = np.random.default_rng(2).standard_normal((n, 6)) * math.sqrt(1.7) @ W_in.T
    g = th.activation_of("gelu", z)
    emp = np.cov(g.T)
    got = th.activation_covariance("gelu", C)
    se = np.sqrt(np.outer(g.var(0), g.var(0)) * 3 / n)  # a generous bound on each entry's standard error
    assert np.all(np.abs(got - emp) < 5 * se)


@pytest.mark.parametrize("residual", [True, False])
@pytest.mark.parametrize("activation", ["gelu", "tanh"])
def test_mlp_linearity_matches_a_large_sample_regression(residual, activation):
    d, m = 8, 32
    W_in, W_out = _mlp_weights(d, m, 3)
    A = np.random.default_rng(4).standard_normal((d, d)) / math.sqrt(d)
    sigma = 2.0 * (np.eye(d) + 0.3 * (A + A.T) / 2 @ (A + A.T) / 2)
    x = np.random.default_rng(5).multivariate_normal(np.zeros(d), sigma, size=1_000_000)
    y = (x if residual else 0.0) + th.activation_of(activation, x @ W_in.T) @ W_out.T
    law = th.mlp_linearity(W_in, W_out, sigma, residual, activation)
    assert law["score"] == pytest.approx(1.0 - law["unexplained"], abs=1e-15)
    assert th.linearity_unexplained(x, y) == pytest.approx(law["unexplained"], rel=0.01)


def test_the_skip_connection_adds_only_explained_variance():
    W_in, W_out = _mlp_weights(16, 64, 6)
    sigma = np.eye(16)
    with_skip = th.mlp_linearity(W_in, W_out, sigma, True)
    without = th.mlp_linearity(W_in, W_out, sigma, False)
    assert with_skip["nonlinear"] == without["nonlinear"]  # the same unexplained part
    assert with_skip["unexplained"] < without["unexplained"] / 2
    # small inputs: every smooth activation is nearly linear (the unexplained fraction falls like s^2 for gelu)
    tiny = [th.mlp_linearity(W_in, W_out, s * s * sigma, False)["unexplained"] for s in (0.01, 0.02)]
    assert tiny[0] < 1e-3 and tiny[1] / tiny[0] == pytest.approx(4.0, rel=0.02)


def test_the_two_halves_estimate_removes_the_in_sample_bias():
    """Over many small samples the in-sample fraction is low by about (d + 1)/N of itself; the two-halves estimate
    is unbiased to first order."""
    d, m, N = 6, 24, 240
    W_in, W_out = _mlp_weights(d, m, 7)
    truth = th.mlp_linearity(W_in, W_out, np.eye(d), False)["unexplained"]
    rng = np.random.default_rng(8)
    ins, two = [], []
    for _ in range(400):
        x = rng.standard_normal((N, d))
        y = th.activation_of("gelu", x @ W_in.T) @ W_out.T
        ins.append(1.0 - th.linearity_score(x, y))
        two.append(th.linearity_unexplained(x, y))
    ins, two = np.array(ins), np.array(two)
    se = two.std() / math.sqrt(two.size)
    assert ins.mean() < truth - 5 * ins.std() / math.sqrt(ins.size)  # the in-sample bias is real at this N
    assert two.mean() == pytest.approx(truth, abs=4 * se)


# --- section 9: the bilinear MLP -----------------------------------------------------------------------------


def test_bilinear_interaction_is_the_layer_exactly():
    rng = np.random.default_rng(10)
    d, m, do = 5, 7, 3
    W_in, W_gate, W_out = rng.standard_normal((m, d)), rng.standard_normal((m, d)), rng.standard_normal((do, m))
    x = rng.standard_normal((20, d))
    B = th.bilinear_interaction(W_in, W_gate, W_out)
    np.testing.assert_array_equal(B, B.transpose(0, 2, 1))
    np.testing.assert_allclose(
        np.einsum("ni,oij,nj->no", x, B, x), ((x @ W_in.T) * (x @ W_gate.T)) @ W_out.T, rtol=1e-12, atol=1e-12
    )
    theta = B[:, *np.triu_indices(d)]
    np.testing.assert_array_equal(th.symmetric_from_upper(theta, d), B)
    np.testing.assert_allclose(th.quadratic_features(x) @ theta.T, np.einsum("ni,oij,nj->no", x, B, x), rtol=1e-12)


def _planted(d: int, r: int, outputs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.standard_normal((d, r)))
    return U, np.einsum("ir,or,jr->oij", U, rng.standard_normal((outputs, r)), U)


def test_noise_free_least_squares_recovers_the_planted_rank():
    U, Q = _planted(6, 2, 3, 11)
    x = np.random.default_rng(12).standard_normal((60, 6))
    B = th.quadratic_least_squares(x, np.einsum("ni,oij,nj->no", x, Q, x))
    np.testing.assert_allclose(B, Q, atol=1e-10)
    assert th.outside_energy(B, U) < 1e-20
    np.testing.assert_allclose(th.top_eigen_fraction(B, 2), 1.0, rtol=1e-12)
    assert th.top_eigen_fraction(np.eye(6)[None], 2)[0] == pytest.approx(2 / 6)


def test_outside_noise_energy_matches_monte_carlo_over_the_noise():
    d, r, N, sigma, outputs = 8, 2, 200, 0.7, 3
    U, Q = _planted(d, r, outputs, 13)
    rng = np.random.default_rng(14)
    x = rng.standard_normal((N, d))
    clean = np.einsum("ni,oij,nj->no", x, Q, x)
    got = np.array(
        [
            th.outside_energy(th.quadratic_least_squares(x, clean + sigma * rng.standard_normal((N, outputs))), U)
            for _ in range(1500)
        ]
    )
    law = th.outside_noise_energy(x, U, sigma, outputs)
    assert law == pytest.approx(got.mean(), abs=4 * got.std() / math.sqrt(got.size))
    assert th.outside_noise_energy(x, U, 2 * sigma, outputs) == pytest.approx(4 * law, rel=1e-12)  # sigma^2 exactly
    more = np.random.default_rng(15).standard_normal((8 * N, d))
    # 8x the inputs: below 1/8 of the law, since at N = 200 (p = 36 features) G^-1 is inflated above its 1/N
    assert 0.5 / 8 < th.outside_noise_energy(more, U, sigma, outputs) / law < 1 / 8


# --- section 10: token isolation at initialisation -----------------------------------------------------------


@pytest.mark.parametrize(("n", "a", "s"), [(2, 0.3, 1.0), (16, 0.5, 1.2), (64, -0.4, 0.8), (512, 0.2, 1.0)])
def test_self_collision_matches_monte_carlo(n, a, s):
    rng = np.random.default_rng(n)
    rows = 200_000 // n + 2000
    logits = np.concatenate([np.full((rows, 1), a), s * rng.standard_normal((rows, n - 1))], axis=1)
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    c = (p * p).sum(axis=1)
    assert float(th.self_collision(n, a, s)) == pytest.approx(c.mean(), abs=5 * c.std() / math.sqrt(rows))


def test_self_collision_limits():
    # equal logits: uniform weights; s = 0 with an own logit: the closed form; continuity at s -> 0
    assert float(th.self_collision(8, 0.0, 0.0)) == pytest.approx(1 / 8, abs=1e-15)
    z = 1 + 7 * math.exp(-0.3)
    assert float(th.self_collision(8, 0.3, 0.0)) == pytest.approx((1 + 7 * math.exp(-0.6)) / z**2, rel=1e-14)
    assert float(th.self_collision(8, 0.3, 1e-6)) == pytest.approx(float(th.self_collision(8, 0.3, 0.0)), rel=1e-9)
    assert float(th.self_collision(1, 2.0, 1.0)) == 1.0
    # many tokens: section 1's concentration e^(s^2)/n, the own logit a vanishing share
    assert float(th.self_collision(20_000, 0.0, 1.0)) * 20_000 == pytest.approx(math.e, rel=0.01)
    np.testing.assert_array_equal(th.self_collision(16, [0.0, 1.0], 1.0)[0], th.self_collision(16, 0.0, 1.0))


# --- section 11: the denominator of linear attention ---------------------------------------------------------


def _keys_values(d: int, dv: int, n: int, seed: int):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)), rng.standard_normal((n, dv)), rng


def test_normalised_readout_is_exactly_cauchy_for_gaussian_queries():
    k, v, rng = _keys_values(6, 3, 10, 0)
    M, s = k.T @ v, k.sum(axis=0)
    q = rng.standard_normal((200_000, 6))
    o = (q @ M) / (q @ s)[:, None]  # the logit scale c cancels
    loc, scale = th.normalised_readout_cauchy(M, s)
    u = np.arctan((o - loc) / scale) / math.pi + 0.5  # the Cauchy CDF: uniform on (0, 1) if the law holds
    for a in range(3):
        counts = np.histogram(u[:, a], bins=10, range=(0.0, 1.0))[0]
        assert np.all(np.abs(counts - 20_000) < 5 * math.sqrt(20_000 * 0.9)), counts
    # a Gaussian read-out with this location and scale would put 68% within one scale, Cauchy puts 50%
    inside = np.mean(np.abs((o - loc) / scale) < 1.0, axis=0)
    np.testing.assert_allclose(inside, 0.5, atol=5 * math.sqrt(0.25 / 200_000))


def test_linear_readouts_match_autograd():
    import torch

    k, v, rng = _keys_values(5, 4, 7, 1)
    q = rng.standard_normal((3, 5))
    c = 0.4
    rows = th.linear_readouts(q, k, v, c)
    K, V = torch.tensor(k), torch.tensor(v)
    for i in range(3):
        qi = torch.tensor(q[i], requires_grad=True)

        def scaled(x):
            return (c * (x @ K.T)) @ V / (c * (x @ K.T)).sum()

        def normed(x):
            y = (c * (x @ K.T)) @ V
            return math.sqrt(4) * y / y.norm()

        J1 = torch.autograd.functional.jacobian(scaled, qi)
        J2 = torch.autograd.functional.jacobian(normed, qi)
        assert rows["readout"][i] == pytest.approx(float(scaled(qi).detach().norm()), rel=1e-12)
        assert rows["gradient"][i] == pytest.approx(float(J1.norm()), rel=1e-10)
        assert rows["norm_gradient"][i] == pytest.approx(float(J2.norm()), rel=1e-10)
        y = (c * (qi @ K.T)) @ V
        assert rows["numerator"][i] == pytest.approx(float(y.detach().norm()), rel=1e-12)
        assert rows["denominator"][i] == pytest.approx(float((c * (qi @ K.T)).sum().detach()), rel=1e-12)
    # NormAttention's bound |J|_F <= c sqrt(d_v) |M|_F / |y|
    bound = c * 2.0 * np.linalg.norm(k.T @ v) / rows["numerator"]
    assert np.all(rows["norm_gradient"] <= bound * (1 + 1e-12))


def test_tail_indices_of_the_read_out_and_its_gradient_match_monte_carlo():
    """Section 11 (b): Hill's index over the largest 1% of 400000 Gaussian queries' rows is 1 for the read-out and
    1/2 for its query gradient (relative standard error 1/sqrt(4000) ~ 1.6%); NormAttention's is far larger."""
    from analysis.claims.fitting import hill_tail_index

    k, v, rng = _keys_values(8, 8, 16, 2)
    q = rng.standard_normal((400_000, 8))
    rows = th.linear_readouts(q, k, v, 0.35)
    law = th.linear_attention_tail_indices(8)
    se = 4 / math.sqrt(4000)
    assert hill_tail_index(rows["readout"], 0.01) == pytest.approx(law["readout"], rel=se)
    assert hill_tail_index(rows["gradient"], 0.01) == pytest.approx(law["gradient"], rel=se)
    assert hill_tail_index(rows["norm_gradient"], 0.01) > 4 * law["readout"]
    assert law["norm_gradient"] == 8.0


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: th.normalised_readout_cauchy(np.ones((3, 2)), np.zeros(3)), "s must be non-zero"),
        (lambda: th.normalised_readout_cauchy(np.ones((3, 2)), np.ones(2)), "M must be"),
        (lambda: th.linear_readouts(np.ones((2, 3)), np.ones((4, 3)), np.ones((5, 2)), 1.0), "do not fit"),
        (lambda: th.linear_readouts(np.ones((2, 3)), np.ones((4, 3)), np.ones((4, 2)), 0.0), "c must be"),
        (lambda: th.linear_attention_tail_indices(0), "d_v must be >= 1"),
    ],
)
def test_denominator_theory_rejects_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- section 12: softplus over the l1 norm --------------------------------------------------------------------


@pytest.mark.parametrize(("sigma", "n"), [(0.5, 64), (2.0, 256), (8.0, 1024), (16.0, 128)])
def test_softplus_l1_entropy_deficit_matches_monte_carlo(sigma, n):
    rng = np.random.default_rng(int(sigma * n))
    rows = 3000
    f = np.logaddexp(0.0, sigma * rng.standard_normal((rows, n)))
    p = f / f.sum(axis=1, keepdims=True)
    deficit = math.log(n) + (p * np.log(p)).sum(axis=1)
    se = deficit.std() / math.sqrt(rows)
    assert th.softplus_l1_entropy_deficit(sigma, n) == pytest.approx(deficit.mean(), abs=5 * se + 2e-4)


def test_softplus_l1_entropy_deficit_tends_to_the_relu_limit():
    """Section 12: D -> (ln 4 pi - gamma)/2 and v -> pi - 1 as sigma grows, so at large n the deficit tends to D; it
    rises with the logit scale and stays below the limit (softmax's s^2/2 passes it by s = 1.4)."""
    limit = 0.5 * (math.log(4 * math.pi) - np.euler_gamma)
    assert th.SOFTPLUS_DEFICIT_LIMIT == pytest.approx(limit, rel=1e-15)
    big_n = 10**9
    assert th.softplus_l1_entropy_deficit(500.0, big_n) == pytest.approx(limit, abs=1e-3)
    # the 1/n terms at the limit: v / 2 - c + D v with x = sqrt(2 pi) relu(Z) (a 1-D integral, by scipy)
    rl = math.sqrt(2 * math.pi)
    c = integrate.quad(lambda z: (rl * z) ** 2 * math.log(rl * z) * math.exp(-z * z / 2) / rl, 0, 40)[0] - limit
    v = math.pi - 1
    n = 1000
    expected = limit + v / (2 * n) - c / n + limit * v / n
    assert th.softplus_l1_entropy_deficit(500.0, n) == pytest.approx(expected, abs=1e-3)
    ds = [th.softplus_l1_entropy_deficit(s, big_n) for s in (0.25, 1.0, 4.0, 16.0, 64.0)]
    assert all(b > a for a, b in zip(ds, ds[1:], strict=False)) and ds[-1] < limit
    # small scale: softplus(sigma z) ~ ln 2 + sigma z / 2, so x ~ 1 + sigma z / (2 ln 2) and D ~ var(x) / 2
    assert th.softplus_l1_entropy_deficit(0.01, big_n) == pytest.approx((0.01 / (2 * math.log(2))) ** 2 / 2, rel=0.01)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: th.softplus_l1_entropy_deficit(0.0, 16), "sigma must be > 0"),
        (lambda: th.softplus_l1_entropy_deficit(1.0, 0), "n must be >= 1"),
    ],
)
def test_softplus_theory_rejects_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- section 13: shaped attention and the token kernel ---------------------------------------------------------


def test_collapse_kernel_matches_monte_carlo_through_random_value_weights():
    """E[X_L X_L^T] = tr(W^T W) C^L (C^L)^T for i.i.d. Gaussian token rows, whatever the right factor W."""
    rng = np.random.default_rng(0)
    T, d, L, B = 6, 8, 2, 20_000
    C = th.uniform_causal(T)
    W = rng.standard_normal((d, d)) @ rng.standard_normal((d, d)) / d
    X = rng.standard_normal((B, T, d))
    Y = np.linalg.matrix_power(C, L) @ X @ W
    gram = np.einsum("btd,bsd->ts", Y, Y) / B
    law = np.trace(W.T @ W) * th.collapse_kernel(T, L)
    np.testing.assert_allclose(gram, law, atol=6 * np.abs(law).max() / math.sqrt(B))
    assert th.mean_token_correlation(gram) == pytest.approx(th.mean_token_correlation(law), abs=0.01)


def test_collapse_kernel_limits():
    C = th.uniform_causal(5)
    np.testing.assert_allclose(C.sum(axis=1), 1.0, rtol=1e-15)
    assert C[3, 0] == pytest.approx(0.25) and C[0, 1] == 0.0
    np.testing.assert_array_equal(th.collapse_kernel(5, 0), np.eye(5))
    assert th.mean_token_correlation(th.collapse_kernel(5, 0)) == 0.0  # independent tokens
    rho = [th.mean_token_correlation(th.collapse_kernel(16, L)) for L in (1, 2, 4, 8, 64)]
    assert all(b > a for a, b in zip(rho, rho[1:], strict=False)) and rho[-1] == pytest.approx(1.0, abs=1e-12)
    # one layer, two tokens: x_1 = x_0 / 1, y = (x_0 + x_1) / 2: correlation 1/sqrt(2)
    assert th.mean_token_correlation(th.collapse_kernel(2, 1)) == pytest.approx(1 / math.sqrt(2), rel=1e-14)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: th.uniform_causal(0), "T must be >= 1"),
        (lambda: th.collapse_kernel(4, -1), "depth must be >= 0"),
        (lambda: th.mean_token_correlation(np.eye(1)), "at least 2 tokens"),
        (lambda: th.mean_token_correlation(np.zeros((3, 3))), "positive diagonal"),
    ],
)
def test_shaped_theory_rejects_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- section 14: sigmoid attention's row mass ------------------------------------------------------------------


@pytest.mark.parametrize(("n", "b", "s"), [(16, -math.log(16), 1.0), (256, -math.log(256), 1.5), (64, 0.0, 0.8)])
def test_sigmoid_row_mass_matches_monte_carlo(n, b, s):
    rng = np.random.default_rng(n)
    rows = 20_000
    mass = special_expit(s * rng.standard_normal((rows, n)) + b).sum(axis=1)
    assert float(th.sigmoid_row_mass(n, b, s)) == pytest.approx(mass.mean(), abs=5 * mass.std() / math.sqrt(rows))


def special_expit(z):
    return 1.0 / (1.0 + np.exp(-z))


def test_sigmoid_row_mass_limits():
    """s = 0: n sigmoid(b); b = 0: n/2 at any s (sigmoid - 1/2 is odd); b = -ln n: -> e^(s^2/2) as n grows. (The
    z grid's Gaussian weights sum to 1 within 1e-12.)"""
    assert float(th.sigmoid_row_mass(10, 0.3, 0.0)) == pytest.approx(10 / (1 + math.exp(-0.3)), rel=1e-11)
    assert float(th.sigmoid_row_mass(64, 0.0, 1.7)) == pytest.approx(32.0, rel=1e-11)
    n = 10**7
    assert float(th.sigmoid_row_mass(n, -math.log(n), 1.0)) == pytest.approx(math.exp(0.5), rel=1e-5)
    masses = [float(th.sigmoid_row_mass(n, -math.log(n), 1.0)) for n in (16, 64, 256, 1024)]
    assert all(b > a for a, b in zip(masses, masses[1:], strict=False)) and masses[-1] < math.exp(0.5)
    np.testing.assert_allclose(th.sigmoid_row_mass(8, -1.0, [0.5, 1.0])[1], th.sigmoid_row_mass(8, -1.0, 1.0))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: th.sigmoid_row_mass(0, 0.0, 1.0), "n must be >= 1"),
        (lambda: th.sigmoid_row_mass(4, 0.0, -1.0), "s must lie in"),
    ],
)
def test_sigmoid_theory_rejects_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- section 15: Cog attention's SignExp weights ----------------------------------------------------------------


def test_sign_exp_is_signed_softmax_of_the_magnitudes():
    z = np.array([[0.5, -2.0, 1.0, -np.inf], [-0.3, -np.inf, -np.inf, -np.inf], [0.0, 3.0, -3.0, 1e3]])
    w = th.sign_exp(z)
    e = np.exp(np.abs(z[0, :3]))
    np.testing.assert_allclose(w[0, :3], np.sign(z[0, :3]) * e / e.sum(), rtol=1e-15)
    assert w[0, 3] == 0.0 and w[1, 0] == -1.0 and not w[1, 1:].any()
    assert w[2, 0] == 0.0  # a zero logit weighs nothing, whatever its share of the magnitudes
    assert w[2, 3] == pytest.approx(1.0) and np.all(np.isfinite(w))  # no overflow at large logits
    np.testing.assert_allclose(np.abs(th.sign_exp(z[[0, 2]])).sum(-1)[0], 1.0, rtol=1e-15)


def _stack_correlation(kernel, x, weights):
    """Skipless attention stack in numpy (one head, causal): the mean token correlation of the batch kernel."""
    T, d = x.shape[1:]
    hide = np.triu(np.ones((T, T), dtype=bool), 1)
    y = x
    for wq, wk, wv in weights:
        z = np.where(hide, -np.inf, (y @ wq) @ (y @ wk).transpose(0, 2, 1) / math.sqrt(d))
        if kernel == "cog":
            p = th.sign_exp(z)
        else:
            p = np.exp(z - z.max(-1, keepdims=True))
            p = p / p.sum(-1, keepdims=True)
        y = p @ (y @ wv)
    return th.mean_token_correlation(np.einsum("btd,bsd->ts", y, y) / x.shape[0]), y


def test_signexp_stacks_are_token_sign_equivariant_and_keep_tokens_uncorrelated():
    """Section 15's lemma (flipping tokens flips exactly their outputs, bit for bit) and its consequence: over random
    stacks the mean token correlation averages to 0 with SignExp and stays far from it with softmax."""
    rng = np.random.default_rng(7)
    T, d, depth = 8, 12, 3
    cog, soft = [], []
    for _ in range(40):
        weights = [tuple(rng.standard_normal((3, d, d)) / math.sqrt(d)) for _ in range(depth)]
        x = rng.standard_normal((16, T, d))
        c, y = _stack_correlation("cog", x, weights)
        flips = rng.choice([-1.0, 1.0], size=(16, T, 1))
        _, y_flipped = _stack_correlation("cog", flips * x, weights)
        assert np.array_equal(y_flipped, flips * y)
        cog.append(c)
        soft.append(_stack_correlation("softmax", x, weights)[0])
    cog, soft = np.array(cog), np.array(soft)
    assert abs(cog.mean()) < 4 * cog.std() / math.sqrt(cog.size)
    assert soft.mean() > 0.5


def test_sign_exp_rejects_rows_with_no_visible_key():
    with pytest.raises(ValueError, match="at least one finite logit"):
        th.sign_exp(np.array([[-np.inf, -np.inf]]))


# --- section 16: a pre-norm block's sublayers in parallel -------------------------------------------------------


@pytest.mark.parametrize(("s_u", "s_v", "rho"), [(1.0, 1.0, 0.95), (1.2, 0.8, 0.6), (0.9, 1.1, -0.3)])
def test_parallel_mlp_discrepancy_matches_monte_carlo(s_u, s_v, rho):
    rng = np.random.default_rng(3)
    n = 1_000_000
    a = rng.standard_normal(n)
    b = rho * a + math.sqrt(1 - rho * rho) * rng.standard_normal(n)
    g = lambda z: th.activation_of("gelu", z)  # noqa: E731
    diff, out = (g(s_u * a) - g(s_v * b)) ** 2, g(s_v * b) ** 2
    law = th.parallel_mlp_discrepancy("gelu", s_u, s_v, rho)
    assert float(law["difference"]) == pytest.approx(diff.mean(), abs=5 * diff.std() / math.sqrt(n))
    assert float(law["output"]) == pytest.approx(out.mean(), abs=5 * out.std() / math.sqrt(n))


def test_parallel_mlp_discrepancy_limits_and_broadcasting():
    """Equal inputs change nothing; independent inputs (rho = 0) differ by twice the variance; the difference falls
    monotonically as rho -> 1, like 2 (1 - rho) E g'(z)^2 s^2 to first order."""
    assert float(th.parallel_mlp_discrepancy("gelu", 1.0, 1.0, 1.0)["difference"]) == pytest.approx(0.0, abs=1e-12)
    c = th.hermite_coefficients("gelu", [1.0])[0]
    var = float(th.parallel_mlp_discrepancy("gelu", 1.0, 1.0, 0.0)["output"]) - c[0] ** 2
    assert float(th.parallel_mlp_discrepancy("gelu", 1.0, 1.0, 0.0)["difference"]) == pytest.approx(2 * var, rel=1e-10)
    rhos = np.array([0.9, 0.99, 0.999])
    diff = th.parallel_mlp_discrepancy("gelu", 1.0, 1.0, rhos)["difference"]
    assert np.all(np.diff(diff) < 0)
    slope2 = float(np.sum(np.arange(len(c)) * c**2))  # E[g'(z)^2] = sum_n n c_n^2 (s = 1)
    assert diff[-1] == pytest.approx(2 * (1 - rhos[-1]) * slope2, rel=1e-2)
    assert th.parallel_mlp_discrepancy("gelu", [1.0, 2.0], 1.0, 0.5)["difference"].shape == (2,)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: th.parallel_mlp_discrepancy("gelu", 0.0, 1.0, 0.5), "s_u and s_v must lie in"),
        (lambda: th.parallel_mlp_discrepancy("gelu", 1.0, 1.0, 1.5), "rho must lie in"),
        (lambda: th.parallel_mlp_discrepancy("relu", 1.0, 1.0, 0.5), "activation must be one of"),
    ],
)
def test_parallel_theory_rejects_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- section 17: persistent memory vectors -----------------------------------------------------------------------


@pytest.mark.parametrize(("N", "T", "s", "r"), [(16, 64, 1.0, 2.0), (4, 256, 1.3, 1.5), (32, 16, 0.7, 0.5)])
def test_persistent_share_matches_monte_carlo(N, T, s, r):
    rng = np.random.default_rng(N + T)
    rows = 20_000
    zp, zc = r * s * rng.standard_normal((rows, N)), s * rng.standard_normal((rows, T))
    top = np.maximum(zp.max(1), zc.max(1))[:, None]
    ep, ec = np.exp(zp - top).sum(1), np.exp(zc - top).sum(1)
    share = ep / (ep + ec)
    law = float(th.persistent_share(N, T, np.array(s), r))
    assert law == pytest.approx(share.mean(), abs=5 * share.std() / math.sqrt(rows))


def test_persistent_share_limits():
    """Exchangeable keys (r = 1 or s = 0): N / (N + T); no context: 1; large T: N e^((rs)^2/2) / (T e^(s^2/2))."""
    np.testing.assert_allclose(th.persistent_share(3, 9, np.array([0.0, 0.8, 2.0]), 1.0), 0.25, rtol=1e-9)
    np.testing.assert_allclose(th.persistent_share(5, 7, np.array([0.0]), 3.0), 5 / 12, rtol=1e-9)
    assert float(th.persistent_share(4, 0, np.array(1.2), 1.5)) == pytest.approx(1.0, rel=1e-9)
    T = 10**6
    lln = 8 * math.exp(0.5 * 1.5**2) / (T + 8 * math.exp(0.5 * 1.5**2)) * math.exp(-0.5)
    assert float(th.persistent_share(8, T, np.array(1.0), 1.5)) == pytest.approx(lln, rel=2e-2)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: th.persistent_share(0, 4, np.array(1.0), 1.0), "n_memory must be >= 1"),
        (lambda: th.persistent_share(2, -1, np.array(1.0), 1.0), "n_context must be >= 0"),
        (lambda: th.persistent_share(2, 4, np.array(-1.0), 1.0), "s and ratio"),
    ],
)
def test_persistent_theory_rejects_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_distractor_mass_is_one_minus_the_planted_weight_without_cancellation():
    """Beside a key of logit a, n - 1 keys with i.i.d. N(0, s^2) logits take 1 - E[p_0] (section 4's quadrature),
    computed directly: at a huge gap it keeps the law of large numbers' (n - 1) e^(s^2/2 - a), where 1 - E[p_0]
    is rounding noise; s = 0 gives (n - 1) / (n - 1 + e^a)."""
    a, s = np.array([4.0, 2.5, 0.3]), np.array([1.0, 0.8, 1.6])
    np.testing.assert_allclose(th.distractor_mass(64, a, s), 1.0 - th.mimetic_self_weight(64, a, s), rtol=1e-9)
    assert float(th.distractor_mass(64, 33.0, 1.0)) == pytest.approx(63 * math.exp(0.5 - 33.0), rel=1e-6)
    assert float(th.distractor_mass(9, 1.5, 0.0)) == pytest.approx(8 / (8 + math.exp(1.5)), rel=1e-9)
    assert float(th.distractor_mass(1, 0.0, 1.0)) == 0.0
    with pytest.raises(ValueError, match="s must lie in"):
        th.distractor_mass(4, 0.0, -1.0)
