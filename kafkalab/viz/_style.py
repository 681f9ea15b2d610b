"""One fixed look for every picture: the Okabe-Ito palette, hatching, fonts, a white card.

Colour is never the only cue: every leader epoch also has its own hatch pattern and every
cell, line and arrow carries a text label. Pictures are drawn on a white card with dark text, so
they read the same in a light or a dark notebook theme, and the rcParams are set only inside
:func:`style` (a context), so a learner's own matplotlib settings neither change kafkalab's
pictures nor are changed by them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import matplotlib
from cycler import cycler

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

__all__ = [
    "EPOCH_COLORS",
    "EPOCH_HATCHES",
    "INK",
    "OKABE_ITO",
    "PAPER",
    "epoch_color",
    "epoch_hatch",
    "legend_below",
    "new_axes",
    "render",
    "style",
]

# Okabe & Ito (2008), "Color Universal Design": distinguishable with every common colour-vision
# deficiency.
OKABE_ITO: dict[str, str] = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "bluish_green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish_purple": "#CC79A7",
}
INK = "#1a1a1a"  # text and outlines
PAPER = "#ffffff"  # every picture sits on a white card, in light and dark themes alike
MUTED = "#8c8c8c"  # stopped brokers, removed records

# Light fills only, so that dark text on them stays readable (contrast >= 4.5:1).
EPOCH_COLORS: tuple[str, ...] = (
    OKABE_ITO["sky_blue"],
    OKABE_ITO["orange"],
    OKABE_ITO["bluish_green"],
    OKABE_ITO["reddish_purple"],
    OKABE_ITO["yellow"],
)
EPOCH_HATCHES: tuple[str, ...] = ("", "//", "..", "xx", "\\\\", "++", "oo", "--")

_RC: dict[RcKeyType, Any] = {
    "font.family": "DejaVu Sans",  # ships with matplotlib: the same glyphs on every machine
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "text.color": INK,
    "axes.labelcolor": INK,
    "axes.edgecolor": INK,
    "xtick.color": INK,
    "ytick.color": INK,
    "axes.facecolor": PAPER,
    "figure.facecolor": PAPER,
    "savefig.facecolor": PAPER,
    "legend.facecolor": PAPER,
    "legend.edgecolor": MUTED,
    "legend.framealpha": 1.0,
    "hatch.color": INK,
    "hatch.linewidth": 0.6,
    "axes.prop_cycle": cycler(
        color=[OKABE_ITO[k] for k in ("blue", "orange", "bluish_green", "vermillion")]
    ),
    "lines.linewidth": 1.6,
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "svg.hashsalt": "kafkalab",  # stable ids in SVG output
    "path.simplify": False,
    "axes.grid": False,
}


@contextmanager
def style() -> Iterator[None]:
    """Draw with kafkalab's fixed style; the caller's rcParams are restored afterwards.

    Like ``matplotlib.rc_context``, except that ``interactive`` is left as it is found on exit:
    Jupyter's inline backend switches interactive mode on when pyplot first makes a figure,
    which may happen in here, and undoing that would stop later figures from showing."""
    saved = dict(matplotlib.rcParams.copy())
    for key in ("backend", "interactive"):
        saved.pop(key, None)
    try:
        matplotlib.rcParams.update(_RC)
        yield
    finally:
        dict.update(matplotlib.rcParams, saved)


def epoch_color(epoch: int) -> str:
    """The fill of records written in ``epoch`` (negative epochs: unknown, grey)."""
    if epoch < 0:
        return MUTED
    return EPOCH_COLORS[epoch % len(EPOCH_COLORS)]


def epoch_hatch(epoch: int) -> str:
    """The hatch of records written in ``epoch``: a second cue besides colour."""
    if epoch < 0:
        return ""
    return EPOCH_HATCHES[epoch % len(EPOCH_HATCHES)]


def new_axes(width: float, height: float) -> Any:
    """A fresh Axes on its own figure (pyplot's, so a notebook shows it)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    fig.patch.set_facecolor(PAPER)
    return ax


def render(figure_or_ax: Any, format: str = "svg") -> bytes:
    """The picture as bytes ("svg" or "png"), the same bytes every time: no date in the file,
    stable SVG ids, and SVG text kept as text (light to make, and a screen reader can read
    it)."""
    if format not in ("svg", "png"):
        raise ValueError(f"format={format!r} is not allowed: use 'svg' or 'png'")
    figure = getattr(figure_or_ax, "figure", figure_or_ax)
    import io

    out = io.BytesIO()
    metadata: dict[str, Any] = {"Date": None} if format == "svg" else {"Software": None}
    with style(), matplotlib.rc_context({"svg.fonttype": "none"}):
        figure.savefig(out, format=format, metadata=metadata)
    return out.getvalue()


def legend_below(ax: Any, handles: list[Any], ncols: int = 3) -> None:
    """The key of a picture, in up to ``ncols`` columns under its Axes."""
    ax.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(0.0, 0.0),
        ncols=min(ncols, len(handles)),
        frameon=False,
    )
