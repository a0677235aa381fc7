"""``python -m probes``: see :mod:`analysis.probing.cli` for the commands, options and exit codes."""

import os
import sys

from analysis.probing.cli import keep_freed_memory_for_this_process, main

keep_freed_memory_for_this_process()
try:
    code = main()
    sys.stdout.flush()
except BrokenPipeError:  # the reader went away (``python -m probes claims | head``): not an error of ours
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    code = 0
raise SystemExit(code)
