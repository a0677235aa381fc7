"""Golden check of a refactor: a probe's run, digested, before and after a change of code that must not change it.

    python scripts/golden.py record NAME OUT.json [--preset smoke|full] [--FIELD VALUE ...]   (preset: as `run`, full)
    python scripts/golden.py compare BEFORE.json AFTER.json

``record`` runs the probe directly (``module.run``, not the result cache: the code under test computes every
number) on the config ``Config.preset(preset, **overrides)`` (values parsed as on the command line) and writes
a digest: every data variable and coordinate (dims, dtype, a SHA-256 of its bytes), the scalars, the meta and
the ledger's claims, to the last bit. Wall-clock entries (scalars, meta, attributes and arrays whose names end
``time_s`` or ``elapsed_s``) and the ``cached`` flags of trained models are left out. Run it in a worktree of
the commit before the change and in the changed tree, each with its own ``WORKBENCH_CACHE`` (so no trained
model is shared), then ``compare``:
exit 0 when the digests are identical, 1 with the differing entries listed.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

SKIP_SUFFIXES = ("time_s", "elapsed_s", "_from_cache", "cached")


def _skip(key: str) -> bool:
    return any(str(key).endswith(s) for s in SKIP_SUFFIXES)


def _clean(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items() if not _skip(k)}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    return obj


def digest(result: Any) -> dict[str, Any]:
    """The digest of a probe's Result (module docstring)."""
    import numpy as np

    from analysis.core.io import to_jsonable

    arrays = {}
    for name, var in list(result.data.data_vars.items()) + list(result.data.coords.items()):
        if _skip(name):  # wall-clock arrays (training time per model)
            continue
        values = np.ascontiguousarray(var.values)
        raw = values.astype(str).tobytes() if values.dtype == object else values.tobytes()
        arrays[str(name)] = {
            "dims": list(var.dims),
            "dtype": str(values.dtype),
            "sha256": hashlib.sha256(raw).hexdigest(),
        }
    return {
        "arrays": arrays,
        "attrs": _clean(to_jsonable(dict(result.data.attrs))),
        "scalars": _clean(to_jsonable(result.scalars)),
        "meta": _clean(to_jsonable(result.meta)),
        "claims": [_clean(c.to_dict()) for c in result.ledger.claims],
    }


def record(argv: list[str]) -> int:
    import probes
    from analysis.probing.cli import parse_config

    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    name, out = argv[0], Path(argv[1])
    module = probes.get(name)
    config, _ = parse_config(module, name, argv[2:])  # --preset and --FIELD VALUE, as `run` takes them
    result = module.run(config, progress=False)
    out.write_text(json.dumps(digest(result), indent=1, sort_keys=True, allow_nan=True))
    print(f"{name}: {len(result.data.data_vars)} variables, {len(result.ledger.claims)} claims -> {out}")
    return 0


def _differences(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}/{k}: only in {'before' if k in a else 'after'}" for k in sorted(set(a) ^ set(b))]
        for k in sorted(set(a) & set(b)):
            out += _differences(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out += _differences(x, y, f"{path}[{i}]")
        return out
    return [] if a == b or (a != a and b != b) else [f"{path}: {a!r} != {b!r}"[:300]]


def compare(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    before, after = (json.loads(Path(p).read_text()) for p in argv)
    diffs = _differences(before, after)
    for d in diffs:
        print(d)
    print("identical" if not diffs else f"{len(diffs)} differences")
    return 0 if not diffs else 1


def main(argv: list[str]) -> int:
    commands = {"record": record, "compare": compare}
    if not argv or argv[0] not in commands:
        print(__doc__, file=sys.stderr)
        return 2
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
