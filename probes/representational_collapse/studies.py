"""The declared studies of the representational-collapse probe: the designs behind notebook 05
(``python -m probes study representational_collapse STUDY``)."""

from __future__ import annotations

from analysis.probing.studies import Study, designs_ledger
from analysis.theory import representational_collapse as th
from probes.representational_collapse.config import REPLICATES, Config

CHEAP = {"dtypes": ("bfloat16",), "sensitivity": False}  # the sweeps: one low-precision format, no sensitivity
UNIFORM = {"attention": "uniform", "norm": "none", "d_mlp": 0}  # attention that averages, no norm or MLP
# collapse measured beyond max_len by the probe (the claim collapse_length_<dtype> lives in its ledger)
EXTEND = {
    "repeat_last": {"extend_dtype": "float16", "extend_lo": 0.5, "extend_hi": 2.0, "extend_lengths": 5},
    "counting": {"extend_dtype": "float32", "extend_lo": 3.0, "extend_hi": 6.0, "extend_lengths": 4, "extend_bases": 2},
    "early_token": {},
}
SENSITIVITY_DEPTHS = {"smoke": (1, 2), "full": (1, 2, 3)}
SEPARATOR_EVERY = 3


def notebook_base(preset: str, seed: int = 0, n_layers: int = 2, max_len: int = 1024, n_bases: int = 6) -> Config:
    """The configuration every design of notebook 05 starts from; the parameters are its parameter cell (the
    smoke preset keeps its own lengths and samples)."""
    extra = {"max_len": max_len, "n_bases": n_bases} if preset == "full" else {}
    return Config.preset(preset, seed=seed, n_layers=n_layers, **extra)


def main_designs(preset: str, base: Config) -> dict[str, dict]:
    """One design per pair family, each with its extension beyond max_len (notebook 05 sections 1-3)."""
    return {f: {"family": f, "sensitivity": False, **EXTEND[f]} for f in th.FAMILIES}


def sensitivity_designs(preset: str, base: Config) -> dict[str, dict]:
    """The last state's sensitivity to each position, per depth, for pre-LN softmax and uniform attention
    (notebook 05 section 4; full: short distances, 6 lengths, fitted from 8)."""
    sens = {"max_len": 128, "n_lengths": 6, "fit_lo": 8.0} if preset == "full" else {}
    sweep = dict(CHEAP, sensitivity=True)
    out = {f"sens_softmax_L{L}": {"n_layers": L, **sweep, **sens} for L in SENSITIVITY_DEPTHS[preset]}
    out |= {f"sens_uniform_L{L}": {"n_layers": L, **UNIFORM, **sweep, **sens} for L in SENSITIVITY_DEPTHS[preset]}
    return out


def position_designs(preset: str, base: Config) -> dict[str, dict]:
    """Positional encodings and separators on the repeat and counting pairs (notebook 05 section 5)."""
    fams = ("repeat_last", "counting")
    out = {f"{f}_pos_{p}": {"family": f, "pos": p, **CHEAP} for f in fams for p in ("rope", "learned")}
    out |= {f"{f}_sep{SEPARATOR_EVERY}": {"family": f, "separator_every": SEPARATOR_EVERY, **CHEAP} for f in fams}
    return out


def trained_designs(preset: str, base: Config) -> dict[str, dict]:
    """Every family on a model trained on the Markov language (one sensitivity: it does not depend on the
    family; notebook 05 section 6)."""
    return {
        f"{f}_trained": {"family": f, "trained": True, **CHEAP, "sensitivity": f == th.FAMILIES[0]} for f in th.FAMILIES
    }


def _designs(name: str, description: str, designs, figure: str) -> Study:
    return Study(
        name=name,
        description=description,
        base=notebook_base,
        grid=None,
        designs=designs,
        replicates=REPLICATES,
        combine=dict,
        claims=designs_ledger,
        figure=figure,
    )


STUDIES = {
    "main": _designs(
        "main",
        "the three pair families at every precision, with the collapse beyond max_len (notebook 05 sections 1-3)",
        main_designs,
        "rc_distance",
    ),
    "sensitivity": _designs(
        "sensitivity",
        "the last state's sensitivity to each position against the path count, "
        "per depth, softmax and uniform attention (notebook 05 section 4)",
        sensitivity_designs,
        "rc_sensitivity",
    ),
    "positions": _designs(
        "positions",
        "RoPE and learned positions, and separators, on the repeat and counting pairs (notebook 05 section 5)",
        position_designs,
        "rc_pos",
    ),
    "trained": _designs(
        "trained",
        "every pair family on a model trained on the Markov language (notebook 05 section 6)",
        trained_designs,
        "rc_trained",
    ),
}
