"""Two artists that draw many small things as one collection.

matplotlib draws every ``Text`` bbox and every ``annotate`` arrow as an artist of its own, each
with its own layout; a picture with a hundred of them takes a hundred layouts. These two do
the same work in one pass over the whole picture, so that a widget can redraw a step in a few
milliseconds:

* :class:`Backdrops`: the white cards behind labels (what ``bbox=`` would draw), sized from
  each label's own extent at draw time;
* :class:`ArrowHeads`: the heads of straight arrows, turned to each arrow's direction on the
  page at draw time (the direction depends on the Axes' size and limits, which a constrained
  layout sets only when the figure is drawn).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from matplotlib.artist import Artist
from matplotlib.collections import PolyCollection
from matplotlib.transforms import IdentityTransform

__all__ = ["ArrowHeads", "Backdrops"]


class Backdrops(Artist):
    """A card behind each of ``texts``, ``pad`` points wider than the text on every side."""

    def __init__(
        self, texts: Sequence[Any], *, color: str, alpha: float = 0.85, pad: float = 1.2
    ) -> None:
        super().__init__()
        self.texts = list(texts)
        self.color, self.card_alpha, self.pad = color, alpha, pad
        self.set_in_layout(False)

    def draw(self, renderer: Any) -> None:
        if not self.get_visible() or not self.texts:
            return
        pad = renderer.points_to_pixels(self.pad)
        cards = []
        for text in self.texts:
            if not text.get_visible() or not text.get_text():
                continue
            box = text.get_window_extent(renderer)
            x0, y0, x1, y1 = box.x0 - pad, box.y0 - pad, box.x1 + pad, box.y1 + pad
            cards.append([(x0, y0), (x1, y0), (x1, y1), (x0, y1)])
        _polygons(self, cards, self.color, self.card_alpha).draw(renderer)


class ArrowHeads(Artist):
    """A filled head at the end of each straight arrow ``((x0, y0), (x1, y1))`` (data
    coordinates), ``length`` points long and ``width`` points wide."""

    def __init__(
        self,
        arrows: Sequence[tuple[tuple[float, float], tuple[float, float]]],
        colors: Sequence[str],
        *,
        length: float = 7.0,
        width: float = 4.5,
    ) -> None:
        super().__init__()
        self.arrows, self.colors = list(arrows), list(colors)
        self.length, self.width = length, width
        self.set_in_layout(False)

    def draw(self, renderer: Any) -> None:
        if not self.get_visible() or not self.arrows:
            return
        data = self.axes.transData
        length = renderer.points_to_pixels(self.length)
        half = renderer.points_to_pixels(self.width) / 2
        heads = []
        for start, end in self.arrows:
            (x0, y0), (x1, y1) = data.transform([start, end])
            norm = math.hypot(x1 - x0, y1 - y0) or 1.0
            ux, uy = (x1 - x0) / norm, (y1 - y0) / norm
            bx, by = x1 - ux * length, y1 - uy * length
            heads.append(
                [(x1, y1), (bx - uy * half, by + ux * half), (bx + uy * half, by - ux * half)]
            )
        _polygons(self, heads, self.colors, 1.0).draw(renderer)


def _polygons(owner: Artist, polygons: list[Any], color: Any, alpha: float) -> PolyCollection:
    """Pixel-space polygons drawn as one collection, with the owner's z-order and clipping."""
    collection = PolyCollection(
        polygons,
        facecolors=color,
        edgecolors="none",
        alpha=alpha,
        transform=IdentityTransform(),
    )
    collection.set_figure(owner.figure)
    collection.set_zorder(owner.get_zorder())
    collection.set_clip_on(False)
    return collection
