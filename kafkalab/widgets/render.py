"""Turn an explorer's state into pictures (SVG bytes) and text, without any widget library.

The widgets show what these functions return; tests and benchmarks call them directly. Each
explorer also has a still picture of its current view (PNG bytes, :func:`render_still` and the
``format`` of the others): a notebook stores it beside the widget, so a viewer that runs no
widgets (GitHub, nbviewer) shows the explorer's first view.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure

from kafkalab.viz import (
    describe_logs,
    describe_messages,
    draw_isr,
    draw_logs,
    draw_messages,
    message_flow,
    render,
)
from kafkalab.viz._style import INK, OKABE_ITO, style
from kafkalab.viz.messages import clip_flow
from kafkalab.widgets.explorer import ExplorerModel, describe_step
from kafkalab.widgets.isr_lag import IsrLagResult
from kafkalab.widgets.tradeoff import TradeoffResult

__all__ = [
    "Canvas",
    "ExplorerPictures",
    "ExplorerRenderer",
    "describe_tradeoffs",
    "render_explorer",
    "render_figure",
    "render_isr_lag",
    "render_still",
    "still_figure",
    "tradeoffs_figure",
    "render_tradeoffs",
]

WIDTH_IN = 8.0
MAX_MESSAGE_ROWS = 30  # a step with more messages draws its latest ones (and says so)
MAX_TEXT_ROWS = 400  # the text form lists them all, up to this many


@dataclass(frozen=True)
class ExplorerPictures:
    """What the cluster explorer shows for one position of its timeline."""

    status: str
    logs_svg: bytes
    messages_svg: bytes
    alerts: list[str]
    logs_text: str
    messages_text: str


class Canvas:
    """One figure and Axes kept for one kind of picture and redrawn in place: clearing what
    the last drawing added costs half as much as building a new Axes, which is what keeps a
    click under 100 ms. ``margins_in`` are (left, right, top, bottom) in inches: a fixed
    layout costs a fraction of matplotlib's automatic one."""

    def __init__(self, margins_in: tuple[float, float, float, float]) -> None:
        self.margins_in = margins_in
        self.figure = Figure(figsize=(WIDTH_IN, 3.0), layout=None)
        self.ax = self.figure.add_axes((0.1, 0.1, 0.8, 0.8))

    def draw(self, draw: Any, width_in: float, height_in: float, format: str = "svg") -> bytes:
        """Call ``draw(ax)`` on a clean Axes of the given size and return the picture's bytes
        (``format``: "svg" or "png")."""
        ax = self.ax
        for artist in [*ax.patches, *ax.texts, *ax.lines, *ax.collections, *ax.artists]:
            artist.remove()
        left, right, top, bottom = self.margins_in
        self.figure.set_size_inches(width_in, height_in)
        ax.set_position(
            (
                left / width_in,
                bottom / height_in,
                1 - (left + right) / width_in,
                1 - (top + bottom) / height_in,
            )
        )
        draw(ax)
        return render(self.figure, format)


def render_figure(
    draw: Any,
    width_in: float,
    height_in: float,
    *,
    margins_in: tuple[float, float, float, float] = (0.1, 0.1, 0.6, 0.2),
    format: str = "svg",
) -> bytes:
    """Call ``draw(ax)`` on a fresh figure (no pyplot: nothing accumulates in a notebook) and
    return the picture's bytes (SVG unless ``format="png"``)."""
    return Canvas(margins_in).draw(draw, width_in, height_in, format)


class ExplorerRenderer:
    """Draws what the cluster explorer shows, reusing its two canvases from click to click."""

    def __init__(self) -> None:
        self.logs = Canvas((1.5, 0.15, 0.85, 0.1))
        self.messages = Canvas((0.05, 0.15, 0.6, 0.05))

    def __call__(self, model: ExplorerModel) -> ExplorerPictures:
        view = _View(model)
        logs_svg = self.logs.draw(view.draw_logs, WIDTH_IN, view.logs_height_in)
        messages_svg = self.messages.draw(view.draw_messages, WIDTH_IN, view.messages_height_in)
        return ExplorerPictures(
            status=model.last.message or model.step_text(),
            logs_svg=logs_svg,
            messages_svg=messages_svg,
            alerts=model.alerts(),
            logs_text=describe_logs(view.snapshot, previous=view.previous),
            messages_text=describe_messages(view.every),
        )


class _View:
    """What the explorer draws for one position of its timeline."""

    def __init__(self, model: ExplorerModel) -> None:
        self.snapshot, self.previous = model.snapshot(), model.previous_snapshot()
        events = model.step_events()
        self.every = message_flow(
            events, max_rows=MAX_TEXT_ROWS, step_labels=_step_labels(model, events)
        )
        self.flow = clip_flow(self.every, MAX_MESSAGE_ROWS)
        self.title = f"Messages of {_short(model)}"
        self.logs_height_in = 1.0 + 0.85 * len(self.snapshot)
        self.messages_height_in = min(9.0, 1.0 + 0.2 * max(self.flow.rows, 4))

    def draw_logs(self, ax: Any, legend: bool = False) -> None:
        draw_logs(self.snapshot, previous=self.previous, ax=ax, legend=legend)

    def draw_messages(self, ax: Any, legend: bool = False) -> None:
        draw_messages(self.flow, ax=ax, legend=legend, title=self.title)


def render_still(model: ExplorerModel) -> bytes:
    """The explorer's current view as one PNG: the logs above the messages of the latest step,
    each with its legend, for a viewer that runs no widgets."""
    return render(still_figure(model), "png")


def still_figure(model: ExplorerModel) -> Figure:
    """The figure :func:`render_still` draws."""
    view = _View(model)
    fig = Figure(
        figsize=(WIDTH_IN, view.logs_height_in + view.messages_height_in + 1.2),
        layout="constrained",
    )
    top, bottom = fig.subplots(
        2, 1, height_ratios=[view.logs_height_in + 0.6, view.messages_height_in + 0.6]
    )
    with style():
        view.draw_logs(top, legend=True)
        view.draw_messages(bottom, legend=True)
    return fig


def render_explorer(model: ExplorerModel) -> ExplorerPictures:
    """The log drawing (with ghosts of what the latest step removed), the message diagram of
    the latest step, the invariant alerts and the text forms of both pictures."""
    return ExplorerRenderer()(model)


def _step_labels(model: ExplorerModel, events: list[Any]) -> dict[int, str]:
    """The explorer numbers its own steps (check steps included): name the step's trace
    events after the explorer's step."""
    if model.position == 0:
        return {}
    step = model.steps[model.position - 1]
    text = f"step {model.position}: {describe_step(step)}"
    return {e.data["index"]: text for e in events if e.kind == "step" and "index" in e.data}


def _short(model: ExplorerModel) -> str:
    if model.position == 0:
        return "the start-up"
    return f"step {model.position}"


# ---- the trade-off and ISR lag explorers --------------------------------------------------


def render_tradeoffs(results: list[TradeoffResult], format: str = "svg") -> bytes:
    """Three panels comparing settings: acknowledged-loss rate, unavailability and produce
    latency percentiles (each bar labelled with its value); SVG unless ``format="png"``."""
    return render(tradeoffs_figure(results), format)


def tradeoffs_figure(results: list[TradeoffResult]) -> Figure:
    """The figure :func:`render_tradeoffs` draws."""
    # The bars are numbered and a key below names each setting: six three-line names under
    # narrow bars would print over one another.
    rows = math.ceil(len(results) / 3)
    height = 2.6 + 0.2 * rows
    fig = Figure(figsize=(WIDTH_IN + 1, height), layout=None)
    axes = fig.subplots(1, 3, gridspec_kw={"wspace": 0.45})
    fig.subplots_adjust(left=0.06, right=0.99, top=0.86, bottom=(0.45 + 0.2 * rows) / height)
    with style():
        labels = [str(i + 1) for i in range(len(results))]
        for i, r in enumerate(results):
            column, row = i % 3, i // 3
            fig.text(
                0.06 + column * 0.31,
                (0.12 + 0.2 * (rows - 1 - row)) / height,
                f"{i + 1}: {r.settings.label}",
                fontsize=7.5,
                ha="left",
                va="bottom",
            )
        panels = (
            ("acknowledged records lost", [100 * r.acked_loss_rate for r in results], "%"),
            ("produce requests not acknowledged", [100 * r.unavailability for r in results], "%"),
        )
        for ax, (title, values, unit) in zip(axes[:2], panels, strict=True):
            _bars(ax, labels, values, unit, title)
        _latency_bars(axes[2], labels, results)
    return fig


def _bars(ax: Any, labels: list[str], values: list[float], unit: str, title: str) -> None:
    x = range(len(values))
    ax.bar(x, values, color=OKABE_ITO["blue"], edgecolor=INK, hatch="//")
    for i, v in zip(x, values, strict=True):
        ax.text(i, v, f"{v:.2f}{unit}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(list(x), labels, rotation=0, fontsize=7.5)
    ax.set_xlabel("setting", fontsize=7.5)
    ax.set_title(title, fontsize=9, loc="left")
    ax.set_ylim(0, max([*values, 1.0]) * 1.25)


def _latency_bars(ax: Any, labels: list[str], results: list[TradeoffResult]) -> None:
    width = 0.26
    for j, (q, color, hatch) in enumerate(
        (
            ("p50", OKABE_ITO["sky_blue"], ""),
            ("p95", OKABE_ITO["orange"], "//"),
            ("p99", OKABE_ITO["vermillion"], "xx"),
        )
    ):
        values = [r.latency_ms[q] for r in results]
        xs = [i + (j - 1) * width for i in range(len(results))]
        shown = [0.0 if math.isnan(v) else v for v in values]
        ax.bar(xs, shown, width, color=color, hatch=hatch, edgecolor=INK, label=q)
        for x, v in zip(xs, values, strict=True):
            text = "n/a" if math.isnan(v) else f"{v:.0f}"
            # upright: three bars per setting leave each label a bar's width, not a word's
            ax.text(
                x,
                0 if math.isnan(v) else v,
                f" {text}",
                ha="center",
                va="bottom",
                fontsize=6,
                rotation=90,
            )
    ax.set_xticks(range(len(results)), labels, fontsize=7.5)
    ax.set_xlabel("setting", fontsize=7.5)
    ax.set_title("produce latency (simulated ms)", fontsize=9, loc="left")
    top = max([v for r in results for v in r.latency_ms.values() if not math.isnan(v)] or [1])
    ax.set_ylim(0, top * 1.6)
    ax.legend(fontsize=7, frameon=False, loc="upper right", ncols=3)


def describe_tradeoffs(results: list[TradeoffResult]) -> str:
    """The comparison as a table, one line per setting."""
    lines = ["setting | produced | acknowledged | lost | loss rate | unavailable | p50/p95/p99 ms"]
    for r in results:
        lat = "/".join("n/a" if math.isnan(v) else f"{v:.0f}" for v in r.latency_ms.values())
        lines.append(
            f"{r.settings.label} | {r.produced} | {r.acked} | {r.lost_acked} | "
            f"{r.acked_loss_rate:.2%} | {r.unavailability:.2%} | {lat}"
        )
    return "\n".join(lines)


def render_isr_lag(result: IsrLagResult, format: str = "svg") -> bytes:
    """ISR membership and partition health over the run; SVG unless ``format="png"``."""
    return render_figure(
        lambda ax: draw_isr(result.cluster, ax=ax, x="time"),
        WIDTH_IN,
        3.6,
        margins_in=(2.7, 0.35, 0.35, 0.5),
        format=format,
    )
