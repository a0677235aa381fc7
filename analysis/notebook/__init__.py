"""Notebook helpers: plotting and saved figures with provenance, the explorers, and the first look a notebook
shows before it computes."""
