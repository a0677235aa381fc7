"""Probe configs: :class:`ProbeConfig`, the base of every probe's ``Config`` (presets, the model fields, the device),
and the helpers that declare its fields: :func:`param` (from :mod:`analysis.core.config`), :func:`model_param` for a
field of the model the probe builds (named as in :class:`~analysis.zoo.model.ModelConfig`, help and bounds from
``MODEL_FIELDS``), and :func:`replicates_param` for a part's replicate count.

One vocabulary: a probe field that sets a model or trainer field carries that field's name -- ``n_layers``,
``d_model``, ``n_heads``, ``d_mlp``, ``steps``, ``batch_size``, ``lr`` -- after the prefix of the part or model it
belongs to (``copying_n_layers``, ``train_batch_size``, ``deep_d_model``). ``tests/test_config.py`` checks it.

The rules a probe's ``Config`` follows (every field has a default, the defaults are the full experiment, ``SMOKE``
holds the smoke preset's overrides; model fields) are part of the probe contract: see :mod:`analysis.probing.base`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar

from analysis.claims.ledger import PRESETS as PRESET_NAMES
from analysis.core.config import BaseConfig, FieldSpec, PartConfig, field_specs_of, param
from analysis.core.devices import DEVICES, resolve_device
from analysis.core.fields import NO_SMOKE
from analysis.core.io import content_hash
from analysis.core.validation import check_choice

if TYPE_CHECKING:
    from analysis.zoo.model import ModelConfig

# Largest seed a config accepts: probes derive further seeds from it (offsets, products such as
# seed * 1_000_003) and torch.Generator.manual_seed takes nothing past 2**64 - 1.
MAX_SEED = 2**31 - 1


# The ModelConfig fields probes expose as their own (the model the probe builds), with the help and bounds a probe
# gets unless it gives its own: ModelConfig field -> (standard help, standard bounds). A probe declares one with
# ``model_param(name, default)``; ``ProbeConfig.model_config`` passes them all to the ModelConfig unchanged. A sweep
# (``depths``), a switch standing for several fields (signal_propagation's ``attn_only``, ``skip``) or a second
# model's fields (icl_gd's ``garg_*``) are plain ``param`` fields that the probe maps itself.
MODEL_FIELDS: dict[str, tuple[str, dict[str, Any]]] = {
    "n_layers": ("transformer blocks L", {"minimum": 1}),
    "d_model": ("residual width d", {"minimum": 2}),
    "n_heads": ("attention heads per layer (must divide d_model)", {"minimum": 1}),
    "d_mlp": ("MLP hidden width (0 = attention only)", {"minimum": 0}),
    "attention": ("attention kernel", {}),
    "norm": ("norm placement", {}),
    "norm_type": ("norm kind", {}),
    "pos": ("positional encoding", {}),
    "dtype": ("model dtype", {}),
    "vocab_size": ("token vocabulary", {"minimum": 2}),
    "logit_scale": ("multiplier of q.k (none: 1/sqrt(d_head))", {}),
    "ssmax_s": ("SSMax s (logits times s ln n)", {"minimum": 0.0}),
    "sigmoid_bias": ("sigmoid attention bias b", {}),
    "init_std": ("std of the initial weights (gpt2 init)", {"minimum": 0.0}),
    "seed": ("seed of the model weights", {"minimum": 0, "maximum": MAX_SEED}),
}


def model_param(name: str, default: Any, help: str | None = None, **bounds: Any) -> Any:
    """A probe field that is also a field of the model the probe builds (see ``MODEL_FIELDS``).

    ``name`` is the ModelConfig field, which the probe's field must be named after; it fixes the standard help
    and bounds, which ``help`` and ``bounds`` (``choices``, ``minimum``, ``maximum``, ``formerly``) replace for
    this probe. The default is the probe's own (its full experiment)::

        n_heads: int = model_param("n_heads", 4)
        attention: str = model_param("attention", "softmax", choices=("softmax", "ssmax"))
    """
    if name not in MODEL_FIELDS:
        raise TypeError(f"model_param: unknown model field {name!r}; known: {', '.join(MODEL_FIELDS)}")
    standard_help, standard_bounds = MODEL_FIELDS[name]
    spec = param(default, help or standard_help, **{**standard_bounds, **bounds})
    return field(default=default, metadata={**spec.metadata, "model_field": name})


def replicates_param(what: str, default: int = 5) -> Any:
    """A part's count of independent replicates: ``what`` says what each one draws afresh (e.g. "random layers
    (weights and tokens)"); their spread is the band of the part's claims (95% Student t). At least 2 (a spread),
    at most 64; the smoke preset runs 2 (unless its ``SMOKE`` says otherwise)::

        sparse_seeds: int = replicates_param("random layers (weights and tokens)")
    """
    return param(
        default,
        f"independent {what}, one replicate seed each; their spread is the claims' 95% t band",
        minimum=2,
        maximum=64,
        smoke=2,
    )


@cache
def _model_fields_of(cls: type) -> tuple[str, ...]:
    """The fields of ``cls`` declared with :func:`model_param` (each named as its ModelConfig field), its own and
    those of its model part (:class:`ModelPart`, ``config.model``), in declaration order."""
    out = []
    for f in dataclasses.fields(cls):
        if "part" in f.metadata:
            part_cls = f.metadata["part"]
            inner = _model_fields_of(part_cls)
            if inner and not part_cls.FLAT:
                raise TypeError(f"{part_cls.__qualname__}: model_param fields belong in a ModelPart (FLAT names)")
            out.extend(inner)
        elif "model_field" in f.metadata:
            if f.metadata["model_field"] != f.name:
                raise TypeError(
                    f"{cls.__qualname__}.{f.name} is declared as model_param({f.metadata['model_field']!r}, ...)"
                )
            out.append(f.name)
    return tuple(out)


@dataclass(frozen=True)
class ModelPart(PartConfig):
    """The fields of a probe that describe the model it builds, nested as ``config.model`` and spelled as the
    :class:`~analysis.zoo.model.ModelConfig` fields they set (``n_layers``, ``--n-layers``: ``FLAT``). A probe
    subclasses it with its :func:`model_param` fields (their defaults and bounds are the probe's)::

        @dataclass(frozen=True)
        class Model(ModelPart):
            PART = "model"
            n_layers: int = model_param("n_layers", 2, maximum=4)
            d_model: int = model_param("d_model", 64)

    :meth:`ProbeConfig.model_config` builds the ModelConfig from them (and from ``seed``, which stays the probe's
    own: it seeds the data and the replicates too)."""

    PART = "model"
    FLAT = True


@dataclass(frozen=True, kw_only=True)
class ProbeConfig(BaseConfig):
    """Base of every probe's ``Config``: presets, the model fields, and (from
    :class:`analysis.core.config.BaseConfig`) generic validation and the dict round trip.

    Subclasses are ``@dataclass(frozen=True)`` and set the class attribute ``SMOKE``: the fields the smoke
    preset overrides (the full preset is the defaults). ``PRESETS`` is derived from it.
    """

    SMOKE: ClassVar[dict[str, Any]] = {}
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {"smoke": {}, "full": {}}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "SMOKE" in cls.__dict__:
            if "PRESETS" in cls.__dict__:
                raise TypeError(f"{cls.__qualname__} sets both SMOKE and PRESETS: set SMOKE (the smoke overrides)")
            cls.PRESETS = {"smoke": cls.SMOKE, "full": {}}

    # which preset this config was built from; smoke runs leave `requires_full` claims unevaluated
    preset_name: str = param("full", "preset the config was built from", choices=PRESET_NAMES)
    # where models, data and measurements live (analysis.core.devices); left out of to_dict() on the CPU, so
    # every CPU result keeps the cache key it always had
    device: str = param("cpu", "cpu | cuda | auto (CUDA when torch sees a GPU)", choices=DEVICES, omit_at_default=True)

    def validate(self) -> None:
        """Every field against its declaration, then the model the model fields describe (an error
        names the probe's field). Override to add checks across fields (call ``super().validate()``
        first); raise ``ValueError`` naming the field."""
        super().validate()
        if self.model_fields() or self.model_settings():
            self.model_config()

    # ------------------------------------------------------------------ the model

    @classmethod
    def model_fields(cls) -> tuple[str, ...]:
        """The fields declared with :func:`model_param`: each sets the ModelConfig field of its name."""
        return _model_fields_of(cls)

    def torch_device(self):
        """The ``torch.device`` of the ``device`` field (``auto`` resolved here, on the machine that
        runs); ``cuda`` without a GPU raises ``ValueError`` naming ``device``."""
        return resolve_device(self.device)

    def model_settings(self) -> dict[str, Any]:
        """The ModelConfig fields the probe's model takes from its other fields (prompt_forgetting: the byte
        vocabulary of corpus data, ``logit_scale`` from ``logit_gain``): override it, so that :meth:`validate`
        checks the very model the run builds. None by default."""
        return {}

    def model_config(self, **overrides: Any) -> ModelConfig:
        """The :class:`~analysis.zoo.model.ModelConfig` of this config's model fields and :meth:`model_settings`,
        with ``overrides`` applied; every other ModelConfig field keeps its default.

        A rejected combination raises ``ValueError`` naming the field (the probe's and the model's name are one);
        :meth:`validate` builds it without overrides, so such configs never exist.
        """
        from analysis.zoo.model import ModelConfig  # late import: torch is needed only with a model

        fields = {name: self.value_of(name) for name in self.model_fields()}
        return ModelConfig(**{**fields, **self.model_settings(), **overrides})

    # ------------------------------------------------------------------ construction

    @classmethod
    def preset(cls, name: str, **overrides: Any):
        """The config of preset ``name`` (``"smoke"`` or ``"full"``), then ``overrides`` applied."""
        check_choice("preset", name, tuple(k for k in PRESET_NAMES if k in cls.presets()))
        values = {**cls.presets()[name], **overrides, "preset_name": name}
        cls._check_names(values)
        return cls(**values)

    @classmethod
    def presets(cls) -> dict[str, dict[str, Any]]:
        """``PRESETS`` in the order smoke, full, with ``"full"`` filled in as ``{}`` when absent; the smoke preset
        holds every field's declared smoke value (``param(..., smoke=...)``, e.g. :func:`replicates_param`'s 2)
        under the config's own ``SMOKE`` entries."""
        out = {name: dict(cls.PRESETS.get(name, {})) for name in PRESET_NAMES if name in cls.PRESETS or name == "full"}
        if "smoke" in out:
            declared = {s.name: s.smoke for s in field_specs_of(cls) if s.smoke is not NO_SMOKE}
            out["smoke"] = {**declared, **out["smoke"]}
        return out

    @classmethod
    def field_specs(cls, include_preset: bool = False) -> tuple[FieldSpec, ...]:
        """Every field's spec; ``preset_name`` only when asked (the command line sets it via --preset).
        The probe's own fields come first, then ``device`` (help, error messages and sweeps list them so)."""
        specs = [s for s in field_specs_of(cls) if include_preset or s.name != "preset_name"]
        return tuple(sorted(specs, key=lambda s: s.name == "device"))

    @classmethod
    def _unknown_fields_message(cls, unknown: list[str]) -> str:
        return (
            f"unknown field {unknown[0]!r} for {cls.__module__}.{cls.__qualname__}; "
            f"allowed: {', '.join(['preset_name'] + [s.name for s in cls.field_specs()])}"
        )

    def digest(self) -> str:
        """Content hash of the values (16 hex digits)."""
        return content_hash(self.to_dict())
