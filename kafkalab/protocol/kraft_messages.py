"""The messages between KRaft brokers and the controller nodes outside the Raft quorum's own:
registration, heartbeats, and the answer of a node that is not the active controller. They are
part of :mod:`kafkalab.protocol.messages`, which re-exports them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "BrokerHeartbeat",
    "BrokerHeartbeatResponse",
    "BrokerRegistration",
    "BrokerRegistrationResponse",
    "NotController",
]


@dataclass(frozen=True, slots=True)
class NotController:
    """KRaft: this controller node is not the active one; ``leader`` is a hint, if known."""

    leader: Any


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """KRaft: a starting broker registers with the active controller, saying whether its last
    run ended in a clean shutdown (Kafka sends the previous broker epoch it kept on disk)."""

    broker: int
    clean_shutdown: bool = False
    incarnation: int = 0  # which run of the broker this is (Kafka: a random incarnation id)


@dataclass(frozen=True, slots=True)
class BrokerRegistrationResponse:
    broker_epoch: int
    metadata_offset: int = -1  # the metadata log committed up to here when it was sent
    error: str = "NONE"  # DUPLICATE_BROKER_REGISTRATION: another incarnation's session is valid


@dataclass(frozen=True, slots=True)
class BrokerHeartbeat:
    broker: int
    broker_epoch: int
    want_shutdown: bool = False
    metadata_offset: int = -1  # currentMetadataOffset: the last record it applied


@dataclass(frozen=True, slots=True)
class BrokerHeartbeatResponse:
    error: str
    fenced: bool
    shutdown_ready: bool
    metadata_offset: int = -1  # the metadata log committed up to here when it was sent
