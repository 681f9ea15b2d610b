"""The network steps of a cluster: node names, cut and restored links, slowed links, network
partitions and paused nodes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kafkalab.errors import ActionError
from kafkalab.sim.clients import ClientSteps
from kafkalab.sim.engine import CLIENT_HOST
from kafkalab.sim.topics import broker_range

if TYPE_CHECKING:
    from kafkalab.sim.facade import Facade

__all__ = ["NetworkSteps"]


class NetworkSteps:
    """What the facade's network steps do, on the hosts the step's node names stand for."""

    def __init__(self, cluster: Facade, clients: ClientSteps) -> None:
        self.cluster = cluster
        self.clients = clients
        self.sim = cluster.sim

    def node(self, node: Any) -> Any:
        """The host a node name stands for: a controller node, "zk", a client or a broker."""
        c = self.cluster
        host = c.control.host(node)
        if host is not None:
            return host
        if node in ("client", "producer"):
            return CLIENT_HOST
        if node in self.clients.clients:
            return self.sim.hosts.get(node, node)
        if isinstance(node, int) and not isinstance(node, bool) and node in c.broker_ids:
            return node
        raise ActionError(
            f"node {node!r} does not exist: use a broker id ({broker_range(c.broker_ids)}), "
            f"{c.control.quorum_names} or client"
        )

    def hosts(self, node: Any) -> list[Any]:
        """The hosts a node name stands for (several for a KRaft quorum called "zk")."""
        hosts = self.cluster.control.hosts(node)
        return hosts if hosts is not None else [self.node(node)]

    def paused(self, node: Any) -> bool:
        return self.sim.hosts.get(node, node) in self.sim.paused

    def pause(self, node: Any) -> None:
        host = self.node(node)
        if host in self.sim.paused:
            raise ActionError(f"{node!r} is already paused: resume it first")
        if isinstance(host, int) and host not in self.sim.actors:
            raise ActionError(f"broker {host} is not running: there is nothing to pause")
        self.cluster._step("pause", node=node)
        self.sim.pause(host)
        self.sim.record("pause", "network", {"node": host})
        self.cluster._settle()

    def resume(self, node: Any) -> None:
        host = self.node(node)
        if host not in self.sim.paused:
            raise ActionError(f"{node!r} is not paused")
        self.cluster._step("resume", node=node)
        self.sim.record("resume", "network", {"node": host})
        self.sim.resume(host)
        self.cluster._settle()

    def _pair(self, a: Any, b: Any) -> tuple[list[Any], list[Any]]:
        hosts_a, hosts_b = self.hosts(a), self.hosts(b)
        if set(hosts_a) & set(hosts_b):
            raise ActionError(f"{a!r} and {b!r} are the same node: name two different nodes")
        return hosts_a, hosts_b

    def link(self, a: Any, b: Any, up: bool) -> None:
        hosts_a, hosts_b = self._pair(a, b)
        self.cluster._step("reconnect" if up else "disconnect", a=a, b=b)
        for ha in hosts_a:
            for hb in hosts_b:
                self.sim.set_link(ha, hb, up)
                self.sim.record("link", "network", {"a": ha, "b": hb, "up": up})
        self.cluster._settle()

    def throttle(self, a: Any, b: Any, mb_per_s: object) -> None:
        """``mb_per_s`` is typed ``object``: it comes from a user, and is checked here."""
        hosts_a, hosts_b = self._pair(a, b)
        rate: float | None = None
        if mb_per_s is not None:
            if (
                isinstance(mb_per_s, bool)
                or not isinstance(mb_per_s, int | float)
                or not 0 < mb_per_s <= 10000
            ):
                raise ActionError(
                    f"mb_per_s={mb_per_s!r} is not allowed: use a number of megabytes per "
                    "second in (0, 10000], or None for full speed"
                )
            rate = mb_per_s * 1000.0  # 1 MB/s is 1000 bytes per ms
        self.cluster._step("throttle", a=a, b=b, mb_per_s=mb_per_s)
        for ha in hosts_a:
            for hb in hosts_b:
                self.sim.set_bandwidth(ha, hb, rate)
                self.sim.record("throttle", "network", {"a": ha, "b": hb, "mb_per_s": mb_per_s})
        self.cluster._settle()

    def partition(self, groups: Iterable[Iterable[Any]]) -> None:
        hosts = [[h for n in g for h in self.hosts(n)] for g in groups]
        seen = [h for g in hosts for h in g]
        if len(set(seen)) != len(seen):
            raise ActionError(f"partition groups {groups!r} name a node twice")
        self.cluster._step("partition", groups=[list(g) for g in hosts])
        for i, ga in enumerate(hosts):
            for gb in hosts[i + 1 :]:
                for ha in ga:
                    for hb in gb:
                        self.sim.set_link(ha, hb, False)
                        self.sim.record("link", "network", {"a": ha, "b": hb, "up": False})
        self.cluster._settle()

    def heal(self) -> None:
        self.cluster._step("heal")
        for pair in sorted(self.sim.cut, key=lambda p: sorted(map(str, p))):
            a, b = sorted(pair, key=str)
            self.sim.record("link", "network", {"a": a, "b": b, "up": True})
        self.sim.heal_all()
        self.cluster._settle()
