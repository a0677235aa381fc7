"""The associative_recall probe: its smoke claims pass, and they fail when the mechanism is broken."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import analysis.zoo.recurrent as rec
from analysis.data.tasks import AssociativeRecall
from analysis.training.train import derived_seed
from probes import associative_recall as ar
from probes.associative_recall import decay, favor, gated_rnn, linearisation, momentum, mqar, power_method, selective


@pytest.fixture(scope="module")
def smoke(smoke_result):
    return smoke_result("associative_recall")


def test_smoke_claims_pass_and_the_trained_ones_wait_for_full(smoke):
    by_status = {c.name: c.status for c in smoke.checks}
    by = {c.name: c for c in smoke.checks}
    assert all(c.status == "pass" for c in smoke.checks if c.role == "identity"), by_status
    # At the 95% band the smoke preset's FAVOR+ row-error slope over m = 16, 64, 256 is a finding, not a pass
    # (unstable or fail): it sits about -0.46 to -0.49 with 100 to 1000 row draws (2.6 to 3.3 bootstrap SE
    # above -1/2), the c/m + O(m^-2) expansion's remainder at small m. It is still far from the alternative -1.
    fails = {n for n, s in by_status.items() if s == "fail"}
    assert fails <= {"favor_row_error_slope"}, by_status
    assert all(s in ("pass", "unstable", "fail", "not_evaluated") for s in by_status.values()), by_status
    assert by_status["additive_readout_error_N8"] == "pass" and by_status["delta_overwrite_exact"] == "pass"
    assert by["favor_row_error_slope"].alternative["consistent"] is False
    assert {n for n, s in by_status.items() if s == "not_evaluated"} == {
        c.name
        for c in smoke.checks
        if c.name.startswith(
            (
                "delta_beats",
                "softmax_beats",
                "additive_collapses",
                "lsa_",
                "gated_excess",
                "gated_rnn_over",
                "selective_copy",
                "pm_",
                "momentum_",
                "decayed_memory_",
            )
        )
    }
    assert by_status["gated_rnn_equals_lsa"] == "pass" and by_status["gated_rnn_equals_gated"] == "pass"
    assert by_status["power_method_construction_exact"] == "pass"
    d = smoke.data
    assert d["readout_error_theory"].sel(kernel="delta").isnull().all()  # no closed form
    assert (d["readout_error_theory"].sel(kernel="additive") >= 0).all()
    assert d["accuracy"].dims == ("kernel", "n_pairs") and d["readout_error"].dims == ("kernel", "n_pairs")


def test_prediction_claims_fail_against_their_alternatives(smoke):
    for claim in smoke.checks:
        if claim.role == "prediction" and claim.status == "pass":
            assert claim.against_alternative().status == "fail", claim.name


def _small(**over):
    base = dict(
        training=False,
        gated=False,
        power_method=False,
        n_pairs=(4, 8),
        draws=400,
        favor_m=(16, 64),
        favor_draws=500,
        favor_row_draws=50,
    )
    return ar.Config.preset("smoke", **{**base, **over})


def test_a_broken_delta_rule_fails_the_overwrite_identity(monkeypatch):
    real = rec.recurrent_scan

    def half_step(q, k, v, *, beta=None, log_alpha=None, normalize=False):  # beta halved: no exact overwrite
        return real(q, k, v, beta=None if beta is None else beta / 2, log_alpha=log_alpha, normalize=normalize)

    monkeypatch.setattr(rec, "recurrent_scan", half_step)
    led = ar.run(_small(), progress=False).ledger
    assert led["delta_overwrite_exact"].status == "fail"
    assert led["parallel_equals_recurrent_delta_memories"].status == "fail"  # the forms now disagree
    assert led["parallel_equals_recurrent_additive_memories"].status == "pass"
    # the additive forms are linear attention and its RNN (003#64); the delta rules' parallel form is DeltaNet's
    assert led["parallel_equals_recurrent_additive_memories"].seed == "003#64"
    assert led["parallel_equals_recurrent_delta_memories"].seed == "000#66"


def test_an_additive_memory_with_a_doubled_write_fails_the_interference_prediction(monkeypatch):
    real = rec.parallel_form

    def leaky(q, k, v, *, beta=None, log_alpha=None, normalize=False):  # keys not unit: the self term is off
        return real(q, 1.1 * k, v, beta=beta, log_alpha=log_alpha, normalize=normalize)

    monkeypatch.setattr(rec, "parallel_form", leaky)
    led = ar.run(_small(kernels=("additive",)), progress=False).ledger
    assert led["additive_readout_error_N8"].status == "fail"


def test_a_biased_feature_map_fails_the_favor_variance(monkeypatch):
    real = rec.positive_random_features
    monkeypatch.setattr(favor, "positive_random_features", lambda x, proj: real(x, 1.5 * proj))
    led = ar.run(_small(kernels=("additive",)), progress=False).ledger
    assert led["favor_variance_m16"].status == "fail"


def test_config_refuses_repeats_and_too_few_keys():
    with pytest.raises(ValueError, match="^n_pairs must not repeat"):
        ar.Config(n_pairs=(4, 4))
    with pytest.raises(ValueError, match="^n_keys must be >= the largest n_pairs"):
        ar.Config(n_pairs=(4, 40), n_keys=32)
    with pytest.raises(ValueError, match="^favor_m must be strictly increasing"):
        ar.Config(favor_m=(64, 16))


def test_trained_model_is_the_declared_mixer():
    c = ar.Config.preset("smoke")
    task = AssociativeRecall(n_pairs=4)
    cfg = ar.model_config(c, "gated_delta", task, seed=0)
    assert (cfg.attention, cfg.write_rule, cfg.decay, cfg.head_size, cfg.d_mlp) == (
        "recurrent",
        "delta",
        "gated",
        16,
        0,
    )
    assert torch.is_tensor(ar.read_memory("softmax", torch.eye(3)[None].double(), torch.eye(3)[None].double()))


def test_linearisation_head_output_is_the_softmax_average_of_its_tokens():
    """The zoo head the linearisation check measures computes M sum_j softmax(a . x_j) x_j at each query row."""
    import numpy as np

    from analysis.zoo.hooks import run_with_cache

    c = _small(lin_d=4, lin_queries=3)
    model = linearisation.linearisation_head(c)
    A, M = linearisation.head_maps(model)
    xq = linearisation.linearisation_queries(c, A)
    assert np.allclose(np.linalg.norm(xq @ A.T, axis=-1), c.lin.a_norm)
    toks = np.random.default_rng(0).standard_normal((5, 4))
    x = torch.from_numpy(np.concatenate([toks, xq]))[None]
    bias = torch.zeros(8, 8, dtype=torch.float64)
    bias[:, 5:] = -float("inf")
    _, cache = run_with_cache(model, x, names=["blocks.0.hook_attn_out"], attn_bias=bias)
    s = xq @ A.T @ toks.T  # (Q, n) logits a . x_j
    w = np.exp(s - s.max(-1, keepdims=True))
    want = (w / w.sum(-1, keepdims=True)) @ toks @ M.T
    assert np.allclose(cache["blocks.0.hook_attn_out"][0, 5:].numpy(), want, rtol=0, atol=1e-13)


def test_uniform_attention_fails_the_linearisation_claims(monkeypatch):
    """A head that averages its tokens uniformly tends to 0, not to W_o W_v a: both claims fail."""
    real = linearisation.linearisation_head
    monkeypatch.setattr(linearisation, "linearisation_head", lambda c: _uniform(real(c)))
    led = ar.run(_small(lin_ns=(256, 512), lin_reps=16), progress=False).ledger
    assert led["linearisation_mse_constant"].status == "fail"
    assert led["linearisation_rms_slope"].status == "fail"


def _uniform(model):
    from analysis.zoo.model import TinyTransformer

    uni = TinyTransformer(model.config.replace(attention="uniform")).eval()
    uni.load_state_dict(model.state_dict())
    return uni


def test_zero_logit_vector_makes_the_constant_claim_inconclusive():
    """At a = 0 softmax is the plain average: the theory constant equals the alternative's, so the claim
    cannot tell the hypotheses apart and says so."""
    led = ar.run(_small(lin_ns=(256, 512), lin_reps=16, lin_a_norm=0.0), progress=False).ledger
    claim = led["linearisation_mse_constant"]
    assert claim.alternative["value"] == pytest.approx(claim.expected)
    # the verdict is inconclusive; with 16 token sets it may sit near the band's edge (then "unstable")
    assert claim.stability["verdict"] == "inconclusive" and claim.status in ("inconclusive", "unstable")


def test_gated_rnn_items_record_losses_theory_and_accuracies(smoke):
    from analysis.theory import gated_recurrence as gth
    from analysis.theory import icl_gd

    c, s, d = smoke.config, smoke.scalars, smoke.data
    assert s["gr_loss_star"] == icl_gd.one_step_gd_theory(c.gated.d, c.gated.n, "gaussian", c.gated.noise)["loss_star"]
    assert s["gr_linear_loss"] == gth.linear_predictor_loss(c.gated.d, c.gated.noise) > s["gr_loss_star"]
    assert d["gr_loss"].dims == ("gr_model", "gr_seed") and (d["gr_loss"] > 0).all()
    assert s["gr_ratio"] == pytest.approx(
        float(d["gr_loss"].sel(gr_model="gated").mean() / d["gr_loss"].sel(gr_model="lsa").mean())
    )
    assert 0 < s["gr_mean_gate"] < 1
    assert (
        d["sc_accuracy"].dims == ("sc_decay", "spacing") and ((d["sc_accuracy"] >= 0) & (d["sc_accuracy"] <= 1)).all()
    )
    assert s["sc_tap_fixed"] == 1.0 and s["sc_chance"] < s["sc_tap_random"] < 1.0


def test_a_gated_rnn_missing_its_output_gate_fails_the_construction_identities(monkeypatch):
    from analysis.theory import gated_recurrence as gth

    real = gth.lsa_as_gated_rnn

    def no_query_gate(*args, **kwargs):  # C = q rows replaced by ones: the read-out ignores the query
        w = real(*args, **kwargs)
        return {**w, "C": torch.ones_like(w["C"])}

    monkeypatch.setattr(gth, "lsa_as_gated_rnn", no_query_gate)
    cfg = _small(gated=True, gated_steps=5, gated_seeds=2, gated_eval=64, copying_steps=2, copying_eval=8)
    led = ar.run(cfg, progress=False).ledger
    assert led["gated_rnn_equals_lsa"].status == "fail" and led["gated_rnn_equals_gated"].status == "fail"


def test_odd_selective_copy_width_is_refused_by_the_config():
    with pytest.raises(ValueError, match="^copying_d_model must be even"):
        ar.Config.preset("smoke", copying_d_model=5)


# ------------------------------------------------------------------------------------------------ item 8


def _pm(**over):
    return _small(
        **{"power_method": True, "power_steps": 3, "power_eval": 64, "power_eval_loops": 4, "power_seeds": 1, **over}
    )


def test_power_method_items_record_the_power_method_and_the_trained_layers(smoke):
    from analysis.theory import power_method as pmt

    c, s, d = smoke.config, smoke.scalars, smoke.data
    assert d["pm_tan"].dims == ("pm_model", "pm_seed", "pm_loop")
    assert list(d["pm_model"].values) == ["power", "ln", "none"] and d.sizes["pm_loop"] == c.power.eval_loops + 1
    # the expected values are the power method's, recomputed here from the same prompts
    x, v0 = ar.pm_task(c).law.sample(c.power.eval, np.random.default_rng(derived_seed(c.seed, "pm_eval")))
    tan = pmt.tan_angle(pmt.power_iterates(x, v0, c.power.eval_loops), pmt.target(x, v0)[None])
    assert s["pm_rate_power"] == pytest.approx(float(np.median(pmt.per_loop_rate(tan, 1, c.power.eval_loops))))
    assert s["pm_tan1_power"] == pytest.approx(float(np.median(tan[1])))
    np.testing.assert_allclose(d["pm_tan"].sel(pm_model="power", pm_seed=0).values, np.median(tan, -1))
    assert s["pm_rate_power"] < s["pm_gap_median"] < 1  # the finite-loop geometric mean is below the limit
    assert s["pm_bound_max_ratio"] <= 1 + 1e-9  # tan theta_t <= (l_2/l_1)^t tan theta_0 on every prompt
    for kind in ("ln", "none"):
        assert np.isfinite(s[f"pm_err_T_{kind}"]) and s[f"pm_rate_{kind}_se"] > 0


def test_trained_power_method_claims_are_wired_to_theory_and_alternatives():
    from analysis.claims.ledger import Ledger

    r = ar.run(_pm(), progress=False)
    led = Ledger("associative_recall", preset="full")  # evaluate the full-only claims on the small run's numbers
    power_method.claim_power_method(led, r)
    by = {c.name: c for c in led.claims}
    s = r.scalars
    assert by["pm_ln_rate_is_power_method"].expected == pytest.approx(s["pm_rate_power"])
    assert by["pm_ln_first_loop_is_power_step"].expected == pytest.approx(s["pm_tan1_power"])
    assert by["pm_ln_error_at_T_is_power_method"].expected == pytest.approx(s["pm_err_T_power"])
    assert by["pm_ln_error_at_T_is_power_method"].alternative["value"] == pytest.approx(s["pm_err_T_none"])
    assert by["pm_no_ln_error_above_power"].measured == pytest.approx(s["pm_err_T_none_minus_power"])
    assert all(c.seed == "000#45" for c in by.values())


def test_a_construction_without_the_self_cancellation_fails_the_power_method_identity(monkeypatch):
    from analysis.theory import power_method as pmt

    real = pmt.construction_weights

    def no_cancel(d, n, radius):  # the query no longer attends to itself: v <- N(v + S v), not N(S v)
        W = real(d, n, radius)
        W["W_k"][d : 2 * d, d : 2 * d] = 0.0
        return W

    monkeypatch.setattr(pmt, "construction_weights", no_cancel)
    led = ar.run(_pm(power_steps=1), progress=False).ledger
    assert led["power_method_construction_exact"].status == "fail"


def test_config_refuses_too_few_eval_loops_and_a_radius_below_the_spectrum():
    with pytest.raises(ValueError, match="^power_eval_loops"):
        ar.Config.preset("smoke", power_loops=4, power_eval_loops=3)
    with pytest.raises(ValueError, match="^power_radius"):
        ar.Config.preset("smoke", power_d=8, power_rho=0.9, power_radius=1.0)


# ------------------------------------------------------------------------------------------------ replicates


def test_runs_with_seeds_0_and_1_share_no_replicate_seed():
    """Replicate i of a trained item uses replicate_seed(seed, i): seed 0 keeps its first model, and runs with
    seeds 0 and 1 (which used to share all but one of seed + i) share none."""
    from analysis.claims.evidence import replicate_seeds

    parts = ("mqar", "gated", "copying", "power")
    runs = [ar.Config(seed=seed) for seed in (0, 1)]
    seeds = [{s for part in parts for s in ar.part_seeds(c, part)} for c in runs]
    assert not seeds[0] & seeds[1]
    for c in runs:
        assert ar.part_seeds(c, "mqar") == replicate_seeds(c.seed, c.train.seeds)
        assert all(ar.part_seeds(c, part)[0] == c.seed for part in parts)
    assert len(ar.part_seeds(runs[0], "mqar")) == runs[0].train.seeds
    with pytest.raises(ValueError, match="^part must be one of"):
        ar.part_seeds(runs[0], "memories")


def test_trained_items_train_their_replicate_seeds(monkeypatch, patch_in_package):
    """Every trained model (MQAR, items 6-8) is built and trained with a seed of its item's part_seeds."""
    real_one, real_train, got = mqar.train_one, mqar.train, {"trained": [], "other": []}

    def one(config, kernel, n, seed, progress):
        got["trained"].append(seed)
        return real_one(config, kernel, n, seed, progress)

    def train(model_cfg, task, tc, **kw):
        assert model_cfg.seed == tc.seed
        got["other"].append(tc.seed)
        return real_train(model_cfg, task, tc, **kw)

    monkeypatch.setattr(mqar, "train_one", one)
    patch_in_package(ar, "train", train)  # every part that trains, through its own name
    c = _small_trained(kernels=("additive",), n_pairs=(4,), gated_seeds=2, seed=3)
    ar.run(c, progress=False)
    assert got["trained"] == ar.part_seeds(c, "mqar")
    assert set(got["other"]) == {s for part in ("mqar", "gated", "copying", "power") for s in ar.part_seeds(c, part)}
    assert len(got["other"]) == c.train.seeds + 2 * c.gated.seeds + 4 * c.copying.seeds + 2 * c.power.seeds


def _small_trained(**kw):
    """A small run of every trained item (two seeds each unless ``kw`` says otherwise)."""
    base = dict(training=True, train_steps=2, train_seeds=2, gated=True, gated_steps=2, gated_seeds=2, gated_eval=64)
    base |= dict(copying_steps=1, copying_seeds=2, copying_eval=8, power_method=True, power_steps=1, power_seeds=2)
    base |= dict(power_eval=32, power_eval_loops=4)
    return _small(**(base | kw))


def test_claims_take_the_one_band_policy(smoke):
    """Monte Carlo checks without trained weights carry a within-run SE (saying why); every trained claim's
    band is the 95% t band over its replicate seeds."""
    from analysis.claims.evidence import COVERAGE, t_multiple
    from analysis.claims.ledger import Ledger

    by = {c.name: c for c in smoke.checks}
    for name in ("additive_readout_error_N8", "favor_variance_m16", "favor_row_error_slope", "linearisation_rms_slope"):
        tol = by[name].tolerance
        assert tol["policy"] == "t95" and tol["coverage"] == COVERAGE and tol["within_run"], name
    assert by["additive_readout_error_N8"].tolerance["dof"] == smoke.config.draws - 1
    # the trained claims, evaluated on a small run with two seeds per item
    c = _small_trained(kernels=("additive", "delta"), n_pairs=(4, 16), gated_seeds=3)
    r = ar.run(c, progress=False)
    led = Ledger("associative_recall", preset="full")
    for claim in (
        mqar.claim_trained,
        gated_rnn.claim_gated_rnn,
        selective.claim_selective,
        power_method.claim_power_method,
    ):
        claim(led, r)
    trained = [x for x in led.claims if x.role == "prediction"]
    assert {x.name for x in trained} >= {"delta_beats_additive_N4", "additive_collapses_past_d_key"}
    seeds = {"gr": c.gated.seeds, "pm": c.power.seeds}
    for x in trained:
        tol = x.tolerance
        n = seeds["gr"] if x.figure == "ar_gated_rnn" else seeds["pm"] if x.figure == "ar_power_method" else 2
        assert tol["policy"] == "t95" and tol["within_run"] is None and tol["dof"] == n - 1, x.name
        if np.isfinite(tol["k"]):  # a sequential design's band is at its per-look coverage
            assert tol["k"] == pytest.approx(t_multiple(n - 1, tol.get("coverage_per_look", COVERAGE)))
    d = r.data["accuracy_seed"]
    want = d.sel(kernel="delta", n_pairs=4) - d.sel(kernel="additive", n_pairs=4)
    assert led["delta_beats_additive_N4"].measured == pytest.approx(float(want.mean()))
    assert led["gated_rnn_over_lsa_loss"].triage["regime"] == [
        "lsa_excess_over_gd_optimum",
        "gated_excess_over_gd_optimum",
    ]


def test_momentum_claims_pass_at_full_size_and_fail_on_the_first_order_picture():
    """Item 9 at the full preset's momentum fields: both regimes follow the exact recurrence; a memory whose mean
    overlap is the first-order picture's (momentum as a larger step) fails both."""
    import dataclasses

    from analysis.claims.ledger import Ledger

    full = ar.Config.preset("full")
    c = _small(**{f: full.value_of(f) for f in momentum.FIELDS})
    r = ar.run(c, progress=False)
    led = Ledger("associative_recall", preset="full")
    momentum.claims(led, (r,))
    for name in [f"momentum_overlap_{regime}" for regime in momentum.REGIMES] + ["momentum_square_error_oscillating"]:
        claim = led[name]
        assert claim.status == "pass", (claim.name, claim.measured, claim.expected, claim.tolerance)
        assert claim.tolerance["n"] == c.momentum.seeds
    t = momentum.check_step(c)
    theory = r.data["momentum_overlap_theory"].values
    assert theory[0, t[0]] < 0 < r.data["momentum_overlap_first_order"].values[0, t[0]]  # the trough is an overshoot
    data = r.data.copy(deep=True)
    spread = np.linspace(0.999, 1.001, c.momentum.seeds)
    data["momentum_overlap"].values[:] = data["momentum_overlap_first_order"].values[..., None] * spread
    # the mean-field picture of the squared error: |E_t|^2 = r_t^2 |E_0|^2
    data["momentum_square_error"].values[:] = data["momentum_overlap_theory"].values[..., None] ** 2 * spread
    led = Ledger("associative_recall", preset="full")
    momentum.claims(led, (dataclasses.replace(r, data=data),))
    assert {led[f"momentum_overlap_{x}"].status for x in momentum.REGIMES} == {"fail"}
    assert led["momentum_square_error_oscillating"].status == "fail"


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"momentum_mus": (0.5, 0.5)}, r"momentum_mus\[0\] must give complex roots"),
        ({"momentum_mus": (0.9, 0.9)}, r"momentum_mus\[1\] must give real roots"),
        ({"momentum_beta": 0.0}, "momentum_beta"),
    ],
)
def test_momentum_config_refuses_regimes_that_do_not_hold(over, match):
    with pytest.raises(ValueError, match=match):
        ar.Config.preset("full", **over)


def test_decay_claims_pass_at_full_size_and_fail_without_the_decay():
    """Item 10 at the full preset's decay fields: the decayed memories follow their exact law; memories read as if
    undecayed ((N - 1)/d_k) fail both claims."""
    import dataclasses

    from analysis.claims.ledger import Ledger
    from analysis.theory import associative_recall as th

    full = ar.Config.preset("full")
    c = _small(**{f: full.value_of(f) for f in decay.FIELDS})
    r = ar.run(c, progress=False)
    led = Ledger("associative_recall", preset="full")
    decay.claims(led, (r,))
    for name in ("decayed_memory_readout_error", "decayed_memory_error_bounded_in_n"):
        claim = led[name]
        assert claim.status == "pass", (claim.name, claim.measured, claim.expected, claim.tolerance)
        assert claim.tolerance["n"] == c.decay.seeds and claim.seed == "003#2"
    data = r.data.copy(deep=True)
    ns = np.asarray(c.decay.pairs, dtype=np.float64)
    spread = np.linspace(0.999, 1.001, c.decay.seeds)
    data["decay_error"].values[:] = th.additive_readout_error(ns, c.decay.key)[:, None] * spread
    led = Ledger("associative_recall", preset="full")
    decay.claims(led, (dataclasses.replace(r, data=data),))
    assert led["decayed_memory_readout_error"].status == "fail"
    assert led["decayed_memory_error_bounded_in_n"].status == "fail"


def test_decayed_memory_is_the_mixers_scan_with_a_fixed_decay():
    """The part's memory is sum_i gamma^(N-i) v_i k_i^T (the mixer's recurrent scan), read with each key."""
    g = torch.Generator().manual_seed(4)
    keys, vals = torch.randn(3, 7, 5, generator=g, dtype=torch.float64), torch.randn(3, 7, 5, generator=g).double()
    gamma = 0.8
    weights = gamma ** torch.arange(6, -1, -1, dtype=torch.float64)
    S = torch.einsum("rn,rnv,rnk->rvk", weights.expand(3, 7), vals, keys)
    torch.testing.assert_close(decay.decayed_readout(keys, vals, gamma), keys @ S.transpose(-1, -2))


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"decay_pairs": (64, 16)}, "decay_pairs must be strictly increasing"),
        ({"decay_pairs": (64,)}, "decay_pairs must have at least 2"),
        ({"decay_pairs": (1, 16)}, r"decay_pairs\[0\] must be >= 2"),
        ({"decay_gamma": 1.0}, "decay_gamma"),
        ({"decay_key": 1}, "decay_key"),
    ],
)
def test_decay_config_refuses_bad_values(over, match):
    with pytest.raises(ValueError, match=match):
        ar.Config.preset("full", **over)
