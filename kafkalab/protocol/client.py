"""A producer client with retries, in-flight requests and idempotence (KafkaProducer's Sender
and RecordAccumulator, reduced to what changes the outcome of a write).

- Each send is one batch for one partition. Up to ``max_in_flight`` requests are outstanding.
- A retriable error (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS[_AFTER_APPEND],
  REQUEST_TIMED_OUT, OUT_OF_ORDER_SEQUENCE_NUMBER, or no answer within request.timeout.ms) sends
  the batch again after retry.backoff.ms, until ``retries`` or delivery.timeout.ms run out; the
  client refreshes its metadata from a broker first when the leader may have moved.
- Without idempotence a retried batch goes back to the front of the queue (Kafka's reenqueue),
  behind requests already in flight: a lost request plus a retry can reorder records, and a lost
  *response* plus a retry writes the record twice.
- With idempotence (KIP-98) the client gets a producer id from InitProducerId, numbers the
  records of each partition from 0, and re-queues a retried batch in sequence order; the broker
  refuses a batch that would overtake a missing one (OUT_OF_ORDER_SEQUENCE_NUMBER, retried) and
  recognises one it already has.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkalab.errors import ConfigError
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context

__all__ = ["KafkaProducer", "ProduceCommand", "ProducerSettings"]

RETRIABLE = frozenset(
    {
        m.NOT_LEADER_OR_FOLLOWER,
        m.NOT_ENOUGH_REPLICAS,
        m.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        m.REQUEST_TIMED_OUT,
        m.OUT_OF_ORDER_SEQUENCE_NUMBER,
        m.LEADER_NOT_AVAILABLE,
    }
)
REFRESH = frozenset({m.NOT_LEADER_OR_FOLLOWER, m.REQUEST_TIMED_OUT, m.LEADER_NOT_AVAILABLE})
DELIVERY_TIMEOUT = "DELIVERY_TIMEOUT"  # the client's TimeoutException: delivery.timeout.ms passed


@dataclass(frozen=True)
class ProducerSettings:
    """The producer settings that shape delivery (Kafka's names, underscores for dots)."""

    acks: int = -1
    enable_idempotence: bool = True
    max_in_flight_requests_per_connection: int = 5
    retries: int = 2147483647
    retry_backoff_ms: int = 100
    request_timeout_ms: int = 30000
    delivery_timeout_ms: int = 120000

    def __post_init__(self) -> None:
        if self.max_in_flight_requests_per_connection < 1 or self.retries < 0:
            raise ConfigError(
                "max.in.flight.requests.per.connection must be >= 1 and retries >= 0, got "
                f"{self.max_in_flight_requests_per_connection} and {self.retries}"
            )
        if self.enable_idempotence and (
            self.acks != -1 or self.retries == 0 or self.max_in_flight_requests_per_connection > 5
        ):
            raise ConfigError(
                "enable.idempotence=true needs acks=all, retries > 0 and "
                "max.in.flight.requests.per.connection <= 5 (got acks="
                f"{'all' if self.acks == -1 else self.acks}, retries={self.retries}, "
                f"max.in.flight={self.max_in_flight_requests_per_connection})"
            )


@dataclass(frozen=True, slots=True)
class ProduceCommand:
    tp: str
    values: tuple[str, ...]


@dataclass(slots=True)
class _Batch:
    tp: str
    values: tuple[str, ...]
    sequence: int
    created_ms: int
    attempts: int = 0


class KafkaProducer:
    """A named producer client actor."""

    def __init__(self, name: str, settings: ProducerSettings, brokers: tuple[int, ...]) -> None:
        self.name = name
        self.settings = settings
        self.brokers = brokers
        self.producer_id = -1
        self.producer_epoch = -1
        self.next_sequence: dict[str, int] = {}
        self.queue: list[_Batch] = []
        self.inflight: dict[int, _Batch] = {}
        self.deadlines: dict[int, int] = {}
        self.leaders: dict[str, int | None] = {}
        self.correlation = 0
        self._broker_turn = 0
        self._timer_at: dict[str, int] = {}

    # ---- actor interface ---------------------------------------------------------------------

    def start(self, ctx: Context) -> None:
        if self.settings.enable_idempotence:
            ctx.send(self._next_broker(), m.InitProducerIdRequest())
        self._refresh_metadata(ctx)

    def handle(self, ctx: Context, src: Any, msg: Any) -> None:
        if isinstance(msg, ProduceCommand):
            self._enqueue(ctx, msg)
        elif isinstance(msg, m.InitProducerIdResponse):
            self.producer_id, self.producer_epoch = msg.producer_id, msg.producer_epoch
            ctx.emit(
                "producer_id",
                producer=self.name,
                producer_id=msg.producer_id,
                producer_epoch=msg.producer_epoch,
            )
        elif isinstance(msg, m.MetadataResponse):
            self.leaders.update({tp: leader for tp, leader in msg.leaders if leader is not None})
        elif isinstance(msg, m.ProduceResponse):
            self._on_response(ctx, msg)
        self._drain(ctx)

    def on_timer(self, ctx: Context, name: str, data: Any) -> None:
        if self._timer_at.get(name) == ctx.now:
            del self._timer_at[name]
        if name == "request_timeout":
            for cid, deadline in list(self.deadlines.items()):
                if deadline <= ctx.now and cid in self.inflight:
                    del self.deadlines[cid]
                    self._retry_or_fail(ctx, self.inflight.pop(cid), m.REQUEST_TIMED_OUT)
        elif name == "metadata":
            self._expire_queued(ctx)
            if any(self.leaders.get(b.tp) is None for b in self.queue):
                self._refresh_metadata(ctx)
            if self.settings.enable_idempotence and self.producer_id < 0:
                ctx.send(self._next_broker(), m.InitProducerIdRequest())
                self._set_timer(ctx, "metadata", self.settings.retry_backoff_ms)
        self._drain(ctx)
        self._arm_request_timeout(ctx)

    # ---- sending -----------------------------------------------------------------------------

    def _enqueue(self, ctx: Context, cmd: ProduceCommand) -> None:
        sequence = -1
        if self.settings.enable_idempotence:
            sequence = self.next_sequence.get(cmd.tp, 0)
            self.next_sequence[cmd.tp] = sequence + len(cmd.values)
        self.queue.append(_Batch(cmd.tp, cmd.values, sequence, ctx.now))

    def _drain(self, ctx: Context) -> None:
        """Sender.sendProducerData: send queued batches up to max.in.flight, oldest first; a
        partition whose first batch waits (backoff, unknown leader) sends nothing after it
        (RecordAccumulator.drain)."""
        if self.settings.enable_idempotence and self.producer_id < 0:
            return
        limit = self.settings.max_in_flight_requests_per_connection
        waiting: list[_Batch] = []
        blocked: set[str] = set()  # a partition whose first batch must wait holds the rest
        while self.queue and len(self.inflight) < limit:
            batch = self.queue.pop(0)
            leader = self.leaders.get(batch.tp)
            backoff = self._timer_at.get(f"backoff:{batch.tp}", -1) > ctx.now
            if batch.tp in blocked or leader is None or backoff:
                blocked.add(batch.tp)
                waiting.append(batch)
                continue
            self._send(ctx, batch, leader)
        self.queue = waiting + self.queue
        self._arm_request_timeout(ctx)

    def _send(self, ctx: Context, batch: _Batch, leader: int) -> None:
        self.correlation += 1
        cid = self.correlation
        batch.attempts += 1
        pid = self.producer_id if self.settings.enable_idempotence else -1
        epoch = self.producer_epoch if pid >= 0 else -1
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
            ),
        )
        if self.settings.acks == 0:
            self._outcome(ctx, batch, "UNKNOWN", -1)
            return
        self.inflight[cid] = batch
        self.deadlines[cid] = ctx.now + self.settings.request_timeout_ms + 1

    def _on_response(self, ctx: Context, resp: m.ProduceResponse) -> None:
        batch = self.inflight.pop(resp.correlation_id, None)
        self.deadlines.pop(resp.correlation_id, None)
        if batch is None:
            return  # already timed out and retried
        if resp.error == m.NONE:
            self._outcome(ctx, batch, m.NONE, resp.base_offset)
        else:
            self._retry_or_fail(ctx, batch, resp.error)

    def _retry_or_fail(self, ctx: Context, batch: _Batch, error: str) -> None:
        s = self.settings
        expired = ctx.now - batch.created_ms >= s.delivery_timeout_ms
        if error not in RETRIABLE or batch.attempts > s.retries or expired:
            self._outcome(ctx, batch, error, -1)
            return
        ctx.emit(
            "produce_retry",
            producer=self.name,
            tp=batch.tp,
            values=list(batch.values),
            error=error,
            attempt=batch.attempts,
        )
        if s.enable_idempotence:  # RecordAccumulator.insertInSequenceOrder
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
        self._set_timer(ctx, f"backoff:{batch.tp}", s.retry_backoff_ms)
        if error in REFRESH:
            self.leaders.pop(batch.tp, None)
            self._refresh_metadata(ctx)

    def _expire_queued(self, ctx: Context) -> None:
        """RecordAccumulator.expiredBatches: a batch still waiting when delivery.timeout.ms has
        passed since it was created fails (Kafka's TimeoutException)."""
        keep = []
        for batch in self.queue:
            if ctx.now - batch.created_ms >= self.settings.delivery_timeout_ms:
                self._outcome(ctx, batch, DELIVERY_TIMEOUT, -1)
            else:
                keep.append(batch)
        self.queue = keep

    def _refresh_metadata(self, ctx: Context) -> None:
        """Ask a broker (the next in turn) which replicas lead; try again after the backoff."""
        ctx.send(self._next_broker(), m.MetadataRequest())
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
