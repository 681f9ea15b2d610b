"""ReplicaManager's purgatories: the acks=all produce requests waiting for the HW
(DelayedProduce), the follower fetches waiting for new data (DelayedFetch), and the DeleteRecords
requests waiting for every live replica's log start offset (DelayedDeleteRecords).

Each rule names the Kafka function it mirrors (apache/kafka, core/src/main/scala/kafka/...).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.host import BrokerHost
from kafkalab.protocol.replica import (
    DelayedDeleteRecords,
    DelayedFetch,
    DelayedProduce,
    ReplicaState,
    arm,
    fetch_response,
    min_isr,
    read,
)

__all__ = ["Purgatory"]


class Purgatory:
    """The waiting produce and fetch requests of every partition one broker leads (each
    :class:`~kafkalab.protocol.replica.ReplicaState` holds its own queues)."""

    def __init__(self, host: BrokerHost) -> None:
        self.host = host

    def complete_produces(self, ctx: Context, r: ReplicaState) -> None:
        """Partition.checkEnoughReplicasReachOffset for the waiting acks=all requests. They wait
        in append order, so their required offsets increase: the ones the HW has passed (or all
        of them, once this replica is no longer leader) are at the front."""
        queue = r.delayed_produces
        while queue:
            p = queue[0]
            error = self._produce_outcome(r, p)
            if error is None:
                return
            queue.popleft()
            self.answer_produce(ctx, r, p, error, p.base_offset)

    def _produce_outcome(self, r: ReplicaState, p: DelayedProduce) -> str | None:
        """Partition.checkEnoughReplicasReachOffset."""
        if r.role != "leader":
            return m.NOT_LEADER_OR_FOLLOWER
        if r.log.hw < p.required_offset:
            return None
        # Since 2.7 (KIP-497) the maximal ISR counts: the ISR with a pending change applied.
        if len(r.maximal_isr or r.isr) >= min_isr(self.host.config, r):
            return m.NONE
        return m.NOT_ENOUGH_REPLICAS_AFTER_APPEND

    def answer_produce(
        self, ctx: Context, r: ReplicaState, p: DelayedProduce, error: str, base_offset: int = -1
    ) -> None:
        if p.reply is not None:
            p.reply(ctx, error)
        elif p.request is not None:
            resp = m.ProduceResponse(r.tp, p.request.correlation_id, error, base_offset)
            ctx.send(p.src, resp)

    def expire_produces(self, ctx: Context, r: ReplicaState) -> None:
        # Every request carries the producer's request.timeout.ms, so deadlines follow append
        # order too.
        queue = r.delayed_produces
        while queue and queue[0].deadline_ms <= ctx.now:
            p = queue.popleft()
            self.answer_produce(ctx, r, p, m.REQUEST_TIMED_OUT)
        if queue:
            arm(ctx, r, "produce_timeout", queue[0].deadline_ms)

    def fail_pending(self, ctx: Context, r: ReplicaState, error: str) -> None:
        for p in r.delayed_produces:
            self.answer_produce(ctx, r, p, error)
        r.delayed_produces.clear()
        for f in r.delayed_fetches:
            ctx.send(f.src, m.FetchResponse(r.tp, f.request.correlation_id, error))
        r.delayed_fetches = []
        for d in r.delayed_deletes:
            self.answer_delete(ctx, d, error, -1)
        r.delayed_deletes = []

    # ---- DeleteRecords -------------------------------------------------------------------

    def low_watermark(self, r: ReplicaState) -> int:
        """Partition.lowWatermarkIfLeader: the smallest log start offset among the leader and
        the followers on live brokers, as their latest fetches reported them (-1 before a
        follower's first fetch)."""
        low = r.log.log_start_offset
        for follower, remote in r.remotes.items():
            if follower in self.host.live_brokers and remote.log_start_offset < low:
                low = remote.log_start_offset
        return low

    def complete_deletes(self, ctx: Context, r: ReplicaState) -> None:
        """DelayedDeleteRecords.tryComplete: answered once the low watermark reaches the
        offset, or at once with NOT_LEADER_OR_FOLLOWER when this replica no longer leads."""
        if not r.delayed_deletes:
            return
        low = self.low_watermark(r) if r.role == "leader" else -1
        waiting, r.delayed_deletes = r.delayed_deletes, []
        for d in waiting:
            if r.role != "leader":
                self.answer_delete(ctx, d, m.NOT_LEADER_OR_FOLLOWER, -1)
            elif low >= d.offset:
                self.answer_delete(ctx, d, m.NONE, low)
            else:
                r.delayed_deletes.append(d)

    def expire_deletes(self, ctx: Context, r: ReplicaState) -> None:
        """DelayedDeleteRecords.onExpiration: REQUEST_TIMED_OUT, with the low watermark the
        request found when it arrived (its log start offset stays where it was moved)."""
        waiting, r.delayed_deletes = r.delayed_deletes, []
        for d in waiting:
            if d.deadline_ms <= ctx.now:
                self.answer_delete(ctx, d, m.REQUEST_TIMED_OUT, d.low_watermark)
            else:
                r.delayed_deletes.append(d)
        if r.delayed_deletes:
            arm(ctx, r, "delete_timeout", min(d.deadline_ms for d in r.delayed_deletes))

    def answer_delete(self, ctx: Context, d: DelayedDeleteRecords, error: str, low: int) -> None:
        ctx.emit(
            "delete_records",
            broker=self.host.id,
            tp=d.tp,
            offset=d.offset,
            error=error,
            low_watermark=low,
        )
        ctx.send(d.src, m.DeleteRecordsResponse(d.tp, error, low))

    def complete_fetches(self, ctx: Context, r: ReplicaState) -> None:
        """DelayedFetch.tryComplete: new data completes every waiting fetch."""
        self._answer_fetches_where(ctx, r, lambda f: True)

    def complete_fetches_behind(self, ctx: Context, r: ReplicaState, hw: int) -> None:
        """DelayedFetch case H (2.4 to 2.5): a waiting follower fetch completes once the HW is
        ahead of what that follower was last told."""

        def behind(f: DelayedFetch) -> bool:
            remote = r.remotes.get(f.request.replica_id)
            return remote is not None and remote.last_sent_hw < hw

        self._answer_fetches_where(ctx, r, behind)

    def expire_fetches(self, ctx: Context, r: ReplicaState) -> None:
        self._answer_fetches_where(ctx, r, lambda f: f.deadline_ms <= ctx.now)
        if r.delayed_fetches:
            arm(ctx, r, "fetch_wait", min(f.deadline_ms for f in r.delayed_fetches))

    def _answer_fetches_where(
        self, ctx: Context, r: ReplicaState, done: Callable[[DelayedFetch], bool]
    ) -> None:
        """Answer the waiting fetches ``done`` accepts, in arrival order; the rest wait on."""
        waiting, r.delayed_fetches = r.delayed_fetches, []
        for f in waiting:
            if done(f):
                self._answer_delayed_fetch(ctx, r, f)
            else:
                r.delayed_fetches.append(f)

    def _answer_delayed_fetch(self, ctx: Context, r: ReplicaState, f: DelayedFetch) -> None:
        """DelayedFetch.onComplete reads again (readFromPurgatory) without updating the
        follower's state, which was applied when the request arrived."""
        req = f.request
        self.send_fetch_response(ctx, f.src, r, req, read(r, req), r.log.hw)

    def send_fetch_response(
        self,
        ctx: Context,
        src: Any,
        r: ReplicaState,
        req: m.FetchRequest,
        records: tuple[Any, ...],
        hw: int,
    ) -> None:
        remote = r.remotes.get(req.replica_id)
        if remote is not None:
            remote.last_sent_hw = hw
        ctx.send(src, fetch_response(r, req, records, hw))
