"""The explorers' logic, driven without a browser: step, rewind, fork, and what they show.

The learner's story of the playground notebook is here as a test: load kip101-loss, step
through it, watch m2 disappear, rewind, and see m2 again.
"""

from __future__ import annotations

import base64
import math
from typing import Any

import matplotlib
import pytest

matplotlib.use("Agg")

from kafkalab import KafkalabError, scenarios  # noqa: E402
from kafkalab.viz import removed_records  # noqa: E402
from kafkalab.widgets import (  # noqa: E402
    ClusterExplorer,
    ExplorerModel,
    IsrLagExplorer,
    IsrLagModel,
    IsrLagSettings,
    TradeoffExplorer,
    TradeoffModel,
    TradeoffSettings,
)
from kafkalab.widgets.render import describe_tradeoffs, render_explorer  # noqa: E402
from kafkalab.widgets.tradeoff import percentile  # noqa: E402


def _holders(model: ExplorerModel, value: str) -> list[int]:
    return [b for b, values in model.cluster.logs().items() if value in values]


def test_learner_story_m2_disappears_and_comes_back_on_rewind() -> None:
    m = ExplorerModel("kip101-loss")
    assert len(m.steps) == 16 and m.position == 0
    m.forward(5)
    assert _holders(m, "m2") == [1, 2] and m.alerts() == []
    m.forward(6)  # step 11: A restarts and truncates to its HW
    assert _holders(m, "m2") == [2]
    m.forward(5)  # to the end: B truncates too
    assert _holders(m, "m2") == []
    assert "acknowledged but lost: m2" in m.alerts()
    m.go_to(5)  # rewind
    assert _holders(m, "m2") == [1, 2] and m.alerts() == []
    assert [v.values for v in m.snapshot(16).values()] == [["m1"], ["m1"]]  # still known
    assert removed_records(m.snapshot(10), m.snapshot(11)) == {1: [(1, "m2", 0)]}
    m.forward(11)  # the same steps give the same end, byte for byte
    again = scenarios.replay(scenarios.get("kip101-loss"))[0]
    assert m.cluster.trace.digest() == again.trace.digest()


def test_the_invariant_report_appears_when_m2_is_lost() -> None:
    m = ExplorerModel("kip101-loss")
    m.go_to(12)
    assert m.alerts() == []
    m.forward()  # B's session expires and A leads without m2
    assert m.alerts() == ["acknowledged but lost: m2"]


def test_a_new_step_after_a_rewind_forks_a_branch() -> None:
    m = ExplorerModel("kip101-loss")
    m.go_to(11)
    m.go_to(9)  # HWs checkpointed (A's 1), nobody crashed
    outcome = m.fetch(1)  # instead of crashing A, let it learn HW 2
    assert outcome.ok and m.forks == 1
    assert len(m.steps) == 10 and m.position == 10
    assert m.cluster.replica(1).hw == 2
    m.advance(5000)  # the next periodic checkpoint writes HW 2 (a flush would not)
    m.crash(1)
    m.restart(1)
    assert _holders(m, "m2") == [1, 2]  # with HW 2 on disk A keeps m2
    assert m.forward().ok and m.position == 13  # the end of this branch: nothing to redo
    assert m.forks == 1
    with pytest.raises(KafkalabError, match="has not been reached"):
        m.snapshot(14)  # the old branch's later steps are gone
    m.go_to(9)
    assert m.snapshot(13)[1].values == ["m1", "m2"]


def test_a_refused_step_changes_nothing_and_says_why() -> None:
    m = ExplorerModel("kip101-loss")
    m.forward(3)
    before = (len(m.cluster.trace), list(m.steps))
    outcome = m.fetch(2)  # broker 2 leads
    assert not outcome.ok
    assert "broker 2 is the leader" in outcome.message
    assert (len(m.cluster.trace), m.steps) == before
    assert not m.restart(1).ok  # already running
    with pytest.raises(KafkalabError, match="use 0..16"):
        m.go_to(17)
    with pytest.raises(KafkalabError, match="unknown step 'explode'"):
        m.do("explode")
    with pytest.raises(KafkalabError, match="it takes broker"):
        m.do("flush", follower=1)


def test_variants_and_fresh_clusters() -> None:
    m = ExplorerModel("kip101-loss", variant="leader-epochs")
    assert all(s.kind != "check" for s in m.steps)
    m.forward(len(m.steps))
    assert m.cluster.logs() == {1: ["m1", "m2"], 2: ["m1", "m2"]}
    with pytest.raises(KafkalabError, match="no variant 'nope'"):
        m.load("kip101-loss", variant="nope")
    fresh = ExplorerModel()
    assert fresh.brokers == [1, 2, 3]
    fresh.produce("a", acks=1)
    fresh.fetch(2)
    fresh.advance(100)
    assert fresh.step_text() == "step 3 of 3: advance 100"
    assert fresh.back().ok and fresh.cluster.logs()[2] == ["a"]


@pytest.mark.parametrize("name", sorted(scenarios.catalog()))
def test_every_catalog_scenario_steps_to_the_end_and_back(name: str) -> None:
    m = ExplorerModel(name)
    assert m.go_to(len(m.steps)).ok
    end = m.cluster.trace.digest()
    m.go_to(0)
    assert m.position == 0 and len(m.step_events(0)) == len(m.cluster.trace)
    m.forward(len(m.steps))
    assert m.cluster.trace.digest() == end
    pictures = render_explorer(m)
    assert pictures.logs_svg.startswith(b"<?xml") and pictures.messages_svg.startswith(b"<?xml")


def test_the_pictures_follow_the_timeline() -> None:
    m = ExplorerModel("kip101-loss")
    m.go_to(11)
    at10 = render_explorer(m)
    assert "broker 1 lost 1:m2 since the previous step" in at10.logs_text
    assert b"removed" in at10.logs_svg
    assert at10.status.startswith("step 11 of 16: restart 1")
    assert "== step 11: restart 1" in at10.messages_text
    m.back()
    at9 = render_explorer(m)
    assert at9.logs_svg != at10.logs_svg
    assert render_explorer(m).logs_svg == at9.logs_svg  # the same state, the same bytes


def test_cluster_explorer_buttons_and_slider() -> None:
    e = ClusterExplorer("kip101-loss")
    first = e.logs.value
    e.next_button.click()
    assert e.logs.value != first and e.slider.value == 1 and e.slider.max == 16
    for _ in range(15):
        e.next_button.click()
    assert "acknowledged but lost: m2" in e.alerts.value
    e.slider.value = 5  # rewinding with the timeline
    assert e.model.position == 5 and "Invariants hold" in e.alerts.value
    e.broker.value = 2
    fetch = _find_button(e, "kafkalab-fetch")
    fetch.click()  # broker 2 leads: refused, and nothing changes
    assert "refused" in e.status.value and e.model.position == 5
    e.value.value = "m3"
    _find_button(e, "kafkalab-produce").click()
    assert e.model.position == 6 and e.model.forks == 1 and e.slider.max == 6
    assert e.value.value == "m4"  # the next value is ready
    _find_button(e, "kafkalab-flush").click()
    assert e.value.value == "m4"  # only a produce moves to the next value
    e.scenario.value = "controller-zombie"
    assert "(as written)" in e.variant.options
    e.load_button.click()
    assert e.model.scenario.name == "controller-zombie" and e.slider.value == 0
    assert list(e.broker.options) == [1, 2, 3, 4]
    e.scenario.value = "(a fresh 3-broker cluster)"
    e.load_button.click()
    e.broker.value = 3
    _find_button(e, "kafkalab-crash").click()  # acts on the new model
    assert e.model.steps[-1].kind == "crash"
    assert e.model.cluster.running() == [1, 2]


def _find_button(explorer: ClusterExplorer, css: str):
    stack = [explorer.box]
    while stack:
        widget = stack.pop()
        if css in getattr(widget, "_dom_classes", ()):
            return widget
        stack.extend(getattr(widget, "children", ()))
    raise AssertionError(f"no widget with class {css}")


# ---- trade-offs -----------------------------------------------------------------------------


def test_tradeoffs_compare_durability_availability_and_latency() -> None:
    m = TradeoffModel()
    often = {"fault_interval_ms": 2000}  # the same seeds, so the same faults, for both
    safe = m.run(TradeoffSettings(**often))
    risky = m.run(
        TradeoffSettings(
            acks="1",
            min_insync_replicas=1,
            unclean_leader_election_enable=True,
            leader_epochs=False,
            **often,
        )
    )
    assert safe.lost_acked == 0 and safe.acked_loss_rate == 0.0
    assert risky.lost_acked > 0 and risky.replay_hints
    assert safe.latency_ms["p99"] > risky.latency_ms["p99"]  # acks=all waits for the ISR
    assert 0 < safe.unavailability < 1
    assert m.run(TradeoffSettings(**often)) is safe  # cached: runs are deterministic
    assert [r.settings for r in m.compared()] == [risky.settings, safe.settings]
    table = describe_tradeoffs(m.compared())
    assert table.splitlines()[1].startswith("acks=1 minISR=1 RF=3 unclean no-epochs |")
    blind = m.run(TradeoffSettings(acks="0", min_insync_replicas=1, seeds=1, duration_ms=5000))
    assert math.isnan(blind.latency_ms["p50"]) and blind.unavailability == 0.0


def test_tradeoff_settings_are_checked() -> None:
    with pytest.raises(KafkalabError, match="min_insync_replicas=4 is not allowed"):
        TradeoffSettings(min_insync_replicas=4, replication_factor=3)
    with pytest.raises(KafkalabError, match="acks='2'"):
        TradeoffSettings(acks="2")
    assert percentile([5, 1, 3, 2, 4], 50) == 3.0 and percentile([1, 2], 99) == 2.0
    assert math.isnan(percentile([], 50))


def test_tradeoff_widget_runs_and_plots() -> None:
    e = TradeoffExplorer()
    e.seeds.value = 1
    e.run()
    assert b"<svg" in bytes(e.plot.value) and "acknowledged records lost" in e.status.value
    e.min_isr.value, e.rf.value = 3, 2
    e.run()
    assert "not allowed" in e.status.value


# ---- ISR lag -------------------------------------------------------------------------------


def test_bursts_make_the_legacy_rule_flap_and_the_time_rule_does_not() -> None:
    m = IsrLagModel()
    legacy = m.run(IsrLagSettings(lag_rule="time+messages", duration_ms=30000))
    assert legacy.shrinks >= 2 and legacy.expands >= 1
    assert any(s.isr == (1, 2) for s in legacy.samples)
    modern = m.run(IsrLagSettings(lag_rule="time", duration_ms=30000))
    assert modern.shrinks == 0 and modern.under_replicated_ms == 0


def test_a_follower_slower_than_the_lag_time_leaves_the_isr() -> None:
    r = IsrLagModel().run(IsrLagSettings(fetch_interval_ms=15000, duration_ms=30000))
    assert r.shrinks == 1 and r.samples[-1].isr == (1, 2)
    with pytest.raises(KafkalabError, match="lag_rule='fast'"):
        IsrLagSettings(lag_rule="fast")


def test_isr_lag_widget_reruns_when_a_control_changes() -> None:
    e = IsrLagExplorer()
    assert "0 ISR shrink(s)" in e.status.value
    e.rule.value = "time+messages"
    assert "0 ISR shrink(s)" not in e.status.value
    assert "Text table of ISR membership" in e.text.value


def test_the_sync_button_replicates_until_nothing_changes() -> None:
    e = ClusterExplorer(None)
    e.value.value = "m1"
    next(b for b in _buttons(e) if b.description == "produce").click()
    next(b for b in _buttons(e) if b.description == "sync").click()
    assert e.model.cluster.logs() == {1: ["m1"], 2: ["m1"], 3: ["m1"]}
    assert e.model.cluster.state()["hw"] == {1: 1, 2: 1, 3: 1}
    assert e.model.step_text().endswith("sync")


def _buttons(explorer: ClusterExplorer) -> list[Any]:
    found, todo = [], [explorer.box]
    while todo:
        widget = todo.pop()
        found += [widget] if widget.__class__.__name__ == "Button" else []
        todo += list(getattr(widget, "children", ()))
    return found


def test_each_explorer_stores_a_still_of_its_view_for_viewers_without_widgets() -> None:
    """Beside the live widget, each explorer's display holds a PNG of what it shows now (a
    notebook keeps it, so GitHub and nbviewer show the first view); the trade-off explorer
    has nothing to show before its first run."""

    def png(widget: object) -> bytes | None:
        data = widget._repr_mimebundle_()  # type: ignore[attr-defined]
        data = data[0] if isinstance(data, tuple) else data
        assert "application/vnd.jupyter.widget-view+json" in data
        return base64.b64decode(data["image/png"]) if "image/png" in data else None

    explorer = ClusterExplorer("kip101-loss")
    first = png(explorer)
    assert first is not None and first.startswith(b"\x89PNG")
    explorer.next_button.click()
    assert png(explorer) not in (None, first)  # the still follows the view
    tradeoffs = TradeoffExplorer()
    assert png(tradeoffs) is None
    tradeoffs.seeds.value = 1
    tradeoffs.run()
    assert (png(tradeoffs) or b"").startswith(b"\x89PNG")
    assert (png(IsrLagExplorer()) or b"").startswith(b"\x89PNG")


def test_the_explorer_notebook_stores_a_still_of_every_explorer() -> None:
    """What a viewer without widgets (GitHub, nbviewer) shows of the explorer notebook: a
    picture for each of the three explorers (the trade-off explorer after one run of its
    defaults, which the notebook makes)."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "notebooks" / "explorer.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    shown = {}
    for cell in cells:
        source = "".join(cell["source"])
        for name in ("ClusterExplorer(", "TradeoffExplorer(", "IsrLagExplorer("):
            if cell["cell_type"] == "code" and name in source:
                shown[name] = [o for o in cell["outputs"] if "image/png" in o.get("data", {})]
    assert set(shown) == {"ClusterExplorer(", "TradeoffExplorer(", "IsrLagExplorer("}
    assert all(shown.values()), [name for name, stills in shown.items() if not stills]
