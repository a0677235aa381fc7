#!/usr/bin/env python
"""Regenerate every figure: execute ``notebooks/NN_*.ipynb`` with papermill, then gather the claims.

    python scripts/make_figures.py [--preset smoke|full] [-p NAME VALUE ...] [--out DIR] [--force] [--jobs N]

Notebooks run ``--jobs`` at a time (default: one per usable CPU core, at most one per notebook; longest first
by the wall time of their last run), each kernel with ``cores // jobs`` torch threads (``OMP_NUM_THREADS``,
unless the environment sets it), so the same command on the same machine always computes with the same
thread count, whatever the load. For each notebook:

1. **Resume.** The notebook's inputs -- its file hash, the injected parameters (``preset`` plus every
   ``-p``), the hash of the ``analysis/`` and ``probes/`` source trees, the package versions and the
   output folder -- are hashed into a key. When ``build/stamps/<notebook>.json`` holds the same key
   and every file it lists is still in the output folder with the same hash, the notebook is
   skipped ("up to date"). ``--force`` re-runs it anyway.
2. **Run.** papermill executes the notebook in its own process (``python -m papermill``; papermill
   changes the working directory, so never threads) with the ``python3`` kernel of this interpreter's
   environment (``JUPYTER_PATH`` puts ``<venv>/share/jupyter`` first, and jupyter_client starts a
   kernelspec whose command is ``python`` with ``sys.executable``). The executed copy goes to
   ``build/notebooks/``, papermill's log to ``build/logs/``. The notebook writes its figures and
   ``<notebook>.claims.json`` into a staging folder (``WORKBENCH_FIGURES`` points there); only a
   notebook that ran to the end has its files moved into the output folder, so a failed or
   interrupted notebook leaves the previous figures untouched. Files of an earlier run that the
   notebook no longer writes are removed. ``--timeout`` bounds each notebook's wall time. Every file
   reaches the output folder by an atomic rename, so even a run killed with SIGKILL leaves no file
   half-written under its own name (and, on Linux, takes its papermill process and kernel with it); the
   hidden temporary files (``.*.tmp``) such a run may leave in the output folder are deleted when the next
   run starts (one run per output folder at a time).
3. **Failures.** A failing notebook is reported as one line naming the cell (its index in the
   committed notebook and the first line of its source) and the error; the other notebooks still
   run, and the command exits 1 at the end.

Afterwards every ``<notebook>.claims.json`` in the output folder is gathered into ``claims.json``
and the gallery ``README.md`` (each figure with its notebook, parameters and claims; the tally per
role and status, unique claims counted once). A failing ``identity`` (exact algebra or a software
equality) is a bug: it makes the command exit 1. A failing prediction, bound or paper claim is a
finding: it is listed at the top of the gallery with its numbers, the figures are still built and the
command exits 0 (``--strict`` makes any failing claim exit 1). Wall times (per notebook and for the whole run)
go to ``build/manifest.json``, outside the figures folder, so that the figures folder itself is
byte-for-byte reproducible.

Other modes: ``--prepare-only DIR`` writes the notebooks with their parameters injected but does not
execute them (nbval runs those copies); ``--collect-only`` only gathers claims and rewrites the gallery.

Exit status: 0 all notebooks ran and no identity failed; 1 a notebook failed, an identity failed, or
(with ``--strict``) any claim failed; 2 bad command line (including an ``--out`` or ``--build`` folder that
cannot be written, refused before any notebook runs).
"""

from __future__ import annotations

import argparse
import base64
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.claims import scorecard
from analysis.claims.ledger import (
    STATUSES,
    TESTED,
    VERDICTS,
    Claim,
    Ledger,
    count_by_role,
    count_by_verdict,
    finding_counts,
    headline,
    unique_claims,
)
from analysis.core.io import (
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    content_hash,
    sha256_file,
    unwritable,
)
from analysis.core.paths import BUILD, NOTEBOOKS, REPO, gallery_dir
from analysis.core.provenance import SOURCE_TREES, check_name, package_versions, tree_hash
from analysis.notebook.firstlook import recorded_seconds

NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"
PRESETS = ("smoke", "full")
# a notebook of the user's own claims (analysis.claims.own) saves them into a folder of its own, never into the gallery
OWN_CLAIMS = (
    "_Its claims are yours: it saves its ledger, figures and scorecard into its own folder (parameter `folder`, "
    "default `build/your_claims/`; `python -m probes claims --folder DIR`), never into this gallery._"
)
SKIP_TAGS = {"injected-parameters", "papermill-error-cell-tag"}  # cells papermill adds to the executed copy
STAMP_VERSION = 1  # bump when the meaning of a stamp changes
CLAIMS_DIR = "claims"  # figures/claims/<notebook>.md: every claim of a notebook, figure by figure


@dataclass
class NotebookRun:
    """What happened to one notebook in this run (one entry of the manifest)."""

    name: str  # e.g. "00_overview"
    path: str  # the notebook file
    status: str = "pending"  # "ran" | "up to date" | "failed" | "pending"
    wall_s: float | None = None  # seconds spent executing (for "up to date": the run that made the stamp)
    key: str = ""  # resume key (hash of the notebook's inputs)
    error: str | None = None  # one-line failure message
    outputs: list[str] = field(default_factory=list)  # files it wrote into the output folder
    executed: str | None = None  # executed copy under build/notebooks/
    log: str | None = None  # papermill's log


# ----------------------------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------------------------
def parse_value(text: str) -> Any:
    """A ``-p`` value: JSON when it parses (``1``, ``0.5``, ``true``, ``[1, 2]``), ``True``/``False``/
    ``None`` as in Python, otherwise the string itself."""
    python_words = {"True": True, "False": False, "None": None}
    if text in python_words:
        return python_words[text]
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="make_figures.py",
        description="Execute the notebooks with papermill and regenerate figures, claims.json and the gallery.",
    )
    p.add_argument("--preset", choices=PRESETS, default="full", help="injected into every notebook (default full)")
    p.add_argument(
        "-p",
        "--param",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="extra parameter injected into every notebook (value parsed as JSON, else a string)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="figures folder (default: $WORKBENCH_FIGURES, else <repo>/figures for the full preset and "
        "build/figures-<preset> for any other, so that smoke figures never replace the committed gallery)",
    )
    p.add_argument("--notebooks", type=Path, default=NOTEBOOKS, help="folder of NN_*.ipynb notebooks")
    p.add_argument("--build", type=Path, default=BUILD, help="folder for executed notebooks, logs, stamps")
    p.add_argument("--only", nargs="+", default=None, metavar="NAME", help="run only these notebooks (by name)")
    p.add_argument("--force", action="store_true", help="re-run notebooks even when up to date")
    p.add_argument(
        "--sources",
        nargs="+",
        type=Path,
        default=[REPO / t for t in SOURCE_TREES],
        metavar="DIR",
        help="source trees whose change makes every notebook out of date (default: analysis probes)",
    )
    p.add_argument("--timeout", type=float, default=7200.0, help="seconds allowed per notebook (default 7200)")
    p.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=None,
        help="notebooks executed at once (default: the usable CPU cores, at most the number of notebooks); "
        "each kernel gets cores // jobs torch threads",
    )
    p.add_argument(
        "--prepare-only",
        type=Path,
        default=None,
        metavar="DIR",
        help="write parameterised copies of the notebooks into DIR without executing them",
    )
    p.add_argument("--collect-only", action="store_true", help="only gather claims and rewrite the gallery")
    p.add_argument("--strict", action="store_true", help="exit 1 if any claim fails (default: only identities)")
    return p


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    params: dict[str, Any] = {"preset": args.preset}
    for name, value in args.param:
        if not name.isidentifier():
            parser.error(f"-p: parameter name must be a Python identifier, got {name!r}")
        if name == "preset":
            parser.error("-p: set the preset with --preset smoke|full")
        params[name] = parse_value(value)
    args.params = params
    if args.timeout <= 0:
        parser.error(f"--timeout must be > 0 seconds, got {args.timeout}")
    if args.jobs is not None and args.jobs < 1:
        parser.error(f"--jobs must be an integer >= 1, got {args.jobs}")
    if not args.notebooks.is_dir():
        parser.error(f"--notebooks: no such folder {args.notebooks}")
    if args.out is None:
        committed = args.preset == "full" or os.environ.get("WORKBENCH_FIGURES")
        args.out = gallery_dir() if committed else BUILD / f"figures-{args.preset}"
    args.out = args.out.resolve()
    args.build = args.build.resolve()
    if args.prepare_only is None:  # refuse before any notebook runs: a run whose output cannot land is lost
        for option, folder in (("--out", args.out), ("--build", args.build)):
            problem = unwritable(folder)
            if problem:
                parser.error(f"{option}: cannot write to {folder}: {problem}")
    return args


def discover(folder: Path, only: list[str] | None) -> tuple[list[Path], list[Path]]:
    """All ``NN_*.ipynb`` in ``folder`` (sorted) and the subset selected by ``--only``."""
    notebooks = sorted(folder.glob(NOTEBOOK_GLOB))
    if only is None:
        return notebooks, notebooks
    by_name = {nb.stem: nb for nb in notebooks}
    unknown = [n for n in only if n.removesuffix(".ipynb") not in by_name]
    if unknown:
        print(
            f"make_figures.py: error: --only: no notebook named {unknown}; available: {sorted(by_name)}",
            file=sys.stderr,
        )
        raise SystemExit(2)
    return notebooks, [by_name[n.removesuffix(".ipynb")] for n in only]


# ----------------------------------------------------------------------------------------------
# Resume stamps
# ----------------------------------------------------------------------------------------------
def stamp_inputs(
    nb: Path, params: dict[str, Any], out: Path, source_hash: str, threads: int | None = None
) -> dict[str, Any]:
    """Everything a notebook's outputs depend on (the resume key is the hash of this dict; the kernel's
    thread count enters it because a float reduction's rounding may depend on it)."""
    return {
        "threads": threads,
        "stamp_version": STAMP_VERSION,
        "notebook": nb.stem,
        "notebook_sha256": sha256_file(nb),
        "params": params,
        "preset": params["preset"],
        "source_trees": source_hash,
        "versions": package_versions(),
        "out": str(out),
    }


def up_to_date(stamp_path: Path, key: str, out: Path) -> dict[str, Any] | None:
    """The stamp when it matches ``key`` and every output it lists is unchanged; otherwise None."""
    try:
        stamp = json.loads(stamp_path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if stamp.get("key") != key:
        return None
    for rel, digest in stamp.get("outputs", {}).items():
        path = out / rel
        if not path.is_file() or sha256_file(path) != digest:
            return None
    return stamp


# ----------------------------------------------------------------------------------------------
# Running one notebook
# ----------------------------------------------------------------------------------------------
def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def plan(
    notebooks: list[Path],
    jobs: int | None,
    build: Path,
    preset: str = "full",
    recorded: Callable[[str], dict[str, float]] | None = None,
) -> tuple[int, int, list[Path]]:
    """(jobs, torch threads per kernel, execution order) for ``notebooks``.

    ``jobs`` defaults to the usable cores; each kernel gets ``cores // jobs`` threads (at least one) so that
    concurrent kernels never oversubscribe the machine, and at most ``len(notebooks)`` kernels run at once.
    The thread count does not depend on which notebooks are selected, so ``--only`` computes exactly
    what the full run does.
    With several jobs the notebooks start longest first, which shortens the run's critical path: by the
    wall time their last stamp recorded, else (a fresh checkout has no stamps) by the cold-cache time of the
    same preset in the newest figures benchmark (``recorded``: :func:`analysis.notebook.firstlook.recorded_seconds`,
    ``bench/results/*.json``), unknown ones first; the manifest and the printed summary keep notebook order.
    """
    recorded = recorded or recorded_seconds
    cores = usable_cores()
    requested = jobs if jobs is not None else cores
    threads = max(1, cores // requested)  # not capped by the selection: --only computes with the same threads
    fixed = os.environ.get("OMP_NUM_THREADS", "")
    if fixed.isdigit() and int(fixed) >= 1:  # the caller's environment decides (kernel_env keeps it)
        threads = int(fixed)
    n = max(1, min(requested, len(notebooks) or 1))
    if n == 1:
        return n, threads, list(notebooks)

    def last_wall(nb: Path) -> float:
        stamp = _read_json(build / "stamps" / f"{nb.stem}.json")
        wall = stamp.get("wall_s", recorded(nb.stem).get(preset))
        return float(wall) if isinstance(wall, (int, float)) else float("inf")

    return n, threads, sorted(notebooks, key=lambda nb: -last_wall(nb))  # stable: ties keep notebook order


def kernel_env(staging: Path, threads: int | None = None) -> dict[str, str]:
    """Environment of the papermill process and its kernel (``threads``: OpenMP/MKL threads of the kernel,
    unless the caller's environment already fixes them)."""
    env = dict(os.environ)
    if threads is not None:
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(var, str(threads))
    share = Path(sys.prefix) / "share" / "jupyter"  # this venv's kernelspecs come first
    env["JUPYTER_PATH"] = os.pathsep.join([str(share), *filter(None, [os.environ.get("JUPYTER_PATH")])])
    env["WORKBENCH_FIGURES"] = str(staging)
    env["MPLBACKEND"] = "agg"
    env["WORKBENCH_STATIC"] = "1"  # explorers render a static figure, never widgets (analysis/notebook/explorers.py)
    env.setdefault("TQDM_DISABLE", "1")
    env.setdefault("WORKBENCH_KEEP_FREED_MEMORY", "1")  # a batch kernel keeps freed memory (analysis/zoo/allocator.py)
    env.setdefault("PYTHONHASHSEED", "0")
    env.setdefault("JUPYTER_PLATFORM_DIRS", "1")
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    return env


def papermill_command(nb: Path, executed: Path, params: dict[str, Any]) -> list[str]:
    encoded = base64.b64encode(json.dumps(params, sort_keys=True).encode()).decode()
    return [
        sys.executable,
        "-m",
        "papermill",
        str(nb),
        str(executed),
        "--kernel",
        "python3",
        "--cwd",
        str(nb.parent),
        "--parameters_base64",
        encoded,
        "--no-progress-bar",
        "--log-output",
        "--request-save-on-cell-execute",
    ]


def _die_with_parent() -> None:
    """In the papermill child before it starts (Linux): be killed when make_figures dies, even by SIGKILL.

    The kernel papermill starts runs in a session of its own, but ipykernel exits when its parent
    (papermill, ``JPY_PARENT_PID``) is gone, so no orphan keeps computing or writing into the staging
    folder of a run that no longer exists. Elsewhere this is a no-op: interrupt make_figures with Ctrl-C
    (which kills papermill), not SIGKILL.
    """
    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


_RUNNING: set[subprocess.Popen] = set()  # papermill processes of this run (killed together on Ctrl-C)
_RUNNING_LOCK = threading.Lock()


def kill_running() -> None:
    """Kill every papermill process group this run started that is still executing."""
    with _RUNNING_LOCK:
        procs = list(_RUNNING)
    for proc in procs:
        _kill_group(proc)


def execute(cmd: list[str], env: dict[str, str], log: Path, timeout: float) -> tuple[int | None, float]:
    """Run ``cmd`` in its own process group; return (exit code or None on timeout, wall seconds).

    On timeout or interruption the whole group is killed (papermill; its kernel exits with it), and if
    make_figures itself is killed, papermill is killed with it (:func:`_die_with_parent`).
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with open(log, "wb") as logf:
        proc = subprocess.Popen(
            cmd, stdout=logf, stderr=subprocess.STDOUT, env=env, start_new_session=True, preexec_fn=_die_with_parent
        )
        with _RUNNING_LOCK:
            _RUNNING.add(proc)
        try:
            rc: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            rc = None
        except BaseException:  # Ctrl-C: do not leave a kernel behind
            _kill_group(proc)
            raise
        finally:
            with _RUNNING_LOCK:
                _RUNNING.discard(proc)
    return rc, time.perf_counter() - t0


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def describe_failure(nb: Path, executed: Path, log: Path, timed_out: float | None) -> str:
    """One line: which cell of the committed notebook failed, its first source line, the error."""
    where, what = None, None
    try:
        import nbformat  # the dev extra (as papermill): a failure report must not need it

        ran = nbformat.read(executed, as_version=4)
    except Exception:  # no executed copy: the kernel never started, or papermill itself failed
        ran = None
    if ran is not None:
        index = -1
        for cell in ran.cells:
            if SKIP_TAGS & set(cell.get("metadata", {}).get("tags", [])):
                continue
            index += 1
            state = cell.get("metadata", {}).get("papermill", {}).get("status")
            errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
            if errors or state in ("failed", "running"):
                first = next((ln.strip() for ln in cell.source.splitlines() if ln.strip()), "")
                where = f"cell {index} (`{first[:80]}`)"
                if errors:
                    what = f"{errors[0].get('ename', 'Error')}: {errors[0].get('evalue', '')}".strip()
                break
    if timed_out is not None:
        what = f"timed out after {timed_out:g} s" + (" while running it" if where else "")
    if what is None:
        what = _log_tail(log)
    rel = _display(nb)
    return f"{rel} {where}: {what}" if where else f"{rel}: {what}"


def _log_tail(log: Path) -> str:
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "failed (no log)"
    return (lines[-1] if lines else "failed (empty log)") + f" (log: {_display(log)})"


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def promote(name: str, staging: Path, out: Path) -> list[str]:
    """Move a finished notebook's files from ``staging`` into ``out`` and drop its stale files.

    Every file is copied atomically. A figure that another notebook already owns is an error (two
    notebooks would overwrite each other's figure). Returns the promoted file names, sorted.
    """
    produced = sorted(p.name for p in staging.iterdir() if p.is_file())
    for fname in produced:
        if fname.endswith(".json") and not fname.endswith(".claims.json"):
            mine = _read_json(staging / fname)
            theirs = _read_json(out / fname)
            if mine.get("kind") == "figure" and mine.get("notebook") != name:
                raise RuntimeError(f"{name} wrote figure {fname!r} for notebook {mine.get('notebook')!r}")
            if theirs.get("kind") == "figure" and theirs.get("notebook") not in (None, name):
                raise RuntimeError(f"figure {fname!r} of {name} is already written by {theirs['notebook']}")
        if fname.endswith(".claims.json") and fname != f"{name}.claims.json":
            raise RuntimeError(f"{name} saved its ledger as {fname!r}; use save_ledger(led, notebook={name!r})")
    # stale files: figures this notebook wrote before but not now
    for sidecar in sorted(out.glob("*.json")):
        meta = _read_json(sidecar)
        if meta.get("kind") == "figure" and meta.get("notebook") == name and sidecar.name not in produced:
            for entry in meta.get("files", {}).values():
                (out / entry["path"]).unlink(missing_ok=True)
            sidecar.unlink(missing_ok=True)
    if f"{name}.claims.json" not in produced:
        (out / f"{name}.claims.json").unlink(missing_ok=True)
    for fname in produced:
        atomic_write_bytes(out / fname, (staging / fname).read_bytes())
    return produced


def remove_stale_temporaries(out: Path) -> list[str]:
    """Delete the temporary files (``.<name>.<random>.tmp``, see ``analysis.core.io.atomic_write``) that a
    killed run left in ``out``; return their names."""
    stale = sorted(p.name for p in out.glob(".*.tmp") if p.is_file())
    for name in stale:
        (out / name).unlink(missing_ok=True)
    return stale


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


_PROMOTE = threading.Lock()  # concurrent notebooks promote into the output folder one at a time


def run_notebook(
    nb: Path, params: dict[str, Any], args: argparse.Namespace, source_hash: str, threads: int | None = None
) -> NotebookRun:
    name = nb.stem
    check_name("notebook", name)
    run = NotebookRun(name=name, path=_display(nb))
    inputs = stamp_inputs(nb, params, args.out, source_hash, threads)
    run.key = content_hash(inputs, length=64)
    stamp_path = args.build / "stamps" / f"{name}.json"
    if not args.force and (stamp := up_to_date(stamp_path, run.key, args.out)) is not None:
        run.status, run.wall_s, run.outputs = "up to date", stamp.get("wall_s"), sorted(stamp["outputs"])
        return run
    staging = args.build / "staging" / name
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    executed = args.build / "notebooks" / f"{name}.ipynb"
    executed.parent.mkdir(parents=True, exist_ok=True)
    executed.unlink(missing_ok=True)
    log = args.build / "logs" / f"{name}.log"
    run.executed, run.log = _display(executed), _display(log)
    cmd = papermill_command(nb, executed, params)
    rc, run.wall_s = execute(cmd, kernel_env(staging, threads), log, args.timeout)
    if rc != 0:
        run.status = "failed"
        run.error = describe_failure(nb, executed, log, args.timeout if rc is None else None)
        return run
    with _PROMOTE:
        try:
            run.outputs = promote(name, staging, args.out)
        except RuntimeError as err:
            run.status, run.error = "failed", f"{_display(nb)}: {err}"
            return run
        outputs = {f: sha256_file(args.out / f) for f in run.outputs}
    shutil.rmtree(staging, ignore_errors=True)
    atomic_write_json(stamp_path, {"key": run.key, "inputs": inputs, "outputs": outputs, "wall_s": run.wall_s})
    run.status = "ran"
    return run


# ----------------------------------------------------------------------------------------------
# Claims and gallery
# ----------------------------------------------------------------------------------------------
def collect(notebooks: list[Path], out: Path) -> dict[str, Any]:
    """Gather each notebook's ledger and figure sidecars from ``out`` (notebook order, then file name)."""
    figures: dict[str, list[dict[str, Any]]] = {nb.stem: [] for nb in notebooks}
    for sidecar in sorted(out.glob("*.json")):
        meta = _read_json(sidecar)
        if meta.get("kind") == "figure" and meta.get("notebook") in figures:
            figures[meta["notebook"]].append(meta)
    ledgers: dict[str, Ledger | None] = {}
    for nb in notebooks:
        path = out / f"{nb.stem}.claims.json"
        try:
            if path.is_file():
                _check_verdicts(_read_json(path))
            ledgers[nb.stem] = Ledger.load(path) if path.is_file() else None
        except ValueError as err:  # a missing or malformed field (stability, finding, ...): one line naming the claim
            raise LedgerError(f"{_display(path)}: {err}") from None
    return {"figures": figures, "ledgers": ledgers}


def _check_verdicts(ledger: dict[str, Any]) -> None:
    """Refuse a saved ledger whose records lack a verdict (saved by an older engine)."""
    for c in ledger.get("claims", []):
        where = f"claim {c.get('context')}/{c.get('name')}"
        if c.get("verdict") not in VERDICTS:
            raise ValueError(
                f"{where} has no verdict (got {c.get('verdict')!r}; allowed {', '.join(VERDICTS)}): the ledger was "
                "saved before verdicts; run its notebook again"
            )


class LedgerError(ValueError):
    """A saved ledger that breaks the evidence rules (``make figures`` exits 2 with this one line)."""


def _all_claims(ledgers: dict[str, Ledger | None]) -> list[Claim]:
    return [c for led in ledgers.values() if led is not None for c in led.claims]


def tally(ledgers: dict[str, Ledger | None]) -> dict[str, int]:
    """Unique claims per status over every notebook (a measurement shown in two places counts once)."""
    counts = dict.fromkeys(STATUSES, 0)
    for c in unique_claims(_all_claims(ledgers)):
        counts[c.status] += 1
    return counts


def claims_document(ledgers: dict[str, Ledger | None]) -> dict[str, Any]:
    claims = unique_claims(_all_claims(ledgers))
    return {
        "headline": headline(claims),
        "summary": tally(ledgers),
        "by_role": count_by_role(claims),
        "by_verdict": count_by_verdict(claims),
        "failing": [f"{c.context}/{c.name}" for c in claims if c.status == "fail"],
        "findings": finding_counts(claims),
        "unstable": [f"{c.context}/{c.name}" for c in claims if c.status == "unstable"],
        "broken_identities": [f"{c.context}/{c.name}" for c in claims if c.status == "fail" and c.role == "identity"],
        "notebooks": {name: led.to_dict() for name, led in ledgers.items() if led is not None},
    }


def papers_document(ledgers: dict[str, Ledger | None]) -> dict[str, Any]:
    """The per-paper scorecard (:mod:`analysis.claims.scorecard`) of the notebooks' claims, each claim's statement
    read from its probe's declaration."""
    from analysis.claims.specs import spec_for
    from analysis.probing.registry import load_declarations

    load_declarations()
    where = {(c.context, c.name): name for name, led in ledgers.items() if led is not None for c in led.claims}
    return scorecard.scorecard(_all_claims(ledgers), lambda c: spec_for(c.context, c.name), where)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _claims_table(claims: list[Claim]) -> list[str]:
    """The claims of one figure or notebook: verdict, what it tests, statement, and the verdict's reason (which holds
    the measurement and what it is judged against)."""
    rows = ["| verdict | tests | claim | statement | why this verdict | paper |", "|---|---|---|---|---|---|"]
    for c in claims:
        rows.append(
            f"| {c.verdict} | {c.tests or ''} | `{_cell(c.context)}/{_cell(c.name)}` ({c.role}) | {_cell(c.statement)} "
            f"| {_cell(c.verdict_reason)} | {f'`{c.paper}`' if c.paper else ''} |"
        )
    return rows


def _claims_list(claims: list[Claim]) -> list[str]:
    """One line per claim (the notebooks' tables hold the statements): where, what it tests, why this verdict."""
    return [
        f"- `{_cell(c.context)}/{_cell(c.name)}` ({c.tests or 'undeclared'}): {_cell(c.verdict_reason)}" for c in claims
    ]


def _paper_sections(papers: dict[str, Any]) -> list[str]:
    """One short section per paper: its line, each statement with its verdict, and links to its figures."""
    lines = []
    for p in papers["papers"]:
        lines += [f"### `{p['key']}` {_cell(p['paper'])}", "", p["summary"], "", f"**{p['line']}.**", ""]
        for st in p["statements"]:
            n = len(st["claims"])
            lines.append(
                f"- **{st['verdict']}** ({', '.join(st['tests'])}; {n} claim{'s' if n != 1 else ''}): "
                f"{_cell(st['statement'])} — {_cell(st['line'])}"
            )
        if p["figures"]:
            lines += ["", "Figures: " + ", ".join(f"[{f}]({f}.png)" for f in p["figures"])]
        lines.append("")
    return lines


def gallery(notebooks: list[Path], collected: dict[str, Any]) -> str:
    """The ``README.md`` of the figures folder. Deterministic: no dates, no wall times."""
    ledgers, figures = collected["ledgers"], collected["figures"]
    papers = collected.get("papers")
    lines = [
        "# Figures",
        "",
        "Generated by `make figures` (`python scripts/make_figures.py`); do not edit by hand.",
        "Each figure has a JSON sidecar with its provenance (commit, parameters, package versions, inputs);",
        "`claims.json` holds every claim checked by the probes, `papers.json` the scorecard per paper. Each claim is",
        "declared (`analysis/claims/specs.py`) with the paper statement it tests and what it tests: `paper` (the",
        "paper's own result), `derivation` (our closed form for the paper's setting), `toy_model` (a solvable",
        "model a paper proposes) or `software` (an identity of our code). Its verdict comes from its evidence at one",
        "error rate (a 95% band): `agrees`, `disagrees` (saying what it contradicts), `undecided` (saying what would",
        "decide it) or `out_of_scope` (a scope check of its run, a measured hypothesis of the theorem, fails:",
        "exploration, never counted against the paper). Unique claims are counted once.",
        "",
        f"**Claims: {headline(_all_claims(ledgers))}.**",
        "",
    ]
    if papers and papers["papers"]:
        lines += [
            "## Per paper",
            "",
            f"**{papers['headline']}.** A statement disagrees when any of its claims does, else agrees when any",
            "does (`analysis/claims/scorecard.py`); `python -m probes claims --paper KEY` prints one paper's "
            "statements and",
            "claims.",
            "",
            *scorecard.table(papers),
            "",
            *_paper_sections(papers),
        ]
    unique = unique_claims(_all_claims(ledgers))
    disagreeing = [c for c in unique if c.verdict == "disagrees"]
    if disagreeing:
        lines += [
            "## Disagreements",
            "",
            "Findings (and, for identities, bugs), reported with their numbers and grouped by what they contradict;",
            "the figures are still built.",
            "",
        ]
        for tests in ("software", "paper", "toy_model", "derivation", None):
            mine = [c for c in disagreeing if c.tests == tests]
            if mine:
                lines += [f"### Contradicting {TESTED[tests]} ({len(mine)})", "", *_claims_list(mine), ""]
    for verdict, title, text in (
        (
            "undecided",
            "Undecided",
            "The evidence cannot separate the statement from its alternative (or was not "
            "evaluated); each says what would decide it.",
        ),
        (
            "out_of_scope",
            "Out of scope",
            "A scope check of the run fails: the run is outside the theorem's "
            "hypotheses, and the measurement is shown as exploration.",
        ),
    ):
        mine = [c for c in unique if c.verdict == verdict and c.role != "scope"]
        if mine:
            lines += [f"## {title} ({len(mine)})", "", text, "", *_claims_list(mine), ""]
    for nb in notebooks:
        name = nb.stem
        led, figs = ledgers[name], figures[name]
        lines += [f"## {name}", ""]
        if led is None and not figs:
            own = "analysis.claims.own" in nb.read_text(encoding="utf-8")
            lines += [OWN_CLAIMS if own else "_Not rendered yet._", ""]
            continue
        params = figs[0]["params"] if figs else ({"preset": led.preset} if led else {})
        shown = ", ".join(f"`{k}={json.dumps(v)}`" for k, v in sorted(params.items()))
        lines += [f"Notebook `{_display(nb)}`; parameters: {shown}.", ""]
        if led is not None:
            lines += [f"Claims: {led.headline()}.", ""]
            lines += [
                f"Every claim, figure by figure, with its statement and why its verdict: [{CLAIMS_DIR}/{name}.md]"
                f"({CLAIMS_DIR}/{name}.md).",
                "",
            ]
        else:
            lines += ["_No claims ledger saved (call `save_ledger`)._", ""]
        claims = led.claims if led is not None else []
        for meta in figs:
            fig = meta["figure"]
            image = meta["files"].get("png", next(iter(meta["files"].values()), {})).get("path", "")
            lines += [f"### {fig}", "", f"![{fig}]({image})", ""]
            if meta.get("caption"):
                lines += [meta["caption"], ""]
            mine = [c for c in claims if c.figure == fig]
            if mine:
                lines += [f"Claims ([table]({CLAIMS_DIR}/{name}.md#{fig})): {verdict_counts(mine)}.", ""]
    return "\n".join(lines).rstrip() + "\n"


def verdict_counts(claims: list[Claim]) -> str:
    """``"3 agree, 1 disagrees"``: the claims counted by verdict, in :data:`VERDICTS` order (those present)."""
    words = {
        "agrees": ("agrees", "agree"),
        "disagrees": ("disagrees", "disagree"),
        "undecided": ("undecided",) * 2,
        "out_of_scope": ("out of scope",) * 2,
    }
    counts = {v: sum(c.verdict == v for c in claims) for v in VERDICTS}
    return ", ".join(f"{n} {words[v][n != 1]}" for v, n in counts.items() if n)


def claims_page(nb: Path, collected: dict[str, Any]) -> str | None:
    """``claims/<notebook>.md``: the notebook's claims, figure by figure, each with its verdict, what it tests, its
    statement and why its verdict (None for a notebook without a ledger). Deterministic."""
    name = nb.stem
    led, figs = collected["ledgers"][name], collected["figures"][name]
    if led is None:
        return None
    lines = [
        f"# Claims of {name}",
        "",
        f"Generated by `make figures` from `{_display(nb)}`; the figures are in [the gallery](../README.md#{name}).",
        "",
        f"Claims: {led.headline()}.",
        "",
    ]
    for meta in figs:
        fig = meta["figure"]
        mine = [c for c in led.claims if c.figure == fig]
        if mine:
            lines += [f"## {fig}", "", *_claims_table(mine), ""]
    shown_figs = {m["figure"] for m in figs}
    rest = [c for c in led.claims if c.figure not in shown_figs]
    if rest:
        lines += [f"## Other claims of {name}", "", *_claims_table(rest), ""]
    return "\n".join(lines).rstrip() + "\n"


def write_claims_pages(notebooks: list[Path], collected: dict[str, Any], out: Path) -> None:
    """Write every notebook's :func:`claims_page` into ``out/claims/`` and drop the pages of notebooks without one."""
    folder = out / CLAIMS_DIR
    folder.mkdir(exist_ok=True)
    pages = {nb.stem: claims_page(nb, collected) for nb in notebooks}
    for name, text in pages.items():
        if text is not None:
            atomic_write_text(folder / f"{name}.md", text)
    for page in folder.glob("*.md"):
        if pages.get(page.stem) is None:
            page.unlink(missing_ok=True)


def write_collection(notebooks: list[Path], out: Path) -> list[Claim]:
    """Write ``claims.json`` and ``README.md`` into ``out``; return the failing claims (unique)."""
    collected = collect(notebooks, out)
    collected["papers"] = papers_document(collected["ledgers"])
    atomic_write_json(out / "claims.json", claims_document(collected["ledgers"]))
    atomic_write_json(out / "papers.json", collected["papers"])
    write_claims_pages(notebooks, collected, out)
    atomic_write_text(out / "README.md", gallery(notebooks, collected))
    led_values = [led for led in collected["ledgers"].values() if led is not None]
    claims = unique_claims(c for led in led_values for c in led.claims)
    print(f"claims: {headline(claims)}")
    for c in claims:
        if c.verdict in ("undecided", "out_of_scope") and c.role != "scope":
            print("  " + c.line())
    return [c for c in claims if c.verdict == "disagrees"]


# ----------------------------------------------------------------------------------------------
# Modes
# ----------------------------------------------------------------------------------------------
def prepare_only(notebooks: list[Path], params: dict[str, Any], dest: Path) -> int:
    """Write each notebook with ``params`` injected (papermill's prepare-only) into ``dest``."""
    import papermill  # the dev extra: only this mode imports it in-process (runs use `python -m papermill`)

    dest.mkdir(parents=True, exist_ok=True)
    for nb in notebooks:
        papermill.execute_notebook(
            str(nb),
            str(dest / nb.name),
            parameters=params,
            prepare_only=True,
            kernel_name="python3",
            progress_bar=False,
            log_output=False,
        )
        print(f"prepared {dest / nb.name}")
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except LedgerError as err:
        print(f"make_figures: error: {err}", file=sys.stderr)
        return 2


def _main(argv: list[str] | None) -> int:
    # notebooks run with notebooks/ as working directory: a relative cache or figures folder given in
    # the environment must mean the same folder there as here
    for var in ("WORKBENCH_CACHE", "WORKBENCH_FIGURES"):
        if os.environ.get(var):
            os.environ[var] = str(Path(os.environ[var]).resolve())
    args = parse_args(argv)
    notebooks, selected = discover(args.notebooks, args.only)
    if args.prepare_only is not None:
        return prepare_only(selected, args.params, args.prepare_only.resolve())
    args.out.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(args.out)
    if args.collect_only:
        failing = write_collection(notebooks, args.out)
        return _report_failures([], failing, strict=args.strict)

    t0 = time.perf_counter()
    source_hash = tree_hash(args.sources)
    params_text = " ".join(f"{k}={json.dumps(v)}" for k, v in sorted(args.params.items()))
    jobs, threads, order = plan(selected, args.jobs, args.build, args.preset)
    where = f"{jobs} at a time, {threads} thread(s) each" if jobs > 1 else f"{threads} thread(s)"
    print(f"make_figures: {len(selected)} notebook(s) ({where}), {params_text}, out {args.out}")

    def report(i: int, run: NotebookRun) -> None:
        wall = f" ({run.wall_s:.1f} s)" if run.status != "up to date" and run.wall_s is not None else ""
        status = run.status if run.status != "failed" else "FAILED"
        print(f"[{i}/{len(selected)}] {run.name} ... {status}{wall}", flush=True)

    done: dict[str, NotebookRun] = {}
    if jobs == 1:
        for i, nb in enumerate(order, 1):
            done[nb.stem] = run_notebook(nb, args.params, args, source_hash, threads)
            report(i, done[nb.stem])
    else:
        pool = ThreadPoolExecutor(max_workers=jobs)
        try:
            futures = [pool.submit(run_notebook, nb, args.params, args, source_hash, threads) for nb in order]
            for i, fut in enumerate(as_completed(futures), 1):
                run = fut.result()
                done[run.name] = run
                report(i, run)
        except BaseException:  # Ctrl-C in the main thread: start nothing more, kill what runs
            pool.shutdown(wait=False, cancel_futures=True)
            kill_running()
            raise
        pool.shutdown()
    runs = [done[nb.stem] for nb in selected]
    failing = write_collection(notebooks, args.out)
    total = time.perf_counter() - t0
    manifest = {
        "params": args.params,
        "out": str(args.out),
        "notebooks_dir": str(args.notebooks.resolve()),
        "total_wall_s": total,
        "jobs": jobs,
        "threads_per_kernel": threads,
        "notebooks": {r.name: r.__dict__ for r in runs},
        "failing_claims": [f"{c.context}/{c.name}" for c in failing],
    }
    atomic_write_json(args.build / "manifest.json", manifest)
    print(f"wall time {total:.1f} s; manifest {_display(args.build / 'manifest.json')}")
    return _report_failures(runs, failing, strict=args.strict)


def _report_failures(runs: list[NotebookRun], failing: list[Claim], strict: bool = False) -> int:
    broken = [r for r in runs if r.status == "failed"]
    for r in broken:
        print(f"error: {r.error}", file=sys.stderr)
        if r.executed:
            print(f"       executed copy: {r.executed}; log: {r.log}", file=sys.stderr)
    bugs = [c for c in failing if c.role == "identity"]
    findings = [c for c in failing if c.role != "identity"]
    if findings:
        print(f"{len(findings)} claim(s) disagree (findings, reported in the gallery):", file=sys.stderr)
        for c in findings:
            print("  " + c.line(), file=sys.stderr)
    if bugs:
        print(f"error: {len(bugs)} identity claim(s) failed (bugs):", file=sys.stderr)
        for c in bugs:
            print("  " + c.line(), file=sys.stderr)
    return 1 if (broken or bugs or (strict and failing)) else 0


if __name__ == "__main__":
    sys.exit(main())
