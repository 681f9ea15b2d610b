"""A minimal producer client: it sends one produce request per send and records the outcome.

Batching, retries and idempotence belong to the producer issue; this client is what the
replication scenarios need: acks, the request timeout, and the outcome of every record.
A request in flight to a broker whose process dies fails at once with NETWORK_EXCEPTION, as
Kafka's producer with no retries reports the disconnection (see client_network.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import ConnectionClosed, Context

__all__ = ["Producer", "Send"]


@dataclass(frozen=True, slots=True)
class Send:
    """A local command: send ``values`` to ``leader`` (the client's metadata says it leads)."""

    tp: str
    values: tuple[str, ...]
    acks: int
    leader: int | None
    timeout_ms: int
    producer_id: int = -1  # set: the batch carries this PID, epoch and first sequence
    producer_epoch: int = -1
    sequence: int = -1


class Producer:
    # It closes a connection whose request timed out (NetworkClient.handleTimedOutRequests); its
    # next request goes on a new one.
    manages_connections = True

    def __init__(self, name: str) -> None:
        self.name = name
        self.correlation = 0
        self.inflight: dict[int, tuple[str, tuple[str, ...], int, int]] = {}
        self.deadlines: dict[int, int] = {}  # correlation id -> timeout, in send order
        self.armed_ms: int | None = None  # when the one request-timeout timer fires
        self.sent_ms: dict[int, int] = {}  # correlation id -> when it was sent

    def start(self, ctx: Context) -> None:
        pass

    def handle(self, ctx: Context, src: Any, msg: Any) -> None:
        if isinstance(msg, Send):
            self._send(ctx, msg)
        elif isinstance(msg, m.ProduceResponse):
            pending = self.inflight.pop(msg.correlation_id, None)
            self.deadlines.pop(msg.correlation_id, None)
            if pending is not None:
                self._outcome(ctx, pending, msg.error, msg.base_offset)
        elif isinstance(msg, ConnectionClosed) and not msg.refused:
            # NetworkClient's disconnected response: Sender completes the batch at once as
            # NETWORK_EXCEPTION. (A refused connection sends nothing: Kafka's batch would wait
            # for a leader, which this client, bound to the leader it was given, cannot learn;
            # it times out as before.)
            for cid, pending in list(self.inflight.items()):
                if pending[3] == msg.peer and self.sent_ms[cid] <= msg.at_ms:
                    del self.inflight[cid]
                    self.deadlines.pop(cid, None)
                    self._outcome(ctx, pending, m.NETWORK_EXCEPTION, -1)

    def awaits_answer_from(self, peer: Any) -> bool:
        """Whether a request waits for ``peer``'s answer (the network tells the producer when
        that connection breaks)."""
        return any(pending[3] == peer for pending in self.inflight.values())

    def on_timer(self, ctx: Context, name: str, data: Any) -> None:
        """Requests without a response within request.timeout.ms time out, oldest first."""
        if self.armed_ms is not None and self.armed_ms <= ctx.now:  # on time, or late (paused)
            self.armed_ms = None
        for cid, deadline in list(self.deadlines.items()):
            if deadline > ctx.now:
                self._arm(ctx, deadline)
                break
            del self.deadlines[cid]
            pending = self.inflight.pop(cid)
            ctx.disconnect(pending[3])
            self._outcome(ctx, pending, m.REQUEST_TIMED_OUT, -1)

    def _arm(self, ctx: Context, deadline: int) -> None:
        # One timer for every request in flight: they share request.timeout.ms, so the oldest
        # times out first and the timer re-arms for the next.
        if self.armed_ms is None or deadline < self.armed_ms:
            self.armed_ms = deadline
            ctx.set_timer(deadline - ctx.now, "request_timeout")

    def _send(self, ctx: Context, cmd: Send) -> None:
        self.correlation += 1
        cid = self.correlation
        if cmd.leader is None:
            self._outcome(ctx, (cmd.tp, cmd.values, cmd.acks, -1), m.LEADER_NOT_AVAILABLE, -1)
            return
        ctx.emit("produce", producer=self.name, tp=cmd.tp, values=list(cmd.values), acks=cmd.acks)
        req = m.ProduceRequest(
            cmd.tp,
            cid,
            cmd.values,
            cmd.acks,
            cmd.timeout_ms,
            cmd.producer_id,
            cmd.producer_epoch,
            cmd.sequence,
        )
        ctx.send(cmd.leader, req)
        if cmd.acks == 0:
            # acks=0: fire and forget; the producer never learns what happened.
            self._outcome(ctx, (cmd.tp, cmd.values, 0, cmd.leader), "UNKNOWN", -1)
            return
        self.inflight[cid] = (cmd.tp, cmd.values, cmd.acks, cmd.leader)
        self.sent_ms[cid] = ctx.now
        # One ms after the broker's own timeout, so a broker that is still there answers first.
        self.deadlines[cid] = ctx.now + cmd.timeout_ms + 1
        self._arm(ctx, self.deadlines[cid])

    def _outcome(
        self, ctx: Context, pending: tuple[Any, ...], error: str, base_offset: int
    ) -> None:
        tp, values, acks, leader = pending
        ctx.emit(
            "produce_result",
            producer=self.name,
            tp=tp,
            values=list(values),
            acks=acks,
            error=error,
            base_offset=base_offset,
            leader=leader,
        )
