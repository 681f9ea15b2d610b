"""Kafka's ProducerFailureHandlingTest.testNotEnoughReplicasAfterBrokerShutdown, translated:
Kafka accepts any of three errors, so it is a test function rather than a scenario file.

Kafka test: ProducerFailureHandlingTest
method: testNotEnoughReplicasAfterBrokerShutdown
file: core/src/test/scala/integration/kafka/api/ProducerFailureHandlingTest.scala
commit: 1eb7644349cb07139d6a3c1ad1986979647cac99
mode: zk and kraft (@ValueSource quorum). Two brokers, min ISR 2, acks=all, retries 0,
controlled shutdown off; "brokers.head" is broker 1.
"""

from __future__ import annotations

import pytest

from kafkalab import Cluster

ALLOWED = {"NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "REQUEST_TIMED_OUT"}


@pytest.mark.parametrize("mode", ["zk", "kraft"])
def test_not_enough_replicas_after_broker_shutdown(mode: str) -> None:
    c = Cluster(
        2,
        leader=1,
        config={
            "controller_mode": mode,
            "min.insync.replicas": 2,
            "controlled.shutdown.enable": False,
        },
    )
    c.produce("value")
    c.fetch(2)
    c.fetch(2)
    assert c.report().acked == ["value"]
    c.stop(1)
    c.produce("value2")
    for _ in range(3):
        for f in c.followers():
            c.fetch(f)
    c.advance(31000)
    assert c.report().errors.get("value2") in ALLOWED
