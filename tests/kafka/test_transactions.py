"""TransactionsTest.testFencingOnSend: Kafka accepts ProducerFencedException or
InvalidProducerEpochException for the fenced producer's send, which an expect block cannot say;
the scenario file TransactionsTest/testFencingOnSend.yaml holds the rest of the test.

Kafka test: TransactionsTest
method: testFencingOnSend
file: core/src/test/scala/integration/kafka/api/TransactionsTest.scala
commit: 1eb7644349cb07139d6a3c1ad1986979647cac99
mode: zk and kraft (@ValueSource quorum)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab import scenarios

FILE = Path(__file__).parent / "TransactionsTest" / "testFencingOnSend.yaml"


@pytest.mark.parametrize("mode", ["zk", "kraft"])
def test_fenced_producer_send_fails(mode: str) -> None:
    cluster, _ = scenarios.replay(scenarios.load(str(FILE)), {"controller_mode": mode})
    assert cluster.report().errors.get("5") in {"PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"}
