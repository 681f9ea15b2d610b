"""Producer state on a partition replica: how idempotence works on the broker (KIP-98).

Each batch an idempotent producer sends carries its producer id (PID), producer epoch and the
sequence numbers of its records. Every replica keeps, per PID, the epoch and the metadata of
the last five batches it appended (ProducerStateManager / ProducerStateEntry; since 1.0, 0.11
kept the last one), and the leader
checks each new batch against them (ProducerAppendInfo; the decision itself is the replaceable
rule :func:`kafkalab.protocol.rules.sequence_verdict`):

- the same batch again (the same first and last sequence as a cached one) is a *duplicate*: it
  is not appended, and the producer is told the offsets of the original (a retry after a lost
  response does not duplicate the record);
- an older epoch than the one known is a zombie: INVALID_PRODUCER_EPOCH;
- a new epoch must start at sequence 0, and a known epoch must continue at the last sequence
  plus one; anything else is OUT_OF_ORDER_SEQUENCE_NUMBER (so a batch cannot overtake an
  earlier one that failed).

Followers rebuild the same state from the records they replicate, and every replica rebuilds it
from its log after a truncation, so a new leader deduplicates retries too.

Transactions add, per partition: the first offset of each producer's open transaction (a
transaction opens with its first transactional record and closes with a COMMIT or ABORT marker),
the aborted-transaction index (ProducerStateManager's completed-transaction bookkeeping and
LogSegment's TxnIndex), and from these the last stable offset (LSO): no read_committed consumer
reads at or past the first offset of a transaction whose outcome is not yet known.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from kafkalab.errors import ConfigError
from kafkalab.protocol.log import Record
from kafkalab.protocol.messages import INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED
from kafkalab.protocol.rules import DUPLICATE, NO_PRODUCER_EPOCH, VERDICTS, sequence_verdict

__all__ = ["BATCHES_TO_RETAIN", "DUPLICATE", "AbortedTxn", "BatchMetadata", "ProducerStateManager"]

BATCHES_TO_RETAIN = 5  # ProducerStateEntry.NUM_BATCHES_TO_RETAIN
NO_PRODUCER = -1


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """An entry of the aborted-transaction index: ``producer_id``'s records from
    ``first_offset`` up to the ABORT marker at ``last_offset`` are not to be read."""

    producer_id: int
    first_offset: int
    last_offset: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    coordinator_epoch: int = -1  # of the last marker written for this producer
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=BATCHES_TO_RETAIN))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


class ProducerStateManager:
    """The idempotence state of one replica of one partition."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        # Closed transactions whose marker may not be replicated yet: (first offset, marker).
        self.unreplicated: list[tuple[int, int]] = []
        self.aborted: list[AbortedTxn] = []

    def check(
        self,
        producer_id: int,
        epoch: int,
        first_seq: int,
        last_seq: int,
        rule: Callable[[int, Sequence[tuple[int, int]], int, int, int], str] = sequence_verdict,
        *,
        batches_retained: int = BATCHES_TO_RETAIN,
    ) -> tuple[str, BatchMetadata | None]:
        """What the leader does with a client batch: ("APPEND", None), (DUPLICATE, the original
        batch) or (an error name, None). ``rule`` decides (Kafka's :func:`sequence_verdict`
        unless a :class:`kafkalab.Rules` replaces it); a "DUPLICATE" verdict with no cached batch
        of that sequence range has no original to point to. ``batches_retained`` is how many of
        the producer's latest batches the release remembers: 5 since 1.0 (KAFKA-5494), 1 in 0.11
        (ProducerIdEntry held the last batch only)."""
        entry = self.producers.get(producer_id)
        known_epoch = NO_PRODUCER_EPOCH if entry is None else entry.epoch
        batches = () if entry is None else tuple(entry.batches)[-batches_retained:]
        verdict = rule(
            known_epoch, [(b.first_seq, b.last_seq) for b in batches], epoch, first_seq, last_seq
        )
        if verdict not in VERDICTS:
            raise ConfigError(
                f"sequence_verdict returned {verdict!r}, which is not allowed: use one of "
                f"{', '.join(VERDICTS)}"
            )
        if verdict != DUPLICATE:
            return verdict, None
        for b in batches:
            if (b.first_seq, b.last_seq) == (first_seq, last_seq):
                return verdict, b
        return verdict, None

    def check_marker(self, producer_id: int, epoch: int, coordinator_epoch: int = -1) -> str | None:
        """ProducerAppendInfo.appendEndTxnMarker: a marker from an older producer epoch than
        the partition knows is refused (checkProducerEpoch), and so is one from an older
        coordinator epoch than the last marker's (checkCoordinatorEpoch, KIP-98 in 0.11): a
        coordinator that lost its __transaction_state partition is a zombie."""
        error = self.check_producer_epoch(producer_id, epoch)
        entry = self.producers.get(producer_id)
        if error is None and entry is not None and coordinator_epoch < entry.coordinator_epoch:
            return TRANSACTION_COORDINATOR_FENCED
        return error

    def check_producer_epoch(self, producer_id: int, epoch: int) -> str | None:
        """ProducerAppendInfo.checkProducerEpoch: an older epoch than the known one is a
        zombie's."""
        entry = self.producers.get(producer_id)
        if entry is not None and epoch < entry.epoch:
            return INVALID_PRODUCER_EPOCH
        return None

    def first_unstable_offset(self, hw: int) -> int | None:
        """ProducerStateManager.firstUnstableOffset: the first offset of an open transaction,
        or of a closed one whose marker is not yet below the HW."""
        starts = [first for first, marker in self.unreplicated if marker >= hw]
        starts.extend(self.ongoing.values())
        return min(starts) if starts else None

    def last_stable_offset(self, hw: int) -> int:
        """Partition.lastStableOffset: min(first unstable offset, HW)."""
        first = self.first_unstable_offset(hw)
        return hw if first is None else min(first, hw)

    def aborted_between(self, start: int, end: int) -> tuple[AbortedTxn, ...]:
        """The aborted transactions a fetch of offsets [start, end) must be told about
        (Log.collectAbortedTransactions)."""
        return tuple(a for a in self.aborted if a.last_offset >= start and a.first_offset < end)

    def update(self, producer_id: int, epoch: int, batch: BatchMetadata) -> None:
        """Record an appended batch (on the leader, or replicated on a follower)."""
        entry = self.producers.get(producer_id)
        if entry is None or epoch > entry.epoch:
            entry = self.producers[producer_id] = ProducerEntry(epoch)
        entry.batches.append(batch)

    def observe(self, records: Iterable[Record]) -> None:
        """Learn the batches of records appended to the log, grouped by their batch's first
        sequence (every record of a batch carries it)."""
        current: list[Record] = []
        for record in records:
            if record.producer_id == NO_PRODUCER:
                continue
            if record.control:
                if current:
                    self._observe_batch(current)
                    current = []
                self._observe_marker(record)
                continue
            if record.transactional and record.producer_id not in self.ongoing:
                self.ongoing[record.producer_id] = record.offset
            if current and (record.producer_id, record.producer_epoch, record.base_sequence) != (
                current[0].producer_id,
                current[0].producer_epoch,
                current[0].base_sequence,
            ):
                self._observe_batch(current)
                current = []
            current.append(record)
        if current:
            self._observe_batch(current)

    def _observe_marker(self, marker: Record) -> None:
        """A COMMIT or ABORT marker closes the producer's open transaction on this partition;
        a marker from a bumped epoch (KIP-890) moves the producer to that epoch."""
        entry = self.producers.get(marker.producer_id)
        if entry is None or marker.producer_epoch > entry.epoch:
            entry = self.producers[marker.producer_id] = ProducerEntry(marker.producer_epoch)
        entry.coordinator_epoch = max(entry.coordinator_epoch, marker.coordinator_epoch)
        first = self.ongoing.pop(marker.producer_id, None)
        if first is None:
            return
        self.unreplicated.append((first, marker.offset))
        if marker.control == "ABORT":
            self.aborted.append(AbortedTxn(marker.producer_id, first, marker.offset))

    def _observe_batch(self, records: list[Record]) -> None:
        first, last = records[0], records[-1]
        batch = BatchMetadata(first.sequence, last.sequence, first.offset, last.offset)
        self.update(first.producer_id, first.producer_epoch, batch)

    @classmethod
    def rebuild(cls, records: Iterable[Record]) -> ProducerStateManager:
        """The state a replica reloads from its log (ProducerStateManager.truncateAndReload)."""
        manager = cls()
        manager.observe(records)
        return manager
