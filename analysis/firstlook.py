"""First contact: what a notebook shows before it computes anything.

The first code cell after the parameters calls ``first_look(NOTEBOOK, preset)``. It shows, within a second,
the notebook's **committed results**: its figures in ``figures/`` (full preset, regenerated and versioned by
``make figures``, with their provenance sidecars) and the tally of its claims from
``figures/<notebook>.claims.json``. Then it says what "Run all" will cost: whether the probe results behind
those figures are already in the cache, and if not how long the full preset took from a cold cache on the
recorded 2-core machine (``bench/results/*.json``, written by ``make bench``) and how to get the smoke preset
instead. Nothing is computed and nothing is written.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from analysis.cache import RESULT_KEY_LENGTH
from analysis.paths import REPO, cache_dir

COMMITTED_FIGURES = REPO / "figures"
BENCH_RESULTS = REPO / "bench" / "results"


@dataclass
class FirstLook:
    """What :func:`first_look` found for one notebook."""

    notebook: str
    figures: list[dict] = field(default_factory=list)  # the committed sidecars, by figure name
    claims: dict[str, int] = field(default_factory=dict)  # status -> count in the committed ledger
    inputs: set[str] = field(default_factory=set)  # result-cache keys the committed figures were computed from
    cached: set[str] = field(default_factory=set)  # those present in this machine's cache
    seconds: dict[str, float] = field(default_factory=dict)  # preset -> recorded cold-cache wall time

    def all_cached(self) -> bool:
        return bool(self.inputs) and self.inputs <= self.cached

    def advice(self, preset: str) -> str:
        """One paragraph: what Run all costs with ``preset`` and how to get the other one."""
        smoke = self.seconds.get("smoke")
        quick = f" (about {_duration(smoke)})" if smoke else ""
        if preset == "smoke":
            return f'Preset smoke: Run all takes seconds{quick}. Set preset = "full" for the figures\' version.'
        if not self.inputs:  # nothing of this notebook goes through the result cache
            cost = f"about {_duration(self.seconds['full'])}" if "full" in self.seconds else "a while"
            other = f" Preset smoke{quick}." if smoke else ""
            return f"Preset full: Run all computes for {cost} on 2 CPU cores.{other}"
        if self.all_cached():
            return "Preset full, and its probe results are in your cache: Run all takes seconds."
        full = self.seconds.get("full")
        cost = (
            f"about {_duration(full)} on 2 CPU cores" if full else "minutes (no recorded time: make bench records it)"
        )
        return (
            f"Preset full: its probe results are not in your cache yet, so Run all computes for {cost} "
            f'(progress bars below). For a quick run set preset = "smoke" in the parameters cell{quick}. '
            "The committed full-preset results are shown above."
        )


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def committed_figures(notebook: str, folder: Path = COMMITTED_FIGURES) -> list[dict]:
    """Sidecars (``kind == "figure"``) of ``notebook``'s committed figures, sorted by figure name."""
    out = []
    for path in sorted(folder.glob("*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and record.get("kind") == "figure" and record.get("notebook") == notebook:
            out.append(record)
    return out


def committed_claims(notebook: str, folder: Path = COMMITTED_FIGURES) -> dict[str, int]:
    """Number of claims per status in ``<folder>/<notebook>.claims.json`` (empty when there is none)."""
    try:
        data = json.loads((folder / f"{notebook}.claims.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    claims = data.get("claims", []) if isinstance(data, dict) else data
    return dict(Counter(c.get("status", "?") for c in claims if isinstance(c, dict)))


def recorded_seconds(notebook: str, folder: Path = BENCH_RESULTS) -> dict[str, float]:
    """The latest recorded cold-cache wall time of ``notebook`` per preset from ``bench/results/*.json``."""
    found: dict[str, float] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            runs = json.loads(path.read_text(encoding="utf-8")).get("runs", [])
        except (OSError, ValueError, AttributeError):
            continue
        for run in runs:
            figures = (run.get("results") or {}).get("figures") or {}
            for preset, rec in figures.items():
                seconds = (rec or {}).get("per_notebook_s", {}).get(notebook)
                if seconds:
                    found[preset] = float(seconds)  # later runs overwrite earlier ones
    return found


def gather(notebook: str) -> FirstLook:
    figures = committed_figures(notebook)
    inputs = {v for f in figures for v in (f.get("inputs") or {}).values() if isinstance(v, str)}
    results = cache_dir() / "results"
    known = {p.name for p in results.glob("*/*")} if results.is_dir() else set()
    # inputs that are result-cache keys have the length of probes.cache_key; others hash configs
    inputs = {k for k in inputs if len(k) == RESULT_KEY_LENGTH}
    return FirstLook(
        notebook=notebook,
        figures=figures,
        claims=committed_claims(notebook),
        inputs=inputs,
        cached=inputs & known,
        seconds=recorded_seconds(notebook),
    )


def first_look(notebook: str, preset: str, max_figures: int = 1) -> None:
    """Display ``notebook``'s committed figure(s) and claims, then what Run all with ``preset`` will cost."""
    from IPython.display import HTML, Image, display

    look = gather(notebook)
    if look.figures:
        commit = look.figures[0].get("commit", "?")
        tally = ", ".join(f"{n} {s}" for s, n in sorted(look.claims.items())) or "no claims"
        names = ", ".join(f["figure"] for f in look.figures)
        display(
            HTML(
                f"<p><b>Committed results</b> of {notebook} (full preset, commit {commit}): claims {tally}; "
                f"figures {names} (all in <code>figures/README.md</code>).</p>"
            )
        )
        for record in look.figures[:max_figures]:
            png = COMMITTED_FIGURES / record["files"]["png"]["path"]
            if png.is_file():
                display(Image(filename=str(png)))
                display(HTML(f"<p><i>{record['figure']}</i>: {record.get('caption', '')}</p>"))
    print(look.advice(preset))
