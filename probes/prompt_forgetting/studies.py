"""The declared studies of the prompt-forgetting probe: the designs behind notebook 03
(``python -m probes study prompt_forgetting STUDY``)."""

from __future__ import annotations

import inspect
from functools import partial

from analysis.claims.ledger import Ledger
from analysis.probing.replicates import Replicates
from analysis.probing.studies import Study, replicates_by, tagged_ledger
from probes.prompt_forgetting.config import Config
from probes.prompt_forgetting.cross_run import (
    bias_claims,
    depth_law,
    depth_law_claims,
    depth_sweep_claims,
    trained_vs_untrained_claims,
)
from probes.prompt_forgetting.models import REPLICATES, weight_seeds


def notebook_base(
    preset: str,
    seed: int = 0,
    n_layers: int = 2,
    d_model: int = 64,
    n_heads: int = 2,
    prompt_len: int = 16,
    cont_len: int = 4096,
    n_pairs: int = 6,
) -> Config:
    """The configuration every design of notebook 03 starts from; the parameters are its parameter cell.
    The full preset takes them as given (fit from t = 64); smoke shrinks the continuation to 128 tokens,
    the pairs to 2 and the width to 32 (fit from t = 24)."""
    full = preset == "full"
    return Config.preset(
        preset,
        n_layers=n_layers,
        d_model=d_model if full else 32,
        n_heads=n_heads,
        prompt_len=prompt_len,
        cont_len=cont_len if full else 128,
        n_pairs=n_pairs if full else 2,
        fit_lo=64.0 if full else 24.0,
        seed=seed,
    )


DEPTH_LAW_LAYERS = {"smoke": (1, 2, 3), "full": (1, 2, 3, 4, 6, 8, 12)}


def depths_x_seeds(n_layers: dict[str, tuple[int, ...]]):
    """A study grid: the depths ``n_layers[preset]`` x independent weight seeds (:func:`weight_seeds`,
    ``REPLICATES[preset]`` of them: the replicates :func:`probes.replicated_run` gives each depth)."""

    def grid(preset: str, base: Config) -> dict[str, tuple]:
        return {"n_layers": n_layers[preset], "seed": tuple(weight_seeds(base.seed, REPLICATES[preset]))}

    return grid


depth_law_grid = depths_x_seeds(DEPTH_LAW_LAYERS)


def sweep_base(preset: str, **params) -> Config:
    """:func:`notebook_base` at the sweep length of notebook 03's shorter-context sections: a quarter of the
    continuation (smoke: 96 tokens), fitted from half the main fit start (smoke: 24)."""
    base = notebook_base(preset, **params)
    full = preset == "full"
    return base.replace(cont_len=base.cont_len // 4 if full else 96, fit_lo=base.fit_lo / 2 if full else 24.0)


# sweep_base keeps notebook_base's parameters (the studies list them from its signature)
sweep_base.__signature__ = inspect.signature(notebook_base)


DEPTH_SWEEP_LAYERS = {"smoke": (1, 2), "full": (1, 2, 3)}


depth_sweep_grid = depths_x_seeds(DEPTH_SWEEP_LAYERS)


by_design = partial(replicates_by, field="n_layers")  # a depth grid's runs: one Replicates per depth


REGIME_LAYERS = {"smoke": (2, 3), "full": (2, 3, 4)}


REGIME_GAIN = {"smoke": 0.15, "full": 0.4}  # brings max|logit| below ln(T/P)/2 at these depths (notebook 03 sec. 5)


def regime_base(preset: str, **params) -> Config:
    """:func:`notebook_base` with the attention logits scaled down (``logit_gain = REGIME_GAIN[preset]``)."""
    return notebook_base(preset, **params).replace(logit_gain=REGIME_GAIN[preset])


regime_base.__signature__ = inspect.signature(notebook_base)


regime_grid = depths_x_seeds(REGIME_LAYERS)


def layers_ledger(designs: list[Replicates]) -> Ledger:
    """Each design's own ledger (judged over its seeds), tagged ``L<n_layers>``: the claims of a study whose
    designs differ in depth and make no cross-design claim."""
    tagged = {f"L{r.config.model.n_layers}": r.ledger for r in designs}
    if len(tagged) != len(designs):
        raise ValueError(f"designs must differ in layers, got {[r.config.model.n_layers for r in designs]}")
    return tagged_ledger(tagged)


UNIFORM = {"attention": "uniform", "norm": "none", "d_mlp": 0, "dtype": "float64"}  # the matrix relay network (exact)


TRAIN_LAYERS = {"smoke": (1, 2), "full": (2, 4, 6, 8)}


TRAIN_DATA = ("corpus", "markov")


TRAINING = {  # the training recipe per data, per preset (smoke: the preset's own)
    "full": {
        "corpus": {"train_steps": 2000, "train_seq_len": 128},
        "markov": {"train_steps": 600, "train_seq_len": 128},
    },
    "smoke": {"corpus": {}, "markov": {}},
}


TRAJECTORY = {"smoke": ("corpus", 2), "full": ("corpus", 4)}  # the trained run that also measures alpha along training


TRAJECTORY_FRACTIONS = (0.01, 0.1, 0.3, 0.5, 0.7, 1.0)  # its checkpoints, as fractions of its updates


PROMPT_LENGTHS = {"smoke": (4, 8), "full": (4, 16, 64)}


VARIANTS = {  # tag -> (label, overrides): the architecture variants of notebook 03 section 9
    "pre_ln_softmax": ("pre-LN softmax", {}),
    "post_ln_softmax": ("post-LN softmax", {"norm": "post"}),
    "pre_rmsnorm_softmax": ("pre-RMSNorm softmax", {"norm_type": "rmsnorm"}),
    "pre_ln_ssmax": ("pre-LN ssmax", {"attention": "ssmax"}),
    "pre_ln_sigmoid": ("pre-LN sigmoid", {"attention": "sigmoid"}),
    "uniform": ("uniform (relay)", UNIFORM),
}


def design_replicates(preset: str, config: Config) -> int:
    """Independent seeds of one design: :data:`REPLICATES` for an untrained model, one for a trained one (the
    figure pipeline's cost; :data:`TRAINED_ONE_SEED`)."""
    return 1 if config.trained else REPLICATES[preset]


def kernel_designs(preset: str, base: Config) -> dict[str, dict]:
    """Pre-LN softmax and the uniform relay network at the main length (notebook 03 section 1)."""
    return {"softmax": {}, "uniform": dict(UNIFORM)}


def trajectory_checkpoints(preset: str, base: Config) -> tuple[int, ...]:
    """The updates at which the trajectory run measures alpha (0 and :data:`TRAJECTORY_FRACTIONS` of its steps)."""
    data, _ = TRAJECTORY[preset]
    steps = base.replace(**TRAINING[preset][data]).train.steps
    return tuple(sorted({0, *(round(f * steps) for f in TRAJECTORY_FRACTIONS)}))


def training_designs(preset: str, base: Config) -> dict[str, dict]:
    """Each data and depth, untrained and trained on that data (the same text, prompts and continuations; notebook
    03 section 3); the trajectory run also measures alpha along training (section 4)."""
    out = {}
    for data in TRAIN_DATA:
        for L in TRAIN_LAYERS[preset]:
            extra = (
                {"train_checkpoints": trajectory_checkpoints(preset, base)} if (data, L) == TRAJECTORY[preset] else {}
            )
            out[f"untrained_{data}_L{L}"] = {"n_layers": L, "data": data}
            out[f"trained_{data}_L{L}"] = {
                "n_layers": L,
                "data": data,
                "trained": True,
                **TRAINING[preset][data],
                **extra,
            }
    return out


def training_ledgers(designs: dict[str, Replicates]) -> dict[str, Ledger]:
    """Each design's ledger, and after each trained one the paired claim against its untrained twin at the same
    (first) seed, tagged ``trained_vs_untrained_<data>_L<n_layers>``."""
    out = {}
    for tag, r in designs.items():
        out[tag] = r.ledger
        if tag.startswith("trained_"):
            twin = tag.replace("trained_", "untrained_", 1)
            out[tag.replace("trained_", "trained_vs_untrained_", 1)] = trained_vs_untrained_claims(
                designs[twin].main, r.main
            )
    return out


def bias_designs(preset: str, base: Config) -> dict[str, dict]:
    """Softmax and uniform at the sweep length with and without the dilution-cancelling bias (section 4)."""
    return {
        "plain_softmax": {},
        "plain_uniform": dict(UNIFORM),
        "bias_softmax": {"logit_bias": "cancel"},
        "uniform_bias": {**UNIFORM, "logit_bias": "cancel"},
    }


def bias_ledgers(designs: dict[str, Replicates]) -> dict[str, Ledger]:
    """The uniform network's ledger with the bias, and the bias claims (softmax with against without)."""
    return {
        "uniform_bias": designs["uniform_bias"].ledger,
        "bias_softmax": bias_claims(designs["plain_softmax"], designs["bias_softmax"]),
    }


def prompt_length_designs(preset: str, base: Config) -> dict[str, dict]:
    """The prompt length P at the sweep length, fitted from at least 2P after the prompt (section 8, right)."""
    full = preset == "full"
    return {
        f"P{P}": {"prompt_len": P, "fit_lo": max(2.0 * P, base.fit_lo) if full else 24.0}
        for P in PROMPT_LENGTHS[preset]
    }


def variant_designs(preset: str, base: Config) -> dict[str, dict]:
    """The architecture variants at the sweep length (:data:`VARIANTS`; section 9)."""
    return {tag: dict(over) for tag, (_label, over) in VARIANTS.items()}


def uniform_depth_designs(preset: str, base: Config) -> dict[str, dict]:
    """The uniform relay network at each depth of the depth sweep (section 10)."""
    return {f"uniform_L{L}": {**UNIFORM, "n_layers": L} for L in DEPTH_SWEEP_LAYERS[preset]}


def _own_ledgers(designs: dict[str, Replicates]) -> dict[str, Ledger]:
    return {tag: r.ledger for tag, r in designs.items()}


def _variant_ledgers(designs: dict[str, Replicates]) -> dict[str, Ledger]:
    return {"variant_uniform": designs["uniform"].ledger}


def _grid_study(name: str, description: str, base, grid, combine, claims, figure: str) -> Study:
    return Study(
        name=name,
        description=description,
        base=base,
        grid=grid,
        combine=combine,
        claims=claims,
        figure=figure,
    )


def _designs_study(name: str, description: str, base, designs, ledgers, figure: str) -> Study:
    return Study(
        name=name,
        description=description,
        base=base,
        grid=None,
        designs=designs,
        replicates=design_replicates,
        combine=dict,
        claims=lambda combined: tagged_ledger(ledgers(combined)),
        figure=figure,
    )


STUDIES = {
    "depth_law": _grid_study(
        "depth_law",
        "alpha against depth over independent weight seeds, against the relay model over the same window (untrained "
        "pre-LN softmax at the main continuation length; notebook 03 section 2)",
        notebook_base,
        depth_law_grid,
        depth_law,
        depth_law_claims,
        "pf_alpha_depth",
    ),
    "depth_sweep": _grid_study(
        "depth_sweep",
        "alpha against depth at the sweep length, each depth over independent seeds, its slope against the relay "
        "model's (notebook 03 section 8, left)",
        sweep_base,
        depth_sweep_grid,
        by_design,
        depth_sweep_claims,
        "pf_alpha_summary",
    ),
    "bound_regime": _grid_study(
        "bound_regime",
        "the bound inside its regime: logits scaled down so max|logit| < ln(T/P)/2, the bound's ratio not growing "
        "and both of the theorem's conditions, each depth over independent seeds (notebook 03 section 5)",
        regime_base,
        regime_grid,
        by_design,
        layers_ledger,
        "pf_bound_regime",
    ),
    "kernels": _designs_study(
        "kernels",
        "pre-LN softmax and the uniform relay network at the main length (notebook 03 section 1)",
        notebook_base,
        kernel_designs,
        _own_ledgers,
        "pf_distance",
    ),
    "training": _designs_study(
        "training",
        "untrained and trained on corpus text and on the Markov language at each "
        "depth, with alpha along training (notebook 03 sections 3-4)",
        notebook_base,
        training_designs,
        training_ledgers,
        "pf_trained_depth",
    ),
    "bias": _designs_study(
        "bias",
        "the dilution-cancelling bias against none, softmax and uniform, at the sweep length (notebook 03 section 4)",
        sweep_base,
        bias_designs,
        bias_ledgers,
        "pf_bias_training",
    ),
    "prompt_lengths": _designs_study(
        "prompt_lengths",
        "alpha against the prompt length at the sweep length (notebook 03 section 8, right)",
        sweep_base,
        prompt_length_designs,
        _own_ledgers,
        "pf_alpha_summary",
    ),
    "variants": _designs_study(
        "variants",
        "norm placement, norm kind and attention kernel at the sweep length (notebook 03 section 9)",
        sweep_base,
        variant_designs,
        _variant_ledgers,
        "pf_variants",
    ),
    "uniform_depths": _designs_study(
        "uniform_depths",
        "the uniform relay network at each depth of the depth sweep (notebook 03 section 10)",
        sweep_base,
        uniform_depth_designs,
        _own_ledgers,
        "pf_bound_constant",
    ),
}
