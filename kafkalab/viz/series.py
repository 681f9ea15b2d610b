"""Time series read from a trace: each replica's HW and LEO, the ISR, and the cluster's
UnderReplicatedPartitions and OfflinePartitionsCount, sampled after every step (a stepped
lesson) or at every change of simulated time (a timed run)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from kafkalab.sim.trace import Event
from kafkalab.viz._sources import as_events
from kafkalab.viz._style import INK, OKABE_ITO, PAPER, new_axes, style

__all__ = [
    "Sample",
    "describe_series",
    "draw_isr",
    "draw_offsets",
    "replication_series",
]

_LINE_STYLES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "D", "v", "P")
_BROKER_COLORS = (
    OKABE_ITO["blue"],
    OKABE_ITO["orange"],
    OKABE_ITO["bluish_green"],
    OKABE_ITO["vermillion"],
    OKABE_ITO["reddish_purple"],
    OKABE_ITO["sky_blue"],
)


@dataclass(frozen=True)
class Sample:
    """The replication state at one point: ``x`` is a step number or a time in ms. A broker
    that is down has no HW or LEO in the sample."""

    x: int
    time_ms: int
    hw: dict[int, int]
    leo: dict[int, int]
    isr: tuple[int, ...]
    leader: int | None
    under_replicated: int
    offline: int


@dataclass
class _State:
    hw: dict[int, int] = field(default_factory=dict)
    leo: dict[int, int] = field(default_factory=dict)
    running: set[int] = field(default_factory=set)
    isr: tuple[int, ...] = ()
    leader: int | None = None
    urp: int = 0
    offline: int = 0


def _broker(e: Event) -> int | None:
    b = e.data.get("broker", e.node)
    return int(b) if str(b).isdigit() else None


def _apply(s: _State, e: Event, tp: str) -> None:
    kind, d = e.kind, e.data
    if d.get("tp", tp) != tp:
        return
    b = _broker(e)
    if kind == "hw" and b is not None:
        s.hw[b] = d["new"]
    elif kind in ("append", "replicate") and b is not None:
        s.leo[b] = d["last"] + 1
        s.running.add(b)
    elif kind == "truncate" and b is not None:
        s.leo[b] = d["to"]
        s.hw[b] = min(s.hw.get(b, 0), d["to"])
    elif kind == "restart" and b is not None:
        s.running.add(b)
        s.leo[b], s.hw[b] = d.get("leo", 0), d.get("hw", 0)
    elif kind in ("crash", "stopped") and b is not None:
        s.running.discard(b)
    elif kind in ("became_leader", "became_follower") and b is not None:
        s.running.add(b)
        s.leo.setdefault(b, d.get("leo", 0))
        s.hw.setdefault(b, d.get("hw", 0))
        if kind == "became_leader" and not s.isr:
            s.isr, s.leader = tuple(d["isr"]), b
    elif kind == "partition_state":
        s.isr, s.leader = tuple(d["isr"]), d["leader"]
    elif kind == "metrics":
        s.urp, s.offline = d["under_replicated_partitions"], d["offline_partitions"]


def replication_series(
    source: Any, *, tp: str = "demo-0", x: str = "auto"
) -> tuple[str, list[Sample]]:
    """Sample the replication state of partition ``tp`` from a trace. ``x`` is "step" (one
    sample after each step), "time" (one per distinct simulated time) or "auto" (steps for a
    lesson of at most 100 steps, time otherwise). Returns (the x kind, the samples)."""
    events = as_events(source)
    steps = sum(1 for e in events if e.kind == "step" and "index" in e.data)
    if x == "auto":
        x = "step" if 0 < steps <= 100 else "time"
    if x not in ("step", "time"):
        raise ValueError(f"x={x!r} is not allowed: use 'step', 'time' or 'auto'")
    state, samples, key = _State(), [], 0
    for e in events:
        new_key = e.data.get("index", key) if x == "step" and e.kind == "step" else key
        if x == "time":
            new_key = e.time_ms
        if new_key != key:
            samples.append(_sample(state, key, e.time_ms))
            key = new_key
        _apply(state, e, tp)
    samples.append(_sample(state, key, events[-1].time_ms if events else 0))
    return x, _dedupe(samples)


def _sample(s: _State, key: int, time_ms: int) -> Sample:
    return Sample(
        key,
        time_ms,
        {b: h for b, h in s.hw.items() if b in s.running},
        {b: v for b, v in s.leo.items() if b in s.running},
        s.isr,
        s.leader,
        s.urp,
        s.offline,
    )


def _dedupe(samples: list[Sample]) -> list[Sample]:
    out: list[Sample] = []
    for sample in samples:
        if out and out[-1].x == sample.x:
            out[-1] = sample
        else:
            out.append(sample)
    return out


def _brokers(samples: list[Sample]) -> list[int]:
    return sorted({b for s in samples for b in (*s.hw, *s.leo, *s.isr)})


def _x_label(kind: str) -> str:
    return "step" if kind == "step" else "simulated time (ms)"


def draw_offsets(
    source: Any, *, ax: Any = None, tp: str = "demo-0", x: str = "auto", title: str | None = None
) -> Any:
    """Each replica's HW (solid) and LEO (dashed) over steps or time; a gap means the broker
    was down. Returns the Axes."""
    kind, samples = replication_series(source, tp=tp, x=x)
    with style():
        if ax is None:
            ax = new_axes(7.5, 3.6)
        ax.set_facecolor(PAPER)
        xs = [s.x for s in samples]
        for i, b in enumerate(_brokers(samples)):
            color = _BROKER_COLORS[i % len(_BROKER_COLORS)]
            marker = _MARKERS[i % len(_MARKERS)]
            for what, ls in (("leo", "--"), ("hw", "-")):
                ys = [getattr(s, what).get(b, float("nan")) for s in samples]
                ax.step(
                    xs,
                    ys,
                    where="post",
                    color=color,
                    linestyle=ls,
                    marker=marker,
                    markersize=4 if len(xs) < 60 else 0,
                    label=f"broker {b} {what.upper()}",
                )
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(_x_label(kind))
        ax.set_ylabel("offset")
        ax.grid(True, color="#dddddd", linewidth=0.6)
        ax.set_title(title or "HW (solid) and LEO (dashed) of each replica", loc="left")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return ax


def draw_isr(
    source: Any, *, ax: Any = None, tp: str = "demo-0", x: str = "auto", title: str | None = None
) -> Any:
    """ISR membership of each replica (a bar while it is in the ISR, hatched while it leads,
    with a legend), with the ISR size, UnderReplicatedPartitions and OfflinePartitionsCount
    below. Returns the Axes."""
    kind, samples = replication_series(source, tp=tp, x=x)
    brokers = _brokers(samples)
    with style():
        if ax is None:
            ax = new_axes(7.5, 1.8 + 0.45 * (len(brokers) + 3))
        ax.set_facecolor(PAPER)
        xs = [s.x for s in samples]
        # a tail after the last sample, so that a change there (the ISR shrinking as the run
        # ends) is drawn inside the plot, not on its edge
        end = xs[-1] + (1 if kind == "step" else max(1, (xs[-1] - xs[0]) // 12))
        rows = [f"broker {b} in ISR" for b in brokers]
        for i, b in enumerate(brokers):
            for start, stop, leader in _spans(samples, b, end):
                color = OKABE_ITO["bluish_green"]
                ax.broken_barh(
                    [(start, stop - start)],
                    (i - 0.35, 0.7),
                    facecolors=color,
                    edgecolor=INK,
                    hatch="//" if leader else "",
                )
        base = len(brokers)
        counters = (
            ("ISR size", [len(s.isr) for s in samples], OKABE_ITO["blue"], "-"),
            (
                "under-replicated partitions",
                [s.under_replicated for s in samples],
                OKABE_ITO["orange"],
                "--",
            ),
            ("offline partitions", [s.offline for s in samples], OKABE_ITO["vermillion"], ":"),
        )
        top = max([1, *(max(v) for _, v, _, _ in counters)])
        for j, (name, values, color, ls) in enumerate(counters):
            y0 = base + j + 0.35
            ys = [y0 - 0.7 * v / top for v in values]
            ax.step([*xs, end], [*ys, ys[-1]], where="post", color=color, linestyle=ls)
            ax.text(end, ys[-1], f" {values[-1]}", va="center", fontsize=8, color=INK)
            rows.append(f"{name} (0–{top})")
        ax.set_yticks(range(len(rows)), rows)
        ax.set_ylim(len(rows) - 0.4, -0.6)
        ax.set_xlim(xs[0], end)
        ax.set_xlabel(_x_label(kind))
        ax.grid(True, axis="x", color="#dddddd", linewidth=0.6)
        ax.set_title(title or "ISR membership and partition health", loc="left")
        green = OKABE_ITO["bluish_green"]
        ax.legend(
            handles=[
                Patch(facecolor=green, edgecolor=INK, hatch="//", label="leader"),
                Patch(facecolor=green, edgecolor=INK, label="follower"),
            ],
            title=None,
            loc="lower right",
            bbox_to_anchor=(1.0, 1.0),
            ncols=2,
            frameon=False,
            fontsize=8,
            borderaxespad=0.2,
            handlelength=1.5,
        )
    return ax


def _spans(samples: list[Sample], broker: int, end: int) -> list[tuple[int, int, bool]]:
    spans: list[tuple[int, int, bool]] = []
    for i, s in enumerate(samples):
        stop = samples[i + 1].x if i + 1 < len(samples) else end
        if broker in s.isr:
            leader = s.leader == broker
            if spans and spans[-1][1] == s.x and spans[-1][2] == leader:
                spans[-1] = (spans[-1][0], stop, leader)
            else:
                spans.append((s.x, stop, leader))
    return spans


def describe_series(source: Any, *, tp: str = "demo-0", x: str = "auto") -> str:
    """The series as a table: one line per sample (``-`` marks a broker that is down)."""
    kind, samples = replication_series(source, tp=tp, x=x)
    brokers = _brokers(samples)
    head = [kind, "leader", "ISR", *(f"b{b} HW/LEO" for b in brokers), "URP", "offline"]
    lines = [" | ".join(head)]
    for s in samples:
        cells = [f"{s.hw[b]}/{s.leo[b]}" if b in s.hw and b in s.leo else "-" for b in brokers]
        lines.append(
            " | ".join(
                [
                    str(s.x),
                    str(s.leader),
                    str(list(s.isr)),
                    *cells,
                    str(s.under_replicated),
                    str(s.offline),
                ]
            )
        )
    return "\n".join(lines)
