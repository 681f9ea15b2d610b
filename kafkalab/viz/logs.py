"""The replica logs side by side: one row of cells per replica, like the KIP-101 figures.

Each cell is a record at its offset, filled and hatched by the leader epoch it was written in.
A bar marks each replica's high watermark (HW: records left of it are committed as far as that
replica knows) and a triangle its log end offset (LEO: where the next record goes). Records a
replica held one step earlier and has lost since are drawn as grey dashed ghosts, so a
truncation is visible at a glance.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from matplotlib.collections import LineCollection, PatchCollection
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from kafkalab.sim.views import ReplicaView
from kafkalab.viz._artists import Labels
from kafkalab.viz._sources import as_snapshot
from kafkalab.viz._style import (
    INK,
    MUTED,
    PAPER,
    epoch_color,
    epoch_hatch,
    legend_below,
    new_axes,
    style,
)

__all__ = [
    "describe_logs",
    "draw_logs",
    "draw_truncation",
    "removed_records",
    "replica_labels",
]

ROW = 1.7  # vertical distance between replica rows (room for the LEO and HW labels)
CELL_H = 0.72
MAX_CELLS = 32  # longer logs are drawn as one bar per leader epoch
GHOST = "#f0f0f0"  # the fill of a removed record
NARROW_FIGURE_IN = 7.0  # a log picture narrower than this puts a long key in two columns


def draw_logs(
    source: Any,
    *,
    ax: Any = None,
    partition: int | str | None = None,
    previous: Mapping[int, ReplicaView] | None = None,
    title: str | None = None,
    max_cells: int = MAX_CELLS,
    legend: bool = True,
) -> Any:
    """Draw every replica's log of ``partition`` (default: partition 0) and return the Axes.

    ``source`` is a Cluster or a snapshot (``cluster.replicas_view()``). ``previous``, an earlier
    snapshot, adds ghosts for the records removed since. Logs longer than ``max_cells`` records
    are drawn as one bar per leader epoch instead of one cell per record. ``legend=False``
    leaves the key out (a widget shows it once, beside the picture)."""
    snapshot = as_snapshot(source, partition)
    return _draw(
        [("", snapshot, previous or {})],
        ax=ax,
        title=title or "Replica logs",
        max_cells=max_cells,
        legend=legend,
    )


def draw_truncation(
    before: Any,
    after: Any,
    *,
    ax: Any = None,
    partition: int | str | None = None,
    title: str | None = None,
    max_cells: int = MAX_CELLS,
    legend: bool = True,
) -> Any:
    """Before and after one change, stacked: the records a replica lost appear as ghosts in the
    "after" rows. ``before`` and ``after`` are Clusters or snapshots."""
    old = as_snapshot(before, partition)
    new = as_snapshot(after, partition)
    return _draw(
        [("before", old, {}), ("after", new, old)],
        ax=ax,
        title=title or "Before and after",
        max_cells=max_cells,
        legend=legend,
    )


def removed_records(
    previous: Mapping[int, ReplicaView], current: Mapping[int, ReplicaView]
) -> dict[int, list[tuple[int, str, int]]]:
    """Per broker, the records (offset, value, leader epoch) ``previous`` held beyond the
    current log end: what a truncation (or a lost page cache) removed."""
    out: dict[int, list[tuple[int, str, int]]] = {}
    for broker, view in current.items():
        old = previous.get(broker)
        if old is None:
            continue
        gone = [r for r in old.records if r[0] >= view.leo]
        if gone:
            out[broker] = gone
    return out


def describe_logs(
    source: Any,
    *,
    partition: int | str | None = None,
    previous: Mapping[int, ReplicaView] | None = None,
) -> str:
    """The same picture as text: one line per replica with its role, LEO, HW, epoch cache and
    records (``offset:value (epoch)``), then what was removed since ``previous``."""
    snapshot = as_snapshot(source, partition)
    isr = _leader_isr(snapshot)
    lines = ["broker | role | in ISR | LEO | HW | records (offset:value, leader epoch)"]
    for broker, v in sorted(snapshot.items()):
        records = ", ".join(f"{o}:{val} (e{e})" for o, val, e in v.records) or "empty"
        lines.append(
            f"{broker} | {_role(v)} | {'yes' if broker in isr else 'no'} | {v.leo} | {v.hw} | "
            f"{records}"
        )
    for broker, gone in sorted(removed_records(previous or {}, snapshot).items()):
        what = ", ".join(f"{o}:{val}" for o, val, _ in gone)
        lines.append(f"broker {broker} lost {what} since the previous step")
    return "\n".join(lines)


# ---- drawing --------------------------------------------------------------------------------


def _role(v: ReplicaView) -> str:
    if not v.running:
        return "stopped (disk)"
    if v.role == "leader":
        return f"leader, epoch {v.leader_epoch}"
    return v.role or "no role yet"


def _leader_isr(snapshot: Mapping[int, ReplicaView]) -> tuple[int, ...]:
    for v in snapshot.values():
        if v.running and v.role == "leader":
            return v.isr
    return ()


class _Pen:
    """What one drawing collects, added to the Axes at the end as a few collections: one
    artist per leader epoch instead of one per record is what keeps a redraw fast."""

    def __init__(self) -> None:
        self.boxes: dict[tuple[int, float], list[tuple[float, float, float, str]]] = {}
        self.ghosts: list[tuple[float, float, float]] = []
        self.labels = Labels(card=PAPER, pad=1.0)  # on a hatched fill: each needs a card
        self.notes = Labels()  # HW, LEO and what was removed
        self.hw: list[list[tuple[float, float]]] = []
        self.leo: list[tuple[float, float]] = []

    def box(self, epoch: int, alpha: float, x: float, y: float, width: float, ls: str) -> None:
        self.boxes.setdefault((epoch, alpha), []).append((x, y, width, ls))

    def finish(self, ax: Any) -> None:
        for (epoch, alpha), boxes in sorted(self.boxes.items()):
            ax.add_collection(
                PatchCollection(
                    [Rectangle((x, y - CELL_H / 2), w, CELL_H) for x, y, w, _ in boxes],
                    facecolor=epoch_color(epoch),
                    hatch=epoch_hatch(epoch),
                    edgecolor=INK,
                    linewidth=1.0,
                    linestyle=[ls for *_, ls in boxes],
                    alpha=alpha,
                    zorder=1,
                    label=f"leader epoch {epoch}",
                ),
                autolim=False,
            )
        if self.ghosts:
            ax.add_collection(
                PatchCollection(
                    [Rectangle((x, y - CELL_H / 2), w, CELL_H) for x, y, w in self.ghosts],
                    facecolor=GHOST,
                    edgecolor=MUTED,
                    linewidth=1.0,
                    linestyle="--",
                    zorder=1,
                    label="removed",
                ),
                autolim=False,
            )
        if self.hw:
            ax.add_collection(
                LineCollection(self.hw, colors=INK, linewidths=3.0, capstyle="butt", zorder=4),
                autolim=False,
            )
        if self.leo:
            xs, ys = zip(*self.leo, strict=True)
            ax.plot(xs, ys, marker="v", markersize=8, color=INK, linestyle="none", zorder=4)
        for labels in (self.labels, self.notes):
            labels.set_zorder(4)
            ax.add_artist(labels)


def _draw(
    groups: list[tuple[str, Mapping[int, ReplicaView], Mapping[int, ReplicaView]]],
    *,
    ax: Any,
    title: str,
    max_cells: int,
    legend: bool,
) -> Any:
    rows = sum(len(g[1]) for g in groups)
    width = max(
        [v.leo for _, snap, prev in groups for v in (*snap.values(), *prev.values())] or [0]
    )
    cells = width <= max_cells
    with style():
        if ax is None:
            cols = max(width + 1, 5) if cells else 12
            ax = new_axes(min(13.0, 2.4 + 0.7 * cols), 1.7 + 0.95 * rows)
        ax.set_facecolor(PAPER)
        pen = _Pen()
        ticks, labels = [], []
        flags = {"ghost": False, "unflushed": False}
        y = 0.0
        for name, snapshot, previous in groups:
            if y > 0:
                ax.axhline(y - ROW / 2 + 0.05, color=MUTED, linewidth=0.8, linestyle="--")
            isr = _leader_isr(snapshot)
            gone = removed_records(previous, snapshot)
            for broker, v in sorted(snapshot.items()):
                _row(pen, v, y, cells, gone.get(broker, []), flags)
                label = f"broker {broker}\n{_role(v)}" + ("\nin ISR" if broker in isr else "")
                ticks.append(y)
                labels.append(f"{name}: {label}" if name else label)
                y += ROW
            y += 0.3 if name else 0.0
        pen.finish(ax)
        _axes_frame(ax, ticks, labels, width, cells, title)
        if legend:
            _legend(ax, sorted({epoch for epoch, _ in pen.boxes}), flags)
    return ax


def replica_labels(ax: Any) -> list[str]:
    """The labels down the left of a log drawing, one per replica row (top to bottom)."""
    return [t.get_text() for t in ax.texts if t.get_gid() == "replica"]


def _row(
    pen: _Pen,
    v: ReplicaView,
    y: float,
    cells: bool,
    gone: list[tuple[int, str, int]],
    flags: dict[str, bool],
) -> None:
    alpha = 1.0 if v.running else 0.55
    if cells:
        for offset, value, epoch in v.records:
            unflushed = v.running and offset >= v.flushed
            flags["unflushed"] |= unflushed
            pen.box(epoch, alpha, offset + 0.04, y, 0.92, ":" if unflushed else "-")
            text = value if len(value) <= 6 else value[:5] + "…"
            pen.labels.add(offset + 0.5, y, f"{text}\ne{epoch}")
        for offset, value, _ in gone:
            pen.ghosts.append((offset + 0.04, y, 0.92))
            pen.notes.add(offset + 0.5, y, f"{value[:6]}\nremoved", size=6.5, color=MUTED)
            flags["ghost"] = True
    else:
        for start, end, epoch in _epoch_runs(v.records):
            pen.box(epoch, alpha, start, y, end - start, "-")
            pen.labels.add((start + end) / 2, y, f"e{epoch}: offsets {start}–{end - 1}", size=7)
        if gone:
            start, end = gone[0][0], gone[-1][0] + 1
            pen.ghosts.append((start, y, end - start))
            label = f"removed {start}–{end - 1}"
            pen.notes.add((start + end) / 2, y, label, size=7, color=MUTED)
            flags["ghost"] = True
    _markers(pen, v, y)


def _epoch_runs(records: tuple[tuple[int, str, int], ...]) -> list[tuple[int, int, int]]:
    runs: list[tuple[int, int, int]] = []
    for offset, _, epoch in records:
        if runs and runs[-1][2] == epoch and runs[-1][1] == offset:
            runs[-1] = (runs[-1][0], offset + 1, epoch)
        else:
            runs.append((offset, offset + 1, epoch))
    return runs


def _markers(pen: _Pen, v: ReplicaView, y: float) -> None:
    top, bottom = y - CELL_H / 2, y + CELL_H / 2
    pen.hw.append([(v.hw, top - 0.12), (v.hw, bottom + 0.12)])
    pen.notes.add(v.hw, bottom + 0.2, f"HW {v.hw}", weight="bold", va="top")
    pen.leo.append((v.leo, top - 0.1))
    pen.notes.add(v.leo, top - 0.25, f"LEO {v.leo}", va="bottom")


def _axes_frame(
    ax: Any, ticks: list[float], labels: list[str], width: int, cells: bool, title: str
) -> None:
    """Limits, and the labels an axis would draw, as plain text: an axis lays out every tick
    label on every draw, which costs more than the records themselves."""
    right = width + 1 if cells else max(width, 1) * 1.06
    ax.set_xlim(-0.6, right)
    ax.set_ylim((ticks[-1] if ticks else 0) + ROW / 2 + 0.2, -ROW / 2 - 0.2)
    ax.set_axis_off()
    left = ax.get_yaxis_transform()  # x in Axes units, y in data
    for y, label in zip(ticks, labels, strict=True):
        ax.text(-0.01, y, label, transform=left, ha="right", va="center", fontsize=8, gid="replica")
    above = ax.get_xaxis_transform()  # x in data, y in Axes units
    offsets = Labels()  # the offsets over the cells, at the top edge of the Axes
    ax.add_artist(offsets)
    if cells and width:
        for i in range(width):
            offsets.add(i + 0.5, -ROW / 2 - 0.2, str(i), size=8, va="bottom")
        ax.text(-0.1, 1.0, "offset", transform=above, ha="right", va="bottom", fontsize=8)
    ax.set_title(title, loc="left", y=1.0, pad=16)  # a fixed place: no layout search


def _legend(ax: Any, epochs: list[int], flags: dict[str, bool]) -> None:
    handles: list[Any] = [
        Patch(
            facecolor=epoch_color(e), hatch=epoch_hatch(e), edgecolor=INK, label=f"leader epoch {e}"
        )
        for e in epochs
    ]
    handles.append(Line2D([], [], color=INK, linewidth=3, label="HW (high watermark)"))
    handles.append(Line2D([], [], color=INK, marker="v", linestyle="none", label="LEO"))
    if flags["unflushed"]:
        handles.append(
            Patch(facecolor=PAPER, edgecolor=INK, linestyle=":", label="not yet flushed to disk")
        )
    if flags["ghost"]:
        handles.append(
            Patch(
                facecolor=GHOST,
                edgecolor=MUTED,
                linestyle="--",
                label="removed since the previous step",
            )
        )
    # Five keys in three columns are wider than a picture of a few records: the layout would
    # squeeze the logs to make room, so a narrow picture takes them in two.
    narrow = ax.figure.get_figwidth() < NARROW_FIGURE_IN and len(handles) > 4
    legend_below(ax, handles, ncols=2 if narrow else 3)
