"""The probe contract and the probes known to this process.

:func:`validate_probe` checks a probe module against the contract (``NAME``, ``DESCRIPTION``, ``VERSION``,
``REQUIRES``, ``Config``, ``run``, ``check_claims``: see :mod:`analysis.probing.base`); :func:`get`, :func:`register`
and :func:`unregister` find and add probes (through :mod:`analysis.probing.registry`); :func:`check_model_compat`
checks a model passed to a probe against its ``REQUIRES`` (:class:`ModelIncompatibleError` otherwise). ``_resolve``
and ``_resolve_config`` turn what a caller passes (a name or a module; a ``Config``, preset name, dict or None) into a
checked probe module and its config.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from analysis.claims.ledger import PRESETS as PRESET_NAMES
from analysis.probing import registry
from analysis.probing.config import ProbeConfig

# Option names the command line keeps for itself; no Config field may use them.
RESERVED_FIELDS = frozenset(
    {"preset", "json", "no_progress", "strict", "against_alternatives", "cache", "save", "help", "replicate_seeds"}
)

_MISSING = dataclasses.MISSING


class ModelIncompatibleError(ValueError):
    """A model passed to a probe lacks what the probe needs (causal attention, a hook point, a
    vocabulary...). The command line reports it as a usage error (exit 2, one line); any other
    exception from a probe is a bug and keeps its traceback."""


def validate_probe(module: Any, name: str) -> None:
    """Raise ``ValueError`` unless ``module`` satisfies the probe contract (see :mod:`analysis.probing.base`)."""

    def fail(what: str) -> None:
        raise ValueError(f"probe module {name!r}: {what}")

    if getattr(module, "NAME", None) != name:
        fail(f"NAME must be {name!r}, got {getattr(module, 'NAME', None)!r}")
    if not description(module):
        fail("needs DESCRIPTION (one line) or a module docstring")
    version = getattr(module, "VERSION", None)
    if not isinstance(version, str) or not version:
        fail(f"VERSION must be a non-empty string, got {version!r}")
    requires = getattr(module, "REQUIRES", _MISSING)
    if requires is not None and not isinstance(requires, dict):
        fail(f"REQUIRES must be a dict (or None for probes that take no model), got {requires!r}")
    if not callable(getattr(module, "run", None)):
        fail("needs a function run(config, model=None, progress=True) -> Result")
    if getattr(module, "check_claims", None) is not None and not callable(module.check_claims):
        fail("check_claims must be a function check_claims(result) -> Ledger")
    config_cls = getattr(module, "Config", None)
    if not (isinstance(config_cls, type) and issubclass(config_cls, ProbeConfig)):
        fail("Config must be a dataclass subclassing analysis.probing.base.ProbeConfig")
    if not dataclasses.is_dataclass(config_cls) or not config_cls.__dataclass_params__.frozen:
        fail("Config must be decorated with @dataclass(frozen=True)")
    try:
        names = config_cls.field_names()
    except TypeError as e:
        fail(str(e))
    clash = sorted(RESERVED_FIELDS & set(names))
    if clash:
        fail(f"Config field(s) {clash} clash with command-line options {sorted(RESERVED_FIELDS)}")
    bad_presets = sorted(set(config_cls.PRESETS) - set(PRESET_NAMES))
    if bad_presets or "smoke" not in config_cls.PRESETS:
        fail(f"PRESETS must have 'smoke' (and optionally 'full') only, got {sorted(config_cls.PRESETS)}")
    try:
        default = config_cls()
        full = config_cls.preset("full")
        config_cls.preset("smoke")
    except (TypeError, ValueError) as e:
        fail(f"Config defaults or presets are invalid: {e}")
    if default != full:
        fail("PRESETS['full'] must agree with the field defaults (the defaults are the full experiment)")


def description(module: Any) -> str:
    """The probe's one-line description: ``DESCRIPTION`` or the docstring's first line."""
    text = getattr(module, "DESCRIPTION", None) or (getattr(module, "__doc__", None) or "")
    return text.strip().splitlines()[0].strip() if text.strip() else ""


def get(name: str) -> Any:
    """The probe module called ``name`` (imported on first use and checked against the contract).

    An unknown name raises ``ValueError`` listing the available probes (:mod:`analysis.probing.registry` finds them).
    """
    module = registry.registered(name)
    if module is not None:  # checked when it was registered
        return module
    module = registry.find(name)
    validate_probe(module, name)
    return module


def register(name: str, module: Any) -> Any:
    """Make ``module`` available as probe ``name`` (replacing any earlier registration)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"probe name must be a Python identifier, got {name!r}")
    validate_probe(module, name)
    registry.add(name, module)
    return module


def unregister(name: str) -> None:
    """Forget a probe added with :func:`register` (no error if it was not registered)."""
    registry.remove(name)


# Properties of analysis.zoo.protocol.ProbeModel a requirement may name directly ("input" means input_kind,
# whose values "tokens" | "vectors" match ModelConfig.input). Other keys are read from the model's config.
_PROTOCOL_KEYS = {
    "n_layers": "n_layers",
    "causal": "causal",
    "input": "input_kind",
    "input_kind": "input_kind",
}


def _model_value(model: Any, key: str) -> tuple[bool, Any]:
    """(found, value) of requirement ``key``: a ProbeModel property, else a field of ``model.cfg``/``.config``."""
    if key in _PROTOCOL_KEYS and hasattr(model, _PROTOCOL_KEYS[key]):
        return True, getattr(model, _PROTOCOL_KEYS[key])
    for attr in ("cfg", "config"):
        cfg = getattr(model, attr, None)
        if cfg is not None and hasattr(cfg, key):
            return True, getattr(cfg, key)
    return False, None


def check_model_compat(probe_name: str, model: Any, requires: dict[str, Any] | None) -> None:
    """Raise ``ValueError`` unless ``model`` has what the probe ``requires``.

    ``requires`` maps a property to the value it must have, or to a tuple/list/set of allowed
    values: ``{"causal": True, "input": "tokens", "norm": ("pre", "post")}``. ``n_layers``,
    ``causal`` and ``input`` (= ``input_kind``) are read from the model itself, as
    :class:`analysis.zoo.protocol.ProbeModel` exposes them, so an adapter around another library's model
    qualifies; any other key is a field of the model's config (``model.cfg`` or ``model.config``).
    ``requires=None`` means the probe takes no model at all.
    """
    if requires is None:
        raise ModelIncompatibleError(
            f"probe {probe_name} does not take a model (it builds what it needs from its config)"
        )
    problems = []
    for key, want in requires.items():
        allowed = tuple(want) if isinstance(want, tuple | list | set | frozenset) else (want,)
        want_text = f"{key}={allowed[0]!r}" if len(allowed) == 1 else f"{key} in {list(allowed)!r}"
        found, have = _model_value(model, key)
        if not found:
            problems.append(f"{want_text} ({type(model).__name__} exposes no {key!r}, nor does its config)")
        elif have not in allowed:
            problems.append(f"{want_text} (got {have!r})")
    if problems:
        raise ModelIncompatibleError(f"probe {probe_name} needs a model with " + "; ".join(problems))


def _resolve(module_or_name: Any) -> tuple[Any, str]:
    if isinstance(module_or_name, str):
        return get(module_or_name), module_or_name
    name = getattr(module_or_name, "NAME", None)
    if not isinstance(name, str):
        raise ValueError(f"expected a probe name or module with NAME, got {module_or_name!r}")
    validate_probe(module_or_name, name)
    return module_or_name, name


def _resolve_config(module: Any, name: str, config: Any) -> ProbeConfig:
    if config is None:
        return module.Config()
    if isinstance(config, str):
        return module.Config.preset(config)
    if isinstance(config, Mapping):
        return module.Config.from_dict(config)
    if not isinstance(config, module.Config):
        raise ValueError(f"config for probe {name} must be a {name}.Config, got {type(config).__name__}")
    return config
