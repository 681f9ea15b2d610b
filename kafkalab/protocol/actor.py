"""What an actor may ask for while it handles a message or a timer.

A handler gets a :class:`Context`: the time now, and methods that *record* what the handler wants
done. The simulation carries the effects out after the handler returns, so the actors stay pure
(no clock, no randomness, no I/O).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Connect", "ConnectionClosed", "Connected", "Context"]


@dataclass(frozen=True, slots=True)
class ConnectionClosed:
    """What the network tells an actor when its connection to ``peer`` broke: the peer's
    process died and its host reset the connection, or refused a new one. No request sent to
    ``peer`` at or before ``at_ms`` will be answered (Kafka's NetworkClient hands back a
    disconnected response at once). ``refused``: a new connection was refused, so the request
    that tried it never left (Kafka's client sends nothing to a node it cannot connect to)."""

    peer: int | str
    at_ms: int
    refused: bool = False


@dataclass(frozen=True, slots=True)
class Connect:
    """A client opens a new connection to ``peer`` (its TCP handshake). The network answers
    :class:`Connected` if it gets through; over a cut link or to a silent host nothing comes back,
    and the client gives up after its socket.connection.setup.timeout.ms; a dead process on a
    live host refuses it (:class:`ConnectionClosed` with ``refused``)."""

    peer: int | str


@dataclass(frozen=True, slots=True)
class Connected:
    """The network's answer to :class:`Connect`: the connection to ``peer`` is ready."""

    peer: int | str


class Context:
    __slots__ = ("now", "node", "sends", "timers", "events", "halt", "clean_stop", "disconnects")

    def __init__(self, now: int, node: int | str) -> None:
        self.now = now
        self.node = node
        self.sends: list[tuple[int | str, Any, bool]] = []
        self.timers: list[tuple[int, str, Any]] = []
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.halt: str | None = None
        self.clean_stop = False
        self.disconnects: list[int | str] = []

    def send(self, dst: int | str, msg: Any, *, hold: bool = False) -> None:
        """Send ``msg`` to the actor at address ``dst`` over the network. With ``hold`` the
        sender keeps retrying: across a cut link the message waits until the link heals
        (Kafka's controller-to-broker channel), instead of being lost."""
        self.sends.append((dst, msg, hold))

    def disconnect(self, peer: int | str) -> None:
        """Close this actor's connections to ``peer`` (Kafka's NetworkClient closes a connection
        whose request timed out). What was still in flight on a broken connection is lost; the
        next message to ``peer`` goes on a new connection."""
        self.disconnects.append(peer)

    def set_timer(self, delay_ms: int, name: str, data: Any = None) -> None:
        """Wake this actor's ``on_timer(name, data)`` after ``delay_ms``."""
        self.timers.append((delay_ms, name, data))

    def emit(self, kind: str, **data: Any) -> None:
        """Record a state change in the trace."""
        self.events.append((kind, data))

    def stop_process(self, reason: str, *, clean: bool = False) -> None:
        """The broker stops itself: a halt (Kafka calls Exit.halt), or the end of a clean
        shutdown (``clean``: its logs are flushed)."""
        self.halt = reason
        self.clean_stop = clean
