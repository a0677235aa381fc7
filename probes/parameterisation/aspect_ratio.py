"""Part ``aspect_ratio`` (seed 000#69, DepthBench): the width-depth aspect ratio at a fixed size.

Every shape ``(aspect_widths[i], aspect_depths[i])`` has the same non-embedding size (``L d^2`` equal: ``12 L d^2``
parameters with a 4d MLP), from shallow-wide to deep-narrow. At each shape a character LM (RoPE, context 32) of every
variant of ``aspect_variants`` (Pre-LN; Pre-LN with LayerNorm Scaling; Full Attention Residuals,
:mod:`analysis.zoo.attnres`) is trained with one recipe (AdamW at ``aspect_lr``, 10% warm-up, cosine,
``aspect_steps`` updates of ``aspect_batch_size`` sequences), ``aspect_seeds`` seeds, through the cached trainer; the
held-out loss after the last update is the measurement.

The claims read the last step of the sweep, the deepest shape against the next shallower one, paired by seed (the
same data stream): the paper's «Standard Pre-LN and most of its norm- and scaling-based variants provide little
benefit and can even degrade performance as models become deeper and narrower» says Pre-LN's and LayerNorm Scaling's
loss does not fall there (the alternative: it falls), «whereas HC and Full AttnRes improve consistently even at
extreme deep shapes» says Full AttnRes's does, and, at the deepest shape, Full AttnRes's loss is below Pre-LN's.
"""

from __future__ import annotations

import numpy as np

from analysis.claims.ledger import Ledger
from analysis.core.progress import bar
from analysis.probing.base import Result
from analysis.probing.parts import Context, each_claim
from analysis.training.train import train
from analysis.training.train_config import TrainConfig
from probes.parameterisation.config import ASPECT_VARIANTS, Config
from probes.parameterisation.transfer import lm_model, task

DESCRIPTION = "the width-depth aspect ratio at a fixed size: Pre-LN, LayerNorm Scaling, Full AttnRes, wide to deep"
GATE = "aspect_ratio"
FIELDS = ("aspect_widths", "aspect_depths", "aspect_variants", "aspect_lr", "aspect_steps", "aspect_batch_size",
          "aspect_seeds", "n_heads")  # fmt: skip
FIGURE = "param_aspect_ratio"
# each architecture's name and the direction the paper gives its loss at a step deeper and narrower
SAID = {
    "pre_ln": ("Pre-LN", "rises"),
    "ln_scaling": ("LayerNorm Scaling", "rises"),
    "attnres": ("Full AttnRes", "falls"),
}
SCALE = (
    "the paper trains models of fixed size in the hundreds of millions of parameters on billions of tokens; here "
    "{size} non-embedding parameters, {steps} updates (aspect_widths, aspect_depths and aspect_steps reach further)"
)


def shapes(c: Config) -> list[tuple[int, int]]:
    """``(d_model, n_layers)`` of every shape, shallow-wide first."""
    return list(zip(c.aspect.widths, c.aspect.depths, strict=True))


def configs(c: Config, variant: str, d: int, n_layers: int, seed: int, vocab_size: int):
    """The model and training of one run."""
    model = lm_model(c, d, n_layers, seed, vocab_size, **ASPECT_VARIANTS[variant])
    training = TrainConfig(
        steps=c.aspect.steps, batch_size=c.aspect.batch_size, lr=c.aspect.lr, warmup_steps=c.aspect.steps // 10,
        schedule="cosine", weight_decay=0.0, grad_clip=1.0, seed=seed, eval_every=c.aspect.steps, eval_batches=8,
    )  # fmt: skip
    return model, training


def measure(ctx: Context) -> None:
    """``aspect_loss`` (variant, shape, seed): the held-out loss after the last update (NaN: diverged)."""
    c = ctx.config
    lm = task()
    seeds = [c.seed + 1000 * (s + 1) for s in range(c.aspect.seeds)]
    loss = np.full((len(c.aspect.variants), len(c.aspect.widths), c.aspect.seeds), np.nan)
    with bar(total=loss.size, progress=ctx.progress, desc="aspect-ratio trainings") as bars:
        for v, variant in enumerate(c.aspect.variants):
            for k, (d, n_layers) in enumerate(shapes(c)):
                for s, seed in enumerate(seeds):
                    model_cfg, train_cfg = configs(c, variant, d, n_layers, seed, lm.vocab_size)
                    loss[v, k, s] = train(model_cfg, lm, train_cfg, progress=False).final_loss
                    bars.update()
    ctx.data["aspect_loss"] = (("aspect_variant", "aspect_shape", "aspect_seed"), loss)
    ctx.data["aspect_width"] = (("aspect_shape",), np.asarray(c.aspect.widths))
    ctx.data["aspect_depth"] = (("aspect_shape",), np.asarray(c.aspect.depths))
    ctx.coords.update(
        aspect_variant=list(c.aspect.variants), aspect_shape=list(range(len(c.aspect.widths))),
        aspect_seed=list(range(c.aspect.seeds)),
    )  # fmt: skip


def deepest_step(r: Result, variant: str) -> np.ndarray:
    """Per seed, the loss at the deepest shape minus the loss at the next shallower one."""
    loss = r.data["aspect_loss"].sel(aspect_variant=variant).values
    return loss[-1] - loss[-2]


def claim_aspect(led: Ledger, r: Result) -> None:
    c = r.config
    (d1, l1), (d0, l0) = shapes(c)[-1], shapes(c)[-2]
    scale = SCALE.format(size=f"{12 * l1 * d1 * d1:,}", steps=c.aspect.steps)
    step = f"from d = {d0}, L = {l0} to d = {d1}, L = {l1} (fixed non-embedding size)"
    for variant in c.aspect.variants:
        delta = deepest_step(r, variant)
        led.judge(
            f"aspect_{variant}_deeper_narrower",
            replicates=delta,
            why=f"per-seed change of the held-out loss {step}: {np.round(delta, 4).tolist()}",
            statement=f"{SAID[variant][0]}, a character LM trained {c.aspect.steps} updates: the held-out loss "
            f"{SAID[variant][1]} {step}",
            scale=scale,
        )
    if {"pre_ln", "attnres"} <= set(c.aspect.variants):
        loss = r.data["aspect_loss"]
        gap = loss.sel(aspect_variant="attnres").values[-1] - loss.sel(aspect_variant="pre_ln").values[-1]
        led.judge(
            "aspect_attnres_beats_pre_ln_deepest",
            replicates=gap,
            why=f"per-seed held-out loss of Full AttnRes minus Pre-LN at d = {d1}, L = {l1}: "
            f"{np.round(gap, 4).tolist()}",
            statement=f"a character LM trained {c.aspect.steps} updates at the deepest shape (d = {d1}, L = {l1}): "
            "Full AttnRes's held-out loss is below Pre-LN's",
            scale=scale,
        )


claims = each_claim(claim_aspect)
