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

from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from kafkalab.sim.cluster import ReplicaView
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

__all__ = ["describe_logs", "draw_logs", "draw_truncation", "removed_records"]

ROW = 1.7  # vertical distance between replica rows (room for the LEO and HW labels)
CELL_H = 0.72
MAX_CELLS = 32  # longer logs are drawn as one bar per leader epoch


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
        ticks, labels, epochs = [], [], set()
        flags = {"ghost": False, "unflushed": False}
        y = 0.0
        for name, snapshot, previous in groups:
            if y > 0:
                ax.axhline(y - ROW / 2 + 0.05, color=MUTED, linewidth=0.8, linestyle="--")
            isr = _leader_isr(snapshot)
            gone = removed_records(previous, snapshot)
            for broker, v in sorted(snapshot.items()):
                _row(ax, v, y, cells, gone.get(broker, []), epochs, flags)
                label = f"broker {broker}\n{_role(v)}" + ("\nin ISR" if broker in isr else "")
                ticks.append(y)
                labels.append(f"{name}: {label}" if name else label)
                y += ROW
            y += 0.3 if name else 0.0
        _axes_frame(ax, ticks, labels, width, cells, title)
        if legend:
            _legend(ax, sorted(epochs), flags)
    return ax


def _row(
    ax: Any,
    v: ReplicaView,
    y: float,
    cells: bool,
    gone: list[tuple[int, str, int]],
    epochs: set[int],
    flags: dict[str, bool],
) -> None:
    alpha = 1.0 if v.running else 0.55
    if cells:
        for offset, value, epoch in v.records:
            unflushed = v.running and offset >= v.flushed
            flags["unflushed"] |= unflushed
            _cell(ax, offset, y, value, epoch, alpha, ":" if unflushed else "-")
            epochs.add(epoch)
        for offset, value, _ in gone:
            _ghost(ax, offset, y, value)
            flags["ghost"] = True
    else:
        for start, end, epoch in _epoch_runs(v.records):
            _bar(ax, start, end, y, epoch, alpha)
            epochs.add(epoch)
        if gone:
            _bar_ghost(ax, gone[0][0], gone[-1][0] + 1, y)
            flags["ghost"] = True
    _markers(ax, v, y)


def _cell(ax: Any, offset: int, y: float, value: str, epoch: int, alpha: float, ls: str) -> None:
    ax.add_patch(
        Rectangle(
            (offset + 0.04, y - CELL_H / 2),
            0.92,
            CELL_H,
            facecolor=epoch_color(epoch),
            hatch=epoch_hatch(epoch),
            edgecolor=INK,
            linewidth=1.0,
            linestyle=ls,
            alpha=alpha,
        )
    )
    text = value if len(value) <= 6 else value[:5] + "…"
    box = {"boxstyle": "round,pad=0.12", "facecolor": PAPER, "edgecolor": "none", "alpha": 0.85}
    ax.text(offset + 0.5, y - 0.08, text, ha="center", va="center", fontsize=8, bbox=box)
    ax.text(offset + 0.5, y + 0.22, f"e{epoch}", ha="center", va="center", fontsize=6.5, bbox=box)


def _ghost(ax: Any, offset: int, y: float, value: str) -> None:
    ax.add_patch(
        Rectangle(
            (offset + 0.04, y - CELL_H / 2),
            0.92,
            CELL_H,
            facecolor="#f0f0f0",
            edgecolor=MUTED,
            linewidth=1.0,
            linestyle="--",
        )
    )
    ax.text(offset + 0.5, y - 0.08, value[:6], ha="center", va="center", fontsize=8, color=MUTED)
    ax.plot([offset + 0.2, offset + 0.8], [y - 0.08, y - 0.08], color=MUTED, linewidth=1.2)
    ax.text(offset + 0.5, y + 0.22, "removed", ha="center", va="center", fontsize=6, color=MUTED)


def _epoch_runs(records: tuple[tuple[int, str, int], ...]) -> list[tuple[int, int, int]]:
    runs: list[tuple[int, int, int]] = []
    for offset, _, epoch in records:
        if runs and runs[-1][2] == epoch and runs[-1][1] == offset:
            runs[-1] = (runs[-1][0], offset + 1, epoch)
        else:
            runs.append((offset, offset + 1, epoch))
    return runs


def _bar(ax: Any, start: int, end: int, y: float, epoch: int, alpha: float) -> None:
    ax.add_patch(
        Rectangle(
            (start, y - CELL_H / 2),
            end - start,
            CELL_H,
            facecolor=epoch_color(epoch),
            hatch=epoch_hatch(epoch),
            edgecolor=INK,
            alpha=alpha,
        )
    )
    box = {"boxstyle": "round,pad=0.12", "facecolor": PAPER, "edgecolor": "none", "alpha": 0.85}
    label = f"e{epoch}: offsets {start}–{end - 1}"
    ax.text((start + end) / 2, y, label, ha="center", va="center", fontsize=7, bbox=box)


def _bar_ghost(ax: Any, start: int, end: int, y: float) -> None:
    ax.add_patch(
        Rectangle(
            (start, y - CELL_H / 2),
            end - start,
            CELL_H,
            facecolor="#f0f0f0",
            edgecolor=MUTED,
            linestyle="--",
        )
    )
    ax.text(
        (start + end) / 2,
        y,
        f"removed {start}–{end - 1}",
        ha="center",
        va="center",
        fontsize=7,
        color=MUTED,
    )


def _markers(ax: Any, v: ReplicaView, y: float) -> None:
    top, bottom = y - CELL_H / 2, y + CELL_H / 2
    ax.plot(
        [v.hw, v.hw], [top - 0.12, bottom + 0.12], color=INK, linewidth=3.0, solid_capstyle="butt"
    )
    ax.text(
        v.hw, bottom + 0.2, f"HW {v.hw}", ha="center", va="top", fontsize=7.5, fontweight="bold"
    )
    ax.plot([v.leo], [top - 0.1], marker="v", markersize=8, color=INK, linestyle="none")
    ax.text(v.leo, top - 0.25, f"LEO {v.leo}", ha="center", va="bottom", fontsize=7.5)


def _axes_frame(
    ax: Any, ticks: list[float], labels: list[str], width: int, cells: bool, title: str
) -> None:
    right = width + 1 if cells else max(width, 1) * 1.06
    ax.set_xlim(-0.6, right)
    ax.set_ylim((ticks[-1] if ticks else 0) + ROW / 2 + 0.2, -ROW / 2 - 0.2)
    ax.set_yticks(ticks, labels)
    ax.tick_params(axis="y", length=0)
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    if cells:
        ax.set_xticks([i + 0.5 for i in range(width)], [str(i) for i in range(width)])
    ax.set_xlabel("offset")
    for side in ("right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    ax.set_title(title, loc="left", y=1.0, pad=36)  # a fixed place: no layout search


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
                facecolor="#f0f0f0",
                edgecolor=MUTED,
                linestyle="--",
                label="removed since the previous step",
            )
        )
    legend_below(ax, handles)
