"""A space-time (Lamport) diagram of the messages between clients, brokers, the controller and
ZooKeeper (or the KRaft controller quorum).

Each node is a vertical lane and time runs downwards in the order things happened (a stepped
lesson happens at one instant of simulated time, so the order is the clock that matters). An
arrow goes from a message's send to its delivery; a lost message ends in a cross halfway; a
crash cuts a lane (dotted until the restart).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from matplotlib.collections import LineCollection

from kafkalab.sim.trace import Event
from kafkalab.viz._artists import ArrowHeads, Labels
from kafkalab.viz._sources import as_events
from kafkalab.viz._style import INK, MUTED, OKABE_ITO, PAPER, legend_below, new_axes, style

if TYPE_CHECKING:
    from matplotlib.typing import LineStyleType

__all__ = [
    "CATEGORIES",
    "Flow",
    "clip_flow",
    "describe_messages",
    "draw_messages",
    "message_flow",
    "message_label",
]

# Message families: (colour, line style, legend label). The style is a second cue besides colour.
CATEGORIES: dict[str, tuple[str, LineStyleType, str]] = {
    "client": (OKABE_ITO["blue"], "-", "client (produce, metadata)"),
    "replication": (OKABE_ITO["bluish_green"], "-", "replication (fetch, epoch queries)"),
    "control": (OKABE_ITO["orange"], "-.", "controller requests"),
    "coordination": (OKABE_ITO["reddish_purple"], ":", "ZooKeeper / controller quorum"),
}
LOST_COLOR = OKABE_ITO["vermillion"]
_REPLICATION = ("FetchRequest", "FetchResponse", "OffsetsForLeaderEpoch")
_CLIENT = ("Produce", "InitProducerId", "Metadata")
_COORDINATION = ("Zk", "BrokerChange", "Vote", "BeginQuorumEpoch", "FetchMetadata")
_MARK_KINDS = ("crash", "restart", "stopped", "pause", "resume", "zk_registration_refused")
_NOT_LANES = ("cluster", "network")


@dataclass(frozen=True)
class Arrow:
    """One message: from ``src`` (row ``sent``) to ``dst`` (row ``ended``)."""

    src: str
    dst: str
    sent: int
    ended: int
    label: str
    category: str
    outcome: str  # "delivered", "lost" or "in flight"
    reason: str = ""
    time_ms: int = 0


@dataclass(frozen=True)
class Mark:
    """Something that happened on one lane: a crash, a restart, a pause..."""

    node: str
    row: float
    kind: str
    time_ms: int = 0


@dataclass(frozen=True)
class Boundary:
    """The start of a step (or a cut/healed link), drawn across every lane."""

    row: int
    text: str


@dataclass
class Flow:
    """The messages of a trace laid out in rows, ready to draw or to read as text."""

    lanes: list[str]
    arrows: list[Arrow] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    boundaries: list[Boundary] = field(default_factory=list)
    rows: int = 0
    omitted: int = 0  # messages before the window that were left out
    row_times: dict[int, int] = field(default_factory=dict)  # simulated ms of each row

    def y_of(self, time_scale_ms: float | None) -> Callable[[float], float]:
        """Where a row is drawn: at its number, or with ``time_scale_ms`` one more row of
        space for every ``time_scale_ms`` of simulated time since the first row, so that a wait
        is as tall as it was long."""
        if not time_scale_ms or not self.row_times:
            return lambda row: row
        rows = sorted(self.row_times)
        start = self.row_times[rows[0]]

        def y(row: float) -> float:
            at = bisect.bisect_right(rows, row)  # rows[at - 1]: the last timed row up to this one
            t = self.row_times[rows[at - 1]] if at else start
            return row + (t - start) / time_scale_ms

        return y


def _name(msg: Any) -> str:
    if isinstance(msg, dict):
        return str(msg.get("type", "message"))
    return type(msg).__name__


def _get(msg: Any, key: str, default: Any = None) -> Any:
    if isinstance(msg, dict):
        return msg.get(key, default)
    return getattr(msg, key, default)


def category(msg: Any) -> str:
    """The family a message belongs to (a key of :data:`CATEGORIES`)."""
    name = _name(msg)
    if name.startswith(_REPLICATION):
        return "replication"
    if name.startswith(_CLIENT):
        return "client"
    if name.startswith(_COORDINATION):
        return "coordination"
    return "control"


def _values(values: Sequence[str]) -> str:
    """Up to three values (long ones cut), or the first and last and how many."""
    values = [v if len(v) <= 22 else v[:20].rstrip() + "…" for v in map(str, values)]
    return ", ".join(values) if len(values) <= 3 else f"{values[0]} … {values[-1]} ({len(values)})"


def message_label(msg: Any) -> str:
    """A short label for a message, with the fields a learner needs."""
    name = _name(msg)
    error = _get(msg, "error")
    err = f" {error}" if error not in (None, "NONE") else ""
    if name == "ProduceRequest":
        return f"Produce [{_values(_get(msg, 'values', ()))}]"
    if name == "ProduceResponse":
        return f"Produce ←{err or ' ok @' + str(_get(msg, 'base_offset'))}"
    if name == "FetchRequest":
        epoch = _get(msg, "last_fetched_epoch", -1)
        return f"Fetch @{_get(msg, 'fetch_offset')}" + (f" e{epoch}" if epoch != -1 else "")
    if name == "FetchResponse" and _get(msg, "diverging_epoch") is not None:
        epoch, end_offset = _get(msg, "diverging_epoch")
        return f"Fetch ← diverging e{epoch} @{end_offset}"
    if name == "FetchResponse":
        records = _get(msg, "records", ()) or ()
        values = [_get(r, "value") for r in records]
        body = f"[{_values(values)}]" if values else "[]"
        return f"Fetch ←{err} {body} HW {_get(msg, 'hw')}"
    if name == "OffsetsForLeaderEpochRequest":
        return f"OffsetsForLeaderEpoch e{_get(msg, 'leader_epoch')}"
    if name == "OffsetsForLeaderEpochResponse":
        return f"EpochEnd ←{err} e{_get(msg, 'leader_epoch')} @{_get(msg, 'end_offset')}"
    if name == "LeaderAndIsr":
        return (
            f"LeaderAndIsr leader {_get(msg, 'leader')} e{_get(msg, 'leader_epoch')} "
            f"ISR {list(_get(msg, 'isr', ()))}"
        )
    if name in ("AlterIsr", "AlterIsrResponse"):
        return f"{name.replace('Response', ' ←')}{err} ISR {list(_get(msg, 'isr', ()))}"
    return name + err


def _lane_key(node: str) -> tuple[int, Any]:
    if node.isdigit():
        return (1, int(node))
    if node == "controller":
        return (2, node)
    if node in ("c1", "c2", "c3"):
        return (3, node)
    if node == "zk":
        return (4, node)
    return (0, node)  # clients first


def _window(events: list[Event], steps: Any) -> list[Event]:
    if steps is None:
        return events
    first, last = (steps, steps) if isinstance(steps, int) else steps
    out, current = [], 0
    for e in events:
        if e.kind == "step" and "index" in e.data:
            current = e.data["index"]
        if first <= current <= last:
            out.append(e)
    return out


def message_flow(
    source: Any,
    *,
    steps: int | tuple[int, int] | None = None,
    hide: Iterable[str] = (),
    max_rows: int = 400,
    step_labels: Mapping[int, str] | None = None,
) -> Flow:
    """Lay out the messages of a trace: match each delivery or loss to its send (messages on
    one link arrive in order), and number the rows. ``steps`` keeps one step (or a range of
    steps, inclusive; 0 is the start-up); ``hide`` leaves out messages by type name (such as
    ``"UpdateMetadata"``); only the last ``max_rows`` rows are kept. ``step_labels`` renames
    steps by their trace index (a widget numbering its own timeline)."""
    events = _window(as_events(source), steps)
    hidden = set(hide)
    builder = _FlowBuilder(step_labels or {})
    for e in events:
        builder.add(e, hidden)
    flow = builder.finish()
    return clip_flow(flow, max_rows)


class _FlowBuilder:
    def __init__(self, step_labels: Mapping[int, str]) -> None:
        self.step_labels = step_labels
        self.row = 0
        self.step_row = 0
        self.lanes: set[str] = set()
        self.pending: dict[tuple[str, str], list[tuple[int, Any, int]]] = {}
        self.flow = Flow([])
        self.now = 0

    def add(self, e: Event, hidden: set[str]) -> None:
        kind, data = e.kind, e.data
        self.now = e.time_ms
        if kind == "step":
            if "index" in data:
                label = self.step_labels.get(data["index"])
                self._boundary(label or f"step {data['index']}: {_step_text(data)}")
        elif kind == "link":
            state = "healed" if data.get("up") else "cut"
            self._boundary(f"link {data['a']}–{data['b']} {state}")
        elif kind in _MARK_KINDS:
            node = str(data.get("node", e.node))
            self.lanes.add(node)
            self.flow.marks.append(Mark(node, self._mark_row(node, kind), kind, e.time_ms))
        elif kind in ("send", "hold") and _name(data["msg"]) not in hidden:
            src, dst = e.node, str(data["dst"])
            self.lanes.update((src, dst))
            queue = self.pending.setdefault((src, dst), [])
            if not any(item[1] is data["msg"] for item in queue):  # a held send is one send
                queue.append((self._next(), data["msg"], e.time_ms))
        elif kind in ("deliver", "drop") and _name(data["msg"]) not in hidden:
            src = str(data["src"]) if kind == "deliver" else e.node
            dst = e.node if kind == "deliver" else str(data["dst"])
            self.lanes.update((src, dst))
            sent = self._match(src, dst, data["msg"])
            row = self._next()
            outcome = "delivered" if kind == "deliver" else "lost"
            self.flow.arrows.append(
                Arrow(
                    src,
                    dst,
                    row if sent is None else sent,
                    row,
                    message_label(data["msg"]),
                    category(data["msg"]),
                    outcome,
                    str(data.get("reason", "")),
                    e.time_ms,
                )
            )

    def _next(self) -> int:
        self.row += 1
        self.flow.row_times[self.row] = self.now
        return self.row

    def _boundary(self, text: str) -> None:
        self.flow.boundaries.append(Boundary(self._next(), text))
        self.step_row = self.row

    def _mark_row(self, node: str, kind: str) -> float:
        """A restarted broker registers before the restart is recorded: put the mark above
        the first message the new incarnation sent in this step."""
        if kind != "restart":
            return self._next()
        sent = [
            row
            for (src, _), queue in self.pending.items()
            if src == node
            for row, _, _ in queue
            if row > self.step_row
        ]
        sent += [a.sent for a in self.flow.arrows if a.src == node and a.sent > self.step_row]
        return min(sent) - 0.5 if sent else self._next()

    def _match(self, src: str, dst: str, msg: Any) -> int | None:
        queue = self.pending.get((src, dst), [])
        for i, (row, sent, _) in enumerate(queue):
            if sent is msg or sent == msg:
                del queue[i]
                return row
        return None

    def finish(self) -> Flow:
        end = self.row + 1
        for (src, dst), queue in self.pending.items():
            for row, msg, time_ms in queue:
                self.flow.arrows.append(
                    Arrow(
                        src,
                        dst,
                        row,
                        end,
                        message_label(msg),
                        category(msg),
                        "in flight",
                        time_ms=time_ms,
                    )
                )
        self.flow.arrows.sort(key=lambda a: (a.sent, a.ended))
        self.flow.lanes = sorted(self.lanes - set(_NOT_LANES), key=_lane_key)
        self.flow.rows = end
        return self.flow


def _step_text(data: dict[str, Any]) -> str:
    """A step as a learner would type it: "fetch 1", "crash 2 lose_unflushed"."""
    args = dict(data.get("args") or {})
    args.pop("partition", None)
    words = [str(data.get("action", ""))]
    for i, (key, value) in enumerate(args.items()):
        if value in (None, False, "ok"):
            continue
        if key == "acks" and value == -1:
            value = "all"
        if isinstance(value, list):
            value = ", ".join(map(str, value))
        words.append(key if value is True else (str(value) if i == 0 else f"{key}={value}"))
    return " ".join(words)


def clip_flow(flow: Flow, max_rows: int) -> Flow:
    """The latest ``max_rows`` rows of a laid-out flow (what came before is counted in
    ``omitted``)."""
    if flow.rows <= max_rows:
        return flow
    start = flow.rows - max_rows
    kept = [a for a in flow.arrows if a.sent >= start]
    return Flow(
        lanes=flow.lanes,
        arrows=[_shift(a, start) for a in kept],
        marks=[
            Mark(m.node, m.row - start, m.kind, m.time_ms) for m in flow.marks if m.row >= start
        ],
        boundaries=[Boundary(b.row - start, b.text) for b in flow.boundaries if b.row >= start],
        rows=max_rows,
        omitted=flow.omitted + len(flow.arrows) - len(kept),
        row_times={r - start: t for r, t in flow.row_times.items() if r >= start},
    )


def _shift(a: Arrow, start: int) -> Arrow:
    return Arrow(
        a.src,
        a.dst,
        a.sent - start,
        a.ended - start,
        a.label,
        a.category,
        a.outcome,
        a.reason,
        a.time_ms,
    )


# ---- drawing --------------------------------------------------------------------------------


def draw_messages(
    source: Any,
    *,
    ax: Any = None,
    steps: int | tuple[int, int] | None = None,
    hide: Iterable[str] = (),
    max_rows: int = 400,
    title: str | None = None,
    legend: bool = True,
    step_labels: Mapping[int, str] | None = None,
    time_scale_ms: float | None = None,
) -> Any:
    """Draw the Lamport diagram of a trace (a Cluster, a Trace, or a :class:`Flow` already laid
    out by :func:`message_flow`) and return the Axes.

    ``steps`` picks one step or an inclusive range (0: start-up); ``hide`` leaves out message
    types by name; at most ``max_rows`` rows (the latest) are drawn. ``legend=False`` leaves
    the key out. By default rows follow the order things happened; ``time_scale_ms`` adds a
    row of space for every that many simulated ms (a 500 ms wait with ``time_scale_ms=100`` is
    five rows tall) and prints the time beside the lanes. A message a node sends itself is drawn
    as a mark on its lane, not as an arrow."""
    flow = (
        source
        if isinstance(source, Flow)
        else message_flow(
            source, steps=steps, hide=hide, max_rows=max_rows, step_labels=step_labels
        )
    )
    lanes = {name: i for i, name in enumerate(flow.lanes)}
    y = flow.y_of(time_scale_ms)
    bottom = y(flow.rows) + 1
    with style():
        if ax is None:
            ax = new_axes(0.8 + 1.6 * max(len(lanes), 2), 1.6 + 0.26 * bottom)
        ax.set_facecolor(PAPER)
        _lanes(ax, flow, lanes, y, bottom)
        # carded (arrows run under them), and moved off one another where they would collide
        labels = Labels(card=PAPER, card_alpha=0.85, pad=0.8, avoid=True)
        for b in flow.boundaries:
            ax.axhline(y(b.row), color=MUTED, linewidth=0.6, linestyle="--", zorder=0)
            labels.add(-0.45, y(b.row) + 0.08, b.text, weight="bold", ha="left", va="top")
        shown = [a for a in flow.arrows if a.src in lanes and a.dst in lanes]
        _arrows(ax, [a for a in shown if a.src != a.dst], lanes, labels, y)
        for a in shown:
            if a.src == a.dst:  # a node's message to itself: something it does, not a send
                _own_action(ax, a, lanes[a.src], labels, y)
        for m in flow.marks:
            _mark(ax, m, lanes[m.node], labels, y)
        if time_scale_ms:
            _times(flow, len(lanes), labels, y)
        labels.set_zorder(6)
        ax.add_artist(labels)
        _frame(ax, flow, title, legend, bottom, timed=bool(time_scale_ms))
    return ax


def _node_label(node: str) -> str:
    if node.isdigit():
        return f"broker {node}"
    return {"zk": "ZooKeeper", "controller": "controller"}.get(node, node)


def _down_spans(flow: Flow, node: str) -> list[tuple[float, float]]:
    spans: list[tuple[float, float]] = []
    start: float | None = None
    for m in sorted((m for m in flow.marks if m.node == node), key=lambda m: m.row):
        if m.kind in ("crash", "stopped", "pause") and start is None:
            start = m.row
        elif m.kind in ("restart", "resume") and start is not None:
            spans.append((start, m.row))
            start = None
    if start is not None:
        spans.append((start, flow.rows + 1))
    return spans


def _lanes(
    ax: Any, flow: Flow, lanes: dict[str, int], y: Callable[[float], float], bottom: float
) -> None:
    """One line per node; dotted (over a white gap) while the node is down."""
    lines = [[(x, 0), (x, bottom)] for x in lanes.values()]
    down = [
        [(x, y(a)), (x, min(y(b), bottom))]
        for node, x in lanes.items()
        for a, b in _down_spans(flow, node)
    ]
    ax.add_collection(LineCollection(lines, colors=INK, linewidths=1.0, zorder=1), autolim=False)
    if down:
        for color, width, ls, z in ((PAPER, 3.0, "-", 2), (MUTED, 1.0, ":", 3)):
            ax.add_collection(
                LineCollection(down, colors=color, linewidths=width, linestyles=ls, zorder=z),
                autolim=False,
            )


def _arrows(
    ax: Any,
    arrows: list[Arrow],
    lanes: dict[str, int],
    labels: Labels,
    y: Callable[[float], float],
) -> None:
    """Every message at once: the shafts of a family as one collection, the heads as one
    artist and the labels into ``labels`` (an ``annotate`` per message costs a layout each)."""
    shafts: dict[str, list[Any]] = {}
    heads, head_colors, crosses = [], [], []
    tx: float
    ty: float
    for a in arrows:
        x0, x1 = lanes[a.src], lanes[a.dst]
        y0, y1 = y(a.sent), y(a.ended)
        if a.outcome == "lost":
            xm = x0 + (x1 - x0) * 0.55
            shafts.setdefault("lost", []).append([(x0, y0), (xm, y1)])
            crosses.append((xm, y1))
            label, tx, ty = f"{a.label} — LOST ({a.reason or 'lost'})", (x0 + xm) / 2, y1
        else:
            shafts.setdefault(a.category, []).append([(x0, y0), (x1, y1)])
            heads.append(((x0, y0), (x1, y1)))
            head_colors.append(CATEGORIES[a.category][0])
            label = a.label + (" (in flight)" if a.outcome == "in flight" else "")
            tx, ty = x0 + (x1 - x0) * 0.5, y0 + (y1 - y0) * 0.5
        labels.add(tx, ty - 0.12, label, size=6.5, va="bottom")
    for family, segments in sorted(shafts.items()):
        color, ls, _ = (LOST_COLOR, "--", "") if family == "lost" else CATEGORIES[family]
        ax.add_collection(
            LineCollection(
                segments,
                colors=color,
                linewidths=1.4 if family == "lost" else 1.3,
                linestyles=ls,
                zorder=4,
                label=family,
            ),
            autolim=False,
        )
    heads_artist = ArrowHeads(heads, head_colors)
    heads_artist.set_zorder(4.5)
    ax.add_artist(heads_artist)
    if crosses:
        xs, ys = zip(*crosses, strict=True)
        ax.plot(xs, ys, marker="X", markersize=9, color=LOST_COLOR, zorder=5, linestyle="none")


def _own_action(ax: Any, a: Arrow, x: int, labels: Labels, y: Callable[[float], float]) -> None:
    """A message a node sends itself (a timer's work, a local call): a small diamond on its
    lane where it is handled, labelled beside it."""
    color = LOST_COLOR if a.outcome == "lost" else CATEGORIES[a.category][0]
    ax.plot([x], [y(a.ended)], marker="D", markersize=5, color=color, zorder=5, linestyle="none")
    labels.add(x + 0.08, y(a.ended), a.label, size=6.5, ha="left")


def _times(flow: Flow, n: int, labels: Labels, y: Callable[[float], float]) -> None:
    """The simulated time beside the lanes wherever it moved on."""
    last: int | None = None
    for row in sorted(flow.row_times):
        t = flow.row_times[row]
        if t != last:
            labels.add(n - 0.45, y(row), f"{t:,} ms", size=6.5, color=MUTED, ha="left")
            last = t


_MARK_STYLE = {
    "crash": ("X", LOST_COLOR, "crash"),
    "stopped": ("s", MUTED, "clean stop"),
    "restart": ("^", OKABE_ITO["bluish_green"], "restart"),
    "pause": ("P", OKABE_ITO["orange"], "pause"),
    "resume": ("o", OKABE_ITO["bluish_green"], "resume"),
    "zk_registration_refused": ("v", LOST_COLOR, "registration refused: old session lives"),
}


def _mark(ax: Any, m: Mark, x: int, labels: Labels, y: Callable[[float], float]) -> None:
    marker, color, text = _MARK_STYLE[m.kind]
    ax.plot(
        [x],
        [y(m.row)],
        marker=marker,
        markersize=11,
        color=color,
        markeredgecolor=INK,
        linestyle="none",
        zorder=7,
    )
    labels.add(x + 0.12, y(m.row), text, weight="bold", ha="left")


def _frame(
    ax: Any, flow: Flow, title: str | None, legend: bool, bottom: float, *, timed: bool
) -> None:
    from matplotlib.lines import Line2D

    n = max(len(flow.lanes), 1)
    ax.set_xlim(-0.5, n - 0.4 + (0.5 if timed else 0.0))
    ax.set_ylim(bottom, 0)
    ax.set_axis_off()  # lane names as plain text: an axis lays out its tick labels every draw
    above = ax.get_xaxis_transform()  # x in data, y in Axes units
    for x, node in enumerate(flow.lanes):
        ax.text(x, 1.0, _node_label(node), transform=above, ha="center", va="bottom", gid="lane")
    extra = f" ({flow.omitted} earlier messages not shown)" if flow.omitted else ""
    default = "Messages (time runs downwards" + (", to scale)" if timed else ")")
    ax.set_title((title or default) + extra, loc="left", y=1.0, pad=24)
    if not legend:
        return
    used = sorted({a.category for a in flow.arrows if a.outcome != "lost" and a.src != a.dst})
    handles = [
        Line2D([], [], color=CATEGORIES[c][0], linestyle=CATEGORIES[c][1], label=CATEGORIES[c][2])
        for c in used
    ]
    if any(a.outcome == "lost" for a in flow.arrows):
        handles.append(
            Line2D([], [], color=LOST_COLOR, linestyle="--", marker="X", label="lost message")
        )
    if any(a.src == a.dst for a in flow.arrows):
        handles.append(
            Line2D([], [], marker="D", color=INK, linestyle="none", label="a node's own action")
        )
    for kind in sorted({m.kind for m in flow.marks}):
        marker, color, text = _MARK_STYLE[kind]
        handles.append(
            Line2D(
                [],
                [],
                marker=marker,
                color=color,
                markeredgecolor=INK,
                linestyle="none",
                label=text,
            )
        )
    if handles:
        legend_below(ax, handles)


def describe_messages(
    source: Any,
    *,
    steps: int | tuple[int, int] | None = None,
    hide: Iterable[str] = (),
    max_rows: int = 400,
    step_labels: Mapping[int, str] | None = None,
) -> str:
    """The Lamport diagram as a table: one line per message and per crash or restart, in the
    order they happened, with the step each belongs to."""
    flow = (
        source
        if isinstance(source, Flow)
        else message_flow(
            source, steps=steps, hide=hide, max_rows=max_rows, step_labels=step_labels
        )
    )
    items: list[tuple[float, str]] = [(b.row, f"== {b.text}") for b in flow.boundaries]
    for a in flow.arrows:
        outcome = f"LOST ({a.reason})" if a.outcome == "lost" else a.outcome
        items.append(
            (a.sent, f"{_node_label(a.src)} -> {_node_label(a.dst)} | {a.label} | {outcome}")
        )
    for m in flow.marks:
        items.append((m.row, f"{_node_label(m.node)}: {_MARK_STYLE[m.kind][2]}"))
    lines = ["from -> to | message | outcome"]
    if flow.omitted:
        lines.append(f"({flow.omitted} earlier messages not shown)")
    lines += [text for _, text in sorted(items, key=lambda item: item[0])]
    return "\n".join(lines)
