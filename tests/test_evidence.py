"""The one band policy, replicate seeds, verdict stability and fail triage (analysis.claims.evidence,
analysis.claims.ledger)."""

import json
import math

import numpy as np
import pytest

from analysis.claims import evidence
from analysis.claims.evidence import COVERAGE, STABLE_AT, mean_se, replicate_seed, replicate_seeds, t_multiple
from analysis.claims.ledger import Claim, Ledger, claim_stability, verdict_function

# ---------------------------------------------------------------------- the band policy


@pytest.mark.parametrize("n", [2, 3, 5, 12])
def test_t_band_over_replicates_covers_95_percent(n):
    """mean +- t(95%, n - 1) SE over n Gaussian replicates contains the true mean 95% of the time; a fixed k = 2
    does not at small n (about 82% at 3 replicates): the reason the policy uses Student t."""
    rng = np.random.default_rng(n)
    x = rng.normal(0.3, 1.7, size=(40_000, n))
    m, se = x.mean(1), x.std(1, ddof=1) / math.sqrt(n)
    covered = float(np.mean(np.abs(m - 0.3) <= t_multiple(n - 1) * se))
    assert abs(covered - COVERAGE) < 0.006  # binomial SE of 40 000 trials is 0.0011
    if n == 3:
        assert float(np.mean(np.abs(m - 0.3) <= 2.0 * se)) < 0.85


def test_t_multiple_normal_limit_and_bad_dof():
    assert t_multiple(math.inf) == pytest.approx(t_multiple(1e9), rel=1e-6)
    assert t_multiple(4) > t_multiple(30) > t_multiple(math.inf)
    for bad in (0, 0.5, math.nan, -1, "3", True, None):
        with pytest.raises(ValueError, match="dof"):
            t_multiple(bad)


@pytest.mark.parametrize("m", [1, 3, 6])
def test_worst_of_a_family_keeps_95_percent_with_the_sidak_band(m):
    """A law true in each of m independent cases, each measured at 5 seeds and recorded at the case nearest to
    failing: the per-case 95% band fails 1 - 0.95^m of the time (26% at 6); the family's Sidak band 5%."""
    rng = np.random.default_rng(100 + m)
    x = rng.normal(0.0, 1.0, size=(20_000, m, 5))
    z = np.abs(x.mean(-1)) / (x.std(-1, ddof=1) / math.sqrt(5))
    worst = z.max(-1)
    fails_nominal = float(np.mean(worst > t_multiple(4)))
    fails_family = float(np.mean(worst > t_multiple(4, evidence.family_coverage(m))))
    assert abs(fails_nominal - (1 - COVERAGE**m)) < 0.01
    assert abs(fails_family - (1 - COVERAGE)) < 0.006  # binomial SE of 20 000 trials is 0.0015


def test_family_claim_records_its_sidak_band_and_rejects_what_cannot_widen():
    led = Ledger("ctx", preset="smoke")
    common = dict(expected=0.0, alternative=5.0, hypothesis="far", source="s", why="band")
    reps = [0.1, -0.2, 0.05, 0.3, -0.1]
    c = led.predict("worst_case", replicates=reps, family=4, **common)
    m = mean_se(reps)
    k = t_multiple(4, 0.95**0.25)
    assert c.tolerance["family"] == 4 and c.tolerance["coverage_per_case"] == pytest.approx(0.95**0.25)
    assert c.tolerance["k"] == pytest.approx(k) and c.tolerance["atol"] == pytest.approx(k * m.se)
    assert c.tolerance["coverage"] == COVERAGE and "worst of 4 cases" in c.why and "Sidak" in c.why
    assert verdict_function(c)(0.99 * k * m.se) == "pass"  # re-judged with its own wider band, about 0
    assert verdict_function(c)(1.01 * k * m.se) == "fail"
    d = led.direction(
        "worst_sign", replicates=[1.0, 1.2, 0.9], sign=+1, family=3, hypothesis="none", source="s", why="band"
    )
    assert d.tolerance["k"] == pytest.approx(t_multiple(2, 0.95 ** (1 / 3))) and d.tolerance["family"] == 3
    one = led.predict("one_case", replicates=reps, family=1, **common)
    assert one.tolerance["k"] == pytest.approx(t_multiple(4))
    for bad in (0, -2, 2.5, True, "3"):
        with pytest.raises(ValueError, match="^family must be an integer >= 1"):
            led.predict("bad", replicates=reps, family=bad, **common)
    with pytest.raises(ValueError, match="family needs an SE band"):
        led.predict("bad", measured=0.1, ci=(-0.1, 0.3), coverage=0.95, within_run="model fixed", family=3, **common)
    with pytest.raises(ValueError, match="family needs an SE band"):
        led.predict("bad", measured=0.1, atol=0.5, family=3, **common)
    with pytest.raises(ValueError, match="family needs an SE band"):
        led.direction(
            "bad",
            measured=0.5,
            ci=(0.1, 0.9),
            coverage=0.95,
            within_run="fixed",
            sign=1,
            family=2,
            hypothesis="none",
            source="s",
            why="band",
        )


def test_mean_se_of_replicates():
    r = mean_se([1.0, 2.0, 4.0])
    assert r.mean == pytest.approx(7 / 3) and r.n == 3 and r.dof == 2
    assert r.se == pytest.approx(np.std([1.0, 2.0, 4.0], ddof=1) / math.sqrt(3))
    assert math.isnan(mean_se([1.0]).se) and math.isnan(mean_se([1.0, math.nan]).mean)
    with pytest.raises(ValueError, match="at least one"):
        mean_se([])


def test_chance_fails():
    assert evidence.chance_fails(100, 0) == pytest.approx(5.0)
    assert evidence.chance_fails(0, 100) == pytest.approx(2.5)


# ---------------------------------------------------------------------- replicate seeds


def test_replicate_seeds_of_different_runs_never_overlap():
    """The bug this replaces: seeds s .. s + n - 1 made --seed 0 and --seed 1 share 5 of 6 models."""
    runs = {s: replicate_seeds(s, 32) for s in range(200)}
    every = [x for seeds in runs.values() for x in seeds]
    assert len(set(every)) == len(every)  # 6400 replicates of 200 runs, all distinct
    assert all(seeds[0] == s for s, seeds in runs.items())  # replicate 0 keeps the run's seed (and its model key)
    lo, hi = evidence.SEED_SPACE
    assert all(lo <= x < hi for seeds in runs.values() for x in seeds[1:])
    assert replicate_seeds(7, 5) == [replicate_seed(7, i) for i in range(5)]  # a pure function of (seed, index)


def test_replicate_seed_rejects_bad_input():
    for bad in (-1, 1.5, True, "0"):
        with pytest.raises(ValueError, match="seed"):
            replicate_seed(bad, 1)
        with pytest.raises(ValueError, match="index"):
            replicate_seed(0, bad)
    with pytest.raises(ValueError, match="replicates"):
        replicate_seeds(0, 0)


# ---------------------------------------------------------------------- predictions from replicates


def _led():
    return Ledger("unit")


def _from_replicates(led, values, name="p", **kw):
    return led.predict(
        name,
        replicates=values,
        expected=1.0,
        alternative=2.0,
        hypothesis="slope 2",
        source="derivation",
        why="95% t band over seeds",
        **kw,
    )


def test_prediction_from_replicates_uses_the_t_band():
    values = [0.98, 1.03, 1.01, 0.97, 1.02]
    c = _from_replicates(_led(), values)
    m = mean_se(values)
    assert c.measured == pytest.approx(m.mean) and c.tolerance["se"] == pytest.approx(m.se)
    assert c.tolerance["k"] == pytest.approx(t_multiple(4)) and c.tolerance["n"] == 5
    assert c.tolerance["atol"] == pytest.approx(t_multiple(4) * m.se) and c.tolerance["within_run"] is None
    assert c.status == "pass" and c.stability["method"] == "resample"
    with pytest.raises(ValueError, match="mean"):
        _from_replicates(_led(), values, measured=5.0)
    with pytest.raises(ValueError, match="replicates take no"):
        _from_replicates(_led(), values, within_run="a model")
    one = _from_replicates(_led(), [1.0])  # one seed: no SE, the claim is unmeasured
    assert one.status == "fail" and one.tolerance["atol"] == "nan"


def test_se_over_replicates_has_finite_dof_and_within_run_says_why():
    led = _led()
    args = dict(measured=1.0, expected=1.0, alternative=2.0, hypothesis="h", source="s", why="w", se=0.1)
    with pytest.raises(ValueError, match="within_run"):
        led.predict("a", dof=math.inf, **args)
    with pytest.raises(ValueError, match="within_run"):
        led.predict("b", dof=math.inf, within_run=" ", **args)
    c = led.predict("c", dof=4, **args)
    assert c.tolerance["n"] == 5 and c.tolerance["k"] == pytest.approx(t_multiple(4))
    d = led.predict("d", dof=math.inf, within_run="no model: Monte Carlo of a closed form", **args)
    assert d.tolerance["dof"] == "inf" and Claim.from_dict(json.loads(json.dumps(d.to_dict()))) == d


# ---------------------------------------------------------------------- stability


@pytest.mark.parametrize(
    ("z", "status"),
    [(0.0, "pass"), (1.0, "pass"), (1.96, "unstable"), (2.5, "unstable"), (4.0, "fail")],
)
def test_stability_of_a_prediction_against_its_band_edge(z, status):
    """With a within-run SE of 1, the band is 1 +- 1.96: a measurement z SE from the prediction passes stably near
    the centre, is unstable near the edge (a resample of the measurement lands on the other side one time in five
    or more) and fails stably far outside."""
    led = _led()
    c = led.predict(
        "p",
        measured=1.0 + z,
        se=1.0,
        dof=math.inf,
        within_run="no model",
        expected=1.0,
        alternative=-20.0,
        hypothesis="far",
        source="s",
        why="w",
    )
    assert c.status == status
    # the resampled fraction is the probability that N(1 + z, 1) lands on the same side of the band edge
    from scipy import stats

    inside = stats.norm.cdf(1.96 - z) - stats.norm.cdf(-1.96 - z)
    same = inside if abs(z) <= 1.96 else 1 - inside
    assert c.stability["resampled"] == pytest.approx(same, abs=2e-3)
    assert (c.status == "unstable") == (c.stability["value"] < STABLE_AT)


def test_rounding_flip_makes_a_claim_unstable_whatever_its_resampling():
    led = _led()
    edge = 1.0 + t_multiple(math.inf) * 1e-6  # exactly on the band's edge, with a tiny SE
    c = led.predict(
        "p",
        measured=edge,
        se=1e-6,
        dof=math.inf,
        within_run="no model",
        expected=1.0,
        alternative=2.0,
        hypothesis="h",
        source="s",
        why="w",
    )
    assert c.stability["rounding"] is False and c.stability["value"] == 0.0 and c.status == "unstable"


def test_verdict_function_reproduces_every_kind_of_comparison():
    """Judging a stored claim again at its own measurement gives the verdict it was recorded with, for every
    kind; moving the measurement moves the verdict as the band says."""
    led = _led()
    inf = dict(dof=math.inf, within_run="no model")
    claims = [
        led.predict(
            "p", measured=1.01, se=0.02, expected=1.0, alternative=2.0, hypothesis="h", source="s", why="w", **inf
        ),
        led.predict("q", measured=1.2, atol=0.1, expected=1.0, alternative=3.0, hypothesis="h", source="s", why="5%"),
        led.predict(
            "r",
            measured=0.6,
            ci=(0.5, 0.7),
            coverage=0.95,
            expected=0.62,
            alternative=1.0,
            hypothesis="h",
            source="s",
            why="w",
        ),
        led.direction("d", measured=0.5, se=0.1, sign=1, hypothesis="none", source="s", why="w", dof=6),
        led.direction(
            "e", measured=-0.5, ci=(-0.9, -0.2), coverage=0.95, sign=-1, hypothesis="none", source="s", why="w"
        ),
        led.bound("b", measured=0.5, bound=1.0, source="s", why="w"),
        led.bound("c", measured=0.01, bound=1.0, source="s", why="w"),
        led.within("w", role="paper", measured=0.6, lo=0.5, hi=0.75, source="s"),
    ]
    for c in claims:
        f = verdict_function(c)
        assert f(c.measured) == c.stability["verdict"], c.name
        assert claim_stability(c) == c.stability
    assert [c.status for c in claims] == ["pass", "fail", "pass", "pass", "pass", "pass", "loose", "pass"]
    assert verdict_function(claims[0])(1.5) == "fail" and verdict_function(claims[3])(-0.5) == "fail"
    assert verdict_function(claims[2])(1.5) == "fail"  # the CI moves with the estimate
    assert verdict_function(claims[6])(0.5) == "pass"  # tightness recomputed: no longer loose


# ---------------------------------------------------------------------- fail triage


def test_fail_triage_regime_scale_refuted():
    led = _led()
    led.bound("logits_bounded", measured=5.0, bound=1.0, source="theorem's hypothesis", why="w")  # fails
    led.bound("norm_away_from_zero", measured=0.5, bound=0.1, relation=">=", source="hyp", why="w")  # passes
    args = dict(measured=9.0, se=0.1, dof=4, expected=1.0, alternative=2.0, hypothesis="h", source="s", why="w")
    reg = led.predict("in_regime_only_if_bounded", regime=["logits_bounded", "norm_away_from_zero"], **args)
    assert reg.status == "fail" and reg.finding == {"kind": "regime", "claims": ["logits_bounded"]}
    ok_hyp = led.predict("hypotheses_hold", regime=["norm_away_from_zero"], scale="paper: L=96; knob: depths", **args)
    assert ok_hyp.finding == {"kind": "scale", "note": "paper: L=96; knob: depths"}  # its hypothesis holds
    plain = led.predict("plain", **args)
    assert plain.finding == {"kind": "refuted"}
    passing = led.predict("passing", **{**args, "measured": 1.0})
    assert passing.status == "pass" and passing.finding is None
    # a hypothesis recorded after the claim it triages still counts (resolved on insert)
    late = led.predict("late", regime=["recorded_later"], **args)
    assert late.finding == {"kind": "refuted"}
    led.bound("recorded_later", measured=3.0, bound=1.0, source="hyp", why="w")
    assert led["late"].finding == {"kind": "regime", "claims": ["recorded_later"]}
    with pytest.raises(ValueError, match="own hypothesis"):
        led.predict("self", regime=["self"], **args)
    with pytest.raises(ValueError, match="scale"):
        led.predict("blank", scale=" ", **args)


def _dict_of(claim: Claim) -> dict:
    return json.loads(json.dumps(claim.to_dict()))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.pop("finding"), "a fail needs a finding"),
        (lambda d: d.update(finding={"kind": "luck"}), "a fail needs a finding"),
        (lambda d: d.update(finding={"kind": "regime", "claims": []}), "regime finding"),
        (lambda d: d.update(finding={"kind": "scale"}), "scale finding"),
        (lambda d: d.update(finding={"kind": "bug"}), "only a failing identity"),
        (lambda d: d.pop("stability"), "stability must be a record"),
        (lambda d: d.update(stability={**d["stability"], "value": 1.5}), "fraction"),
        (lambda d: d.update(stability={**d["stability"], "value": 0.5}), "disagrees"),
        (lambda d: d.update(stability={**d["stability"], "method": "vibes"}), "stability must be a record"),
    ],
)
def test_malformed_stability_or_finding_is_refused_naming_the_claim(edit, message):
    c = _led().predict(
        "bad_claim", measured=9.0, se=0.1, dof=4, expected=1.0, alternative=2.0, hypothesis="h", source="s", why="w"
    )
    d = _dict_of(c)
    assert Claim.from_dict(d) == c
    edit(d)
    with pytest.raises(ValueError, match=message) as err:
        Claim.from_dict(d)
    assert "claim unit/bad_claim" in str(err.value) and "\n" not in str(err.value)


def test_rounding_step_is_capped_by_the_band():
    """A measurement resolved far below 1e-4 relative (seeds agreeing to 2e-5) is judged at its own precision: it
    is not flagged for sitting well inside its band, and still flagged within a tenth of the band of its edge."""
    assert evidence.rounding_step(0.77, 0.77) == pytest.approx(0.77e-4)
    assert evidence.rounding_step(0.77, 0.77, width=4.6e-5) == pytest.approx(4.6e-6)
    led = _led()
    args = dict(se=1.65e-5, dof=4, expected=0.7719173, alternative=0.9, hypothesis="h", source="s", why="w")
    inside = led.predict("inside", measured=0.7719176, **args)
    assert inside.status == "pass" and inside.stability["rounding"] is True
    edge = 0.7719173 + t_multiple(4) * 1.65e-5 * 0.99  # 1% of the band from its edge
    assert led.predict("edge", measured=edge, **args).stability["rounding"] is False
    # five seeds all at accuracy 1: a zero band is exact, and the measurement on it is no rounding matter
    exact = led.predict(
        "exact", replicates=[1.0] * 5, expected=1.0, alternative=0.5, hypothesis="h", source="s", why="w"
    )
    assert exact.status == "pass" and exact.stability["rounding"] is True


def test_rejudged_decides_stability_again_from_the_stored_band():
    led = _led()
    c = led.predict(
        "p", measured=1.0, se=0.1, dof=4, expected=1.0, alternative=3.0, hypothesis="h", source="s", why="w"
    )
    stale = Ledger(
        "unit", claims=[Claim(**{**c.__dict__, "stability": {**c.stability, "value": 0.1}, "status": "unstable"})]
    )
    fresh = stale.rejudged()
    assert fresh["p"] == c and fresh["p"].status == "pass"
    assert led.rejudged()["p"] == c  # judging again changes nothing while the rules are the same


def test_t_band_is_mean_se_case_by_case():
    rng = np.random.default_rng(3)
    v = rng.normal(size=(3, 4, 6))
    mean, half = evidence.t_band(v, axis=1)
    assert mean.shape == half.shape == (3, 6)
    m = evidence.mean_se(v[2, :, 5])
    assert mean[2, 5] == pytest.approx(m.mean, rel=1e-12)
    assert half[2, 5] == pytest.approx(evidence.t_multiple(m.dof) * m.se, rel=1e-12)
    one_mean, one_half = evidence.t_band([[1.5]])
    assert one_mean.tolist() == [1.5] and np.isnan(one_half).all()
    with pytest.raises(ValueError, match="at least one replicate"):
        evidence.t_band(np.zeros((2, 0)))


def test_seed_z_is_mean_over_se_case_by_case_and_keeps_decisive_cases():
    rng = np.random.default_rng(5)
    v = rng.normal(0.3, 1.0, size=(4, 7))
    z = evidence.seed_z(v)
    for i in range(4):
        m = evidence.mean_se(v[i])
        assert z[i] == pytest.approx(m.mean / m.se, rel=1e-12)
    assert evidence.seed_z(v.T, axis=0) == pytest.approx(z, rel=1e-15)
    # replicates that agree exactly: a non-zero mean is decisive (+-inf, never dropped), zero has no z
    exact = evidence.seed_z([[2.0, 2.0, 2.0], [-1.0, -1.0, -1.0], [0.0, 0.0, 0.0], [1.0, np.nan, 2.0]])
    assert exact[0] == np.inf and exact[1] == -np.inf and np.isnan(exact[2]) and np.isnan(exact[3])
    assert np.isnan(evidence.seed_z([[1.0], [2.0]])).all()  # one replicate: no SE


def test_worst_case_and_family_size_skip_the_cases_without_a_z():
    z = np.array([0.5, np.nan, 2.0, -3.0, np.nan])
    assert evidence.worst_case(z) == 2 and evidence.family_size(z) == 3
    assert evidence.worst_case([1.0, np.inf, 5.0]) == 1  # a decisive case is the worst
    assert evidence.worst_case([[0.0, 4.0], [1.0, np.nan]]) == 1  # a flat index
    assert evidence.worst_case([np.nan, np.nan]) is None and evidence.family_size([np.nan]) == 1
