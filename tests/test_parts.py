"""analysis.probing.parts: a probe as a package of parts (sub-experiments) and the one run skeleton they share.

A toy probe of three parts checks the skeleton (measure order after ``needs``, the ledger in ``PARTS`` order,
gates switching a part's measurement and claims together, errors naming the part); then every probe package of
the registry is checked against its own config, and ``python -m probes show`` lists its parts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import probes
from analysis.probing import cli
from analysis.probing.base import ProbeConfig, Result, param
from analysis.probing.parts import Context, Part, check_parts, describe, judge, measure_order, run_parts


@dataclass(frozen=True)
class Values:
    """What the toy's `values` part leaves for `sum`."""

    array: np.ndarray


@dataclass(frozen=True)
class ToyConfig(ProbeConfig):
    PRESETS = {"smoke": {"n": 4}, "full": {}}
    n: int = param(8, "points", minimum=1)
    extra: bool = param(False, "run the extra part")


def _toy_parts(calls: list[str]) -> tuple[Part, ...]:
    def measure_sum(ctx: Context) -> None:
        calls.append("sum")
        ctx.scalars["sum"] = float(ctx.get(Values).array.sum())  # left by `values`

    def measure_values(ctx: Context) -> None:
        calls.append("values")
        values = np.arange(ctx.config.n, dtype=float)
        ctx.put(Values(values))
        ctx.coords["i"] = np.arange(ctx.config.n)
        ctx.data["values"] = (("i",), values)

    def measure_extra(ctx: Context) -> None:
        calls.append("extra")
        ctx.scalars["extra"] = 1.0

    def claims_sum(led, rs):
        n = rs[0].config.n
        led.identity(
            "sum_is_triangular",
            measured=rs[0].scalars["sum"],
            expected=n * (n - 1) / 2,
            atol=1e-12,
            source="closed form",
            why="float64 sum of small integers is exact",
        )

    def claims_values(led, rs):
        led.identity(
            "first_is_zero",
            measured=float(rs[0].data["values"][0]),
            expected=0.0,
            atol=0.0,
            source="construction",
            why="exact",
        )

    def claims_extra(led, rs):
        led.identity(
            "extra_is_one", measured=rs[0].scalars["extra"], expected=1.0, atol=0.0, source="construction", why="exact"
        )

    return (
        Part("sum", "the sum of the values", measure=measure_sum, claims=claims_sum, fields=("n",), needs=("values",)),
        Part("values", "the values", measure=measure_values, claims=claims_values, fields=("n",), provides=(Values,)),
        Part("extra", "an optional part", measure=measure_extra, claims=claims_extra, gate="extra"),
    )


def _run(config: ToyConfig, calls: list[str]):
    parts = _toy_parts(calls)
    return run_parts("toy", parts, lambda ctx: calls.append("prepare"), lambda r: judge("toy", parts, [r]), config)


def test_parts_measure_after_what_they_need_and_claim_in_declared_order():
    calls: list[str] = []
    r = _run(ToyConfig.preset("smoke"), calls)
    assert calls == ["prepare", "values", "sum"]  # `sum` needs `values`; `extra` is gated off
    assert [c.name for c in r.ledger.claims] == ["sum_is_triangular", "first_is_zero"]  # PARTS order
    assert all(c.status == "pass" for c in r.ledger.claims)
    assert r.scalars == {"sum": 6.0} and r.data["values"].dims == ("i",)


def test_a_gate_switches_a_parts_measurement_and_its_claims_together():
    calls: list[str] = []
    r = _run(ToyConfig.preset("smoke", extra=True), calls)
    assert calls == ["prepare", "values", "sum", "extra"]
    assert [c.name for c in r.ledger.claims] == ["sum_is_triangular", "first_is_zero", "extra_is_one"]
    # the same measurement judged under a config whose gate is off: the gated part makes no claim
    off = Result(probe="toy", config=ToyConfig.preset("smoke"), data=r.data, scalars=r.scalars)
    assert [c.name for c in judge("toy", _toy_parts([]), [off]).claims] == ["sum_is_triangular", "first_is_zero"]


def test_parts_pass_typed_values_and_nothing_else():
    ctx = Context(config=ToyConfig())
    with pytest.raises(AttributeError, match="Context has no field 'net': a part leaves a value for later parts"):
        ctx.net = 1
    with pytest.raises(LookupError, match="no Values in this run: the part that provides it did not run first"):
        ctx.get(Values)
    ctx.put(Values(np.zeros(2)))
    assert ctx.get(Values).array.shape == (2,)

    def forgets(ctx: Context) -> None:  # declares PROVIDES but leaves nothing
        ctx.scalars["x"] = 1.0

    parts = (Part("forgets", "a part that promises a value", measure=forgets, provides=(Values,)),)
    with pytest.raises(RuntimeError, match=r"part 'forgets' declares PROVIDES \['Values'\] but did not put them"):
        run_parts("toy", parts, None, lambda r: judge("toy", parts, [r]), ToyConfig())


def test_measure_order_is_stable_and_refuses_a_cycle():
    a = Part("a", "", needs=("c",))
    b = Part("b", "")
    c = Part("c", "", needs=("b",))
    assert [p.name for p in measure_order((a, b, c))] == ["b", "c", "a"]
    assert [p.name for p in measure_order((b, c, a))] == ["b", "c", "a"]
    with pytest.raises(ValueError, match="cycle: a -> c -> a"):
        measure_order((a, Part("c", "", needs=("a",))))


@pytest.mark.parametrize(
    ("parts", "message"),
    [
        ((Part("a", ""), Part("a", "")), r"part names must be unique, got \['a', 'a'\]"),
        ((Part("a", "", fields=("n", "width")),), r"part 'a' names fields the config does not have: \['width'\]"),
        ((Part("a", "", gate="deep"),), r"part 'a' names fields the config does not have: \['deep'\]"),
        ((Part("a", "", needs=("b",)),), r"part 'a' needs parts that do not exist: \['b'\]"),
    ],
)
def test_check_parts_names_the_part_and_what_is_wrong(parts, message):
    with pytest.raises(ValueError, match=message):
        check_parts(parts, ToyConfig)


def test_describe_says_the_gate_and_the_fields():
    text = describe(_toy_parts([]))
    assert text["sum"] == "the sum of the values (reads: n)"
    assert text["extra"] == "an optional part (gate: extra)"


PACKAGES = [name for name in probes.available() if getattr(probes.get(name), "PARTS", None)]


def test_representational_collapse_is_a_package_of_parts():
    assert "representational_collapse" in PACKAGES
    mod = probes.get("representational_collapse")
    assert [p.name for p in mod.PARTS] == ["linear_stack", "distances", "oversquashing", "precision", "extension"]


@pytest.mark.parametrize("name", PACKAGES)
def test_every_probe_package_declares_valid_parts_and_show_lists_them(name, capsys):
    mod = probes.get(name)
    check_parts(mod.PARTS, mod.Config)
    assert cli.main(["show", name]) == 0
    out = capsys.readouterr().out
    listed = out.split("parts (in the ledger's order):\n", 1)[1].splitlines()
    assert [line.strip().split(":", 1)[0] for line in listed] == [p.name for p in mod.PARTS]


def test_over_replicates_stacks_each_replicate_seed_along_a_last_axis():
    from analysis.claims.evidence import replicate_seed
    from analysis.probing.parts import over_replicates

    got = over_replicates(7, 3, lambda s: {"a": np.array([s, 2 * s]), "b": float(s)}, progress=False, desc="x")
    seeds = [replicate_seed(7, i) for i in range(3)]
    np.testing.assert_array_equal(got["a"], np.array([seeds, [2 * s for s in seeds]]))
    np.testing.assert_array_equal(got["b"], np.array(seeds, dtype=float))


def test_law_and_slope_predictions_pair_each_replicate_with_its_law():
    """The law claim is each replicate's mean ratio (or difference plus the law's mean), the slope claim each
    replicate's slope in ln x minus the law's plus the law's mean; a second pair serves the slope; a measurement
    off its law by 10% fails, and an unknown pairing is refused by name. The band texts and statements are written
    from the Measured words: the replicate count is the data's, the law's values and the slope's level are shown."""
    from analysis.claims.ledger import Ledger
    from analysis.probing.parts import Measured, log_slopes, predict_law_and_slope

    xs = np.array([1.0, 2.0, 4.0, 8.0])
    exact = np.outer(xs**-0.5, np.linspace(0.9, 1.1, 5))  # (x, seed)
    noise = 1.0 + 1e-3 * np.sin(np.arange(20.0)).reshape(4, 5)
    law, slope = ("law", 0.0, "hypothesis", "source"), ("slope", 0.0, "hypothesis", "source")
    what = Measured("a scratch layer", "n", "share", "memories")
    led = Ledger("t", preset="full")
    predict_law_and_slope(led, (exact * noise, exact), xs, law, slope, what)
    assert led["law"].status == "pass" and led["law"].expected == 1.0
    assert led["law"].measured == pytest.approx(float(noise.mean()))
    assert led["slope"].expected == pytest.approx(-0.5) and led["slope"].status == "pass"
    assert led["slope"].statement == "a scratch layer: ln(mean share)'s slope in ln n is its law's (-0.500)"
    assert led["law"].statement == "a scratch layer: the mean share is its exact law (1, 0.7071, 0.5, 0.3536 by n)"
    assert led["law"].why.startswith("95% t band over 5 independent memories (replicate seeds) of each one's mean")
    led = Ledger("t", preset="full")
    other = (exact * noise, exact, exact * xs[:, None], exact)  # the slope reads the second pair
    words = Measured("s", "T", "mass", slope_quantity="relative mass")
    predict_law_and_slope(led, other, xs, law, slope, words, paired="difference")
    assert led["law"].measured == pytest.approx(float(exact.mean() + (exact * noise - exact).mean()))
    assert led["slope"].measured == pytest.approx(float(log_slopes(exact, xs).mean()) + 1.0)
    assert led["slope"].status == "fail" and "ln(mean relative mass) on ln T" in led["slope"].why
    assert "minus its exact law (paired), plus the law's mean" in led["law"].why
    led = Ledger("t", preset="full")
    predict_law_and_slope(led, (1.1 * exact * noise, exact), xs, law, slope, what)
    assert led["law"].status == "fail"
    with pytest.raises(ValueError, match="paired must be"):
        predict_law_and_slope(led, (exact, exact), xs, ("a", *law[1:]), ("b", *slope[1:]), what, paired="x")


def test_predict_law_alone_names_the_law_s_values_or_its_mean():
    """predict_law makes the law claim of predict_law_and_slope by itself: a difference pairing is the mean
    measured-minus-exact plus the law's mean; up to 8 points the statement lists the law by point, beyond its
    mean; the replicate count in the band text is the data's seed axis."""
    from analysis.claims.ledger import Ledger
    from analysis.probing.parts import Measured, predict_law

    exact = np.linspace(1.0, 2.0, 30).reshape(10, 3)  # (x, seed)
    measured = exact + np.array([1e-3, -1e-3, 2e-3])
    led = Ledger("t", preset="full")
    predict_law(
        led, (measured, exact), ("law", 0.0, "h", "s"), Measured("ten rows", "row", "mass"), paired="difference"
    )
    assert led["law"].measured == pytest.approx(float(exact.mean()) + 2e-3 / 3)
    assert led["law"].expected == pytest.approx(float(exact.mean()))
    assert led["law"].statement == f"ten rows: the mean mass is its exact law (mean {exact.mean():.4g})"
    assert "over 3 independent layers" in led["law"].why


def test_predict_law_refuses_a_point_without_its_axis_and_takes_requires_full():
    """One point x must keep its axis (values[-1:]): a (seed,) array is refused by name with the fix; a claim the
    smoke preset measures well enough may pass requires_full=False."""
    from analysis.claims.ledger import Ledger
    from analysis.probing.parts import Measured, predict_law

    exact = np.linspace(1.0, 2.0, 12).reshape(4, 3)
    what = Measured("s", "n", "mass")
    led = Ledger("t", preset="smoke")
    with pytest.raises(ValueError, match=r"pairs must be two \(x, seed\) arrays.*values\[-1:\]"):
        predict_law(led, (exact[-1], exact[-1]), ("law", 0.0, "h", "s"), what)
    predict_law(led, (exact[-1:], exact[-1:]), ("law", 0.0, "h", "s"), what, requires_full=False)
    assert led["law"].status != "not_evaluated" and led["law"].expected == 1.0
    predict_law(led, (exact, exact), ("full", 0.0, "h", "s"), what)
    assert led["full"].status == "not_evaluated"
