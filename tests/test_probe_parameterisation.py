"""The parameterisation probe: the smoke run's claims, planted results that must pass and fail, and bad input."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from analysis.claims.ledger import Ledger
from analysis.theory import width as th
from probes import parameterisation as pz
from probes.parameterisation import depth, newton_schulz, width
from probes.parameterisation.measure import layer_class


@pytest.fixture(scope="module")
def smoke(smoke_result):
    return smoke_result("parameterisation")


def test_smoke_claims_and_the_exponents_wait_for_full(smoke):
    by = {c.name: c for c in smoke.checks}
    assert by["newton_schulz_singular_value_map"].status == "pass"
    assert by["newton_schulz_band_low"].verdict == by["newton_schulz_band_high"].verdict == "agrees"
    exponents = [c for c in smoke.checks if c.name.startswith(("own_update", "init_exponent", "depth_exponent"))]
    assert exponents and all(c.status == "not_evaluated" for c in exponents)
    # a claim for every layer whose two derived exponents differ, and none where they agree
    for opt in pz.OPTIMIZERS:
        for layer in th.MIXER_LAYERS["softmax"]:
            differ = th.own_update_exponent(layer, opt, "standard") != th.own_update_exponent(layer, opt, "mup")
            assert (f"own_update_exponent_softmax_{opt}_mup_{layer}" in by) == differ


def _planted(r, exponent_of):
    """The smoke result with every own update and init size a power law of the width, exponent_of(mixer, opt, p,
    layer or quantity)."""
    data = r.data.copy(deep=True)
    widths = np.asarray(r.config.widths, dtype=np.float64)
    spread = np.linspace(0.99, 1.01, data.sizes["width_seed"])
    own = data["own_update"]
    for mixer in own.mixer.values:
        for p in own.parameterisation.values:
            for layer in th.MIXER_LAYERS[mixer]:
                for opt in own.optimizer.values:
                    e = exponent_of(mixer, opt, p, layer)
                    own.loc[dict(mixer=mixer, optimizer=opt, parameterisation=p, layer=layer)] = (
                        widths[:, None] ** e * spread
                    )
            for q in data["init_size"].init_quantity.values:
                e = exponent_of(mixer, "init", p, q)
                data["init_size"].loc[dict(mixer=mixer, parameterisation=p, init_quantity=q)] = (
                    widths[:, None] ** e * spread
                )
    return dataclasses.replace(r, data=data)


def _derived(mixer, opt, p, what):
    if opt == "init":
        return th.init_exponent(what, p, mixer) if (mixer == "softmax" or what != "attn_scores") else 0.0
    return th.own_update_exponent(what, opt, p, mixer)


def test_width_claims_pass_on_the_derived_laws_and_fail_on_the_alternatives(smoke):
    led = Ledger("parameterisation", preset="full")
    width.claims(led, (_planted(smoke, _derived),))
    names = [c.name for c in led.claims]
    assert names and all(c.status == "pass" for c in led.claims), [(c.name, c.measured) for c in led.claims]

    def swapped(mixer, opt, p, what):
        return _derived(mixer, opt, "mup" if p == "standard" else "standard", what)

    led = Ledger("parameterisation", preset="full")
    width.claims(led, (_planted(smoke, swapped),))
    gdn_branch = {c.name for c in led.claims if c.name.endswith("_attn_out")}  # its alternative is softmax's, not muP's
    assert all(c.status == "fail" for c in led.claims if c.name not in gdn_branch)


def test_depth_claims_pass_on_the_derived_laws_and_fail_on_the_alternatives(smoke):
    data = smoke.data.copy(deep=True)
    L = np.asarray(smoke.config.depths, dtype=np.float64)
    spread = np.linspace(0.99, 1.01, data.sizes["depth_seed"])
    for run in pz.DEPTH_RUNS:
        for q in depth.QUANTITIES:
            data["depth_size"].loc[dict(depth_run=run, depth_quantity=q)] = (
                L[:, None] ** depth.depth_exponent(run, q) * spread
            )
    led = Ledger("parameterisation", preset="full")
    depth.claims(led, (dataclasses.replace(smoke, data=data),))
    assert all(c.verdict == "agrees" for c in led.claims), [(c.name, c.measured) for c in led.claims]
    for run in pz.DEPTH_RUNS:  # every run planted as the other scaling
        other = "depth_mup_sqrt" if run == "standard" else "standard"
        for q in depth.QUANTITIES:
            data["depth_size"].loc[dict(depth_run=run, depth_quantity=q)] = (
                L[:, None] ** depth.depth_exponent(other, q) * spread
            )
    led = Ledger("parameterisation", preset="full")
    depth.claims(led, (dataclasses.replace(smoke, data=data),))
    assert all(c.verdict == "disagrees" for c in led.claims), [(c.name, c.status) for c in led.claims]


def test_newton_schulz_claims_fail_when_the_map_is_not_phi5(smoke):
    data = smoke.data.copy(deep=True)
    data["ns_out"].values[:] = data["ns_out"].values * 1.3  # outside the band and off the closed form
    led = Ledger("parameterisation", preset="full")
    newton_schulz.claims(led, (dataclasses.replace(smoke, data=data),))
    assert led["newton_schulz_singular_value_map"].status == "fail"
    assert led["newton_schulz_band_high"].verdict == "disagrees"


def test_every_measured_module_has_a_layer_class():
    from analysis.zoo.model import TinyTransformer

    model = TinyTransformer(width.model_config(pz.Config.preset("smoke"), "gated_delta", "mup", 64, 0))
    linear = [n for n, m in model.named_modules() if type(m).__name__ in ("Linear", "Embedding")]
    assert {layer_class(n) for n in linear} == {"embed", "qk", "v", "o", "gate", "mlp", "readout"}


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"widths": (64,)}, "widths"),
        ({"widths": (64, 32)}, "widths must be strictly increasing"),
        ({"depths": (4, 4)}, "depths"),
        ({"n_heads": 3}, "n_heads"),
        ({"mixers": ("mamba",)}, "mixers"),
        ({"ns_sizes": (1,)}, "ns_sizes"),
        ({"muon_lrs": (0.02, 0.01, 0.04)}, "muon_lrs must be strictly increasing"),
        ({"muon_widths": (16, 20)}, "muon_widths must give an even head size"),
        ({"muon_steps": 5}, "muon_steps"),
    ],
)
def test_bad_input_names_its_field(over, match):
    with pytest.raises(ValueError, match=match):
        pz.Config.preset("smoke", **over)


def test_optimal_lr_is_the_parabolas_vertex_inside_the_grid():
    from probes.parameterisation.transfer import optimal_lr

    lrs = 2.0 ** np.arange(-8, -3)  # log2: -8 .. -4
    log_opt, edge = optimal_lr(lrs, (np.log2(lrs) + 5.7) ** 2 + 2.0)
    assert log_opt == pytest.approx(-5.7) and not edge
    losses = (np.log2(lrs) + 4.2) ** 2
    assert optimal_lr(lrs, losses) == (-4.0, True)  # the best is the last rate: the optimum may lie beyond
    diverged = np.array([3.0, 2.5, 2.0, np.nan, np.nan])
    assert optimal_lr(lrs, diverged) == (-6.0, False)  # a diverged neighbour: the best grid point, bracketed
    assert np.isnan(optimal_lr(lrs, np.full(5, np.nan))[0])


def _planted_transfer(r, centre):
    """The smoke result with every training's loss (log2 lr - centre(p, d))^2 + 2."""
    data = r.data.copy(deep=True)
    loss = data["transfer_loss"]
    for run in loss.transfer_run.values:
        lrs = data["transfer_lr"].sel(transfer_run=run).values
        for p in loss.parameterisation.values:
            for d in loss.transfer_width.values:
                values = (np.log2(lrs) - centre(str(p), float(d))) ** 2 + 2.0
                spread = np.linspace(0.0, 0.01, loss.sizes["transfer_seed"])
                loss.loc[dict(transfer_run=run, parameterisation=p, transfer_width=d)] = values[:, None] + spread[
                    None, :
                ] * np.log2(d)
    return dataclasses.replace(r, data=data)


def test_transfer_claims_follow_the_optima(smoke):
    from probes.parameterisation import transfer

    lrs = np.log2(smoke.data["transfer_lr"].values[0])
    mid = float(lrs[1])  # the optimum inside the grid

    def transfers(p, d):  # muP's optimum fixed, the standard one's falling like 1/d
        return mid if p == "mup" else mid + 0.5 - 1.0 * np.log2(d / 16)

    led = Ledger("parameterisation", preset="full")
    transfer.claims(led, (_planted_transfer(smoke, transfers),))
    by = {c.name: c for c in led.claims}
    assert by["lr_transfer_softmax_adam_optimum_inside_grid"].passed
    assert by["lr_transfer_softmax_adam_mup_drift"].verdict == "agrees", by["lr_transfer_softmax_adam_mup_drift"].line()
    assert by["lr_transfer_softmax_adam_standard_drift"].verdict == "agrees"

    def swapped(p, d):
        return transfers("mup" if p == "standard" else "standard", d)

    led = Ledger("parameterisation", preset="full")
    transfer.claims(led, (_planted_transfer(smoke, swapped),))
    by = {c.name: c for c in led.claims}
    assert by["lr_transfer_softmax_adam_mup_drift"].verdict == "disagrees"
    # a standard optimum that does not move is the sign claim's alternative: no fall shown
    assert by["lr_transfer_softmax_adam_standard_drift"].verdict in ("undecided", "disagrees")
    assert not by["lr_transfer_softmax_adam_standard_drift"].passed

    def outside(p, d):
        return float(lrs[-1]) + 3.0

    led = Ledger("parameterisation", preset="full")
    transfer.claims(led, (_planted_transfer(smoke, outside),))
    assert led["lr_transfer_softmax_adam_mup_drift"].verdict == "out_of_scope"


def test_updates_to_interpolates_the_first_crossing():
    from probes.parameterisation.muon_vs_adamw import final_loss, updates_to

    steps = np.array([0.0, 10.0, 20.0, 30.0])
    curve = np.array([5.0, 3.0, 2.0, 2.5])
    assert updates_to(steps, curve, 2.5) == (15.0, True)  # halfway from 3.0 at 10 to 2.0 at 20: the first crossing
    assert updates_to(steps, curve, 1.0) == (30.0, False)  # never reached: the budget, flagged
    assert updates_to(steps, curve, 6.0) == (0.0, True)
    assert final_loss([9.0, 3.0, 2.0, 1.0]) == pytest.approx(2.0)  # the mean of the last three
    assert np.isnan(final_loss([9.0, np.nan, 2.0, 1.0]))


def _planted_muon(r, ratio_of):
    """The smoke result with AdamW's curves falling linearly to 2 at the budget and Muon's reaching AdamW's final loss
    after ratio_of(width) of AdamW's updates."""
    data = r.data.copy(deep=True)
    steps = data["muon_eval_step"].values
    budget = steps[-1]
    curve = data["muon_curve"]
    for d in curve.muon_width.values:
        for s in curve.muon_seed.values:
            spread = 1.0 + 0.01 * s
            curve.loc[dict(muon_optimiser="adamw", muon_width=d, muon_seed=s)] = 3.0 - steps / budget
            rate = 1.0 / (ratio_of(float(d)) * spread)
            curve.loc[dict(muon_optimiser="muon", muon_width=d, muon_seed=s)] = 3.0 - rate * steps / budget
    data["muon_best_lr_index"][:] = 1  # every tuned rate inside its grid
    return dataclasses.replace(r, data=data)


def test_muon_claims_follow_the_updates_ratio(smoke):
    from probes.parameterisation import muon_vs_adamw

    def judged(ratio_of, edge=False):
        r = _planted_muon(smoke, ratio_of)
        if edge:
            r.data["muon_best_lr_index"][0, 0] = 0
        led = Ledger("parameterisation", preset="full")
        muon_vs_adamw.claims(led, (r,))
        return {c.name: c for c in led.claims}

    by = judged(lambda d: 0.5)
    for d in smoke.config.muon.widths:
        c = by[f"muon_adamw_updates_ratio_d{d}"]
        assert c.verdict == "agrees", c.line()
        assert c.measured == pytest.approx(0.5, rel=0.02)
    assert by["muon_best_lr_inside_grid"].verdict == "agrees"
    by = judged(lambda d: 1.0)  # no advantage: the alternative
    assert all(by[f"muon_adamw_updates_ratio_d{d}"].verdict == "disagrees" for d in smoke.config.muon.widths)
    by = judged(lambda d: 0.5, edge=True)  # a tuned rate at a grid's end: the comparison is out of scope
    assert by["muon_best_lr_inside_grid"].verdict == "out_of_scope"
    assert by[f"muon_adamw_updates_ratio_d{smoke.config.muon.widths[0]}"].verdict == "out_of_scope"


def test_width_and_rate_sweep_runs_through_the_sweep_path(tmp_path):
    """The coordinate check over a grid of learning rates and width lists, through ``probes.sweep(...)`` (the Dask path
    runs the same points; tests/test_sweep.py checks it equals the serial one bit for bit): each point's exponents
    are claims over the grid, and Adam's first update scales with the rate alone (a sign-like step), so the exponents
    do not depend on it."""
    import probes

    base = {"transfer": False, "muon_vs_adamw": False, "aspect_ratio": False, "mixers": ("softmax",)}
    grid = {"adam_lr": [1e-4, 1e-2], "widths": [(32, 64), (32, 64, 128)]}
    ds = probes.sweep("parameterisation", grid, preset="smoke", base=base, seeds=[0], cache_root=tmp_path,
                      progress=False)  # fmt: skip
    assert ds["data__own_update"].dims[:3] == ("adam_lr", "widths", "seed")
    assert not ds["failed"].any()
    assert "claim__own_update_exponent_softmax_adam_mup_qk" in ds
    own = ds["data__own_update"].sel(mixer="softmax", optimizer="adam", seed=0)
    for widths in ds["widths"].values:
        ratio = (own.sel(adam_lr=1e-2, widths=widths) / own.sel(adam_lr=1e-4, widths=widths)).values
        measured = np.isfinite(ratio)  # NaN: a width this point does not run, a layer softmax attention lacks
        assert measured.sum() >= 2 * 2 * 7 * 2  # parameterisations x widths x layers x seeds
        assert np.allclose(ratio[measured], 100.0, rtol=1e-3)


def test_aspect_claims_read_the_last_step_deeper(smoke):
    """Planted losses: Pre-LN and LayerNorm Scaling lose at the step deeper, Full AttnRes gains and beats Pre-LN
    there; then the reverse."""
    from probes.parameterisation import aspect_ratio

    def judged(step):  # step(variant) -> the loss change at the last step deeper
        data = smoke.data.copy(deep=True)
        loss = data["aspect_loss"]
        for variant in loss.aspect_variant.values:
            spread = np.linspace(0.0, 0.02, loss.sizes["aspect_seed"])
            loss.loc[dict(aspect_variant=variant)] = np.stack([2.0 + spread, 2.0 + step(variant) + 1.5 * spread])
        led = Ledger("parameterisation", preset="full")
        aspect_ratio.claims(led, (dataclasses.replace(smoke, data=data),))
        return {c.name: c.verdict for c in led.claims}

    by = judged(lambda v: -0.1 if v == "attnres" else 0.1)
    assert by["aspect_pre_ln_deeper_narrower"] == by["aspect_ln_scaling_deeper_narrower"] == "agrees"
    assert by["aspect_attnres_deeper_narrower"] == by["aspect_attnres_beats_pre_ln_deepest"] == "agrees"
    by = judged(lambda v: 0.1 if v == "attnres" else -0.1)
    assert set(by.values()) == {"disagrees"}


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"aspect_depths": (1, 4, 16)}, "one depth per width"),
        ({"aspect_widths": (16, 32), "aspect_depths": (4, 1)}, "aspect_depths must be strictly increasing"),
        ({"aspect_depths": (1, 3)}, "one size for every shape"),
        ({"aspect_variants": ("hyper",)}, "aspect_variants"),
    ],
)
def test_bad_aspect_shapes_name_the_field(over, match):
    with pytest.raises(ValueError, match=match):
        pz.Config.preset("smoke", **over)


def test_muon_ratio_is_nan_where_adamw_never_improves(smoke):
    """AdamW at a rate that only raises the loss reaches its own final loss at update 0: no ratio, no crash."""
    from probes.parameterisation import muon_vs_adamw

    data = smoke.data.copy(deep=True)
    steps = data["muon_eval_step"].values
    data["muon_curve"].loc[dict(muon_optimiser="adamw")] = 3.0 + steps / steps[-1]  # rising from the start
    data["muon_best_lr_index"][:] = 1  # every tuned rate inside its grid: the scope check holds
    ratio, _ = muon_vs_adamw.ratios(dataclasses.replace(smoke, data=data))
    assert np.isnan(ratio).all()
    led = Ledger("parameterisation", preset="full")
    muon_vs_adamw.claims(led, (dataclasses.replace(smoke, data=data),))
    d = smoke.config.muon.widths[0]
    assert led[f"muon_adamw_updates_ratio_d{d}"].verdict == "undecided"
