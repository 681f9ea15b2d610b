"""The transaction coordinator's state machine, drawn from the same table the coordinator
runs (:mod:`kafkalab.protocol.txn_states`), so the picture cannot drift from the code."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from matplotlib.patches import Arc, FancyBboxPatch

from kafkalab.protocol.txn_states import TXN_STATES, TXN_TRANSITIONS, Transition
from kafkalab.viz._style import INK, MUTED, OKABE_ITO, PAPER, new_axes, style

__all__ = ["describe_txn_states", "draw_txn_states"]

# Where each state sits: the happy path left to right, commit above, abort below. A state the
# table gains later and this map lacks is placed on a row of its own, so it is never missing.
_POSITIONS: dict[str, tuple[float, float]] = {
    "Empty": (0.0, 2.0),
    "Ongoing": (3.0, 2.0),
    "PrepareCommit": (6.0, 3.4),
    "CompleteCommit": (9.6, 3.4),
    "PrepareAbort": (6.0, 0.6),
    "CompleteAbort": (9.6, 0.6),
    "PrepareEpochFence": (3.0, -0.8),
    "Dead": (12.6, 2.0),
}
# How far an edge bows (matplotlib's arc3 rad): long edges go around the boxes in between.
_BENDS: dict[tuple[str, str], float] = {
    ("CompleteCommit", "Empty"): 0.42,
    ("CompleteCommit", "Ongoing"): 0.5,
    ("CompleteAbort", "Empty"): -0.62,
    ("CompleteAbort", "Ongoing"): -0.5,
    ("Empty", "Dead"): 0.95,
}
_BOX_W, _BOX_H = 2.1, 0.62


def _positions(states: Iterable[str]) -> dict[str, tuple[float, float]]:
    out, extra = {}, 0
    for s in states:
        if s in _POSITIONS:
            out[s] = _POSITIONS[s]
        else:
            out[s] = (2.6 * extra, -2.0)
            extra += 1
    return out


def _edges(transitions: Iterable[Transition]) -> dict[tuple[str, str], list[str]]:
    edges: dict[tuple[str, str], list[str]] = {}
    for t in transitions:
        edges.setdefault((t.source, t.target), []).append(t.trigger)
    return edges


def draw_txn_states(
    *, ax: Any = None, highlight: str | None = None, title: str | None = None
) -> Any:
    """Draw every transaction state and every allowed transition, labelled by its trigger.
    ``highlight`` marks one state (a transaction's current state). Returns the Axes."""
    if highlight is not None and highlight not in TXN_STATES:
        raise ValueError(f"highlight={highlight!r} is not a state: use one of {TXN_STATES}")
    pos = _positions(TXN_STATES)
    with style():
        if ax is None:
            ax = new_axes(11.5, 6.4)
        ax.set_facecolor(PAPER)
        for (src, dst), triggers in _edges(TXN_TRANSITIONS).items():
            _edge(ax, pos[src], pos[dst], "\n".join(triggers), _BENDS.get((src, dst)))
        for state, (x, y) in pos.items():
            _node(ax, state, x, y, state == highlight)
        xs = [p[0] for p in pos.values()]
        ys = [p[1] for p in pos.values()]
        ax.set_xlim(min(xs) - 1.3, max(xs) + 1.3)
        ax.set_ylim(min(ys) - 3.2, max(ys) + 2.2)
        ax.set_aspect("equal")
        ax.axis("off")
        ax.set_title(
            title or "Transaction states (each move is written to __transaction_state first)",
            loc="left",
        )
    return ax


def _node(ax: Any, state: str, x: float, y: float, current: bool) -> None:
    color = OKABE_ITO["yellow"] if current else "#eef6fb"
    ax.add_patch(
        FancyBboxPatch(
            (x - _BOX_W / 2, y - _BOX_H / 2),
            _BOX_W,
            _BOX_H,
            boxstyle="round,pad=0.05",
            facecolor=color,
            edgecolor=INK,
            linewidth=2.4 if current else 1.2,
            hatch="//" if current else "",
            zorder=3,
        )
    )
    label = f"{state}\n(current)" if current else state
    ax.text(x, y, label, ha="center", va="center", fontsize=8.5, fontweight="bold", zorder=4)


def _border(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    """Where the straight line from box centre ``a`` towards ``b`` leaves the box."""
    dx, dy = b[0] - a[0], b[1] - a[1]
    t = min(
        (_BOX_W / 2 + 0.08) / abs(dx) if dx else float("inf"),
        (_BOX_H / 2 + 0.08) / abs(dy) if dy else float("inf"),
    )
    return a[0] + t * dx, a[1] + t * dy


def _edge(
    ax: Any, a: tuple[float, float], b: tuple[float, float], text: str, rad: float | None
) -> None:
    if a == b:  # a self-loop above the box
        x, y = a
        ax.add_patch(
            Arc(
                (x, y + _BOX_H / 2 + 0.12),
                0.7,
                0.55,
                theta1=-10,
                theta2=190,
                color=MUTED,
                linewidth=1.2,
                zorder=2,
            )
        )
        _edge_label(ax, x, y + _BOX_H / 2 + 0.45, text, "bottom")
        return
    backwards = b[0] < a[0]
    rad = rad if rad is not None else (0.0 if not backwards else 0.3)
    # Leave and enter each box towards arc3's control point, where a bent edge really goes.
    cdx, cdy = b[0] - a[0], b[1] - a[1]
    control = ((a[0] + b[0]) / 2 + rad * cdy, (a[1] + b[1]) / 2 - rad * cdx)
    start, end = _border(a, control), _border(b, control)
    ax.annotate(
        "",
        xy=end,
        xytext=start,
        arrowprops={
            "arrowstyle": "-|>",
            "color": MUTED if backwards else INK,
            "linewidth": 1.1,
            "linestyle": "--" if backwards else "-",
            "shrinkA": 0,
            "shrinkB": 0,
            "connectionstyle": f"arc3,rad={rad}",
        },
        zorder=2,
    )
    # The apex of arc3's quadratic curve: half way from the chord's middle to its control point.
    dx, dy = end[0] - start[0], end[1] - start[1]
    mx, my = (start[0] + end[0]) / 2 + rad * dy / 2, (start[1] + end[1]) / 2 - rad * dx / 2
    if rad == 0 and abs(dy) < 0.01:  # a short horizontal edge: the label sits above it
        _edge_label(ax, mx, my + _BOX_H / 2 + 0.04, text, "bottom")
    else:
        _edge_label(ax, mx, my, text, "center")


def _edge_label(ax: Any, x: float, y: float, text: str, va: str) -> None:
    box = {"boxstyle": "round,pad=0.1", "facecolor": PAPER, "edgecolor": "none", "alpha": 0.9}
    ax.text(x, y, text, ha="center", va=va, fontsize=6.5, bbox=box, zorder=5)


def describe_txn_states() -> str:
    """The state machine as a table: every allowed move with its trigger."""
    lines = ["from | trigger | to"]
    lines += [f"{t.source} | {t.trigger} | {t.target}" for t in TXN_TRANSITIONS]
    return "\n".join(lines)
