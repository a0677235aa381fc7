"""The notebooks' explorers and first look: each compute function (what a knob change calls) against the theory
modules or an independent computation, the widget and static paths, and the committed-results summary.
Speed is measured in bench/run.py (``--only explorers``), never here."""

from __future__ import annotations

import json
import math

import nbformat
import numpy as np
import pytest

import probes
from analysis.core.paths import NOTEBOOKS
from analysis.notebook import explorers as ex
from analysis.notebook import firstlook
from analysis.theory import associative_recall as th_ar
from analysis.theory import attention_entropy as th_ae
from analysis.theory import prompt_forgetting as th_pf
from analysis.theory import signal_propagation as th_sp
from analysis.theory.icl_gd import closed_forms as th_icl
from companions import explorers as pe

PNG = b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------------------------------------- compute functions
@pytest.mark.parametrize("kernel", ex.ENTROPY_KERNELS)
def test_entropy_curves_follow_the_theory_module(kernel):
    c = ex.entropy_curves(256, 0.5, kernel, reps=256)
    std = 0.5 * (np.log(c["n"]) if kernel == "ssmax" else 1.0)
    np.testing.assert_array_equal(c["std"], std)
    np.testing.assert_array_equal(c["lln"], th_ae.lln_entropy(c["n"], std))
    np.testing.assert_array_equal(c["fluctuation"], th_ae.partition_fluctuation(c["n"], std))
    # the Monte Carlo agrees with the exact quadrature (an independent computation) within its own error
    for n, s, m, se in zip(c["n"], c["std"], c["measured"], c["se"], strict=True):
        assert abs(m - th_ae.gaussian_entropy_exact(int(n), float(s))) < 5 * se + 1e-9


def test_entropy_at_zero_scale_is_ln_n():
    c = ex.entropy_curves(64, 0.0)
    np.testing.assert_allclose(c["measured"], np.log(c["n"]), rtol=1e-12)
    np.testing.assert_allclose(c["lln"], np.log(c["n"]), rtol=1e-12)


def test_relay_alpha_of_one_layer_is_exactly_one():
    c = ex.relay_alpha_curves(1, 8, 512)  # Delta^1_t = P / t beyond the prompt
    np.testing.assert_allclose(c["alpha_local"], 1.0, atol=1e-9)
    assert c["alpha_window"][0] == pytest.approx(1.0, abs=1e-9)


def test_relay_alpha_curves_match_the_relay_model():
    P, L, T = 16, 3, 4096
    c = ex.relay_alpha_curves(L, P, T, max_depth=4)
    t = np.arange(1, T + 1, dtype=float)
    delta = th_pf.relay_offsets(P, L, T)
    i = int(np.searchsorted(t, 1000.0))  # the local exponent is the slope of ln Delta against ln t
    k = int(np.searchsorted(c["t"], 1000.0))
    slope = -(math.log(delta[i + 1]) - math.log(delta[i - 1])) / (math.log(t[i + 1]) - math.log(t[i - 1]))
    assert c["alpha_local"][k] == pytest.approx(slope, rel=1e-6)
    np.testing.assert_array_equal(c["alpha_asymptotic"], th_pf.relay_local_exponent_asymptotic(P, L, c["t"]))
    assert abs(c["alpha_local"][-1] - c["alpha_asymptotic"][-1]) < 10 * L / T  # up to O(L/t)
    assert c["alpha_window"][L - 1] == th_pf.relay_alpha_window(P, L, 2.0 * P, T)
    assert np.all(np.diff(c["alpha_window"]) < 0)  # deeper relays forget more slowly


@pytest.mark.parametrize("x_dist", ex.ICL_INPUTS)
def test_eta_star_curves(x_dist):
    d, N, sigma = 5, 12, 0.5
    c = ex.eta_star_curves(d, N, sigma, x_dist, n_max=40)
    ref = th_icl.one_step_gd_theory(d, N, x_dist, sigma)
    assert c["eta_star_at_N"] == ref["eta_star"] and c["eta_star"][N - 1] == ref["eta_star"]
    assert c["loss"].min() >= c["loss_star_at_N"] - 1e-12  # the parabola's minimum is at eta*
    if x_dist == "gaussian":  # isotropic Gaussian: eta* = N / (N + d + 1 + sigma^2)
        ns = c["N"]
        np.testing.assert_allclose(c["eta_star"], ns / (ns + d + 1 + sigma**2), rtol=1e-12)


def test_readout_error_curves():
    c = ex.readout_error_curves(40, 16, draws=256)
    np.testing.assert_array_equal(c["theory"], th_ar.additive_readout_error(c["N"], 16))
    assert np.all(np.abs(c["measured"] - c["theory"]) < 5 * c["se"] + 1e-12)


def test_conv_heads_curves():
    c = ex.conv_heads_curves(5, 3, 0.8, seed=1)
    assert c["bound"][0] == 1.0 and c["bound"][-1] < 1e-12 and np.all(np.diff(c["bound"]) <= 1e-15)
    np.testing.assert_allclose(c["signed"], c["bound"], atol=1e-12)  # Eckart-Young: the truncated SVD attains it
    assert np.all(c["one_hot"] >= c["bound"] - 1e-12) and c["one_hot"][-1] < 1e-12  # K one-hot heads: exact
    s2 = c["sigma"] ** 2
    np.testing.assert_allclose(c["bound"][1:-1], [s2[h:].sum() / s2.sum() for h in range(1, 5)], rtol=1e-12)
    assert ex.conv_heads_curves(3, 2, 0.0)["bound"][1] < 1e-12  # decay 0: one tap, one head


def test_memory_slot_curves():
    c = ex.memory_slot_curves(0.8, 512, draws=512, seed=3)
    assert c["n"][0] == 1 and c["n"][-1] == 512
    np.testing.assert_allclose(c["softmax"][0], 1.0, atol=1e-10)  # one slot reads its value
    np.testing.assert_allclose(c["relu"], c["n"] * 0.8**2 / 2, rtol=1e-15)
    # the Monte Carlo (an independent computation) agrees with the exact quadrature within its own error
    assert np.all(np.abs(c["measured"] - c["softmax"]) <= 5 * c["se"] + 1e-12)
    assert c["softmax"][-1] == pytest.approx(c["lln"][-1], rel=0.02) and np.all(c["softmax"][1:] > c["uniform"][1:])
    zero = ex.memory_slot_curves(0.0, 64)
    np.testing.assert_allclose(zero["softmax"], zero["uniform"], rtol=1e-15)


def test_memory_slots_explorer_renders():
    data, text = ex.explore_memory_slots(static=True).png(s=1.2)
    assert data.startswith(PNG) and "e^(s^2)" in text


@pytest.fixture(scope="module")
def smoke():
    return {
        name: probes.cached_run(name, probes.get(name).Config.preset("smoke"), progress=False)
        for name in ("prompt_forgetting", "signal_propagation", "representational_collapse", "parameterisation")
    }


def test_relay_view_puts_the_cached_measurement_beside_the_model(smoke):
    data = smoke["prompt_forgetting"].data
    v = pe.relay_view(data, 2, 16, 512)
    np.testing.assert_array_equal(v["measured_alpha"], data["alpha"].values)
    np.testing.assert_array_equal(v["measured_local"], data["alpha_local"].isel(layer=1).values)
    assert "measured_local" not in pe.relay_view(data, data["alpha"].sizes["layer"] + 1, 16, 512)


def test_rank_collapse_view(smoke):
    data = smoke["signal_propagation"].data
    depth = int(data.depth.values[-1])
    v = pe.rank_collapse_view(data, depth, "full")
    for norm, r in v["norms"].items():
        np.testing.assert_allclose(r, data["rank_residual"].sel(norm=norm, depth=depth).values.mean(-1))
    r = v["variants"]["pure_attention"]
    np.testing.assert_allclose(v["dong"], th_sp.dong_bound(r[0], r[1] / r[0] ** 3, np.arange(r.size)))
    assert v["dong"][1] == pytest.approx(r[1])  # fitted to the first step
    with pytest.raises(ValueError, match="depth"):
        pe.rank_collapse_view(data, 999, "full")


def test_collapse_view_reproduces_the_probes_extrapolation(smoke):
    result = smoke["representational_collapse"]
    for dtype in ("bfloat16", "float16"):
        v = pe.collapse_view(result.data, dtype, float(result.scalars["slope"]))
        assert v["n_star"] == pytest.approx(result.scalars[f"collapse_n_extrapolated_{dtype}"], rel=1e-12)
        # the power law starts at the last measured point
        assert v["power_law"][0] == pytest.approx(v["distance"][-1])
    assert (
        pe.collapse_view(result.data, "float16", 2.0)["n_star"]
        < pe.collapse_view(result.data, "float16", 0.5)["n_star"]
    )


def test_parameterisation_view_puts_the_measured_updates_beside_the_derived_slopes(smoke):
    from analysis.theory import width as th_width

    data = smoke["parameterisation"].data
    width = int(data.width.values[-1])
    v = pe.parameterisation_view(data, "softmax", "adam", "mup", width)
    own = data["own_update"].sel(mixer="softmax", optimizer="adam")
    for layer in v["layers"]:
        np.testing.assert_allclose(v["sizes"][layer], own.sel(parameterisation="mup", layer=layer).mean("width_seed"))
        slope = np.polyfit(np.log(v["widths"]), np.log(v["laws"][layer]), 1)[0]
        assert slope == pytest.approx(th_width.own_update_exponent(layer, "adam", "mup", "softmax"), abs=1e-12)
    assert set(v["at_width"]) == {"standard", "mup"} and len(v["at_width"]["mup"]) == len(v["layers"])
    with pytest.raises(ValueError, match="width"):
        pe.parameterisation_view(data, "softmax", "adam", "mup", 3)


# ---------------------------------------------------------------------------------------------- explorer plumbing
def test_static_outside_a_kernel_and_under_workbench_static(monkeypatch):
    assert ex.is_static()  # pytest is no kernel
    monkeypatch.setenv(ex.STATIC_ENV, "1")
    assert ex.is_static()


def test_png_and_update():
    e = ex.explore_eta_star(static=True)
    first, text = e.png()
    assert first.startswith(PNG) and "η*" in text
    second, _ = e.png(N=50)
    assert second != first and e.values["N"] == 50
    with pytest.raises(ValueError, match="unknown control"):
        e.png(nope=1)


def test_widget_change_redraws():
    pytest.importorskip("ipywidgets")
    e = ex.explore_entropy(static=False)
    box = e.widget()
    image = box.children[-1]
    before = image.value
    dropdown = next(w for w in box.children[0].children if hasattr(w, "options"))
    dropdown.value = "ssmax"
    assert e.values["kernel"] == "ssmax" and bytes(image.value) != bytes(before) and bytes(image.value).startswith(PNG)


@pytest.mark.parametrize(
    "make", [pe.explore_relay, pe.explore_rank_collapse, pe.explore_collapse, pe.explore_parameterisation]
)
def test_cached_explorers_render(make):
    data, text = make("smoke", static=True).png()
    assert data.startswith(PNG) and "smoke preset" in text


# ---------------------------------------------------------------------------------------------- first look
def test_first_look_reads_the_committed_results():
    look = firstlook.gather("01_signal_propagation")
    names = {f["figure"] for f in look.figures}
    assert "signal_rank_collapse" in names and all(f["notebook"] == "01_signal_propagation" for f in look.figures)
    ledger = json.loads((firstlook.COMMITTED_FIGURES / "01_signal_propagation.claims.json").read_text())
    assert sum(look.claims.values()) == len(ledger["claims"])
    assert look.inputs  # the probe runs behind the figures, by result-cache key


def test_first_look_advice_follows_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path))
    look = firstlook.gather("01_signal_propagation")
    assert not look.cached and 'preset = "smoke"' in look.advice("full")
    for key in look.inputs:
        (tmp_path / "results" / "signal_propagation" / key).mkdir(parents=True)
    assert "in your cache" in firstlook.gather("01_signal_propagation").advice("full")
    assert "smoke" in look.advice("smoke")


def test_first_look_displays(capsys):
    firstlook.first_look("00_overview", "full")
    assert "Run all" in capsys.readouterr().out


NB = "01_signal_propagation"


def _bench_run(commit, date, seconds, cores=2, notebook=NB, smoke_only=False):
    """One run of a bench record: per-notebook cold-cache times per preset, as bench/run.py writes them."""
    per = lambda preset: {"preset": preset, "per_notebook_s": {notebook: seconds[preset]}, "exit_code": 0}
    results = (
        {"figures_smoke": per("smoke")} if smoke_only else {"figures": {preset: per(preset) for preset in seconds}}
    )
    run = {"machine": {"cpu": "Test CPU", "cores_visible": cores, "torch_threads": cores}, "commit": commit}
    return {**run, "results": results, **({"date": date} if date else {})}


def _write_bench(folder, name, *runs):
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps({"runs": list(runs)}))


def test_first_look_estimates_come_from_the_newest_benchmark(tmp_path, monkeypatch):
    bench = tmp_path / "bench"
    # the newest run is listed first, in the file whose name sorts first: neither file names nor the order of
    # runs decides (reading the files in order and letting later runs win would give 40 s)
    _write_bench(
        bench,
        "a-machine",
        _bench_run("newrun1", "2026-12-10", {"smoke": 226.0}, cores=4),
        _bench_run("oldrun1", "2026-11-01", {"smoke": 20.0, "full": 600.0}),
    )
    _write_bench(bench, "b-machine", _bench_run("midrun1", "2026-11-30", {"smoke": 40.0}))
    monkeypatch.setattr(firstlook, "BENCH_RESULTS", bench)
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache"))
    look = firstlook.gather(NB)
    assert {p: (t.seconds, t.commit) for p, t in look.timings.items()} == {
        "smoke": (226.0, "newrun1"),
        "full": (600.0, "oldrun1"),  # each preset from the newest run that measured it
    }
    assert firstlook.recorded_seconds(NB, bench) == {"smoke": 226.0, "full": 600.0}
    smoke = look.advice("smoke")
    assert "about 4 min on the recorded 4-core machine (benchmark of 2026-12-10 at commit newrun1)" in smoke
    assert "20 s" not in smoke and "40 s" not in smoke
    full = look.advice("full")  # not in the (empty) cache: both presets' estimates, each with its source
    assert "about 10 min on the recorded 2-core machine (benchmark of 2026-11-01 at commit oldrun1)" in full
    assert "(about 4 min on the recorded 4-core machine (benchmark of 2026-12-10 at commit newrun1))" in full
    # dates with their offsets: 01:00 at +05:00 is 20:00 UTC the day before, older than 21:00 UTC
    _write_bench(bench, "c-machine", _bench_run("tzrun01", "2026-12-11T01:00:00+05:00", {"smoke": 1.0}))
    _write_bench(bench, "d-machine", _bench_run("tzrun02", "2026-12-10T21:00:00+00:00", {"smoke": 2.0}))
    assert firstlook.recorded_timings(NB, bench)["smoke"].commit == "tzrun02"
    # the figures_smoke benchmark counts as a smoke measurement too
    _write_bench(bench, "e-machine", _bench_run("smkrun1", "2026-12-12", {"smoke": 3.0}, smoke_only=True))
    assert firstlook.recorded_timings(NB, bench)["smoke"].commit == "smkrun1"


def test_first_look_says_plainly_when_no_benchmark_measured_the_notebook(tmp_path, monkeypatch):
    bench = tmp_path / "bench"
    _write_bench(bench, "machine", _bench_run("otherrun", "2026-12-10", {"smoke": 5.0, "full": 9.0}, notebook="x"))
    monkeypatch.setattr(firstlook, "BENCH_RESULTS", bench)
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache"))
    look = firstlook.gather(NB)
    assert look.timings == {} and look.inputs and not look.cached
    assert f"no benchmark has measured {NB} at preset smoke" in look.advice("smoke")
    full = look.advice("full")
    assert f"no benchmark has measured {NB} at preset full" in full
    assert f"no benchmark has measured {NB} at preset smoke" in full
    assert "about" not in look.advice("smoke") + full
    # a benchmark of the full preset only: the smoke advice still says it has no measurement
    _write_bench(bench, "machine", _bench_run("fullrun", "2026-12-10", {"full": 300.0}))
    look = firstlook.gather(NB)
    assert "about 5 min on the recorded 2-core machine" in look.advice("full")
    assert f"no benchmark has measured {NB} at preset smoke" in look.advice("smoke")


def test_first_look_dates_a_run_by_its_commit_in_git(tmp_path):
    head = firstlook._git("rev-parse", "--short", "HEAD").strip()
    if not head:
        pytest.skip("no git history here")
    date = firstlook.commit_dates([head])[head]
    # the HEAD run records no date: git's date of its commit makes it newer than a run dated 2000-01-01
    _write_bench(
        tmp_path, "m", _bench_run(head, None, {"smoke": 30.0}), _bench_run("oldrun1", "2000-01-01", {"smoke": 9.0})
    )
    t = firstlook.recorded_timings(NB, tmp_path)["smoke"]
    assert (t.seconds, t.commit, t.date, t.commits_ago) == (30.0, head, date, 0)
    assert t.source() == f"on the recorded 2-core machine (benchmark of {date[:10]} at commit {head}, 0 commits ago)"


# ---------------------------------------------------------------------------------------------- notebooks
PROBE_NOTEBOOKS = {
    "01_signal_propagation": "explore_rank_collapse",
    "02_attention_entropy": "explore_entropy",
    "03_prompt_forgetting": "explore_relay",
    "04_icl_gd": "explore_eta_star",
    "05_representational_collapse": "explore_collapse",
    "07_linear_attention": "explore_readout",
    "08_attention_only": "explore_conv_heads",
    "09_softmax_alternatives": "explore_memory_slots",
}


def test_every_probe_notebook_has_an_explorer_and_every_notebook_a_first_look():
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        code = [c.source for c in nb.cells if c.cell_type == "code"]
        assert "first_look(" in code[1], f"{path.name}: the cell after the parameters shows the committed results"
        if path.stem in PROBE_NOTEBOOKS:
            assert any(PROBE_NOTEBOOKS[path.stem] + "()" in s for s in code), path.name
