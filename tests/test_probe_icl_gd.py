"""Probe icl_gd: the smoke run end to end, and the exact identities its measurements rely on."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import probes
from analysis.claims.evidence import replicate_seed, t_multiple
from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from analysis.theory import icl_gd as th
from probes import icl_gd as P

EPS = float(np.finfo(np.float64).eps)


def run_of(ds, scalars, cfg) -> Result:
    """A result holding ``ds``, ``scalars`` and ``cfg``: what a claim function ``claim(led, result)`` judges."""
    return Result(probe=P.NAME, config=cfg, data=ds, scalars=dict(scalars))


@pytest.fixture(scope="module")
def smoke(smoke_result):
    return smoke_result("icl_gd")


def _batch(cfg, n=64, N=None, seed=1):
    return th.sample_regression(n, cfg.d, N or cfg.n_context, cfg.x_dist, cfg.noise, np.random.default_rng(seed))


# ---------------------------------------------------------------------- exact identities (float64)


@pytest.mark.parametrize("K", [1, 2, 3])
def test_construction_in_tinytransformer_is_k_gd_steps(K):
    cfg = P.Config.preset("smoke")
    b = _batch(cfg)
    eta = 0.7 * th.one_step_gd_theory(cfg.d, cfg.n_context, cfg.x_dist, 0.0)["eta_star"] / K
    model = P.model_from_lsa_weights(cfg, th.gd_lsa_stack(cfg.d, eta, cfg.n_context, K))
    with torch.no_grad():
        got = P.ModelPredictor(model, hide_query=True)(b.x_ctx, b.y_ctx, b.x_q)
        want = th.GD(eta=eta, steps=K)(b.x_ctx, b.y_ctx, b.x_q)
    # K layers of sums over N + D terms of size <= eta |x|^2 |y| (|x|^2 <= d/4 for uniform inputs)
    tol = 8 * K * (cfg.n_context + cfg.d + 1) * EPS * float(np.abs(b.y_ctx).max()) * (1 + eta * cfg.d / 4) ** K
    assert float((got - want).abs().max()) <= tol


def test_construction_needs_the_query_hidden_beyond_one_layer():
    """Without the -inf bias the query's running prediction feeds back: 2 layers are no longer GD."""
    cfg = P.Config.preset("smoke")
    b = _batch(cfg)
    eta = th.one_step_gd_theory(cfg.d, cfg.n_context, cfg.x_dist, 0.0)["eta_star"] / 2
    model = P.model_from_lsa_weights(cfg, th.gd_lsa_stack(cfg.d, eta, cfg.n_context, 2))
    with torch.no_grad():
        seen = P.ModelPredictor(model, hide_query=False)(b.x_ctx, b.y_ctx, b.x_q)
        want = th.GD(eta=eta, steps=2)(b.x_ctx, b.y_ctx, b.x_q)
    assert float((seen - want).abs().max()) > 1e-3 * float(want.abs().max())


@pytest.mark.parametrize("n_layers", [1, 2])
def test_weights_read_off_a_model_reproduce_it(n_layers):
    cfg = P.Config.preset("smoke")
    model = P.as_float64(P.TinyTransformer(P.model_config(cfg, n_layers).replace(seed=3)))
    stack = P.lsa_weights_from_model(model)
    b = _batch(cfg)
    with torch.no_grad():
        got = th.LinearSelfAttention(stack, include_query=True)(b.x_ctx, b.y_ctx, b.x_q)
        want = P.ModelPredictor(model)(b.x_ctx, b.y_ctx, b.x_q)
    # same float64 sums (N + D terms per product) in another association order
    assert float((got - want).abs().max()) <= 64 * n_layers * (cfg.n_context + cfg.d + 1) * EPS * float(
        want.abs().max()
    )


def test_lsa_linear_part_is_the_label_odd_part_of_one_layer():
    """(yhat(y) - yhat(-y)) / 2 = x_q^T G h for random weights: every other term is even in the labels."""
    cfg = P.Config.preset("smoke")
    rng = np.random.default_rng(5)
    D = cfg.d + 1
    W = {k: rng.standard_normal((D, D)) for k in ("W_K", "W_Q", "W_V", "P")}
    b = _batch(cfg)
    f = th.LinearSelfAttention(W, include_query=True)
    with torch.no_grad():
        odd = 0.5 * (f(b.x_ctx, b.y_ctx, b.x_q) - f(b.x_ctx, -b.y_ctx, b.x_q))
    G = th.lsa_linear_part(W, cfg.n_context)
    h = np.einsum("bnd,bn->bd", b.x_ctx, b.y_ctx) / cfg.n_context
    lin = np.einsum("bd,de,be->b", b.x_q, G, h)
    scale = float(np.abs(lin).max() + np.abs(odd.numpy()).max())
    assert np.abs(odd.numpy() - lin).max() <= 1e3 * EPS * scale  # cancellation of two O(scale) sums
    # its trace part is eta_from_lsa_weights' eta when the extra rank-one term vanishes
    W0 = dict(W)
    W0["W_K"] = W0["W_K"].copy()
    W0["W_K"][:, -1] = 0.0  # M_yx = 0
    assert math.isclose(
        np.trace(th.lsa_linear_part(W0, cfg.n_context)) / cfg.d,
        th.eta_from_lsa_weights(W0, cfg.n_context)["eta"],
        rel_tol=1e-12,
    )


def test_training_task_is_half_mse_of_minus_query_y_slot():
    task = P.NegYReadoutTask(P.regression_task(P.Config.preset("smoke")))
    x, y = task.sample(8, torch.Generator().manual_seed(0))
    out = torch.randn(x.shape, generator=torch.Generator().manual_seed(1))
    assert torch.equal(task.loss(out, y), 0.5 * ((-out[:, -1, -1]) - y).pow(2).mean())
    assert task.config() != task.inner.config()  # its own checkpoint-cache key


def test_hide_query_task_bias_reaches_the_trainer_and_the_cache_key():
    """With hide_query the trainer's forward runs the construction exactly as K GD steps."""
    from analysis.training.train import forward

    cfg = P.Config.preset("smoke")
    assert P.Config().hide_query and cfg.hide_query
    hidden = P.NegYReadoutTask(P.regression_task(cfg), hide_query=True)
    visible = P.NegYReadoutTask(P.regression_task(cfg), hide_query=False)
    assert hidden.config() != visible.config()  # a different checkpoint
    assert visible.attn_bias(cfg.n_context + 1) is None
    x, y = hidden.sample(16, torch.Generator().manual_seed(0), dtype=torch.float64)
    eta = th.one_step_gd_theory(cfg.d, cfg.n_context, cfg.x_dist, 0.0)["eta_star"] / 2
    model = P.model_from_lsa_weights(cfg, th.gd_lsa_stack(cfg.d, eta, cfg.n_context, 2))
    with torch.no_grad():
        got = -forward(model, hidden, x)[:, -1, -1]
        seen = -forward(model, visible, x)[:, -1, -1]
    xs, ys, xq = x[:, :-1, :-1].numpy(), x[:, :-1, -1].numpy(), x[:, -1, :-1].numpy()
    want = th.GD(eta=eta, steps=2)(xs, ys, xq)
    # 2 layers of float64 sums of N + D terms, each <= eta |x|^2 |y| (|x|^2 <= d/4 for uniform inputs)
    tol = 16 * (cfg.n_context + cfg.d + 1) * EPS * float(np.abs(ys).max()) * (1 + eta * cfg.d / 4) ** 2
    assert float((got - want).abs().max()) <= tol
    assert float((seen - want).abs().max()) > 1e-3 * float(want.abs().max())


def test_train_config_one_layer_vs_deep_stacks():
    """One layer: von Oswald's plain Adam (no warm-up, no clipping); K >= 2: the depth_* schedule."""
    cfg = P.Config()
    one, deep = P.train_config(cfg, 1), P.train_config(cfg, 3)
    assert (one.steps, one.batch_size, one.lr, one.warmup_steps, one.grad_clip) == (
        cfg.train.steps,
        cfg.train.batch_size,
        cfg.train.lr,
        0,
        0.0,
    )
    assert (deep.steps, deep.batch_size, deep.lr) == (cfg.depth.steps, cfg.depth.batch_size, cfg.depth.lr)
    assert deep.warmup_steps == cfg.depth.warmup and deep.grad_clip == cfg.depth.clip
    assert P.train_config(cfg.replace(depth_steps=5), 2).warmup_steps == 5  # warm-up never longer than the run


def test_query_key_bias_hides_only_the_last_key():
    bias = P.query_key_bias(4)
    assert torch.isinf(bias[:, -1]).all() and (bias[:, :-1] == 0).all()


def test_config_validation():
    with pytest.raises(ValueError, match="x_dist"):
        P.Config(x_dist="laplace")
    with pytest.raises(ValueError, match="n_eval"):  # the step matrix of Mahankali's setting needs >= 2 d^2 tasks
        P.Config(mahankali_d=10, n_eval=150)
    assert P.Config(mahankali_d=10, n_eval=150, mahankali=()).n_eval == 150  # without that setting: accepted
    with pytest.raises(ValueError, match="mahankali"):
        P.Config(mahankali=("laplace",))
    assert P.Config.preset("full") == P.Config()


# ---------------------------------------------------------------------- the smoke run


def test_smoke_result_fields_and_ledger(smoke):
    s = smoke.scalars
    for key in (
        "eta_fit",
        "eta_theory",
        "loss_model",
        "loss_gd",
        "loss_ols",
        "loss_ridge",
        "cos_sensitivity",
        "preds_diff",
        "model_diff",
        "eta_fit_weights",
    ):
        assert key in s and math.isfinite(s[key]), key
    assert s["eta_theory"] == pytest.approx(th.one_step_gd_theory(4, 6, "uniform", 0.0)["eta_star"], rel=1e-15)
    ds = smoke.data
    assert ds["loss_model_k"].dims == ("K", "k") and list(ds["k"].values) == [1, 3, 6]
    assert list(ds["baseline"].values)[:2] == ["gd_star", "least_squares"]
    status = {c.name: c.status for c in smoke.checks}
    assert smoke.ledger.ok, smoke.ledger.report()
    h = ds["train_loss_K1"].values
    assert h[-20:].mean() < h[:20].mean()  # training moved towards GD
    for name in (
        "construction_equals_gd",
        "weights_map_exact",
        "sympy_one_step_loss_independent_d2_N2",
        "sympy_one_step_loss_gaussian_d2_N2",
    ):
        assert status[name] == "pass", name  # identities: a failure is a bug
    for name in (
        "trained_loss_vs_gd_star",
        "cos_sensitivity_vs_gd_star",
        "eta_fit_vs_eta_star",
        "loss_vs_k_fixed_rate",
        "depth_beats_plain_gd",
        "depth_matches_gdpp",
        "depth_loss_falls_with_K",
        "mahankali_gaussian_loss",
        "mahankali_anisotropic_loss",
        "mahankali_relu_loss",
        "mahankali_gaussian_gamma",
        "mahankali_anisotropic_gamma",
        "mahankali_relu_gamma",
        "mahankali_gaussian_eta_fit",
        "mahankali_relu_eta_fit",
    ):
        assert status[name] == "not_evaluated", name  # need the full preset (trained models, many tasks)
    for name in (
        "eta_star_mc",
        "loss_star_mc",
        "ridge_bayes_vs_k_exact",
        "least_squares_inverse_wishart",
        "mahankali_gaussian_loss_star_mc",
        "mahankali_anisotropic_loss_star_mc",
        "mahankali_relu_loss_star_mc",
    ):
        assert status[name] != "not_evaluated", name  # evaluated (whatever the outcome) under smoke
    # noiseless uniform inputs: the ridge (least-squares) curve has an exact closed form at every k
    assert bool(ds["ridge_theory_exact_k"].values.all())
    assert smoke.ledger["ridge_bayes_vs_k_exact"].tolerance["family"] == ds.sizes["k"]  # the worst of every k
    assert ds["gamma_gdpp"].dims == ("K", "layer") and ds["gamma_gdpp"].values[0, 0] == 0.0  # K = 1: no gamma
    assert np.isfinite(ds["loss_gdpp"].values).all() and np.isfinite(ds["cos_gdpp"].values).all()


def test_worst_depth_claims_take_the_family_band():
    """Each depth claim is recorded at the depth nearest to failing, with the Sidak band of the depths it was
    chosen among: K = 2..4 for the comparisons with GD (K = 1 is one GD step), three steps for the loss falling."""
    import xarray as xr

    from analysis.claims.ledger import Ledger

    rng = np.random.default_rng(3)
    Ks, n = np.array([1, 2, 3, 4]), 5
    noise = 0.05 * rng.standard_normal(n)  # one spread for every depth: the mean alone orders them
    e = np.array([-0.5, -0.5, -0.1, -0.4])[:, None] + noise  # K = 3 is the nearest to failing
    dK = -0.3 + 0.05 * rng.standard_normal((4, n))
    dK[0] = np.nan  # no shallower stack before K = 1
    ds = xr.Dataset(
        {
            "excess_over_gd_perstep_seeds": (("K", "depth_seed"), e),
            "excess_over_gdpp_seeds": (("K", "depth_seed"), 0.01 * rng.standard_normal((4, n))),
            "depth_diff_prev_seeds": (("K", "depth_seed"), dK),
            "loss_gd_perstep": ("K", np.full(4, 1.0)),
            "loss_gdpp": ("K", np.full(4, 0.5)),
        },
        coords={"K": Ks},
    )
    led = Ledger(P.NAME, preset="full")
    P.claims_depth(led, run_of(ds, {}, P.Config.preset("full")))
    c = led["depth_beats_plain_gd"]
    assert c.tolerance["family"] == 3 and "K = 3" in c.statement and "worst of 3 cases" in c.why
    assert c.measured == pytest.approx(e[2].mean())
    assert c.tolerance["k"] == pytest.approx(t_multiple(n - 1, 0.95 ** (1 / 3)))
    assert led["depth_matches_gdpp"].tolerance["family"] == 3
    assert led["depth_loss_falls_with_K"].tolerance["family"] == 3


def test_smoke_interleaved_curves(smoke):
    """The interleaved-layout curves: dims, the k = 0 column (every baseline predicts 0) and the claims."""
    cfg = P.Config.preset("smoke")
    ds = smoke.data
    assert ds["garg_loss_k"].dims == ("garg_curve", "garg_k")
    assert list(ds["garg_curve"].values) == ["model", *P.GARG_BASELINES]
    assert list(ds["garg_k"].values) == list(range(cfg.garg.n_points))
    base0 = ds["garg_loss_k"].values[1:, 0]
    assert np.all(base0 == base0[0])  # the same tasks, the same zero prediction
    # noiseless least squares interpolates once k >= d: zero error up to float64 rounding of pinv
    ls = ds["garg_loss_k"].sel(garg_curve="least_squares").values[cfg.garg.d :]
    assert ls.max() <= 1e6 * EPS * base0[0]
    status = {c.name: c.status for c in smoke.checks}
    assert status["garg_beats_averaging_knn"] == "not_evaluated"
    assert status["garg_close_to_least_squares"] == "not_evaluated"
    assert math.isfinite(smoke.scalars["garg_excess_over_ls"])


def test_interleaved_task_and_model_shapes():
    cfg = P.Config.preset("smoke")
    task = P.garg_task(cfg)
    x, y = task.sample(4, torch.Generator().manual_seed(0))
    model = P.TinyTransformer(P.garg_model_config(cfg))
    out = model(x)
    assert x.shape == (4, 2 * cfg.garg.n_points, cfg.garg.d + 1) and out.shape[:2] == x.shape[:2]
    assert task.loss(out, y).ndim == 0 and model.config.causal  # causal: y_k is not visible at x_k


def test_smoke_json_round_trip(smoke):
    d = smoke.to_json_dict()
    assert d["probe"] == "icl_gd" and d["preset"] == "smoke"
    assert "loss_model_k" in d["arrays"] and "eta_fit" in d["scalars"]


def test_anisotropic_softmax_variant_runs(tmp_path, monkeypatch):
    """The preconditioner fields and checks, a softmax model (no weight read-out: NaN, no claim), the
    query visible, no interleaved model."""
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path))
    cfg = P.Config.preset(
        "smoke",
        x_dist="anisotropic",
        cond=5.0,
        attention="softmax",
        depths=(1,),
        train_steps=20,
        train_batch_size=64,
        n_eval=400,
        n_mc=4000,
        n_fit=200,
        k_values=(3,),
        construction_n_layers=1,
        hide_query=False,
        garg=False,
    )
    r = probes.run_probe("icl_gd", cfg, progress=False)
    assert "garg_loss_k" not in r.data
    j = list(r.data["mk_dist"].values).index("anisotropic")
    assert r.data["mk_gamma_fit_anisotropic"].shape == (cfg.mahankali.d,) * 2
    assert math.isfinite(float(r.data["mk_gamma_rel_error"].values[j]))
    assert math.isnan(r.scalars["eta_fit_weights"])
    status = {c.name: c.status for c in r.checks}
    assert status["mahankali_anisotropic_loss"] == "not_evaluated"  # the linear LSA of Mahankali's setting
    assert "mahankali_anisotropic_loss_star_mc" in status and "eta_fit_vs_eta_star" not in status  # no iso claims
    assert r.ledger.ok, r.ledger.report()


def test_measurements_on_the_construction_are_exact():
    """Passing the one-step construction as the 'trained' model: every metric must say "this is GD at eta*"."""
    cfg = P.Config.preset(
        "smoke", n_eval=400, n_mc=2000, n_fit=200, k_values=(3, 6), construction_n_layers=1, mahankali=()
    )
    eta = th.one_step_gd_theory(cfg.d, cfg.n_context, cfg.x_dist, 0.0)["eta_star"]
    model = P.model_from_lsa_weights(cfg, th.gd_lsa_stack(cfg.d, eta, cfg.n_context, 1))
    r = probes.run_probe("icl_gd", cfg, model=model, progress=False)
    s = r.scalars
    # one layer: the query's own value W_V (x_q, 0) is 0 in the construction, so seeing it changes nothing
    assert s["eta_fit"] == pytest.approx(eta, rel=1e-12)
    assert s["eta_fit_weights"] == pytest.approx(eta, rel=1e-12)
    assert s["cos_sensitivity"] == pytest.approx(1.0, abs=1e-12)
    assert s["preds_diff"] <= 1e-12 * eta and s["model_diff"] <= 1e-12 * eta
    assert np.abs(r.data["excess_model_k"].values).max() <= 1e-12


# ---------------------------------------------------------------------- the claims, recorded correctly


def test_claims_have_roles_alternatives_and_seeds(smoke):
    roles = {c.name: c.role for c in smoke.checks}
    assert roles["construction_equals_gd"] == "identity" and roles["weights_map_exact"] == "identity"
    assert roles["cos_sensitivity_vs_gd_star"] == "paper" and roles["garg_close_to_least_squares"] == "paper"
    names = [c.name for c in smoke.checks]
    assert len(names) == len(set(names))
    mc = {"eta_star_mc", "loss_star_mc", "ridge_bayes_vs_k_exact", "least_squares_inverse_wishart"}
    mc |= {f"mahankali_{law}_loss_star_mc" for law in P.MAHANKALI_LAWS}
    for c in smoke.checks:
        if c.role == "prediction" and c.expected is not None:  # not led.not_evaluated(...) (no numbers)
            assert c.alternative and c.alternative["hypothesis"].strip(), c.name
            policy = c.tolerance.get("policy")
            assert policy in ("t95", "criterion", "ci95"), c.name  # the one band policy
            if policy == "t95":
                assert c.tolerance["coverage"] == 0.95 and "se" in c.tolerance, c.name
                # within-run SEs only for the closed forms checked by Monte Carlo (no model); the rest are
                # trained claims with their band over replicate seeds
                assert bool(c.tolerance["within_run"]) == (c.name in mc), c.name
                if c.name not in mc:
                    assert c.tolerance["n"] >= 2, c.name
        assert c.status != "deviation" and not c.diagnosed_by  # no deviation is asserted in advance
    assert smoke.ledger.get("mahankali_gaussian_loss").seed == "000#26"
    assert smoke.ledger.get("mahankali_anisotropic_loss").seed == "000#26"
    assert smoke.ledger.get("eta_star_mc").seed is None  # uniform inputs: our derivation, not Mahankali's theorem
    # no quantity compared with itself: the retired self-comparisons are gone
    assert "eta_star_sympy_vs_probe" not in names and "eta_fit_weights_vs_predictions" not in names


def test_claims_read_only_the_result_and_catch_a_planted_error(smoke):
    """Re-running the claim functions on the stored result reproduces the ledger; a wrong expected
    value (eta*, the preconditioned loss*, GD++'s loss) makes the prediction fail."""
    s, ds, cfg = dict(smoke.scalars), smoke.data, smoke.config
    led = Ledger(P.NAME, preset="smoke")
    for claim in P.CLAIMS:
        claim(led, run_of(ds, s, cfg))
    assert [c.to_dict() for c in led.claims] == [c.to_dict() for c in smoke.ledger.claims]

    bad = dict(s, eta_theory=1.3 * s["eta_theory"])
    led = Ledger(P.NAME, preset="smoke")
    P.claims_eta_star(led, run_of(ds, bad, cfg))
    assert led["eta_star_mc"].status == "fail"

    # the trained-model claims need the full preset: judge the smoke numbers as if they were full ones
    j = list(ds["mk_dist"].values).index("anisotropic")
    planted = ds.copy(deep=True)
    excess = planted["mk_excess_seeds"].values[j]  # per training seed: the band is their spread
    shift = 50 * excess.std(ddof=1) + abs(excess.mean()) + abs(planted["mk_loss_alt"].values[j])
    planted["mk_excess_seeds"].values[j] = excess - shift
    led = Ledger(P.NAME, preset="full")
    P.claims_mahankali(led, run_of(planted, s, cfg))
    assert led["mahankali_anisotropic_loss"].status == "fail"
    assert "mahankali_anisotropic_eta_fit" not in led  # a preconditioned law has no plain rate to claim


def test_mahankali_step_claims_judge_the_fitted_step_matrix_and_rate(smoke):
    """The step-matrix claims pass at the optimal G and fail 20% away from it (issue 17's 5% band); the ReLU
    law's rate claim fails at the linear law's rate (its alternative) and passes at its own eta*."""
    s, ds, cfg = dict(smoke.scalars), smoke.data, smoke.config
    j = list(ds["mk_dist"].values).index("relu")
    eta, eta_lin = float(ds["mk_eta_star"].values[j]), float(ds["mk_eta_alt"].values[j])
    assert eta == pytest.approx(cfg.mahankali.n / (cfg.mahankali.n + 2 * cfg.mahankali.d + 3), rel=1e-12)
    assert eta_lin == pytest.approx(cfg.mahankali.n / (cfg.mahankali.n + cfg.mahankali.d + 1), rel=1e-12)
    np.testing.assert_allclose(ds["mk_gamma_star_relu"].values, eta * np.eye(cfg.mahankali.d), rtol=1e-14)

    def judged(**values):
        planted = ds.copy(deep=True)
        for name, v in values.items():  # every training seed's value (the claims take their mean)
            planted[f"{name}_seeds"].values[j] = v
        led = Ledger(P.NAME, preset="full")
        P.claims_mahankali(led, run_of(planted, s, cfg))
        return led

    led = judged(mk_gamma_rel_error=0.0, mk_eta_fit=eta)
    assert led["mahankali_relu_gamma"].status == "pass" and led["mahankali_relu_eta_fit"].status == "pass"
    led = judged(mk_gamma_rel_error=0.2, mk_eta_fit=eta_lin)
    assert led["mahankali_relu_gamma"].status == "fail" and led["mahankali_relu_eta_fit"].status == "fail"
    assert led["mahankali_relu_gamma"].alternative["value"] == pytest.approx(abs(eta_lin / eta - 1), rel=1e-12)
    planted = ds.copy(deep=True)
    e = planted["excess_over_gdpp_seeds"].values[1]  # K = 2, per training seed
    alt = float(planted["loss_gd_perstep"].values[1] - planted["loss_gdpp"].values[1])
    planted["excess_over_gdpp_seeds"].values[1] = e - (50 * e.std(ddof=1) + abs(e.mean()) + abs(alt))
    led = Ledger(P.NAME, preset="full")
    P.claims_depth(led, run_of(planted, s, cfg))
    assert led["depth_matches_gdpp"].status == "fail"
    assert led["depth_matches_gdpp"].tolerance["n"] == cfg.depth.seeds


def test_eta_claim_uses_the_seed_spread(smoke):
    """With several seeds the eta* claim's band is the 95% Student-t multiple of the seeds' SE; a mean far
    outside it fails."""
    s, cfg = dict(smoke.scalars), smoke.config
    per_seed = [n for n, v in smoke.data.data_vars.items() if "eta_seed" in v.dims]
    ds = smoke.data.drop_vars([*per_seed, "eta_seed"])
    eta = s["eta_theory"]
    seeds = [replicate_seed(cfg.seed, i) for i in range(3)]
    nk = ds.sizes["k"]
    ds = ds.assign_coords(eta_seed=seeds).assign(
        eta_fit_seeds=("eta_seed", np.array([0.99, 1.0, 1.01]) * eta),
        excess_gd_star_seeds=("eta_seed", np.zeros(3)),
        excess_model_k_seeds=(("eta_seed", "k"), np.zeros((3, nk))),
        loss_model_theory_k_seeds=(("eta_seed", "k"), np.ones((3, nk))),
    )
    led = Ledger(P.NAME, preset="full")
    P.claims_one_layer(led, run_of(ds, s, cfg))
    c = led["eta_fit_vs_eta_star"]
    assert c.tolerance["k"] == pytest.approx(t_multiple(2)) and c.tolerance["se"] == pytest.approx(0.01 * eta / 3**0.5)
    assert c.tolerance["n"] == 3 and c.tolerance["within_run"] is None
    assert c.alternative["value"] == s["eta_untuned"]
    ds = ds.assign(eta_fit_seeds=("eta_seed", np.array([1.29, 1.3, 1.31]) * eta))
    led = Ledger(P.NAME, preset="full")
    P.claims_one_layer(led, run_of(ds, s, cfg))
    assert led["eta_fit_vs_eta_star"].status == "fail"
    # one seed: no band over replicates, so the trained claims are not evaluated (not judged on one model)
    one = ds.isel(eta_seed=slice(0, 1))
    led = Ledger(P.NAME, preset="full")
    P.claims_one_layer(led, run_of(one, s, cfg))
    assert led["eta_fit_vs_eta_star"].status == "not_evaluated"
    assert led["trained_loss_vs_gd_star"].status == "not_evaluated"


def test_replicate_seeds_of_two_runs_are_disjoint():
    """Every trained part's replicate seeds: replicate 0 is the run's seed, and runs with seed 0 and seed 1
    share no replicate (seed + i would share all but one); the model and training configs carry them."""
    from probes.icl_gd import logistic as lg

    c0, c1 = P.Config(seed=0), P.Config(seed=1)
    for part in P.SEED_PARTS:
        s0, s1 = P.part_seeds(c0, part), P.part_seeds(c1, part)
        assert len(s0) == c0.value_of(f"{part}_seeds") and len(set(s0)) == len(s0), part
        assert s0[0] == 0 and s1[0] == 1 and not set(s0) & set(s1), part
    assert lg.seeds(c0) == P.part_seeds(c0, "logistic")
    for s in P.part_seeds(c1, "depth"):
        assert P.model_config(c1, 2, seed=s).seed == s and P.train_config(c1, 2, seed=s).seed == s
    for s in P.part_seeds(c1, "garg"):
        assert P.garg_model_config(c1, seed=s).seed == s and P.garg_train_config(c1, seed=s).seed == s
    with pytest.raises(ValueError, match="part"):
        P.part_seeds(c0, "nope")


def test_smoke_replicates_are_stored_per_seed(smoke):
    """Each trained part stores every replicate's value on its seed axis; replicate 0 is the model of the
    headline fields (the same numbers)."""
    ds, cfg = smoke.data, smoke.config
    for coord, part in (
        ("eta_seed", "eta"),
        ("depth_seed", "depth"),
        ("mk_seed", "mahankali"),
        ("looped_seed", "looped"),
        ("garg_seed", "garg"),
        ("lg_seed", "logistic"),
    ):
        assert list(ds[coord].values) == P.part_seeds(cfg, part), coord
    assert ds["eta_fit_seeds"].values[0] == smoke.scalars["eta_fit"]
    assert ds["excess_gd_star_seeds"].values[0] == pytest.approx(
        smoke.scalars["loss_model_excess_over_gd_star"], rel=1e-12
    )
    np.testing.assert_allclose(ds["excess_over_gdpp_seeds"].values[:, 0], ds["excess_over_gdpp"].values, rtol=1e-12)
    np.testing.assert_allclose(ds["mk_excess_seeds"].values[:, 0], ds["mk_excess"].values, rtol=1e-12)
    np.testing.assert_allclose(ds["mk_eta_fit_seeds"].values[:, 0], ds["mk_eta_fit"].values, rtol=1e-12)
    np.testing.assert_allclose(
        ds["looped_diff_gdpp_seeds"].values[:, 0], ds["looped_diff_gdpp"].values, rtol=1e-9, atol=1e-15
    )
    np.testing.assert_allclose(ds["garg_diff_best_simple_seeds"].values[:, 0], ds["garg_diff_best_simple"].values)
    assert np.isfinite(ds["mk_excess_seeds"].values).all() and np.isfinite(ds["depth_diff_prev_seeds"].values[1:]).all()


# ---------------------------------------------------------------------- looped LSA (003#50)


def _looped_model(cfg, layer, loops):
    c = P.looped_config(cfg, "gaussian")
    return P.with_loops(P.model_from_lsa_weights(c, [layer]), loops)


def test_looped_weight_vectors_are_gd_iterates():
    """The GD layer looped K times by the zoo: the weight vector read after loop k is w_k of k GD steps."""
    cfg = P.Config.preset("smoke")
    c = P.looped_config(cfg, "gaussian")
    b = th.sample_regression(32, c.d, c.n_context, "gaussian", 0.0, np.random.default_rng(2))
    eta, K = 0.3, 5
    w = P.looped_weight_vectors(_looped_model(cfg, th.gd_lsa_weights(c.d, eta, c.n_context), K), b)
    assert w.shape == (K, 32, c.d)
    for k in range(1, K + 1):
        A = th.GD(eta=eta, steps=k).linear_map(b.x_ctx).numpy()
        np.testing.assert_allclose(w[k - 1], np.einsum("bdn,bn->bd", A, b.y_ctx), rtol=1e-10, atol=1e-12)


def test_looped_weight_vectors_match_the_structured_recursion():
    """Structured weights with input writes (tied GD++ with matrix blocks) in the zoo model against
    analysis.theory.looped.looped_lsa_maps: the zoo's looping and the theory's recursion agree."""
    from analysis.theory import looped as lp

    cfg = P.Config.preset("smoke")
    c = P.looped_config(cfg, "gaussian")
    d, N, K = c.d, c.n_context, 4
    rng = np.random.default_rng(5)
    D = d + 1
    P_ = np.zeros((D, D))
    P_[:d, :d] = -0.2 / N * np.eye(d) + 0.01 * rng.standard_normal((d, d))
    P_[d, d] = -0.5 / N
    W_Q = np.zeros((D, D))
    W_Q[:d, :d] = np.eye(d) + 0.1 * rng.standard_normal((d, d))
    layer = {"W_K": np.eye(D), "W_Q": W_Q, "W_V": np.eye(D), "P": P_}
    b = th.sample_regression(32, d, N, "gaussian", 0.0, np.random.default_rng(6))
    w = P.looped_weight_vectors(_looped_model(cfg, layer, K), b)
    parts = lp.structured_parts(P.lsa_weights_from_model(_looped_model(cfg, layer, K))[0])
    maps = lp.looped_lsa_maps(b.x_ctx, parts["U_xx"], parts["u_yy"], parts["M_xx"], K)
    for k in range(K):
        np.testing.assert_allclose(w[k], np.einsum("bdn,bn->bd", maps[k], b.y_ctx), rtol=1e-9, atol=1e-12)


def test_looped_claims_at_smoke(smoke):
    led = smoke.ledger
    assert led["looped_construction_equals_gd"].status == "pass"
    for name in (
        "looped_gaussian_gd_fitted_step",
        "looped_gaussian_tied_gdpp",
        "looped_gaussian_error_falls_every_loop",
    ):
        claim = led[name]
        assert claim.seed == "003#50" and claim.status == "not_evaluated"  # trained claims need the full preset
    ds = smoke.data
    assert ds["looped_err_model"].shape == (1, smoke.config.looped.eval_loops)
    assert ds["looped_diff_gdpp_seeds"].shape == (1, smoke.config.looped.seeds, smoke.config.looped.eval_loops)
    # the paired differences are consistent with the stored means
    np.testing.assert_allclose(
        ds["looped_err_model"].values, ds["looped_err_gdpp"].values + ds["looped_diff_gdpp"].values, rtol=1e-9
    )


def test_looped_config_validation():
    with pytest.raises(ValueError, match="looped_eval_loops"):
        P.Config.preset("smoke").replace(looped_loops=3, looped_eval_loops=2)


def test_logistic_claims_at_smoke_and_on_planted_numbers(smoke):
    """000#33: the construction identity holds at smoke; the loop claims are judged from the stored result only:
    the stored cosines pass at the full preset when they are 1, and cosines equal to the uniform-attention
    alternative fail."""
    from analysis.claims.ledger import Ledger
    from probes.icl_gd import logistic as lg

    led = smoke.ledger
    assert led["lg_construction_is_normalised_gd"].status == "pass"
    assert led["lg_construction_is_normalised_gd"].seed == "000#33"
    s, ds, cfg = dict(smoke.scalars), smoke.data, smoke.config
    planted = Ledger("icl_gd", preset="smoke")
    lg.claims_classification(planted, run_of(ds, {**s, "lg_construction_ratio": 2.0}, cfg))
    assert planted["lg_construction_is_normalised_gd"].status == "fail"
    full = cfg.replace(logistic_loops=2)
    for cos, status in ((1.0, "pass"), (None, "fail")):
        d = ds.copy()
        d["lg_cos"] = (
            d["lg_cos"]
            .isel(lg_loop=slice(0, 2))
            .copy(data=np.full((ds.sizes["lg_seed"], 2), cos if cos is not None else float(ds["lg_alt_cos"][1])))
        )
        d = d.isel(lg_loop=slice(0, 2))
        judged = Ledger("icl_gd", preset="full")
        lg.claims_classification(judged, run_of(d, s, full))
        assert judged["lg_looped_tracks_gd_T2"].status == status


def test_a_diverged_looped_replicate_leaves_the_looped_claims_not_evaluated():
    """A config the validator accepts whose second looped replicate diverges (huge init and step): replicate 0
    still reads a finite step, but the seeds' expectations are undefined, so the claims are not evaluated
    (found by the property test, where it raised on a non-finite alternative)."""
    cfg = P.Config.preset(
        "smoke",
        d=1,
        n_context=1,
        train_steps=4,
        train_lr=1 / 3,
        init_std=6.468515407001071,
        k_values=(1,),
        depths=(1,),
        looped_n=1,
        looped_eval_loops=2,
        looped_steps=1,
        looped_batch_size=1,
        looped_n_eval=16,
        logistic=False,
    )
    res = P.run(cfg, progress=False)
    assert not np.isfinite(res.data["looped_err_gd_seeds"].values).all()  # the planted divergence happened
    for law in res.data["looped_law"].values.tolist():
        for name in (f"looped_{law}_gd_fitted_step", f"looped_{law}_tied_gdpp", f"looped_{law}_error_falls_every_loop"):
            c = res.ledger[name]
            assert c.status == "not_evaluated" and "diverged" in c.statement + str(c.why), name
