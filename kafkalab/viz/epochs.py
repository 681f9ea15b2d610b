"""The leader epoch cache of each replica: which offset each leader epoch starts at.

A follower uses it (KIP-101) to ask the leader where its latest epoch ends, instead of trusting
its own HW. Each epoch is drawn as a bar from its start offset to the next epoch's start (or the
replica's LEO), filled and hatched like the records it holds in the log drawing.
"""

from __future__ import annotations

from typing import Any

from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator

from kafkalab.viz._sources import as_snapshot
from kafkalab.viz._style import INK, PAPER, epoch_color, epoch_hatch, new_axes, style

__all__ = ["describe_epoch_cache", "draw_epoch_cache"]


def _entries(epoch_cache: tuple[tuple[int, int], ...], leo: int) -> list[tuple[int, int, int]]:
    """(epoch, start, end) per cache entry; the last epoch ends at the LEO."""
    out = []
    for i, (epoch, start) in enumerate(epoch_cache):
        end = epoch_cache[i + 1][1] if i + 1 < len(epoch_cache) else leo
        out.append((epoch, start, end))
    return out


def draw_epoch_cache(
    source: Any, *, ax: Any = None, partition: int | str | None = None, title: str | None = None
) -> Any:
    """Draw each replica's leader epoch cache (a Cluster or a snapshot); returns the Axes."""
    snapshot = as_snapshot(source, partition)
    brokers = sorted(snapshot)
    right = max([v.leo for v in snapshot.values()] + [1])
    with style():
        if ax is None:
            ax = new_axes(7.0, 1.2 + 0.6 * len(brokers))
        ax.set_facecolor(PAPER)
        for row, b in enumerate(brokers):
            v = snapshot[b]
            entries = _entries(v.epoch_cache, v.leo)
            for epoch, start, end in entries:
                width = max(end - start, 0.15 * right / 10)
                ax.add_patch(
                    Rectangle(
                        (start, row - 0.3),
                        width,
                        0.6,
                        facecolor=epoch_color(epoch),
                        hatch=epoch_hatch(epoch),
                        edgecolor=INK,
                    )
                )
                ax.text(
                    start + width / 2,
                    row,
                    f"epoch {epoch} from {start}",
                    ha="center",
                    va="center",
                    fontsize=7.5,
                    bbox={
                        "boxstyle": "round,pad=0.1",
                        "facecolor": PAPER,
                        "edgecolor": "none",
                        "alpha": 0.85,
                    },
                )
            if not entries:
                ax.text(0, row, "empty cache", va="center", fontsize=8)
        ax.set_yticks(range(len(brokers)), [f"broker {b}" for b in brokers])
        ax.set_ylim(len(brokers) - 0.4, -0.6)
        ax.set_xlim(0, right * 1.05)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("offset")
        ax.set_title(title or "Leader epoch cache (epoch -> start offset)", loc="left")
    return ax


def describe_epoch_cache(source: Any, *, partition: int | str | None = None) -> str:
    """The epoch caches as text: one line per replica, ``epoch e: offsets start..end``."""
    snapshot = as_snapshot(source, partition)
    lines = ["broker | LEO | leader epoch cache"]
    for b, v in sorted(snapshot.items()):
        entries = _entries(v.epoch_cache, v.leo)
        text = "; ".join(f"epoch {e} starts at {s} (ends at {end})" for e, s, end in entries)
        lines.append(f"{b} | {v.leo} | {text or 'empty'}")
    return "\n".join(lines)
