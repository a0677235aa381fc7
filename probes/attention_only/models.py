"""Shared recipe of the attention-only probe's networks (seed 004#1): the corpus tasks and the model configs of the
matched models and the deep stacks, the matched depth and the parameter count."""

from __future__ import annotations

from analysis.data.corpus import CorpusSpec
from analysis.data.tasks import CorpusLM
from analysis.theory import attention_only as th
from analysis.zoo.model import ModelConfig
from probes.attention_only.config import Config

SAN_MODELS = ("standard", "attention_only", "mlp_deleted")  # matched parameters; the standard without its MLPs
QK_GAIN = 1.5  # the constant QK-norm gain of the float64 bound construction (any value attains the bound)


def san_task(config: Config) -> CorpusLM:
    return CorpusLM(seq_len=config.matched.seq_len, corpus=CorpusSpec(encoding="char"))


def matched_depth(config: Config, width: int | None = None) -> dict[str, int]:
    """Theory item 5 for the configured standard model (at ``width``, default ``matched_d_model``): the matched
    attention-only depth and the residual."""
    d, H = width or config.matched.d_model, config.matched.n_heads
    return th.matched_attention_depth(config.matched.n_layers, d, H, d // H, 4 * d)


def san_model_config(
    config: Config, name: str, vocab: int, seed: int = 0, dtype: str = "float32", width: int | None = None
) -> ModelConfig:
    """Model ``name`` of :data:`SAN_MODELS`: pre-LN, RoPE, width ``width`` (default ``matched_d_model``);
    ``standard`` has ``matched_n_layers`` blocks with MLP 4d, ``attention_only`` the matched depth without MLPs,
    ``mlp_deleted`` the standard's depth without MLPs."""
    d = width or config.matched.d_model
    layers, mlp = {
        "standard": (config.matched.n_layers, 4 * d),
        "attention_only": (matched_depth(config, d)["layers"], 0),
        "mlp_deleted": (config.matched.n_layers, 0),
    }[name]
    return ModelConfig(
        vocab_size=vocab,
        d_model=d,
        n_layers=layers,
        n_heads=config.matched.n_heads,
        d_mlp=mlp,
        pos="rope",
        max_len=config.matched.seq_len,
        dtype=dtype,
        seed=seed,
    )


def count_params(cfg: ModelConfig) -> int:
    """Theory item 5's count for a token-in, LM-out zoo config."""
    if cfg.input != "tokens" or cfg.output != "lm":
        raise ValueError(f"count_params needs input 'tokens' and output 'lm', got {cfg.input!r}, {cfg.output!r}")
    return th.param_count(
        vocab=cfg.vocab_size,
        d_model=cfg.d_model,
        n_layers=cfg.n_layers,
        n_heads=cfg.n_heads,
        d_head=cfg.head_size,
        d_mlp=cfg.mlp_width,
        norm=cfg.norm,
        norm_type=cfg.norm_type,
        bias=cfg.bias,
        qk_norm=cfg.qk_norm,
        final_norm=cfg.use_final_norm,
        learned_positions=cfg.max_len if cfg.pos == "learned" else 0,
    )


def deep_task(config: Config) -> CorpusLM:
    return CorpusLM(seq_len=config.deep.seq_len, corpus=CorpusSpec(encoding="char"))


def deep_model_config(config: Config, qk_norm: bool, vocab: int, seed: int = 0, dtype: str = "float32") -> ModelConfig:
    """``deep_n_layers`` x ``deep_d_model`` attention-only stack (pre-LN, RoPE, no MLP), with or without QK-norm."""
    return ModelConfig(
        vocab_size=vocab,
        d_model=config.deep.d_model,
        n_layers=config.deep.n_layers,
        n_heads=config.deep.n_heads,
        d_mlp=0,
        pos="rope",
        max_len=config.deep.seq_len,
        qk_norm=qk_norm,
        dtype=dtype,
        seed=seed,
    )
