"""``python -m probes``: see :mod:`probes.cli` for the commands, options and exit codes."""

from probes.cli import main

raise SystemExit(main())
