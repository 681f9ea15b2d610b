"""The transaction coordinator (KIP-98), hosted by the broker that leads a __transaction_state
partition.

A transactional.id belongs to partition ``abs(hashCode(transactional.id)) % 50`` of
__transaction_state; the leader of that partition is its coordinator. Every change of a
transaction's state is first written to that partition as a record, with acks=all, and takes
effect only once the write is committed (TransactionStateManager.appendTransactionToLog); the
one exception, PrepareEpochFence, is held in memory until the PrepareAbort that follows it is
written. A new leader rebuilds every transaction from the log and finishes any PrepareCommit or
PrepareAbort it finds (TransactionStateManager.loadTransactionsForTxnTopicPartition, then
TransactionMarkerChannelManager).

The moves between states are the table in :mod:`kafkalab.protocol.txn_states`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from kafkalab.protocol import messages as m
from kafkalab.protocol import txn_states as s
from kafkalab.protocol.actor import Context
from kafkalab.protocol.coordinator import CoordinatorHost
from kafkalab.protocol.internal_topics import (
    TRANSACTION_STATE_PARTITIONS,
    TRANSACTION_STATE_TOPIC,
    offsets_partition,
    txn_partition,
)
from kafkalab.protocol.replica import ReplicaState

__all__ = [
    "TRANSACTION_STATE_PARTITIONS",
    "TRANSACTION_STATE_TOPIC",
    "TransactionCoordinator",
    "TxnMetadata",
    "txn_partition",
]

MARKER_RETRY_MS = 1000


@dataclass(frozen=True)
class TxnMetadata:
    """What the coordinator knows of one transactional.id (TransactionMetadata)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: str = s.EMPTY
    partitions: tuple[str, ...] = ()
    start_ms: int = -1

    def encode(self) -> str:
        """The state-log record: readable in a log drawing, and all a new leader needs."""
        parts = ",".join(self.partitions)
        return (
            f"{self.transactional_id} {self.state} pid={self.producer_id} "
            f"epoch={self.producer_epoch} timeout={self.timeout_ms} start={self.start_ms} "
            f"partitions={parts}"
        )

    @classmethod
    def decode(cls, value: str) -> TxnMetadata:
        txn_id, state, *fields = value.split(" ")
        f = dict(item.split("=", 1) for item in fields)
        return cls(
            txn_id,
            int(f["pid"]),
            int(f["epoch"]),
            int(f["timeout"]),
            state,
            tuple(p for p in f["partitions"].split(",") if p),
            int(f["start"]),
        )


@dataclass
class _TxnPartition:
    """The coordinator's view of one __transaction_state partition it leads."""

    coordinator_epoch: int
    txns: dict[str, TxnMetadata]
    pending: set[str]  # transactional ids with a state write in flight
    markers: dict[str, set[str]]  # transactional id -> partitions still without their marker


class TransactionCoordinator:
    """The coordinator role of one broker, for every __transaction_state partition it leads."""

    def __init__(self, broker: CoordinatorHost) -> None:
        self.requests: tuple[type, ...] = (
            m.AddPartitionsToTxnRequest,
            m.AddOffsetsToTxnRequest,
            m.EndTxnRequest,
            m.WriteTxnMarkersResponse,
        )
        self.timers: tuple[str, ...] = ("txn_abort_timed_out", "txn_markers")
        self.broker = broker
        self.led: dict[str, _TxnPartition] = {}

    # ---- leadership ---------------------------------------------------------------------------

    def elected(self, ctx: Context, r: ReplicaState) -> None:
        """Become coordinator for ``r``'s transactional ids when ``r`` is a __transaction_state
        partition: rebuild them from the log, and finish the transactions caught between
        prepare and complete."""
        if not r.tp.startswith(TRANSACTION_STATE_TOPIC):
            return
        txns: dict[str, TxnMetadata] = {}
        for record in r.log.records:
            meta = TxnMetadata.decode(record.value)
            txns[meta.transactional_id] = meta
        part = _TxnPartition(r.leader_epoch, txns, set(), {})
        self.led[r.tp] = part
        ctx.emit("txn_coordinator", broker=self.broker.id, tp=r.tp, loaded=len(txns))
        for meta in txns.values():
            if meta.state in (s.PREPARE_COMMIT, s.PREPARE_ABORT):
                self._send_markers(ctx, part, meta)
        self._schedule_abort_timed_out(ctx, r.tp)

    def _schedule_abort_timed_out(self, ctx: Context, tp: str) -> None:
        """The next sweep for expired transactions, after
        transaction.abort.timed.out.transaction.cleanup.interval.ms."""
        interval = self.broker.config.transaction_abort_timed_out_transaction_cleanup_interval_ms
        ctx.set_timer(interval, "txn_abort_timed_out", tp)

    def resigned(self, tp: str) -> None:
        self.led.pop(tp, None)

    def on_timer(self, ctx: Context, name: str, tp: str) -> None:
        part = self.led.get(tp)
        if part is None:
            return
        if name == "txn_abort_timed_out":
            self._abort_timed_out(ctx, tp, part)
            self._schedule_abort_timed_out(ctx, tp)
        elif name == "txn_markers":
            for txn_id in sorted(part.markers):
                self._send_markers(ctx, part, part.txns[txn_id], retry=True)

    # ---- requests -----------------------------------------------------------------------------

    def handle(self, ctx: Context, src: Any, msg: Any) -> None:
        if isinstance(msg, m.InitProducerIdRequest):
            self._init_producer_id(ctx, src, msg)
        elif isinstance(msg, m.AddPartitionsToTxnRequest):
            self._add_partitions(ctx, src, msg, msg.tps)
        elif isinstance(msg, m.AddOffsetsToTxnRequest):
            add = m.AddPartitionsToTxnRequest(
                msg.transactional_id, msg.producer_id, msg.producer_epoch, ()
            )
            self._add_partitions(ctx, src, add, (offsets_partition(msg.group),), offsets=True)
        elif isinstance(msg, m.EndTxnRequest):
            self._end_txn(ctx, src, msg)
        elif isinstance(msg, m.WriteTxnMarkersResponse):
            self._on_marker_written(ctx, msg)

    def _partition_for(self, txn_id: str) -> tuple[str, _TxnPartition | None, str]:
        """The partition, our state for it, and the error if this broker cannot serve it."""
        tp = txn_partition(txn_id)
        part = self.led.get(tp)
        if part is None:
            return tp, None, m.NOT_COORDINATOR
        return tp, part, m.NONE

    def _init_producer_id(self, ctx: Context, src: Any, req: m.InitProducerIdRequest) -> None:
        """TransactionCoordinator.handleInitProducerId: a new id gets a producer id and epoch 0;
        a known one gets its epoch bumped, which fences older instances. An open transaction is
        aborted first (PrepareEpochFence, then PrepareAbort), and the caller retries."""
        txn_id = req.transactional_id
        tp, part, error = self._partition_for(txn_id)

        def reply(c: Context, error: str, meta: TxnMetadata | None = None) -> None:
            pid, epoch = (meta.producer_id, meta.producer_epoch) if meta else (-1, -1)
            c.send(src, m.InitProducerIdResponse(pid, epoch, error))

        if part is None:
            reply(ctx, error)
            return
        meta = part.txns.get(txn_id)
        if txn_id in part.pending or (
            meta is not None and meta.state in (s.PREPARE_COMMIT, s.PREPARE_ABORT)
        ):
            reply(ctx, m.CONCURRENT_TRANSACTIONS)
            return
        if meta is not None and meta.state == s.ONGOING:
            self._fence_and_abort(ctx, tp, part, meta, "InitProducerId (fence)")
            reply(ctx, m.CONCURRENT_TRANSACTIONS)
            return
        if meta is None:
            new = TxnMetadata(txn_id, self.broker.new_producer_id(), 0, req.transaction_timeout_ms)
        else:
            new = replace(
                meta,
                producer_epoch=meta.producer_epoch + 1,
                timeout_ms=req.transaction_timeout_ms,
                state=s.EMPTY,
                partitions=(),
                start_ms=-1,
            )
        self._write(ctx, tp, part, meta, new, "InitProducerId", lambda c, err: reply(c, err, new))

    def _check_producer(self, meta: TxnMetadata | None, pid: int, epoch: int) -> str:
        """A client's request must carry the transactional id's producer id and exactly its
        epoch (handleAddPartitionsToTransaction, handleVerifyPartitionsInTransaction, and
        EndTxn from a client since 2.6, KAFKA-9600). An unknown transactional id or another
        producer id is INVALID_PRODUCER_ID_MAPPING (since 0.11.0.0); a wrong epoch is
        PRODUCER_FENCED since 2.7 (KIP-588), INVALID_PRODUCER_EPOCH before."""
        if meta is None or meta.producer_id != pid:
            return m.INVALID_PRODUCER_ID_MAPPING
        if epoch != meta.producer_epoch:
            return self._fenced()
        return m.NONE

    def _fenced(self) -> str:
        if self.broker.config.invalid_producer_epoch_abortable:
            return m.PRODUCER_FENCED
        return m.INVALID_PRODUCER_EPOCH

    def _add_partitions(
        self,
        ctx: Context,
        src: Any,
        req: m.AddPartitionsToTxnRequest,
        tps: tuple[str, ...],
        *,
        offsets: bool = False,
    ) -> None:
        """handleAddPartitionsToTransaction (and handleVerifyPartitionsInTransaction when
        ``verify_only``): the partitions join the transaction, which becomes Ongoing. The
        answer to a partition leader (KIP-890) is traced, so a refusal shows where it came
        from."""
        txn_id = req.transactional_id
        tp, part, error = self._partition_for(txn_id)

        def reply(c: Context, err: str) -> None:
            if offsets:
                c.send(src, m.AddOffsetsToTxnResponse(txn_id, err))
                return
            if req.from_leader and err != m.NOT_COORDINATOR:
                c.emit("txn_verify", transactional_id=txn_id, tps=list(tps), error=err)
            c.send(src, m.AddPartitionsToTxnResponse(txn_id, req.correlation_id, err, req.tps))

        if part is None:
            reply(ctx, error)
            return
        meta = part.txns.get(txn_id)
        error = self._check_producer(meta, req.producer_id, req.producer_epoch)
        if error == m.NONE and req.verify_only:
            assert meta is not None
            if meta.state in (s.PREPARE_COMMIT, s.PREPARE_ABORT):
                error = m.CONCURRENT_TRANSACTIONS
            elif not set(tps) <= set(meta.partitions):  # only an open transaction has any
                error = m.INVALID_TXN_STATE
            reply(ctx, error)
            return
        if error == m.NONE and (txn_id in part.pending or meta.state not in _CAN_ADD):  # type: ignore[union-attr]
            error = m.CONCURRENT_TRANSACTIONS
        if error != m.NONE:
            reply(ctx, error)
            return
        assert meta is not None
        if meta.state == s.ONGOING and set(tps) <= set(meta.partitions):
            reply(ctx, m.NONE)
            return
        new = replace(
            meta,
            state=s.ONGOING,
            partitions=tuple(sorted(set(meta.partitions) | set(tps))),
            start_ms=meta.start_ms if meta.state == s.ONGOING else ctx.now,
        )
        self._write(ctx, tp, part, meta, new, "AddPartitionsToTxn", reply)

    def _end_txn(self, ctx: Context, src: Any, req: m.EndTxnRequest) -> None:
        """handleEndTransaction: Ongoing -> PrepareCommit/PrepareAbort is written, the client is
        answered, markers go to every partition, then CompleteCommit/CompleteAbort. A retry of
        the same end is answered CONCURRENT_TRANSACTIONS while its markers are written and NONE
        once it is complete; the other result, or any end in Empty, is INVALID_TXN_STATE (a
        client sends EndTxn only after it added a partition or offsets). With transaction
        version 2 (KIP-890 part 2) the epoch is bumped at every end."""
        txn_id = req.transactional_id
        tp, part, error = self._partition_for(txn_id)

        def reply(c: Context, err: str, meta: TxnMetadata | None = None) -> None:
            pid, epoch = (meta.producer_id, meta.producer_epoch) if meta else (-1, -1)
            c.send(src, m.EndTxnResponse(txn_id, err, pid, epoch))

        if part is None:
            reply(ctx, error)
            return
        meta = part.txns.get(txn_id)
        error = self._check_producer(meta, req.producer_id, req.producer_epoch)
        if error != m.NONE:
            reply(ctx, error)
            return
        assert meta is not None
        idle = meta.state in (s.EMPTY, s.COMPLETE_COMMIT, s.COMPLETE_ABORT)
        if idle and not req.commit and self.broker.config.transaction_version >= 2:
            if txn_id in part.pending:
                reply(ctx, m.CONCURRENT_TRANSACTIONS)
            else:  # KIP-890 part 2: even an idle abort bumps the epoch
                self._prepare_end(ctx, tp, part, meta, False, reply)
            return
        if txn_id in part.pending:
            reply(ctx, m.CONCURRENT_TRANSACTIONS)
            return
        if meta.state == s.ONGOING:
            self._prepare_end(ctx, tp, part, meta, req.commit, reply)
            return
        asked = _COMMIT_STATES if req.commit else _ABORT_STATES
        if meta.state not in asked:  # Empty, or the other result than the one under way
            reply(ctx, m.INVALID_TXN_STATE)
        elif meta.state in (s.COMPLETE_COMMIT, s.COMPLETE_ABORT):
            reply(ctx, m.NONE, meta)  # a retry of an end that already happened
        else:
            reply(ctx, m.CONCURRENT_TRANSACTIONS)  # a retry while the markers are written

    def _prepare_end(
        self,
        ctx: Context,
        tp: str,
        part: _TxnPartition,
        meta: TxnMetadata,
        commit: bool,
        reply: Callable[..., None] | None,
        *,
        bumped: bool = False,
    ) -> None:
        bump = not bumped and self.broker.config.transaction_version >= 2
        new = replace(
            meta,
            state=s.PREPARE_COMMIT if commit else s.PREPARE_ABORT,
            producer_epoch=meta.producer_epoch + (1 if bump else 0),
        )
        trigger = "EndTxn(commit)" if commit else "EndTxn(abort)"
        if bumped:
            trigger = "abort the fenced transaction"

        def written(c: Context, err: str) -> None:
            if reply is not None:
                reply(c, err, new if err == m.NONE else None)
            if err == m.NONE and tp in self.led:
                self._send_markers(c, self.led[tp], new)

        self._write(ctx, tp, part, meta, new, trigger, written)

    def _fence_and_abort(
        self, ctx: Context, tp: str, part: _TxnPartition, meta: TxnMetadata, trigger: str
    ) -> None:
        """prepareFenceProducerEpoch, then endTransaction(ABORT): the epoch is bumped so the old
        producer is fenced, and the transaction is aborted under the new epoch."""
        fenced = replace(meta, state=s.PREPARE_EPOCH_FENCE, producer_epoch=meta.producer_epoch + 1)
        self._emit_state(ctx, meta.state, trigger, fenced)  # in memory only, never written
        self._prepare_end(ctx, tp, part, fenced, False, None, bumped=True)

    def _abort_timed_out(self, ctx: Context, tp: str, part: _TxnPartition) -> None:
        """abortTimedOutTransactions: an Ongoing transaction older than its
        transaction.timeout.ms is aborted by the coordinator, under a bumped epoch."""
        for txn_id, meta in sorted(part.txns.items()):
            expired = meta.state == s.ONGOING and ctx.now > meta.start_ms + meta.timeout_ms
            if expired and txn_id not in part.pending:
                self._fence_and_abort(ctx, tp, part, meta, "transaction timeout")

    # ---- markers ------------------------------------------------------------------------------

    def _send_markers(
        self, ctx: Context, part: _TxnPartition, meta: TxnMetadata, *, retry: bool = False
    ) -> None:
        """TransactionMarkerChannelManager: a marker for every partition of the transaction.
        The coordinator asks every live broker; only the partition's leader writes it."""
        txn_id = meta.transactional_id
        if not retry:
            part.markers[txn_id] = set(meta.partitions)
        control = "COMMIT" if meta.state == s.PREPARE_COMMIT else "ABORT"
        for tp in sorted(part.markers.get(txn_id, ())):
            req = m.WriteTxnMarkersRequest(
                tp, meta.producer_id, meta.producer_epoch, control, part.coordinator_epoch, txn_id
            )
            for b in self.broker.known_brokers():
                ctx.send(b, req)
        if not part.markers.get(txn_id):
            part.markers.pop(txn_id, None)
            self._complete(ctx, part, meta)
        else:
            ctx.set_timer(MARKER_RETRY_MS, "txn_markers", txn_partition(txn_id))

    def _on_marker_written(self, ctx: Context, resp: m.WriteTxnMarkersResponse) -> None:
        tp = txn_partition(resp.transactional_id)
        part = self.led.get(tp)
        if part is None or resp.error != m.NONE:
            return
        waiting = part.markers.get(resp.transactional_id)
        if waiting is None or resp.tp not in waiting:
            return
        waiting.discard(resp.tp)
        if not waiting:
            del part.markers[resp.transactional_id]
            self._complete(ctx, part, part.txns[resp.transactional_id])

    def _complete(self, ctx: Context, part: _TxnPartition, meta: TxnMetadata) -> None:
        done = s.COMPLETE_COMMIT if meta.state == s.PREPARE_COMMIT else s.COMPLETE_ABORT
        new = replace(meta, state=done, partitions=())
        tp = txn_partition(meta.transactional_id)
        trigger = "COMMIT markers written" if done == s.COMPLETE_COMMIT else "ABORT markers written"
        self._write(ctx, tp, part, meta, new, trigger, None)

    # ---- the state log ------------------------------------------------------------------------

    def _write(
        self,
        ctx: Context,
        tp: str,
        part: _TxnPartition,
        old: TxnMetadata | None,
        new: TxnMetadata,
        trigger: str,
        then: Callable[[Context, str], None] | None,
    ) -> None:
        """Write ``new`` to the state log; it takes effect once committed."""
        assert old is None or s.allowed(old.state, new.state) or old.state == s.PREPARE_EPOCH_FENCE
        txn_id = new.transactional_id
        part.pending.add(txn_id)
        source = s.EMPTY if old is None else old.state

        def done(c: Context, err: str) -> None:
            current = self.led.get(tp)
            if current is not part:
                err = m.NOT_COORDINATOR  # leadership moved while the write was in flight
            part.pending.discard(txn_id)
            if err == m.NONE:
                part.txns[txn_id] = new
                self._emit_state(c, source, trigger, new)
            else:
                err = m.NOT_COORDINATOR if err != m.CONCURRENT_TRANSACTIONS else err
            if then is not None:
                then(c, err)

        self.broker.append_internal(ctx, tp, (new.encode(),), done)

    def _emit_state(self, ctx: Context, source: str, trigger: str, meta: TxnMetadata) -> None:
        ctx.emit(
            "txn_state",
            broker=self.broker.id,
            transactional_id=meta.transactional_id,
            source=source,
            trigger=trigger,
            state=meta.state,
            producer_id=meta.producer_id,
            producer_epoch=meta.producer_epoch,
            partitions=list(meta.partitions),
        )


_CAN_ADD = frozenset({s.EMPTY, s.ONGOING, s.COMPLETE_COMMIT, s.COMPLETE_ABORT})
_COMMIT_STATES = (s.PREPARE_COMMIT, s.COMPLETE_COMMIT)  # where an EndTxn(commit) is a retry
_ABORT_STATES = (s.PREPARE_ABORT, s.COMPLETE_ABORT)
