"""Kafka's PartitionTest, translated: one broker actor leads (or follows) the partition and the
test hands it LeaderAndIsr, Fetch and AlterPartition answers as Kafka's test hands them to a
Partition. Mode: PartitionTest is a unit test, not parameterized by quorum.

Kafka test: PartitionTest
file: core/src/test/scala/unit/kafka/cluster/PartitionTest.scala
commit: 1eb7644349cb07139d6a3c1ad1986979647cac99
Kafka's brokerId, brokerId + 1, brokerId + 2 are brokers 1, 2, 3; "lastCaughtUpTimeMs = 0"
(never) is NEVER_MS; UnifiedLog.UnknownOffset (-1) is an unknown remote LEO (-1).
"""

from __future__ import annotations

import pytest
from kafka_harness import (
    T0,
    TP,
    alter_isr_sent,
    broker,
    complete_alter_isr,
    deliver,
    disk,
    epoch_request,
    fetch,
    leader_and_isr,
    produce,
)

from kafkalab.config import make_config
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.broker import NEVER_MS

LAG = 30000  # ReplicationConfigs.REPLICA_LAG_TIME_MAX_MS_DEFAULT


def state(b):
    return b.partitions[TP]


def maximal_isr(b) -> set[int]:
    r = state(b)
    return set(r.maximal_isr or r.isr)


def remote(b, rid: int) -> tuple[int, int]:
    x = state(b).remotes[rid]
    return x.last_caught_up_ms, x.leo


def shrink(b, now: int) -> Context:
    ctx = Context(now, b.id)
    b.on_timer(ctx, "isr_expiration", None)
    return ctx


# method: testMakeLeaderUpdatesEpochCache
def test_make_leader_updates_epoch_cache() -> None:
    b = broker(log=disk(0, 0, 5, 5))
    assert state(b).log.leo == 4
    leader_and_isr(b, 1, 8, (1,), (1, 2))
    resp = epoch_request(b, 8, current=8)
    assert (resp.end_offset, resp.leader_epoch) == (4, 8)


# method: testFollowerDoesNotJoinISRUntilCaughtUpToOffsetWithinCurrentLeaderEpoch
def test_follower_does_not_join_isr_until_caught_up_within_current_leader_epoch() -> None:
    b = broker()
    leader_and_isr(b, 1, 8, (1, 3), (1, 2, 3))
    assert state(b).leader_epoch == 8 and set(state(b).isr) == {1, 3}
    produce(b, "k1", "k2")
    last_offset_of_first_batch = 1
    produce(b, "k3", "k4", "k5")
    assert state(b).log.hw == 0
    fetch(b, 3, 0)
    fetch(b, 3, last_offset_of_first_batch)
    assert state(b).log.hw == last_offset_of_first_batch
    leader_and_isr(b, 3, 9, (1, 3), (1, 2, 3))  # becomes follower, then leader again
    leader_and_isr(b, 1, 10, (1, 3), (1, 2, 3))
    epoch_start = state(b).log.leo
    produce(b, "k6", "k7")
    fetch(b, 2, 0)
    fetch(b, 2, last_offset_of_first_batch)
    assert set(state(b).isr) == {1, 3}
    ctx = deliver(b, m.FetchRequest(TP, 2, epoch_start, None, 0, 99_001), src=2, now=T0)
    assert set(state(b).isr) == {1, 3}
    assert maximal_isr(b) == {1, 2, 3}
    (alter,) = alter_isr_sent(ctx)
    assert set(alter.isr) == {1, 2, 3}


# method: testUpdateFollowerFetchState
def test_update_follower_fetch_state() -> None:
    b = broker(log=disk(*[4] * 6))
    init = T0
    leader_and_isr(b, 1, 5, (1, 2), (1, 2), now=init)
    assert remote(b, 2) == (init, -1)
    fetch(b, 2, 3, now=init + 500)
    assert remote(b, 2) == (init, 3)
    fetch(b, 2, 6, now=init + 1000)
    assert remote(b, 2) == (init + 1000, 6)


# method: testIsrExpansion
def test_isr_expansion() -> None:
    b = broker(log=disk(*[4] * 10), live=(1, 2))
    leader_and_isr(b, 1, 5, (1,), (1, 2))
    assert set(state(b).isr) == {1}
    assert remote(b, 2) == (NEVER_MS, -1)
    fetch(b, 2, 3)
    assert set(state(b).isr) == {1}
    assert remote(b, 2) == (NEVER_MS, 3)
    r = Context(T0, 1)
    b.handle(r, 2, m.FetchRequest(TP, 2, 10, None, 0, 99_002))
    (alter,) = alter_isr_sent(r)
    assert list(alter.isr) == [1, 2]
    assert set(state(b).isr) == {1}
    assert maximal_isr(b) == {1, 2}
    assert remote(b, 2) == (T0, 10)
    complete_alter_isr(b, (1, 2), 2)
    assert set(state(b).isr) == {1, 2}


# method: testIsrNotExpandedIfUpdateFails
def test_isr_not_expanded_if_update_fails() -> None:
    b = broker(log=disk(*[4] * 10), live=(1, 2))
    leader_and_isr(b, 1, 5, (1,), (1, 2))
    ctx = Context(T0, 1)
    b.handle(ctx, 2, m.FetchRequest(TP, 2, 10, None, 0, 99_003))
    assert set(state(b).isr) == {1}
    assert maximal_isr(b) == {1, 2}
    assert len(alter_isr_sent(ctx)) == 1
    assert remote(b, 2) == (T0, 10)
    failed = complete_alter_isr(b, (1,), 1, error="INVALID_UPDATE_VERSION")
    # still no ISR change, the maximal ISR still holds the follower, and no retry
    assert set(state(b).isr) == {1}
    assert maximal_isr(b) == {1, 2}
    assert alter_isr_sent(failed) == []


# method: testHighWatermarkIncreasesWithFencedOrShutdownFollower (fenced, shutdown, unfenced)
@pytest.mark.parametrize("broker_state", ["fenced", "shutdown", "unfenced"])
def test_high_watermark_increases_with_fenced_or_shutdown_follower(broker_state: str) -> None:
    b = broker(log=disk(*[4] * 10), live=(1, 2), config=make_config(controller_mode="kraft"))
    leader_and_isr(b, 1, 5, (1, 2), (1, 2))
    fetch(b, 2, 10)
    assert remote(b, 2) == (T0, 10)
    assert state(b).log.hw == 10
    if broker_state != "unfenced":
        # the metadata cache now reports the follower fenced or shutting down: not live
        deliver(b, m.UpdateMetadata(1, (1,)), src="controller", now=T0)
    produce(b, *[f"n{i}" for i in range(10)])
    leader_and_isr(b, 1, 5, (1,), (1, 2), partition_epoch=2)
    assert state(b).role == "leader"
    assert set(state(b).isr) == {1} and maximal_isr(b) == {1}
    assert state(b).log.hw == (10 if broker_state == "unfenced" else 20)


# method: testMaybeShrinkIsr
def test_maybe_shrink_isr() -> None:
    b = broker(log=disk(*[4] * 10))
    init = T0
    leader_and_isr(b, 1, 5, (1, 2, 3), (1, 2, 3), now=init)
    assert state(b).log.hw == 0
    fetch(b, 2, 10, now=init)
    assert remote(b, 3) == (init, -1)
    assert alter_isr_sent(shrink(b, init)) == []
    assert set(state(b).isr) == {1, 2, 3}
    later = init + LAG + 1
    (alter,) = alter_isr_sent(shrink(b, later))
    assert list(alter.isr) == [1, 2]
    assert set(state(b).isr) == {1, 2, 3} and maximal_isr(b) == {1, 2, 3}
    assert state(b).log.hw == 0
    complete_alter_isr(b, (1, 2), 2, now=later)
    assert state(b).partition_epoch == 2
    assert set(state(b).isr) == {1, 2} and maximal_isr(b) == {1, 2}
    assert state(b).log.hw == state(b).log.leo


# method: testHighWatermarkAdvanceShouldNotAdvanceWhenUnderMinISR
def test_high_watermark_does_not_advance_under_min_isr() -> None:
    b = broker(log=disk(*[4] * 10), config=make_config({"min.insync.replicas": 3}))
    leader_and_isr(b, 1, 5, (1, 2), (1, 2, 3))
    assert state(b).log.hw == 0
    fetch(b, 2, 10)
    assert state(b).log.hw == 0
    ctx = Context(T0, 1)
    b.handle(ctx, 3, m.FetchRequest(TP, 3, 10, None, 0, 99_004))
    assert state(b).log.hw == 0
    assert len(maximal_isr(b)) == 3
    assert len(alter_isr_sent(ctx)) == 1
    complete_alter_isr(b, (1, 2, 3), 2)
    assert state(b).log.hw == 10


# method: testShouldNotShrinkIsrIfPreviousFetchIsCaughtUp
def test_should_not_shrink_isr_if_previous_fetch_is_caught_up() -> None:
    b = broker(log=disk(*[4] * 10))
    init = T0
    leader_and_isr(b, 1, 5, (1, 2), (1, 2), now=init)
    assert remote(b, 2) == (init, -1)
    first = init + 5000
    fetch(b, 2, 5, now=first)
    assert remote(b, 2) == (init, 5)
    assert state(b).log.hw == 5
    now = first + 5001
    produce(b, *[f"n{i}" for i in range(5)], now=now)
    fetch(b, 2, 10, now=now)
    assert remote(b, 2) == (first, 10)
    assert state(b).log.hw == 10
    assert alter_isr_sent(shrink(b, now)) == []
    assert set(state(b).isr) == {1, 2}


# method: testShouldNotShrinkIsrIfFollowerCaughtUpToLogEnd
def test_should_not_shrink_isr_if_follower_caught_up_to_log_end() -> None:
    b = broker(log=disk(*[4] * 10))
    leader_and_isr(b, 1, 5, (1, 2), (1, 2))
    assert remote(b, 2) == (T0, -1)
    fetch(b, 2, 10)
    assert remote(b, 2) == (T0, 10)
    assert state(b).log.hw == 10
    assert alter_isr_sent(shrink(b, T0 + 30001)) == []
    assert set(state(b).isr) == {1, 2}


# method: testDoNotResetReplicaStateIfLeaderEpochIsNotBumped
def test_do_not_reset_replica_state_if_leader_epoch_is_not_bumped() -> None:
    b = broker(log=disk(*[4] * 10))
    leader_and_isr(b, 1, 5, (1,), (1, 2))
    fetch(b, 2, 10, now=T0 + 1000)
    before = remote(b, 2)
    leader_and_isr(b, 1, 5, (1, 2), (1, 2), partition_epoch=2, now=T0 + 2000)
    assert remote(b, 2) == before
