"""The adapter: :class:`HFModel` puts a Hugging Face ``transformers`` model (GPT-2 language models and BERT-style
encoders) behind the probe protocol, so that every probe sees what it sees on our zoo: a forward pass
``model(tokens, attn_bias=None)`` and hook points with *our* names (:mod:`analysis.zoo.hooks`). Models are built
from a config or loaded from a local folder with ``local_files_only=True`` (:mod:`analysis.zoo.hf_loading`); the
hook points are placed by :mod:`analysis.zoo.hf_layouts` and, inside attention, by
:mod:`analysis.zoo.hf_attention`.

Dropout is never applied: the adapter keeps the wrapped model in eval mode.
"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from analysis.zoo.attention_bias import PrefixKeyBias, layer_biases
from analysis.zoo.hf_attention import _CURRENT, ATTN_IMPLEMENTATION, _register_attention
from analysis.zoo.hf_layouts import (
    _ATTN_POINTS,
    _BERT_BLOCK,
    _GPT2_BLOCK,
    SUPPORTED,
    _ensure,
    _get,
    _Points,
    attach,
    backbone,
    layers,
    remove_skips,
)
from analysis.zoo.hf_loading import _DTYPES, _require_transformers, _torch_dtype
from analysis.zoo.hooks import HookPoint, name_hook_points


class HFModel(nn.Module):
    """A ``transformers`` GPT-2 or BERT-style model that satisfies :class:`analysis.zoo.protocol.ProbeModel`.

    ``HFModel(hf_model, tokenizer=None, residual=True)`` wraps an already built model;
    :meth:`from_pretrained` loads a local folder (never a hub), :meth:`from_config` builds a randomly
    initialised one from a config with a seed. ``model(tokens, attn_bias=None)`` returns logits
    (B, T, V) for a language model and the last hidden states (B, T, d) for an encoder.
    """

    def __init__(self, hf_model: nn.Module, tokenizer: Any = None, residual: bool = True) -> None:
        super().__init__()
        _register_attention()
        cfg = hf_model.config
        if cfg.model_type not in SUPPORTED:
            raise ValueError(
                f"model_type must be one of {list(SUPPORTED)} (module layouts we map), got {cfg.model_type!r}"
            )
        if not isinstance(residual, bool):
            raise ValueError(f"residual must be a bool, got {residual!r}")
        if getattr(hf_model, "_workbench_wrapped", False):
            raise ValueError(
                "this transformers model is already wrapped by an HFModel (its hooks would fire twice); "
                "use adapter.with_residual(...) for a second adapter on a copy of the weights"
            )
        hf_model._workbench_wrapped = True
        self.hf = hf_model.eval()
        self.tokenizer = tokenizer
        self.residual = residual
        self.kind = cfg.model_type
        cfg._attn_implementation = ATTN_IMPLEMENTATION  # our attention function (eager + hook points)
        # transformers >= 5 keeps the implementation per sub-config too
        if hasattr(cfg, "_attn_implementation_internal"):
            cfg._attn_implementation_internal = ATTN_IMPLEMENTATION
        self._bias: list[torch.Tensor | None] | None = None
        self._handles: list[Any] = []
        self._attn_points: dict[int, dict[str, HookPoint]] = {}
        self._attn_layer: dict[int, int] = {}
        self._build_points()
        self._hook_points = name_hook_points(self.points)  # names relative to the container: ours

    # ---- construction ----------------------------------------------------------------------------
    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, *, residual: bool = True, dtype: str = "float32") -> HFModel:
        """Load a local model folder (``config.json`` + safetensors weights) and its tokenizer if present."""
        transformers = _require_transformers()
        transformers.utils.logging.disable_progress_bar()  # a local load takes well under a second
        folder = Path(path)
        if not (folder / "config.json").is_file():
            raise ValueError(f"model must be a local folder with a config.json, got {str(path)!r}")
        config = transformers.AutoConfig.from_pretrained(folder, local_files_only=True)
        auto = transformers.AutoModelForCausalLM if config.model_type == "gpt2" else transformers.AutoModel
        model = auto.from_pretrained(
            folder, local_files_only=True, use_safetensors=True, attn_implementation="eager", dtype=_torch_dtype(dtype)
        )
        tokenizer = None
        if any((folder / f).is_file() for f in ("tokenizer.json", "vocab.txt", "vocab.json")):
            tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
        return cls(model, tokenizer=tokenizer, residual=residual)

    @classmethod
    def from_config(
        cls, config: Any, *, seed: int = 0, residual: bool = True, dtype: str = "float32", tokenizer: Any = None
    ) -> HFModel:
        """A randomly initialised model of ``config`` (``transformers`` init), weights a function of ``seed``.

        The global RNG is used by ``transformers`` to draw; it is forked and seeded here, so the
        caller's global state is untouched and the same seed gives the same weights.
        """
        transformers = _require_transformers()
        if not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        auto = transformers.AutoModelForCausalLM if config.model_type == "gpt2" else transformers.AutoModel
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = auto.from_config(config, attn_implementation="eager")
        return cls(model.to(_torch_dtype(dtype)), tokenizer=tokenizer, residual=residual)

    def with_residual(self, residual: bool) -> HFModel:
        """A new adapter on a copy of these weights, with or without skip connections (Dong et al.)."""
        with torch.random.fork_rng(devices=[]):  # the constructor's throw-away init must not touch the global RNG
            fresh = type(self.hf)(copy.deepcopy(self.hf.config))
        fresh.load_state_dict(self.hf.state_dict())
        fresh.to(dtype=next(self.hf.parameters()).dtype)
        return HFModel(fresh, tokenizer=self.tokenizer, residual=residual)

    def __deepcopy__(self, memo: dict) -> HFModel:
        """A copy with its own hooks: ``copy.deepcopy`` of the wrapped model would keep hook closures
        that fire this adapter's hook points, so copies are rebuilt from the weights instead."""
        return self.with_residual(self.residual)

    def reinitialised(self, seed: int) -> HFModel:
        """The same architecture (and tokenizer) with fresh ``transformers`` initial weights from ``seed``."""
        dtype = {v: k for k, v in _DTYPES.items()}[next(self.hf.parameters()).dtype]
        return HFModel.from_config(
            copy.deepcopy(self.hf.config), seed=seed, residual=self.residual, dtype=dtype, tokenizer=self.tokenizer
        )

    def _layers(self) -> Sequence[nn.Module]:
        return layers(self.hf, self.kind)

    def _backbone(self) -> nn.Module:
        return backbone(self.hf, self.kind)

    def _build_points(self) -> None:
        bb = self._backbone()
        pts = _Points()
        self.points = pts
        if self.kind == "gpt2":
            self._attach(bb.wte, _ensure(pts, "hook_embed"), "out")
            self._attach(bb.wpe, _ensure(pts, "hook_pos_embed"), "pos")
            block_map = _GPT2_BLOCK
        else:
            emb = bb.embeddings
            self._attach(emb.word_embeddings, _ensure(pts, "hook_embed"), "out")
            self._attach(emb.position_embeddings, _ensure(pts, "hook_pos_embed"), "pos")
            block_map = _BERT_BLOCK
        for layer, block in enumerate(self._layers()):
            pre = f"blocks.{layer}."
            self._attach(block, _ensure(pts, pre + "hook_resid_pre"), "in")
            # create names in the order they fire, so hook_names() lists them as the zoo does
            for ours in ("ln1.hook_in", "ln1.hook_normalized") if self.kind == "gpt2" else ():
                _ensure(pts, pre + ours)
            attn_points = {n: _ensure(pts, pre + "attn." + n) for n in _ATTN_POINTS}
            for ours, path, kind in block_map:
                self._attach(_get(block, path), _ensure(pts, pre + ours), kind)
            attn = block.attn if self.kind == "gpt2" else block.attention.self
            self._attn_points[id(attn)] = attn_points
            self._attn_layer[id(attn)] = layer
            self._attach(block, _ensure(pts, pre + "hook_resid_post"), "out")
            if not self.residual:
                self._remove_skips(layer, block)
        if self.kind == "gpt2":
            self._attach(bb.ln_f, _ensure(pts, "ln_final.hook_in"), "in")
            self._attach(bb.ln_f, _ensure(pts, "ln_final.hook_normalized"), "out")

    def _attach(self, module: nn.Module, point: HookPoint, kind: str) -> None:
        attach(self._handles, module, point, kind)

    def _remove_skips(self, layer: int, block: nn.Module) -> None:
        remove_skips(self._handles, self.kind, block)

    # ---- the protocol -----------------------------------------------------------------------------
    @property
    def config(self) -> Any:
        """The wrapped model's ``transformers`` config."""
        return self.hf.config

    @property
    def n_layers(self) -> int:
        return len(self._layers())

    @property
    def causal(self) -> bool:
        return self.kind == "gpt2" or bool(getattr(self.hf.config, "is_decoder", False))

    @property
    def input_kind(self) -> str:
        return "tokens"

    @property
    def vocab_size(self) -> int:
        return int(self.hf.config.vocab_size)

    @property
    def max_positions(self) -> int:
        c = self.hf.config
        return int(getattr(c, "n_positions", None) or c.max_position_embeddings)

    @property
    def d_model(self) -> int:
        return int(self.hf.config.hidden_size)

    @property
    def n_heads(self) -> int:
        return int(self.hf.config.num_attention_heads)

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def named_hook_points(self) -> dict[str, HookPoint]:
        return dict(self._hook_points)

    def hook_names(self) -> list[str]:
        return list(self.named_hook_points())

    def encode(self, text: str) -> torch.Tensor:
        """Token ids (T,) of ``text`` with the model's tokenizer (no special tokens added)."""
        if self.tokenizer is None:
            raise ValueError("this model has no tokenizer: load it with from_pretrained from a folder that has one")
        with _quiet_length_warning(self.tokenizer):
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return torch.tensor(ids, dtype=torch.long)

    def train(self, mode: bool = True) -> HFModel:
        """The wrapped model stays in eval mode (no dropout); only this flag follows ``mode``."""
        self.training = mode
        self.hf.eval()
        return self

    def forward(
        self, inputs: torch.Tensor, attn_bias: torch.Tensor | Sequence[torch.Tensor | None] | None = None
    ) -> torch.Tensor:
        if inputs.dtype not in (torch.int64, torch.int32) or inputs.dim() != 2:
            raise ValueError(
                f"inputs must be integer token ids of shape (B, T), got {inputs.dtype} {tuple(inputs.shape)}"
            )
        T = inputs.shape[1]
        if T > self.max_positions:
            raise ValueError(f"sequence length {T} exceeds the model's {self.max_positions} positions")
        self._bias = self._layer_biases(attn_bias)
        token = _CURRENT.set(self)
        try:
            kwargs: dict[str, Any] = {"input_ids": inputs}
            if self.kind == "gpt2":
                kwargs["use_cache"] = False
            out = self.hf(**kwargs)
        finally:
            _CURRENT.reset(token)
            self._bias = None
        return out.logits if hasattr(out, "logits") else out.last_hidden_state

    def _layer_biases(self, attn_bias) -> list[torch.Tensor | None]:
        # the wrapped attention adds whole (T, T) tensors: a compact bias is expanded here
        return [b.dense() if isinstance(b, PrefixKeyBias) else b for b in layer_biases(attn_bias, self.n_layers)]

    def _bias_for(self, module_id: int) -> torch.Tensor | None:
        if self._bias is None or module_id not in self._attn_layer:
            return None
        return self._bias[self._attn_layer[module_id]]

    def describe(self) -> dict[str, Any]:
        """Architecture summary for provenance: type, sizes, parameter count, skip connections."""
        c = self.hf.config
        return {
            "model_type": self.kind,
            "class": type(self.hf).__name__,
            "n_layers": self.n_layers,
            "d_model": self.d_model,
            "n_heads": self.n_heads,
            "vocab_size": self.vocab_size,
            "max_positions": self.max_positions,
            "causal": self.causal,
            "residual": self.residual,
            "n_params": sum(p.numel() for p in self.hf.parameters()),
            "name_or_path": getattr(c, "_name_or_path", ""),
        }


@contextlib.contextmanager
def _quiet_length_warning(tokenizer):
    """Tokenizing a long text for chunking is intended: silence the 'longer than max length' warning."""
    old = getattr(tokenizer, "model_max_length", None)
    try:
        if old is not None:
            tokenizer.model_max_length = int(1e30)
        yield
    finally:
        if old is not None:
            tokenizer.model_max_length = old
