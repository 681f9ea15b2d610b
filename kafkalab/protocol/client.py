"""A producer client with retries, in-flight requests and idempotence (KafkaProducer's Sender
and RecordAccumulator, reduced to what changes the outcome of a write).

- Each send is one batch for one partition. Up to ``max_in_flight`` requests are outstanding.
- A retriable error (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS[_AFTER_APPEND],
  REQUEST_TIMED_OUT, or no answer within request.timeout.ms) sends the batch again after
  retry.backoff.ms, until ``retries`` or delivery.timeout.ms run out; the client refreshes its
  metadata from a broker first when the leader may have moved.
- A request in flight to a broker whose process dies fails at once as NETWORK_EXCEPTION,
  retriable (see client_network.py); a power loss or a cut link breaks no connection.
- OUT_OF_ORDER_SEQUENCE_NUMBER is not a retriable error in general (0.11 never retried it, and
  its idempotent producer had one request in flight); TransactionManager.canRetry
  (since 1.0, KAFKA-5494) retries it when the refused batch is not the next one after the last
  acknowledged: an earlier batch is still unanswered, and the refusal goes away once it lands,
  provided the partition is not "unresolved". When the refused batch is the next one, there is
  a real gap. A transactional producer fails the batch (the transaction can only be aborted).
  An idempotent producer, since 2.5 (KIP-360's client side, ``kip360``), bumps its epoch and
  numbers that partition from 0 again; before, it failed the batch and dropped its producer id
  and every sequence number, then asked for a new producer id
  (TransactionManager.resetProducerId).
- A batch that expires (delivery.timeout.ms) after a retry may or may not have been written:
  since 1.0 its partition is *unresolved*. No new batch is sent there until the batches in
  flight are answered; then, if the last acknowledged batch does not reach the expired one, the
  gap is real: an idempotent producer bumps its epoch (2.5+) or drops its producer id (1.0 to
  2.4), a transactional one must abort (2.5+; before, it could not continue). A batch that
  expires before it was ever sent leaves no gap: Kafka numbers a batch when it sends it.
- Without idempotence a retried batch goes back to the front of the queue (Kafka's reenqueue),
  behind requests already in flight: a lost request plus a retry can reorder records, and a lost
  *response* plus a retry writes the record twice.
- With idempotence (KIP-98) the client gets a producer id from InitProducerId, numbers the
  records of each partition from 0, and re-queues a retried batch in sequence order; the broker
  refuses a batch that would overtake a missing one (OUT_OF_ORDER_SEQUENCE_NUMBER, retried) and
  recognises one it already has.
- With a ``transactional.id`` (KIP-98's TransactionManager) the producer gets its id and epoch
  from its transaction coordinator, adds each partition to the open transaction before writing
  to it (AddPartitionsToTxn; with transaction version 2 the partition leader does it), can add a
  consumer group's offsets (sendOffsetsToTransaction), and ends the transaction with EndTxn once
  every batch is answered. A fenced producer (a newer instance bumped the epoch) can do nothing
  more; after any other failed send the transaction can only be aborted, and since 2.5 the
  abort also bumps the epoch (InitProducerId after the EndTxn). A produce answered
  INVALID_PRODUCER_EPOCH is such a failed send since 2.7 (KIP-588); before, it meant fenced,
  for an idempotent producer too (``invalid_producer_epoch_abortable``). INVALID_TXN_STATE from
  the coordinator is fatal; INVALID_PRODUCER_ID_MAPPING (the coordinator does not know the
  producer id) is fatal until 2.4 and abortable since 2.5, when the abort sends InitProducerId
  instead of EndTxn.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Connected, ConnectionClosed, Context
from kafkalab.protocol.client_expiry import (
    DELIVERY_TIMEOUT,
    expire_queued,
    expired_after_retry,
    maybe_resolve_sequences,
)
from kafkalab.protocol.client_network import (
    ProducerConnections,
    connection_ready,
    disconnect,
    metadata_timeouts,
    on_request_timeout,
    producer_connection_closed,
)
from kafkalab.protocol.client_retry import (
    JITTER_DRAW_BOUND,
    backing_off,
    behind_in_sequence,
    next_retry_backoff_ms,
)
from kafkalab.protocol.client_settings import (
    ProduceCommand,
    ProducerSettings,
    TxnCommand,
    idempotence_fits,
)
from kafkalab.protocol.producer_txn import (
    ABORTING,
    FATAL_ERROR,
    IN_TRANSACTION,
    READY,
    UNINITIALIZED,
    abortable,
    on_txn_response,
    send_txn_request,
    txn_command,
    txn_complete,
    txn_fatal,
    txn_retry,
)

__all__ = [
    "JITTER_DRAW_BOUND",
    "KafkaProducer",
    "ProduceCommand",
    "ProducerSettings",
    "TxnCommand",
    "idempotence_fits",
]

RETRIABLE = frozenset(
    {
        m.NOT_LEADER_OR_FOLLOWER,
        m.NOT_ENOUGH_REPLICAS,
        m.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        m.REQUEST_TIMED_OUT,
        m.LEADER_NOT_AVAILABLE,
        m.NETWORK_EXCEPTION,
    }
)
REFRESH = frozenset(
    {m.NOT_LEADER_OR_FOLLOWER, m.REQUEST_TIMED_OUT, m.LEADER_NOT_AVAILABLE, m.NETWORK_EXCEPTION}
)


@dataclass(slots=True)
class _Batch:
    tp: str
    values: tuple[str, ...]
    sequence: int
    created_ms: int
    attempts: int = 0
    # The producer id and epoch of the batch's first send: a retry keeps them after the producer
    # has reset its id (RecordAccumulator.drain leaves a batch that has a sequence as it is).
    producer_id: int = -1
    producer_epoch: int = -1
    retry: bool = False  # sent back to the queue at least once (ProducerBatch.inRetry)
    last_leader: int | None = None  # where its last attempt went


class KafkaProducer:
    """A named producer client actor.

    ``backoff_draws`` supplies the random part of each retry backoff since 3.7 (KIP-580's
    jitter): every retry takes the next draw ``d`` (``0 <= d < JITTER_DRAW_BOUND``), the
    simulation's seeded stream for this client. None: no jitter."""

    manages_connections = True  # it closes and reopens its connections itself (NetworkClient)
    # The broker reads its next request on a connection once it has answered the last
    # (SocketServer mutes the connection meanwhile): answers come back in order.
    one_request_at_a_time = True

    def __init__(
        self,
        name: str,
        settings: ProducerSettings,
        brokers: tuple[int, ...],
        backoff_draws: Iterator[int] | None = None,
    ) -> None:
        self.name = name
        self.settings = settings
        self.brokers = brokers
        self._backoff_draws = backoff_draws
        self.connections = ProducerConnections()
        self.metadata_sent: dict[int, int] = {}  # unanswered metadata requests: broker, when
        self.producer_id = -1
        self.producer_epoch = -1
        self.next_sequence: dict[str, int] = {}
        self.last_acked_sequence: dict[str, int] = {}
        # TransactionManager.partitionsWithUnresolvedSequences: a partition where a retried batch
        # expired, with the sequence that follows it; its outcome is unknown until the batches
        # still in flight there are answered.
        self.unresolved: dict[str, int] = {}
        self.queue: list[_Batch] = []
        self.inflight: dict[int, _Batch] = {}
        # requests whose batch expired (delivery.timeout.ms) before an answer: NetworkClient
        # still waits for them, until their request.timeout.ms closes the connection
        self.expired_requests: dict[int, tuple[Any, int]] = {}
        self.deadlines: dict[int, int] = {}
        self.sent_to: dict[int, tuple[Any, int]] = {}  # in flight: where it went, and when
        self.leaders: dict[str, int | None] = {}
        self.correlation = 0
        self._broker_turn = 0
        self._timer_at: dict[str, int] = {}
        # Transactions (TransactionManager): the state, the partitions already in the open
        # transaction, the coordinator requests still to send, and how the transaction ends.
        self.txn_state = UNINITIALIZED
        self.txn_partitions: set[str] = set()
        self.txn_started = False  # a partition or offsets were added (transactionStarted)
        self.txn_requests: list[Any] = []  # pending coordinator calls, in order
        self.txn_waiting: Any = None  # the call in flight
        self.txn_sent_to: tuple[Any, int] = (None, 0)  # its coordinator, and when it went
        self.txn_error = ""
        self.txn_deadline = 0
        # 2.5+ (KIP-360): the abort of a transaction that failed a send also bumps the epoch
        # (TransactionManager.epochBumpRequired)
        self.epoch_bump_required = False

    # ---- actor interface ---------------------------------------------------------------------

    @property
    def transactional(self) -> bool:
        return bool(self.settings.transactional_id)

    @property
    def idle(self) -> bool:
        """Nothing queued, in flight or waiting for the coordinator."""
        busy = self.queue or self.inflight or self.txn_requests or self.txn_waiting is not None
        return not busy and (self.producer_id >= 0 or self.txn_state == FATAL_ERROR)

    def start(self, ctx: Context) -> None:
        if self.transactional:
            self.txn_requests.append("init")
        elif self.settings.enable_idempotence:
            ctx.send(self._next_broker(), m.InitProducerIdRequest())
        self._refresh_metadata(ctx)

    def handle(self, ctx: Context, src: Any, msg: Any) -> None:
        if isinstance(msg, ProduceCommand):
            self._enqueue(ctx, msg)
        elif isinstance(msg, TxnCommand):
            txn_command(self, ctx, msg)
        elif isinstance(msg, m.InitProducerIdResponse):
            self._on_init_producer_id(ctx, msg)
        elif isinstance(msg, m.MetadataResponse):
            self.metadata_sent.pop(src, None)
            self.leaders.update({tp: leader for tp, leader in msg.leaders if leader is not None})
        elif isinstance(msg, Connected):
            self.connections.connected(msg.peer)
        elif isinstance(msg, m.ProduceResponse):
            self._on_response(ctx, msg)
        elif isinstance(msg, ConnectionClosed):
            producer_connection_closed(self, ctx, msg)
        elif isinstance(
            msg,
            m.AddPartitionsToTxnResponse
            | m.AddOffsetsToTxnResponse
            | m.TxnOffsetCommitResponse
            | m.EndTxnResponse,
        ):
            on_txn_response(self, ctx, msg)
        self._drain(ctx)

    def _on_init_producer_id(self, ctx: Context, msg: m.InitProducerIdResponse) -> None:
        if not self.transactional and self.producer_id >= 0:
            return  # the answer to a repeated request: the producer already has its id
        aborting = False
        if self.transactional:
            if self.txn_waiting != "init":
                return
            self.txn_waiting = None
            if msg.error != m.NONE:
                txn_retry(self, ctx, "init", msg.error)
                return
            aborting = self.txn_state == ABORTING  # the abort's epoch bump
            self.txn_state = READY
            self.next_sequence.clear()  # resetSequenceNumbers
            self.last_acked_sequence.clear()
            self.unresolved.clear()
        self.producer_id, self.producer_epoch = msg.producer_id, msg.producer_epoch
        ctx.emit(
            "producer_id",
            producer=self.name,
            producer_id=msg.producer_id,
            producer_epoch=msg.producer_epoch,
        )
        if aborting:
            txn_complete(self, ctx, False)

    def awaits_answer_from(self, peer: Any) -> bool:
        """Whether a produce, a coordinator call or a new connection waits for ``peer``
        (client_network.py)."""
        if self.txn_waiting is not None and self.txn_sent_to[0] == peer:
            return True
        if self.connections.connecting(peer):
            return True
        if any(peer == sent[0] for sent in self.expired_requests.values()):
            return True
        return any(self.sent_to[cid][0] == peer for cid in self.inflight)

    def on_timer(self, ctx: Context, name: str, data: Any) -> None:
        if self._timer_at.get(name) == ctx.now:
            del self._timer_at[name]
        if name == "request_timeout":
            on_request_timeout(self, ctx)
        elif name == "txn_timeout" and self.txn_waiting is not None:
            if ctx.now >= self.txn_deadline:
                request, self.txn_waiting = self.txn_waiting, None
                disconnect(self, ctx, self.txn_sent_to[0])
                txn_retry(self, ctx, request, m.NOT_COORDINATOR)
            else:
                self._set_timer(ctx, "txn_timeout", self.txn_deadline - ctx.now)
        elif name.startswith("connection_setup:"):
            peer = int(name.split(":")[1])
            setup_ms = self.settings.socket_connection_setup_timeout_ms
            if self.connections.setup_timed_out(ctx, peer, setup_ms):
                disconnect(self, ctx, peer)
        elif name == "expire":
            expire_queued(self, ctx)
        elif name == "metadata":
            expire_queued(self, ctx)
            metadata_timeouts(self, ctx)
            if any(self.leaders.get(b.tp) is None for b in self.queue):
                self._refresh_metadata(ctx)
            if self.settings.enable_idempotence and self.producer_id < 0 and not self.transactional:
                ctx.send(self._next_broker(), m.InitProducerIdRequest())
                self._set_timer(ctx, "metadata", self.settings.retry_backoff_ms)
            if self.transactional and self.txn_requests and self.txn_waiting is None:
                self._set_timer(ctx, "metadata", self.settings.retry_backoff_ms)
        self._drain(ctx)
        self._arm_request_timeout(ctx)

    # ---- sending -----------------------------------------------------------------------------

    def _enqueue(self, ctx: Context, cmd: ProduceCommand) -> None:
        if self.txn_state == FATAL_ERROR or (
            self.transactional and self.txn_state != IN_TRANSACTION
        ):
            error = self.txn_error if self.txn_state == FATAL_ERROR else m.INVALID_TXN_STATE
            self._outcome(ctx, _Batch(cmd.tp, cmd.values, -1, ctx.now), error, -1)
            return
        if self.transactional and self.settings.transaction_version < 2:
            pending = {tp for r in self.txn_requests if r[0] == "add_partitions" for tp in r[1]}
            if cmd.tp not in self.txn_partitions and cmd.tp not in pending:
                self.txn_requests.append(("add_partitions", (cmd.tp,)))
        elif self.transactional:
            self.txn_partitions.add(cmd.tp)  # the partition leader adds it (KIP-890 part 2)
            self.txn_started = True
        sequence = -1
        if self.settings.enable_idempotence:
            sequence = self.next_sequence.get(cmd.tp, 0)
            self.next_sequence[cmd.tp] = sequence + len(cmd.values)
        self.queue.append(_Batch(cmd.tp, cmd.values, sequence, ctx.now))

    def _drain(self, ctx: Context) -> None:
        """Sender.sendProducerData: send queued batches up to max.in.flight, oldest first; a
        partition whose first batch waits (backoff, unknown leader) sends nothing after it
        (RecordAccumulator.drain)."""
        maybe_resolve_sequences(self, ctx)
        if self.transactional:
            send_txn_request(self, ctx)
        if self.settings.enable_idempotence and self.producer_id < 0:
            return
        limit = self.settings.max_in_flight_requests_per_connection
        waiting: list[_Batch] = []
        blocked: set[str] = set()  # a partition whose first batch must wait holds the rest
        while self.queue and len(self.inflight) + len(self.expired_requests) < limit:
            batch = self.queue.pop(0)
            leader = self.leaders.get(batch.tp)
            if batch.tp in blocked or leader is None or self._must_wait(ctx, batch, leader):
                blocked.add(batch.tp)
                waiting.append(batch)
                continue
            self._send(ctx, batch, leader)
        self.queue = waiting + self.queue
        # Sender.sendProducerData: a partition with no known leader asks for a metadata update
        # (Metadata.requestUpdate), retried every retry.backoff.ms until it has one
        unknown = any(self.leaders.get(b.tp) is None for b in waiting)
        if unknown and "metadata" not in self._timer_at:
            self._refresh_metadata(ctx)
        if self.queue:  # Sender.sendProducerData: expire what waits too long (expiredBatches)
            first = min(b.created_ms for b in self.queue) + self.settings.delivery_timeout_ms
            self._set_timer(ctx, "expire", first - ctx.now)
        self._arm_request_timeout(ctx)

    def _must_wait(self, ctx: Context, batch: _Batch, leader: int) -> bool:
        """Whether ``batch``, first of its partition in the queue, waits (RecordAccumulator.drain,
        shouldStopDrainBatchesForPartition, shouldBackoff; Sender.sendProducerData)."""
        not_added = self.transactional and batch.tp not in self.txn_partitions
        # no new batch is sent to a partition whose sequences are unresolved
        held = batch.attempts == 0 and batch.tp in self.unresolved
        return (
            not_added
            or held
            or behind_in_sequence(self, batch)
            or backing_off(self, ctx, batch, leader)
            or not connection_ready(self, ctx, leader)
        )

    def _send(self, ctx: Context, batch: _Batch, leader: int) -> None:
        self.correlation += 1
        cid = self.correlation
        batch.attempts += 1
        batch.last_leader = leader
        if self.settings.enable_idempotence and batch.producer_id < 0:
            batch.producer_id, batch.producer_epoch = self.producer_id, self.producer_epoch
        pid = batch.producer_id if self.settings.enable_idempotence else -1
        epoch = self.producer_epoch if pid == self.producer_id else batch.producer_epoch
        epoch = epoch if pid >= 0 else -1
        ctx.emit(
            "produce",
            producer=self.name,
            tp=batch.tp,
            values=list(batch.values),
            acks=self.settings.acks,
            attempt=batch.attempts,
            sequence=batch.sequence,
        )
        ctx.send(
            leader,
            m.ProduceRequest(
                batch.tp,
                cid,
                batch.values,
                self.settings.acks,
                self.settings.request_timeout_ms,
                pid,
                epoch,
                batch.sequence,
                self.settings.transactional_id,
            ),
        )
        if self.settings.acks == 0:
            self._outcome(ctx, batch, "UNKNOWN", -1)
            return
        self.inflight[cid] = batch
        self.sent_to[cid] = (leader, ctx.now)
        # Sender.getExpiredInflightBatches: an answer is awaited until request.timeout.ms, but
        # never past the batch's delivery.timeout.ms.
        delivery_deadline = batch.created_ms + self.settings.delivery_timeout_ms
        self.deadlines[cid] = min(ctx.now + self.settings.request_timeout_ms + 1, delivery_deadline)

    def _timeout_error(self, ctx: Context, batch: _Batch) -> str:
        """Why an unanswered batch stops waiting: its delivery.timeout.ms has passed (Kafka's
        TimeoutException, not retried), or else its request.timeout.ms."""
        if ctx.now - batch.created_ms >= self.settings.delivery_timeout_ms:
            return DELIVERY_TIMEOUT
        return m.REQUEST_TIMED_OUT

    def _on_response(self, ctx: Context, resp: m.ProduceResponse) -> None:
        batch = self.inflight.pop(resp.correlation_id, None)
        self.deadlines.pop(resp.correlation_id, None)
        self.expired_requests.pop(resp.correlation_id, None)
        self.sent_to.pop(resp.correlation_id, None)
        if batch is None:
            return  # already timed out and retried
        if resp.error == m.NONE:
            # TransactionManager.handleCompletedBatch: a batch of a producer id since reset
            # tells nothing about the current one's sequences.
            if batch.sequence >= 0 and batch.producer_id == self.producer_id:
                last = batch.sequence + len(batch.values) - 1
                self.last_acked_sequence[batch.tp] = max(
                    self.last_acked_sequence.get(batch.tp, -1), last
                )
            self._outcome(ctx, batch, m.NONE, resp.base_offset)
        else:
            self._retry_or_fail(ctx, batch, resp.error)

    def _can_retry(self, ctx: Context, batch: _Batch, error: str) -> bool:
        """TransactionManager.canRetry for OUT_OF_ORDER_SEQUENCE_NUMBER, else the error's
        retriability."""
        if error != m.OUT_OF_ORDER_SEQUENCE_NUMBER:
            return error in RETRIABLE
        if not self.settings.idempotence_five_in_flight:
            return False  # 0.11: Sender.canRetry took retriable errors only
        if batch.producer_id != self.producer_id:
            return False  # sent under a producer id this producer has since dropped
        unresolved = self.unresolved.get(batch.tp)
        if unresolved is None and batch.sequence != self.last_acked_sequence.get(batch.tp, -1) + 1:
            return True  # an earlier batch is still unanswered: wait for it
        if self.transactional or not self.settings.kip360:
            return False  # a real gap, or one that cannot be told from a lost batch
        # 2.5+, idempotent: retried; a real gap, or the batch right after the expired one, also
        # bumps the epoch
        if unresolved is None or batch.sequence == unresolved:
            self._bump_epoch(ctx, batch.tp, batch)
        return True

    def _bump_epoch(self, ctx: Context, tp: str, batch: _Batch | None = None) -> None:
        """TransactionManager.bumpIdempotentProducerEpoch: a local epoch bump, and the
        partition's waiting batches (``batch`` first, if given) numbered from 0 again (the
        broker accepts a new epoch only at sequence 0); the partition is no longer unresolved."""
        self.producer_epoch += 1
        sequence = 0
        first: list[_Batch] = [] if batch is None else [batch]
        for b in [*first, *[q for q in self.queue if q.tp == tp]]:
            b.sequence = sequence
            sequence += len(b.values)
        self.next_sequence[tp] = sequence
        self.last_acked_sequence[tp] = -1
        self.unresolved.pop(tp, None)
        ctx.emit(
            "producer_epoch_bump",
            producer=self.name,
            tp=tp,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
        )

    def _reset_producer_id(self, ctx: Context) -> None:
        """TransactionManager.resetProducerId (idempotent producer, before 2.5): a real gap
        drops the producer id and every partition's sequence numbers, and the producer asks for
        a new id; the batches not sent yet are numbered from 0 under it."""
        self.producer_id = self.producer_epoch = -1
        self.next_sequence.clear()
        self.last_acked_sequence.clear()
        self.unresolved.clear()
        for b in self.queue:
            if b.attempts == 0:
                b.sequence = self.next_sequence.get(b.tp, 0)
                self.next_sequence[b.tp] = b.sequence + len(b.values)
        ctx.send(self._next_broker(), m.InitProducerIdRequest())
        self._set_timer(ctx, "metadata", self.settings.retry_backoff_ms)

    def _retry_or_fail(self, ctx: Context, batch: _Batch, error: str) -> None:
        s = self.settings
        expired = ctx.now - batch.created_ms >= s.delivery_timeout_ms
        if batch.attempts > s.retries or expired or not self._can_retry(ctx, batch, error):
            self._outcome(ctx, batch, error, -1)
            if error == DELIVERY_TIMEOUT:
                expired_after_retry(self, ctx, batch)
            gap = error == m.OUT_OF_ORDER_SEQUENCE_NUMBER and batch.producer_id == self.producer_id
            if gap and not self.transactional and not s.kip360:
                self._reset_producer_id(ctx)
            # Since 2.7 (KIP-588) a produce's INVALID_PRODUCER_EPOCH is abortable, not fatal:
            # the abort's EndTxn then learns whether this instance was fenced. Before, the
            # client raised it as ProducerFencedException, fatal for any producer with a
            # producer id (Sender.failBatch, TransactionManager.maybeTransitionToErrorState).
            old_fencing = error == m.INVALID_PRODUCER_EPOCH and batch.producer_id >= 0
            if old_fencing and not s.invalid_producer_epoch_abortable:
                txn_fatal(self, ctx, error)
            elif self.transactional and error == m.PRODUCER_FENCED:
                txn_fatal(self, ctx, error)
            elif self.transactional and self.txn_state != FATAL_ERROR:
                abortable(self, error)  # the transaction can only be aborted now
            return
        ctx.emit(
            "produce_retry",
            producer=self.name,
            tp=batch.tp,
            values=list(batch.values),
            error=error,
            attempt=batch.attempts,
        )
        batch.retry = True
        self._requeue(ctx, batch)
        if error in REFRESH:
            self.leaders.pop(batch.tp, None)
            self._refresh_metadata(ctx)

    def _requeue(self, ctx: Context, batch: _Batch) -> None:
        """Back to the queue, sent again once its retry backoff has passed."""
        if self.settings.enable_idempotence:  # RecordAccumulator.insertInSequenceOrder
            at = next(
                (
                    i
                    for i, b in enumerate(self.queue)
                    if b.tp == batch.tp and b.sequence > batch.sequence
                ),
                len(self.queue),
            )
            self.queue.insert(at, batch)
        else:  # RecordAccumulator.reenqueue: back to the front of the queue
            self.queue.insert(0, batch)
        self._set_timer(ctx, f"backoff:{batch.tp}", next_retry_backoff_ms(self, batch))

    def _refresh_metadata(self, ctx: Context) -> None:
        """Ask a broker (the next in turn) which replicas lead; try again after the backoff."""
        broker = self._next_broker()
        for _ in self.brokers[1:]:  # NetworkClient.leastLoadedNode: a broker it is connected to
            if self.connections.ready(broker):
                break
            broker = self._next_broker()
        self.metadata_sent.setdefault(broker, ctx.now)
        ctx.send(broker, m.MetadataRequest())
        self._set_timer(ctx, "metadata", self.settings.retry_backoff_ms)

    def _next_broker(self) -> int:
        broker = self.brokers[self._broker_turn % len(self.brokers)]
        self._broker_turn += 1
        return broker

    def _arm_request_timeout(self, ctx: Context) -> None:
        if self.deadlines:
            self._set_timer(ctx, "request_timeout", min(self.deadlines.values()) - ctx.now)

    def _set_timer(self, ctx: Context, name: str, delay_ms: int) -> None:
        due = ctx.now + max(delay_ms, 0)
        armed = self._timer_at.get(name)
        if armed is not None and ctx.now <= armed <= due:
            return
        self._timer_at[name] = due
        ctx.set_timer(max(delay_ms, 0), name)

    def _outcome(self, ctx: Context, batch: _Batch, error: str, base_offset: int) -> None:
        ctx.emit(
            "produce_result",
            producer=self.name,
            tp=batch.tp,
            values=list(batch.values),
            acks=self.settings.acks,
            error=error,
            base_offset=base_offset,
            leader=self.leaders.get(batch.tp),
            attempts=batch.attempts,
        )
