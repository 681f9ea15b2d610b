"""What the producer client does when a batch expires (delivery.timeout.ms): a batch that never
left leaves no gap; one that was sent and retried has an unknown outcome, so its partition's
sequences are unresolved until the batches in flight there are answered (KafkaProducer's Sender,
RecordAccumulator and TransactionManager).

The functions take the producer client they act for (:class:`ExpiryProducer`)."""

from __future__ import annotations

from typing import Any, Protocol

from kafkalab.protocol.actor import Context
from kafkalab.protocol.producer_txn import (
    ABORTABLE_ERROR,
    COMMITTING,
    FATAL_ERROR,
    IN_TRANSACTION,
    TxnProducer,
    abortable,
    txn_fatal,
)

__all__ = [
    "DELIVERY_TIMEOUT",
    "UNRESOLVED_SEQUENCE",
    "ExpiryProducer",
    "expire_queued",
    "expired_after_retry",
    "maybe_resolve_sequences",
    "unnumber",
]

DELIVERY_TIMEOUT = "DELIVERY_TIMEOUT"  # the client's TimeoutException: delivery.timeout.ms passed
# The client's KafkaException when a partition's sequences stay unresolved: "The client hasn't
# received acknowledgment for some previously sent messages and can no longer retry them."
UNRESOLVED_SEQUENCE = "UNRESOLVED_SEQUENCE"


class ExpiryProducer(TxnProducer, Protocol):
    """What these functions use of the producer client (KafkaProducer)."""

    unresolved: dict[str, int]
    last_acked_sequence: dict[str, int]

    def _reset_producer_id(self, ctx: Context) -> None: ...

    def _bump_epoch(self, ctx: Context, tp: str, batch: Any = None) -> None: ...


def expire_queued(p: ExpiryProducer, ctx: Context) -> None:
    """RecordAccumulator.expiredBatches: a batch still waiting when delivery.timeout.ms has
    passed since it was created fails (Kafka's TimeoutException). As for any failed batch
    (Sender.failBatch, TransactionManager.handleFailedBatch), an open transaction can then
    only be aborted, and since 2.5 its abort bumps the epoch."""
    keep = []
    expired = []
    for batch in p.queue:
        if ctx.now - batch.created_ms >= p.settings.delivery_timeout_ms:
            p._outcome(ctx, batch, DELIVERY_TIMEOUT, -1)
            expired.append(batch)
        else:
            keep.append(batch)
    p.queue = keep
    if expired and p.transactional and p.txn_state != FATAL_ERROR:
        abortable(p, DELIVERY_TIMEOUT)
    for batch in expired:
        if batch.attempts == 0:
            unnumber(p, batch)
        else:
            expired_after_retry(p, ctx, batch)


def unnumber(p: ExpiryProducer, batch: Any) -> None:
    """A batch that expires before it was ever sent never had a sequence in Kafka, which
    numbers a batch when it is drained (RecordAccumulator.drain): the batches queued behind
    it move down, so it leaves no gap."""
    if batch.sequence < 0 or batch.producer_id >= 0:
        return
    for b in p.queue:
        if b.tp == batch.tp and b.attempts == 0 and b.sequence > batch.sequence:
            b.sequence -= len(batch.values)
    p.next_sequence[batch.tp] = p.next_sequence.get(batch.tp, 0) - len(batch.values)


def expired_after_retry(p: ExpiryProducer, ctx: Context, batch: Any) -> None:
    """Sender.sendProducerData: a batch that expires after a retry may or may not have been
    written. 0.11 dropped the idempotent producer's id at once. Since 1.0 (KAFKA-5494) the
    partition is unresolved until the batches in flight there are answered
    (TransactionManager.markSequenceUnresolved); until 2.4 a transactional producer could
    not continue (Sender.runOnce: a fatal error)."""
    if not batch.retry or batch.sequence < 0 or batch.producer_id != p.producer_id:
        return
    s = p.settings
    if not s.idempotence_five_in_flight:
        if not p.transactional:
            p._reset_producer_id(ctx)
        return
    if p.transactional and not s.kip360:
        if p.txn_state != FATAL_ERROR:
            txn_fatal(p, ctx, UNRESOLVED_SEQUENCE)
        return
    following = batch.sequence + len(batch.values)
    p.unresolved[batch.tp] = max(p.unresolved.get(batch.tp, following), following)


def maybe_resolve_sequences(p: ExpiryProducer, ctx: Context) -> None:
    """TransactionManager.maybeResolveSequences (2.5+; shouldResetProducerStateAfter-
    ResolvingSequences before): once nothing sent to an unresolved partition is unanswered,
    it is resolved if the last acknowledged batch is the one before the next sequence (a
    later batch landed, so the expired one did too). If not, there is a gap: an idempotent
    producer bumps its epoch for the partition (before 2.5, it drops its producer id); a
    transactional one goes to an abortable error."""
    for tp in sorted(p.unresolved):
        pending = [*p.inflight.values(), *[b for b in p.queue if b.attempts > 0]]
        if any(b.tp == tp for b in pending):
            continue
        del p.unresolved[tp]
        unsent = [b.sequence for b in p.queue if b.tp == tp and b.attempts == 0]
        following = min(unsent) if unsent else p.next_sequence.get(tp, 0)
        if p.last_acked_sequence.get(tp, -1) + 1 == following:
            continue
        if not p.settings.kip360:
            p._reset_producer_id(ctx)
            return
        if not p.transactional:
            p._bump_epoch(ctx, tp)
        elif p.txn_state in (IN_TRANSACTION, COMMITTING, ABORTABLE_ERROR):
            abortable(p, UNRESOLVED_SEQUENCE)
            p.epoch_bump_required = True
