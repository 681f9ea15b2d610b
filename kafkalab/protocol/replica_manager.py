"""ReplicaManager: the requests a broker answers for the partitions it hosts (produce, with
KIP-890 verification and transaction markers; consumer fetches; ListOffsets; DeleteRecords),
LeaderAndIsr, and the periodic tasks (ISR expiration, HW checkpoints, log retention).

Each rule names the Kafka function it mirrors (apache/kafka, core/src/main/scala/kafka/...).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.host import BrokerHost
from kafkalab.protocol.internal_topics import txn_partition
from kafkalab.protocol.partition import Partition
from kafkalab.protocol.producer_state import BATCHES_TO_RETAIN, DUPLICATE, AbortedTxn
from kafkalab.protocol.purgatory import Purgatory
from kafkalab.protocol.replica import (
    DelayedDeleteRecords,
    DelayedProduce,
    ReplicaState,
    arm,
    min_isr,
)
from kafkalab.protocol.zookeeper import ZOOKEEPER

__all__ = ["READ_COMMITTED", "ReplicaManager"]

# ReplicaManager: how a failed transaction verification reaches the producer.
_VERIFICATION_ERRORS = {
    m.PRODUCER_FENCED: m.INVALID_PRODUCER_EPOCH,
    m.CONCURRENT_TRANSACTIONS: m.NOT_ENOUGH_REPLICAS,
    m.COORDINATOR_LOAD_IN_PROGRESS: m.NOT_ENOUGH_REPLICAS,
    m.COORDINATOR_NOT_AVAILABLE: m.NOT_ENOUGH_REPLICAS,
    m.NOT_COORDINATOR: m.NOT_ENOUGH_REPLICAS,
}
READ_COMMITTED = "read_committed"

# ReplicaManager, 0.9.0.0 to 2.6 (KAFKA-1367, KAFKA-2406, KAFKA-2722): fixed in the code, not
# settings. The "isr-change-propagation" task runs every 2.5 s; it writes a notification once
# no ISR change came for 5 s (IsrChangePropagationBlackOut), or none was written for 60 s
# (IsrChangePropagationInterval).
ISR_CHANGE_PROPAGATION_PERIOD_MS = 2500
ISR_CHANGE_PROPAGATION_BLACKOUT_MS = 5000
ISR_CHANGE_PROPAGATION_INTERVAL_MS = 60000


class ReplicaManager:
    """The replica manager of one broker: it routes each request to the partition it names."""

    def __init__(self, host: BrokerHost, partition: Partition, purgatory: Purgatory) -> None:
        self.host = host
        self.partition = partition
        self.purgatory = purgatory
        # Transactional produce requests waiting for the coordinator's verification (KIP-890).
        # correlation id -> (client, request, the coordinator asked; None: every broker)
        self._verifying: dict[int, tuple[Any, m.ProduceRequest, Any]] = {}
        self._last_isr_propagation_ms = 0

    def become_leader_or_follower(self, ctx: Context, msg: m.LeaderAndIsr) -> None:
        """ReplicaManager.becomeLeaderOrFollower: a request with an older leader epoch than the
        replica already has is ignored (the broker has checked the controller epoch)."""
        r = self.host.partitions.get(msg.tp)
        if r is None:
            return
        if msg.leader_epoch < r.leader_epoch:
            ctx.emit("stale_leader_and_isr", broker=self.host.id, leader_epoch=msg.leader_epoch)
            return
        if msg.leader_epoch == r.leader_epoch and r.role is not None:
            if self.partition.resets_on_same_epoch(r, msg):
                self.partition.reset_on_same_epoch(ctx, r, msg)
            elif msg.partition_epoch > r.partition_epoch:
                self.partition.update_partition(ctx, r, msg)
            return
        if msg.leader == self.host.id:
            self.partition.make_leader(ctx, r, msg)
        else:
            self.partition.make_follower(ctx, r, msg)

    # ---- produce (leader) ------------------------------------------------------------------

    def on_produce(
        self, ctx: Context, src: Any, req: m.ProduceRequest, verified: bool = False
    ) -> None:
        """Partition.appendRecordsToLeader, then ReplicaManager's produce purgatory."""
        r = self.host.partitions[req.tp]

        def reply(error: str, base_offset: int = -1) -> None:
            if req.acks != 0:
                ctx.send(src, m.ProduceResponse(req.tp, req.correlation_id, error, base_offset))

        if r.role != "leader":
            reply(m.NOT_LEADER_OR_FOLLOWER)
            return
        if req.acks == -1 and len(r.isr) < min_isr(self.host.config, r):
            reply(m.NOT_ENOUGH_REPLICAS)
            return
        if req.transactional_id and not verified and self._needs_verification(r, req):
            self._verify(ctx, src, req)
            return
        appended = self._append_client_batch(ctx, src, r, req)
        if appended is None:
            return
        first, last = appended
        self._complete_after_append(ctx, r)
        if req.acks == -1 and r.log.hw > last and len(r.isr) >= min_isr(self.host.config, r):
            reply(m.NONE, first)  # a duplicate of records already committed
        elif req.acks == -1:
            deadline = ctx.now + req.timeout_ms
            r.delayed_produces.append(DelayedProduce(src, req, first, last + 1, deadline))
            arm(ctx, r, "produce_timeout", deadline)
            self.purgatory.complete_produces(ctx, r)
        else:
            reply(m.NONE, first)

    def _append_client_batch(
        self, ctx: Context, src: Any, r: ReplicaState, req: m.ProduceRequest
    ) -> tuple[int, int] | None:
        """Append a producer's batch; an idempotent batch is checked first (ProducerAppendInfo):
        a duplicate is not appended again, and its original offsets are acknowledged."""
        if req.producer_id < 0:
            first, last = r.log.append_as_leader(req.values, r.leader_epoch)
        else:
            config = self.host.config
            if (
                not config.kip360
                and req.base_sequence != 0
                and req.producer_id not in r.producers.producers
            ):
                # checkSequence before 2.5: UNKNOWN_PRODUCER_ID since 1.0 (KAFKA-5793); 0.11's
                # validateAppend took the producer for one with a new epoch
                error = m.UNKNOWN_PRODUCER_ID
                if not config.unknown_producer_id_error:
                    error = m.OUT_OF_ORDER_SEQUENCE_NUMBER
                self._reject(ctx, src, req, error)
                return None
            last_seq = req.base_sequence + len(req.values) - 1
            verdict, original = r.producers.check(
                req.producer_id,
                req.producer_epoch,
                req.base_sequence,
                last_seq,
                self.host.rules.sequence_verdict,
                batches_retained=BATCHES_TO_RETAIN if config.idempotence_five_in_flight else 1,
            )
            if verdict == DUPLICATE and original is not None:
                ctx.emit(
                    "duplicate",
                    broker=self.host.id,
                    tp=r.tp,
                    producer_id=req.producer_id,
                    first=original.first_offset,
                    last=original.last_offset,
                )
                return original.first_offset, original.last_offset
            if verdict != "APPEND":
                self._reject(ctx, src, req, verdict)
                return None
            producer = (req.producer_id, req.producer_epoch, req.base_sequence)
            transactional = bool(req.transactional_id)
            first, last = r.log.append_as_leader(
                req.values, r.leader_epoch, producer, transactional
            )
            r.producers.observe(r.log.records[first : last + 1])
        self._appended(ctx, r, first, last)
        return first, last

    def _appended(self, ctx: Context, r: ReplicaState, first: int, last: int) -> None:
        """Trace a leader's append of offsets ``first``..``last``."""
        ctx.emit(
            "append",
            broker=self.host.id,
            tp=r.tp,
            first=first,
            last=last,
            leader_epoch=r.leader_epoch,
        )

    def append_internal(
        self,
        ctx: Context,
        tp: str,
        values: tuple[str, ...],
        reply: Callable[[Context, str], None],
        *,
        transactional: tuple[int, int] | None = None,
        marker: tuple[str, int, int, int] | None = None,
    ) -> None:
        """The broker's own acks=all write (ReplicaManager.appendRecords with requiredAcks -1):
        a coordinator's state record, an offset commit, or a transaction ``marker`` (control,
        producer id, producer epoch). ``reply(ctx, error)`` runs once it is committed or
        fails."""
        r = self.host.partitions.get(tp)
        if r is None or r.role != "leader":
            reply(ctx, m.NOT_LEADER_OR_FOLLOWER)
            return
        if len(r.isr) < min_isr(self.host.config, r):
            reply(ctx, m.NOT_ENOUGH_REPLICAS)
            return
        if marker is not None:
            control, pid, epoch, coordinator_epoch = marker
            first = last = r.log.append_marker(
                control, r.leader_epoch, pid, epoch, coordinator_epoch
            )
        elif transactional is not None:
            pid, epoch = transactional
            first, last = r.log.append_as_leader(values, r.leader_epoch, (pid, epoch, -1), True)
        else:
            first, last = r.log.append_as_leader(values, r.leader_epoch)
        r.producers.observe(r.log.records[first : last + 1])
        self._appended(ctx, r, first, last)
        deadline = ctx.now + self.host.config.request_timeout_ms
        r.delayed_produces.append(
            DelayedProduce(self.host.id, None, first, last + 1, deadline, reply)
        )
        arm(ctx, r, "produce_timeout", deadline)
        self._complete_after_append(ctx, r)
        self.purgatory.complete_produces(ctx, r)

    def _complete_after_append(self, ctx: Context, r: ReplicaState) -> None:
        """Partition.appendRecordsToLeader: the new records complete the waiting follower
        fetches, and the HW may move (a single-replica ISR). Since 2.1.1 (KAFKA-7697,
        ``append_completes_fetches_after_hw``) the HW moves first, then the fetches are answered,
        carrying the new HW, then the produces it completes (tryCompleteDelayedRequests); before,
        the fetches were answered with the HW from before the append."""
        if self.host.config.append_completes_fetches_after_hw:
            old_hw = r.log.hw
            self.partition.maybe_increment_hw(ctx, r, complete_produces=False)
            self.purgatory.complete_fetches(ctx, r)
            if r.log.hw > old_hw:
                self.purgatory.complete_produces(ctx, r)
        else:
            self.purgatory.complete_fetches(ctx, r)
            self.partition.maybe_increment_hw(ctx, r)

    # ---- transactions on a data partition (leader) ---------------------------------------------

    def _needs_verification(self, r: ReplicaState, req: m.ProduceRequest) -> bool:
        """KIP-890: the first transactional write of a producer to a partition is checked with
        the coordinator (transaction.partition.verification.enable, 3.6); with transaction
        version 2 (4.0) the partition is added to the transaction that way too."""
        config = self.host.config
        if not (
            config.transaction_partition_verification_enable or config.transaction_version >= 2
        ):
            return False
        return req.producer_id not in r.producers.ongoing

    def _verify(self, ctx: Context, src: Any, req: m.ProduceRequest) -> None:
        correlation = self.host.next_correlation()
        hosted = self.host.partitions.get(txn_partition(req.transactional_id))
        coordinator = None if hosted is None else hosted.leader
        self._verifying[correlation] = (src, req, coordinator)
        check = m.AddPartitionsToTxnRequest(
            req.transactional_id,
            req.producer_id,
            req.producer_epoch,
            (req.tp,),
            verify_only=self.host.config.transaction_version < 2,
            correlation_id=correlation,
        )
        if hosted is not None and coordinator is None:
            unavailable = m.AddPartitionsToTxnResponse(
                req.transactional_id, correlation, m.COORDINATOR_NOT_AVAILABLE
            )
            self.on_verified(ctx, self.host.id, unavailable)
            return
        # AddPartitionsToTxnManager asks the leader of the id's __transaction_state partition,
        # as this broker's metadata names it. A broker without a replica of that partition has
        # no metadata for it in the simulator: it asks every broker, and only the coordinator
        # answers with more than NOT_COORDINATOR.
        targets = (
            [coordinator]
            if hosted is not None and coordinator is not None
            else self.host.known_brokers()
        )
        for b in targets:
            ctx.send(b, check)

    def on_verified(self, ctx: Context, src: Any, resp: m.AddPartitionsToTxnResponse) -> None:
        """The coordinator's answer, as ReplicaManager hands it to the producer: PRODUCER_FENCED
        becomes INVALID_PRODUCER_EPOCH, which producers expect here (AddPartitionsToTxnManager,
        3.6, KAFKA-14561); coordinator errors a client might not retry become the retriable
        NOT_ENOUGH_REPLICAS."""
        pending = self._verifying.get(resp.correlation_id)
        if pending is None:
            return
        if resp.error == m.NOT_COORDINATOR and src != pending[2]:
            return  # another broker's answer to the fallback broadcast
        client, req, _ = self._verifying.pop(resp.correlation_id)
        if resp.error != m.NONE:
            error = _VERIFICATION_ERRORS.get(resp.error, resp.error)
            self._reject(ctx, client, req, error)
            return
        self.on_produce(ctx, client, req, verified=True)

    def _reject(self, ctx: Context, src: Any, req: m.ProduceRequest, error: str) -> None:
        """Refuse a producer's batch without appending it."""
        ctx.emit(
            "produce_rejected",
            broker=self.host.id,
            tp=req.tp,
            error=error,
            producer_id=req.producer_id,
            sequence=req.base_sequence,
        )
        if req.acks != 0:
            ctx.send(src, m.ProduceResponse(req.tp, req.correlation_id, error))

    def on_write_markers(self, ctx: Context, src: Any, req: m.WriteTxnMarkersRequest) -> None:
        """KafkaApis.handleWriteTxnMarkersRequest: the leader appends the COMMIT or ABORT
        control record with acks=all, closing the producer's transaction on this partition
        (a marker from an older producer epoch, or an older coordinator epoch, is refused).
        Other brokers stay silent."""
        r = self.host.partitions.get(req.tp)
        if r is None or r.role != "leader":
            return

        def answer(c: Context, error: str) -> None:
            c.send(
                src,
                m.WriteTxnMarkersResponse(
                    req.tp, req.producer_id, req.control, error, req.transactional_id
                ),
            )

        error = r.producers.check_marker(req.producer_id, req.producer_epoch, req.coordinator_epoch)
        if error is not None:
            ctx.emit(
                "marker_rejected",
                broker=self.host.id,
                tp=req.tp,
                control=req.control,
                producer_id=req.producer_id,
                coordinator_epoch=req.coordinator_epoch,
                error=error,
            )
            answer(ctx, error)
            return
        first = r.producers.ongoing.get(req.producer_id)
        ctx.emit(
            "marker",
            broker=self.host.id,
            tp=req.tp,
            control=req.control,
            producer_id=req.producer_id,
            producer_epoch=req.producer_epoch,
            offset=r.log.leo,
            first_offset=first,
        )
        marker = (req.control, req.producer_id, req.producer_epoch, req.coordinator_epoch)
        self.append_internal(ctx, req.tp, (), answer, marker=marker)

    # ---- consumer reads and admin requests (leader) ------------------------------------------

    def on_consumer_fetch(self, ctx: Context, src: Any, req: m.ConsumerFetchRequest) -> None:
        """A consumer's fetch (ReplicaManager.fetchMessages with FetchIsolation HIGH_WATERMARK
        or TXN_COMMITTED): up to the HW, or up to the LSO with the aborted transactions in that
        range, which the consumer uses to skip aborted records."""
        r = self.host.partitions.get(req.tp)
        if r is None or r.role != "leader":
            ctx.send(
                src, m.ConsumerFetchResponse(req.tp, req.correlation_id, m.NOT_LEADER_OR_FOLLOWER)
            )
            return
        hw = r.log.hw
        lso = r.producers.last_stable_offset(hw)
        end = lso if req.isolation == READ_COMMITTED else hw
        if not r.log.log_start_offset <= req.fetch_offset <= r.log.leo:
            ctx.send(
                src, m.ConsumerFetchResponse(req.tp, req.correlation_id, m.OFFSET_OUT_OF_RANGE)
            )
            return
        records = tuple(r.log.records[req.fetch_offset : end])
        aborted: tuple[AbortedTxn, ...] = ()
        if req.isolation == READ_COMMITTED:
            aborted = r.producers.aborted_between(req.fetch_offset, end)
        ctx.send(
            src,
            m.ConsumerFetchResponse(req.tp, req.correlation_id, m.NONE, records, hw, lso, aborted),
        )

    def on_list_offsets(self, ctx: Context, src: Any, req: m.ListOffsetsRequest) -> None:
        """Partition.fetchOffsetForTimestamp for EARLIEST (the log start offset) and LATEST
        (the HW, or the LSO for read_committed: what that consumer could read next)."""
        r = self.host.partitions.get(req.tp)
        if r is None or r.role != "leader":
            reply = m.ListOffsetsResponse(req.tp, req.correlation_id, m.NOT_LEADER_OR_FOLLOWER)
        elif req.timestamp == m.EARLIEST:
            reply = m.ListOffsetsResponse(
                req.tp, req.correlation_id, m.NONE, r.log.log_start_offset
            )
        else:
            hw = r.log.hw
            end = r.producers.last_stable_offset(hw) if req.isolation == READ_COMMITTED else hw
            reply = m.ListOffsetsResponse(req.tp, req.correlation_id, m.NONE, end)
        ctx.send(src, reply)

    def on_delete_records(self, ctx: Context, src: Any, req: m.DeleteRecordsRequest) -> None:
        """ReplicaManager.deleteRecords and Partition.deleteRecordsOnLeader (DeleteRecords,
        KIP-107, 0.11): offset -1 means the HW; an offset above the HW is OFFSET_OUT_OF_RANGE.
        The leader moves its log start offset at once (it only moves forward); each follower
        moves its own when a fetch response carries the leader's, and reports it in its next
        fetch. The answer waits (DelayedDeleteRecords) until the low watermark, the smallest log
        start offset among the leader and its live followers, has reached the offset."""
        r = self.host.partitions.get(req.tp)
        offset = req.offset
        if r is None or r.role != "leader":
            error = m.NOT_LEADER_OR_FOLLOWER
        else:
            offset = r.log.hw if req.offset == -1 else req.offset
            error = m.OFFSET_OUT_OF_RANGE if not 0 <= offset <= r.log.hw else m.NONE
        if r is None or error != m.NONE:
            self.purgatory.answer_delete(
                ctx, DelayedDeleteRecords(src, req.tp, offset, -1, 0), error, -1
            )
            return
        if r.log.increment_log_start_offset(offset):
            ctx.emit("log_start_offset", broker=self.host.id, tp=r.tp, offset=offset)
        low = self.purgatory.low_watermark(r)
        pending = DelayedDeleteRecords(src, r.tp, offset, low, ctx.now + req.timeout_ms)
        if low >= offset:
            self.purgatory.answer_delete(ctx, pending, m.NONE, low)
            return
        r.delayed_deletes.append(pending)
        arm(ctx, r, "delete_timeout", pending.deadline_ms)

    # ---- periodic tasks ----------------------------------------------------------------------

    def start(self, ctx: Context) -> None:
        """The periodic tasks ReplicaManager and LogManager start with the broker."""
        config = self.host.config
        ctx.set_timer(config.replica_high_watermark_checkpoint_interval_ms, "hw_checkpoint")
        if config.retention_bytes >= 0:  # LogManager's "kafka-log-retention" task
            ctx.set_timer(config.log_retention_check_interval_ms, "log_retention")
        ctx.set_timer(self._isr_check_period_ms(), "isr_expiration")
        self._last_isr_propagation_ms = self.partition.last_isr_change_ms = ctx.now
        if self._propagates_isr_changes():
            ctx.set_timer(ISR_CHANGE_PROPAGATION_PERIOD_MS, "isr_change_propagation")

    def _propagates_isr_changes(self) -> bool:
        """Whether leaders write the ISR to ZooKeeper themselves and tell the controller through
        /isr_change_notification (0.9 to 2.6; ``isr_change_propagation``, ``alter_isr``)."""
        config = self.host.config
        return config.isr_change_propagation and not config.alter_isr and not self.host.kraft

    def on_isr_change_propagation_timer(self, ctx: Context, name: str, data: Any) -> None:
        """ReplicaManager.maybePropagateIsrChanges: when ISR changes wait and either none came
        in the last 5 s or none was propagated in the last 60 s, write one notification naming
        them all. A busy broker's changes so reach the controller, and the brokers' metadata,
        seconds late."""
        if not self._propagates_isr_changes():
            return
        ctx.set_timer(ISR_CHANGE_PROPAGATION_PERIOD_MS, "isr_change_propagation")
        partition, now = self.partition, ctx.now
        quiet = partition.last_isr_change_ms + ISR_CHANGE_PROPAGATION_BLACKOUT_MS < now
        overdue = self._last_isr_propagation_ms + ISR_CHANGE_PROPAGATION_INTERVAL_MS < now
        if not partition.isr_changes or not (quiet or overdue):
            return
        tps = tuple(sorted(partition.isr_changes))
        partition.isr_changes.clear()
        self._last_isr_propagation_ms = now
        ctx.emit("isr_change_notification", broker=self.host.id, tps=list(tps))
        target = (
            ZOOKEEPER if self.host.config.controller_mode == "zk" else self.host.controller_address
        )
        ctx.send(target, m.IsrChangeNotification(self.host.id, tps), hold=True)

    def on_hw_checkpoint_timer(self, ctx: Context, name: str, data: Any) -> None:
        for r in self.host.partitions.values():
            r.log.checkpoint_hw()
        ctx.set_timer(
            self.host.config.replica_high_watermark_checkpoint_interval_ms, "hw_checkpoint"
        )

    def on_isr_expiration_timer(self, ctx: Context, name: str, data: Any) -> None:
        for r in self.host.partitions.values():
            if r.role == "leader":
                self.partition.maybe_shrink_isr(ctx, r)
        ctx.set_timer(self._isr_check_period_ms(), "isr_expiration")

    def on_log_retention_timer(self, ctx: Context, name: str, data: Any) -> None:
        self._apply_retention(ctx)
        ctx.set_timer(self.host.config.log_retention_check_interval_ms, "log_retention")

    def _apply_retention(self, ctx: Context) -> None:
        """LogManager.cleanupLogs: every replica, leader or follower, deletes its own segments
        past retention.bytes; the log start offset moves to the first segment kept. Before
        0.11.0.1 (``retention_bounded_by_hw`` off) it could pass the HW: records no consumer had
        been allowed to read, acknowledged with acks=1, went before any follower copied them."""
        config = self.host.config
        for r in self.host.partitions.values():
            if r.tp.startswith("__"):
                continue  # the internal topics keep their own retention, not modelled
            bounded = config.retention_bounded_by_hw
            start = r.log.retention_start(
                config.retention_bytes, config.segment_bytes, bounded_by_hw=bounded
            )
            if start is not None and r.log.increment_log_start_offset(start, past_hw=not bounded):
                ctx.emit("log_start_offset", broker=self.host.id, tp=r.tp, offset=start)

    def _isr_check_period_ms(self) -> int:
        """ReplicaManager's "isr-expiration" task: every replica.lag.time.max.ms / 2 since 0.10.2
        (KAFKA-4485), every replica.lag.time.max.ms before."""
        lag = self.host.config.replica_lag_time_max_ms
        return lag // 2 if self.host.config.isr_check_half_lag else lag
