"""The claims of ``06_real_models``: the probes on real networks through :class:`analysis.zoo.hf.HFModel`.

A notebook companion, not a probe (:func:`analysis.probing.registry.companion_modules`): ``06_real_models`` builds its
models and configurations with :func:`companions.real_models.design.build` (per preset, :data:`design.DESIGN`),
calls these functions, plots what they measured and saves their ledgers (with the ledgers of the probe
runs they made, which the notebook includes by role). Each function measures one thing and records
the claims about it in a :class:`Ledger` of context :data:`CONTEXT`; it returns a :class:`Measured`.

* :func:`gpt2_zoo_agreement` -- a random GPT-2 and our zoo copy of it compute the same function:
  identities at every hook point and in every probe (:data:`PROBE_AGREEMENT`);
* :func:`no_skip_collapse` -- Dong et al. 2021: without skip connections the token representations
  collapse (relative residual falls), with them they do not; a direction per model;
* :func:`entropy_vs_gaussian` (claims: :func:`entropy_claims`) -- the attention-entropy deficit ln n - H
  of a model against the i.i.d.-Gaussian-logit theory at each head's measured logit std (worst layer).

**Uncertainty (the one band policy, :mod:`analysis.claims.evidence`).** A model is either one named *pretrained*
network (its name in ``pretrained``): a property of those fixed weights, whose within-run SE (over text
batches, over heads) may stand alone; or it has *random weights* (a re-initialisation, a random GPT-2, a zoo
model): the claim is then about initialisations and takes its 95% t band over independent ones, passed as a
list (replicate 0 first; replicate ``i`` seeded ``analysis.claims.evidence.replicate_seed(seed, i)`` by the caller,
e.g. ``[encoder.reinitialised(s) for s in replicate_seeds(seed, 5)]``). A random model passed alone is recorded
``not_evaluated``: one initialisation's within-run SE says nothing about another's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

import probes
from analysis.claims.evidence import mean_se, replicate_seed
from analysis.claims.ledger import Claim, Ledger
from analysis.probing.base import Result, result_difference, run_probe
from analysis.zoo.hooks import run_with_cache
from companions.real_models import declarations  # noqa: F401  (registers the declared claims)

CONTEXT = "real_models"
RESOLUTION = 1e-9  # floor of a relative residual before its log: far below float32's ~1e-7 resolution
RANDOM_ALONE = (
    "random weights and a single initialisation: a claim about initialisations needs >= 2 independent ones (pass "
    "a list, replicate seeds), or name the model in pretrained if its weights are one fixed, named network"
)


def initialisations(entry: Any) -> list[Any]:
    """The independent initialisations of a model entry: a list (or tuple of models) as given, one model alone.

    A pair ``(with skips, without skips)`` of :func:`no_skip_collapse` is one model; a list of pairs, several."""
    return list(entry) if isinstance(entry, list) else [entry]


# What each probe is compared on when two models compute the same function (smoke preset plus these
# overrides; arrays compared; coordinates selected first). Used by tests/test_hf.py and 06_real_models.
PROBE_AGREEMENT: dict[str, tuple[dict[str, Any], tuple[str, ...], dict[str, Any] | None]] = {
    "attention_entropy": ({"ctx_lens": (16, 64, 256)}, ("entropy", "entropy_norm", "max_weight", "logit_std"), None),
    "signal_propagation": (
        {"seq_len": 16, "n_samples": 2, "batch_size": 4},
        ("resid_var", "token_cosine", "rank_residual", "angular_distance", "jacobian_identity_gap"),
        None,
    ),
    "prompt_forgetting": ({}, ("distance", "alpha_local"), None),
    "representational_collapse": ({"dtypes": ("float32",)}, ("distance", "sensitivity"), {"dtype": "float64"}),
}


def probe_agreement(probe: str, model_a: Any, model_b: Any) -> dict[str, float]:
    """Largest relative difference of each array in :data:`PROBE_AGREEMENT` between two models' results."""
    if probe not in PROBE_AGREEMENT:
        raise ValueError(f"probe must be one of {sorted(PROBE_AGREEMENT)}, got {probe!r}")
    overrides, names, select = PROBE_AGREEMENT[probe]
    config = probes.get(probe).Config.preset("smoke", **overrides)
    a = run_probe(probe, config, model=model_a, progress=False)
    b = run_probe(probe, config, model=model_b, progress=False)
    return result_difference(a, b, names, select)


@dataclass(frozen=True)
class Measured:
    """What one function measured (``data``), the claims it recorded, and the probe runs it made."""

    data: dict[str, Any]
    ledger: Ledger
    runs: dict[str, Result] = field(default_factory=dict)


def gpt2_label(model: Any) -> str:
    """A name that says what the GPT-2 is: ``gpt2_random_L2_d64`` (random weights, 2 blocks, width 64)."""
    cfg = model.config
    return f"gpt2_random_L{cfg.n_layer}_d{cfg.n_embd}"


def probe_claims(result: Result, roles: Iterable[str] = ("identity", "bound")) -> list[Claim]:
    """The claims of a probe run with the given roles (by role, never by name: names may change)."""
    roles = tuple(roles)
    return [c for c in result.ledger.claims if c.role in roles]


def gpt2_zoo_agreement(gpt2: Any, zoo: Any, tokens: torch.Tensor, preset: str) -> Measured:
    """The random GPT-2 and its zoo copy agree at every hook point and in every probe (float64 identities)."""
    label = gpt2_label(gpt2)
    _, cache_hf = run_with_cache(gpt2, tokens)
    _, cache_zoo = run_with_cache(zoo, tokens)
    worst, finite_match = 0.0, True
    for name, ref in cache_zoo.items():
        fin = torch.isfinite(ref)
        finite_match &= bool(torch.equal(fin, torch.isfinite(cache_hf[name])))
        diff = (cache_hf[name] - ref)[fin].abs().max() / ref[fin].abs().max().clamp_min(1.0)
        worst = max(worst, diff.item())
    led = Ledger(CONTEXT, preset=preset)
    model = f"GPT-2 with random weights, {gpt2.config.n_layer} blocks, width {gpt2.config.n_embd} ({label})"
    led.judge(
        f"{label}_zoo_hook_points",
        measured=worst if finite_match else float("nan"),
        expected=0.0,
        atol=1e-12,
        why="rounding only: ~1e-16 per operation, amplified by depth and the softmax; 1e-12 leaves 10^3 room",
        statement=f"{model} and its zoo copy agree at all {len(cache_zoo)} hook points (max "
        "relative difference; non-finite entries in the same places)",
    )
    agreement = {p: probe_agreement(p, gpt2, zoo) for p in PROBE_AGREEMENT}
    for p, diffs in agreement.items():
        led.judge(
            f"{label}_zoo_probe_{p}",
            measured=max(diffs.values()),
            expected=0.0,
            atol=1e-12,
            why="as for the hook points: rounding amplified by fits and logs stays far below 1e-12",
            statement=f"{p} measures the same {', '.join(diffs)} on {model} and on its zoo copy",
        )
    return Measured({"worst_hook": worst, "n_hooks": len(cache_zoo), "agreement": agreement}, led)


def measure_rank(
    pairs: Mapping[str, tuple[Any, Any] | list[tuple[Any, Any]]], sp_config: Mapping[str, Any], preset: str
) -> tuple[dict[str, Any], dict[str, Result]]:
    """Run ``signal_propagation`` on each (with skips, without skips) pair of models, or on each pair of a list
    of independent initialisations (initialisation ``i`` reads the text batches of
    ``replicate_seed(sp_config seed, i)``; 0: the config's own).

    Returns ``rank[(name, skip)]`` and ``cosine[(name, skip)]``: (L + 1, batches) arrays of Dong et al.'s
    relative residual and the mean token cosine after the embedding and each block (the first initialisation),
    ``rank_inits[(name, skip)]``: (initialisations, L + 1, batches) for the names given a list, and the runs (the
    first initialisation's).
    """
    config = probes.get("signal_propagation").Config.preset(preset, **sp_config)
    S = config.n_samples
    rank, cosine, runs, inits = {}, {}, {}, {}
    for name, entry in pairs.items():
        per_init = {True: [], False: []}
        for i, pair in enumerate(initialisations(entry)):
            cfg_i = config if i == 0 else config.replace(seed=replicate_seed(config.seed, i))
            for skip, m in zip((True, False), pair, strict=True):
                r = run_probe("signal_propagation", cfg_i, model=m, progress=False)
                per_init[skip].append(r.data["rank_residual"].values.reshape(-1, S))
                if i == 0:
                    rank[name, skip] = per_init[skip][0]
                    cosine[name, skip] = r.data["token_cosine"].values.reshape(-1, S)
                    runs[name, skip] = r
        if isinstance(entry, list):
            for skip, values in per_init.items():
                inits[name, skip] = np.stack(values)
    return {"rank": rank, "cosine": cosine, "rank_inits": inits}, runs


def dong_claims(
    led: Ledger, rank: Mapping[tuple[str, bool], np.ndarray], tags: Mapping[str, str], pretrained: Iterable[str] = ()
) -> None:
    """Dong et al. 2021: removing the skips collapses the tokens (the relative residual falls).

    Per model: the log10 ratio, no skips over skips, of the last block's relative residual, paired by
    text batch (both runs read the same batches). Collapse predicts it negative; the alternative "no
    collapse" is the with-skip residual itself (ratio 1, log 0). ``rank[(name, skip)]`` is (L + 1, batches)
    for one network, (initialisations, L + 1, batches) for independent initialisations. Uncertainty: a
    pretrained network's SE over text batches (within-run: its weights are fixed); otherwise the 95% t band over
    initialisations of each one's mean log ratio over batches (module docstring).
    """
    pretrained = set(pretrained)
    for name, tag in tags.items():
        claim = f"dong_noskip_collapses_{tag}"
        with_skip, without = rank[name, True][..., -1, :], rank[name, False][..., -1, :]  # ([inits,] batches)
        logratio = np.log10(np.maximum(without, RESOLUTION)) - np.log10(np.maximum(with_skip, RESOLUTION))
        if logratio.ndim == 2 and logratio.shape[0] >= 2:  # independent initialisations
            n_init, n = logratio.shape
            led.judge(
                claim,
                replicates=logratio.mean(-1),
                alternative=0.0,
                why=f"95% t band over {n_init} independent initialisations (replicate seeds), each one's mean "
                f"over {n} text batches of the paired log ratio; residuals floored at {RESOLUTION:g}",
                statement=f"{name}: log10(relative residual without skips / with skips) after the last block, "
                f"mean over {n_init} initialisations, is below 0 beyond their spread",
            )
        elif name in pretrained:
            ms = mean_se(logratio.ravel())
            led.judge(
                claim,
                measured=ms.mean,
                se=ms.se,
                dof=ms.dof,
                alternative=0.0,
                within_run=f"{name} is one pretrained network, its weights fixed: the log ratio is a property of "
                "those weights, its only uncertainty the choice of text batches",
                why=f"paired over {ms.n} text batches: 95% t band of the SE of the per-batch log ratio (dof "
                f"{ms.n} - 1); residuals floored at {RESOLUTION:g}",
                statement=f"{name}: log10(relative residual without skips / with skips) after the last "
                "block is below 0 beyond its spread over text batches",
            )
        else:
            led.judge(claim, reason=RANDOM_ALONE)


def no_skip_collapse(
    pairs: Mapping[str, tuple[Any, Any] | list[tuple[Any, Any]]],
    tags: Mapping[str, str],
    sp_config: Mapping[str, Any],
    preset: str,
    pretrained: Iterable[str] = (),
) -> Measured:
    """Dong et al.'s rank collapse on real text: each model with and without skip connections (a pair, or a list
    of pairs: independent initialisations of a model with random weights; ``pretrained``: the names of fixed,
    named networks; module docstring)."""
    data, runs = measure_rank(pairs, sp_config, preset)
    led = Ledger(CONTEXT, preset=preset)
    dong_claims(led, {**data["rank"], **data["rank_inits"]}, tags, pretrained)
    named = {f"{tags[name]}_{'skip' if skip else 'noskip'}": r for (name, skip), r in runs.items()}
    return Measured(data, led, named)


def deficit_ratio(result: Result, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per layer: mean over heads of (ln n - H) / (ln n - H_theory) at context n, and its SE over heads."""
    ln_n = np.log(n)
    measured = ln_n - result.data["entropy"].sel(n=n).values  # (L, H)
    theory = ln_n - result.data["theory_entropy"].sel(n=n).values
    ratio = measured / theory
    H = ratio.shape[-1]  # (L, H)
    return ratio.mean(-1), ratio.std(-1, ddof=1) / np.sqrt(H)


def entropy_vs_gaussian(
    models: Mapping[str, Any],
    claim_tags: Mapping[str, str],
    ctx_lens: tuple[int, ...],
    seed: int,
    preset: str,
    distinct: Iterable[str] = (),
    pretrained: Iterable[str] = (),
) -> Measured:
    """Run ``attention_entropy`` (untrained measurement) on each model, on corpus text (on distinct random
    token ids for the models named in ``distinct``, which have no tokenizer); for the models in
    ``claim_tags``, compare the entropy deficit at the largest context with the i.i.d.-Gaussian theory's.

    ``models[name]`` is one model or a list of independent initialisations (module docstring); initialisation
    ``i`` reads the text (or token ids) of ``replicate_seed(seed, i)``. ``runs`` and ``data["ratio"]`` hold the
    first initialisation's; ``data["init_runs"]`` every initialisation's runs of the names given a list.

    The theory (``analysis.theory.attention_entropy``) is the expected entropy of a softmax over n
    i.i.d. N(0, s^2) logits, s each head's measured logit std. Measured: the worst layer's mean over
    heads of the per-head ratio measured / theory deficit (worst = farthest from 1 in SEs). Alternative: ratio 0,
    uniform attention (the logits' spread leaves H = ln n).
    """
    runs, init_runs, distinct = {}, {}, set(distinct)
    for name, entry in models.items():
        data = "distinct" if name in distinct else "corpus"
        got = []
        for i, m in enumerate(initialisations(entry)):
            config = probes.get("attention_entropy").Config.preset(
                preset, data=data, ctx_lens=tuple(ctx_lens), training=False, seed=replicate_seed(seed, i)
            )
            got.append(run_probe("attention_entropy", config, model=m, progress=False))
        runs[name] = got[0]
        if isinstance(entry, list):
            init_runs[name] = got
    n_top = int(ctx_lens[-1])
    led = Ledger(CONTEXT, preset=preset)
    ratios = entropy_claims(led, {**runs, **init_runs}, claim_tags, n_top, pretrained)
    return Measured({"n_top": n_top, "ratio": ratios, "init_runs": init_runs}, led, runs)


def entropy_claims(
    led: Ledger,
    runs: Mapping[str, Result | Sequence[Result]],
    claim_tags: Mapping[str, str],
    n_top: int,
    pretrained: Iterable[str] = (),
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The entropy deficit against the i.i.d.-Gaussian theory, worst layer, for each model in ``claim_tags``.

    ``runs[name]``: one run, or a list of runs of independent initialisations. A pretrained model's claim
    (its name in ``pretrained``) takes the SE over the worst layer's heads (within-run: its weights are fixed);
    a list of initialisations the 95% t band over them of each one's mean over heads; a random model alone is
    not evaluated (module docstring). Returns every model's per-layer (mean, SE over heads) deficit ratio at
    ``n_top`` (the first run's).
    """
    pretrained = set(pretrained)
    first = {name: r[0] if isinstance(r, Sequence) else r for name, r in runs.items()}
    ratios = {name: deficit_ratio(r, n_top) for name, r in first.items()}
    for name, tag in claim_tags.items():
        claim = f"entropy_deficit_gaussian_{tag}"
        n_heads = first[name].data.sizes["head"]
        entry = runs[name]
        if isinstance(entry, Sequence) and len(entry) >= 2:  # independent initialisations
            per_init = np.stack([deficit_ratio(r, n_top)[0] for r in entry])  # (inits, L): mean over heads
            layer = [mean_se(per_init[:, la]) for la in range(per_init.shape[1])]
            worst = int(np.argmax([abs(ms.mean - 1.0) / max(ms.se, np.finfo(float).tiny) for ms in layer]))
            led.judge(
                claim,
                replicates=per_init[:, worst],
                family=len(layer),
                expected=1.0,
                alternative=0.0,
                why=f"95% t band over {len(entry)} independent initialisations (replicate seeds of the weights and "
                f"the text), each one's mean over its {n_heads} heads of the worst layer's per-head ratio",
                statement=f"{name}: entropy deficit ln n - H at n = {n_top} over the Gaussian theory's is 1 "
                f"(worst layer, {worst}; mean over {len(entry)} initialisations)",
            )
        elif name in pretrained:
            mean, se = ratios[name]
            worst, band = worst_layer_band(mean, se, n_heads)
            led.judge(
                claim,
                band=band,
                expected=1.0,
                alternative=0.0,
                within_run=f"{name} is one pretrained network, its weights fixed: the ratio is a property of those "
                "weights; its heads are the draws",
                why=f"95% t band of the SE of the per-head ratio over the {n_heads} heads of the worst layer (dof "
                f"{n_heads} - 1)",
                statement=f"{name}: entropy deficit ln n - H at n = {n_top} over the Gaussian theory's is 1 "
                f"(worst layer, {worst})",
            )
        else:
            led.judge(claim, reason=RANDOM_ALONE)
    return ratios


def worst_layer_band(mean: np.ndarray, se: np.ndarray, n_heads: int) -> tuple[int, dict[str, float]]:
    """The layer whose mean deficit ratio over heads lies the most SEs from 1, and its band: that mean, its SE over
    the ``n_heads`` heads (dof ``n_heads - 1``) and the family of layers it is the worst of (``mean``, ``se``: per
    layer, as :func:`deficit_ratio` gives them)."""
    worst = int(np.argmax(np.abs(mean - 1.0) / np.maximum(se, np.finfo(float).tiny)))
    return worst, {"measured": float(mean[worst]), "se": float(se[worst]), "dof": n_heads - 1, "family": len(mean)}


def repeat_last(models: Mapping[str, Any], rc_config: Mapping[str, Any], preset: str) -> dict[str, Result]:
    """Run ``representational_collapse`` on each model (its own claims are in each run's ledger)."""
    config = probes.get("representational_collapse").Config.preset(preset, **rc_config)
    return {name: run_probe("representational_collapse", config, model=m, progress=False) for name, m in models.items()}
