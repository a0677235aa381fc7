"""Deterministic training of a ``TinyTransformer`` on a task, cached by content hash, resumable.

The front of the trainer: every name is defined in one of its parts and re-exported here, so
``from analysis.training.train import train, TrainConfig, ...`` keeps working.

* :mod:`analysis.training.train_config`: ``TrainConfig``, ``TrainResult`` and the presets
  (``tiny_lm_preset``, ``probe_lm_train_config``);
* :mod:`analysis.training.optim`: the learning-rate schedule (``lr_at``) and the optimiser (``make_optimizer``);
* :mod:`analysis.training.train_loop`: what fixes a run's numbers, the history, the update loop, ``forward``,
  ``training_loss``, ``evaluate`` and ``derived_seed``;
* :mod:`analysis.training.train_state`: the resumable partial state;
* :mod:`analysis.training.train_run`: :func:`~analysis.training.train_run.train` (cache lookups, locking,
  snapshots), ``TRAINER_VERSION`` and ``record_checkpoints``.

Code that monkeypatches the trainer patches the part where the name is looked up (``train_run._train_loop``,
``train_run._deterministic``), not this module.
"""

from analysis.training.checkpoints import (  # noqa: F401
    CheckpointCache,
    checkpoint_key,
    history_from_json,
    history_to_json,
)
from analysis.training.optim import lr_at, make_optimizer  # noqa: F401
from analysis.training.train_config import (  # noqa: F401
    MAX_BETA,
    OPTIMIZERS,
    RESERVED_HISTORY,
    SCHEDULES,
    Optimizer,
    Schedule,
    TrainConfig,
    TrainResult,
    probe_lm_train_config,
    tiny_lm_preset,
)
from analysis.training.train_loop import (  # noqa: F401
    _as_float,
    _deterministic,
    _eval_data,
    _gradient_step,
    _record,
    _train_loop,
    derived_seed,
    evaluate,
    forward,
    training_loss,
)
from analysis.training.train_run import (  # noqa: F401
    _RECORDERS,
    TRAINER_VERSION,
    _check_snapshots,
    _load_state,
    _lookup,
    _resolve_cache,
    _save_state,
    record_checkpoints,
    train,
)
from analysis.training.train_state import _pack_state, _restore_partial, _unpack_state  # noqa: F401
from analysis.zoo.model import ModelConfig, TinyTransformer  # noqa: F401
