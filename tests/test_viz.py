"""The drawings: each shows what a learner needs, reads the same every time, and has a text twin.

They are checked through the artists they create (texts, patches, lines) and through their
``describe_*`` text forms, never by comparing pixels.
"""

from __future__ import annotations

import subprocess
import sys

import matplotlib
import pytest

matplotlib.use("Agg")

from matplotlib.collections import PatchCollection  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from kafkalab import Cluster, KafkalabError, scenarios  # noqa: E402
from kafkalab.protocol.txn_states import TXN_STATES, TXN_TRANSITIONS  # noqa: E402
from kafkalab.viz import (  # noqa: E402
    OKABE_ITO,
    describe_epoch_cache,
    describe_logs,
    describe_messages,
    describe_series,
    describe_txn_states,
    draw_epoch_cache,
    draw_isr,
    draw_logs,
    draw_messages,
    draw_offsets,
    draw_truncation,
    draw_txn_states,
    message_flow,
    removed_records,
    render,
    replica_labels,
    replication_series,
)
from kafkalab.viz._artists import Labels  # noqa: E402
from kafkalab.viz._style import EPOCH_COLORS, epoch_color, epoch_hatch  # noqa: E402


def _axes():
    return Figure(figsize=(8, 5)).add_subplot()


def _texts(ax) -> list[str]:
    """Every label of a picture: matplotlib texts and kafkalab's fast labels."""
    fast = [text for a in ax.artists if isinstance(a, Labels) for text in a.texts()]
    return [t.get_text() for t in ax.texts] + fast


def _svg(ax) -> bytes:
    return render(ax, "svg")


def _kip101_snapshots() -> tuple[Cluster, list[dict]]:
    """kip101-loss replayed step by step, with a snapshot of the replicas after each step."""
    s = scenarios.get("kip101-loss")
    c = s.cluster()
    snaps = [c.replicas_view()]
    for step in s.steps:
        scenarios.apply_step(c, step)
        snaps.append(c.replicas_view())
    return c, snaps


KIP101 = _kip101_snapshots()


# ---- replica logs ---------------------------------------------------------------------------


def test_log_drawing_labels_every_record_and_marker() -> None:
    cluster, _ = KIP101
    ax = draw_logs(cluster, ax=_axes())
    texts = _texts(ax)
    assert texts.count("m1\ne0") == 2  # both replicas end with m1 only, written in epoch 0
    assert not any(t.startswith("m2") for t in texts)
    assert {"HW 1", "LEO 1", "offset", "0"} <= set(texts)
    assert replica_labels(ax) == ["broker 1\nleader, epoch 1\nin ISR", "broker 2\nfollower"]


def test_a_truncation_leaves_a_ghost_of_the_removed_record() -> None:
    _, snaps = KIP101
    before, after = snaps[10], snaps[11]  # step 11: A restarts and truncates to its HW
    assert removed_records(before, after) == {1: [(1, "m2", 0)]}
    ax = draw_logs(after, previous=before, ax=_axes())
    assert "m2\nremoved" in _texts(ax)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "removed since the previous step" in legend
    stacked = draw_truncation(before, after, ax=_axes())
    labels = replica_labels(stacked)
    assert labels[0].startswith("before: broker 1") and labels[2].startswith("after: broker 1")
    assert "broker 1 lost 1:m2 since the previous step" in describe_logs(after, previous=before)


def test_records_are_coloured_and_hatched_by_leader_epoch() -> None:
    s = scenarios.get("kip101-divergence")
    c, _ = scenarios.replay(s, {"leader_epochs": True}, checks=False)
    ax = draw_logs(c, ax=_axes())
    fills = {
        c.get_label(): (matplotlib.colors.to_hex(c.get_facecolor()[0]), c.get_hatch() or "")
        for c in ax.collections
        if isinstance(c, PatchCollection)
    }
    assert fills["leader epoch 0"] == (epoch_color(0).lower(), epoch_hatch(0))
    assert fills["leader epoch 1"] == (epoch_color(1).lower(), epoch_hatch(1))
    epochs = {t.split("\n")[1] for t in _texts(ax) if t.startswith("m")}
    assert epochs == {"e0", "e1"}


def test_epoch_cues_never_rely_on_colour_alone() -> None:
    assert set(EPOCH_COLORS) <= set(OKABE_ITO.values())
    cues = {(epoch_color(e), epoch_hatch(e)) for e in range(8)}
    assert len(cues) == 8
    assert len({epoch_hatch(e) for e in range(8)}) == 8


def test_long_logs_are_drawn_as_one_bar_per_epoch() -> None:
    c = Cluster(brokers=2, leader=1)
    c.produce("burst", count=500, acks=1)
    ax = draw_logs(c, ax=_axes())
    assert "e0: offsets 0–499" in _texts(ax)
    [bars] = [c for c in ax.collections if isinstance(c, PatchCollection)]
    assert len(bars.get_paths()) == 1  # one bar for the leader; the follower's log is empty


def test_pictures_are_deterministic_and_leave_rcparams_alone() -> None:
    cluster, _ = KIP101
    before = dict(matplotlib.rcParams)
    first = _svg(draw_logs(cluster, ax=_axes()))
    second = _svg(draw_logs(cluster, ax=_axes()))
    assert first == second
    assert _svg(draw_messages(cluster, ax=_axes(), steps=13)) == _svg(
        draw_messages(cluster, ax=_axes(), steps=13)
    )
    assert dict(matplotlib.rcParams) == before


def test_pictures_sit_on_a_white_card_with_dark_text() -> None:
    with matplotlib.rc_context({"text.color": "white", "axes.facecolor": "black"}):
        ax = draw_logs(KIP101[0], ax=_axes())
    assert matplotlib.colors.to_hex(ax.get_facecolor()) == "#ffffff"
    assert all(matplotlib.colors.to_hex(t.get_color()) != "#ffffff" for t in ax.texts)


def test_bad_sources_get_a_clear_error() -> None:
    with pytest.raises(KafkalabError, match="give a Cluster"):
        draw_logs("kip101-loss")
    with pytest.raises(KafkalabError, match="cannot read a trace"):
        draw_messages(42)


# ---- messages -------------------------------------------------------------------------------


def test_every_delivery_is_matched_to_its_send() -> None:
    cluster, _ = KIP101
    flow = message_flow(cluster)
    delivered = [a for a in flow.arrows if a.outcome == "delivered"]
    assert len(delivered) == len(cluster.trace.of_kind("deliver"))
    assert all(a.sent < a.ended for a in delivered)
    assert flow.lanes == ["producer", "1", "2", "controller", "zk"]


def test_crashes_and_restarts_are_marked_on_their_lanes() -> None:
    flow = message_flow(KIP101[0])
    assert [(m.node, m.kind) for m in flow.marks] == [
        ("1", "crash"),
        ("1", "restart"),
        ("2", "crash"),
        ("2", "restart"),
    ]
    text = describe_messages(KIP101[0], steps=14)
    assert "broker 2 -> broker 1 | Fetch @2 | delivered" in text
    assert "OFFSET_OUT_OF_RANGE" in text


def test_lost_messages_end_in_a_cross() -> None:
    c = Cluster(brokers=2, leader=1)
    c.produce("m1", acks=1)
    c.fetch(2, response="lost")
    c.disconnect(1, 2)
    c.produce("m2", acks=1)
    flow = message_flow(c, steps=(2, 4))
    lost = [a for a in flow.arrows if a.outcome == "lost"]
    assert [(a.label.split()[0], a.reason) for a in lost] == [("Fetch", "lost")]
    ax = draw_messages(c, ax=_axes(), steps=(2, 4))
    assert any("LOST (lost)" in t for t in _texts(ax))
    assert any(ln.get_marker() == "X" for ln in ax.lines)
    assert "| LOST (lost)" in describe_messages(c, steps=(2, 4))


def test_cut_links_drop_what_is_sent_across_them() -> None:
    s = scenarios.get("np-leader-isolated")
    c, _ = scenarios.replay(s)
    flow = message_flow(c)
    reasons = {a.reason for a in flow.arrows if a.outcome == "lost"}
    assert "link_cut" in reasons
    assert any(b.text.startswith("link") and "cut" in b.text for b in flow.boundaries)


def test_message_windows_and_hidden_types() -> None:
    cluster, _ = KIP101
    whole = message_flow(cluster)
    one = message_flow(cluster, steps=14)
    assert [b.text for b in one.boundaries] == ["step 14: fetch 2"]
    quiet = message_flow(cluster, hide=["UpdateMetadata"])
    assert not any(a.label == "UpdateMetadata" for a in quiet.arrows)
    assert len(quiet.arrows) < len(whole.arrows)
    clipped = message_flow(cluster, max_rows=20)
    assert clipped.rows == 20 and clipped.omitted > 0


# ---- time series ----------------------------------------------------------------------------


def test_series_follow_hw_leo_and_isr_through_kip101() -> None:
    kind, samples = replication_series(KIP101[0])
    assert kind == "step"
    by_step = {s.x: s for s in samples}
    assert by_step[6].hw == {1: 1, 2: 2} and by_step[6].leo == {1: 2, 2: 2}
    assert 1 not in by_step[9].leo  # broker 1 is down after its crash
    assert by_step[10].leo[1] == 1  # and truncated to its HW after the restart
    assert by_step[12].isr == (1,) and by_step[12].leader == 1
    assert by_step[12].under_replicated == 1
    assert by_step[14].leo == {1: 1, 2: 1}
    table = describe_series(KIP101[0])
    assert table.splitlines()[0] == "step | leader | ISR | b1 HW/LEO | b2 HW/LEO | URP | offline"
    assert "14 | 1 | [1] | 1/1 | 1/1 | 1 | 0" in table


def test_series_of_a_timed_run_use_simulated_time() -> None:
    from kafkalab.sim.timed import simulate

    _, cluster = simulate(seed=3, duration_ms=4000, settle_ms=1000, faults=[], keep_cluster=True)
    kind, samples = replication_series(cluster)
    assert kind == "time"
    last = samples[-1]
    assert last.x == last.time_ms == cluster.trace[-1].time_ms
    assert len({*last.hw.values(), *last.leo.values()}) == 1 and last.hw[1] > 100
    ax = draw_offsets(cluster, ax=_axes())
    assert ax.get_xlabel() == "simulated time (ms)"


def test_isr_drawing_shows_membership_and_health() -> None:
    ax = draw_isr(KIP101[0], ax=_axes())
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == [
        "broker 1 in ISR",
        "broker 2 in ISR",
        "ISR size (0–2)",
        "under-replicated partitions (0–2)",
        "offline partitions (0–2)",
    ]
    hatched = [p for c in ax.collections for p in [c] if c.get_hatch()]
    assert hatched, "the leader's ISR bar is hatched"
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["leader", "follower"]
    assert [h.get_hatch() for h in legend.legend_handles] == ["//", None]
    ax = draw_offsets(KIP101[0], ax=_axes())
    assert "broker 1 HW" in [t.get_text() for t in ax.get_legend().get_texts()]


# ---- epoch cache, transactions ---------------------------------------------------------------


def test_epoch_cache_drawing_and_text() -> None:
    s = scenarios.get("kip101-divergence")
    c, _ = scenarios.replay(s, {"leader_epochs": True}, checks=False)
    ax = draw_epoch_cache(c, ax=_axes())
    assert "epoch 1 from 1" in _texts(ax)
    assert "epoch 0 starts at 0 (ends at 1); epoch 1 starts at 1 (ends at 2)" in (
        describe_epoch_cache(c)
    )


def test_txn_state_machine_is_drawn_from_its_table() -> None:
    ax = draw_txn_states(ax=_axes(), highlight="Ongoing")
    texts = _texts(ax)
    for state in TXN_STATES:
        assert state in texts or f"{state}\n(current)" in texts
    drawn = "\n".join(texts)
    for t in TXN_TRANSITIONS:
        assert t.trigger in drawn
    table = describe_txn_states().splitlines()
    assert len(table) == len(TXN_TRANSITIONS) + 1
    assert "Ongoing | EndTxn(commit) | PrepareCommit" in table
    with pytest.raises(ValueError, match="not a state"):
        draw_txn_states(highlight="Committed")


def test_the_core_never_imports_the_views() -> None:
    code = (
        "import sys, kafkalab, kafkalab.scenarios, kafkalab.sim.timed, kafkalab.cli\n"
        "heavy = [m for m in ('matplotlib', 'ipywidgets', 'kafkalab.viz', 'kafkalab.widgets')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---- labels that overlap ----------------------------------------------------------------------


def test_overlapping_labels_are_found_and_only_drawn_ones_count() -> None:
    from kafkalab.viz.labels import overlaps

    fig = Figure(figsize=(4, 3))
    ax = fig.add_subplot()
    ax.text(0.5, 0.5, "hello world")
    ax.text(0.52, 0.5, "overlapping text")
    ax.text(0.5, 0.1, "far away")
    assert overlaps(fig) == [("hello world", "overlapping text")]
    hidden = Figure(figsize=(4, 3)).add_subplot()
    hidden.plot([0, 1], [0, 1])
    hidden.axis("off")  # its tick labels exist but are not drawn
    hidden.text(0.0, 0.0, "at the corner where tick labels would be")
    hidden.set_xlim(0, 1)
    assert overlaps(hidden.figure) == []  # type: ignore[arg-type]


def test_the_watch_hook_prints_each_overlap_when_a_figure_is_drawn(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from kafkalab.viz.labels import RC_DIR, watch

    assert "figure.hooks: kafkalab.viz.labels:watch" in (RC_DIR / "matplotlibrc").read_text()
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = Figure(figsize=(4, 3))
    FigureCanvasAgg(fig)
    watch(fig)
    ax = fig.add_subplot()
    ax.text(0.5, 0.5, "one")
    fig.canvas.draw()
    assert capsys.readouterr().out == ""
    ax.text(0.505, 0.5, "two")
    fig.canvas.draw()
    assert capsys.readouterr().out == "label overlap: 'one' and 'two'\n"


@pytest.mark.parametrize("name", ["kip101-loss", "kip279-divergence", "np-leader-isolated"])
def test_the_explorer_stills_have_no_overlapping_labels(name: str) -> None:
    """The explorer's still (the picture a static viewer shows) at every step of a scenario."""
    from kafkalab.viz.labels import overlaps
    from kafkalab.widgets.explorer import ExplorerModel
    from kafkalab.widgets.render import still_figure

    assert name in scenarios.catalog()
    model = ExplorerModel(name)
    for position in range(len(model.steps) + 1):
        assert model.go_to(position).ok
        found = overlaps(still_figure(model))
        assert found == [], f"{name} at step {position}: {found}"


def test_the_course_labels_count_and_can_move_off_one_another() -> None:
    """Labels drawn by kafkalab's own artist (a message's name on its arrow) are checked
    like any text, and ``avoid`` moves a label off one drawn before it."""
    from kafkalab.viz.labels import overlaps

    crowded = _axes()
    labels = Labels()
    labels.add(0.5, 0.5, "first label")
    labels.add(0.5, 0.5, "second label")
    crowded.add_artist(labels)
    assert overlaps(crowded.figure) == [("first label", "second label")]
    spaced = _axes()
    labels = Labels(avoid=True)
    for text in ("one", "two", "three"):
        labels.add(0.5, 0.5, text)
    spaced.add_artist(labels)
    assert overlaps(spaced.figure) == []
    (_, first), (_, second), _ = labels.placed
    assert first.x0 == second.x0 and abs(first.y0 - second.y0) >= first.height


# ---- message diagrams: width, a node's own actions, time to scale -------------------------------


def _timed_produce() -> Cluster:
    """Lesson 2's run: idle followers, then one record at 1700 ms (purgatory waits of 500 ms)."""
    t = Cluster(brokers=3, mode="timed", seed=3)
    t.at(1700, "produce", "m1")
    t.run(until_ms=3000)
    return t


def test_message_diagrams_use_their_width_for_the_lanes() -> None:
    ax = draw_messages(KIP101[0], ax=_axes(), steps=(1, 4))
    left, right = ax.get_xlim()
    assert left == -0.5  # the step names sit inside, over the first lane: no empty margin
    lanes = len(message_flow(KIP101[0], steps=(1, 4)).lanes)
    assert lanes / (right - left) > 0.9  # each lane's unit of width, and nothing beside them


def test_time_to_scale_makes_a_wait_as_tall_as_it_was_long() -> None:
    flow = message_flow(_timed_produce(), steps=1)
    rows = flow.y_of(None)
    scaled = flow.y_of(100)
    times = flow.row_times
    waits = [
        (r, r2)
        for r, r2 in zip(sorted(times), sorted(times)[1:], strict=False)
        if times[r2] - times[r] >= 400
    ]
    assert waits, "the run has its purgatory waits"
    for r, r2 in waits:
        assert rows(r2) - rows(r) == r2 - r  # by default one row each, whatever the time
        gap = scaled(r2) - scaled(r)
        assert gap == pytest.approx(r2 - r + (times[r2] - times[r]) / 100)
    ax = draw_messages(flow, ax=_axes(), time_scale_ms=100)
    assert "1,700 ms" in _texts(ax)
    assert "to scale" in ax.get_title(loc="left")


def test_a_message_a_node_sends_itself_is_a_mark_on_its_lane() -> None:
    from kafkalab.viz.messages import Arrow, Flow

    flow = Flow(
        ["1", "2"],
        arrows=[
            Arrow("1", "1", 1, 2, "ExpireSession", "coordination", "delivered"),
            Arrow("1", "2", 3, 4, "Fetch @0", "replication", "delivered"),
        ],
        rows=5,
    )
    ax = draw_messages(flow, ax=_axes())
    shafts = [seg for coll in ax.collections for seg in coll.get_segments() if len(seg) == 2]
    assert not [
        s
        for s in shafts
        if s[0][0] == s[1][0] and s[0][1] != s[1][1] and s[0][0] == 0 and s[1][1] < 5
    ]  # no arrow along lane 1's own line
    assert any(ln.get_marker() == "D" for ln in ax.lines)
    assert "ExpireSession" in _texts(ax)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "a node's own action" in legend


def test_an_isr_change_at_the_end_of_a_run_is_drawn_inside_the_plot() -> None:
    s = scenarios.get("stuck-follower-leaves-isr")
    c, _ = scenarios.replay(s)
    ax = draw_isr(c, ax=_axes(), x="time")
    samples = replication_series(c, x="time")[1]
    assert ax.get_xlim()[1] > samples[-1].x + (samples[-1].x - samples[0].x) / 20


def test_the_tradeoff_and_isr_lag_explorer_pictures_have_no_overlapping_labels() -> None:
    """The two explorers drawn without pyplot: the trade-off comparison at its fullest (six
    settings side by side) and the ISR-lag picture under each lag rule."""
    from kafkalab.viz.labels import overlaps
    from kafkalab.widgets.isr_lag import LAG_RULES, IsrLagModel, IsrLagSettings
    from kafkalab.widgets.render import tradeoffs_figure
    from kafkalab.widgets.tradeoff import TradeoffModel, TradeoffSettings

    model = TradeoffModel()
    for acks, min_isr, unclean in [
        ("all", 2, False),
        ("1", 1, False),
        ("all", 1, True),
        ("0", 1, False),
        ("all", 3, False),
        ("1", 2, True),
    ]:
        settings = TradeoffSettings(
            acks=acks,
            min_insync_replicas=min_isr,
            unclean_leader_election_enable=unclean,
            seeds=1,
            duration_ms=4000,
            settle_ms=2000,
        )
        model.run(settings)
    compared = model.compared()
    assert len(compared) == 6
    assert overlaps(tradeoffs_figure(compared)) == []
    isr_model = IsrLagModel()
    for rule in LAG_RULES:
        result = isr_model.run(IsrLagSettings(lag_rule=rule, duration_ms=20000))
        ax = draw_isr(result.cluster, ax=_axes(), x="time")
        assert overlaps(ax.figure) == [], rule
