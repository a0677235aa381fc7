"""First contact: what a notebook shows before it computes anything.

The first code cell after the parameters calls ``first_look(NOTEBOOK, preset)``. It shows, within a second,
the notebook's **committed results**: its figures in ``figures/`` (full preset, regenerated and versioned by
``make figures``, with their provenance sidecars) and the tally of its claims from
``figures/<notebook>.claims.json``. Then it says what "Run all" will cost: whether the probe results behind
those figures are already in the cache, and if not how long the full preset took from a cold cache on the
recorded 2-core machine (``bench/results/*.json``, written by ``make bench``) and how to get the smoke preset
instead. Nothing is computed and nothing is written.

Each estimate comes from the newest benchmark run that measured that notebook at that preset (newest by the
run's ``date`` where it records one, else by the date of its ``commit`` in this checkout's git history; file
names and the order of runs within a file do not decide), and the advice says which: "about 15 s on the
recorded 2-core machine (benchmark of 2026-11-30 at commit 54a63b7, 370 commits ago)". Where no benchmark
has measured the notebook at that preset the advice says so instead of guessing.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from analysis.core.paths import REPO, cache_dir
from analysis.training.cache import RESULT_KEY_LENGTH

COMMITTED_FIGURES = REPO / "figures"
BENCH_RESULTS = REPO / "bench" / "results"


@dataclass(frozen=True)
class Timing:
    """One recorded cold-cache wall time of a notebook at a preset, and where it comes from."""

    seconds: float
    preset: str
    commit: str  # the commit the benchmark ran at ("?" when the record names none)
    date: str | None = None  # ISO date (or date-time) of the run or of its commit; None when unknown
    cores: int | None = None  # cores the benchmark machine had
    commits_ago: int | None = None  # commits of this checkout since ``commit``; None when unknown

    def source(self) -> str:
        """Where the number comes from and how old it is, e.g. ``on the recorded 2-core machine (benchmark of
        2026-11-30 at commit 54a63b7, 370 commits ago)``."""
        machine = f"the recorded {self.cores}-core machine" if self.cores else "the recorded machine"
        when = f"of {self.date[:10]} " if self.date else ""
        ago = f", {self.commits_ago} commit{'s' * (self.commits_ago != 1)} ago" if self.commits_ago is not None else ""
        return f"on {machine} (benchmark {when}at commit {self.commit}{ago})"


@dataclass
class FirstLook:
    """What :func:`first_look` found for one notebook."""

    notebook: str
    figures: list[dict] = field(default_factory=list)  # the committed sidecars, by figure name
    claims: dict[str, int] = field(default_factory=dict)  # status -> count in the committed ledger
    inputs: set[str] = field(default_factory=set)  # result-cache keys the committed figures were computed from
    cached: set[str] = field(default_factory=set)  # those present in this machine's cache
    timings: dict[str, Timing] = field(default_factory=dict)  # preset -> newest recorded cold-cache time

    @property
    def seconds(self) -> dict[str, float]:
        """preset -> recorded cold-cache wall time (the numbers of ``timings``)."""
        return {preset: t.seconds for preset, t in self.timings.items()}

    def all_cached(self) -> bool:
        return bool(self.inputs) and self.inputs <= self.cached

    def estimate(self, preset: str) -> str | None:
        """``about 15 s on the recorded 2-core machine (benchmark of ... at commit ..., N commits ago)``, or
        ``None`` when no benchmark has measured this notebook at ``preset``."""
        t = self.timings.get(preset)
        return f"about {_duration(t.seconds)} {t.source()}" if t else None

    def unmeasured(self, preset: str) -> str:
        return f"no benchmark has measured {self.notebook} at preset {preset} (make bench records it)"

    def advice(self, preset: str) -> str:
        """One paragraph: what Run all costs with ``preset`` and how to get the other one."""
        smoke, full = self.estimate("smoke"), self.estimate("full")
        if preset != "smoke" and smoke and full and self.timings["smoke"].source() == self.timings["full"].source():
            smoke = f"about {_duration(self.timings['smoke'].seconds)} in the same benchmark"
        quick = f" ({smoke})" if smoke else f"; {self.unmeasured('smoke')}"
        if preset == "smoke":
            cost = f"Run all computes for {smoke}" if smoke else f"{self.unmeasured('smoke')}, so no estimate"
            return f'Preset smoke: {cost}. Set preset = "full" for the figures\' version.'
        if not self.inputs:  # nothing of this notebook goes through the result cache
            cost = f"Run all computes for {full}" if full else f"{self.unmeasured('full')}, so no estimate"
            other = f" Preset smoke: {smoke}." if smoke else ""
            return f"Preset full: {cost}.{other}"
        if self.all_cached():
            return "Preset full, and its probe results are in your cache: Run all takes seconds."
        cost = full if full else f"an unknown time: {self.unmeasured('full')}"
        return (
            f"Preset full: its probe results are not in your cache yet, so Run all computes for {cost}; "
            f'progress bars below. For a quick run set preset = "smoke" in the parameters cell{quick}. '
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


def _notebook_times(results: dict) -> Iterable[tuple[str, dict]]:
    """``(preset, record)`` of every figure-pipeline record in a run's results: ``figures`` holds one per
    preset (``{"smoke": {...}, "full": {...}}``), ``figures_smoke`` is one (``{"preset": "smoke", ...}``)."""
    for value in results.values():
        if not isinstance(value, dict):
            continue
        if "per_notebook_s" in value:
            yield str(value.get("preset", "?")), value
        else:
            for preset, rec in value.items():
                if isinstance(rec, dict) and "per_notebook_s" in rec:
                    yield str(rec.get("preset", preset)), rec


def _git(*args: str) -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout if out.returncode == 0 else ""


def commit_dates(commits: Iterable[str]) -> dict[str, str]:
    """The committer date (ISO 8601) of each of ``commits`` (short hashes) known to this checkout's git history;
    commits it does not know (or no git at all) are left out. One ``git log`` call."""
    commits = sorted({c for c in commits if c and c.isalnum()})
    if not commits:
        return {}
    found = {}
    for line in _git("log", "--no-walk=unsorted", "--ignore-missing", "--format=%H %cI", *commits).splitlines():
        full, _, date = line.partition(" ")
        for c in commits:
            if full.startswith(c):
                found[c] = date
    return found


def _timestamp(date: str | None) -> float:
    """Seconds since the epoch of an ISO date or date-time (naive ones read as UTC); -inf when unknown or unread."""
    try:
        when = datetime.fromisoformat(str(date))
    except ValueError:
        return float("-inf")
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def commits_since(commit: str) -> int | None:
    """How many commits of this checkout's HEAD came after ``commit`` (``None`` when git does not know it)."""
    out = _git("rev-list", "--count", f"{commit}..HEAD").strip() if commit.isalnum() else ""
    return int(out) if out.isdigit() else None


def recorded_timings(notebook: str, folder: Path = BENCH_RESULTS) -> dict[str, Timing]:
    """Per preset, ``notebook``'s cold-cache wall time from the newest benchmark run in ``folder/*.json`` that
    measured it at that preset (``bench/results``, written by ``make bench``).

    Newest by the run's ``date`` where it records one, else by its commit's date in git (:func:`commit_dates`);
    runs of equal date keep their order (files by name, runs as listed), and runs of no known date count as the
    oldest. Presets no run measured are absent."""
    runs = []
    for path in sorted(folder.glob("*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        listed = record.get("runs", []) if isinstance(record, dict) else []
        runs.extend(run for run in listed if isinstance(run, dict))
    dates = commit_dates(str(run.get("commit", "")) for run in runs if not run.get("date"))
    newest: dict[str, tuple[float, int, Timing]] = {}
    for order, run in enumerate(runs):
        commit = str(run.get("commit") or "?")
        date = str(run["date"]) if run.get("date") else dates.get(commit)
        machine = run.get("machine") if isinstance(run.get("machine"), dict) else {}
        cores = machine.get("cores_visible") or machine.get("torch_threads")
        for preset, rec in _notebook_times(run.get("results") or {}):
            seconds = (rec.get("per_notebook_s") or {}).get(notebook)
            if not isinstance(seconds, (int, float)) or seconds <= 0:
                continue
            key = (_timestamp(date), order)
            if preset not in newest or key >= newest[preset][:2]:
                timing = Timing(float(seconds), preset, commit, date, cores if isinstance(cores, int) else None)
                newest[preset] = (*key, timing)
    out = {}
    for preset, (*_, t) in newest.items():
        ago = commits_since(t.commit) if t.commit != "?" else None
        out[preset] = Timing(t.seconds, t.preset, t.commit, t.date, t.cores, ago)
    return out


def recorded_seconds(notebook: str, folder: Path = BENCH_RESULTS) -> dict[str, float]:
    """The newest recorded cold-cache wall time of ``notebook`` per preset (:func:`recorded_timings`)."""
    return {preset: t.seconds for preset, t in recorded_timings(notebook, folder).items()}


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
        timings=recorded_timings(notebook, BENCH_RESULTS),
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
