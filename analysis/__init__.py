"""The workbench library, grouped by job: ``core`` (configs, I/O, paths, provenance, checks), ``zoo`` (models, hooks,
adapters), ``data`` (tasks and corpora), ``training`` (trainer, caches, recipes), ``claims`` (declarations, ledger,
verdicts, statistics, scorecard, your own claims), ``notebook`` (plotting, explorers, first look) and ``theory`` (closed
forms). The old flat paths (``analysis.ledger``...) are the same modules, with a deprecation warning, for one
release."""

from analysis.zoo.allocator import apply_from_environment as _keep_freed_memory_if_asked

_keep_freed_memory_if_asked()  # WORKBENCH_KEEP_FREED_MEMORY (analysis/zoo/allocator.py); a no-op by default
