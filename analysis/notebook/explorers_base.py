"""The explorers' machinery: the controls (:class:`Slider`, :class:`Choice`) and :class:`Explorer`, which displays
them as widgets or as a static figure (JupyterLab; papermill, nbval).

An explorer is a set of controls and a ``render(**values)`` that returns a matplotlib figure and one line of text.
Displayed in a notebook (:meth:`Explorer._ipython_display_`) it is

* **interactive** in a live kernel with ipywidgets: one widget per control; each change calls ``render`` and
  replaces the picture (a PNG in an ``ipywidgets.Image``, so it works under any matplotlib backend);
* **static** under ``WORKBENCH_STATIC=1`` (``scripts/make_figures.py`` and the nbval step of ``make test`` set
  it), outside a kernel, or without ipywidgets: the figure at the default values as a PNG output and the text.
  No widget is created, so no widget state reaches an executed notebook.

The explorers themselves, by subject: :mod:`analysis.notebook.explorers_attention`,
:mod:`analysis.notebook.explorers_icl`, :mod:`analysis.notebook.explorers_memory`; all re-exported by
:mod:`analysis.notebook.explorers`.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib
import matplotlib.pyplot as plt

from analysis.notebook.plotting import STYLE

STATIC_ENV = "WORKBENCH_STATIC"
FIGSIZE = (7.0, 2.7)
DPI = 110


# ----------------------------------------------------------------------------------------------
# Controls and the explorer
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Slider:
    """A numeric control: ``lo <= value <= hi`` in steps of ``step`` (integers when ``integer``)."""

    name: str
    label: str
    lo: float
    hi: float
    step: float
    value: float
    integer: bool = False


@dataclass(frozen=True)
class Choice:
    """A control with a fixed list of options."""

    name: str
    label: str
    options: tuple[Any, ...]
    value: Any


def is_static() -> bool:
    """True where widgets cannot work or must not be written: ``WORKBENCH_STATIC`` set, no kernel, no ipywidgets."""
    if os.environ.get(STATIC_ENV, "").lower() in ("1", "true", "yes"):
        return True
    try:
        import ipywidgets  # noqa: F401
        from IPython import get_ipython
    except ImportError:
        return True
    shell = get_ipython()
    return shell is None or not hasattr(shell, "kernel")


def figure_png(fig) -> bytes:
    """The figure as PNG bytes (closed afterwards)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


class Explorer:
    """Controls plus ``render(**values) -> (figure, text)``; displays as widgets or as a static figure."""

    def __init__(self, title: str, controls: Sequence[Slider | Choice], render: Callable, static: bool | None = None):
        self.title = title
        self.controls = tuple(controls)
        self.render = render
        self.static = is_static() if static is None else bool(static)
        self.values = {c.name: c.value for c in self.controls}
        self._image = self._text = None

    def png(self, **over: Any) -> tuple[bytes, str]:
        """Render at the current values updated by ``over`` (which become current): (PNG bytes, text)."""
        unknown = set(over) - set(self.values)
        if unknown:
            raise ValueError(f"unknown control(s) {sorted(unknown)}; controls are {sorted(self.values)}")
        self.values.update(over)
        with plt.style.context(STYLE), matplotlib.rc_context({"figure.figsize": FIGSIZE}):
            fig, text = self.render(**self.values)
            return figure_png(fig), text

    def update(self, **over: Any) -> None:
        """What a widget change calls: re-render and replace the picture and the text."""
        data, text = self.png(**over)
        if self._image is not None:
            self._image.value = data
            self._text.value = f"<b>{self.title}</b>: {text}"

    def widget(self):
        """The ipywidgets box (controls above the picture)."""
        import ipywidgets as w

        data, text = self.png()
        self._image = w.Image(value=data, format="png")
        self._text = w.HTML(f"<b>{self.title}</b>: {text}")
        boxes = []
        for c in self.controls:
            if isinstance(c, Choice):
                box = w.Dropdown(options=list(c.options), value=c.value, description=c.label)
            else:
                kind = w.IntSlider if c.integer else w.FloatSlider
                box = kind(value=c.value, min=c.lo, max=c.hi, step=c.step, description=c.label, continuous_update=False)
            box.style.description_width = "initial"
            box.observe(lambda change, name=c.name: self.update(**{name: change["new"]}), names="value")
            boxes.append(box)
        return w.VBox([w.HBox(boxes, layout=w.Layout(flex_flow="row wrap")), self._text, self._image])

    def _ipython_display_(self) -> None:
        from IPython.display import HTML, Image, display

        if self.static:
            data, text = self.png()
            display(Image(data=data, format="png"))
            display(
                HTML(f"<p><b>{self.title}</b> (static: open the notebook in JupyterLab to turn the knobs): {text}</p>")
            )
        else:
            display(self.widget())


def _two_panels():
    return plt.subplots(1, 2, figsize=FIGSIZE, constrained_layout=True)
