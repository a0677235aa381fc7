"""Training tasks: in-context regression, a Markov language, a text corpus, multi-query associative
recall, planted-key retrieval, regression on a fixed convolution and induction (the sequence pairs of
the representational-collapse probe live beside it, in ``probes/representational_collapse/pairs.py``).

A *task* is the small interface the trainer codes against (:class:`Task`): it draws a batch
``(inputs, targets)`` from an explicit ``torch.Generator`` and turns the model's outputs into a scalar
loss. Every task is a frozen dataclass validated on construction; ``config()`` is a JSON-safe dict that
fully determines it (it goes into checkpoint cache keys) and :func:`task_from_config` rebuilds it.

Randomness: every draw uses the generator it is given (on the generator's device, then moved to
``device``), never the global torch/numpy RNG, so a seed fixes a batch exactly and the global state is
untouched. Fixed random structure (a Markov transition matrix, a rotation of the regression inputs)
comes from a ``numpy.random.Generator`` seeded by a field of the task.

Where they live: the interface and shared helpers in :mod:`analysis.data.task_base`; linear regression, its
query-slot read-out and the convolution task in :mod:`analysis.data.regression_tasks`; the Markov language and the
corpus language model in :mod:`analysis.data.language_tasks`; associative recall, planted-key retrieval and nearest
neighbour in :mod:`analysis.data.recall_tasks`; induction and selective copying in
:mod:`analysis.data.copying_tasks`. This module re-exports them all and rebuilds a task from its config.
"""

from __future__ import annotations

import dataclasses
import warnings

from analysis.core.validation import check_choice
from analysis.data.copying_tasks import Induction, SelectiveCopying
from analysis.data.corpus import Corpus, CorpusSpec, build_corpus  # noqa: F401
from analysis.data.language_tasks import CorpusLM, MarkovLanguage, _is_primitive  # noqa: F401
from analysis.data.recall_tasks import AssociativeRecall, NearestNeighbour, PlantedKeyRetrieval
from analysis.data.regression_data import (  # noqa: F401
    LINKS,
    InputLaw,
    RegressionBatch,
    RegressionLaw,
    concat_tokens,
    interleaved_tokens,
)
from analysis.data.regression_tasks import (  # noqa: F401
    ConvolutionRegression,
    LinearRegressionTask,
    QuerySlotReadout,
    _haar_orthogonal,
    causal_conv,
)
from analysis.data.task_base import (  # noqa: F401
    Task,
    _check_batch,
    _check_generator,
    _check_outputs,
    _lm_loss,
    _masked_accuracy,
    _masked_lm_loss,
    _TokenLM,
    model_io,
)

# ================================================================================================
# rebuilding a task from its config


def task_from_config(config: dict):
    """Rebuild a task from ``task.config()`` (the inverse used when loading a cached checkpoint)."""
    if not isinstance(config, dict) or "kind" not in config:
        raise ValueError("config must be a dict with a 'kind' key")
    d = dict(config)
    kind = d.pop("kind")
    kinds = {
        "linear_regression": LinearRegressionTask,
        "markov": MarkovLanguage,
        "corpus_lm": CorpusLM,
        "associative_recall": AssociativeRecall,
        "planted_key_retrieval": PlantedKeyRetrieval,
        "convolution": ConvolutionRegression,
        "induction": Induction,
        "selective_copying": SelectiveCopying,
        "nearest_neighbour": NearestNeighbour,
    }
    check_choice("kind", kind, tuple(kinds))
    cls = kinds[kind]
    allowed = {f.name for f in dataclasses.fields(cls)} | (
        {"corpus_sha256", "vocab_size"} if kind == "corpus_lm" else set()
    )
    unknown = sorted(set(d) - allowed)
    if unknown:
        raise ValueError(f"config has unknown field(s) {unknown} for kind={kind!r}; allowed: {sorted(allowed)}")
    if kind == "linear_regression":
        if d.get("spectrum") is not None:
            d["spectrum"] = tuple(d["spectrum"])
        return LinearRegressionTask(**d)
    if kind in (
        "markov",
        "associative_recall",
        "planted_key_retrieval",
        "convolution",
        "induction",
        "selective_copying",
        "nearest_neighbour",
    ):
        return cls(**d)
    sha = d.pop("corpus_sha256", None)
    d.pop("vocab_size", None)
    task = CorpusLM(**d)
    if sha is not None and task.data.sha256 != sha:
        warnings.warn(
            f"corpus text differs from the one in the config (sha256 {task.data.sha256[:12]} != {sha[:12]}); "
            "a different Python version builds a different corpus",
            stacklevel=2,
        )
    return task


__all__ = [
    "AssociativeRecall",
    "ConvolutionRegression",
    "CorpusLM",
    "Induction",
    "LinearRegressionTask",
    "MarkovLanguage",
    "NearestNeighbour",
    "QuerySlotReadout",
    "RegressionBatch",
    "SelectiveCopying",
    "Task",
    "concat_tokens",
    "interleaved_tokens",
    "model_io",
    "task_from_config",
]
