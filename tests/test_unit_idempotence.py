"""Idempotence on the broker (KIP-98): producer state, duplicates, sequence and epoch checks,
and the state followers rebuild so that a new leader deduplicates too."""

from __future__ import annotations

from kafkalab import Cluster
from kafkalab.protocol.groups import group_partition, java_string_hash_code
from kafkalab.protocol.log import Record
from kafkalab.protocol.producer_state import BatchMetadata, ProducerStateManager

PID = 7


def batch(first_seq: int, last_seq: int, first_offset: int) -> BatchMetadata:
    return BatchMetadata(first_seq, last_seq, first_offset, first_offset + last_seq - first_seq)


def test_a_producer_the_partition_has_no_state_for_may_start_at_any_sequence() -> None:
    # ProducerAppendInfo.checkSequence since 2.5 (KIP-360).
    state = ProducerStateManager()
    assert state.check(PID, 0, 0, 2) == ("APPEND", None)
    assert state.check(PID, 0, 3, 3) == ("APPEND", None)
    state.update(PID, 0, batch(0, 2, 100))
    assert state.check(PID, 0, 4, 4)[0] == "OUT_OF_ORDER_SEQUENCE_NUMBER"


def test_the_last_five_batches_are_recognised_as_duplicates() -> None:
    state = ProducerStateManager()
    for i in range(6):
        state.update(PID, 0, batch(i, i, 100 + i))
    assert state.check(PID, 0, 5, 5) == ("DUPLICATE", batch(5, 5, 105))
    assert state.check(PID, 0, 1, 1) == ("DUPLICATE", batch(1, 1, 101))
    # the oldest of six batches is forgotten: a retry that old is out of order
    assert state.check(PID, 0, 0, 0)[0] == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert state.check(PID, 0, 6, 7) == ("APPEND", None)
    assert state.check(PID, 0, 7, 7)[0] == "OUT_OF_ORDER_SEQUENCE_NUMBER"


def test_epochs_fence_zombies_and_a_new_epoch_restarts_the_sequence() -> None:
    state = ProducerStateManager()
    state.update(PID, 3, batch(0, 4, 0))
    assert state.check(PID, 2, 5, 5)[0] == "INVALID_PRODUCER_EPOCH"
    assert state.check(PID, 4, 5, 5)[0] == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert state.check(PID, 4, 0, 0) == ("APPEND", None)


def test_rebuilding_from_the_log_gives_the_same_state() -> None:
    records = [
        Record(0, "a", 0, PID, 0, 0, 0),
        Record(1, "b", 0, PID, 0, 1, 0),
        Record(2, "x", 0),
        Record(3, "c", 0, PID, 0, 2, 2),
    ]
    state = ProducerStateManager.rebuild(records)
    assert list(state.producers[PID].batches) == [batch(0, 1, 0), batch(2, 2, 3)]
    assert state.check(PID, 0, 0, 1) == ("DUPLICATE", batch(0, 1, 0))


def test_a_new_leader_deduplicates_a_retry_after_failover() -> None:
    c = Cluster(brokers=3, leader=1)
    c.produce("m1", producer_id=PID, sequence=0, response="lost")
    for f in (2, 3, 2, 3):
        c.fetch(f)
    c.crash(1)
    c.advance(c.config.zookeeper_session_timeout_ms)
    assert c.leader == 2
    c.produce("m1", producer_id=PID, sequence=0)  # the client's retry reaches the new leader
    assert c.logs()[2] == ["m1"]
    assert [e.data["broker"] for e in c.trace.of_kind("duplicate")] == [2]
    for _ in range(3):  # follower 3 finds its truncation point, then fetches from broker 2
        c.fetch(3)
    assert c.report().acked == ["m1"] and c.report().duplicates == []


def test_a_truncated_batch_is_no_duplicate_any_more() -> None:
    c = Cluster(brokers=2, leader=1, config={"acks": "1"})
    c.produce("m1", producer_id=PID, sequence=0)
    c.fetch(2)
    c.crash(1)
    c.advance(c.config.zookeeper_session_timeout_ms)
    c.produce("n1")  # the new leader, broker 2, writes in epoch 1
    c.restart(1)
    c.fetch(1)  # since 2.8 the fetch names epoch 0; it has not diverged, so n1 comes too
    assert c.replica(1).values == ["m1", "n1"]  # broker 1 keeps m1: broker 2 has it too
    state = c.sim.actors[1].partitions[c.tp].producers
    assert list(state.producers[PID].batches) == [batch(0, 0, 0)]


def test_out_of_order_and_zombie_batches_are_refused() -> None:
    c = Cluster(brokers=1, config={"acks": "1"})
    c.produce("a", producer_id=PID, producer_epoch=1, sequence=0)
    c.produce("c", producer_id=PID, producer_epoch=1, sequence=2)
    c.produce("z", producer_id=PID, producer_epoch=0, sequence=1)
    assert c.report().errors == {
        "c": "OUT_OF_ORDER_SEQUENCE_NUMBER",
        "z": "INVALID_PRODUCER_EPOCH",
    }
    assert c.logs()[1] == ["a"]


def test_java_string_hash_code_matches_java() -> None:
    assert java_string_hash_code("") == 0
    assert java_string_hash_code("a") == 97
    assert java_string_hash_code("hello") == 99162322
    assert java_string_hash_code("polygenelubricants") == -(2**31)  # Integer.MIN_VALUE


def test_the_seeds_group_lands_on_partition_19() -> None:
    assert group_partition("console-consumer-49366") == 19
    assert group_partition("polygenelubricants") == 0  # Utils.abs(MIN_VALUE) is 0
