"""The declared studies of the signal-propagation probe: the runs behind notebook 01
(``python -m probes study signal_propagation STUDY``)."""

from __future__ import annotations

from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from analysis.probing.studies import Study
from probes.signal_propagation.config import Config

TRAINED_NORMS = ("pre", "post", "mix", "peri", "ln_scaling")  # the placements trained at one depth


TRAINED_REPLICATES = {"smoke": 2, "full": 5}  # independent seeds (the same checkpoints as the curse runs)


def init_base(preset: str, seed: int = 0, d_model: int = 32, n_heads: int = 4, trained_depth: int = 12) -> Config:
    """The initialisation sweep of notebook 01 (every placement and depth) with the attention phase diagram;
    the parameters are the notebook's parameter cell (``trained_depth`` is the trained study's)."""
    return Config.preset(preset, seed=seed, d_model=d_model, n_heads=n_heads, phase=True)


def trained_base(preset: str, seed: int = 0, d_model: int = 32, n_heads: int = 4, trained_depth: int = 12) -> Config:
    """The trained comparison of notebook 01: the placements of :data:`TRAINED_NORMS` the preset has, trained
    at one depth (``trained_depth``; smoke: 4) over :data:`TRAINED_REPLICATES` independent seeds."""
    if isinstance(trained_depth, bool) or not isinstance(trained_depth, int) or trained_depth < 4:
        raise ValueError(f"trained_depth must be an integer >= 4, got {trained_depth!r}")
    init = Config.preset(preset, seed=seed, d_model=d_model, n_heads=n_heads)
    return Config.preset(
        preset,
        seed=seed,
        d_model=d_model,
        n_heads=n_heads,
        trained=True,
        norms=tuple(n for n in TRAINED_NORMS if n in init.norms),
        n_samples=TRAINED_REPLICATES[preset],
        depths=(trained_depth if preset == "full" else 4,),
    )


def _single(results: list[Result]) -> Result:
    return results[0]


def _ledger_of(result: Result) -> Ledger:
    return result.ledger


def _one_run(preset: str, base: Config) -> dict:
    """The grid of a study of one run (its seeds inside it): no axis."""
    return {}


def _one_run_study(name: str, description: str, base) -> Study:
    """A study of the one run ``base`` configures; its ledger is the run's own."""
    return Study(name=name, description=description, base=base, grid=_one_run, combine=_single, claims=_ledger_of)


STUDIES = {
    "init": _one_run_study(
        "init",
        "every norm placement at every depth at initialisation, rank collapse, DeepNorm's update and the attention "
        "phase diagram (one run, its seeds inside; notebook 01 sections 1-5 and 8)",
        init_base,
    ),
    "trained": _one_run_study(
        "trained",
        "the placements trained at one depth over independent seeds, with the DeepNet stability and Curse-of-Depth "
        "runs (notebook 01 sections 2, 4, 5-7)",
        trained_base,
    ),
}
