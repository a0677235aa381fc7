"""Notebook companions: the designs and claims of the notebooks that are not one probe's (00_overview, 06_real_models)
and the explorers of cached probe results the notebooks show. Not probes: the registry finds those in ``probes/``."""
