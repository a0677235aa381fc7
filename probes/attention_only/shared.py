"""What the attention-only parts share besides their configuration: the training recipe of the small trained
models and the ``claims`` of a part whose one run holds its replicate seeds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from analysis.claims.ledger import Ledger
from analysis.probing.base import Result
from analysis.training.train import TrainConfig

Claim = Callable[[Ledger, Result], None]


def train_config(steps: int, batch_size: int, lr: float, warmup: int, seed: int, **overrides: Any) -> TrainConfig:
    """``steps`` updates of ``batch_size`` sequences at peak ``lr`` after a linear warm-up of ``min(warmup, steps)``
    updates (TrainConfig's defaults otherwise: the cosine schedule); ``overrides`` sets further fields."""
    warmup_steps = min(warmup, steps)
    return TrainConfig(steps=steps, batch_size=batch_size, lr=lr, warmup_steps=warmup_steps, seed=seed, **overrides)


def part_claims(*claims: Claim, trained: tuple[Claim, ...] = ()) -> Callable[[Ledger, tuple[Result, ...]], None]:
    """A part's ``claims(led, rs)``: its one run (the replicate seeds inside it) goes to each of ``claims`` and,
    when the run trained its models (``config.training``), then to each of ``trained``, in that order."""

    def part(led: Ledger, rs: tuple[Result, ...]) -> None:
        (r,) = rs
        for claim in claims + (trained if r.config.training else ()):
            claim(led, r)

    return part
