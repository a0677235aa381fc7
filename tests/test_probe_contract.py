"""The probe contract, on every registered probe (``probes.available()``).

``test_probe_framework.py`` checks the framework itself on a toy probe, and ``test_properties.py`` runs
many generated configs per probe through the ``--json`` text. Here, for each real probe:

* its ``Config`` has a ``smoke`` and a ``full`` preset and documents every field (non-empty help);
* a smoke run returns a ``Result`` that survives :meth:`Result.save` / :meth:`Result.load` (the result
  cache's format) with the same scalars, claims and arrays;
* a second smoke run with the same seed, from an empty cache (so trained models are trained again),
  gives the same scalars (except wall-clock times, ``*time_s``) and claims as the session's smoke result;
* ``python -m probes show NAME`` states the probe's model requirements.

The smoke result of each probe is the session's (``smoke_result`` in conftest.py), computed once for the whole suite.
"""

from __future__ import annotations

import math

import pytest

import probes
from analysis.claims.ledger import Ledger
from analysis.probing import cli
from analysis.probing.base import judged, run_probe
from probes import Result

PROBES = probes.available()
WALL_CLOCK_SUFFIX = "time_s"  # scalars that time the run (e.g. icl_gd's train_time_s): not computed numbers


def _smoke_run(name: str, cache: str) -> Result:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WORKBENCH_CACHE", cache)  # empty: nothing trained is reused
        return run_probe(name, "smoke", progress=False)


@pytest.fixture(scope="module")
def smoke_results(smoke_result) -> dict[str, Result]:
    """Each probe's smoke result from the session's cache (conftest's ``smoke_result``), loaded once per module."""
    runs: dict[str, Result] = {}

    def get(name: str) -> Result:
        if name not in runs:
            runs[name] = smoke_result(name)
        return runs[name]

    return get


def assert_same_scalars(a: dict, b: dict, skip_wall_clock: bool = False) -> None:
    assert a.keys() == b.keys()
    for key in a:
        if skip_wall_clock and key.endswith(WALL_CLOCK_SUFFIX):
            continue
        x, y = a[key], b[key]
        if isinstance(x, float) and math.isnan(x):
            assert isinstance(y, float) and math.isnan(y), key
        else:
            assert type(x) is type(y) and x == y, (key, x, y)


@pytest.mark.parametrize("name", PROBES)
def test_config_has_smoke_and_full_presets_and_documents_every_field(name):
    Config = probes.get(name).Config
    assert {"smoke", "full"} <= set(Config.PRESETS), f"{name}: PRESETS has {sorted(Config.PRESETS)}"
    assert Config.preset("full") == Config()  # the defaults are the full experiment
    assert Config.preset("smoke").preset_name == "smoke"
    undocumented = [spec.name for spec in Config.field_specs(include_preset=True) if not spec.help.strip()]
    assert not undocumented, f"{name}: fields without help: {undocumented}"


@pytest.mark.parametrize("name", PROBES)
def test_smoke_result_round_trips_through_save_and_load(name, smoke_results, tmp_path):
    result = smoke_results(name)
    assert isinstance(result, Result) and result.probe == name and result.preset == "smoke"
    assert result.version == probes.get(name).VERSION
    loaded = Result.load(result.save(tmp_path / name))  # the Config class comes from the registry
    assert loaded.config == result.config and loaded.version == result.version
    assert_same_scalars(loaded.scalars, result.scalars)
    assert loaded.ledger.to_dict() == result.ledger.to_dict()
    assert loaded.identical(result)  # arrays, dims, coordinates and attributes too


@pytest.mark.parametrize("name", PROBES)
def test_claims_are_judged_again_from_the_saved_result_alone(name, smoke_results, tmp_path):
    """Every probe's ``check_claims(result)`` reads the result only: judged again after a save and load (as
    :func:`probes.cached_run` does on every hit), the ledger is the one the run recorded, claim for claim."""
    assert callable(getattr(probes.get(name), "check_claims", None)), f"{name} has no check_claims(result)"
    result = smoke_results(name)
    loaded = Result.load(result.save(tmp_path / name))
    loaded.ledger = Ledger(name, preset=loaded.preset)  # forget the stored ledger
    assert judged(name, loaded).ledger.to_dict() == result.ledger.to_dict()


@pytest.mark.parametrize("name", PROBES)
def test_smoke_run_is_deterministic(name, smoke_results, tmp_path):
    first = smoke_results(name)
    again = _smoke_run(name, str(tmp_path / "cache"))
    assert_same_scalars(again.scalars, first.scalars, skip_wall_clock=True)
    assert again.ledger.to_dict() == first.ledger.to_dict()


@pytest.mark.parametrize("name", PROBES)
def test_show_states_the_model_requirements(name, capsys):
    assert cli.main(["show", name]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if "model requirements:" in ln)
    requires = probes.get(name).REQUIRES
    if requires is None:
        assert "takes no model" in line
    elif not requires:
        assert "any model" in line
    else:
        for key, value in requires.items():
            assert f"{key}={value!r}" in line, (line, key)


def test_every_exported_name_exists():
    """A probe package's (and every framework module's) ``__all__`` names only what the module has: a re-export
    dropped by a refactor is an AttributeError for every user of the old name."""
    import importlib
    import pkgutil

    names = ["probes"]  # the experiments package re-exports the machinery's entry points
    for package in ("analysis.probing", "companions"):  # the machinery and the notebook companions
        root = importlib.import_module(package)
        names += [f"{package}.{m.name}" for m in pkgutil.iter_modules(root.__path__)]
    names += [f"probes.{p}.{m.name}" for p in probes.available() for m in pkgutil.iter_modules(probes.get(p).__path__)]
    missing = {}
    for name in names:
        module = importlib.import_module(name)
        gone = [a for a in getattr(module, "__all__", ()) if not hasattr(module, a)]
        if gone:
            missing[name] = gone
    assert not missing, f"__all__ names that do not exist: {missing}"
