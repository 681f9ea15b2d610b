"""Two artists that draw many small things in one pass.

matplotlib draws every ``Text`` (with its ``bbox``) and every ``annotate`` arrow as an artist
of its own, each with its own layout; a picture with a hundred of them takes a hundred layouts.
These two do the same work in one pass over the whole picture, so that a widget can redraw a
step in a few milliseconds:

* :class:`ArrowHeads`: the heads of straight arrows, turned to each arrow's direction on the
  page at draw time (the direction depends on the Axes' size and limits, which a constrained
  layout sets only when the figure is drawn);
* :class:`Labels`: many short labels (a record's value, an arrow's message), each measured once
  per process and handed to the renderer as text, with an optional card behind each (what
  ``bbox=`` would draw). A matplotlib ``Text`` lays itself out again on every draw, which
  costs about eight times as much.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from matplotlib.artist import Artist
from matplotlib.collections import PolyCollection
from matplotlib.font_manager import FontProperties
from matplotlib.transforms import Bbox, IdentityTransform

__all__ = ["ArrowHeads", "Label", "Labels"]

_FAMILY = "DejaVu Sans"  # the family kafkalab's style sets (kafkalab.viz._style)
_LINE_SPACING = 1.2  # matplotlib's default linespacing


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
        if not self.get_visible() or not self.arrows or self.axes is None:
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


@dataclass(frozen=True)
class Label:
    """One label: its anchor point (data coordinates), text (lines split at newlines), size in
    points, weight, colour and alignment to the anchor."""

    x: float
    y: float
    text: str
    size: float = 7.5
    weight: str = "normal"
    color: str = "#1a1a1a"
    ha: str = "center"  # left, center, right
    va: str = "center"  # bottom, center, top


class Labels(Artist):
    """Labels drawn as text, with a card of ``card`` colour behind each one when given."""

    def __init__(
        self,
        *,
        card: str | None = None,
        card_alpha: float = 0.85,
        pad: float = 1.0,
        avoid: bool = False,
    ):
        super().__init__()
        self.items: list[Label] = []
        self.card, self.card_alpha, self.pad = card, card_alpha, pad
        # With ``avoid``, a label that would cover one drawn before it moves up or down by a
        # line or a few until it is clear (or stays, when no nearby place is).
        self.avoid = avoid
        self.placed: list[tuple[str, Bbox]] = []  # the boxes of the last draw, in display units
        self.set_in_layout(False)

    def add(self, x: float, y: float, text: str, **style: Any) -> None:
        self.items.append(Label(x, y, text, **style))

    def texts(self) -> list[str]:
        """What the labels say, in the order they were added (for tests and text twins)."""
        return [label.text for label in self.items]

    def draw(self, renderer: Any) -> None:
        if not self.get_visible() or not self.items or self.axes is None:
            return
        points = self.axes.transData.transform([(i.x, i.y) for i in self.items])
        pad = renderer.points_to_pixels(self.pad)
        height = renderer.get_canvas_width_height()[1]
        flip = renderer.flipy()
        cards, lines = [], []
        placed: list[tuple[str, Bbox]] = []
        for item, (px, py) in zip(self.items, points, strict=True):
            prop = _prop(item.size, item.weight)
            rows = item.text.split("\n")
            widths = [_extent(renderer, row, prop)[0] for row in rows]
            _, tall, descent = _extent(renderer, "lp", prop)
            ascent, step = tall - descent, _LINE_SPACING * tall
            block_w = max(widths)
            block_h = ascent + descent + step * (len(rows) - 1)
            left = {"left": px, "center": px - block_w / 2, "right": px - block_w}[item.ha]
            top = {"top": py, "center": py + block_h / 2, "bottom": py + block_h}[item.va]
            box = Bbox.from_extents(
                left - pad, top - block_h - pad, left + block_w + pad, top + pad
            )
            if self.avoid:
                top, box = _clear_place(box, top, [b for _, b in placed], self.axes.bbox)
            placed.append((item.text, box))
            if self.card is not None:
                x0, x1 = left - pad, left + block_w + pad
                y0, y1 = top - block_h - pad, top + pad
                cards.append([(x0, y0), (x1, y0), (x1, y1), (x0, y1)])
            for i, (row, width) in enumerate(zip(rows, widths, strict=True)):
                x = left + {"left": 0.0, "center": (block_w - width) / 2}.get(
                    item.ha, block_w - width
                )
                baseline = top - ascent - i * step
                lines.append((x, height - baseline if flip else baseline, row, prop, item.color))
        self.placed = placed
        if cards:
            _polygons(self, cards, self.card, self.card_alpha).draw(renderer)
        gc = renderer.new_gc()
        try:
            for x, y, row, prop, color in lines:
                gc.set_foreground(color)
                renderer.draw_text(gc, x, y, row, prop, 0.0)
        finally:
            gc.restore()


_NUDGES = (0, 1, -1, 2, -2, 3, -3, 4, -4)  # label heights to move by, nearest first


def _clear_place(box: Bbox, top: float, taken: list[Bbox], within: Bbox) -> tuple[float, Bbox]:
    """The nearest vertical place for ``box`` (whose text's top is at ``top``) that overlaps
    none of ``taken`` and, when moved, stays ``within`` the Axes; the original place when none
    of the nudges is clear."""
    step = box.height + 1.0
    for k in _NUDGES:
        moved = box.translated(0, k * step)
        if k and (moved.y0 < within.y0 or moved.y1 > within.y1):
            continue
        if not any(_intersect(moved, other) for other in taken):
            return top + k * step, moved
    return top, box


def _intersect(a: Bbox, b: Bbox) -> bool:
    return min(a.x1, b.x1) - max(a.x0, b.x0) >= 1.0 and min(a.y1, b.y1) - max(a.y0, b.y0) >= 1.0


_PROPS: dict[tuple[float, str], FontProperties] = {}
_EXTENTS: dict[tuple[str, float, str, float, str], tuple[float, float, float]] = {}


def _prop(size: float, weight: str) -> FontProperties:
    key = (size, weight)
    if key not in _PROPS:
        _PROPS[key] = FontProperties(family=_FAMILY, size=size, weight=weight)
    return _PROPS[key]


def _extent(renderer: Any, text: str, prop: FontProperties) -> tuple[float, float, float]:
    """Width, height and descent of one line in the renderer's pixels, measured once per
    kind of renderer, resolution, text and font."""
    key = (
        type(renderer).__name__,
        renderer.points_to_pixels(1.0),
        text,
        prop.get_size(),
        str(prop.get_weight()),
    )
    found = _EXTENTS.get(key)
    if found is None:
        if len(_EXTENTS) > 20000:  # a long session: start over rather than grow without end
            _EXTENTS.clear()
        found = _EXTENTS[key] = renderer.get_text_width_height_descent(text, prop, ismath=False)
    return found


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
