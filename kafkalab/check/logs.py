"""What the checks read from a running cluster: the replica logs of each partition.

The trace says what happened; a log check also needs what the replicas hold now. This module is
the one place the check package reaches into the simulation for it, so the invariants and the
report can be tested against any object with the same five methods (see :class:`LogView`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from kafkalab.protocol.log import Log

if TYPE_CHECKING:
    from kafkalab.sim.cluster import Cluster

__all__ = ["ClusterLogs", "LogView", "divergence"]


class LogView(Protocol):
    """The replica logs a check reads."""

    def partitions(self) -> list[str]:
        """Every partition name, in the cluster's order."""
        ...

    def leaders(self) -> dict[str, int | None]:
        """Each partition's leader as the controller committed it (None: no leader)."""
        ...

    def live(self, tp: str) -> dict[int, Log]:
        """The logs of ``tp`` on the running brokers that hold it, by broker id."""
        ...

    def settled(self, tp: str) -> dict[int, Log]:
        """The logs of ``tp`` on the running brokers, less the followers still looking for their
        truncation point: a follower told of a new leader epoch asks the leader where its last
        epoch ends (OffsetsForLeaderEpoch, KIP-101) before it fetches, and until the answer
        comes its log may still hold records it is about to remove (Kafka's fetcher keeps such a
        partition in its Truncating state: ``AbstractFetcherThread``)."""
        ...

    def every_value(self, tp: str) -> set[str]:
        """The values any replica of ``tp`` holds, running or only on disk."""
        ...


class ClusterLogs:
    """A :class:`LogView` of a live :class:`~kafkalab.sim.cluster.Cluster`."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def partitions(self) -> list[str]:
        return self.cluster.partitions()

    def leaders(self) -> dict[str, int | None]:
        return {tp: st.leader for tp, st in self.cluster.partition_states().items()}

    def live(self, tp: str) -> dict[int, Log]:
        actors = self.cluster.sim.actors
        out = {}
        for b in self.cluster.running():
            r = actors[b].partitions.get(tp)
            if r is not None:
                out[b] = r.log
        return out

    def settled(self, tp: str) -> dict[int, Log]:
        actors = self.cluster.sim.actors
        out = {}
        for b in self.cluster.running():
            r = actors[b].partitions.get(tp)
            if r is not None and not r.truncating:
                out[b] = r.log
        return out

    def every_value(self, tp: str) -> set[str]:
        views = self.cluster.replicas_view(tp).values()
        return {v for view in views for v in view.values}


def divergence(logs: LogView, *, below_hw: bool) -> list[dict[str, Any]]:
    """For each partition and pair of its running replicas, the first offset where both hold a
    record and the records differ in value or leader epoch. With ``below_hw``: below both HWs,
    among the replicas that are not still looking for their truncation point
    (:meth:`LogView.settled`).

    This reads every pair's whole common prefix: the report calls it once, and the
    logs_agree_below_hw invariant only to name a divergence its bookkeeping found."""
    found = []
    for tp in logs.partitions():
        live = logs.settled(tp) if below_hw else logs.live(tp)
        brokers = sorted(live)
        for i, a in enumerate(brokers):
            for b in brokers[i + 1 :]:
                la, lb = live[a], live[b]
                limit = min(la.hw, lb.hw) if below_hw else min(la.leo, lb.leo)
                if la.records[:limit] == lb.records[:limit]:
                    continue  # a follower holds the leader's own record objects: one C loop
                for off in range(limit):
                    ra, rb = la.records[off], lb.records[off]
                    if ra.value != rb.value or ra.leader_epoch != rb.leader_epoch:
                        found.append(
                            {
                                "partition": tp,
                                "offset": off,
                                "records": {
                                    a: f"{ra.value} (epoch {ra.leader_epoch})",
                                    b: f"{rb.value} (epoch {rb.leader_epoch})",
                                },
                            }
                        )
                        break
    return found
