"""Training and caches: the deterministic trainer, the content-addressed checkpoint and result caches, and the
named trained-model recipes with their baselines."""
