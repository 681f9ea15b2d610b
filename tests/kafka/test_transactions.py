"""TransactionsTest's assertions that an expect block cannot state; the scenario files in
TransactionsTest/ hold the rest of each test.

- testFencingOnSend: Kafka accepts ProducerFencedException or InvalidProducerEpochException for
  the fenced producer's send.
- testBumpTransactionalEpoch: the producer epoch the partition holds for the producer rises.

Kafka test: TransactionsTest
method: testFencingOnSend, testBumpTransactionalEpoch
file: core/src/test/scala/integration/kafka/api/TransactionsTest.scala
commit: 1eb7644349cb07139d6a3c1ad1986979647cac99
mode: zk and kraft (@ValueSource quorum)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab import scenarios

FILE = Path(__file__).parent / "TransactionsTest" / "testFencingOnSend.yaml"
BUMP = Path(__file__).parent / "TransactionsTest" / "testBumpTransactionalEpoch.yaml"


@pytest.mark.parametrize("mode", ["zk", "kraft"])
def test_fenced_producer_send_fails(mode: str) -> None:
    cluster, _ = scenarios.replay(scenarios.load(str(FILE)), {"controller_mode": mode})
    assert cluster.report().errors.get("5") in {"PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"}


def _epochs_on_test_topic(overrides: dict[str, str]) -> tuple[list[int], list[str]]:
    """Run testBumpTransactionalEpoch: the producer epoch test-topic-0's leader holds for the
    producer after each step, and what the read_committed consumer read."""
    scenario = scenarios.load(str(BUMP))
    cluster, _ = scenarios.replay(scenario, overrides)
    assert cluster.partition_states()["test-topic-0"].leader == 3  # the broker the file stops
    producers = cluster.sim.actors[3].partitions["test-topic-0"].producers.producers
    (entry,) = producers.values()
    markers = [
        e.data["producer_epoch"]
        for e in cluster.trace.of_kind("marker")
        if e.data["tp"] == "test-topic-0"
    ]
    return [*markers, entry.epoch], cluster.report().consumed["reader"]


@pytest.mark.parametrize("mode", ["zk", "kraft"])
def test_the_abort_after_a_timed_out_send_bumps_the_epoch(mode: str) -> None:
    """testBumpTransactionalEpoch (KAFKA-8805, 2.5.0): the send that timed out makes the
    transaction abortable with an epoch bump (TransactionManager.maybeTransitionToErrorState
    sets epochBumpRequired); the abort's EndTxn is followed by InitProducerId with the current
    epoch (KIP-360), so the next transaction writes under a higher epoch. The markers of
    test-topic-0 carry epoch 0 (first commit) and 0 (the abort, under the old epoch); the last
    commit and the partition's producer state carry 1."""
    epochs, read = _epochs_on_test_topic({"controller_mode": mode})
    assert epochs == [0, 0, 1, 1]
    assert read == ["4", "2", "4", "1", "3"]


def test_before_2_5_the_abort_keeps_the_epoch() -> None:
    """Before KIP-360 (2.4.0) the abort is EndTxn alone (TransactionManager.beginAbort): the
    failed send still only makes the transaction abortable (maybeTransitionToErrorState), and
    the next transaction goes on under the same epoch; the records are the same."""
    epochs, read = _epochs_on_test_topic({"controller_mode": "zk", "preset": "2.4"})
    assert epochs == [0, 0, 0, 0]
    assert read == ["4", "2", "4", "1", "3"]
