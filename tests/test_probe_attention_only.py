"""The attention_only probe: its smoke claims pass, and they fail when the mechanism is broken."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.claims.evidence import replicate_seeds
from analysis.theory import attention_only as th
from probes import attention_only as ao


@pytest.fixture(scope="module")
def smoke(smoke_result):
    return smoke_result("attention_only")


def test_smoke_identities_pass_and_the_trained_claims_wait_for_full(smoke):
    by_status = {c.name: c.status for c in smoke.checks}
    assert all(s in ("pass", "not_evaluated") for s in by_status.values()), by_status
    for name in (
        "conv_by_attention_exact",
        "kv_shift_construction_solves_induction",
        "kv_shift_off_is_plain_attention",
        "nn_full_head_construction_exact",
        "san_param_count_formula",
        "san_matched_params_residual",
        "qk_norm_logit_bound_attained",
    ):
        assert by_status[name] == "pass", name
    assert {c.name for c in smoke.checks if c.status == "not_evaluated"} == {
        c.name for c in smoke.checks if c.role != "identity"
    }
    assert {c.seed for c in smoke.checks} == {"004#89", "004#24", "004#72", "004#1"}
    d = smoke.data
    np.testing.assert_allclose(d["rank_bound"].values[-1], 0.0, atol=1e-15)
    assert (np.diff(d["rank_bound"].values) <= 0).all()
    assert d["accuracy_seed"].dims == ("model", "ind_seed") and list(d["model"].values) == list(ao.MODELS)


def test_the_constructed_kv_shift_model_needs_its_shift(smoke):
    assert smoke.scalars["constructed_induction"] == 1.0
    assert smoke.scalars["constructed_induction_no_shift"] <= smoke.scalars["bag_ceiling"] + 0.05


def _small(**over):
    return ao.Config.preset("smoke", training=False, **over)


def test_a_construction_reading_the_wrong_offset_fails_the_identity(monkeypatch):
    real = th.construction

    def off_by_one(kernel):
        bias, w_o = real(kernel)
        return np.roll(bias, 1, axis=1), w_o  # head h reads offset h + 1

    monkeypatch.setattr(th, "construction", off_by_one)
    led = ao.run(_small(), progress=False).ledger
    assert led["conv_by_attention_exact"].status == "fail"


def test_a_kv_shift_switched_off_fails_the_induction_construction(monkeypatch):
    real = th.kv_shift_induction_weights

    def no_shift(vocab, scale):
        w = real(vocab, scale)
        w["shift_k"] = np.array([[1.0, 0.0]])  # keys carry the current token: plain attention
        return w

    monkeypatch.setattr(th, "kv_shift_induction_weights", no_shift)
    led = ao.run(_small(), progress=False).ledger
    assert led["kv_shift_construction_solves_induction"].status == "fail"


def test_trained_claims_judge_their_numbers(smoke):
    """The claims on trained models, fed chosen numbers: a bound broken below the Eckart-Young value fails, and
    one KV-shift layer at the vanilla level (per seed) fails its prediction and its direction."""
    r = smoke
    r = ao.Result(r.probe, r.config.replace(preset_name="full"), r.data.copy(deep=True), dict(r.scalars))
    r.data["rel_mse_min_row_seed"][0] = 0.5 * r.data["rank_bound"].values[0]
    acc = r.data["accuracy_seed"]
    S = acc.sizes["ind_seed"]
    assert S >= 2  # the smoke preset has replicates: the bands below are t bands over seeds
    vanilla = acc.sel(model="vanilla_1").values
    acc.loc[{"model": "kv_shift_1"}] = vanilla + np.linspace(-1e-3, 1e-3, S)  # the vanilla level, a little spread
    led = ao.check_claims(r)
    assert led["conv_heads1_rel_mse_above_rank_bound"].status == "fail"
    assert led["kv_shift_1_solves_induction"].status == "fail"
    beats = led["kv_shift_1_beats_vanilla_1"]
    assert beats.status in ("fail", "inconclusive")
    assert beats.tolerance["policy"] == "t95" and beats.tolerance["n"] == S
    diff = acc.sel(model="kv_shift_1").values - vanilla
    assert beats.tolerance["se"] == pytest.approx(diff.std(ddof=1) / np.sqrt(S), rel=1e-12)

    # well above the vanilla level in every seed: the direction passes with its t band over the seeds
    acc.loc[{"model": "kv_shift_1"}] = np.clip(vanilla + 0.5, 0, 1) + np.linspace(0.0, 1e-2, S)
    assert ao.check_claims(r)["kv_shift_1_beats_vanilla_1"].status == "pass"


class _FakeTrain:
    """Stands in for :func:`analysis.training.train.train`: records each model's seed and returns its untrained
    weights."""

    def __init__(self, steps: int):
        self.steps, self.seeds = steps, []

    def __call__(self, model_config, task, tc, progress=False, snapshots=(), callback=None, callback_id=None):
        assert model_config.seed == tc.seed  # weights and data of one replicate come from one seed
        self.seeds.append(model_config.seed)
        model = ao.TinyTransformer(model_config)
        history = {k: np.ones(self.steps) for k in ("loss", "max_logit", "bound_ratio", "qk_bound", "eval_loss")}
        return type("Fake", (), {"model": model, "history": history, "snapshot_model": lambda self, step: model})()


def test_runs_with_seeds_0_and_1_share_no_replicate(patch_in_package):
    """Replicate i of a run uses replicate_seed(seed, i): seed 0's replicates and seed 1's are disjoint (they used
    to be seed + i, sharing all but one), and replicate 0 keeps the run's seed."""
    used = {}
    for seed in (0, 1):
        fake = _FakeTrain(ao.Config.preset("smoke").deep.steps)
        patch_in_package(
            ao, "train", fake
        )  # every part that trains calls analysis.training.train.train by its own name
        cfg = ao.Config.preset("smoke", seed=seed)
        ao.run(cfg, progress=False)
        n = max(cfg.train_seeds, cfg.neighbour.seeds, cfg.matched.seeds, cfg.deep.seeds)
        assert set(fake.seeds) == set(replicate_seeds(seed, n)), fake.seeds
        assert seed in fake.seeds and len(set(fake.seeds)) == n >= 2
        used[seed] = set(fake.seeds)
    assert not used[0] & used[1]
    many = [set(replicate_seeds(s, 5)) for s in (0, 1, 2)]
    assert not (many[0] & many[1] or many[0] & many[2] or many[1] & many[2])


def test_a_permuted_query_map_fails_the_nearest_neighbour_construction(monkeypatch):
    real = th.nn_construction

    def rotated(d, beta):
        w = real(d, beta)
        w["W_q"] = np.roll(w["W_q"], 1, axis=0)  # the query's coordinates permuted: the wrong neighbour
        return w

    monkeypatch.setattr(th, "nn_construction", rotated)
    led = ao.run(_small(), progress=False).ledger
    assert led["nn_full_head_construction_exact"].status == "fail"


def test_nearest_neighbour_claims_judge_their_numbers(smoke):
    """Fed chosen numbers: a full head at the query-free error fails the threshold and its learned-scale
    prediction; low-rank heads below their additive floor break the bound and, at the full head's level, are not
    3x worse; a second layer that closes the whole gap passes. Every seed gets a little spread: the bands are t
    bands over the seeds."""
    r = ao.Result(
        smoke.probe, smoke.config.replace(preset_name="full"), smoke.data.copy(deep=True), dict(smoke.scalars)
    )
    r.scalars.update(nn_construction_at_beta_eff=0.05, nn_construction_at_beta_eff_se=0.001)
    mse = r.data["nn_rel_mse_seed"].copy()
    S = mse.sizes["nn_seed"]
    assert S >= 2
    jitter = np.linspace(-1e-3, 1e-3, S)
    set_ = lambda name, v: mse.loc[{"nn_model": name}].__setitem__(Ellipsis, v + jitter)  # noqa: E731
    set_("full_1x", r.scalars["nn_query_free_long"])
    set_("quarter_4x", 0.5 * r.scalars["nn_floor_quarter"])
    set_("rank1_dx", r.scalars["nn_query_free_long"])
    set_("short_full_1x", 1e-3)
    set_("short_rank1_dx", r.scalars["nn_query_free_short"])
    set_("short_rank1_dx_2layers", 1e-3)
    r.data["nn_rel_mse_seed"] = mse
    led = ao.check_claims(r)
    assert led["nn_full_head_reaches_threshold"].status == "fail"
    assert led["nn_full_head_at_its_learned_scale"].status == "fail"
    assert led["nn_quarter_4x_above_additive_floor"].status == "fail"
    assert led["nn_rank1_dx_3x_worse"].status in ("fail", "inconclusive")
    assert led["nn_short_two_rank1_layers_close_half_gap"].status == "pass"
    scale = led["nn_full_head_at_its_learned_scale"].tolerance  # seeds' SE (hypot) the theory's MC SE, dof S - 1
    assert scale["dof"] == S - 1 and scale["se"] == pytest.approx(np.hypot(jitter.std(ddof=1) / np.sqrt(S), 0.001))
    assert all(led[n].tolerance["n"] == S for n in ("nn_rank1_dx_3x_worse", "nn_short_two_rank1_layers_close_half_gap"))


def test_learned_scale_reads_beta_from_the_construction():
    cfg = ao.Config.preset("smoke")
    model = ao.TinyTransformer(ao.nn_model_config(cfg, "full_1x", dtype="float64"))
    d = cfg.neighbour.d
    attn = model.blocks[0].attn
    import torch

    with torch.no_grad():
        attn.W_q.weight.copy_(torch.from_numpy(7.0 * np.hstack([np.zeros((d, d)), np.eye(d)])))
        attn.W_k.weight.copy_(torch.from_numpy(np.hstack([np.eye(d), np.zeros((d, d))])))
    beta, aniso = ao.learned_scale(cfg, model)
    assert beta == pytest.approx(7.0, rel=1e-14) and aniso == pytest.approx(0.0, abs=1e-14)


def test_pattern_floor_is_zero_for_one_hot_patterns_and_the_rank_bound_for_one_offset():
    kernel = ao.Config().conv_task().kernel
    bias, _ = th.construction(kernel)
    assert ao.pattern_floor(bias, kernel, 16) == pytest.approx(0.0, abs=1e-24)
    one = np.full((1, 5), -np.inf)
    one[0, 0] = 0.0  # a single head on offset 0: only tap 0 can be fitted
    taps = (kernel**2).sum(axis=(1, 2))
    assert ao.pattern_floor(one, kernel, 16) == pytest.approx(1 - taps[0] / taps.sum(), rel=1e-12)


def test_config_refuses_short_sequences_and_small_vocabularies():
    with pytest.raises(ValueError, match="^seq_len must be >= 2 segment"):
        ao.Config(seq_len=16, segment=8)
    with pytest.raises(ValueError, match="^vocab_size must be >= seq_len - segment"):
        ao.Config(vocab_size=8)
    with pytest.raises(ValueError, match="^conv_len must be >= taps"):
        ao.Config(conv_len=3, taps=4)
    with pytest.raises(ValueError, match="^neighbour_d must be a multiple of 4"):
        ao.Config(neighbour_d=6)


# ============================================================================================== attention-only networks


def test_stable_rank_is_numpys_frobenius_over_spectral_norm_squared():
    rng = np.random.default_rng(0)
    for shape in ((5, 3), (3, 5), (4, 4), (2, 3, 6, 4)):
        a = rng.standard_normal(shape)
        want = np.linalg.norm(a, "fro", axis=(-2, -1)) ** 2 / np.linalg.norm(a, 2, axis=(-2, -1)) ** 2
        np.testing.assert_allclose(ao.stable_rank(a), want, rtol=1e-12)
    u, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    v, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    s = np.array([3.0, 2.0, 1.0, 0.5])
    a = u[:, :4] @ np.diag(s) @ v.T
    assert ao.stable_rank(a) == pytest.approx((s**2).sum() / 9.0, rel=1e-12)
    assert ao.stable_rank(np.outer([1.0, 2.0], [3.0, 4.0, 5.0])) == pytest.approx(1.0, rel=1e-12)
    with pytest.raises(ValueError, match="^stable_rank needs matrices"):
        ao.stable_rank(np.ones(3))
    with pytest.raises(ValueError, match="zero matrix"):
        ao.stable_rank(np.zeros((2, 2)))
    diverged = rng.standard_normal((3, 4, 4))
    diverged[1, 2, 0] = np.nan
    got = ao.stable_rank(diverged)
    assert np.isnan(got[1]) and np.isfinite(got[[0, 2]]).all()


def test_loss_spikes_finds_planted_jumps_and_divergence_but_not_noise_or_trend():
    rng = np.random.default_rng(1)
    steps = np.arange(600)
    loss = 5.0 * np.exp(-steps / 150) + 2.0 + 0.1 * rng.standard_normal(steps.size)  # trend + batch noise
    assert not ao.loss_spikes(loss, 20, 6.0).any()
    planted = [100, 250, 251, 400]
    spiky = loss.copy()
    spiky[planted] += 2.0
    assert np.flatnonzero(ao.loss_spikes(spiky, 20, 6.0)).tolist() == planted
    spiky[500:] = np.nan  # divergence: every non-finite update is a spike
    assert np.flatnonzero(ao.loss_spikes(spiky, 20, 6.0)).tolist() == planted + list(range(500, 600))
    flat = np.full(50, 3.0)  # zero MAD: anything above the median is a spike, equal values are not
    flat[30] = 3.0 + 1e-9
    assert np.flatnonzero(ao.loss_spikes(flat, 10, 6.0)).tolist() == [30]
    with pytest.raises(ValueError, match="^window must be"):
        ao.loss_spikes(loss, 1, 6.0)
    with pytest.raises(ValueError, match="^k must be"):
        ao.loss_spikes(loss, 20, 0.0)
    with pytest.raises(ValueError, match="^loss must be one-dimensional"):
        ao.loss_spikes(loss.reshape(2, -1), 20, 6.0)


def test_second_half_change_reads_the_middle_and_last_checkpoints():
    sr = np.ones((2, 5, 3))  # (seed, checkpoint 0..4, layer)
    sr[0, 2], sr[0, 4] = 2.0, 3.0  # +50% in every layer
    sr[1, 2], sr[1, 4] = [4.0, 4.0, np.nan], [2.0, 3.0, np.nan]  # -50% and -25%; a padded layer
    np.testing.assert_allclose(ao.second_half_change(sr), [0.5, -0.375])


def test_config_refuses_odd_head_sizes_and_odd_snapshot_counts():
    with pytest.raises(ValueError, match="^deep_d_model / deep_n_heads must be an even integer"):
        ao.Config(deep_d_model=30, deep_n_heads=4)
    with pytest.raises(ValueError, match="^matched_d_model / matched_n_heads must be an even integer"):
        ao.Config(matched_d_model=6, matched_n_heads=2)
    with pytest.raises(ValueError, match="^matched_snapshots must be even"):
        ao.Config(matched_snapshots=3)


def test_a_miscounted_block_fails_the_parameter_identities(monkeypatch):
    real = th.block_params

    monkeypatch.setattr(th, "block_params", lambda *a, **k: real(*a, **k) + 1)  # one parameter too many per block
    led = ao.run(_small(), progress=False).ledger
    assert led["san_param_count_formula"].status == "fail"
    assert led["san_matched_params_residual"].status == "fail"


def test_a_bound_without_the_gains_fails_the_qk_norm_identity(monkeypatch):
    real = th.qk_norm_logit_bound
    monkeypatch.setattr(th, "qk_norm_logit_bound", lambda wq, wk, *a, **k: real(wq * 0 + 1, wk * 0 + 1, *a, **k))
    led = ao.run(_small(), progress=False).ledger
    assert led["qk_norm_logit_bound_attained"].status == "fail"


def _full(smoke):
    return ao.Result(
        smoke.probe, smoke.config.replace(preset_name="full"), smoke.data.copy(deep=True), dict(smoke.scalars)
    )


def test_attention_only_network_claims_judge_their_numbers(smoke):
    """Fed chosen numbers: the seed's picture passes every claim; the opposite picture fails them."""
    r = _full(smoke)
    d = r.data
    S, D = d.sizes["san_seed"], d.sizes["deep_seed"]
    spread = np.linspace(-1e-3, 1e-3, S)
    d["san_loss"].loc[{"san_model": "standard"}] = 2.0 + spread
    d["san_loss"].loc[{"san_model": "attention_only"}] = 2.0 + spread[::-1] * 0.5
    d["san_loss"].loc[{"san_model": "mlp_deleted"}] = 2.4 + spread
    ramp = np.linspace(1.0, 3.0, d.sizes["deep_step"])
    d["deep_max_logit"].loc[{"qk_norm": False}] = ramp * (1 + 0.01 * np.arange(D))[:, None]
    d["deep_max_logit"].loc[{"qk_norm": True}] = 1.0 + 0.001 * np.arange(D)[:, None]
    d["deep_bound_ratio"].loc[{"qk_norm": True}] = 0.9
    spikes = np.zeros(d["deep_spike"].shape, dtype=bool)
    spikes[0, :, -1] = True  # every run without QK-norm spikes, none with it
    d["deep_spike"].values[:] = spikes
    d["deep_eval_loss"].values[:] = [3.0 + 0.01 * np.arange(D), 2.5 + 0.02 * np.arange(D)]
    sr = np.ones(d["san_sr_o"].shape)  # (model, seed, checkpoint, layer)
    mid = (sr.shape[2] - 1) // 2
    sr[1, :, -1] = 1.5 + 0.01 * np.arange(S)[:, None]  # attention-only W_O still grows by ~50%
    sr[1, :, mid] = 1.0
    d["san_sr_o"].values[:] = sr
    d["san_sr_qk"].values[:] = 1.0 + 0.001 * np.arange(S)[None, :, None, None]  # QK settled
    led = ao.check_claims(r)
    names = [
        "san_matched_params_gap_zero",
        "san_matched_params_gap_within_seed_range",
        "san_mlp_deletion_in_place_costs",
        "deep_qknorm_max_logit_below_bound",
        "deep_no_qknorm_max_logit_grows",
        "deep_max_logit_grows_more_without_qknorm",
        "deep_no_qknorm_loss_spikes",
        "deep_qknorm_no_loss_spikes",
        "deep_qknorm_reaches_lower_loss",
        "sr_wo_still_grows",
        "sr_qk_settles_before_wo",
        "sr_wo_accumulates_more_without_mlp",
    ]
    assert {n: led[n].status for n in names} == dict.fromkeys(names, "pass")
    assert all(led[n].seed == "004#1" for n in names)
    for n in ("san_matched_params_gap_zero", "san_mlp_deletion_in_place_costs", "sr_wo_still_grows"):
        assert led[n].tolerance["policy"] == "t95" and led[n].tolerance["n"] == S, n
    for n in ("deep_no_qknorm_max_logit_grows", "deep_qknorm_reaches_lower_loss"):
        assert led[n].tolerance["n"] == D, n

    # the opposite: the attention-only model as bad as the MLP-deleted one, a logit above the bound, no spikes
    # without QK-norm, and W_O frozen while QK moves
    d["san_loss"].loc[{"san_model": "attention_only"}] = 2.4 + spread
    d["deep_bound_ratio"].loc[{"qk_norm": True}] = 1.2
    d["deep_spike"].values[:] = False
    d["san_sr_o"].values[:] = 1.0 + 0.001 * np.arange(S)[None, :, None, None]
    qk = np.ones(d["san_sr_qk"].shape)
    qk[:, :, -1] = 0.5 + 0.01 * np.arange(S)[:, None]
    d["san_sr_qk"].values[:] = qk
    led = ao.check_claims(r)
    for n in (
        "san_matched_params_gap_zero",
        "san_matched_params_gap_within_seed_range",
        "deep_qknorm_max_logit_below_bound",
        "deep_no_qknorm_loss_spikes",
        "sr_qk_settles_before_wo",
    ):
        assert led[n].status == "fail", n
    assert led["deep_qknorm_no_loss_spikes"].status == "inconclusive"  # no spikes anywhere: nothing to tell apart
    assert led["sr_wo_still_grows"].status in ("fail", "inconclusive")
