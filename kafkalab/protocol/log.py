"""A replica's log: records with offsets and leader epochs, LEO, HW, the epoch cache, and what
survives a crash (the page cache) or a power loss (only what was flushed)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kafkalab.config import RECORD_BYTES

__all__ = [
    "RECORD_BYTES",
    "UNDEFINED_EPOCH",
    "UNDEFINED_OFFSET",
    "Disk",
    "Log",
    "Record",
    "epoch_end_offset",
]

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


@dataclass(slots=True, init=False, unsafe_hash=True)
class Record:
    """One record: its offset, the leader epoch it was written in, and its value.

    Read-only by convention: a follower appends the very objects its leader wrote, and a log
    rebuilt from disk holds the same ones. It is not frozen, and its ``__init__`` is written out,
    because a burst builds thousands of records and the compiled core builds this class about
    ten times faster than a frozen dataclass (``benchmarks/README.md``)."""

    offset: int
    value: str
    leader_epoch: int
    producer_id: int = -1  # idempotent producers only (KIP-98)
    producer_epoch: int = -1
    sequence: int = -1
    base_sequence: int = -1  # the first sequence of the record's batch
    transactional: bool = False  # written inside a transaction (KIP-98)
    control: str = ""  # "COMMIT" or "ABORT" for a transaction marker (a control record)
    coordinator_epoch: int = -1  # a marker's EndTransactionMarker.coordinatorEpoch

    def __init__(
        self,
        offset: int,
        value: str,
        leader_epoch: int,
        producer_id: int = -1,
        producer_epoch: int = -1,
        sequence: int = -1,
        base_sequence: int = -1,
        transactional: bool = False,
        control: str = "",
        coordinator_epoch: int = -1,
    ) -> None:
        self.offset = offset
        self.value = value
        self.leader_epoch = leader_epoch
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.sequence = sequence
        self.base_sequence = base_sequence
        self.transactional = transactional
        self.control = control
        self.coordinator_epoch = coordinator_epoch


@dataclass(frozen=True, slots=True)
class Disk:
    """What a broker finds when it starts: its log, the HW checkpoint and the epoch checkpoint."""

    records: tuple[Record, ...] = ()
    hw_checkpoint: int = 0
    epochs: tuple[tuple[int, int], ...] = ()
    log_start_offset: int = 0  # log-start-offset-checkpoint


class Log:
    """The log of one replica.

    ``epochs`` is the leader epoch cache (LeaderEpochFileCache): (epoch, start offset) pairs in
    increasing order. ``flushed`` counts the records that are on disk; the rest live in the page
    cache and are gone after a power loss.
    """

    __slots__ = ("records", "hw", "hw_checkpoint", "flushed", "epochs", "log_start_offset")

    def __init__(self, disk: Disk | None = None, *, hw_floor_at_log_start: bool = True) -> None:
        disk = disk or Disk()
        self.records: list[Record] = list(disk.records)
        self.flushed = len(self.records)
        # Log recovery drops epoch entries that start at or beyond the recovered end
        # (LeaderEpochFileCache.truncateFromEnd).
        self.epochs: list[tuple[int, int]] = [e for e in disk.epochs if e[1] < len(self.records)]
        self.hw_checkpoint = disk.hw_checkpoint
        # The first offset a reader may fetch (DeleteRecords, KIP-107, 0.11). Records below it
        # stay in ``records`` (their segment is not deleted yet) but no reader gets them.
        self.log_start_offset = min(disk.log_start_offset, len(self.records))
        # A restarted replica starts from its checkpointed HW, never past its own LEO, and since
        # 2.4 (Log.updateHighWatermark) never below its log start offset, which the periodic HW
        # checkpoint may lag behind.
        self.hw = min(disk.hw_checkpoint, len(self.records))
        if hw_floor_at_log_start:
            self.hw = max(self.hw, self.log_start_offset)

    @property
    def leo(self) -> int:
        """Log end offset: the offset of the next record to be written."""
        return len(self.records)

    @property
    def latest_epoch(self) -> int:
        return self.epochs[-1][0] if self.epochs else UNDEFINED_EPOCH

    def values(self) -> list[str]:
        return [r.value for r in self.records]

    def append_as_leader(
        self,
        values: tuple[str, ...],
        leader_epoch: int,
        producer: tuple[int, int, int] | None = None,
        transactional: bool = False,
    ) -> tuple[int, int]:
        """Append values in ``leader_epoch``, with ``producer`` = (id, epoch, first sequence)
        for an idempotent batch (``transactional`` inside a transaction); returns (first
        offset, last offset)."""
        first = self.leo
        self.assign_epoch(leader_epoch, first)
        if producer is None:
            self.records += [
                Record(first + i, value, leader_epoch) for i, value in enumerate(values)
            ]
        else:
            pid, epoch, seq = producer
            self.records += [
                Record(first + i, value, leader_epoch, pid, epoch, seq + i, seq, transactional)
                for i, value in enumerate(values)
            ]
        return first, self.leo - 1

    def append_marker(
        self,
        control: str,
        leader_epoch: int,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int = -1,
    ) -> int:
        """Append a transaction marker (a control record) for a producer; returns its offset."""
        offset = self.leo
        self.assign_epoch(leader_epoch, offset)
        self.records.append(
            Record(
                offset,
                control,
                leader_epoch,
                producer_id,
                producer_epoch,
                control=control,
                coordinator_epoch=coordinator_epoch,
            )
        )
        return offset

    def append_replicated(self, records: tuple[Record, ...]) -> None:
        """A follower appends what it fetched, learning epochs from the batches (only a record
        of a newer epoch than the cache's latest can change the cache)."""
        latest = self.latest_epoch
        for record in records:
            if record.leader_epoch > latest:
                self.assign_epoch(record.leader_epoch, record.offset)
                latest = record.leader_epoch
        self.records += records

    def assign_epoch(self, epoch: int, start_offset: int) -> None:
        """LeaderEpochFileCache.assign: remember that ``epoch`` starts at ``start_offset``,
        dropping entries that would break monotonicity (maybeTruncateNonMonotonicEntries): an
        epoch bumped before anything was written in the previous one replaces it."""
        if epoch <= self.latest_epoch:
            return
        while self.epochs and self.epochs[-1][1] >= start_offset:
            self.epochs.pop()
        self.epochs.append((epoch, start_offset))

    def truncate_to(self, offset: int) -> int:
        """Remove every record at or after ``offset``; returns how many were removed.

        Epoch cache entries starting at or beyond the truncation point go too
        (LeaderEpochFileCache.truncateFromEnd), and the HW cannot stay above the new end.
        """
        removed = max(0, self.leo - offset)
        if removed:
            del self.records[offset:]
        self.epochs = [e for e in self.epochs if e[1] < offset]
        self.flushed = min(self.flushed, offset)
        self.hw = min(self.hw, offset)
        self.log_start_offset = min(self.log_start_offset, offset)
        return removed

    def increment_log_start_offset(self, offset: int, *, past_hw: bool = False) -> bool:
        """UnifiedLog.maybeIncrementLogStartOffset: move the log start offset forward, never past
        the HW (``past_hw``: the retention of 0.8 to 0.11.0.0, which had no such bound); the
        epoch cache forgets what starts before it, keeping the epoch in force there
        (LeaderEpochFileCache.truncateFromStart). Returns whether it moved."""
        if (offset > self.hw and not past_hw) or offset <= self.log_start_offset:
            return False
        self.log_start_offset = offset
        before = [e for e in self.epochs if e[1] <= offset]
        after = [e for e in self.epochs if e[1] > offset]
        self.epochs = ([(before[-1][0], offset)] if before else []) + after
        return True

    def retention_start(
        self, retention_bytes: int, segment_bytes: int, *, bounded_by_hw: bool = True
    ) -> int | None:
        """UnifiedLog.deleteRetentionSizeBreachedSegments: the log start offset after deleting
        the oldest whole segments while what remains is at least ``retention_bytes``, or None
        when nothing goes. A segment holds ``segment_bytes`` of records (each RECORD_BYTES),
        counted from offset 0. Since 0.11.0.1 (KAFKA-5634, ``bounded_by_hw``) a segment goes
        only if the HW has reached its end (deleteOldSegments), so the log start offset never
        passes the HW; before, the HW did not count. When every segment goes, the active one
        too (it must hold records), the log first rolls a new one and starts at the LEO."""
        if retention_bytes < 0:
            return None
        per_segment = max(1, segment_bytes // RECORD_BYTES)
        limit = self.hw if bounded_by_hw else self.leo
        base = self.log_start_offset // per_segment * per_segment
        excess = (self.leo - base) * RECORD_BYTES - retention_bytes
        start = None
        while base < self.leo:
            end = min(base + per_segment, self.leo)  # the active segment ends at the LEO
            if end > limit or excess < (end - base) * RECORD_BYTES:
                break
            excess -= (end - base) * RECORD_BYTES
            base = start = end
        return start

    def end_offset_for(self, epoch: int) -> tuple[int, int]:
        """LeaderEpochFileCache.endOffsetFor on this log: see :func:`epoch_end_offset`."""
        return epoch_end_offset(self.epochs, self.leo, epoch)

    def epoch_start_offset(self, epoch: int) -> int | None:
        for e, start in self.epochs:
            if e == epoch:
                return start
        return None

    def flush(self) -> None:
        """Log.flush: fsync the log's segments. It leaves the HW checkpoint alone: only
        ReplicaManager.checkpointHighWatermarks writes that file (see :meth:`checkpoint_hw`)."""
        self.flushed = self.leo

    def checkpoint_hw(self) -> None:
        """ReplicaManager.checkpointHighWatermarks, for this log: write the HW to
        replication-offset-checkpoint. Kafka calls it only from the periodic
        "highwatermark-checkpoint" task (replica.high.watermark.checkpoint.interval.ms) and
        at a clean shutdown, never from a flush."""
        self.hw_checkpoint = self.hw

    def disk(self, lose_unflushed: bool) -> Disk:
        """What survives a crash: everything (page cache) or only the flushed prefix."""
        kept = self.flushed if lose_unflushed else self.leo
        return Disk(
            tuple(self.records[:kept]),
            self.hw_checkpoint,
            tuple(self.epochs),
            min(self.log_start_offset, kept),
        )


def epoch_end_offset(epochs: Sequence[tuple[int, int]], leo: int, epoch: int) -> tuple[int, int]:
    """LeaderEpochFileCache.endOffsetFor: (epoch, end offset) as the leader answers
    OffsetsForLeaderEpoch, from an epoch cache of (epoch, start offset) pairs and the LEO.

    The latest epoch ends at the LEO. An older epoch is answered with the largest epoch at or below
    it and the start offset of the first epoch after it (KIP-279). An epoch newer than every entry,
    and the undefined epoch -1, are undefined.
    """
    if not epochs or epoch == UNDEFINED_EPOCH:
        # A follower with no epoch to ask about (KAFKA-6857 made it explicit in 2.0.0; before,
        # an epoch older than the first entry was already undefined).
        return UNDEFINED_EPOCH, UNDEFINED_OFFSET
    latest = epochs[-1][0]
    if epoch == latest:
        return epoch, leo
    if epoch > latest:
        return UNDEFINED_EPOCH, UNDEFINED_OFFSET
    floor = None
    for e, start in epochs:
        if e > epoch:
            # Older than every entry: Kafka answers the requested epoch ending where the
            # first known epoch starts.
            return (epoch if floor is None else floor), start
        floor = e
    return UNDEFINED_EPOCH, UNDEFINED_OFFSET  # unreachable: epoch < latest
