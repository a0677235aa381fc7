"""Hugging Face ``transformers`` models behind the probe protocol.

:class:`HFModel` wraps a ``transformers`` model (GPT-2 language models and BERT-style encoders) so that every probe
sees what it sees on our zoo: a forward pass ``model(tokens, attn_bias=None)`` and hook points with *our* names
(:mod:`analysis.zoo.hooks`). Nothing here reaches a model hub: models are built from a config or loaded from a local
folder with ``local_files_only=True``, and importing this module sets ``HF_HUB_OFFLINE=1`` unless the caller set it.

This module is the front that re-exports the adapter's parts from where they live:

* :mod:`analysis.zoo.hf_loading`: the offline environment, the optional ``transformers`` import, dtype names and
  the pretrained encoder shipped on PyPI (:func:`minilm_dir`);
* :mod:`analysis.zoo.hf_attention`: our attention function (``"workbench"``), eager softmax attention with hook
  points for q, k, v, scores, pattern and z that adds the probe's ``attn_bias``;
* :mod:`analysis.zoo.hf_layouts`: where each hook point sits in a GPT-2 and in a BERT (the table of names), and the
  hooks that remove skip connections (Dong et al. 2021);
* :mod:`analysis.zoo.hf_adapter`: :class:`HFModel` (construction, the probe protocol; dropout is never applied);
* :mod:`analysis.zoo.hf_gpt2`: a small ``GPT2Config`` with a zoo equivalent and the zoo model carrying a GPT-2's
  weights.
"""

from __future__ import annotations

from analysis.zoo.hf_adapter import HFModel, _quiet_length_warning  # noqa: F401
from analysis.zoo.hf_attention import (  # noqa: F401
    _CURRENT,
    ATTN_IMPLEMENTATION,
    _register_attention,
    workbench_attention,
)
from analysis.zoo.hf_gpt2 import _GPT2_ACTIVATIONS, gpt2_config, zoo_config_for_gpt2, zoo_from_gpt2  # noqa: F401
from analysis.zoo.hf_layouts import (  # noqa: F401
    _ATTN_POINTS,
    _BERT_BLOCK,
    _GPT2_BLOCK,
    SUPPORTED,
    _ensure,
    _get,
    _Points,
)
from analysis.zoo.hf_loading import _DTYPES, _require_transformers, _torch_dtype, minilm_dir  # noqa: F401

__all__ = [
    "ATTN_IMPLEMENTATION",
    "HFModel",
    "gpt2_config",
    "minilm_dir",
    "workbench_attention",
    "zoo_config_for_gpt2",
    "zoo_from_gpt2",
]
