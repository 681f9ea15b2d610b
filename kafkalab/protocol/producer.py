"""A minimal producer client: it sends one produce request per send and records the outcome.

Batching, retries and idempotence belong to the producer issue; this client is what the
replication scenarios need: acks, the request timeout, and the outcome of every record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context

__all__ = ["Producer", "Send"]


@dataclass(frozen=True, slots=True)
class Send:
    """A local command: send ``values`` to ``leader`` (the client's metadata says it leads)."""

    tp: str
    values: tuple[str, ...]
    acks: int
    leader: int | None
    timeout_ms: int


class Producer:
    def __init__(self, name: str) -> None:
        self.name = name
        self.correlation = 0
        self.inflight: dict[int, tuple[str, tuple[str, ...], int, int]] = {}

    def start(self, ctx: Context) -> None:
        pass

    def handle(self, ctx: Context, src: Any, msg: Any) -> None:
        if isinstance(msg, Send):
            self._send(ctx, msg)
        elif isinstance(msg, m.ProduceResponse):
            pending = self.inflight.pop(msg.correlation_id, None)
            if pending is not None:
                self._outcome(ctx, pending, msg.error, msg.base_offset)

    def on_timer(self, ctx: Context, name: str, data: Any) -> None:
        pending = self.inflight.pop(data, None)
        if pending is not None:  # no response within request.timeout.ms
            self._outcome(ctx, pending, m.REQUEST_TIMED_OUT, -1)

    def _send(self, ctx: Context, cmd: Send) -> None:
        self.correlation += 1
        cid = self.correlation
        if cmd.leader is None:
            self._outcome(ctx, (cmd.tp, cmd.values, cmd.acks, -1), m.LEADER_NOT_AVAILABLE, -1)
            return
        ctx.emit("produce", producer=self.name, tp=cmd.tp, values=list(cmd.values), acks=cmd.acks)
        ctx.send(cmd.leader, m.ProduceRequest(cmd.tp, cid, cmd.values, cmd.acks, cmd.timeout_ms))
        if cmd.acks == 0:
            # acks=0: fire and forget; the producer never learns what happened.
            self._outcome(ctx, (cmd.tp, cmd.values, 0, cmd.leader), "UNKNOWN", -1)
            return
        self.inflight[cid] = (cmd.tp, cmd.values, cmd.acks, cmd.leader)
        ctx.set_timer(cmd.timeout_ms + 1, "request_timeout", cid)

    def _outcome(self, ctx: Context, pending: tuple, error: str, base_offset: int) -> None:
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
