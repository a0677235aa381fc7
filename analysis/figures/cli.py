"""``make figures``: the modes (run, ``--prepare-only``, ``--collect-only``), the parallel run of the notebooks,
the manifest and the exit status."""

from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from analysis.claims.ledger import (
    Claim,
)
from analysis.core.io import (
    atomic_write_json,
)
from analysis.core.provenance import tree_hash
from analysis.figures.execution import display_path, kill_running, plan, remove_stale_temporaries, run_notebook
from analysis.figures.gallery import LedgerError, write_collection
from analysis.figures.options import NotebookRun, discover, parse_args


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
    print(f"wall time {total:.1f} s; manifest {display_path(args.build / 'manifest.json')}")
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
