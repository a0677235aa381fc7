r"""Named trained-model recipes that say how far training got: the held-out loss against the task's baselines.

``trained(name, seed, preset)`` trains (through the checkpoint cache, so a second call loads) the model of the
recipe ``name`` and measures its held-out loss beside the losses of the task's baselines on the same held-out data
and in the same metric, so that "is this model trained?" has a one-line answer (:meth:`Trained.report`)::

    t = trained("tiny_lm", seed=0, preset="full")
    t.report()  # 'tiny_lm (seed 0, full, 1500 updates): held-out loss ... nats; unigram ..., bigram ...: below ...'

Presets: ``"smoke"`` trains a tiny model for a few updates in a few seconds on 2 CPU cores (it need not beat the
strict baseline, and the report then says so); ``"full"`` is the recipe's real setting. ``steps`` replaces the
preset's number of updates (the warm-up is then capped at ``steps // 5``; every preset's warm-up is within that
cap, so ``steps`` equal to the preset's gives the same run). The initial weights and the training data stream are
functions of ``seed``; the held-out data are the same for every seed. Everything is deterministic for a seed (on
one machine, torch build and thread count: :mod:`analysis.training.train`).

The recipes, their baselines (float64) and the bar ``beats`` a trained model must be below:

``tiny_lm``: a character-level LM on the standard-library corpus, full = :func:`analysis.training.train.tiny_lm_preset`,
smoke = one layer of width 32 on the same task with :func:`analysis.training.train.probe_lm_train_config` (200 updates).
Held out: the whole validation split in non-overlapping windows (``CorpusLM.eval_batches``): every target token
is predicted once; the loss is nats per token. Baselines on exactly those target tokens: ``unigram``, the entropy
of their own frequencies (:func:`analysis.data.corpus.unigram_entropy`, the least loss of any predictor that ignores
context, fitted on the text itself); ``bigram``, the conditional entropy ``H(X_t | X_{t-1})`` of the text's own
bigram frequencies (the least loss of any predictor that sees only the previous token, fitted on the text
itself, so no bigram model does better; always <= unigram); ``bigram (train fit)``, the held-out loss of the
bigram model fitted on the train split (:func:`analysis.data.corpus.bigram_cross_entropy`, a real predictor, so >=
bigram; on little data it can exceed unigram). Bar: ``bigram`` -- below it the model uses more than one token of
context.

``icl_regression``: in-context linear regression, d = 3, N = 8 examples, x ~ N(0, I), w ~ N(0, I), label noise
0.5, concat layout (von Oswald et al.), read by a small pre-LN softmax transformer with learned positions and a
linear read-out at the query token. The loss is the plain MSE ``E[(yhat - y_q)^2]`` on 16384 held-out tasks
(twice the task's training loss, which is half the MSE). Baselines, the expected MSE at the trained context
length N (:mod:`analysis.theory.icl_gd`): ``zero predictor`` = E[y^2] = w_std^2 tr Sigma + sigma^2 (closed form);
``best one-step GD`` (the best learning rate, closed form: the best any one layer of linear attention does for
this isotropic law); ``least squares`` (closed form, inverse-Wishart mean); ``optimal ridge (Bayes)`` (the
posterior mean, ridge at lam = sigma^2 / w_std^2, the least expected MSE of any predictor: a Rao-Blackwellised
Monte Carlo over 200000 context draws, its SE in ``baseline_se``, about 2e-4). Bar: ``best one-step GD``. The full
recipe ends well below it and above least squares (measured: ~0.54 against 1.29 and 0.44), so least squares would
be a bar it does not reach in its two-minute budget.

``associative_recall``: multi-query associative recall (:class:`analysis.data.tasks.AssociativeRecall`, paired layout,
32 pairs, 64 keys, 64 values, every key asked), a two-layer attention-only softmax model without positions (the
associative-recall probe's model). The loss is the mean cross-entropy (nats) at the query positions of 4096
held-out sequences. Baselines (closed forms): ``chance`` = ln(n_values), the least loss without reading the
sequence (values are uniform); ``stored values`` = E[ln N - ln c], c = 1 + Binomial(N - 1, 1/n_values) the number
of stored pairs holding the answer's value: the least loss of a predictor that sees which values are stored but
not which key holds which (it can only say c_v / N). Bar: ``stored values`` -- below it the model binds keys to
values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import torch
from scipy.stats import binom

from analysis.core.validation import check_choice, check_int
from analysis.data.corpus import bigram_cross_entropy, unigram_entropy
from analysis.data.tasks import AssociativeRecall, CorpusLM, LinearRegressionTask, model_io
from analysis.theory import icl_gd as th
from analysis.training.checkpoints import CheckpointCache
from analysis.training.train import (
    TrainConfig,
    TrainResult,
    derived_seed,
    evaluate,
    probe_lm_train_config,
    tiny_lm_preset,
    train,
)
from analysis.zoo.model import ModelConfig, TinyTransformer

PRESETS = ("smoke", "full")
MAX_SEED = 2**63 - 1  # torch.Generator.manual_seed takes at most 64 bits
BAYES_MC_TASKS = 200_000  # context draws of the Monte Carlo of the Bayes-optimal ridge loss

Configs = tuple[ModelConfig, Any, TrainConfig]
Batches = list[tuple[torch.Tensor, torch.Tensor]]


@dataclass(frozen=True)
class Recipe:
    """How one named model is trained and judged (see the module docstring for each recipe)."""

    name: str
    description: str  # one line
    unit: str  # of the loss: "nats" (per predicted token) or "MSE"
    beats: str  # the baseline a trained model must be below (a key of the baselines)
    configs: Callable[[int, str], Configs]  # (seed, preset) -> (model config, task, train config)
    held_out_loss: Callable[[TinyTransformer, Any], float]  # (trained model, task) -> held-out loss
    baselines: Callable[[Any], dict[str, tuple[float, float]]]  # task -> name -> (loss, SE; 0 when exact)

    def setup(self, seed: int, preset: str, steps: int | None = None) -> Configs:
        """The recipe's ``(model_cfg, task, train_cfg)``, with ``steps`` updates when given."""
        model_cfg, task, train_cfg = self.configs(seed, preset)
        if steps is not None:
            warmup = min(train_cfg.warmup_steps, steps // 5)
            train_cfg = train_cfg.replace(steps=steps, warmup_steps=warmup)
        return model_cfg, task, train_cfg


@dataclass(frozen=True, eq=False)
class Trained:
    """A recipe's trained model, its held-out loss and the task's baselines on the same held-out data."""

    recipe: str
    seed: int
    preset: str
    model: TinyTransformer  # eval mode
    task: Any
    result: TrainResult
    loss: float  # held-out loss (unit: ``unit``)
    baselines: dict[str, float]  # name -> the baseline's loss on the same held-out data and metric
    beats: str  # the baseline a trained model must be below
    unit: str
    baseline_se: dict[str, float] = field(default_factory=dict)  # name -> SE of a Monte Carlo baseline (0: exact)

    @property
    def key(self) -> str:
        """The checkpoint cache key (a content hash of the model, task and train configs): what provenance records."""
        return self.result.key

    @property
    def updates(self) -> int:
        """Optimiser updates of the run."""
        return int(self.result.meta["train"]["steps"])

    @property
    def is_trained(self) -> bool:
        """The held-out loss is below the baseline ``beats``."""
        return bool(self.loss < self.baselines[self.beats])

    def report(self) -> str:
        """One line: the run, the held-out loss, every baseline and the verdict against ``beats``."""
        base = ", ".join(f"{name} {value:.4g}" for name, value in self.baselines.items())
        if self.is_trained:
            verdict = f"below {self.beats} (trained)"
        elif math.isfinite(self.loss):
            verdict = f"not trained: above {self.beats}"
        else:
            verdict = f"not trained: the held-out loss is {self.loss}"
        head = f"{self.recipe} (seed {self.seed}, {self.preset}, {self.updates} updates)"
        return f"{head}: held-out loss {self.loss:.4g} {self.unit}; {base}: {verdict}"

    def __str__(self) -> str:
        return self.report()


def trained(
    name: str,
    seed: int = 0,
    preset: str = "smoke",
    cache: CheckpointCache | str | None = "default",
    progress: bool = True,
    steps: int | None = None,
) -> Trained:
    """Train (or load from ``cache``) the model of recipe ``name`` and measure it against the task's baselines.

    ``seed``: the initial weights and the training data stream (an integer >= 0). ``preset``: ``"smoke"`` (seconds)
    or ``"full"`` (the recipe's real setting). ``cache``: a ``CheckpointCache``, ``"default"`` or ``None`` (as in
    :func:`analysis.training.train.train`). ``steps``: the number of updates instead of the preset's (>= 1).
    ``ValueError`` naming the parameter for an unknown name or preset, a bad seed or bad steps.
    """
    check_choice("name", name, tuple(RECIPES))
    check_choice("preset", preset, PRESETS)
    check_int("seed", seed, minimum=0, maximum=MAX_SEED)
    if steps is not None:
        check_int("steps", steps, minimum=1)
    recipe = RECIPES[name]
    model_cfg, task, train_cfg = recipe.setup(seed, preset, steps)
    res = train(model_cfg, task, train_cfg, cache=cache, progress=progress)
    model = res.model.eval()
    pairs = recipe.baselines(task)
    return Trained(
        recipe=name,
        seed=seed,
        preset=preset,
        model=model,
        task=task,
        result=res,
        loss=float(recipe.held_out_loss(model, task)),
        baselines={k: v[0] for k, v in pairs.items()},
        beats=recipe.beats,
        unit=recipe.unit,
        baseline_se={k: v[1] for k, v in pairs.items()},
    )


def held_out_batches(task: Any, purpose: str, n_batches: int, batch_size: int) -> Batches:
    """``n_batches`` batches drawn by ``task.sample`` from a generator of its own (seeded by ``purpose``, not by
    the training seed): the same held-out data for every seed, independent of every training stream."""
    gen = torch.Generator().manual_seed(derived_seed(0, f"recipes/{purpose}/held_out"))
    return [task.sample(batch_size, gen) for _ in range(n_batches)]


# ------------------------------------------------------------------------------------------------
# tiny_lm: character-level language model on the standard-library corpus
# ------------------------------------------------------------------------------------------------
def _lm_configs(seed: int, preset: str) -> Configs:
    model_cfg, task, train_cfg = tiny_lm_preset(seed)
    if preset == "full":
        return model_cfg, task, train_cfg
    small = model_cfg.replace(d_model=32, n_layers=1, n_heads=2)
    return small, task, probe_lm_train_config(200, seed)


def lm_held_out_tokens(task: CorpusLM) -> np.ndarray:
    """The validation tokens the held-out windows cover: ``n_eval_windows * seq_len + 1`` of them, the first a
    context only, every later one a target predicted once."""
    return np.asarray(task.data.val_tokens[: task.n_eval_windows * task.seq_len + 1]).astype(np.int64)


def bigram_entropy(tokens: np.ndarray, vocab_size: int) -> float:
    """``H(X_t | X_{t-1})`` of the bigram frequencies of ``tokens`` itself, in nats (float64): the joint entropy of
    consecutive pairs minus the entropy of their first tokens. It is the least mean loss any predictor that sees
    only the previous token can have on the targets ``tokens[1:]``, and it is at most their unigram entropy."""
    t = np.asarray(tokens).astype(np.int64).ravel()
    return unigram_entropy(t[:-1] * vocab_size + t[1:]) - unigram_entropy(t[:-1])


@lru_cache(maxsize=8)
def _lm_baselines(task: CorpusLM) -> dict[str, tuple[float, float]]:
    held = lm_held_out_tokens(task)
    train_tokens = task.data.train_tokens
    return {
        "unigram": (unigram_entropy(held[1:]), 0.0),
        "bigram": (bigram_entropy(held, task.vocab_size), 0.0),
        "bigram (train fit)": (bigram_cross_entropy(train_tokens, held, task.vocab_size), 0.0),
    }


def _lm_loss(model: TinyTransformer, task: CorpusLM) -> float:
    return evaluate(model, task, list(task.eval_batches(64)))  # the whole validation split


# ------------------------------------------------------------------------------------------------
# icl_regression: in-context linear regression (concat layout, softmax transformer)
# ------------------------------------------------------------------------------------------------
ICL_TASK = LinearRegressionTask(d=3, n_points=8, x_dist="gaussian", noise_std=0.5, layout="concat")


def _icl_configs(seed: int, preset: str) -> Configs:
    task = ICL_TASK
    full = preset == "full"
    width, layers, heads = (32, 2, 4) if full else (16, 1, 2)
    model_cfg = ModelConfig(
        **model_io(task),
        d_model=width,
        n_layers=layers,
        n_heads=heads,
        norm="pre",
        pos="learned",
        max_len=task.seq_len,
        init="gpt2",
        seed=seed,
    )
    train_cfg = TrainConfig(
        steps=3000 if full else 200,
        batch_size=256 if full else 64,
        lr=2e-3 if full else 3e-3,
        optimizer="adam",
        warmup_steps=100 if full else 40,
        seed=seed,
        eval_every=500 if full else 0,
        eval_batches=8,
        checkpoint_every=500 if full else 0,
    )
    return model_cfg, task, train_cfg


@lru_cache(maxsize=8)
def _icl_baselines(task: LinearRegressionTask) -> dict[str, tuple[float, float]]:
    if task.layout != "concat" or task.link != "linear":
        raise ValueError(f"the regression baselines are for the linear concat layout, got {task.name}")
    Sigma = task.covariance if task.x_dist == "anisotropic" else None
    law = dict(d=task.d, N=task.n_points, x_dist=task.x_dist, sigma=task.noise_std, w_std=task.w_std, Sigma=Sigma)
    one = th.one_step_gd_theory(**law)
    rng = np.random.default_rng(derived_seed(0, "recipes/icl_regression/bayes"))
    ls = th.least_squares_theory(**law)
    least = (ls, 0.0) if ls is not None else _mc(th.LeastSquares(), law, rng)
    bayes = least if task.noise_std == 0 else _mc(th.Ridge.bayes_optimal(task.noise_std, task.w_std), law, rng)
    return {
        "zero predictor": (one["a"], 0.0),  # E[y^2]
        "best one-step GD": (one["loss_star"], 0.0),
        "least squares": least,
        "optimal ridge (Bayes)": bayes,
    }


def _mc(predictor: Any, law: dict, rng: np.random.Generator) -> tuple[float, float]:
    out = th.expected_loss_mc(predictor, rng=rng, n_tasks=BAYES_MC_TASKS, **law)
    return out["loss"], out["se"]


def _icl_loss(model: TinyTransformer, task: LinearRegressionTask) -> float:
    # the concat layout's task.loss is half the MSE (von Oswald et al.); the baselines are plain MSEs
    return 2.0 * evaluate(model, task, held_out_batches(task, "icl_regression", 16, 1024))


# ------------------------------------------------------------------------------------------------
# associative_recall: multi-query associative recall, attention-only softmax model
# ------------------------------------------------------------------------------------------------
AR_TASK = AssociativeRecall(n_pairs=32, n_keys=64, n_values=64, layout="paired")


def _ar_configs(seed: int, preset: str) -> Configs:
    task = AR_TASK
    full = preset == "full"
    model_cfg = ModelConfig(
        **model_io(task),
        d_model=64 if full else 32,
        n_layers=2 if full else 1,
        n_heads=1,
        d_head=16,
        d_mlp=0,
        pos="none",
        norm="pre",
        init="gpt2",
        seed=seed,
    )
    steps = 600 if full else 60
    train_cfg = TrainConfig(steps=steps, batch_size=32, lr=3e-3, warmup_steps=min(20, steps // 5), seed=seed)
    return model_cfg, task, train_cfg


def stored_values_loss(n_pairs: int, n_values: int) -> float:
    """E[ln N - ln c] with c = 1 + Binomial(N - 1, 1/n_values), in nats (float64): the expected cross-entropy of
    predicting a stored value with probability (its count among the N stored values) / N, the best a predictor
    can do that knows which values are stored but not which key holds which."""
    k = np.arange(n_pairs)  # other stored pairs holding the answer's value
    pmf = binom.pmf(k, n_pairs - 1, 1.0 / n_values)
    return float(np.sum(pmf * (math.log(n_pairs) - np.log1p(k))))


def _ar_baselines(task: AssociativeRecall) -> dict[str, tuple[float, float]]:
    return {
        "chance": (math.log(task.n_values), 0.0),
        "stored values": (stored_values_loss(task.n_pairs, task.n_values), 0.0),
    }


def _ar_loss(model: TinyTransformer, task: AssociativeRecall) -> float:
    return evaluate(model, task, held_out_batches(task, "associative_recall", 16, 256))


RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        Recipe(
            "tiny_lm",
            "character-level LM on the standard-library corpus (3 layers of width 128, RoPE; 1500 updates)",
            "nats",
            "bigram",
            _lm_configs,
            _lm_loss,
            _lm_baselines,
        ),
        Recipe(
            "icl_regression",
            "in-context linear regression, d=3, N=8, noise 0.5, by a 2-layer softmax transformer (3000 updates)",
            "MSE",
            "best one-step GD",
            _icl_configs,
            _icl_loss,
            _icl_baselines,
        ),
        Recipe(
            "associative_recall",
            "multi-query associative recall, 32 pairs of 64 keys and values, 2-layer attention-only softmax",
            "nats",
            "stored values",
            _ar_configs,
            _ar_loss,
            _ar_baselines,
        ),
    )
}

__all__ = [
    "PRESETS",
    "RECIPES",
    "Recipe",
    "Trained",
    "bigram_entropy",
    "held_out_batches",
    "lm_held_out_tokens",
    "stored_values_loss",
    "trained",
]
