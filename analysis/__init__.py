"""The workbench library: models, hooks, tasks, training, theory, fitting, plotting."""

from analysis.allocator import apply_from_environment as _keep_freed_memory_if_asked

_keep_freed_memory_if_asked()  # WORKBENCH_KEEP_FREED_MEMORY (analysis/allocator.py); a no-op by default
