"""The softmax_alternatives probe: the memories are the zoo's MLP with the closed form's weights, the claims pass at
the full preset and fail on planted wrong numbers, and bad configs are refused by name.

The full preset takes minutes of one core (``make test-fixtures`` writes it and prints how many), so the fast tier
reads its result from the committed fixture ``tests/data/softmax_alternatives_full``, judged by today's claims,
after checking that the fixture's cache key is today's (config and ``VERSION``); the thorough tier runs the full
preset again and checks the fixture's numbers against the run's (to float64 rounding: the fixture may have been
computed on another CPU)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from analysis.claims.evidence import replicate_seed
from analysis.claims.ledger import Ledger
from analysis.core.paths import REPO
from analysis.probing.base import MAX_SEED, Result, cache_key, judged, run_probe
from analysis.probing.parts import Context
from analysis.theory import softmax_alternatives as th
from analysis.training.train import derived_seed
from analysis.zoo.hooks import hooks
from probes import softmax_alternatives as sa
from probes.softmax_alternatives import (
    bilinear,
    cog,
    denominator,
    features,
    isolation,
    jacobian,
    k_interval,
    linearity,
    memory,
    mimetic,
    models,
    parallel,
    persistent,
    shaped,
    sigmoid,
    softplus,
    sparse,
    taylor,
)

from tier import TIER

FIXTURE = REPO / "tests" / "data" / "softmax_alternatives_full"
# The fixture's numbers against a run on another CPU: the same float64 arithmetic, summed in another order by the BLAS
# kernels that CPU selects. Measured between the fixture (an AMD EPYC) and a full run on an Intel Xeon: 4e-16 relative
# on the memories' moments (1 ulp of a mean of 512 squares), at most 1e-11 on any untrained quantity (the interval
# bound's ratio of near-equal numbers), far inside every claim's band and far outside a changed computation's
# difference. The trained bilinear layer's numbers move by up to 50% (thousands of Adam updates amplify an ulp): across
# machines they are compared by their claims' verdicts only.
ACROSS_MACHINES = 1e-10
TRAINED = ("bilinear_",)


@pytest.fixture(scope="module")
def committed() -> Result:
    """The committed full-preset result, judged by today's claims (as a cache hit is)."""
    return judged(sa.NAME, Result.load(FIXTURE))


@pytest.fixture(scope="module")
def full(committed, tmp_path_factory) -> Result:
    """The full-preset result: run again in an empty cache in the thorough tier, the committed fixture in the fast."""
    if not TIER.full_runs:
        return committed
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WORKBENCH_CACHE", str(tmp_path_factory.mktemp("cache")))
        return run_probe(sa.NAME, "full", progress=False)


def test_the_committed_full_fixture_is_todays_full_preset(committed, full):
    """The fixture was computed at today's full preset and VERSION (else `make test-fixtures` regenerates it); in the
    thorough tier, today's full run measures the fixture's numbers and judges its claims the same way."""
    assert committed.config == sa.Config.preset("full") and committed.version == sa.VERSION
    assert committed.meta["cache_key"] == cache_key(sa.NAME, "full"), "stale fixture: run `make test-fixtures`"
    if full is not committed:
        assert set(full.data.data_vars) == set(committed.data.data_vars)
        for name in committed.data.data_vars:
            want = committed.data[name].values
            if name.startswith(TRAINED):
                continue  # their verdicts are compared below
            if want.dtype.kind == "f":
                np.testing.assert_allclose(full.data[name].values, want, rtol=ACROSS_MACHINES, atol=0, err_msg=name)
            else:
                np.testing.assert_array_equal(full.data[name].values, want, err_msg=name)
        assert [(c.name, c.status) for c in full.checks] == [(c.name, c.status) for c in committed.checks]


def test_smoke_claims_wait_for_the_full_preset(smoke_result):
    r = smoke_result(sa.NAME)
    by_status = {c.name: c.status for c in r.checks}
    for name in (  # exact algebra: evaluated at smoke
        "sparsemax_kernel_is_simplex_projection",
        "k_interval_interpolate_error_bound",
        "k_interval_round_error_bound",
        "bilinear_tensor_decomposition_exact",
        "shaped_attention_identity_at_init",
        "cog_token_sign_equivariance",
    ):
        assert by_status.pop(name) == "pass", name
    assert set(by_status.values()) == {"not_evaluated"}
    assert {c.seed for c in r.checks} == {
        sa.SEED_SLOTS,
        sa.SEED_SPARSE,
        sa.SEED_IRRELEVANT,
        sa.SEED_INTERVAL,
        sa.SEED_MIMETIC,
        sa.SEED_JACOBIAN,
        sa.SEED_FEATURES,
        sa.SEED_TAYLOR,
        sa.SEED_LINEARITY,
        sa.SEED_BILINEAR,
        sa.SEED_ISOLATION,
        sa.SEED_DENOMINATOR,
        sa.SEED_SOFTPLUS,
        sa.SEED_SHAPED,
        sa.SEED_SIGMOID,
        sa.SEED_COG,
        sa.SEED_PARALLEL,
        sa.SEED_PERSISTENT,
    }
    assert r.data["memory_moment"].dims == ("activation", "slots", "memory_seed")


def test_full_claims_pass_with_the_other_activation_outside_the_band(full):
    by_name = {c.name: c for c in full.checks}
    assert set(by_name) == {
        "memory_relu_slot_slope",
        "memory_softmax_slot_slope",
        "memory_softmax_concentration",
        "sparsemax_kernel_is_simplex_projection",
        "sparsemax_isolation_vs_keys",
        "softmax_irrelevant_mass_exact",
        "softmax_irrelevant_mass_grows_with_length",
        "k_interval_interpolate_error_bound",
        "k_interval_round_error_bound",
        "k_interval_interpolate_error_order",
        "k_interval_round_error_order",
        "mimetic_self_weight",
        "softmax_jacobian_vs_scale",
        "sa_softmax_jacobian_vs_scale",
        "elu1_entropy_deficit",
        "taylor_monotonicity_violations",
        "taylor_entropy_deficit",
        "mlp_linearity_with_residual",
        "mlp_linearity_without_residual",
        "bilinear_tensor_decomposition_exact",
        "bilinear_noise_outside_planted_rank",
        "softmax_collision_exact",
        "softmax_isolation_grows_with_length",
        "linear_attention_readout_tail_index",
        "linear_attention_gradient_tail_index",
        "softplus_l1_entropy_deficit",
        "shaped_attention_identity_at_init",
        "softmax_stack_kernel_collapse",
        "shaped_stack_keeps_token_kernel",
        "sigmoid_row_mass_exact",
        "sigmoid_row_mass_length_free",
        "cog_token_sign_equivariance",
        "cog_stack_keeps_tokens_uncorrelated",
        "parallel_mlp_discrepancy_exact",
        "parallel_discrepancy_falls_with_depth",
        "persistent_memory_share_exact",
        "persistent_memory_share_falls_with_context",
    }
    for c in by_name.values():
        if c.name == "mlp_linearity_without_residual":
            # at the full preset's five layers this one lands 2 SE above its law (unstable, not a fail); over 24
            # further layers the mean ratio is 1.0003 +- 0.0006 (closing note of the linearity part)
            assert c.status in ("pass", "unstable") and abs(c.measured - 1.0) < 0.01, (c.status, c.measured)
            continue
        assert c.status == "pass", (c.name, c.status, c.measured, c.expected)
        if c.role == "prediction":  # every part's band is over its own independent seeds
            seeds = {
                "memory": "memory_seeds",
                "sparsemax": "sparse_seeds",
                "softmax_irrelevant": "sparse_seeds",
                "k_interval": "interval_seeds",
                "mimetic": "mimetic_seeds",
                "softmax_jacobian": "jacobian_seeds",
                "sa_softmax_jacobian": "jacobian_seeds",
                "elu1": "features_seeds",
                "taylor": "taylor_seeds",
                "mlp_linearity": "linearity_seeds",
                "bilinear": "bilinear_seeds",
                "softmax_collision": "isolation_seeds",
                "softmax_isolation": "isolation_seeds",
                "linear_attention": "denominator_seeds",
                "softplus": "softplus_seeds",
                "softmax_stack": "shaped_seeds",
                "shaped_stack": "shaped_seeds",
                "sigmoid": "sigmoid_seeds",
                "cog": "cog_seeds",
                "parallel": "parallel_seeds",
                "persistent": "persistent_seeds",
            }
            assert c.tolerance["n"] == full.config.value_of(next(v for k, v in seeds.items() if c.name.startswith(k)))
    assert by_name["memory_relu_slot_slope"].expected == pytest.approx(1.0, abs=1e-12)
    assert by_name["memory_softmax_slot_slope"].expected < -0.9


def test_the_memory_is_the_zoos_mlp_with_the_closed_forms_weights():
    cfg = sa.Config.preset("full")
    relu = sa.memory_model(cfg, "relu", 4096, seed=3).blocks[0].mlp
    soft = sa.memory_model(cfg, "softmax", 4096, seed=3).blocks[0].mlp
    assert torch.equal(relu.W_in.weight, soft.W_in.weight) and torch.equal(relu.W_out.weight, soft.W_out.weight)
    keys, values = (
        relu.W_in.weight.detach().numpy(),
        relu.W_out.weight.detach().numpy(),
    )  # (n, d), (d, n): 262144 entries each
    assert keys.std() == pytest.approx(cfg.memory.std, rel=0.01)
    assert values.std() == pytest.approx(memory.value_std(cfg), rel=0.01)
    assert all(b is None or not b.any() for b in (relu.W_in.bias, relu.W_out.bias))  # no read-out offset
    x = sa.sphere_inputs(cfg, seed=0)
    np.testing.assert_allclose(x.pow(2).sum(-1).numpy(), cfg.memory.d_model, rtol=1e-13)
    with torch.no_grad():  # softmax over the hidden units: the read is a convex combination of the values
        p = torch.softmax(relu.W_in(x), dim=-1)
        torch.testing.assert_close(soft(x), relu.W_out(p), rtol=1e-12, atol=1e-15)


def _memory_moments(config, cache) -> np.ndarray:
    """The memory part of ``config`` measured alone from the empty cache ``cache``, on one thread as the probe's run
    does (probe_functions(..., threads=1))."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("WORKBENCH_CACHE", str(cache))
            ctx = Context(config=config, progress=False)
            memory.measure(ctx)
    finally:
        torch.set_num_threads(before)
    return ctx.data["memory_moment"][1]


def test_same_seed_same_numbers(full, committed, tmp_path):
    """The full preset's memories measured twice from empty caches, bit for bit on this machine: the whole probe
    (the thorough tier's full run) or the memory part alone (the fast tier) against the memory part again. The
    committed fixture may come from another CPU, whose BLAS kernels round differently: it agrees to float64
    rounding (:data:`ACROSS_MACHINES`), not bit for bit."""
    again = _memory_moments(full.config, tmp_path / "a")
    if TIER.full_runs:
        first = full.data["memory_moment"].values
    else:
        first = _memory_moments(full.config, tmp_path / "b")
    np.testing.assert_array_equal(again, first)
    np.testing.assert_allclose(again, committed.data["memory_moment"].values, rtol=ACROSS_MACHINES, atol=0)


def _judge(part, result, data) -> Ledger:
    """The full-preset ledger of ``part``'s claims on ``result`` with its data replaced by ``data`` (planted)."""
    led = Ledger(sa.NAME, preset="full")
    part.claims(led, (dataclasses.replace(result, data=data),))
    return led


def _judged(result, moment) -> Ledger:
    data = result.data.copy(deep=True)
    data["memory_moment"].values[:] = moment
    return _judge(memory, result, data)


def test_planted_wrong_numbers_fail_the_claims(full):
    m = full.data["memory_moment"].values
    n = full.data["slots"].values.astype(np.float64)
    flat = m.copy()
    flat[1] *= n[:, None] / n[0]  # a softmax memory that does not shrink with its slot count
    led = _judged(full, flat)
    assert led["memory_softmax_slot_slope"].status == "fail"
    assert led["memory_relu_slot_slope"].status == "pass"
    uniform = m.copy()
    uniform[1] *= math.exp(-(full.scalars["memory_logit_std"] ** 2))  # weights that do not concentrate
    assert _judged(full, uniform)["memory_softmax_concentration"].status == "fail"


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"memory_slots": (16, 64)}, "memory_slots"),
        ({"memory_slots": (64, 16, 256)}, "memory_slots"),
        ({"memory_seeds": 1}, "memory_seeds"),
        ({"memory_std": 0.0}, "memory_std"),
        ({"sparse_keys": (64, 16)}, "sparse_keys"),
        ({"sparse_keys": (1, 16)}, "sparse_keys"),
        ({"interval_ks": (64, 128)}, "interval_ks"),
        ({"mimetic_betas": (1.0, 0.5)}, "mimetic_betas must be strictly increasing"),
        ({"jacobian_scales": (64.0, 16.0)}, "jacobian_scales must be strictly increasing"),
        ({"jacobian_keys": 1}, "jacobian_keys"),
        ({"mimetic_tokens": 1}, "mimetic_tokens"),
        ({"linearity_scales": (2.0, 1.0)}, "linearity_scales must be strictly increasing"),
        ({"linearity_activation": "relu"}, "linearity_activation"),
        ({"linearity_tokens": 2, "linearity_batch_size": 4}, "regression's samples"),
        ({"bilinear_rank": 16}, "bilinear_rank must be < bilinear_d_model"),
        ({"bilinear_samples": 100}, "bilinear_samples must be >= d"),
        ({"isolation_tokens": (64, 16)}, "isolation_tokens must be strictly increasing"),
        ({"isolation_tokens": (64,)}, "isolation_tokens needs at least 2"),
        ({"isolation_d_model": 2}, "isolation_d_model"),
        ({"denominator_d_model": 1}, "denominator_d_model"),
        ({"denominator_top": 0.0}, "denominator_top"),
        ({"denominator_top": 1e-3, "denominator_batch_size": 4}, "denominator_top x denominator_tokens"),
        ({"softplus_scales": (4.0, 1.0)}, "softplus_scales must be strictly increasing"),
        ({"softplus_scales": (1.0, 32.0)}, "softplus_scales"),
        ({"softplus_keys": 1}, "softplus_keys"),
        ({"shaped_depths": (2, 1)}, "shaped_depths must be strictly increasing"),
        ({"shaped_tokens": 1}, "shaped_tokens"),
        ({"sigmoid_keys": (64, 16)}, "sigmoid_keys must be strictly increasing"),
        ({"sigmoid_keys": (64,)}, "sigmoid_keys needs at least 2"),
        ({"cog_depths": (4, 2)}, "cog_depths must be strictly increasing"),
        ({"cog_tokens": 1}, "cog_tokens"),
        ({"parallel_depth": 1}, "parallel_depth"),
        ({"parallel_n_heads": 3}, "parallel_n_heads must divide parallel_d_model"),
        ({"sparse_keys": (64,)}, "sparse_keys must have at least 2"),
        ({"persistent_context": (64, 16)}, "persistent_context must be strictly increasing"),
        ({"persistent_context": (64,)}, "persistent_context must have at least 2"),
        ({"persistent_scale": 0.0}, "persistent_scale"),
    ],
)
def test_bad_configs_are_refused_by_name(over, match):
    with pytest.raises(ValueError, match=match):
        sa.Config.preset("full", **over)


def test_sparse_rows_see_n_keys_one_planted_and_their_logit_std_is_exact():
    """Each row i >= 1 sees the n keys j != i, key 0 with the planted bias; the distractors' logits have the std
    s_i = c |W_k^T q_i| the prediction uses (checked by averaging over fresh Gaussian keys)."""
    cfg = sa.Config.preset("full", sparse_d_model=8)
    bias = sparse.planted_bias(5, 4.0)
    assert torch.isinf(bias.diagonal()).all() and (bias[1:, 0] == 4.0).all() and bias[0, 1:].eq(0).all()
    model = sparse.sparse_model(cfg, "sparsemax", seed=1)
    attn = model.blocks[0].attn
    q = torch.randn(1, 1, 8, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    keys = torch.randn(200_000, 8, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    with torch.no_grad():
        logits = model.config.scale * (attn.W_k(keys) @ attn.W_q(q)[0, 0])
    s = float(sparse.row_logit_std(model, q)[0, 0])
    assert float(logits.std()) == pytest.approx(s, rel=0.01)


def test_a_planted_isolation_fraction_fails_the_claim(full):
    data = full.data.copy(deep=True)
    data["sparse_isolated"].values[:] = 1.0  # every row isolated: the distractors-at-their-mean picture
    led = _judge(sparse, full, data)
    assert led["sparsemax_isolation_vs_keys"].status == "fail"
    assert led["sparsemax_kernel_is_simplex_projection"].status == "pass"


def test_interpolation_at_the_rounding_order_fails_its_claim(full):
    data = full.data.copy(deep=True)
    Ks = data["interval_k"].values.astype(np.float64)
    data["interval_error"].loc[{"interval_mode": "interpolate"}] = (1.0 / Ks)[:, None] * np.linspace(1, 1.1, 5)
    led = _judge(k_interval, full, data)
    assert led["k_interval_interpolate_error_order"].status == "fail"
    assert led["k_interval_round_error_order"].status == "pass"
    data["interval_bound_ratio"].values[0, 0, 0] = 1.5  # one row above its bound
    led = _judge(k_interval, full, data)
    assert led["k_interval_interpolate_error_bound"].status == "fail"


def test_mimetic_layer_has_the_product_and_the_logit_law_it_is_judged_by():
    """The zoo's init="mimetic" gives W_q^T W_k = alpha Z + beta I exactly (one head of width d); a row's own logit is
    c x^T M x and its logits on fresh Gaussian keys have the std s_i the prediction uses."""
    cfg = sa.Config.preset("full", mimetic_d_model=8)
    model = mimetic.mimetic_model(cfg, 0.0, seed=4)  # alpha Z alone
    with_eye = mimetic.mimetic_model(cfg, 1.5, seed=4)  # the same Z plus 1.5 I
    attn, attn2 = model.blocks[0].attn, with_eye.blocks[0].attn
    M0 = (attn.W_q.weight.T @ attn.W_k.weight).detach()
    M1 = (attn2.W_q.weight.T @ attn2.W_k.weight).detach()
    torch.testing.assert_close(M1 - M0, 1.5 * torch.eye(8, dtype=torch.float64), rtol=0, atol=1e-12)
    assert float(M0.std()) == pytest.approx(cfg.mimetic.alpha / math.sqrt(8), rel=0.3)
    x = torch.randn(1, 1, 8, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    a, s = models.row_logits(with_eye, x)
    c = with_eye.config.scale
    assert a[0, 0] == pytest.approx(float(c * x[0, 0] @ M1 @ x[0, 0]), rel=1e-12)
    keys = torch.randn(200_000, 8, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    with torch.no_grad():
        logits = c * (keys @ M1.T @ x[0, 0])
    assert float(logits.std()) == pytest.approx(float(s[0, 0]), rel=0.01)


def test_jacobian_is_autograd_through_the_zoos_kernels():
    cfg = sa.Config.preset("full")
    z = torch.randn(5, 7, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 10
    p = torch.softmax(z, -1)
    J = torch.diag_embed(p) - p[:, :, None] * p[:, None, :]
    for kernel, want in (("softmax", J), ("sa_softmax", torch.diag_embed(p) + z[:, :, None] * J)):
        model = jacobian.jacobian_model(cfg, kernel, 16.0, seed=0)
        got = jacobian.kernel_jacobian_norms(model, z)
        torch.testing.assert_close(got, want.flatten(1).norm(dim=1), rtol=1e-12, atol=1e-15)
    scores = torch.arange(9.0).reshape(1, 3, 3)
    assert jacobian.off_diagonal(scores).tolist() == [[1.0, 2.0], [3.0, 5.0], [6.0, 7.0]]


def test_planted_mean_field_self_weights_and_vanishing_sa_gradients_fail(full):
    data = full.data.copy(deep=True)
    data["mimetic_self_weight"].values[:] = data["mimetic_self_weight_mean_field"].values
    soft = data["jacobian_norm_theory"].sel(jacobian_kernel="softmax").values
    data["jacobian_norm"].loc[{"jacobian_kernel": "sa_softmax"}] = soft  # SA-Softmax vanishing like softmax
    led = Ledger(sa.NAME, preset="full")
    planted = (dataclasses.replace(full, data=data),)
    mimetic.claims(led, planted)
    jacobian.claims(led, planted)
    assert led["mimetic_self_weight"].status == "fail"
    assert led["sa_softmax_jacobian_vs_scale"].status == "fail"
    assert led["softmax_jacobian_vs_scale"].status == "pass"


def test_feature_rows_are_the_zoos_elu1_weights_and_a_softmax_like_deficit_fails(full):
    s = torch.tensor([[1.0, 1.0, 1.0, 1.0], [4.0, 1e-300, 1e-300, 1e-300]], dtype=torch.float64)
    torch.testing.assert_close(features.entropy_deficit(s), torch.tensor([0.0, math.log(4)], dtype=torch.float64))
    d = full.data
    assert float(d["elu1_entropy_deficit"].mean()) < 0.1 < float(d["softmax_entropy_deficit"].mean())
    # softmax's measured deficit sits on its own exact law too (the alternative is a measured fact, not a guess)
    np.testing.assert_allclose(
        float(d["softmax_entropy_deficit"].mean()), float(d["softmax_entropy_deficit_exact"].mean()), rtol=0.05
    )
    data = d.copy(deep=True)
    data["elu1_entropy_deficit"].values[:] = data["softmax_entropy_deficit"].values  # a kernel that concentrates
    led = _judge(features, full, data)
    assert led["elu1_entropy_deficit"].status == "fail"


def test_taylor_features_expand_softmax_to_second_order_and_a_monotone_map_fails_the_claim(full):
    x = torch.randn(3, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    f = taylor.taylor_features(x)
    z = (x @ x.T) / math.sqrt(8)
    torch.testing.assert_close(f @ f.T, 1 + z + z * z / 2, rtol=1e-13, atol=1e-13)
    z = torch.tensor([[-3.0, -1.5, 0.0, 1.0]], dtype=torch.float64)
    s = 1 + z + z * z / 2  # 2.5, 0.625, 1, 2.5: z_i < z_j is discordant iff z_i + z_j < -2 (-3 with -1.5 and 0;
    # -3 with 1 is a tie of the scores, not counted)
    assert float(taylor.discordant_fraction(z, s)[0]) == pytest.approx(2 / 6)
    data = full.data.copy(deep=True)
    data["taylor_discordant"].values[:] = 0.0  # a monotone map (softmax's exp)
    data["taylor_entropy_deficit"].values[:] = data["taylor_softmax_deficit_exact"].values
    led = _judge(taylor, full, data)
    assert led["taylor_monotonicity_violations"].status == "fail"
    assert led["taylor_entropy_deficit"].status == "fail"


def test_linearity_block_feeds_its_mlp_the_gaussian_input_the_law_assumes():
    """The two variants share their weights; the stream after the MLP is the stream before it plus the zoo's MLP of
    it (with the skip) or the MLP alone (without); the MLP's input has the covariance the law is given."""
    cfg = sa.Config.preset("full", linearity_d_model=6, linearity_d_mlp=12, linearity_tokens=8)
    with_skip = linearity.linearity_model(cfg, 5, True)
    without = linearity.linearity_model(cfg, 5, False)
    for a, b in zip(with_skip.parameters(), without.parameters(), strict=True):
        assert torch.equal(a, b)
    x = torch.randn(4000, 8, 6, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 2.0
    mid, post = linearity.layer_embeddings(with_skip, x)
    mid2, post2 = linearity.layer_embeddings(without, x)
    np.testing.assert_array_equal(mid, mid2)
    with torch.no_grad():
        branch = with_skip.blocks[0].mlp(torch.from_numpy(mid)).numpy()
    np.testing.assert_allclose(post, mid + branch, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(post2, branch, rtol=1e-12, atol=1e-12)

    # the MLP's input is linear in the tokens (uniform attention): its covariance is sum_s J_ts J_ts^T scale^2 exactly
    def mid_of(tokens: torch.Tensor) -> torch.Tensor:
        got = {}
        with hooks(with_skip, [(linearity.MID, lambda t, name: got.setdefault(name, t))]):
            with_skip(tokens[None])
        return got[linearity.MID][0]

    J = torch.autograd.functional.jacobian(mid_of, torch.zeros(8, 6, dtype=torch.float64))  # (t, d, s, d')
    exact = 4.0 * torch.einsum("isj,ksj->ik", J[3], J[3]).numpy()  # token 3 (all alike), scale 2
    np.testing.assert_allclose(linearity.mlp_input_covariance(with_skip, 8, 2.0), exact, rtol=1e-12, atol=1e-13)


def test_a_skip_connection_that_changes_nothing_fails_both_linearity_claims(full):
    data = full.data.copy(deep=True)
    swapped = data["linearity_unexplained_exact"].values[:, ::-1].copy()  # each variant at the other's law
    data["linearity_unexplained"].values[:] = swapped
    led = _judge(linearity, full, data)
    assert led["mlp_linearity_with_residual"].status == "fail"
    assert led["mlp_linearity_without_residual"].status == "fail"


def test_bilinear_layer_is_the_zoos_mlp_trained_to_the_least_squares_minimum(full):
    cfg = sa.Config.preset("full", bilinear_d_model=5, bilinear_d_mlp=8)
    mlp = bilinear.bilinear_mlp(cfg, seed=3)
    x = torch.randn(7, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(mlp(x), mlp.W_out(mlp.W_in(x) * mlp.W_gate(x)), rtol=0, atol=0)
    # every full-preset layer ends within 1e-3 (relative) of the unique least-squares interaction matrices
    assert full.scalars["bilinear_fit_gap_max"] < 1e-3
    assert 0.95 < full.scalars["bilinear_top_fraction_mean"] < 1.0


def test_a_low_rank_fit_and_a_broken_decomposition_fail_the_bilinear_claims(full):
    data = full.data.copy(deep=True)
    data["bilinear_outside_energy"].values[:] = 0.0  # nothing outside the planted rank: the implicit-bias picture
    data["bilinear_decomposition_error"].values[0] = 1e-6
    led = _judge(bilinear, full, data)
    assert led["bilinear_noise_outside_planted_rank"].status == "fail"
    assert led["bilinear_tensor_decomposition_exact"].status == "fail"


def test_uniform_weights_and_a_length_independent_share_fail_the_isolation_claims(full):
    data = full.data.copy(deep=True)
    ns = data["isolation_n"].values.astype(np.float64)
    data["isolation_collision"].values[:] = (1.0 / ns)[:, None]  # even spreading: 1/n
    led = _judge(isolation, full, data)
    assert led["softmax_collision_exact"].status == "fail"
    data["isolation_collision"].values[:] = 0.05  # the same share at every length
    led = _judge(isolation, full, data)
    assert led["softmax_isolation_grows_with_length"].status == "fail"


def test_light_tails_and_a_gradient_like_the_read_out_fail_the_denominator_claims(full):
    data = full.data.copy(deep=True)
    # a denominator bounded away from zero: the read-out as light-tailed as its numerator
    data["denominator_readout_tail_index"].values[:] = data["denominator_numerator_tail_index"].values
    data["denominator_gradient_tail_index"].values[:] = data["denominator_readout_tail_index"].values  # 1/|D| only
    led = _judge(denominator, full, data)
    assert led["linear_attention_readout_tail_index"].status == "fail"
    assert led["linear_attention_gradient_tail_index"].status == "fail"


def test_the_denominator_rows_are_the_zoos_linear_kernel():
    """The numerator y = c sum_j (q . k_j) v_j the part divides is what the zoo's unnormalised linear attention
    computes (its hook_z), row by row; the part's self-attention indices read the same rows."""
    cfg = sa.Config.preset("smoke")
    model = models.random_head(8, "linear", seed=2)
    x = torch.randn(3, 5, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    attn = model.blocks[0].attn
    got = {}
    with torch.no_grad(), hooks(model, [("blocks.0.attn.hook_z", lambda t, name: got.setdefault("z", t.clone()))]):
        model(x)
        q, k, v = (w(x).numpy() for w in (attn.W_q, attn.W_k, attn.W_v))
    rows = th.linear_readouts(q, k, v, model.config.scale)
    np.testing.assert_allclose(rows["numerator"], got["z"][:, :, 0].norm(dim=-1).numpy(), rtol=1e-12)
    one = denominator.measure_layer(cfg, seed=4)
    assert set(one) >= {f"{k}_index" for k in denominator.KINDS} | {"self_readout_index", "self_gradient_index"}
    assert one["readout_quantile"].shape == (len(denominator.SURVIVAL),)
    assert np.all(np.diff(one["readout_quantile"]) <= 0)  # quantiles fall as the survival probability rises


def test_softmax_like_concentration_fails_the_softplus_claim(full):
    data = full.data.copy(deep=True)
    data["softplus_entropy_deficit"].values[:] = data["softplus_softmax_deficit_exact"].values
    led = _judge(softplus, full, data)
    assert led["softplus_l1_entropy_deficit"].status == "fail"


def test_softplus_rows_see_n_keys_through_the_zoos_kernel():
    """Each row hides its own key and spreads softplus_l1 weights over the other n, summing to 1; the part's deficit
    at one scale is the mean over those rows."""
    cfg = sa.Config.preset("smoke", softplus_scales=(2.0, 4.0))
    model = models.random_head(8, "softplus_l1", seed=0, logit_scale=2.0 / math.sqrt(8))
    x = torch.randn(1, 6, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    p = models.head_pattern_and_scores(model, x, sparse.planted_bias(5, 0.0))[models.PATTERN][0]
    assert torch.count_nonzero(p.diagonal()) == 0 and torch.allclose(p.sum(-1), torch.ones(6, dtype=torch.float64))
    z = 2.0 / math.sqrt(8) * model.blocks[0].attn.W_q(x[0]) @ model.blocks[0].attn.W_k(x[0]).T
    f = torch.nn.functional.softplus(z).fill_diagonal_(0.0)
    torch.testing.assert_close(p, (f / f.sum(-1, keepdim=True)).detach())
    one = softplus.measure_layer(cfg, seed=3)
    exact, soft = one["softplus_entropy_deficit_exact"], one["softplus_softmax_deficit_exact"]
    assert one["softplus_entropy_deficit"].shape == (2,) and np.all(exact < soft)


def test_swapped_kernels_and_a_broken_identity_fail_the_shaped_claims(full):
    data = full.data.copy(deep=True)
    soft, shp = data["shaped_softmax_correlation"].values.copy(), data["shaped_shaped_correlation"].values.copy()
    data["shaped_softmax_correlation"].values[:] = shp  # softmax keeping the kernel
    data["shaped_shaped_correlation"].values[:] = soft  # shaped attention collapsing it
    data["shaped_identity_error"].values[0, 0] = 1e-9
    led = _judge(shaped, full, data)
    for name in (
        "softmax_stack_kernel_collapse",
        "shaped_stack_keeps_token_kernel",
        "shaped_attention_identity_at_init",
    ):
        assert led[name].status == "fail", name


def test_the_shaped_stacks_are_the_zoos_skipless_attention_with_zero_queries():
    cfg = sa.Config.preset("smoke")
    soft, shp = shaped.stack(cfg, "softmax", 3, seed=5), shaped.stack(cfg, "shaped", 3, seed=5)
    shaped_weights = dict(shp.named_parameters())
    for name, a in soft.named_parameters():
        if name.endswith(("W_v.weight", "W_o.weight")):
            assert torch.equal(a, shaped_weights[name]), name  # the same value and output weights
    assert all(not blk.attn.W_q.weight.any() for blk in soft.blocks)
    x = torch.randn(
        2, cfg.shaped.tokens, cfg.shaped.d_model, dtype=torch.float64, generator=torch.Generator().manual_seed(0)
    )
    with torch.no_grad():
        y = x
        for blk in shp.blocks:  # the identity pattern: each layer is x W_v^T W_o^T, no skip
            y = blk.attn.W_o(blk.attn.W_v(y))
        torch.testing.assert_close(shp(x), y, rtol=1e-13, atol=1e-13)
        C = torch.tensor(th.uniform_causal(cfg.shaped.tokens))
        y = x
        for blk in soft.blocks:
            y = C @ blk.attn.W_o(blk.attn.W_v(y))
        torch.testing.assert_close(soft(x), y, rtol=1e-13, atol=1e-13)


def test_softmax_like_mass_and_b0_growth_fail_the_sigmoid_claims(full):
    data = full.data.copy(deep=True)
    ns = data["sigmoid_n"].values.astype(np.float64)
    data["sigmoid_row_mass"].values[:] = 1.0  # normalised like softmax
    led = _judge(sigmoid, full, data)
    assert led["sigmoid_row_mass_exact"].status == "fail"
    data["sigmoid_row_mass"].values[:] = (ns / 2)[:, None]  # the bias left at 0
    led = _judge(sigmoid, full, data)
    assert led["sigmoid_row_mass_length_free"].status == "fail"


def test_softmax_like_collapse_and_a_broken_equivariance_fail_the_cog_claims(full):
    data = full.data.copy(deep=True)
    data["cog_cog_correlation"].values[:] = data["cog_softmax_correlation"].values  # collapsing like softmax
    data["cog_equivariance_error"].values[-1, 0] = 1e-16  # one rounding off
    led = _judge(cog, full, data)
    assert led["cog_stack_keeps_tokens_uncorrelated"].status == "fail"
    assert led["cog_token_sign_equivariance"].status == "fail"


def test_the_cog_stacks_are_the_zoos_skipless_signexp_attention():
    cfg = sa.Config.preset("smoke")
    soft, sign = cog.stack(cfg, "softmax", 2, seed=5), cog.stack(cfg, "cog", 2, seed=5)
    assert all(torch.equal(a, b) for a, b in zip(soft.parameters(), sign.parameters(), strict=True))
    x = torch.randn(2, cfg.cog.tokens, cfg.cog.d_model, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    mask = torch.ones(cfg.cog.tokens, cfg.cog.tokens, dtype=torch.bool).tril()
    with torch.no_grad():
        y = x
        for blk in sign.blocks:  # SignExp over the causal logits, no skip, no norm
            a = blk.attn
            z = (a.W_q(y) @ a.W_k(y).transpose(-1, -2) / math.sqrt(cfg.cog.d_model)).masked_fill(~mask, float("-inf"))
            y = a.W_o(torch.from_numpy(th.sign_exp(z.numpy())) @ a.W_v(y))
        torch.testing.assert_close(sign(x), y, rtol=1e-12, atol=1e-12)


def test_commuting_sublayers_and_a_flat_cost_fail_the_parallel_claims(full):
    data = full.data.copy(deep=True)
    data["parallel_difference"].values[:] = 1e-9 * data["parallel_difference_exact"].values  # no change
    led = _judge(parallel, full, data)
    assert led["parallel_mlp_discrepancy_exact"].status == "fail"
    data = full.data.copy(deep=True)
    ratio = data["parallel_output"].values / data["parallel_output_exact"].values
    data["parallel_difference"].values[:] = 0.2 * data["parallel_output"].values  # the same cost at every depth
    led = _judge(parallel, full, data)
    assert led["parallel_discrepancy_falls_with_depth"].status == "fail"
    assert abs(ratio.mean() - 1) < 0.05  # the MLP's output moment is its law on average (one W_out per block)


def test_the_parallel_part_feeds_each_blocks_own_mlp_its_two_inputs():
    """The mid-block stream minus the block input is the attention output, the MLP sees ln2 of the mid-block stream
    (the block's output is mid + mlp(ln2(mid))), and the law's output moment at RMS s is E gelu(s z)^2."""
    cfg = sa.Config.preset("smoke")
    model = parallel.parallel_model(cfg, seed=3)
    x = torch.randn(2, cfg.parallel.tokens, cfg.parallel.d_model, dtype=torch.float64)
    streams = parallel.block_inputs(model, x)
    assert len(streams) == cfg.parallel.depth
    with torch.no_grad():
        for l, (pre, mid) in enumerate(streams):
            blk = model.blocks[l]
            torch.testing.assert_close(mid, pre + blk.attn(blk.ln1(pre)), rtol=1e-13, atol=1e-13)
            after = streams[l + 1][0] if l + 1 < len(streams) else None
            if after is not None:
                torch.testing.assert_close(after, mid + blk.mlp(blk.ln2(mid)), rtol=1e-13, atol=1e-13)
    z = np.random.default_rng(0).standard_normal(400_000)
    moment = th.parallel_mlp_discrepancy("gelu", 1.3, 1.3, 1.0)["output"]
    g = th.activation_of("gelu", 1.3 * z) ** 2
    assert float(moment) == pytest.approx(g.mean(), abs=5 * g.std() / math.sqrt(z.size))


def test_selective_sparsity_and_a_flat_share_fail_the_irrelevant_mass_claims(full):
    data = full.data.copy(deep=True)
    data["softmax_irrelevant_mass"].values[:] = 1e-9  # the irrelevant keys removed
    led = _judge(sparse, full, data)
    assert led["softmax_irrelevant_mass_exact"].status == "fail"
    data["softmax_irrelevant_mass"].values[:] = 0.5  # the same share at every n
    led = _judge(sparse, full, data)
    assert led["softmax_irrelevant_mass_grows_with_length"].status == "fail"
    assert led["sparsemax_isolation_vs_keys"].status == "pass"  # the sparsemax claim reads other variables


def test_irrelevant_mass_is_the_zoos_softmax_beside_the_planted_key():
    """The part's irrelevant mass is 1 - the zoo's softmax weight on the planted key, and its law is 1 - section 4's
    planted weight at the row's planted logit (the score, gap included) and logit std."""
    cfg = sa.Config.preset("smoke")
    m = sparse.measure_keys(cfg, 8, seed=3)
    rows = min(cfg.sparse.rows, 8)
    assert m["irrelevant"].shape == (cfg.sparse.batch_size, rows)
    model = sparse.sparse_model(cfg, "softmax", derived_seed(3, "sparse_weights") % MAX_SEED)
    g = torch.Generator().manual_seed(derived_seed(3, "sparse_inputs_n8"))
    x = torch.randn(cfg.sparse.batch_size, 9, cfg.sparse.d_model, generator=g, dtype=torch.float64)
    got = models.head_pattern_and_scores(model, x, sparse.planted_bias(8, cfg.sparse.gap))
    p, z = got[models.PATTERN][:, 1 : rows + 1], got[models.SCORES][:, 1 : rows + 1]
    np.testing.assert_allclose(m["irrelevant"], 1.0 - p[..., 0].numpy(), rtol=0, atol=1e-15)
    s = sparse.row_logit_std(model, x)[:, 1 : rows + 1].numpy()
    np.testing.assert_allclose(m["irrelevant_exact"], 1.0 - th.mimetic_self_weight(8, z[..., 0].numpy(), s), rtol=1e-9)


def test_exchangeable_keys_and_a_length_free_share_fail_the_persistent_claims(full):
    data = full.data.copy(deep=True)
    ts = data["persistent_t"].values.astype(np.float64)
    N = full.config.persistent.slots
    data["persistent_share"].values[:] = (N / (N + ts))[:, None]  # the memory's keys weighing like the context's
    led = _judge(persistent, full, data)
    assert led["persistent_memory_share_exact"].status == "fail"
    data["persistent_share"].values[:] = 0.3  # a feed-forward-like contribution at every T
    led = _judge(persistent, full, data)
    assert led["persistent_memory_share_falls_with_context"].status == "fail"


def test_persistent_rows_see_the_memory_and_the_other_context_tokens():
    """Each context row sees the N persistent vectors and the T other context tokens (its own key hidden), and at a
    scale of 1 the exact share of exchangeable keys is N / (N + T) whatever the row's spread."""
    model = models.random_head(8, "softmax", seed=2)
    N, T = 3, 5
    x = torch.randn(2, N + T + 1, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    p = models.head_pattern_and_scores(model, x, persistent.memory_bias(N, T + 1))[models.PATTERN]
    assert torch.count_nonzero(p.diagonal(dim1=-2, dim2=-1)[:, N:]) == 0  # no context row sees itself
    assert int((p[0, N + 2] > 0).sum()) == N + T
    np.testing.assert_allclose(th.persistent_share(N, T, np.array([0.4, 1.7]), 1.0), N / (N + T), rtol=1e-9)


def test_rows_with_almost_no_logit_spread_get_the_law_near_scale_zero():
    """A layer of width 1 can give its rows almost no logit spread (replicate 1 of seed 711: sigma from 2e-6 to 9e-5;
    found by the property test, where the two-key law's quadrature returned 0 there and the claims' alternative
    became infinite). The law is finite and positive at every row and, at such scales, the one at scale 0 (1/2 for
    softmax, 1/sqrt 2 for SA-Softmax), which the layer measures."""
    c = sa.Config.preset(
        "smoke",
        seed=711,
        jacobian_scales=(1.0,),
        jacobian_d_model=1,
        jacobian_keys=2,
        jacobian_batch_size=1,
        jacobian_seeds=3,
    )
    assert jacobian.layer_inputs(c, replicate_seed(c.seed, 1))[2].max() < 1e-4
    ctx = Context(config=c, progress=False)
    jacobian.measure(ctx)
    theory, measured = ctx.data["jacobian_norm_theory"][1], ctx.data["jacobian_norm"][1]
    assert np.isfinite(theory).all() and (theory > 0).all()
    at_zero = [th.two_key_jacobian_norm(k, 0.0, 2) for k in jacobian.KERNELS]
    # the laws are even in the logits' spread: they move off their values at 0 in second order, about 0.5 s^2
    # (softmax) and 0.69 s^2 (SA-Softmax), <= 6e-9 at s <= 9e-5 here
    np.testing.assert_allclose(theory[:, 0, 1], at_zero, rtol=1e-7)
    # the layer's one draw of keys is not: SA-Softmax's measured norm moves in first order of its spread (<= 9e-5)
    np.testing.assert_allclose(measured[:, 0, 1], at_zero, rtol=1e-4)
