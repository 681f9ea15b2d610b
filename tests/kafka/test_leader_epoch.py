"""Kafka's LeaderEpochIntegrationTest cases that send OffsetsForLeaderEpoch requests (its
TestFetcherThread), translated: a Cluster runs the steps; the request is handed to the leader
broker's actor and its answer read back.

Kafka test: LeaderEpochIntegrationTest
file: core/src/test/scala/unit/kafka/server/epoch/LeaderEpochIntegrationTest.scala
commit: 1eb7644349cb07139d6a3c1ad1986979647cac99
mode: zk and kraft (@ValueSource quorum), each test below runs in both.
"""

from __future__ import annotations

import pytest
from kafka_harness import epoch_request

from kafkalab import Cluster

MODES = ["zk", "kraft"]


def answer(c: Cluster, broker: int, epoch: int, tp: str = "demo-0") -> tuple[int, int, str]:
    resp = epoch_request(c.sim.actors[broker], epoch, tp=tp, now=c.now)
    return resp.leader_epoch, resp.end_offset, resp.error


def bounce(c: Cluster, broker: int) -> None:
    c.stop(broker)
    c.advance(10000)
    c.restart(broker)
    c.advance(10000)


# method: shouldIncreaseLeaderEpochBetweenLeaderRestarts
# (with shouldSupportRequestsForEpochsNotOnTheLeader, which Kafka appends to it)
@pytest.mark.parametrize("mode", MODES)
def test_leader_epoch_increases_between_leader_restarts(mode: str) -> None:
    # brokers 100 and 101 are 1 and 2; the partition lives on 101 alone; the ZooKeeper
    # controller is broker 100, which is never restarted
    c = Cluster(2, replicas=[2], config={"controller_mode": mode})
    if mode == "zk":
        assert c.controller == 1
    c.produce("IHeartLogs")
    assert answer(c, 2, 0)[:2] == (0, 1)
    assert c.replica(2).leo == 1
    bounce(c, 2)
    c.produce("IHeartLogs")
    assert answer(c, 2, 0)[:2] == (0, 1)
    assert answer(c, 2, 1)[:2] == (0, 1)  # no data written in epoch 1
    # the epoch goes up by two: leader -1 first, then the live replica again
    assert answer(c, 2, 2)[:2] == (2, 2)
    assert c.replica(2).leo == 2
    bounce(c, 2)
    c.produce("IHeartLogs")
    assert answer(c, 2, 0)[1] == 1
    assert answer(c, 2, 2)[1] == 2
    assert answer(c, 2, 4)[1] == 3 == c.replica(2).leo
    # shouldSupportRequestsForEpochsNotOnTheLeader
    assert answer(c, 2, 1)[1] == 1
    assert answer(c, 2, 3)[1] == 2
    assert answer(c, 2, 5)[1] == -1


# method: shouldSendLeaderEpochRequestAndGetAResponse
@pytest.mark.parametrize("mode", MODES)
def test_leader_epoch_request_gets_a_response(mode: str) -> None:
    # brokers 100, 101, 102 are 1, 2, 3: foo-0 on 100, foo-1 on 101, bar-0 on 100
    topics = {"foo": {"partitions": 2, "replicas": {0: [1], 1: [2]}}, "bar": {"replicas": [1]}}
    c = Cluster(3, topics=topics, config={"controller_mode": mode})
    for _ in range(10):
        c.produce("IHeartLogs", partition="foo-0")
    for _ in range(20):
        c.produce("OhAreThey", partition="foo-1")
    for _ in range(30):
        c.produce("IReallyDo", partition="bar-0")
    assert answer(c, 1, 0, "foo-0")[1] == 10
    assert answer(c, 1, 0, "bar-0")[1] == 30
    epoch, end, error = answer(c, 1, 0, "foo-1")  # not on broker 1
    assert (error, end) == ("NOT_LEADER_OR_FOLLOWER", -1)
    assert answer(c, 2, 0, "foo-1")[1] == 20
