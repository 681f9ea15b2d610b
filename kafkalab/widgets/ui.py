"""The three explorers as Jupyter widgets (ipywidgets 8).

Each is a thin front end: the logic lives in a plain model (:class:`ExplorerModel`,
:class:`TradeoffModel`, :class:`IsrLagModel`) and the pictures come from
:mod:`kafkalab.widgets.render`. Show one by leaving it as the last expression of a cell.
"""

from __future__ import annotations

import base64
import html
from typing import Any

import ipywidgets as w

from kafkalab import scenarios
from kafkalab.errors import KafkalabError
from kafkalab.viz._style import EPOCH_COLORS
from kafkalab.viz.logs import MAX_CELLS
from kafkalab.viz.messages import CATEGORIES, LOST_COLOR
from kafkalab.widgets.explorer import ExplorerModel
from kafkalab.widgets.isr_lag import LAG_RULES, IsrLagModel, IsrLagSettings
from kafkalab.widgets.render import (
    ExplorerRenderer,
    describe_tradeoffs,
    render_isr_lag,
    render_still,
    render_tradeoffs,
)
from kafkalab.widgets.tradeoff import TradeoffModel, TradeoffSettings

__all__ = ["ClusterExplorer", "IsrLagExplorer", "TradeoffExplorer"]

FRESH = "(a fresh 3-broker cluster)"
BASE = "(as written)"


def _button(label: str, css: str, tooltip: str, style: str = "") -> w.Button:
    b = w.Button(
        description=label, tooltip=tooltip, button_style=style, layout=w.Layout(width="auto")
    )
    b.add_class(css)
    return b


_WIDE = {"style": {"description_width": "190px"}, "layout": w.Layout(width="460px")}


def _slider(description: str, value: int, low: int, high: int, step: int = 1) -> w.IntSlider:
    """A labelled slider that reports its value when released, not while it is dragged."""
    return w.IntSlider(
        value=value,
        min=low,
        max=high,
        step=step,
        description=description,
        continuous_update=False,
        **_WIDE,
    )


def _text_block(title: str, text: str) -> str:
    """A collapsible plain-text twin of a picture, for screen readers."""
    return (
        f"<details><summary>{html.escape(title)}</summary>"
        f"<pre style='white-space:pre-wrap'>{html.escape(text)}</pre></details>"
    )


def _bundle(box: w.Widget, text: str, still: bytes | None = None, **kwargs: Any) -> Any:
    """The widget's display bundle, with a short, stable text form (the default one lists
    every trait, memory addresses included) and a still PNG of what it shows now: Jupyter
    draws the live widget, and a viewer that runs no widgets (GitHub, nbviewer) the still."""
    bundle = box._repr_mimebundle_(**kwargs)
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    data["text/plain"] = text
    if still is not None:
        data["image/png"] = base64.b64encode(still).decode("ascii")
    return bundle


def _legend_html() -> str:
    swatches = "".join(
        f"<span style='display:inline-block;width:1em;height:1em;background:{c};"
        f"border:1px solid #1a1a1a;margin:0 .3em 0 .8em;vertical-align:middle'></span>"
        f"epoch {e}" + (" (hatched)" if e else "")
        for e, c in enumerate(EPOCH_COLORS[:3])
    )
    arrows = "".join(
        f"<span style='color:{c};margin-left:.8em'>{'─' if ls == '-' else '╌'}▶</span> {label}"
        for c, ls, label in CATEGORIES.values()
    )
    return (
        "<div style='font-size:90%;line-height:1.8'><b>Key.</b> Cells: records, filled and "
        f"labelled by leader epoch:{swatches}. Bar: HW; triangle: LEO; grey dashed cell: "
        "removed since the previous step; dotted outline: not yet flushed. Logs longer than "
        f"{MAX_CELLS} records are drawn as one bar per epoch.<br><b>Messages</b> (time runs "
        f"down):{arrows}<span style='color:{LOST_COLOR};margin-left:.8em'>╌✕</span> lost. "
        "✕ on a lane: crash; ▲: restart; dotted lane: down.</div>"
    )


class ClusterExplorer:
    """Step through a scenario (or build one), rewind with the timeline slider, and fork a new
    branch by taking a different step from any earlier point.

    ``ClusterExplorer("kip101-loss")`` starts on that catalog scenario."""

    def __init__(self, scenario: str | None = "kip101-loss", *, variant: str | None = None):
        self.model = ExplorerModel(scenario, variant=variant)
        self._render = ExplorerRenderer()
        self._busy = False
        self._build()
        self.refresh()

    # ---- layout ----------------------------------------------------------------------------

    def _build(self) -> None:
        names = [FRESH, *scenarios.catalog()]
        current = self.model.scenario.name if self.model.scenario else FRESH
        self.scenario = w.Dropdown(options=names, value=current, description="scenario")
        self.variant = w.Dropdown(description="variant")
        self.load_button = _button("load", "kafkalab-load", "start the chosen scenario again")
        self.about = w.HTML()
        self.back_button = _button("◀ back", "kafkalab-back", "rewind one step")
        self.next_button = _button(
            "next step ▶", "kafkalab-next", "apply the next step of this branch", "primary"
        )
        self.slider = w.IntSlider(
            min=0, description="step", continuous_update=False, layout=w.Layout(width="420px")
        )
        self.slider.add_class("kafkalab-timeline")
        self.status = w.HTML()
        self.alerts = w.HTML()
        self.logs = w.Image(format="svg+xml", layout=w.Layout(max_width="900px"))
        self.logs.add_class("kafkalab-logs")
        self.messages = w.Image(format="svg+xml", layout=w.Layout(max_width="900px"))
        self.messages.add_class("kafkalab-messages")
        self.text = w.HTML()
        self._update_variants()
        self.scenario.observe(lambda _: self._update_variants(), names="value")
        self.load_button.on_click(lambda _: self._load())
        self.back_button.on_click(lambda _: self._run(self.model.back))
        self.next_button.on_click(lambda _: self._run(self.model.forward))
        self.slider.observe(self._on_slider, names="value")
        self.box = w.VBox(
            [
                w.HBox([self.scenario, self.variant, self.load_button]),
                self.about,
                w.HBox([self.back_button, self.next_button, self.slider]),
                self.status,
                self._actions(),
                self.alerts,
                self.logs,
                self.messages,
                w.HTML(_legend_html()),
                self.text,
            ]
        )
        self.box.add_class("kafkalab-explorer")

    def _actions(self) -> w.Widget:
        brokers = self.model.brokers
        self.value = w.Text(value="m1", description="value", layout=w.Layout(width="180px"))
        self.acks = w.Dropdown(
            options=["config", "1", "all", "0"], description="acks", layout=w.Layout(width="160px")
        )
        self.broker = w.Dropdown(
            options=brokers, description="broker", layout=w.Layout(width="160px")
        )
        nodes = [*brokers, "zk", "client"]
        self.node_a = w.Dropdown(
            options=nodes, value=brokers[0], description="link", layout=w.Layout(width="150px")
        )
        self.node_b = w.Dropdown(options=nodes, value="zk", layout=w.Layout(width="90px"))
        self.ms = w.BoundedIntText(
            value=1000,
            min=0,
            max=3_600_000,
            step=500,
            description="ms",
            layout=w.Layout(width="170px"),
        )
        b = self.broker
        buttons = [
            ("produce", "append a record at the leader", self._produce),
            ("fetch", "this follower fetches once", lambda: self.model.fetch(b.value)),
            ("sync", "the followers fetch until nothing changes", lambda: self.model.sync()),
            (
                "crash",
                "the broker stops; its page cache survives",
                lambda: self.model.crash(b.value),
            ),
            (
                "power loss",
                "the broker stops and loses what it did not flush",
                lambda: self.model.crash(b.value, lose_unflushed=True),
            ),
            ("restart", "start the broker from its disk", lambda: self.model.restart(b.value)),
            ("flush", "fsync the log (not the HW checkpoint)", lambda: self.model.flush(b.value)),
            (
                "disconnect",
                "cut the link",
                lambda: self.model.disconnect(self.node_a.value, self.node_b.value),
            ),
            (
                "reconnect",
                "restore the link",
                lambda: self.model.reconnect(self.node_a.value, self.node_b.value),
            ),
            ("heal", "restore every link", lambda: self.model.heal()),
            (
                "advance time",
                "let time pass: timers fire",
                lambda: self.model.advance(self.ms.value),
            ),
        ]
        made = {}
        for label, tip, action in buttons:
            made[label] = _button(label, f"kafkalab-{label.replace(' ', '-')}", tip)
            made[label].on_click(lambda _, act=action: self._run(act))
        return w.VBox(
            [
                w.HBox([self.value, self.acks, made["produce"], made["sync"]]),
                w.HBox(
                    [
                        self.broker,
                        *(made[k] for k in ("fetch", "crash", "power loss", "restart", "flush")),
                    ]
                ),
                w.HBox(
                    [self.node_a, self.node_b, made["disconnect"], made["reconnect"], made["heal"]]
                ),
                w.HBox([self.ms, made["advance time"]]),
            ]
        )

    # ---- behaviour -------------------------------------------------------------------------

    def go_to(self, position: int) -> None:
        """Show the cluster after ``position`` steps of the current branch (as the slider
        does)."""
        self._run(lambda: self.model.go_to(position))

    def forward(self, count: int = 1) -> None:
        """Apply the next ``count`` steps (as the "next step" button does)."""
        self._run(lambda: self.model.forward(count))

    def _update_variants(self) -> None:
        name = self.scenario.value
        variants = [] if name == FRESH else [v.name for v in scenarios.get(name).variants]
        self.variant.options = [BASE, *variants]
        self.variant.value = BASE

    def _load(self) -> None:
        name, variant = self.scenario.value, self.variant.value
        if name == FRESH:
            self.model = ExplorerModel()
        else:
            self.model.load(name, variant=None if variant == BASE else variant)
        self._update_nodes()
        self.refresh()

    def _run(self, action: Any) -> None:
        try:
            action()
        except KafkalabError as err:
            self.status.value = f"<b>refused:</b> {html.escape(str(err))}"
            return
        self.refresh()

    def _produce(self) -> Any:
        acks = None if self.acks.value == "config" else self.acks.value
        outcome = self.model.produce(self.value.value, acks=acks)
        text = self.value.value
        if outcome.ok and text[:1] == "m" and text[1:].isdigit():
            self.value.value = f"m{int(text[1:]) + 1}"  # the next value, ready to send
        return outcome

    def _update_nodes(self) -> None:
        """The broker menus follow the loaded scenario's brokers."""
        brokers = self.model.brokers
        if list(self.broker.options) != brokers:
            self.broker.options = brokers
            self.node_a.options = [*brokers, "zk", "client"]
            self.node_b.options = [*brokers, "zk", "client"]
            self.node_a.value, self.node_b.value = brokers[0], "zk"

    def _on_slider(self, change: dict[str, Any]) -> None:
        if not self._busy:
            self._run(lambda: self.model.go_to(change["new"]))

    def refresh(self) -> None:
        """Redraw everything from the model."""
        m = self.model
        pictures = self._render(m)
        self._busy = True
        try:
            self.slider.max = len(m.steps)
            self.slider.value = m.position
        finally:
            self._busy = False
        s = m.scenario
        self.about.value = (
            f"<p><b>{html.escape(s.name)}</b>{' · ' + html.escape(m.variant) if m.variant else ''}"
            f": {html.escape(s.description)}</p>"
            if s
            else "<p>A fresh cluster: take any step.</p>"
        ) + _implied_html(m.implied)
        ok = "" if m.last.ok else "<b>refused:</b> "
        fork = f" · branches started: {m.forks}" if m.forks else ""
        self.status.value = f"<p>{ok}{html.escape(pictures.status)}{fork}</p>"
        self.alerts.value = _alerts_html(pictures.alerts)
        self.logs.value = pictures.logs_svg
        self.messages.value = pictures.messages_svg
        self.text.value = _text_block("Text description of the logs", pictures.logs_text) + (
            _text_block("Text description of the messages", pictures.messages_text)
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        name = self.model.scenario.name if self.model.scenario else "a fresh cluster"
        text = f"ClusterExplorer({name}, {self.model.step_text()})"
        return _bundle(self.box, text, render_still(self.model), **kwargs)


def _alerts_html(alerts: list[str]) -> str:
    if not alerts:
        return (
            "<div role='status' style='padding:.3em .6em;border-left:4px solid #009E73'>"
            "Invariants hold: no acknowledged record lost, logs agree.</div>"
        )
    items = "".join(f"<li>{html.escape(a)}</li>" for a in alerts)
    return (
        "<div role='alert' class='kafkalab-alert' style='padding:.3em .6em;"
        "border-left:6px solid #D55E00;background:#fff4ec;color:#1a1a1a'>"
        f"<b>⚠ Invariant report:</b><ul style='margin:.2em 0'>{items}</ul></div>"
    )


def _implied_html(lines: list[str]) -> str:
    """The switches a setting turned off with it (kafkalab.fixes), one line each."""
    return "".join(f"<p><i>{html.escape(line)}.</i></p>" for line in lines)


class TradeoffExplorer:
    """Choose acks, min.insync.replicas, replication factor, unclean election, leader epochs
    and how often faults strike; run timed simulations; compare the last settings you ran."""

    def __init__(self) -> None:
        self.model = TradeoffModel()
        d, style = TradeoffSettings(), _WIDE["style"]
        self.acks = w.Dropdown(
            options=["all", "1", "0"], value=d.acks, description="acks", style=style
        )
        self.min_isr = _slider("min.insync.replicas", d.min_insync_replicas, 1, 5)
        self.rf = _slider("replication factor", d.replication_factor, 1, 5)
        self.unclean = w.Checkbox(
            value=d.unclean_leader_election_enable,
            style=style,
            description="unclean.leader.election.enable",
        )
        self.epochs = w.Checkbox(
            value=d.leader_epochs, description="leader epochs (KIP-101)", style=style
        )
        self.faults = _slider("mean ms between faults", d.fault_interval_ms, 1000, 20000, 1000)
        self.seeds = _slider("seeds", d.seeds, 1, 10)
        self.run_button = _button("run", "kafkalab-run", "simulate these settings", "primary")
        self.run_button.on_click(lambda _: self.run())
        self.status = w.HTML()
        self.plot = w.Image(format="svg+xml", layout=w.Layout(max_width="1000px"))
        self.text = w.HTML()
        self.box = w.VBox(
            [
                self.acks,
                self.min_isr,
                self.rf,
                self.unclean,
                self.epochs,
                self.faults,
                self.seeds,
                self.run_button,
                self.status,
                self.plot,
                self.text,
            ]
        )

    def settings(self) -> TradeoffSettings:
        return TradeoffSettings(
            acks=self.acks.value,
            min_insync_replicas=self.min_isr.value,
            replication_factor=self.rf.value,
            unclean_leader_election_enable=self.unclean.value,
            leader_epochs=self.epochs.value,
            fault_interval_ms=self.faults.value,
            seeds=self.seeds.value,
        )

    def run(self) -> None:
        try:
            result = self.model.run(self.settings())
        except KafkalabError as err:
            self.status.value = f"<b>not allowed:</b> {html.escape(str(err))}"
            return
        compared = self.model.compared()
        self.status.value = (
            f"<p>{html.escape(result.settings.label)}: {result.lost_acked} of {result.acked} "
            f"acknowledged records lost over {result.settings.seeds} runs.</p>"
        ) + _implied_html(result.settings.implied)
        self.plot.value = render_tradeoffs(compared)
        self.text.value = _text_block("Text table of the comparison", describe_tradeoffs(compared))

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        compared = self.model.compared()
        still = render_tradeoffs(compared, "png") if compared else None
        return _bundle(self.box, "TradeoffExplorer()", still, **kwargs)


class IsrLagExplorer:
    """Bursts, a follower's speed and the lag rule in; ISR membership over time out."""

    def __init__(self) -> None:
        self.model = IsrLagModel()
        d = IsrLagSettings()
        self.burst = _slider("burst size (records)", d.burst, 100, 10000, 100)
        self.interval = _slider("ms between bursts", d.burst_interval_ms, 500, 20000, 500)
        self.speed = _slider("follower 3 fetches every (ms)", d.fetch_interval_ms, 500, 20000, 500)
        self.rule = w.Dropdown(
            options=LAG_RULES, value=d.lag_rule, description="lag rule", style=_WIDE["style"]
        )
        self.lag = _slider("replica.lag.time.max.ms", d.replica_lag_time_max_ms, 1000, 30000, 1000)
        self.status = w.HTML()
        self.plot = w.Image(format="svg+xml", layout=w.Layout(max_width="900px"))
        self.text = w.HTML()
        for control in (self.burst, self.interval, self.speed, self.rule, self.lag):
            control.observe(lambda _: self.run(), names="value")
        self.box = w.VBox(
            [
                self.burst,
                self.interval,
                self.speed,
                self.rule,
                self.lag,
                self.status,
                self.plot,
                self.text,
            ]
        )
        self.run()

    def settings(self) -> IsrLagSettings:
        return IsrLagSettings(
            burst=self.burst.value,
            burst_interval_ms=self.interval.value,
            fetch_interval_ms=self.speed.value,
            lag_rule=self.rule.value,
            replica_lag_time_max_ms=self.lag.value,
        )

    def run(self) -> None:
        from kafkalab.viz import describe_series

        result = self.model.run(self.settings())
        self.status.value = f"<p>{html.escape(result.summary())}</p>"
        self.plot.value = render_isr_lag(result)
        self.text.value = _text_block(
            "Text table of ISR membership", describe_series(result.cluster, x="time")
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        result = self.model.run(self.settings())
        text = f"IsrLagExplorer({result.summary()})"
        return _bundle(self.box, text, render_isr_lag(result, "png"), **kwargs)
