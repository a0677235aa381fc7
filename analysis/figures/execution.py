"""Running one notebook: its resume stamp, its kernel's environment, papermill in a process group of its own,
a one-line failure, and the atomic move of its outputs into the figures folder."""

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
from pathlib import Path
from typing import Any

from analysis.core.io import (
    atomic_write_bytes,
    atomic_write_json,
    content_hash,
    sha256_file,
)
from analysis.core.paths import REPO
from analysis.core.provenance import check_name, package_versions
from analysis.figures.options import (
    SKIP_TAGS,
    STAMP_VERSION,
    NotebookRun,
)
from analysis.notebook.firstlook import recorded_seconds


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
        stamp = read_json_object(build / "stamps" / f"{nb.stem}.json")
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
    rel = display_path(nb)
    return f"{rel} {where}: {what}" if where else f"{rel}: {what}"


def _log_tail(log: Path) -> str:
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "failed (no log)"
    return (lines[-1] if lines else "failed (empty log)") + f" (log: {display_path(log)})"


def display_path(path: Path) -> str:
    """``path`` relative to the repository where it lies inside it (how the pipeline prints and records paths)."""
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
            mine = read_json_object(staging / fname)
            theirs = read_json_object(out / fname)
            if mine.get("kind") == "figure" and mine.get("notebook") != name:
                raise RuntimeError(f"{name} wrote figure {fname!r} for notebook {mine.get('notebook')!r}")
            if theirs.get("kind") == "figure" and theirs.get("notebook") not in (None, name):
                raise RuntimeError(f"figure {fname!r} of {name} is already written by {theirs['notebook']}")
        if fname.endswith(".claims.json") and fname != f"{name}.claims.json":
            raise RuntimeError(f"{name} saved its ledger as {fname!r}; use save_ledger(led, notebook={name!r})")
    # stale files: figures this notebook wrote before but not now
    for sidecar in sorted(out.glob("*.json")):
        meta = read_json_object(sidecar)
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


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; ``{}`` where it is missing, unreadable or not an object."""
    try:
        value = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def resume_key(inputs: dict[str, Any]) -> str:
    """The key of a notebook's run from its :func:`stamp_inputs`: a stamp with this key and its outputs in place is
    up to date."""
    return content_hash(inputs, length=64)


_PROMOTE = threading.Lock()  # concurrent notebooks promote into the output folder one at a time


def run_notebook(
    nb: Path, params: dict[str, Any], args: argparse.Namespace, source_hash: str, threads: int | None = None
) -> NotebookRun:
    name = nb.stem
    check_name("notebook", name)
    run = NotebookRun(name=name, path=display_path(nb))
    inputs = stamp_inputs(nb, params, args.out, source_hash, threads)
    run.key = resume_key(inputs)
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
    run.executed, run.log = display_path(executed), display_path(log)
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
            run.status, run.error = "failed", f"{display_path(nb)}: {err}"
            return run
        outputs = {f: sha256_file(args.out / f) for f in run.outputs}
    shutil.rmtree(staging, ignore_errors=True)
    atomic_write_json(stamp_path, {"key": run.key, "inputs": inputs, "outputs": outputs, "wall_s": run.wall_s})
    run.status = "ran"
    return run
