"""Kafka's ProducerStateManagerTest, translated onto kafkalab's ProducerStateManager: a client
append is check() then (if accepted) observe() of the records; an end-transaction marker is an
observed control record; check_marker() is the producer- and coordinator-epoch check of
appendEndTxnMarker.

Kafka test: ProducerStateManagerTest
file: storage/src/test/java/org/apache/kafka/storage/internals/log/ProducerStateManagerTest.java
commit: 1eb7644349cb07139d6a3c1ad1986979647cac99
mode: unit test, not parameterized by quorum.
"""

from __future__ import annotations

from kafkalab.protocol.log import Record
from kafkalab.protocol.messages import (
    INVALID_PRODUCER_EPOCH,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    TRANSACTION_COORDINATOR_FENCED,
)
from kafkalab.protocol.producer_state import ProducerStateManager

PID = 1


def client_append(
    psm: ProducerStateManager, epoch: int, seq: int, offset: int, txn: bool = False, pid=PID
) -> str:
    verdict, _ = psm.check(pid, epoch, seq, seq)
    if verdict == "APPEND":
        psm.observe([Record(offset, "v", 0, pid, epoch, seq, seq, txn)])
    return verdict


def marker(psm: ProducerStateManager, epoch: int, control: str, offset: int, pid=PID) -> None:
    psm.observe([Record(offset, control, 0, pid, epoch, -1, -1, True, control)])


def coordinator_marker(
    psm: ProducerStateManager, epoch: int, control: str, offset: int, coordinator_epoch: int
) -> str | None:
    """A marker written by the coordinator (appendEndTxnMarker): checked, then appended."""
    error = psm.check_marker(PID, epoch, coordinator_epoch)
    if error is None:
        psm.observe(
            [Record(offset, control, 0, PID, epoch, -1, -1, True, control, coordinator_epoch)]
        )
    return error


# method: testBasicIdMapping
def test_basic_id_mapping() -> None:
    psm = ProducerStateManager()
    assert client_append(psm, 0, 0, 0) == "APPEND"
    assert client_append(psm, 0, 1, 1) == "APPEND"
    # Kafka: appending the same sequence again through append() is out of order (duplicates
    # are found earlier, by the log); here check() finds the duplicate first
    assert client_append(psm, 0, 5, 2) == OUT_OF_ORDER_SEQUENCE_NUMBER
    assert client_append(psm, 1, 0, 3) == "APPEND"
    assert client_append(psm, 0, 0, 4) == INVALID_PRODUCER_EPOCH


# method: testAppendTxnMarkerWithNoProducerState
def test_append_txn_marker_with_no_producer_state() -> None:
    psm = ProducerStateManager()
    marker(psm, 2, "COMMIT", 27)
    assert psm.producers[PID].epoch == 2 and psm.producers[PID].last_seq == -1
    assert client_append(psm, 0, 0, 4) == INVALID_PRODUCER_EPOCH
    assert client_append(psm, 2, 17, 4) == OUT_OF_ORDER_SEQUENCE_NUMBER
    assert client_append(psm, 2, 0, 39) == "APPEND"
    assert psm.producers[PID].epoch == 2 and psm.producers[PID].last_seq == 0


# method: testControlRecordBumpsProducerEpoch
def test_control_record_bumps_producer_epoch() -> None:
    psm = ProducerStateManager()
    client_append(psm, 0, 0, 0)
    marker(psm, 1, "ABORT", 1)
    entry = psm.producers[PID]
    assert entry.epoch == 1 and entry.last_seq == -1
    assert PID not in psm.ongoing
    assert client_append(psm, 1, 0, 2) == "APPEND"


# method: testOutOfSequenceAfterControlRecordEpochBump
def test_out_of_sequence_after_control_record_epoch_bump() -> None:
    psm = ProducerStateManager()
    client_append(psm, 0, 0, 0, txn=True)
    client_append(psm, 0, 1, 1, txn=True)
    marker(psm, 1, "ABORT", 1)
    assert client_append(psm, 1, 2, 2, txn=True) == OUT_OF_ORDER_SEQUENCE_NUMBER
    assert client_append(psm, 2, 2, 2, txn=True) == OUT_OF_ORDER_SEQUENCE_NUMBER
    assert client_append(psm, 1, 0, 2, txn=True) == "APPEND"
    assert psm.producers[PID].epoch == 1 and psm.producers[PID].last_seq == 0


# method: testOldEpochForControlRecord
def test_old_epoch_for_control_record() -> None:
    psm = ProducerStateManager()
    client_append(psm, 5, 0, 99, txn=True)
    assert psm.check_marker(PID, 3) == INVALID_PRODUCER_EPOCH


# method: testProducerSequenceWrapAround
def test_producer_sequence_wrap_around() -> None:
    psm = ProducerStateManager()
    int_max = 2**31 - 1
    psm.observe([Record(735, "v", 0, PID, 15, int_max, int_max)])  # a replicated batch
    assert client_append(psm, 15, 0, 1235) == "APPEND"


# method: testProducerSequenceInvalidWrapAround
def test_producer_sequence_invalid_wrap_around() -> None:
    psm = ProducerStateManager()
    int_max = 2**31 - 1
    psm.observe([Record(735, "v", 0, PID, 15, int_max, int_max)])
    assert client_append(psm, 15, 1, 1235) == OUT_OF_ORDER_SEQUENCE_NUMBER


# method: testFirstUnstableOffset
def test_first_unstable_offset() -> None:
    psm = ProducerStateManager()
    hw = 0
    assert psm.first_unstable_offset(hw) is None
    client_append(psm, 5, 0, 99, txn=True)
    assert psm.first_unstable_offset(hw) == 99
    client_append(psm, 5, 0, 105, txn=True, pid=2)
    assert psm.first_unstable_offset(hw) == 99
    marker(psm, 5, "COMMIT", 109)
    assert psm.first_unstable_offset(hw) == 99
    assert psm.first_unstable_offset(100) == 99
    assert psm.first_unstable_offset(110) == 105
    marker(psm, 5, "ABORT", 112, pid=2)
    assert psm.first_unstable_offset(110) == 105
    assert psm.first_unstable_offset(113) is None


# method: testCoordinatorFencing
def test_coordinator_fencing() -> None:
    psm = ProducerStateManager()
    epoch = 5
    client_append(psm, epoch, 0, 99, txn=True)
    assert coordinator_marker(psm, epoch, "COMMIT", 100, coordinator_epoch=1) is None
    assert psm.producers[PID].coordinator_epoch == 1
    # the same coordinator epoch again, then a bumped one, are accepted
    assert coordinator_marker(psm, epoch, "COMMIT", 101, coordinator_epoch=1) is None
    assert coordinator_marker(psm, epoch, "COMMIT", 102, coordinator_epoch=2) is None
    # an older coordinator epoch is a zombie coordinator's
    assert (
        coordinator_marker(psm, epoch, "COMMIT", 103, coordinator_epoch=1)
        == TRANSACTION_COORDINATOR_FENCED
    )
