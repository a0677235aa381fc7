"""Part ``trained`` (item 4): attention-only models of every token mixer trained on MQAR at each N, ``train_seeds``
replicate seeds; held-out accuracy, and each trained recurrent model's two forms in float64. Also the training
helpers that every trained item (4, 6, 7, 8) shares."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

from analysis.claims.ledger import Ledger
from analysis.core.progress import bar
from analysis.data.tasks import AssociativeRecall, model_io
from analysis.probing.base import MAX_SEED, Result
from analysis.probing.parts import Context, each_claim
from analysis.training.train import TrainConfig, derived_seed, train
from analysis.zoo.model import ModelConfig, TinyTransformer, one_head_layer
from probes.associative_recall.config import (
    MIXER,
    Config,
    part_seeds,
    seed_se,
)

PART_NAME = "mqar"
DESCRIPTION = "attention-only models of every token mixer trained on MQAR"
FIELDS = ("training", "train_seeds", "n_eval", "n_layers", "n_heads")


@contextmanager
def one_thread() -> Iterator[None]:
    """Torch on one thread inside: tiny models, one thread is fastest (and fixes the reduction order)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def warmup_config(steps: int, batch_size: int, lr: float, seed: int) -> TrainConfig:
    """The default optimiser (AdamW) and schedule after a warm-up of min(20, steps) updates (items 4 and 7)."""
    return TrainConfig(steps=steps, batch_size=batch_size, lr=lr, warmup_steps=min(20, steps), seed=seed)


def adam_cosine_config(steps: int, batch_size: int, lr: float, seed: int, **fields) -> TrainConfig:
    """Adam, cosine decay to 10% of ``lr`` (items 6 and 8); ``fields``: the item's warm-up or clipping."""
    return TrainConfig(
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        optimizer="adam",
        schedule="cosine",
        min_lr_ratio=0.1,
        seed=seed,
        **fields,
    )


def one_layer_config(width: int, seed: int, dtype: str, **fields) -> ModelConfig:
    """One block on ``width``-wide embedded tokens (items 6 and 8): identity read-in, one head of size ``width``, no
    MLP, no read-out, logit scale 1, gpt2 init; ``fields``: the item's norm, mixer, mask, init std (and loops)."""
    return one_head_layer(
        width,
        d_in=width,
        vocab_size=2,
        d_head=width,
        logit_scale=1.0,
        init="gpt2",
        dtype=dtype,
        seed=seed,
        **fields,
    )


def float64_copy(model: torch.nn.Module, config64: ModelConfig) -> TinyTransformer:
    """``model``'s weights in a model of ``config64`` (float64, on the CPU), in eval mode."""
    ref = TinyTransformer(config64).eval()
    ref.load_state_dict({k: v.to("cpu", torch.float64) for k, v in model.state_dict().items()})
    return ref


def held_out_hits(task, model, n: int, seed: int, purpose: str, device) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` held-out sequences ``x`` (their generator seeded by ``seed`` and ``purpose``) and the model's hits at
    their query positions (float64)."""
    x, y = task.sample(n, torch.Generator().manual_seed(derived_seed(seed, purpose) % MAX_SEED))
    with torch.no_grad():
        hits = task.accuracy(model(x.to(device)), y.to(device)).double()
    return x, hits


def seed_numbers(scalars: dict, key: str, seeds: int) -> dict[str, float]:
    """A trained item's numbers from its scalars: ``key`` measured, ``key_se`` its SE, over ``seeds`` replicate
    seeds (dof = seeds - 1)."""
    return {"measured": scalars[key], "se": scalars[f"{key}_se"], "dof": seeds - 1}


def model_config(config: Config, kernel: str, task: AssociativeRecall, seed: int, dtype: str = "float32"):
    """The trained model: attention only, no positions (the memory is order-free), head size ``d_key``."""
    return config.model_config(
        **model_io(task),
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
    tc = warmup_config(config.train.steps, config.train.batch_size, config.train.lr, seed)
    dev = config.torch_device()
    model = train(model_config(config, kernel, task, seed), task, tc, device=dev, progress=progress).model
    x, hits = held_out_hits(task, model, config.n_eval, seed, f"eval{n}", dev)
    out = {"accuracy": float(hits.mean()), "n_queries": float(hits.numel()), "form_diff": math.nan}
    if kernel != "softmax":
        ref = float64_copy(model, model_config(config, kernel, task, seed, dtype="float64"))
        with torch.no_grad():
            par = ref(x)
            ref.recurrent_form = "recurrent"
            rec = ref(x)
        out["form_diff"] = float((par - rec).abs().max() / rec.abs().max())
    return out


def measure_trained(config: Config, progress: bool) -> dict[str, np.ndarray]:
    """Per kernel, N and replicate seed (:func:`part_seeds`): held-out accuracy and the float64 form difference."""
    shape = (len(config.kernels), len(config.n_pairs), config.train.seeds)
    seeds = part_seeds(config, "mqar")
    acc, diff, nq = np.full(shape, np.nan), np.full(shape, np.nan), np.zeros(shape)
    jobs = [(i, j, s) for i in range(shape[0]) for j in range(shape[1]) for s in range(shape[2])]
    with one_thread():
        for i, j, s in bar(jobs, desc="associative_recall: training", disable=not progress):
            got = train_one(config, config.kernels[i], config.n_pairs[j], seeds[s], progress=False)
            acc[i, j, s], diff[i, j, s], nq[i, j, s] = got["accuracy"], got["form_diff"], got["n_queries"]
    return {"accuracy": acc, "form_diff": diff, "n_queries": nq}


def measure(ctx: Context) -> None:
    """Accuracy per kernel, N and seed and the trained models' form differences (NaN when not trained)."""
    config = ctx.config
    tr = measure_trained(config, ctx.progress) if config.training else None
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


def claim_trained(led: Ledger, r: Result) -> None:
    """Trained MQAR (full preset): delta > additive and softmax >= delta at every N; additive collapses past d_k.
    Each claim is over the replicate seeds: per seed the paired difference of two accuracies (the same seed's
    models, each on its own held-out sequences)."""
    c = r.config
    if not c.training:
        return
    acc = r.data["accuracy_seed"]  # (kernel, N, seed)
    S = c.train.seeds
    why = f"95% t band over {S} replicate training seeds (per seed the difference of two held-out accuracies)"
    pairs = [("delta", "additive", "delta_beats_additive"), ("softmax", "delta", "softmax_beats_delta")]
    for a, b, name in pairs:
        if a not in c.kernels or b not in c.kernels:
            continue
        for n in c.n_pairs:
            diff = acc.sel(kernel=a, n_pairs=n).values - acc.sel(kernel=b, n_pairs=n).values  # (seed,)
            led.judge(
                f"{name}_N{n}",
                replicates=diff,
                why=why,
                statement=f"trained MQAR, N = {n}: accuracy({a}) - accuracy({b}) > 0",
            )
    small, large = min(c.n_pairs), max(c.n_pairs)
    if "additive" in c.kernels and large >= c.d_key > small:
        a = acc.sel(kernel="additive")
        led.judge(
            "additive_collapses_past_d_key",
            replicates=a.sel(n_pairs=small).values - a.sel(n_pairs=large).values,
            why=why,
            statement=f"trained additive mixer: accuracy at N = {small} above that at N = {large} >= d_k = {c.d_key}",
        )


claims = each_claim(claim_trained)
