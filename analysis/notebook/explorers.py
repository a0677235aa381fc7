"""Interactive explorers: turn a knob, see the theory move (JupyterLab), or a static figure (papermill, nbval).

An explorer is a set of controls (:class:`Slider`, :class:`Choice`) and a ``render(**values)`` that returns a
matplotlib figure and one line of text; displayed in a notebook it is interactive in a live kernel with ipywidgets
and static under ``WORKBENCH_STATIC=1``, outside a kernel, or without ipywidgets
(:mod:`analysis.notebook.explorers_base`).

Each explorer's numbers come from a *compute* function (``entropy_curves``, ``relay_alpha_curves`` and
``conv_heads_curves`` in :mod:`analysis.notebook.explorers_attention`; ``eta_star_curves`` in
:mod:`analysis.notebook.explorers_icl`; ``readout_error_curves`` and ``memory_slot_curves`` in
:mod:`analysis.notebook.explorers_memory`; the ones that read cached probe results are in
:mod:`companions.explorers`): pure functions of the control values built on the theory modules, tested in
``tests/test_explorers.py`` and timed in ``bench/run.py`` (``--only explorers``). Closed forms are evaluated
per change; the only sampling is a small Monte Carlo over random logits or random memories (fixed seeds).

This module is the front the notebooks import from (``from analysis.notebook.explorers import explore_entropy``):
it re-exports every name of those parts.
"""

from analysis.notebook.explorers_attention import (  # noqa: F401
    ENTROPY_KERNELS,
    _render_conv_heads,
    _render_entropy,
    conv_heads_curves,
    entropy_curves,
    explore_conv_heads,
    explore_entropy,
    relay_alpha_curves,
)
from analysis.notebook.explorers_base import (  # noqa: F401
    DPI,
    FIGSIZE,
    STATIC_ENV,
    Choice,
    Explorer,
    Slider,
    _two_panels,
    figure_png,
    is_static,
)
from analysis.notebook.explorers_icl import ICL_INPUTS, _render_eta, eta_star_curves, explore_eta_star  # noqa: F401
from analysis.notebook.explorers_memory import (  # noqa: F401
    _render_memory_slots,
    _render_readout,
    explore_memory_slots,
    explore_readout,
    memory_slot_curves,
    readout_error_curves,
)
