"""The machinery that runs any probe: the probe contract, configs and results, the result cache, parts, declared
studies, replicate seeds and the sequential design, sweeps, the registry that finds the experiments in ``probes/``,
the claims inventory and the command line (``python -m probes``)."""
