"""Text labels that overlap: every picture of the course is drawn without any.

:func:`overlaps` draws a figure and lists the pairs of texts it drew (titles, axis labels, tick
labels, legend entries, annotations, and the labels the course's diagrams draw themselves, such
as a message's name on its arrow) whose boxes intersect. Only what is drawn counts: an axis
keeps spare tick labels it does not draw, and a hidden axis draws none of its own.

:func:`watch` is a matplotlib figure hook: with ``figure.hooks: kafkalab.viz.labels:watch`` in a
``matplotlibrc`` (``make test`` sets ``MATPLOTLIBRC`` to :data:`RC_DIR`), every pyplot figure
prints one line per overlap each time it is drawn. A lesson whose picture has overlapping
labels then prints something its stored output does not have, and its notebook test fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from kafkalab.viz._artists import Labels

__all__ = ["RC_DIR", "overlaps", "watch"]

RC_DIR = Path(__file__).with_name("label_check")  # holds the matplotlibrc that installs watch
_MIN_PX = 1.0  # boxes that share less than this many pixels each way only touch

_original_draw = Text.draw
# Where drawn texts are recorded, each by id(figure) then id(text): watch's record (its
# draw_event reads and clears a figure's entry) and one per running overlaps() call.
_sinks: list[dict[int, dict[int, Text]]] = []
_watched: dict[int, dict[int, Text]] = {}


def _draw_and_record(self: Any, renderer: Any) -> None:
    if _sinks and self.get_visible() and self.get_text().strip() and self.get_alpha() != 0:
        figure = self.get_figure(root=True)
        if figure is not None:
            for sink in _sinks:
                sink.setdefault(id(figure), {})[id(self)] = self
    _original_draw(self, renderer)


@contextmanager
def _recorded(sink: dict[int, dict[int, Text]]) -> Iterator[None]:
    """Record into ``sink`` every text drawn while this runs."""
    Text.draw = _draw_and_record  # type: ignore[method-assign]
    _sinks.append(sink)
    try:
        yield
    finally:
        _sinks.remove(sink)
        if not _sinks:
            Text.draw = _original_draw  # type: ignore[method-assign]


def _pairs(texts: list[Text], renderer: Any, fig: Figure | None = None) -> list[tuple[str, str]]:
    boxes = []
    for text in texts:
        box = text.get_window_extent(renderer)
        if box.width > 0 and box.height > 0:
            boxes.append((text.get_text(), box))
    if fig is not None:  # and the labels of the course's own label artists (arrow labels...)
        for artist in fig.findobj(Labels):
            if artist.get_visible() and artist.axes is not None and artist.axes.get_visible():
                boxes += artist.placed
    found = []
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1 :]:
            width = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
            height = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
            if width >= _MIN_PX and height >= _MIN_PX:
                found.append((a, b))
    return found


def overlaps(fig: Figure) -> list[tuple[str, str]]:
    """Draw ``fig`` and return the pairs of drawn texts whose boxes overlap, as their strings."""
    if not hasattr(fig.canvas, "get_renderer"):  # a Figure made without pyplot
        FigureCanvasAgg(fig)
    sink: dict[int, dict[int, Text]] = {}
    with _recorded(sink):
        fig.canvas.draw()
    texts = list(sink.get(id(fig), {}).values())
    return _pairs(texts, fig.canvas.get_renderer(), fig)  # type: ignore[attr-defined]


def watch(fig: Figure) -> None:
    """Print each overlap of ``fig``'s labels whenever it is drawn (a ``figure.hooks`` entry).
    From the first call on, the process records what every figure draws."""
    if _watched not in _sinks:
        _sinks.append(_watched)
        Text.draw = _draw_and_record  # type: ignore[method-assign]

    def check(event: Any) -> None:
        texts = list(_watched.pop(id(fig), {}).values())
        for a, b in _pairs(texts, event.renderer, fig):
            print(f"label overlap: {a!r} and {b!r}")

    fig.canvas.mpl_connect("draw_event", check)
