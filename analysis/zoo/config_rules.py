"""The rules between :class:`analysis.zoo.model_config.ModelConfig` fields that one field's own check cannot say: a
knob set only where it acts (so that no two cache keys name one model), and the knobs that do not compose. Each
check raises ``ValueError`` naming the field; :meth:`ModelConfig.validate` calls them after the field checks."""

from __future__ import annotations

from typing import Any

from analysis.core.validation import check_float

DEPTH_ALPHAS = (0.5, 1.0)  # depth_mup's branch exponents: 1/sqrt(L) (Depth-muP) and 1/L (CompleteP)


def check_recurrent(cfg: Any) -> None:
    """The recurrent mixer's fields are set only where they act (so no two keys name one model)."""
    defaults = {s.name: s.default for s in cfg.field_specs()}
    if cfg.attention != "recurrent":
        for name in ("write_rule", "delta_beta", "decay", "feature_map", "n_features", "state_norm"):
            if getattr(cfg, name) != defaults[name]:
                raise ValueError(f"{name} is only used with attention 'recurrent', got attention={cfg.attention!r}")
    elif not cfg.causal:
        raise ValueError("causal must be true for attention 'recurrent' (a recurrent state reads the past only)")
    if cfg.delta_beta is not None:
        check_float("delta_beta", cfg.delta_beta, minimum=0.0, strict_minimum=True)
        if cfg.write_rule != "delta":
            raise ValueError(f"delta_beta is only used with write_rule 'delta', got {cfg.write_rule!r}")
    if cfg.n_features != defaults["n_features"] and cfg.feature_map != "favor":
        raise ValueError(f"n_features is only used with feature_map 'favor', got {cfg.feature_map!r}")
    if cfg.state_norm and cfg.feature_map == "identity":
        raise ValueError("state_norm needs a positive feature_map (elu1 | favor): q . k may vanish for identity")
    if cfg.loop_unit != defaults["loop_unit"] and cfg.loops == 1:
        raise ValueError("loop_unit is only used with loops > 1")
    for name in ("rel_pos", "kv_shift"):
        if getattr(cfg, name) != defaults[name] and cfg.attention == "recurrent":
            raise ValueError(f"{name} needs an attention kernel with a pattern, got attention 'recurrent'")
    if cfg.kv_shift and not cfg.causal:
        raise ValueError("kv_shift needs causal attention (k'_t mixes in k_(t-1), the past)")


def check_parameterisation(cfg: Any) -> None:
    """The base width and depth are set only where they act, and mup composes only with what it rescales."""
    defaults = {s.name: s.default for s in cfg.field_specs()}
    p = cfg.parameterisation
    used = {"base_d_model": p != "standard", "base_n_layers": p == "depth_mup", "depth_alpha": p == "depth_mup"}
    for name, acts in used.items():
        if not acts and getattr(cfg, name) != defaults[name]:
            raise ValueError(f"{name} is not used with parameterisation {p!r}")
    if p == "standard":
        return
    if cfg.depth_alpha not in DEPTH_ALPHAS:
        raise ValueError(f"depth_alpha must be one of {list(DEPTH_ALPHAS)}, got {cfg.depth_alpha!r}")
    if cfg.init not in ("fan_in", "gpt2"):
        raise ValueError(f"parameterisation {p!r} needs init 'fan_in' or 'gpt2', got init={cfg.init!r}")
    if cfg.deepnorm:
        raise ValueError(f"parameterisation {p!r} does not compose with deepnorm (both rescale the branches)")
    if cfg.d_head is None and cfg.base_d_model % cfg.n_heads:
        raise ValueError(
            f"base_d_model must be divisible by n_heads, got base_d_model={cfg.base_d_model}, n_heads={cfg.n_heads}"
        )


def check_residual(cfg: Any) -> None:
    """Full AttnRes (``residual="attnres"``) is defined on the pre-norm stream with both skips, one pass per block:
    it replaces the sum of the skips, so the knobs that rescale or remove that sum do not compose with it."""
    if cfg.residual == "add":
        return
    if cfg.norm != "pre":
        raise ValueError(f"residual 'attnres' needs norm 'pre' (it mixes the pre-norm stream), got {cfg.norm!r}")
    for name, value in (("attn_residual", cfg.attn_residual), ("mlp_residual", cfg.mlp_residual)):
        if not value:
            raise ValueError(f"{name} must be true with residual 'attnres' (it replaces the skip, not removes it)")
    if cfg.loops != 1:
        raise ValueError(f"loops must be 1 with residual 'attnres' (each sublayer has its own query), got {cfg.loops}")
    if cfg.parameterisation != "standard":
        raise ValueError(
            f"residual 'attnres' is defined under parameterisation 'standard' only, got {cfg.parameterisation!r}"
        )
