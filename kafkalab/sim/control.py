"""The control plane of a cluster, one per ``controller_mode``: which actors hold the partitions'
committed state, who the controller is, what its nodes are called and how they fail.

- ``dedicated``: a controller node beside ZooKeeper that never fails (lessons about replication
  alone);
- ``zk``: the broker that wins the /controller race in ZooKeeper is the controller;
- ``kraft``: a quorum of controller nodes (c1, c2, c3) runs Raft; its leader is the active
  controller.

The facade (:class:`kafkalab.sim.cluster.Cluster`) picks one at construction and asks it, never
the mode, whatever differs.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

from kafkalab.config import Config
from kafkalab.errors import ActionError
from kafkalab.protocol import messages as msgs
from kafkalab.protocol.controller import (
    CommittedPartition,
    Controller,
    ControllerNode,
    PartitionState,
    ZooKeeper,
)
from kafkalab.protocol.kraft import PartitionRegistration
from kafkalab.protocol.kraft_node import KRaftNode
from kafkalab.protocol.raft import BACKOFF_DRAW_BOUND
from kafkalab.sim.engine import CLIENT_HOST, Simulation

__all__ = [
    "ACTIVE_CONTROLLER",
    "CONTROLLER_NODES",
    "ControlPlane",
    "DedicatedControlPlane",
    "KRaftControlPlane",
    "ZooKeeperControlPlane",
    "control_plane",
]

CONTROLLER_NODES = ("c1", "c2", "c3")  # the KRaft controller quorum
ACTIVE_CONTROLLER = "active"  # a step's name for whichever KRaft controller node is active
ZK_NAMES = ("zk", "controller")  # what steps call ZooKeeper (and the controller beside it)
KRAFT_READY_WITHIN_MS = 120000

Assignment = Mapping[str, list[int]]


class ControlPlane:
    """What a cluster asks of its controllers. ``config`` reads the cluster's current settings
    (they change with ``set_config``)."""

    mode: ClassVar[str] = ""
    node_names: ClassVar[tuple[str, ...]] = ()  # controller nodes a step may crash or restart
    quorum_names: ClassVar[str] = "zk"  # how an error message lists its node names

    def __init__(
        self,
        sim: Simulation,
        config: Callable[[], Config],
        *,
        restart_replaces_session: bool = False,
    ) -> None:
        self.sim = sim
        self._config = config
        # Beside the dedicated controller only: see Cluster's restart_replaces_session.
        self.restart_replaces_session = restart_replaces_session
        self.stopped: dict[str, Any] = {}  # crashed controller nodes, by name
        self.assignment: Assignment = {}

    @property
    def config(self) -> Config:
        return self._config()

    # ---- start-up --------------------------------------------------------------------------

    def start(self, assignment: Assignment) -> None:
        """Add the control plane's actors, before any client or broker; each partition starts
        led by its first replica, in epoch 0, with every replica in sync."""
        self.assignment = assignment
        self._add_actors()

    def _add_actors(self) -> None:
        raise NotImplementedError

    @property
    def broker_controller_nodes(self) -> tuple[str, ...]:
        """The controller nodes a broker registers with (none: ZooKeeper tells it)."""
        return ()

    def await_ready(self, broker_ids: list[int]) -> None:
        """In stepped mode, run until every replica knows its role (nothing to wait for unless
        an election must happen first)."""

    # ---- committed state -------------------------------------------------------------------

    def partition_states(self) -> dict[str, CommittedPartition]:
        """Every partition's committed leader, leader epoch and ISR."""
        raise NotImplementedError

    def metadata_states(self) -> dict[str, CommittedPartition]:
        """Every partition's state as the controller last published it to the brokers'
        metadata caches, which clients read. In KRaft the brokers apply the committed records
        themselves: the committed state."""
        return self.partition_states()

    @property
    def controller(self) -> Any:
        """The controller now, or None while there is none."""
        raise NotImplementedError

    @property
    def controller_epoch(self) -> int:
        raise NotImplementedError

    # ---- node names ------------------------------------------------------------------------

    def active_name(self) -> str:
        """The node "active" names."""
        raise ActionError(
            f"{ACTIVE_CONTROLLER!r} names the active KRaft controller node, and this cluster "
            f"has controller_mode {self.config.controller_mode}: name a broker id (or zk)"
        )

    def host(self, node: Any) -> Any:
        """The host a control-plane node name stands for, or None if it names none."""
        if node == ACTIVE_CONTROLLER:
            return self.active_name()
        return "zk" if node in ZK_NAMES else None

    def hosts(self, node: Any) -> list[Any] | None:
        """The hosts a network step's node name stands for, if it names several."""
        return None

    # ---- faults and settings ---------------------------------------------------------------

    def crash(self, node: str) -> None:
        """Stop a controller node (one of ``node_names``); it keeps its disk."""
        raise ActionError(f"{node!r} is not a controller node of this cluster")

    def restart(self, node: str) -> None:
        """Start a stopped controller node again from its disk."""
        raise ActionError(f"{node!r} is not a controller node of this cluster")

    def reconfigure(self, broker_configs: Mapping[int, Config]) -> None:
        """Every controller applies the cluster's new settings; the active one retries
        elections."""
        target = self.controller
        if target is None:
            return
        config = broker_configs[target] if isinstance(target, int) else self.config
        self.sim.send(CLIENT_HOST, target, msgs.ReconfigureRequest(config))


def _initial(assignment: Assignment, kind: type) -> dict[str, Any]:
    """Each partition at creation: led by its first replica, epoch 0, every replica in sync."""
    return {tp: kind(tuple(r), r[0], 0, tuple(r)) for tp, r in assignment.items()}


class DedicatedControlPlane(ControlPlane):
    """A controller node beside ZooKeeper that never fails: its decisions take effect at once."""

    mode = "dedicated"

    def _add_actors(self) -> None:
        replaces = self.restart_replaces_session
        self.sim.add("zk", ZooKeeper(self.config, restart_replaces_session=replaces), "zk")
        partitions = _initial(self.assignment, PartitionState)
        node = ControllerNode(self.config, partitions, restart_replaces_session=replaces)
        self.sim.add("controller", node, "zk")

    def partition_states(self) -> dict[str, CommittedPartition]:
        return dict(self.sim.actors["controller"].partitions)

    def metadata_states(self) -> dict[str, CommittedPartition]:
        return dict(self.sim.actors["controller"].controller.metadata)

    @property
    def controller(self) -> Any:
        return "controller"

    @property
    def controller_epoch(self) -> int:
        return 1


class ZooKeeperControlPlane(ControlPlane):
    """The broker that won the /controller race is the controller; ZooKeeper holds the
    partitions' committed state and the controller epoch."""

    mode = "zk"

    def _add_actors(self) -> None:
        partitions = _initial(self.assignment, PartitionState)
        self.sim.add("zk", ZooKeeper(self.config, partitions, elected=True), "zk")

    def partition_states(self) -> dict[str, CommittedPartition]:
        return dict(self.sim.actors["zk"].partitions)

    def metadata_states(self) -> dict[str, CommittedPartition]:
        """What the live controller with the highest epoch published. While no broker is
        controller (its broker crashed, the next not yet elected) this reads ZooKeeper's state,
        which is fresher than the brokers' caches only if a leader-written ISR change was still
        waiting for its notification; the next controller publishes everything anyway."""
        controllers = [
            actor.controller
            for actor in self.sim.actors.values()
            if isinstance(getattr(actor, "controller", None), Controller)
        ]
        if not controllers:
            return self.partition_states()
        latest = max(controllers, key=lambda c: c.controller_epoch)
        return dict(latest.metadata)

    @property
    def controller(self) -> Any:
        zk = self.sim.actors["zk"]
        return zk.controller[0] if zk.controller else None

    @property
    def controller_epoch(self) -> int:
        return int(self.sim.actors["zk"].controller_epoch)


class KRaftControlPlane(ControlPlane):
    """A Raft quorum of controller nodes c1, c2 and c3; the leader is the active controller.
    "zk" and "controller" in a network step name the whole quorum, so scenarios about losing
    ZooKeeper ask what losing the controllers does."""

    mode = "kraft"
    node_names = CONTROLLER_NODES
    quorum_names = ", ".join(CONTROLLER_NODES)

    def _add_actors(self) -> None:
        for node in CONTROLLER_NODES:
            self._start_node(node, None)

    def _start_node(self, node: str, store: Any) -> None:
        timeout = self.config.controller_quorum_election_timeout_ms
        draws = _draws(self.sim.stream(f"raft:{node}"), timeout)
        backoffs = _draws(self.sim.stream(f"raft-backoff:{node}"), BACKOFF_DRAW_BOUND)
        partitions = _initial(self.assignment, PartitionRegistration)
        actor = KRaftNode(
            node,
            CONTROLLER_NODES,
            self.config,
            partitions,
            election_draws=draws,
            backoff_draws=backoffs,
            store=store,
        )
        self.sim.add(node, actor, node)

    @property
    def broker_controller_nodes(self) -> tuple[str, ...]:
        return CONTROLLER_NODES

    def await_ready(self, broker_ids: list[int]) -> None:
        # A KRaft cluster needs a moment: the quorum elects its leader, the brokers register
        # and are unfenced. A stepped lesson starts once every replica knows its role.
        self.sim.run_until(self.sim.now + KRAFT_READY_WITHIN_MS, lambda: self._ready(broker_ids))
        self.sim.run_until(self.sim.now)

    def _ready(self, broker_ids: list[int]) -> bool:
        active = self.active_node()
        if active is None:
            return False
        if any(b not in active.brokers or active.brokers[b].fenced for b in broker_ids):
            return False
        for tp, replicas in self.assignment.items():
            for b in replicas:
                actor = self.sim.actors.get(b)
                if actor is None or actor.partitions[tp].role is None:
                    return False
        return True

    def active_node(self) -> Any:
        """The active KRaft controller: of the nodes that believe they are active (a paused
        former leader may still believe it), the one in the highest Raft epoch."""
        active = [
            actor
            for node in CONTROLLER_NODES
            if (actor := self.sim.actors.get(node)) is not None and actor.active
        ]
        return max(active, key=lambda a: a.controller_epoch) if active else None

    def _quorum_view(self) -> Any:
        """The controller node that knows most: the active one, else the one that applied the
        most committed metadata (ties: the first)."""
        active = self.active_node()
        if active is not None:
            return active
        nodes = [self.sim.actors[n] for n in CONTROLLER_NODES if n in self.sim.actors]
        if not nodes:
            nodes = [self.stopped[n] for n in CONTROLLER_NODES]
        return max(nodes, key=lambda a: a.applied)

    def partition_states(self) -> dict[str, CommittedPartition]:
        return dict(self._quorum_view().partitions)

    @property
    def controller(self) -> Any:
        active = self.active_node()
        return active.id if active is not None else None

    @property
    def controller_epoch(self) -> int:
        """The Raft epoch of the quorum."""
        return int(self._quorum_view().controller_epoch)

    def active_name(self) -> str:
        active = self.active_node()
        if active is None:
            raise ActionError("no KRaft controller node is active right now")
        return str(active.id)

    def host(self, node: Any) -> Any:
        if node == ACTIVE_CONTROLLER:
            return self.active_name()
        return node if node in CONTROLLER_NODES else None

    def hosts(self, node: Any) -> list[Any] | None:
        return list(CONTROLLER_NODES) if node in ZK_NAMES else None

    def crash(self, node: str) -> None:
        """The node keeps its quorum state and metadata log."""
        self.stopped[node] = self.sim.remove(node)
        self.sim.record("crash", node, {"lose_unflushed": False})

    def restart(self, node: str) -> None:
        stopped = self.stopped.pop(node)
        self._start_node(node, stopped.disk())
        self.sim.record("restart", node, {})

    def reconfigure(self, broker_configs: Mapping[int, Config]) -> None:
        for node in CONTROLLER_NODES:
            actor = self.sim.actors.get(node)
            if actor is not None:
                actor.config = self.config
        active = self.active_node()
        if active is not None:
            self.sim.send(CLIENT_HOST, active.id, msgs.ReconfigureRequest(self.config))


def _draws(rng: random.Random, below: int) -> Iterator[int]:
    """An endless stream of random draws below ``below``, for election timeouts or back-offs
    (a generator function: each is drawn when the node asks for it, not before)."""
    while True:
        yield rng.randrange(below)


CONTROL_PLANES: dict[str, type[ControlPlane]] = {
    plane.mode: plane for plane in (DedicatedControlPlane, ZooKeeperControlPlane, KRaftControlPlane)
}


def control_plane(
    sim: Simulation, config: Callable[[], Config], *, restart_replaces_session: bool = False
) -> ControlPlane:
    """The control plane ``config().controller_mode`` names."""
    plane = CONTROL_PLANES[config().controller_mode]
    return plane(sim, config, restart_replaces_session=restart_replaces_session)
