"""Kafka's AbstractFetcherThreadTest, translated: a follower broker and a leader broker, each
doWork() one round trip (kafka_harness.round_trip). Mode: unit test, not parameterized by
quorum (Kafka runs it with and without truncation on fetch; the simulator truncates through
OffsetsForLeaderEpoch, the "truncateOnFetch = false" case).

Kafka test: AbstractFetcherThreadTest
file: core/src/test/scala/unit/kafka/server/AbstractFetcherThreadTest.scala
commit: 1eb7644349cb07139d6a3c1ad1986979647cac99
"""

from __future__ import annotations

from kafka_harness import TP, broker, disk, leader_and_isr, round_trip

from kafkalab.config import make_config
from kafkalab.protocol.log import Disk


def log_of(b) -> list[tuple[int, int]]:
    return [(r.offset, r.leader_epoch) for r in b.partitions[TP].log.records]


# method: testSimpleFetch
def test_simple_fetch() -> None:
    leader = broker(1, log=disk(0, 0, hw=2))
    leader_and_isr(leader, 1, 0, (1, 2), (1, 2))
    follower = broker(2, log=Disk())
    leader_and_isr(follower, 1, 0, (1, 2), (1, 2))
    round_trip(follower, leader)
    r = follower.partitions[TP]
    assert (r.log.leo, r.log.hw) == (2, 2)


# method: testTruncation
def test_truncation() -> None:
    leader = broker(1, log=disk(1, 3, 5, hw=2))
    leader_and_isr(leader, 1, 5, (1, 2), (1, 2))
    follower = broker(2, log=disk(0, 2, 4, hw=0))
    leader_and_isr(follower, 1, 5, (1, 2), (1, 2))
    for _ in range(10):
        round_trip(follower, leader)
        if log_of(follower) == log_of(leader):
            break
    assert log_of(follower) == log_of(leader)
    r = follower.partitions[TP]
    assert r.log.leo == leader.partitions[TP].log.leo
    assert r.log.hw == 2


# method: testTruncateToHighWatermarkIfLeaderEpochRequestNotSupported
def test_truncate_to_high_watermark_if_leader_epoch_request_not_supported() -> None:
    # a leader without OffsetsForLeaderEpoch: the pre-0.11 protocol (leader_epochs off)
    config = make_config({"leader_epochs": False})
    leader = broker(1, log=disk(0, 2, 4, 5, hw=2), config=config)
    leader_and_isr(leader, 1, 5, (1, 2), (1, 2))
    follower = broker(2, log=disk(0, 2, 4, hw=2), config=config)
    leader_and_isr(follower, 1, 5, (1, 2), (1, 2))
    r = follower.partitions[TP]
    assert r.log.leo == 2  # truncated to the HW before any fetch


# method: testFencedFetch
def test_fenced_fetch() -> None:
    leader = broker(1, log=disk(0, 0, hw=2))
    leader_and_isr(leader, 1, 0, (1, 2), (1, 2))
    follower = broker(2)
    leader_and_isr(follower, 1, 0, (1, 2), (1, 2))
    round_trip(follower, leader)
    assert follower.partitions[TP].log.leo == 2
    leader_and_isr(leader, 1, 1, (1, 2), (1, 2))  # bump the epoch on the leader
    resp = round_trip(follower, leader)
    assert resp.error == "FENCED_LEADER_EPOCH"
