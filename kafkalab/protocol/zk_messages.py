"""The messages between brokers, the controller and ZooKeeper in the ZooKeeper era: sessions,
registrations, the /controller race, the controller's znode writes, and the ISR changes
leaders write themselves (before 2.7). They are part of :mod:`kafkalab.protocol.messages`,
which re-exports them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "BrokerChange",
    "IsrChangeNotification",
    "ZkClose",
    "ZkControllerChange",
    "ZkElect",
    "ZkElected",
    "ZkHeartbeat",
    "ZkPartitionState",
    "ZkBrokers",
    "ZkGetBrokers",
    "ZkRegister",
    "ZkRegistered",
    "ZkRegistrationRefused",
    "ZkSessionExpired",
    "ZkWrite",
    "ZkWriteResult",
]


@dataclass(frozen=True, slots=True)
class ZkRegister:
    """A starting broker opens a ZooKeeper session and creates /brokers/ids/N. ``incarnation``
    tells the broker's runs apart: a run that registers again (its own session expired, or an
    earlier answer was lost) owns its znode; another run of the same broker does not."""

    broker: int
    incarnation: int = 0


@dataclass(frozen=True, slots=True)
class ZkRegistered:
    """The broker's registration succeeded; its session id is its broker epoch. It also reads
    /controller (None when no broker holds it)."""

    session: int
    controller: Any = None
    controller_epoch: int = 0


@dataclass(frozen=True, slots=True)
class ZkRegistrationRefused:
    """/brokers/ids/N already exists and belongs to ``session``, a live session of an earlier
    run of the broker (NODEEXISTS): the znode goes only when that session expires."""

    session: int


@dataclass(frozen=True, slots=True)
class ZkClose:
    """A cleanly stopping broker closes its session: its znodes go at once."""

    broker: int
    session: int


@dataclass(frozen=True, slots=True)
class ZkElect:
    """A broker tries to create the ephemeral /controller znode."""

    broker: int
    session: int


@dataclass(frozen=True, slots=True)
class ZkElected:
    """The broker won: the new controller epoch, and what it reads from ZooKeeper."""

    controller_epoch: int
    live: tuple[tuple[int, int], ...]
    partitions: tuple[tuple[str, Any], ...]


@dataclass(frozen=True, slots=True)
class ZkControllerChange:
    """The watch on /controller fires: who holds it now (None: it was deleted, race again)."""

    controller: int | None
    controller_epoch: int


@dataclass(frozen=True, slots=True)
class ZkWrite:
    """The controller writes partition state znodes, checked against its controller epoch."""

    controller_epoch: int
    write_id: int
    partitions: tuple[tuple[str, Any], ...]
    # Each partition's znode version (partition epoch) the controller based its change on.
    expected_versions: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class ZkWriteResult:
    write_id: int
    ok: bool
    controller_epoch: int


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


@dataclass(frozen=True, slots=True)
class ZkGetBrokers:
    """The controller reads /brokers/ids and each broker's epoch through its own ``session``
    (KafkaZkClient.getAllBrokerAndEpochsInCluster), the first thing it does for a BrokerChange."""

    broker: int
    session: int


@dataclass(frozen=True, slots=True)
class ZkBrokers:
    """What that read found: who is registered now, with each broker's epoch."""

    live: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class ZkPartitionState:
    """Before 2.7: a leader rewrote a partition's ISR in ZooKeeper, and this is the state now
    stored there. ZooKeeper hands it to the controller at once, as a stand-in for the reads of
    a partition's znode the controller makes before every change of its own
    (PartitionStateMachine, ReplicaStateMachine): its decisions start from ZooKeeper's state.
    It is not what the controller publishes: see :class:`IsrChangeNotification`."""

    tp: str
    state: Any


@dataclass(frozen=True, slots=True)
class IsrChangeNotification:
    """0.9 to 2.6: a broker's /isr_change_notification znode naming the partitions whose ISR it
    rewrote (ReplicaManager.maybePropagateIsrChanges); ZooKeeper's watch hands it to the
    controller, which reads those partitions and publishes their ISR to every broker's
    metadata cache (UpdateMetadata)."""

    broker: int
    partitions: tuple[str, ...]
