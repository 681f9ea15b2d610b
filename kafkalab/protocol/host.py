"""What the parts of a broker (its lifecycle, replica manager, partition leader and replica
fetcher) share: the broker's identity, its config and metadata cache, and its replicas.

The :class:`~kafkalab.protocol.broker.Broker` is the one implementation; the parts name this
protocol instead, so none of them imports the broker.
"""

from __future__ import annotations

from typing import Any, Protocol

from kafkalab.config import Config
from kafkalab.protocol.actor import Context
from kafkalab.protocol.replica import ReplicaState
from kafkalab.protocol.rules import Rules

__all__ = ["CONTROLLER_CHANNEL_RETRY_MS", "BrokerHost"]

# NodeToControllerRequestThread.doWork: a broker's channel to the controller (heartbeats and
# registration; AlterPartition) that knows no active controller looks for one again 100 ms
# later, keeping the request it has to send.
CONTROLLER_CHANNEL_RETRY_MS = 100


class BrokerHost(Protocol):
    """The broker-wide state and services its parts read and update."""

    id: int
    config: Config  # replaced as a whole by a dynamic config change
    rules: Rules
    kraft: bool
    auto_fetch: bool
    clean_restart: bool
    incarnation: int  # which run of the broker this is
    controller_nodes: tuple[str, ...]
    partitions: dict[str, ReplicaState]
    session: int | None  # the ZooKeeper session, or the KRaft broker epoch
    controller_address: Any  # where AlterIsr and controlled shutdown go
    live_brokers: frozenset[int]  # the metadata cache
    shutting_down_brokers: frozenset[int]
    live_broker_epochs: dict[int, int]

    def next_correlation(self) -> int:
        """A correlation id for this broker's next request."""
        ...

    def known_brokers(self) -> list[int]:
        """The brokers this one knows to be alive (itself included)."""
        ...

    def handle(self, ctx: Context, src: Any, msg: Any) -> None:
        """Handle a message as if it had just arrived."""
        ...
