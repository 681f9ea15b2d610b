"""Before 2.7 a leader writes ISR changes to ZooKeeper itself; the controller, and with it the
metadata clients read, learns of them through /isr_change_notification (0.9 to 2.6,
ReplicaManager.maybePropagateIsrChanges) or never (0.8). The controller's own decisions read
the written state (Kafka reads a partition's znode before it changes it)."""

from __future__ import annotations

import pytest

from kafkalab import Cluster, make_config, scenarios
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.broker import Broker
from kafkalab.protocol.log import Disk
from kafkalab.protocol.replica_manager import (
    ISR_CHANGE_PROPAGATION_BLACKOUT_MS,
    ISR_CHANGE_PROPAGATION_INTERVAL_MS,
    ISR_CHANGE_PROPAGATION_PERIOD_MS,
)

TP = "demo-0"


def _shrink(preset: str, mode: str, **config: object) -> Cluster:
    """Followers 2 and 3 catch up once and then stop fetching while the leader takes another
    record: it drops them from the ISR at its next check past replica.lag.time.max.ms."""
    c = Cluster(brokers=3, config={"preset": preset, "controller_mode": mode, **config})
    c.produce("m1")
    for follower in (2, 3, 2, 3):
        c.fetch(follower)
    c.produce("m2", acks=1)
    return c


def _shrunk_at(c: Cluster) -> int:
    (applied,) = [e for e in c.trace.of_kind("isr_applied") if e.data["isr"] == [1]]
    return applied.time_ms


@pytest.mark.parametrize("mode", ["dedicated", "zk"])
@pytest.mark.parametrize("preset", ["0.9", "2.6"])
def test_metadata_shows_a_leader_written_isr_change_at_the_first_quiet_check(
    preset: str, mode: str
) -> None:
    """The "isr-change-propagation" task runs every 2.5 s from broker start-up and writes the
    notification once the last change is more than 5 s old: a change at a multiple of 2.5 s
    (the ISR checks fall on 5 s or 10 s) is published 7.5 s later, since the check 5 s after
    it is not more than 5 s after it. Until then clients see the old ISR."""
    c = _shrink(preset, mode)
    c.advance(2 * c.config.replica_lag_time_max_ms)
    t = _shrunk_at(c)
    assert t % 2500 == 0
    c2 = _shrink(preset, mode)
    c2.advance(t + 7499)
    assert (c2.isr, c2.metadata_isr) == ([1], [1, 2, 3])
    c2.advance(1)
    assert c2.metadata_isr == [1]
    (note,) = c2.trace.of_kind("isr_change_notification")
    (published,) = c2.trace.of_kind("metadata_isr")
    assert (note.time_ms, note.data["tps"], published.data["notified_by"]) == (t + 7500, [TP], 1)
    assert c2.state()["metadata_isr"] == [1]


@pytest.mark.parametrize("mode", ["dedicated", "zk"])
def test_before_0_9_the_metadata_keeps_the_controllers_last_isr(mode: str) -> None:
    """0.8 (before KAFKA-1367): nothing tells the controller; the metadata keeps the ISR of
    its own last change of the partition (here, the one it created it with)."""
    c = _shrink("0.8", mode)
    c.advance(120000)
    assert (c.isr, c.metadata_isr) == ([1], [1, 2, 3])
    assert not c.trace.of_kind("isr_change_notification", "metadata_isr")


@pytest.mark.parametrize("mode", ["dedicated", "zk"])
def test_since_2_7_the_controller_publishes_the_isr_it_commits(mode: str) -> None:
    """AlterIsr (KIP-497): the controller writes the ISR and publishes it with its change."""
    c = _shrink("2.7", mode)
    c.advance(90000)
    assert c.isr == c.metadata_isr == [1]
    assert not c.trace.of_kind("isr_change_notification")


def test_the_controllers_own_change_is_published_and_reads_the_written_isr() -> None:
    """In 0.8 the metadata catches up only when the controller changes the partition itself;
    its election reads the ISR the leader wrote (ZooKeeper's), not the stale metadata: broker
    2, out of the ISR, is not elected when leader 1 fails (unclean election off)."""
    c = _shrink("0.8", "zk", unclean_leader_election_enable=False)
    c.advance(20000)
    assert (c.isr, c.metadata_isr) == ([1], [1, 2, 3])
    c.crash(1)
    c.advance(30000)
    assert (c.leader, c.isr, c.metadata_isr) == (None, [1], [1])


def _propagating_broker() -> Broker:
    config = make_config({"preset": "2.6"})
    b = Broker(1, config, {TP: Disk()}, auto_fetch=False)
    b.start(Context(0, 1))
    return b


def _tick(b: Broker, now: int) -> list[m.IsrChangeNotification]:
    ctx = Context(now, 1)
    b.on_timer(ctx, "isr_change_propagation", None)
    assert ctx.timers == [(ISR_CHANGE_PROPAGATION_PERIOD_MS, "isr_change_propagation", None)]
    return [msg for _, msg, _ in ctx.sends if isinstance(msg, m.IsrChangeNotification)]


def test_changes_every_few_seconds_wait_until_60_s_since_the_last_notification() -> None:
    """maybePropagateIsrChanges: while changes keep coming within 5 s of each check, nothing is
    written until more than 60 s (IsrChangePropagationInterval) have passed since the last
    notification (or, at first, since start-up); then one notification names them all."""
    assert (ISR_CHANGE_PROPAGATION_BLACKOUT_MS, ISR_CHANGE_PROPAGATION_INTERVAL_MS) == (
        5000,
        60000,
    )
    b = _propagating_broker()
    written_at = None
    for now in range(2500, 70001, 2500):
        b.partition.isr_changes[f"t-{now % 3}"] = None
        b.partition.last_isr_change_ms = now - 1000  # a change a second before each check
        if _tick(b, now):
            written_at = now if written_at is None else written_at
            break
    assert written_at == 62500  # the first check more than 60 s after start-up
    assert not b.partition.isr_changes


def test_one_notification_names_every_partition_changed_since_the_last() -> None:
    b = _propagating_broker()
    for tp in ("b-0", "a-1"):
        b.partition.isr_changes[tp] = None
    b.partition.last_isr_change_ms = 1000
    assert _tick(b, 5000) == []  # 1000 + 5000 is not before 5000
    (note,) = _tick(b, 7500)
    assert note == m.IsrChangeNotification(1, ("a-1", "b-0"))
    assert _tick(b, 10000) == []


@pytest.mark.parametrize(
    ("preset", "scheduled"), [("0.8", False), ("0.9", True), ("2.6", True), ("2.7", False)]
)
def test_the_propagation_task_runs_from_0_9_to_2_6(preset: str, scheduled: bool) -> None:
    ctx = Context(0, 1)
    Broker(1, make_config({"preset": preset}), {TP: Disk()}, auto_fetch=False).start(ctx)
    assert any(name == "isr_change_propagation" for _, name, _ in ctx.timers) == scheduled


def test_an_expect_block_can_name_the_metadata_isr() -> None:
    text = """
name: metadata-lag
brokers: 3
config: {preset: "0.9"}
steps:
  - produce: m1
  - {fetch: 2}
  - {fetch: 3}
  - {fetch: 2}
  - {fetch: 3}
  - produce: m2
  - advance: 22000
  - check: {isr: [1], metadata_isr: [3, 2, 1]}
  - advance: 6000
expect: {isr: [1], metadata_isr: [1]}
"""
    assert scenarios.run(scenarios.parse(text)).ok
