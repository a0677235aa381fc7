"""The probe framework: configs, results, the result cache and model compatibility checks.

A probe measures something in a (tiny) transformer and compares it with what theory predicts. Each
probe is one module in ``probes/`` with this contract (checked by :func:`validate_probe`):

``NAME``        the probe's name, equal to its module name (``"icl_gd"``);
``DESCRIPTION`` one line for ``python -m probes list`` (defaults to the docstring's first line);
``VERSION``     a string bumped whenever the probe's numbers change; part of the cache key;
``REQUIRES``    what the probe needs from a model passed in, e.g. ``{"causal": True, "input": "tokens"}``
                (a tuple value lists the allowed values), ``{}`` for any model, ``None`` when the
                probe never takes one (see :func:`check_model_compat`);
``Config``      a frozen dataclass subclassing :class:`ProbeConfig`, with ``PRESETS``;
``run(config, model=None, progress=True) -> Result``;
``check_claims(result) -> Ledger`` the probe's claims, reading the result only (its config, arrays, scalars
                and meta); ``run`` records it, and :func:`cached_run` judges every cache hit again with it
                (:func:`judged`), so a claim added or corrected later needs no recompute and no
                ``VERSION`` bump. Optional: without it a hit keeps the ledger stored with it.

A minimal probe module::

    from dataclasses import dataclass
    import numpy as np, xarray as xr
    from analysis.claims.ledger import Claim, Ledger
    from analysis.probing.base import ProbeConfig, Result, param

    NAME = "running_mean"
    DESCRIPTION = "Running mean of i.i.d. draws against its closed form."
    VERSION = "1"
    REQUIRES = None  # pure theory: takes no model

    @dataclass(frozen=True)
    class Config(ProbeConfig):
        SMOKE = {"n": 100}
        n: int = param(10_000, "number of draws", minimum=1)
        seed: int = param(0, "seed of the draws", minimum=0)

    def run(config: Config, model=None, progress: bool = True) -> Result:
        rng = np.random.default_rng(config.seed)
        ...
        led = Ledger(NAME, preset=config.preset_name)
        led.predict("mean", measured=m, expected=0.5, se=1 / np.sqrt(12 * config.n), dof=math.inf,
                    within_run="no model: the draws' Monte Carlo SE is the whole uncertainty", alternative=0.0,
                    hypothesis="draws from a distribution centred at 0", source="...", why="95% band of n draws")
        return Result(probe=NAME, config=config, data=xr.Dataset(...), scalars={"mean": m}, ledger=led)

Config rules. Every field has a default, and **the defaults are the full experiment**: ``SMOKE``
holds the field overrides of the smoke preset (``PRESETS``, derived from it, maps ``"smoke"`` to them and
``"full"`` to none; a config may set ``PRESETS`` itself instead, where ``"full"`` must agree with the
defaults). Fields are declared as in every config of the workbench (:mod:`analysis.core.config`): types
``int``, ``float``, ``bool``, ``str`` (or ``Literal[...]``) and tuples of them, each optionally
``| None``, with :func:`param` giving the help and bounds (``choices``, ``minimum``, ``maximum``,
``min_len``) that the generic validation and the command line use. Construction turns lists into
tuples and ints into floats where a float is declared, then calls :meth:`ProbeConfig.validate`;
override ``validate`` (calling ``super().validate()`` first) for checks across fields. The field
``preset_name`` (``"smoke"`` | ``"full"``) records which preset the config was built from; the
ledger uses it to leave ``requires_full`` claims unevaluated in smoke runs.

Model fields. A probe that builds its own TinyTransformer declares the fields that describe it
(``layers``, ``d_model``, ``heads``, ``mlp``, ``attention``, ``norm``, ``pos``, ``vocab_size``,
``seed`` ...; see ``MODEL_FIELDS``) with :func:`model_param`, and gets its model from
:meth:`ProbeConfig.model_config` (``config.model_config(n_layers=depth, dtype="float64")``).
Validation builds that model config once, so what :class:`~analysis.zoo.model.ModelConfig` refuses
(``heads`` not dividing ``d_model``, an odd RoPE head size) is refused by the probe's config, in
the probe's field names.

Saved results are folders (:meth:`Result.save`): ``data.nc`` (the arrays, netCDF-4 via the netCDF4 library),
``result.json`` (probe, version, config, scalars, claims, meta) and ``manifest.json`` (SHA-256 of
both). Writes are atomic; :meth:`Result.load` refuses a folder whose files do not match the manifest.

Where it lives. This module is the framework's front and re-exports all of it: configs and their field helpers
(:func:`param`, :func:`model_param`, :func:`replicates_param`, ``MODEL_FIELDS``) in :mod:`analysis.probing.config`;
the contract check and the probe lookup (:func:`validate_probe`, :func:`get`, :func:`register`,
:func:`check_model_compat`) in :mod:`analysis.probing.contract`; :class:`Result`, its saved folder and
:func:`result_difference` in :mod:`analysis.probing.result`; :func:`run_probe`, :func:`judged` and the result cache
(:func:`cache_key`, :func:`cached_run`) in :mod:`analysis.probing.result_cache`.
"""

from __future__ import annotations

from analysis.core.config import FieldSpec, param  # noqa: F401
from analysis.probing import registry  # noqa: F401
from analysis.probing.config import (  # noqa: F401
    MAX_SEED,
    MODEL_FIELDS,
    ModelPart,
    ProbeConfig,
    _model_fields_of,
    model_param,
    replicates_param,
)
from analysis.probing.contract import (  # noqa: F401
    _MISSING,
    _PROTOCOL_KEYS,
    RESERVED_FIELDS,
    ModelIncompatibleError,
    _model_value,
    _resolve,
    _resolve_config,
    check_model_compat,
    description,
    get,
    register,
    unregister,
    validate_probe,
)
from analysis.probing.result import (  # noqa: F401
    FORMAT_VERSION,
    NETCDF_ENGINE,
    RESULT_FILES,
    CorruptResultError,
    Result,
    _as_scalar,
    _fmt_scalar,
    _scalar_from_json,
    _scalar_to_json,
    _scalars_equal,
    result_difference,
)
from analysis.probing.result_cache import (  # noqa: F401
    _cached_result,
    _judge,
    cache_key,
    cached_run,
    judged,
    results_cache_dir,
    run_probe,
)
