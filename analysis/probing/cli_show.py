"""The commands ``python -m probes list`` (every probe with its one-line description; exit 1 when a probe module
cannot be imported) and ``python -m probes show NAME`` (its config fields, presets, model requirements and parts)."""

from __future__ import annotations

from typing import Any

from analysis.probing import registry
from analysis.probing.cli_common import _fmt
from analysis.probing.config import ProbeConfig
from analysis.probing.contract import description, get
from analysis.probing.parts import describe as describe_parts


def _list() -> int:
    rows, status = [], 0
    for name in registry.available():
        try:
            rows.append((name, description(get(name))))
        except Exception as e:  # one broken probe must not hide the others
            rows.append((name, f"(cannot load: {type(e).__name__}: {e})"))
            status = 1
    if not rows:
        print("no probes yet")
    width = max((len(n) for n, _ in rows), default=0)
    for name, text in rows:
        print(f"{name:<{width}}  {text}")
    return status


def _show(module: Any, name: str) -> int:
    config_cls: type[ProbeConfig] = module.Config
    print(f"{name}: {description(module)}")
    print(f"version {module.VERSION}; model requirements: {_requires_text(module.REQUIRES)}")
    print("fields (set with --field-name VALUE):")
    for spec in config_cls.field_specs():
        print(f"  {spec.option} {spec.type_name.upper()}  (default {_fmt(spec.default)})")
        print(f"      {spec.help or '(no help)'}; allowed: {spec.allowed()}")
    print("presets (--preset NAME; overrides of the defaults):")
    for preset, overrides in config_cls.presets().items():
        text = ", ".join(f"{k}={_fmt(v)}" for k, v in overrides.items()) or "(the defaults)"
        print(f"  {preset}: {text}")
    parts = getattr(module, "PARTS", None)
    if parts:  # a probe package of parts (analysis.probing.parts): its sub-experiments, in the ledger's order
        print("parts (in the ledger's order):")
        for part, text in describe_parts(parts).items():
            print(f"  {part}: {text}")
    return 0


def _requires_text(requires: dict | None) -> str:
    if requires is None:
        return "takes no model"
    return ", ".join(f"{k}={v!r}" for k, v in requires.items()) or "any model"
