"""Claims and their statistics: declarations, the ledger and its verdicts, the one band policy and the
sequential design, fits, the paper registry, the per-paper scorecard, and the path for a claim of your own."""
