"""The narrow interface between a broker and the coordinators it hosts (the group coordinator in
:mod:`~kafkalab.protocol.offsets`, the transaction coordinator in
:mod:`~kafkalab.protocol.transactions`).

A coordinator keeps its state in an internal topic, so all it needs from its broker is to write
to a partition it leads (with acks=all) and to read one. The broker needs from a coordinator only
the requests and timers to route to it, and word when it gains or loses a partition.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from kafkalab.config import Config
from kafkalab.protocol.actor import Context
from kafkalab.protocol.replica import ReplicaState

__all__ = ["Coordinator", "CoordinatorHost"]


class CoordinatorHost(Protocol):
    """What a coordinator needs from the broker that hosts it."""

    id: int
    config: Config

    def led_replica(self, tp: str) -> ReplicaState | None:
        """This broker's replica of ``tp`` if it leads it, else None."""
        ...

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
        """Append with acks=all to a partition this broker leads; ``reply(ctx, error)`` runs
        once the records are committed or the write fails."""
        ...

    def new_producer_id(self) -> int:
        """A producer id unique in the cluster."""
        ...

    def known_brokers(self) -> list[int]:
        """The brokers this one knows to be alive (itself included)."""
        ...


class Coordinator(Protocol):
    """What a broker needs from a coordinator it hosts."""

    requests: tuple[type, ...]  # the message types the broker hands to :meth:`handle`
    timers: tuple[str, ...]  # the timer names the broker hands to :meth:`on_timer`

    def handle(self, ctx: Context, src: Any, msg: Any) -> None: ...

    def on_timer(self, ctx: Context, name: str, data: Any) -> None: ...

    def elected(self, ctx: Context, r: ReplicaState) -> None:
        """This broker became the leader of ``r``."""
        ...

    def resigned(self, tp: str) -> None:
        """This broker no longer leads ``tp``."""
        ...
