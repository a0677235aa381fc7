"""analysis.training.recipes: named trained models, their held-out loss and the task's baselines on the same data."""

from __future__ import annotations

import math
import re
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from analysis.data.corpus import unigram_entropy
from analysis.theory import icl_gd as th
from analysis.training.checkpoints import CheckpointCache
from analysis.training.recipes import (
    PRESETS,
    RECIPES,
    Trained,
    bigram_entropy,
    lm_held_out_tokens,
    stored_values_loss,
    trained,
)
from analysis.zoo.model import TinyTransformer

from tier import TIER

REPORT = re.compile(
    r"^(?P<name>\w+) \(seed 0, smoke, (?P<updates>\d+) updates\): held-out loss \S+ (nats|MSE); "
    r"(?P<baselines>.+): (below (?P<bar>.+) \(trained\)|not trained: above (?P<above>.+))$"
)


def task_of(name: str):
    return RECIPES[name].setup(0, "smoke")[1]


# ------------------------------------------------------------------------------------------------
# every recipe at its smoke preset
# ------------------------------------------------------------------------------------------------
def test_every_recipe_is_named_and_described_in_one_line():
    assert {"tiny_lm", "icl_regression", "associative_recall"} <= set(RECIPES)
    for name, recipe in RECIPES.items():
        assert recipe.name == name
        assert recipe.description and "\n" not in recipe.description
        assert recipe.unit in ("nats", "MSE")


@pytest.mark.parametrize("name", list(RECIPES))
def test_smoke_trains_then_a_second_call_loads_the_same_run(name, tmp_path):
    cache = CheckpointCache(tmp_path)
    first = trained(name, seed=0, preset="smoke", cache=cache, progress=False)
    assert not first.result.from_cache
    assert isinstance(first.model, TinyTransformer) and not first.model.training
    assert math.isfinite(first.loss) and first.loss > 0
    assert first.beats in first.baselines and first.baselines.keys() == first.baseline_se.keys()
    assert all(math.isfinite(v) and v > 0 for v in first.baselines.values())
    assert first.is_trained == (first.loss < first.baselines[first.beats])
    assert first.key == first.result.key and first.updates == RECIPES[name].setup(0, "smoke")[2].steps

    m = REPORT.match(first.report())
    assert m, first.report()
    assert m["name"] == name and int(m["updates"]) == first.updates
    assert (m["bar"] or m["above"]) == first.beats
    assert (m["bar"] is not None) == first.is_trained
    assert str(first) == first.report()

    again = trained(name, seed=0, preset="smoke", cache=cache, progress=False)
    assert again.result.from_cache and again.key == first.key
    assert again.loss == first.loss and again.baselines == first.baselines
    for (k, a), b in zip(first.model.state_dict().items(), again.model.state_dict().values(), strict=True):
        assert torch.equal(a, b), k


def test_a_seed_fixes_the_run_and_another_seed_changes_it(tmp_path):
    a = trained("associative_recall", seed=3, cache=CheckpointCache(tmp_path / "a"), progress=False)
    b = trained("associative_recall", seed=3, cache=CheckpointCache(tmp_path / "b"), progress=False)
    assert not b.result.from_cache and a.key == b.key and a.loss == b.loss
    c = trained("associative_recall", seed=4, cache=CheckpointCache(tmp_path / "a"), progress=False)
    assert c.key != a.key and c.loss != a.loss
    assert c.baselines == a.baselines  # the held-out data and the baselines do not depend on the seed


def test_steps_overrides_the_presets_updates(tmp_path):
    for recipe in RECIPES.values():
        for preset in PRESETS:
            configs = recipe.setup(0, preset)
            assert recipe.setup(0, preset, steps=configs[2].steps) == configs  # the preset's own count: same run
    short = trained("associative_recall", steps=7, cache=CheckpointCache(tmp_path), progress=False)
    assert short.updates == 7 and len(short.result.history["step"]) == 7
    assert short.report().startswith("associative_recall (seed 0, smoke, 7 updates): ")
    assert short.result.meta["train"]["warmup_steps"] == 1  # capped at steps // 5


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"name": "tiny"}, "name"),
        ({"preset": "medium"}, "preset"),
        ({"preset": None}, "preset"),
        ({"seed": -1}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"seed": True}, "seed"),
        ({"seed": 2**64}, "seed"),
        ({"steps": 0}, "steps"),
        ({"steps": -5}, "steps"),
        ({"steps": 2.5}, "steps"),
    ],
)
def test_bad_inputs_raise_naming_the_parameter(kwargs, field):
    args = {"name": "associative_recall", **kwargs}
    with pytest.raises(ValueError, match=rf"^{field} must"):
        trained(args.pop("name"), cache=None, progress=False, **args)


def test_unknown_names_and_presets_list_the_allowed_values():
    with pytest.raises(ValueError, match=r"^name must be one of \['tiny_lm', 'icl_regression', 'associative_recall'"):
        trained("tiny", cache=None)
    with pytest.raises(ValueError, match=r"^preset must be one of \['smoke', 'full'\], got 'medium'$"):
        trained("tiny_lm", preset="medium", cache=None)


def test_report_wording():
    run = SimpleNamespace(key="k", meta={"train": {"steps": 200}})
    base = {"unigram": 3.08, "bigram": 2.52}

    def report(loss: float) -> str:
        return Trained("tiny_lm", 0, "smoke", None, None, run, loss, base, "bigram", "nats").report()

    head = "tiny_lm (seed 0, smoke, 200 updates): held-out loss"
    assert report(2.41) == f"{head} 2.41 nats; unigram 3.08, bigram 2.52: below bigram (trained)"
    assert report(2.6) == f"{head} 2.6 nats; unigram 3.08, bigram 2.52: not trained: above bigram"
    assert report(math.nan).endswith(": not trained: the held-out loss is nan")


# ------------------------------------------------------------------------------------------------
# the baselines
# ------------------------------------------------------------------------------------------------
def test_lm_baselines_are_the_entropies_of_the_held_out_targets():
    task = task_of("tiny_lm")
    base = dict(RECIPES["tiny_lm"].baselines(task))
    held = lm_held_out_tokens(task)
    # the held-out loss predicts exactly held[1:], each token once, from held[:-1]
    targets = torch.cat([y.reshape(-1) for _, y in task.eval_batches(64)]).numpy()
    inputs = torch.cat([x.reshape(-1) for x, _ in task.eval_batches(64)]).numpy()
    assert np.array_equal(held[1:], targets) and np.array_equal(held[:-1], inputs)

    assert base["unigram"][0] == unigram_entropy(targets)
    # H(X_t | X_{t-1}) of the text's own pair counts, written out independently
    V = task.vocab_size
    pairs = np.zeros((V, V))
    np.add.at(pairs, (held[:-1], held[1:]), 1.0)
    row = pairs.sum(1, keepdims=True)
    nz = pairs > 0
    expected = -(pairs[nz] * np.log((pairs / np.where(row > 0, row, 1.0))[nz])).sum() / pairs.sum()
    assert base["bigram"][0] == pytest.approx(expected, rel=1e-12)
    assert bigram_entropy(held, V) == base["bigram"][0]
    # no bigram model beats the text's own bigram frequencies, and conditioning does not raise entropy
    assert base["bigram"][0] <= base["unigram"][0] and base["bigram"][0] <= base["bigram (train fit)"][0]
    assert all(se == 0.0 for _, se in base.values())


def test_icl_bayes_baseline_matches_a_monte_carlo_of_the_ridge_predictor():
    task = task_of("icl_regression")
    base = RECIPES["icl_regression"].baselines(task)
    (zero, _), (gd, _), (ls, _), (bayes, bayes_se) = (base[k] for k in base)
    assert list(base) == ["zero predictor", "best one-step GD", "least squares", "optimal ridge (Bayes)"]
    assert zero == pytest.approx(task.d * task.w_std**2 + task.noise_std**2, rel=1e-15)  # E[y^2], x ~ N(0, I)
    assert ls == pytest.approx(task.noise_std**2 * (1 + task.d / (task.n_points - task.d - 1)), rel=1e-15)
    assert 0 < bayes_se < 1e-3
    assert bayes < ls < gd < zero  # the posterior mean has the least expected loss
    # the ridge predictor at lam* = sigma^2 / w_std^2 on tasks drawn by the training task's own sampler
    b = task.draw(100_000, torch.Generator().manual_seed(20240611), dtype=torch.float64)
    ridge = th.Ridge.bayes_optimal(task.noise_std, task.w_std)
    sq = ((ridge(b.x_ctx, b.y_ctx, b.x_q) - b.y_q) ** 2).numpy()
    se = math.hypot(sq.std(ddof=1) / math.sqrt(sq.size), bayes_se)
    assert abs(sq.mean() - bayes) < 4 * se, (sq.mean(), bayes, se)


def test_associative_recall_baselines_are_the_losses_of_their_predictors():
    task = task_of("associative_recall")
    base = RECIPES["associative_recall"].baselines(task)
    assert base["chance"][0] == math.log(task.n_values)
    assert 0 < base["stored values"][0] < base["chance"][0]
    assert stored_values_loss(1, 64) == 0.0 and stored_values_loss(8, 1) == pytest.approx(0.0, abs=1e-15)
    x, y = task.sample(4096, torch.Generator().manual_seed(7), dtype=torch.float64)
    N, V = task.n_pairs, task.n_values
    # predict each stored value with probability (its count among the stored values) / N, at every position
    counts = x[:, :N, task.n_keys :].sum(1)  # (B, V)
    logits = torch.log(counts / N).unsqueeze(1).expand(-1, task.seq_len, V)
    asked = y >= 0
    ce = -torch.log(counts.gather(1, torch.where(asked, y, 0)) / N)[asked].view(len(y), -1).mean(1).numpy()
    assert float(task.loss(logits, y)) == pytest.approx(ce.mean(), rel=1e-9)  # the task's own metric
    assert abs(ce.mean() - base["stored values"][0]) < 4 * ce.std(ddof=1) / math.sqrt(ce.size)
    assert float(task.loss(torch.zeros(len(y), task.seq_len, V, dtype=torch.float64), y)) == pytest.approx(
        base["chance"][0], rel=1e-12
    )


# ------------------------------------------------------------------------------------------------
# the full presets reach below their bar (thorough tier: all; fast tier: the one that takes seconds)
# ------------------------------------------------------------------------------------------------
FULL_RUNS = tuple(RECIPES) if TIER.full_runs else ("associative_recall",)


@pytest.mark.slow
@pytest.mark.parametrize("name", FULL_RUNS)
def test_full_preset_is_trained(name, tmp_path):
    t = trained(name, seed=0, preset="full", cache=CheckpointCache(tmp_path), progress=False)
    assert t.is_trained, t.report()
    assert t.report().endswith(f": below {t.beats} (trained)")
