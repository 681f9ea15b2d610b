"""What the facade's step helpers (brokers, clients, network, settings, views) read from the
:class:`~kafkalab.sim.cluster.Cluster` they serve: a protocol, so that they depend on this small
module and not on the facade, which imports them. Also the read-only :class:`ReplicaView`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kafkalab.config import Config
    from kafkalab.protocol.controller import CommittedPartition
    from kafkalab.protocol.log import Disk
    from kafkalab.protocol.rules import Rules
    from kafkalab.sim.control import ControlPlane
    from kafkalab.sim.engine import Simulation
    from kafkalab.sim.trace import Trace

__all__ = ["Facade", "ReplicaView"]


@dataclass(frozen=True)
class ReplicaView:
    """What one replica holds right now (or, for a stopped broker, what its disk holds)."""

    broker: int
    running: bool
    role: str | None
    leader: int | None
    leader_epoch: int
    records: tuple[tuple[int, str, int], ...]  # (offset, value, leader epoch)
    leo: int
    hw: int
    hw_checkpoint: int
    flushed: int
    epoch_cache: tuple[tuple[int, int], ...]  # (epoch, start offset)
    isr: tuple[int, ...]  # the ISR as this replica knows it (meaningful on the leader)
    log_start_offset: int = 0  # the first offset readers may fetch (DeleteRecords, KIP-107)

    @property
    def values(self) -> list[str]:
        return [value for _, value, _ in self.records]


class Facade(Protocol):
    config: Config
    rules: Rules
    mode: str
    replication: str
    broker_ids: list[int]
    assignment: dict[str, list[int]]
    topics: list[str]
    tp: str
    sim: Simulation
    control: ControlPlane
    disks: dict[int, dict[str, Disk]]

    @property
    def now(self) -> int: ...

    @property
    def trace(self) -> Trace: ...

    @property
    def controller(self) -> Any: ...

    @property
    def controller_epoch(self) -> int: ...

    @property
    def leader(self) -> int | None: ...

    @property
    def leader_epoch(self) -> int: ...

    @property
    def isr(self) -> list[int]: ...

    def running(self) -> list[int]: ...

    def followers(self, partition: int | str | None = None) -> list[int]: ...

    def partition_states(self) -> dict[str, CommittedPartition]: ...

    @property
    def metadata_isr(self) -> list[int]: ...

    def replicas_view(self, partition: int | str | None = None) -> dict[int, ReplicaView]: ...

    def producers(self) -> dict[str, dict[str, int]]: ...

    def txn_states(self) -> dict[str, str]: ...

    def lso(self) -> dict[str, int]: ...

    def report(self) -> Any: ...

    def _check_broker(self, b: Any) -> int: ...

    def _settle(self) -> None: ...

    def _step(self, action: str, **args: Any) -> None: ...

    def _tp(self, partition: int | str | None) -> str: ...

    def _acks(self, acks: Any) -> int: ...
