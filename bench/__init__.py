"""The benchmarks (``make bench``, ``python bench/run.py``): speed and memory, recorded per machine in
``bench/results/``."""
