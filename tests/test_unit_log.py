"""Unit tests of one replica's log: epoch cache, truncation, endOffsetFor, what a crash keeps."""

from __future__ import annotations

import pytest

from kafkalab.protocol.log import UNDEFINED_EPOCH, UNDEFINED_OFFSET, Disk, Log, Record


def records(*spec: tuple[str, int], start: int = 0) -> tuple[Record, ...]:
    """Records from (value, leader epoch) pairs, with consecutive offsets."""
    return tuple(Record(start + i, value, epoch) for i, (value, epoch) in enumerate(spec))


def log_with_epochs(*epochs: tuple[int, int], leo: int) -> Log:
    """A log of ``leo`` records whose epoch cache is exactly ``epochs`` ((epoch, start) pairs).

    Records before the first entry carry epoch 0, as if older cache entries had been removed
    (LeaderEpochFileCache.truncateFromStart)."""

    def epoch_of(offset: int) -> int:
        return max((e for e, start in epochs if start <= offset), default=0)

    recs = tuple(Record(o, f"m{o}", epoch_of(o)) for o in range(leo))
    log = Log(Disk(recs, hw_checkpoint=0, epochs=tuple(epochs)))
    assert log.epochs == list(epochs)
    assert log.leo == leo
    return log


# ---- appends and the epoch cache -----------------------------------------------------------


def test_append_as_leader_assigns_offsets_and_records_each_new_epoch_once():
    log = Log()
    assert log.latest_epoch == UNDEFINED_EPOCH

    assert log.append_as_leader(("m1", "m2"), 0) == (0, 1)
    assert log.append_as_leader(("m3",), 0) == (2, 2)
    assert log.epochs == [(0, 0)]

    assert log.append_as_leader(("m4", "m5"), 3) == (3, 4)
    assert log.epochs == [(0, 0), (3, 3)]
    assert log.latest_epoch == 3
    assert log.leo == 5
    assert log.values() == ["m1", "m2", "m3", "m4", "m5"]
    assert [r.leader_epoch for r in log.records] == [0, 0, 0, 3, 3]
    assert [r.offset for r in log.records] == [0, 1, 2, 3, 4]


def test_append_as_leader_with_an_older_epoch_does_not_add_a_cache_entry():
    log = Log()
    log.append_as_leader(("m1",), 2)
    log.append_as_leader(("m2",), 1)
    assert log.epochs == [(2, 0)]


def test_assign_epoch_records_a_new_leaders_epoch_at_its_leo_before_any_record():
    log = Log()
    log.append_as_leader(("m1", "m2"), 0)
    log.assign_epoch(1, log.leo)
    assert log.epochs == [(0, 0), (1, 2)]
    assert log.leo == 2
    log.assign_epoch(1, 5)  # the same epoch again: ignored
    assert log.epochs == [(0, 0), (1, 2)]


def test_append_replicated_learns_epochs_from_the_batches():
    log = Log()
    log.append_replicated(records(("m1", 0), ("m2", 0), ("m3", 2)))
    log.append_replicated(records(("m4", 2), ("m5", 5), start=3))
    assert log.epochs == [(0, 0), (2, 2), (5, 4)]
    assert log.values() == ["m1", "m2", "m3", "m4", "m5"]
    assert log.leo == 5


# ---- truncation ----------------------------------------------------------------------------


def test_truncate_to_removes_records_and_epoch_entries_at_or_after_the_point():
    log = log_with_epochs((0, 0), (1, 2), (3, 4), leo=6)
    log.hw = 5
    log.flush()
    assert log.flushed == 6

    removed = log.truncate_to(4)

    assert removed == 2
    assert log.leo == 4
    assert [r.offset for r in log.records] == [0, 1, 2, 3]
    assert log.epochs == [(0, 0), (1, 2)]  # epoch 3 started exactly at 4: gone
    assert log.flushed == 4
    assert log.hw == 4


def test_truncate_to_inside_an_epoch_keeps_that_epochs_entry():
    log = log_with_epochs((0, 0), (1, 2), leo=5)
    log.truncate_to(3)
    assert log.epochs == [(0, 0), (1, 2)]
    assert log.latest_epoch == 1


def test_truncate_to_keeps_a_lower_hw_and_flushed_count():
    log = log_with_epochs((0, 0), leo=5)
    log.hw = 1
    log.flushed = 2
    log.truncate_to(3)
    assert log.hw == 1
    assert log.flushed == 2
    assert log.leo == 3


def test_truncate_to_the_leo_removes_nothing_but_drops_an_epoch_starting_there():
    log = log_with_epochs((0, 0), leo=2)
    log.assign_epoch(1, 2)  # a leader's new epoch with no record yet
    assert log.truncate_to(2) == 0
    assert log.leo == 2
    assert log.epochs == [(0, 0)]


def test_truncate_to_zero_empties_the_log_and_the_cache():
    log = log_with_epochs((0, 0), (1, 1), leo=3)
    assert log.truncate_to(0) == 3
    assert log.records == []
    assert log.epochs == []
    assert log.latest_epoch == UNDEFINED_EPOCH


# ---- endOffsetFor --------------------------------------------------------------------------


@pytest.fixture
def gapped() -> Log:
    """Epochs 2, 4 and 7 starting at offsets 3, 5 and 8; LEO 10 (epochs 0, 1, 3, 5, 6 unknown)."""
    return log_with_epochs((2, 3), (4, 5), (7, 8), leo=10)


def test_end_offset_for_the_latest_epoch_is_the_leo(gapped: Log):
    assert gapped.end_offset_for(7) == (7, 10)


def test_end_offset_for_an_older_known_epoch_is_the_start_of_the_next_epoch(gapped: Log):
    assert gapped.end_offset_for(2) == (2, 5)
    assert gapped.end_offset_for(4) == (4, 8)


@pytest.mark.parametrize(("epoch", "answer"), [(3, (2, 5)), (5, (4, 8)), (6, (4, 8))])
def test_end_offset_for_an_epoch_in_a_gap_answers_the_largest_epoch_below_it(
    gapped: Log, epoch: int, answer: tuple[int, int]
):
    """KIP-279: (largest epoch <= requested, start offset of the first epoch > requested)."""
    assert gapped.end_offset_for(epoch) == answer


@pytest.mark.parametrize("epoch", [0, 1])
def test_end_offset_for_an_epoch_older_than_every_entry(gapped: Log, epoch: int):
    """The requested epoch comes back, ending where the first known epoch starts."""
    assert gapped.end_offset_for(epoch) == (epoch, 3)


@pytest.mark.parametrize("epoch", [8, 100])
def test_end_offset_for_an_epoch_newer_than_every_entry_is_undefined(gapped: Log, epoch: int):
    assert gapped.end_offset_for(epoch) == (UNDEFINED_EPOCH, UNDEFINED_OFFSET)


@pytest.mark.parametrize("epoch", [0, 3])
def test_end_offset_for_with_an_empty_cache_is_undefined(epoch: int):
    assert Log().end_offset_for(epoch) == (UNDEFINED_EPOCH, UNDEFINED_OFFSET)


def test_end_offset_for_a_new_leaders_epoch_without_records_is_its_leo():
    log = log_with_epochs((0, 0), leo=2)
    log.assign_epoch(1, 2)
    assert log.end_offset_for(1) == (1, 2)
    assert log.end_offset_for(0) == (0, 2)


def test_epoch_start_offset(gapped: Log):
    assert gapped.epoch_start_offset(4) == 5
    assert gapped.epoch_start_offset(3) is None


# ---- what a crash keeps --------------------------------------------------------------------


def test_a_process_crash_keeps_the_page_cache():
    log = Log()
    log.append_as_leader(("m1", "m2"), 0)
    log.hw = 1
    log.flush()  # m1, m2 on disk
    log.checkpoint_hw()  # HW checkpoint 1
    log.append_as_leader(("m3",), 1)
    log.hw = 3  # not checkpointed

    disk = log.disk(lose_unflushed=False)

    assert [r.value for r in disk.records] == ["m1", "m2", "m3"]
    assert disk.hw_checkpoint == 1
    assert disk.epochs == ((0, 0), (1, 2))
    restarted = Log(disk)
    assert restarted.values() == ["m1", "m2", "m3"]
    assert restarted.hw == 1  # from the checkpoint, not the in-memory HW 3
    assert restarted.epochs == [(0, 0), (1, 2)]
    assert restarted.flushed == 3


def test_a_power_loss_keeps_only_the_flushed_prefix():
    log = Log()
    log.append_as_leader(("m1",), 0)
    log.flush()
    log.append_as_leader(("m2", "m3"), 1)
    log.append_as_leader(("m4",), 2)

    disk = log.disk(lose_unflushed=True)

    assert [r.value for r in disk.records] == ["m1"]
    restarted = Log(disk)
    assert restarted.values() == ["m1"]
    assert restarted.leo == 1
    # Epoch 2 started beyond what survived, so its entry is dropped with the records.
    assert (2, 3) not in restarted.epochs
    assert restarted.epochs[0] == (0, 0)
    assert restarted.end_offset_for(0)[1] == 1


def test_restart_drops_epoch_entries_starting_at_the_recovered_leo():
    log = Log()
    log.append_as_leader(("m1",), 0)
    log.flush()
    log.append_as_leader(("m2",), 1)  # epoch 1 starts at offset 1, never flushed
    restarted = Log(log.disk(lose_unflushed=True))
    assert restarted.leo == 1
    assert restarted.epochs == [(0, 0)]
    assert restarted.latest_epoch == 0


def test_flush_writes_only_the_log_and_checkpoint_hw_only_the_hw():
    """Log.flush fsyncs segments and leaves replication-offset-checkpoint alone; only
    ReplicaManager.checkpointHighWatermarks writes the HW (Kafka 0.10.2.2 and 3.7.0,
    core/src/main/scala/kafka/server/ReplicaManager.scala)."""
    log = Log()
    log.append_as_leader(("m1", "m2"), 0)
    log.hw = 2
    log.flush()
    assert (log.flushed, log.hw_checkpoint) == (2, 0)
    log.checkpoint_hw()
    assert (log.flushed, log.hw_checkpoint) == (2, 2)


@pytest.mark.parametrize(("checkpoint", "expected_hw"), [(1, 1), (2, 2), (5, 2)])
def test_restart_hw_is_min_of_checkpoint_and_leo(checkpoint: int, expected_hw: int):
    disk = Disk(records(("m1", 0), ("m2", 0)), hw_checkpoint=checkpoint, epochs=((0, 0),))
    log = Log(disk)
    assert log.leo == 2
    assert log.hw == expected_hw
    assert log.hw_checkpoint == checkpoint


def test_an_empty_disk_is_an_empty_log():
    log = Log(Disk())
    assert (log.leo, log.hw, log.flushed, log.epochs) == (0, 0, 0, [])
