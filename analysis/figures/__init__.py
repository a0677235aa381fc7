"""The figure pipeline: ``make figures`` executes the notebooks with papermill and gathers their claims
(:mod:`analysis.figures.cli`; ``scripts/make_figures.py`` is its entry point).

Regenerate every figure: execute ``notebooks/NN_*.ipynb`` with papermill, then gather the claims.

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
