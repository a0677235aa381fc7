"""Width and depth parameterisations of the tiny transformer (``ModelConfig.parameterisation``): what muP and
depth-muP change in the model (:func:`init_multiplier`; the read-out divisor, the attention scale and the branch
multiplier are :class:`~analysis.zoo.model_config.ModelConfig`'s ``width_mult``, ``scale`` and
``branch_multiplier``) and in the optimiser (:func:`lr_multipliers`).

Each parameter is classed by which of its dimensions grow with width, found as in Yang et al.'s ``mup`` package by
comparing its shape with the same model built at ``base_d_model`` (``TinyTransformer.base_shapes``): a dimension
that differs is *infinite*. With ``m_in`` and ``m_out`` the fan-in and fan-out width multipliers (1 where finite;
an embedding's fan-in is its vocabulary, a vector's is 1) and ``m = d_model / base_d_model``:

================================  ==================  ===================  =======================================
parameter (fan-in, fan-out)        Adam lr multiplier  SGD lr multiplier    initialisation
================================  ==================  ===================  =======================================
hidden (infinite, infinite)        1 / m_in            m_out / m_in         gpt2: std x sqrt(base fan-in / fan-in)
read-out ``head`` (inf, finite)    1                   m_in                 the base width's std; output / m
other (infinite, finite): gates    1 / m_in            1 / m_in             as hidden
input-like (finite, infinite)      1                   m_out                unchanged
scalar-like (finite, finite)       1                   1                    unchanged
================================  ==================  ===================  =======================================

The first, second and fourth rows and the read-out are ``mup``'s MuAdam / MuSGD / MuReadout; the third row (Gated
DeltaNet's ``W_gate`` and ``W_beta``: a width of inputs, one output per head) is our derivation: a weight whose
fan-in grows moves its output by ``lr x fan-in`` under Adam's sign-like first step, so ``1 / m_in`` keeps the gate's
pre-activation moving by O(1), and under SGD its gradient does not shrink with width (its output is a scalar per
head), so the same ``1 / m_in``. Attention logits are ``q.k / d_head`` times ``sqrt(dh0)``: equal to the standard
``1 / sqrt(d_head)`` at the base width (``ModelConfig.scale``).

depth_mup multiplies every residual branch by ``(L0 / L)^alpha`` (``alpha`` 1/2: Depth-muP; 1: CompleteP) and every
parameter inside the blocks' learning rate by ``(L0 / L)^(1 - alpha)`` under Adam and ``(L / L0)^(2 alpha - 1)``
under SGD, so that one update moves the final residual stream by O(1) whatever the depth (derived in
:mod:`analysis.theory.width`). At ``d_model = base_d_model`` (and ``n_layers = base_n_layers``) the model, its
weights and its learning rates are the standard ones.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from analysis.zoo.model_config import ModelConfig

ParamClass = str  # "hidden" | "readout" | "gate" | "input" | "scalar"


def is_readout(name: str) -> bool:
    """The read-out's parameters (``head.weight``, ``head.bias``)."""
    return name.startswith("head.")


def _fans(shape: tuple[int, ...], base: tuple[int, ...], embedding: bool) -> tuple[float, float]:
    """(fan-in multiplier, fan-out multiplier) of one parameter: ``nn.Linear`` weights are (out, in), embeddings
    (vocabulary, width); a vector is all fan-out."""
    ratio = [s / b for s, b in zip(shape, base, strict=True)]
    if len(shape) == 1:
        return 1.0, ratio[0]
    if len(shape) != 2:
        return 1.0, 1.0
    return (ratio[0], ratio[1]) if embedding else (ratio[1], ratio[0])


def classify(
    name: str, shape: tuple[int, ...], base: tuple[int, ...], embedding: bool = False
) -> tuple[ParamClass, float, float]:
    """``(class, m_in, m_out)`` of one parameter (module docstring's table); ``embedding``: an ``nn.Embedding``'s
    weight, whose fan-in is its first dimension."""
    m_in, m_out = _fans(shape, base, embedding)
    grows_in, grows_out = m_in != 1.0, m_out != 1.0
    if grows_in and grows_out:
        return "hidden", m_in, m_out
    if grows_in:
        return ("readout" if is_readout(name) else "gate"), m_in, m_out
    if grows_out:
        return "input", m_in, m_out
    return "scalar", m_in, m_out


def parameter_classes(model: torch.nn.Module) -> dict[str, tuple[ParamClass, float, float]]:
    """``name -> (class, m_in, m_out)`` for every parameter of a TinyTransformer under mup or depth_mup."""
    cfg = model.config
    base = model.base_shapes()
    embeddings = {f"{n}.weight" for n, m in model.named_modules() if isinstance(m, torch.nn.Embedding)}
    out = {}
    for name, p in model.named_parameters():
        if name not in base:
            raise ValueError(f"parameter {name!r} has no counterpart at base_d_model={cfg.base_d_model}")
        out[name] = classify(name, tuple(p.shape), base[name], name in embeddings)
    return out


def init_multiplier(cfg: ModelConfig, name: str, fan_in: int, base_fan_in: int) -> float:
    """What the standard std of ``nn.Linear`` ``name`` (fan-in ``fan_in``, ``base_fan_in`` at the base width) is
    multiplied by under mup: the read-out keeps its base-width std; under gpt2 init every other weight whose fan-in
    grows is scaled by sqrt(base fan-in / fan-in) (fan_in init already is)."""
    if is_readout(f"{name}.weight"):
        return 1.0 if cfg.init == "gpt2" else math.sqrt(fan_in / base_fan_in)
    if cfg.init == "gpt2":
        return math.sqrt(base_fan_in / fan_in)
    return 1.0


def lr_multipliers(model: torch.nn.Module, optimizer: str) -> dict[str, float]:
    """``name -> learning-rate multiplier`` of every trainable parameter (module docstring's table; depth_mup's
    depth factor on the parameters inside the blocks). All 1 under the standard parameterisation."""
    cfg = getattr(model, "config", None)
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if cfg is None or getattr(cfg, "parameterisation", "standard") == "standard":
        return {n: 1.0 for n, _ in named}
    if optimizer not in ("adam", "adamw", "sgd"):
        raise ValueError(
            f"optimizer {optimizer!r} has no learning-rate rule under parameterisation {cfg.parameterisation!r}; "
            "allowed: adam, adamw, sgd"
        )
    classes = parameter_classes(model)
    out = {}
    for name, _ in named:
        kind, m_in, m_out = classes[name]
        out[name] = _width_rule(kind, m_in, m_out, optimizer) * _depth_rule(cfg, name, optimizer)
    return out


def _width_rule(kind: ParamClass, m_in: float, m_out: float, optimizer: str) -> float:
    adam = optimizer != "sgd"
    if kind == "hidden":
        return 1.0 / m_in if adam else m_out / m_in
    if kind == "readout":
        return 1.0 if adam else m_in
    if kind == "gate":
        return 1.0 / m_in
    if kind == "input":
        return 1.0 if adam else m_out
    return 1.0


def _depth_rule(cfg: Any, name: str, optimizer: str) -> float:
    if cfg.parameterisation != "depth_mup" or not name.startswith("blocks."):
        return 1.0
    ratio = cfg.n_layers / cfg.base_n_layers  # L / L0
    alpha = cfg.depth_alpha
    return ratio ** (alpha - 1.0) if optimizer != "sgd" else ratio ** (2.0 * alpha - 1.0)
