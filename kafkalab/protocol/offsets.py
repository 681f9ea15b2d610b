"""The group coordinator's offset store, hosted by the broker that leads a __consumer_offsets
partition (GroupCoordinator and GroupMetadataManager, reduced to offsets: one consumer per group,
no rebalancing).

A committed offset is a record ``group:partition=offset`` in the group's partition of
__consumer_offsets, written with acks=all. A transactional offset commit (KIP-98's
sendOffsetsToTransaction) is written with the producer's id and epoch and counts only once its
transaction's COMMIT marker follows it; an ABORT discards it. The committed offsets are a pure
function of the log below the HW, so a new coordinator knows them at once.

Since 2.5 (KIP-447, ``offset_fetch_require_stable``) a consumer's OffsetFetch asks for stable
offsets: a partition with offsets still pending (a transaction's without its marker, or a plain
commit not yet replicated) is answered UNSTABLE_OFFSET_COMMIT, and the consumer asks again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.coordinator import CoordinatorHost
from kafkalab.protocol.internal_topics import OFFSETS_TOPIC, offsets_partition
from kafkalab.protocol.log import Record
from kafkalab.protocol.replica import ReplicaState

__all__ = [
    "OFFSETS_TOPIC",
    "GroupCoordinator",
    "committed_offsets",
    "offset_record",
    "offsets_partition",
    "pending_offset_commits",
]


def offset_record(group: str, tp: str, offset: int) -> str:
    return f"{group}:{tp}={offset}"


def committed_offsets(records: Iterable[Record], group: str) -> dict[str, int]:
    """GroupMetadataManager's offset cache, rebuilt from records: plain commits apply at once;
    transactional ones wait for their producer's marker (COMMIT applies them, ABORT drops
    them)."""
    offsets: dict[str, int] = {}
    pending: dict[int, dict[str, int]] = {}
    for record in records:
        if record.control:
            held = pending.pop(record.producer_id, {})
            if record.control == "COMMIT":
                offsets.update(held)
            continue
        key, _, value = record.value.rpartition("=")
        g, _, tp = key.partition(":")
        if g != group:
            continue
        if record.transactional:
            pending.setdefault(record.producer_id, {})[tp] = int(value)
        else:
            offsets[tp] = int(value)
    return offsets


def pending_offset_commits(records: Sequence[Record], hw: int, group: str) -> set[str]:
    """The partitions of ``group`` with offsets not yet stable
    (GroupMetadata.hasPendingOffsetCommitsForTopicPartition, 2.5): a transactional offset whose
    producer has no COMMIT or ABORT marker below the HW (pendingTransactionalOffsetCommits), or
    a plain commit above the HW, still waiting for acks=all (pendingOffsetCommits)."""
    by_producer: dict[int, set[str]] = {}
    plain: set[str] = set()
    for record in records:
        if record.control:
            if record.offset < hw:  # the marker's write completed the transaction's offsets
                by_producer.pop(record.producer_id, None)
            continue
        key = record.value.rpartition("=")[0]
        g, _, tp = key.partition(":")
        if g != group:
            continue
        if record.transactional:
            by_producer.setdefault(record.producer_id, set()).add(tp)
        elif record.offset >= hw:
            plain.add(tp)
    return plain.union(*by_producer.values())


class GroupCoordinator:
    """The offset-commit role of one broker, for the __consumer_offsets partitions it leads."""

    timers: tuple[str, ...] = ()

    def __init__(self, broker: CoordinatorHost) -> None:
        self.broker = broker
        self._handlers: dict[type[Any], Callable[[Context, Any, Any], None]] = {
            m.OffsetCommitRequest: self._commit,
            m.TxnOffsetCommitRequest: self._txn_commit,
            m.OffsetFetchRequest: self._fetch,
        }
        self.requests = tuple(self._handlers)

    def handle(self, ctx: Context, src: Any, msg: Any) -> None:
        self._handlers[type(msg)](ctx, src, msg)

    def on_timer(self, ctx: Context, name: str, data: Any) -> None:
        """The offset store sets no timers."""

    def elected(self, ctx: Context, r: ReplicaState) -> None:
        """Offsets are read from the log on demand: a new leader has nothing to load."""

    def resigned(self, tp: str) -> None:
        """Nothing is cached, so nothing is dropped."""

    def _led(self, group: str) -> ReplicaState | None:
        return self.broker.led_replica(offsets_partition(group))

    def _commit(self, ctx: Context, src: Any, req: m.OffsetCommitRequest) -> None:
        """GroupCoordinator.handleCommitOffsets: one record per partition, acks=all."""
        if self._led(req.group) is None:
            ctx.send(src, m.OffsetCommitResponse(req.group, req.correlation_id, m.NOT_COORDINATOR))
            return
        values = tuple(offset_record(req.group, tp, off) for tp, off in req.offsets)

        def done(c: Context, err: str) -> None:
            if err == m.NONE:
                c.emit("offset_commit", group=req.group, offsets=dict(req.offsets))
            else:
                err = m.NOT_COORDINATOR
            c.send(src, m.OffsetCommitResponse(req.group, req.correlation_id, err))

        self.broker.append_internal(ctx, offsets_partition(req.group), values, done)

    def _txn_commit(self, ctx: Context, src: Any, req: m.TxnOffsetCommitRequest) -> None:
        """GroupCoordinator.handleTxnCommitOffsets: written as part of the producer's
        transaction; a fenced producer epoch is refused."""
        r = self._led(req.group)
        error = m.NOT_COORDINATOR if r is None else None
        if r is not None and r.producers.check_producer_epoch(req.producer_id, req.producer_epoch):
            error = m.PRODUCER_FENCED
        if error is not None:
            ctx.send(src, m.TxnOffsetCommitResponse(req.group, error))
            return
        values = tuple(offset_record(req.group, tp, off) for tp, off in req.offsets)

        def done(c: Context, err: str) -> None:
            err = m.NONE if err == m.NONE else m.NOT_COORDINATOR
            c.send(src, m.TxnOffsetCommitResponse(req.group, err))

        producer = (req.producer_id, req.producer_epoch)
        self.broker.append_internal(
            ctx, offsets_partition(req.group), values, done, transactional=producer
        )

    def _fetch(self, ctx: Context, src: Any, req: m.OffsetFetchRequest) -> None:
        """GroupMetadataManager.getOffsets: the stable committed offsets; with require_stable
        (2.5, KIP-447) a partition with pending offsets is UNSTABLE_OFFSET_COMMIT instead."""
        r = self._led(req.group)
        if r is None:
            ctx.send(src, m.OffsetFetchResponse(req.group, m.NOT_COORDINATOR))
            return
        committed = committed_offsets(r.log.records[: r.log.hw], req.group)
        unstable: tuple[str, ...] = ()
        if req.require_stable:
            pending = pending_offset_commits(r.log.records, r.log.hw, req.group)
            unstable = tuple(tp for tp in req.tps if tp in pending)
        offsets = tuple(
            (tp, committed[tp]) for tp in req.tps if tp in committed and tp not in unstable
        )
        ctx.send(src, m.OffsetFetchResponse(req.group, m.NONE, offsets, unstable))
