"""Part ``trained`` (item 4): attention-only models of every token mixer trained on MQAR at each N, ``train_seeds``
replicate seeds; held-out accuracy, and each trained recurrent model's two forms in float64."""

from __future__ import annotations

import math

import numpy as np
import torch

from analysis.ledger import Ledger
from analysis.model import TinyTransformer
from analysis.progress import bar
from analysis.tasks import AssociativeRecall
from analysis.train import TrainConfig, derived_seed, train
from probes.associative_recall.config import (
    MIXER,
    SEED_DELTA,
    SEED_SURVEY,
    SOURCE,
    Config,
    part_seeds,
    seed_se,
)
from probes.base import MAX_SEED, Result
from probes.parts import Context

PART_NAME = "trained"
DESCRIPTION = "attention-only models of every token mixer trained on MQAR"
FIELDS = ("trained", "train_seeds", "n_eval", "layers", "heads")


def model_config(config: Config, kernel: str, task: AssociativeRecall, seed: int, dtype: str = "float32"):
    """The trained model: attention only, no positions (the memory is order-free), head size ``d_key``."""
    return config.model_config(
        input="vectors",
        d_in=task.d_in,
        output="linear",
        d_out=task.d_out,
        d_head=config.d_key,
        d_mlp=0,
        pos="none",
        dtype=dtype,
        seed=seed,
        **MIXER[kernel],
    )


def train_one(config: Config, kernel: str, n: int, seed: int, progress: bool) -> dict[str, float]:
    """Train (cached) one model; its held-out accuracy and, for recurrent kernels, the float64 form difference."""
    task = AssociativeRecall(n_pairs=n, n_keys=config.n_keys, n_values=config.n_values)
    tc = TrainConfig(
        steps=config.train_steps,
        batch_size=config.train_batch,
        lr=config.lr,
        warmup_steps=min(20, config.train_steps),
        seed=seed,
    )
    dev = config.torch_device()
    model = train(model_config(config, kernel, task, seed), task, tc, device=dev, progress=progress).model
    x, y = task.sample(config.n_eval, torch.Generator().manual_seed(derived_seed(seed, f"eval{n}") % MAX_SEED))
    with torch.no_grad():
        hits = task.accuracy(model(x.to(dev)), y.to(dev)).double()
    out = {"accuracy": float(hits.mean()), "n_queries": float(hits.numel()), "form_diff": math.nan}
    if kernel != "softmax":
        ref = TinyTransformer(model_config(config, kernel, task, seed, dtype="float64")).eval()  # float64, CPU
        ref.load_state_dict({k: v.to("cpu", torch.float64) for k, v in model.state_dict().items()})
        with torch.no_grad():
            par = ref(x)
            ref.recurrent_form = "recurrent"
            rec = ref(x)
        out["form_diff"] = float((par - rec).abs().max() / rec.abs().max())
    return out


def measure_trained(config: Config, progress: bool) -> dict[str, np.ndarray]:
    """Per kernel, N and replicate seed (:func:`part_seeds`): held-out accuracy and the float64 form difference."""
    shape = (len(config.kernels), len(config.n_pairs), config.train_seeds)
    seeds = part_seeds(config, "trained")
    acc, diff, nq = np.full(shape, np.nan), np.full(shape, np.nan), np.zeros(shape)
    jobs = [(i, j, s) for i in range(shape[0]) for j in range(shape[1]) for s in range(shape[2])]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: one thread is fastest (and fixes the reduction order)
    try:
        for i, j, s in bar(jobs, desc="associative_recall: training", disable=not progress):
            got = train_one(config, config.kernels[i], config.n_pairs[j], seeds[s], progress=False)
            acc[i, j, s], diff[i, j, s], nq[i, j, s] = got["accuracy"], got["form_diff"], got["n_queries"]
    finally:
        torch.set_num_threads(threads)
    return {"accuracy": acc, "form_diff": diff, "n_queries": nq}


def measure(ctx: Context) -> None:
    """Accuracy per kernel, N and seed and the trained models' form differences (NaN when not trained)."""
    config = ctx.config
    tr = measure_trained(config, ctx.progress) if config.trained else None
    kn = ("kernel", "n_pairs")
    nan = np.full((len(config.kernels), len(config.n_pairs)), np.nan)
    acc = tr["accuracy"] if tr else np.full((*nan.shape, 1), np.nan)
    ctx.data.update(
        accuracy=(kn, acc.mean(-1) if tr else nan),
        accuracy_se=(kn, seed_se(acc) if tr else nan),
        accuracy_seed=((*kn, "train_seed"), acc),
        trained_form_difference=((*kn, "train_seed"), tr["form_diff"] if tr else acc),
    )
    ctx.coords.update(kernel=list(config.kernels), n_pairs=list(config.n_pairs), train_seed=list(range(acc.shape[-1])))


def claims(led: Ledger, rs: tuple[Result, ...]) -> None:
    (r,) = rs
    claim_trained(led, r)


def claim_trained(led: Ledger, r: Result) -> None:
    """Trained MQAR (full preset): delta > additive and softmax >= delta at every N; additive collapses past d_k.
    Each claim is over the replicate seeds: per seed the paired difference of two accuracies (the same seed's
    models, each on its own held-out sequences)."""
    c = r.config
    if not c.trained:
        return
    acc = r.data["accuracy_seed"]  # (kernel, N, seed)
    S = c.train_seeds
    why = f"95% t band over {S} replicate training seeds (per seed the difference of two held-out accuracies)"
    pairs = [("delta", "additive", "delta_beats_additive"), ("softmax", "delta", "softmax_beats_delta")]
    for a, b, name in pairs:
        if a not in c.kernels or b not in c.kernels:
            continue
        for n in c.n_pairs:
            diff = acc.sel(kernel=a, n_pairs=n).values - acc.sel(kernel=b, n_pairs=n).values  # (seed,)
            led.direction(
                f"{name}_N{n}",
                replicates=diff,
                sign=1,
                hypothesis="no difference between the two mixers' recall accuracy",
                source="003#30: the delta rule is more effective at associative recall than the additive update",
                seed=SEED_DELTA,
                why=why,
                requires_full=True,
                statement=f"trained MQAR, N = {n}: accuracy({a}) - accuracy({b}) > 0",
                figure="ar_capacity",
            )
    small, large = min(c.n_pairs), max(c.n_pairs)
    if "additive" in c.kernels and large >= c.d_key > small:
        a = acc.sel(kernel="additive")
        led.direction(
            "additive_collapses_past_d_key",
            replicates=a.sel(n_pairs=small).values - a.sel(n_pairs=large).values,
            sign=1,
            hypothesis="the additive memory's accuracy does not depend on N",
            source=f"{SOURCE}, item 1: interference (N - 1)/d_k reaches 1 near N = d_k",
            seed=SEED_SURVEY,
            why=why,
            requires_full=True,
            statement=f"trained additive mixer: accuracy at N = {small} above that at N = {large} >= d_k = {c.d_key}",
            figure="ar_capacity",
        )
