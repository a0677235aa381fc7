"""The ground every other package stands on: validated configs, atomic I/O, the repository's paths, figure
provenance, input checks, progress bars and devices."""
