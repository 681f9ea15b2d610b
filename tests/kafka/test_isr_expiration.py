"""Kafka's IsrExpirationTest, translated: a leader with LEO 20 and replica.lag.time.max.ms 100;
"getOutOfSyncReplicas" is the AlterPartition shrink the ISR expiration task sends.

Kafka test: IsrExpirationTest
file: core/src/test/scala/unit/kafka/server/IsrExpirationTest.scala
commit: 1eb7644349cb07139d6a3c1ad1986979647cac99
mode: unit test (ZooKeeper metadata cache), not parameterized by quorum. Kafka's two brokers
are 1 (leader) and 2; updateFetchStateOrThrow is a follower Fetch at that offset.
"""

from __future__ import annotations

from kafka_harness import T0, TP, alter_isr_sent, broker, disk, fetch, leader_and_isr

from kafkalab.config import make_config
from kafkalab.protocol.actor import Context

LEO = 20


def leader_with_all_in_isr():
    config = make_config({"replica.lag.time.max.ms": 100, "replica.fetch.wait.max.ms": 100})
    b = broker(log=disk(*[0] * LEO, hw=LEO), live=(1, 2), config=config)
    leader_and_isr(b, 1, 0, (1, 2), (1, 2))
    return b


def out_of_sync(b, now: int) -> set[int]:
    ctx = Context(now, b.id)
    b.on_timer(ctx, "isr_expiration", None)
    isr = set(b.partitions[TP].isr)
    shrinks = alter_isr_sent(ctx)
    b.partitions[TP].alter_isr_pending = False  # only asking, as getOutOfSyncReplicas does
    b.partitions[TP].maximal_isr = ()
    return isr - set(shrinks[0].isr) if shrinks else set()


# method: testIsrExpirationForStuckFollowers
def test_isr_expiration_for_stuck_followers() -> None:
    b = leader_with_all_in_isr()
    fetch(b, 2, LEO - 1)
    assert out_of_sync(b, T0) == set()
    assert out_of_sync(b, T0 + 150) == {2}


# method: testIsrExpirationIfNoFetchRequestMade
def test_isr_expiration_if_no_fetch_request_made() -> None:
    b = leader_with_all_in_isr()
    assert out_of_sync(b, T0 + 150) == {2}


# method: testIsrExpirationForSlowFollowers
def test_isr_expiration_for_slow_followers() -> None:
    b = leader_with_all_in_isr()
    fetch(b, 2, LEO - 2)
    assert out_of_sync(b, T0) == set()
    fetch(b, 2, LEO - 1, now=T0 + 75)
    assert out_of_sync(b, T0 + 75) == set()
    assert out_of_sync(b, T0 + 150) == {2}
    fetch(b, 2, LEO, now=T0 + 150)
    assert out_of_sync(b, T0 + 150) == set()


# method: testIsrExpirationForCaughtUpFollowers
def test_isr_expiration_for_caught_up_followers() -> None:
    b = leader_with_all_in_isr()
    fetch(b, 2, LEO)
    assert out_of_sync(b, T0) == set()
    assert out_of_sync(b, T0 + 150) == set()
