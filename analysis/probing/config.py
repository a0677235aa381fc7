"""Probe configs: :class:`ProbeConfig`, the base of every probe's ``Config`` (presets, the model fields, the device),
and the helpers that declare its fields: :func:`param` (from :mod:`analysis.core.config`), :func:`model_param` for a
field of the model the probe builds (``MODEL_FIELDS``), :func:`replicates_param` for a part's replicate count, and
:func:`fields_renamed`, which words a rejected model in the probe's field names.

The rules a probe's ``Config`` follows (every field has a default, the defaults are the full experiment, ``SMOKE``
holds the smoke preset's overrides; model fields) are part of the probe contract: see :mod:`analysis.probing.base`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar

from analysis.claims.ledger import PRESETS as PRESET_NAMES
from analysis.core.config import BaseConfig, FieldSpec, field_specs_of, param
from analysis.core.devices import DEVICES, resolve_device
from analysis.core.io import content_hash
from analysis.core.validation import check_choice

if TYPE_CHECKING:
    from analysis.zoo.model import ModelConfig

# Largest seed a config accepts: probes derive further seeds from it (offsets, products such as
# seed * 1_000_003) and torch.Generator.manual_seed takes nothing past 2**64 - 1.
MAX_SEED = 2**31 - 1


# The fields several probes use to describe the TinyTransformer they build, defined once here:
# probe field name -> (the ModelConfig field it sets, standard help, standard bounds). A probe
# declares one with ``model_param(name, default)`` (its own default, and its own help, choices or
# bounds where they differ); ``ProbeConfig.model_config`` maps them all to a ModelConfig.
# Only fields meaning exactly the ModelConfig field belong here: a sweep (``depths``), a switch
# standing for several fields (signal_propagation's ``mlp``, ``skip``) or a second model's fields
# (icl_gd's ``garg_*``) stay plain ``param`` fields mapped by the probe itself.
MODEL_FIELDS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "layers": ("n_layers", "transformer blocks L", {"minimum": 1}),
    "d_model": ("d_model", "residual width d", {"minimum": 2}),
    "heads": ("n_heads", "attention heads per layer (must divide d_model)", {"minimum": 1}),
    "mlp": ("d_mlp", "MLP hidden width (0 = attention only)", {"minimum": 0}),
    "attention": ("attention", "attention kernel", {}),
    "norm": ("norm", "norm placement", {}),
    "norm_type": ("norm_type", "norm kind", {}),
    "pos": ("pos", "positional encoding", {}),
    "dtype": ("dtype", "model dtype", {}),
    "vocab_size": ("vocab_size", "token vocabulary", {"minimum": 2}),
    "logit_scale": ("logit_scale", "multiplier of q.k (none: 1/sqrt(d_head))", {}),
    "ssmax_s": ("ssmax_s", "SSMax s (logits times s ln n)", {"minimum": 0.0}),
    "sigmoid_bias": ("sigmoid_bias", "sigmoid attention bias b", {}),
    "init_std": ("init_std", "std of the initial weights (gpt2 init)", {"minimum": 0.0}),
    "seed": ("seed", "seed of the model weights", {"minimum": 0, "maximum": MAX_SEED}),
}


def model_param(name: str, default: Any, help: str | None = None, **bounds: Any) -> Any:
    """A probe field that is also a field of the model the probe builds (see ``MODEL_FIELDS``).

    ``name`` must be the field's own name; it fixes the ModelConfig field the value maps to, and the
    standard help and bounds, which ``help`` and ``bounds`` (``choices``, ``minimum``, ``maximum``)
    replace for this probe. The default is the probe's own (its full experiment)::

        heads: int = model_param("heads", 4)
        attention: str = model_param("attention", "softmax", choices=("softmax", "ssmax"))
    """
    if name not in MODEL_FIELDS:
        raise TypeError(f"model_param: unknown model field {name!r}; known: {', '.join(MODEL_FIELDS)}")
    target, standard_help, standard_bounds = MODEL_FIELDS[name]
    spec = param(default, help or standard_help, **{**standard_bounds, **bounds})
    return field(default=default, metadata={**spec.metadata, "model_field": (name, target)})


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
def _model_fields_of(cls: type) -> dict[str, str]:
    """ModelConfig field -> probe field, for the fields of ``cls`` declared with :func:`model_param`."""
    out = {}
    for f in dataclasses.fields(cls):
        if "model_field" in f.metadata:
            name, target = f.metadata["model_field"]
            if name != f.name:
                raise TypeError(f"{cls.__qualname__}.{f.name} is declared as model_param({name!r}, ...)")
            out[target] = f.name
    return out


@contextmanager
def fields_renamed(names: Mapping[str, str]) -> Iterator[None]:
    """Re-raise a ``ValueError`` from the block with every field name that ``names`` maps replaced.

    A probe builds ModelConfigs from its own fields; ``names`` maps ModelConfig names to the probe's
    (``{"n_heads": "heads"}``), so a rejected model reads as an error about the probe's option
    (``d_model must be divisible by heads ...``). Names are replaced as whole words.
    """
    try:
        yield
    except ValueError as err:
        names = {k: v for k, v in names.items() if k != v}
        if not names:
            raise
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
        raise ValueError(pattern.sub(lambda m: names[m.group(1)], str(err))) from err


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
        if self.model_fields():
            self.model_config()

    # ------------------------------------------------------------------ the model

    @classmethod
    def model_fields(cls) -> dict[str, str]:
        """ModelConfig field -> probe field, for the fields declared with :func:`model_param`."""
        return _model_fields_of(cls)

    def torch_device(self):
        """The ``torch.device`` of the ``device`` field (``auto`` resolved here, on the machine that
        runs); ``cuda`` without a GPU raises ``ValueError`` naming ``device``."""
        return resolve_device(self.device)

    def model_config(self, **overrides: Any) -> ModelConfig:
        """The :class:`~analysis.zoo.model.ModelConfig` of this config's model fields, with ``overrides``
        (ModelConfig names) applied; every other ModelConfig field keeps its default.

        A rejected combination raises ``ValueError`` naming the probe's fields (``heads``, not
        ``n_heads``); :meth:`validate` builds it without overrides, so such configs never exist.
        """
        from analysis.zoo.model import ModelConfig  # late import: torch is needed only with a model

        names = self.model_fields()
        values = {target: getattr(self, name) for target, name in names.items()}
        with fields_renamed({k: v for k, v in names.items() if k not in overrides}):
            return ModelConfig(**{**values, **overrides})

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
            declared = {f.name: f.metadata["smoke"] for f in dataclasses.fields(cls) if "smoke" in f.metadata}
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
