"""Regenerate the committed full-preset results that the fast test tier reads instead of running them.

    python scripts/test_fixtures.py            # every fixture (make test-fixtures)
    python scripts/test_fixtures.py --check    # exit 1 naming each fixture whose key is not today's

A fixture is a probe's full-preset :class:`probes.Result` saved as the result cache saves it (``data.nc``,
``result.json``, ``manifest.json``) under ``tests/data/<probe>_full/``. Its ``meta["cache_key"]`` is the cache key of
the config and probe ``VERSION`` it was computed at; ``tests/test_probe_<probe>.py`` checks that key against today's
(so a ``VERSION`` bump or a changed full preset asks for this script), and the thorough tier runs the full preset
again and compares. The run uses a temporary cache of its own, so nothing trained elsewhere is reused.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# one BLAS thread, as the test suite and make figures run (set before numpy loads): a fixture's numbers are then
# bit for bit those the thorough tier recomputes
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
sys.path.insert(0, str(REPO))

FIXTURES = ("softmax_alternatives",)  # probes whose full-preset result the fast tier reads from tests/data/


def fixture_path(probe: str) -> Path:
    return REPO / "tests" / "data" / f"{probe}_full"


def stale(probe: str) -> str | None:
    """Why the committed fixture of ``probe`` is not today's full-preset result's key, or None."""
    import probes

    path = fixture_path(probe)
    if not (path / "result.json").is_file():
        return f"{path} is missing"
    committed = probes.Result.load(path)
    today = probes.cache_key(probe, "full")
    if committed.meta.get("cache_key") != today:
        return f"{path} has cache key {committed.meta.get('cache_key')}, today's full preset has {today}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check the committed keys against today's")
    parser.add_argument("probes", nargs="*", default=list(FIXTURES), help=f"among {', '.join(FIXTURES)}")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.probes) - set(FIXTURES))
    if unknown:
        parser.error(f"probes must be among {list(FIXTURES)}, got {unknown}")
    if args.check:
        reasons = [r for r in map(stale, args.probes) if r]
        for r in reasons:
            print(r, file=sys.stderr)
        return 1 if reasons else 0
    import torch

    import probes

    torch.set_num_threads(1)  # the numbers the suite compares are those of a one-thread run
    for probe in args.probes:
        with tempfile.TemporaryDirectory(prefix="fixture-cache-") as cache:
            os.environ["WORKBENCH_CACHE"] = cache
            start = time.perf_counter()
            result = probes.cached_run(probe, "full", progress=True)
            result.meta.pop("elapsed_s", None)  # wall time: would change the committed bytes at every rerun
            result.save(fixture_path(probe))
            print(f"{probe}: full preset in {time.perf_counter() - start:.0f} s -> {fixture_path(probe)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
