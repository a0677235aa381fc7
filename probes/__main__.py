"""``python -m probes``: see :mod:`probes.cli` for the commands, options and exit codes."""

from probes.cli import keep_freed_memory_for_this_process, main

keep_freed_memory_for_this_process()
raise SystemExit(main())
