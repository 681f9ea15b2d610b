"""The messages actors send one another. Requests and responses are separate messages, so a
response can be delayed or lost on its own.

Messages are read-only by convention. The four that carry the steady produce/fetch traffic are
plain slots dataclasses rather than frozen ones, which cost three times as much to build."""

from __future__ import annotations

from dataclasses import dataclass

from kafkalab.protocol.log import Record

__all__ = [
    "AlterIsr",
    "AlterIsrResponse",
    "BrokerChange",
    "FetchRequest",
    "FetchResponse",
    "LeaderAndIsr",
    "OffsetsForLeaderEpochRequest",
    "OffsetsForLeaderEpochResponse",
    "ProduceRequest",
    "ProduceResponse",
    "UpdateMetadata",
    "ZkHeartbeat",
    "ZkRegister",
    "ZkRegistered",
    "ZkSessionExpired",
]

# Kafka's error codes, by name.
NONE = "NONE"
NOT_LEADER_OR_FOLLOWER = "NOT_LEADER_OR_FOLLOWER"
NOT_ENOUGH_REPLICAS = "NOT_ENOUGH_REPLICAS"
NOT_ENOUGH_REPLICAS_AFTER_APPEND = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
REQUEST_TIMED_OUT = "REQUEST_TIMED_OUT"
OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"
FENCED_LEADER_EPOCH = "FENCED_LEADER_EPOCH"
UNKNOWN_LEADER_EPOCH = "UNKNOWN_LEADER_EPOCH"
LEADER_NOT_AVAILABLE = "LEADER_NOT_AVAILABLE"
INVALID_UPDATE_VERSION = "INVALID_UPDATE_VERSION"


@dataclass(slots=True)
class ProduceRequest:
    tp: str
    correlation_id: int
    values: tuple[str, ...]
    acks: int
    timeout_ms: int


@dataclass(slots=True)
class ProduceResponse:
    tp: str
    correlation_id: int
    error: str
    base_offset: int = -1


@dataclass(slots=True)
class FetchRequest:
    tp: str
    replica_id: int
    fetch_offset: int
    current_leader_epoch: int | None  # None before KIP-320
    max_wait_ms: int
    correlation_id: int


@dataclass(slots=True)
class FetchResponse:
    tp: str
    correlation_id: int
    error: str
    records: tuple[Record, ...] = ()
    hw: int = -1
    leader_leo: int = -1


@dataclass(frozen=True, slots=True)
class OffsetsForLeaderEpochRequest:
    tp: str
    replica_id: int
    leader_epoch: int
    current_leader_epoch: int | None
    correlation_id: int


@dataclass(frozen=True, slots=True)
class OffsetsForLeaderEpochResponse:
    tp: str
    correlation_id: int
    error: str
    leader_epoch: int  # UNDEFINED_EPOCH before KIP-279
    end_offset: int


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    tp: str
    controller_epoch: int
    leader: int | None
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    replicas: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class UpdateMetadata:
    controller_epoch: int
    live_brokers: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class AlterIsr:
    """A leader asks the controller to commit a new ISR (AlterPartition since 2.7; before that a
    conditional write of the partition's znode: either way the change is checked against the
    leader epoch and partition epoch it was based on)."""

    tp: str
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class AlterIsrResponse:
    tp: str
    error: str
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ZkRegister:
    """A starting broker opens a ZooKeeper session and creates /brokers/ids/N."""

    broker: int


@dataclass(frozen=True, slots=True)
class ZkRegistered:
    """The broker's registration succeeded; its session id is its broker epoch."""

    session: int


@dataclass(frozen=True, slots=True)
class ZkHeartbeat:
    broker: int
    session: int


@dataclass(frozen=True, slots=True)
class ZkSessionExpired:
    """ZooKeeper tells a broker that contacts it with an expired session to register again."""

    session: int


@dataclass(frozen=True, slots=True)
class BrokerChange:
    """ZooKeeper's watch on /brokers/ids fires at the controller: who is registered now, with each
    broker's epoch (the czxid of its registration znode)."""

    live: tuple[tuple[int, int], ...]
