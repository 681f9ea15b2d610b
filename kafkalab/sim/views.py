"""Read-only snapshots of a running cluster: one replica's log and offsets, and everything an
expect block can check, as plain data. Plots and widgets import these without the facade."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafkalab.errors import ActionError
from kafkalab.protocol.controller import CommittedPartition, partition_metrics
from kafkalab.protocol.log import Log
from kafkalab.sim.facade import ReplicaView

if TYPE_CHECKING:
    from kafkalab.sim.facade import Facade

__all__ = ["PER_REPLICA", "STATE_READERS", "ReplicaView"]


def replica(cluster: Facade, broker: int, tp: str) -> ReplicaView:
    """Broker ``broker``'s replica of ``tp``: its live log, or for a stopped broker its disk."""
    actor = cluster.sim.actors.get(broker)
    if actor is not None:
        r = actor.partitions.get(tp)
        if r is None:
            raise ActionError(f"broker {broker} holds no replica of {tp}")
        log, role, leader, epoch, isr = r.log, r.role, r.leader, r.leader_epoch, r.isr
    else:
        disk = cluster.disks[broker].get(tp)
        if disk is None:
            raise ActionError(f"broker {broker} holds no replica of {tp}")
        log, role, leader, epoch, isr = Log(disk), None, None, -1, ()
    return ReplicaView(
        broker=broker,
        running=actor is not None,
        role=role,
        leader=leader,
        leader_epoch=epoch,
        records=tuple((r.offset, r.value, r.leader_epoch) for r in log.records),
        leo=log.leo,
        hw=log.hw,
        hw_checkpoint=log.hw_checkpoint,
        flushed=log.flushed,
        epoch_cache=tuple(log.epochs),
        isr=tuple(isr),
        log_start_offset=log.log_start_offset,
    )


# Each replica's figures, read from its view: an expect block names them per broker (`hw: {1: 3}`).
PER_REPLICA: dict[str, Callable[[ReplicaView], Any]] = {
    "hw": lambda v: v.hw,
    "leo": lambda v: v.leo,
    "logs": lambda v: v.values,
    "epoch_cache": lambda v: [list(e) for e in v.epoch_cache],
    "hw_checkpoint": lambda v: v.hw_checkpoint,
    "log_start_offset": lambda v: v.log_start_offset,
}


def _per_replica(views: dict[int, ReplicaView]) -> dict[str, Any]:
    return {key: {b: get(v) for b, v in views.items()} for key, get in PER_REPLICA.items()}


def partition_summary(cluster: Facade, tp: str, st: CommittedPartition) -> dict[str, Any]:
    """One partition's committed state and each replica's offsets and log."""
    return {
        "leader": st.leader,
        "leader_epoch": st.leader_epoch,
        "isr": list(st.isr),
        "elr": list(getattr(st, "elr", ())),  # Eligible Leader Replicas (KRaft, KIP-966)
        "replicas": list(st.replicas),
        **_per_replica(cluster.replicas_view(tp)),
        **isr_in_flight(cluster, tp, st),
    }


def isr_in_flight(cluster: Facade, tp: str, st: CommittedPartition) -> dict[str, Any]:
    """The leader's AlterPartition still in flight (KIP-497): the ISR it proposed, or None,
    and its maximal ISR, which the HW waits for (the ISR plus any member being added)."""
    actor = cluster.sim.actors.get(st.leader)
    r = actor.partitions.get(tp) if actor is not None else None
    if r is None or r.role != "leader" or not r.alter_isr_pending:
        return {"pending_isr": None, "maximal_isr": list(st.isr)}
    proposed = next(
        (
            e.data["isr"]
            for e in reversed(cluster.trace.events)
            if e.kind == "alter_isr" and e.data["tp"] == tp and e.data["broker"] == st.leader
        ),
        None,
    )
    return {"pending_isr": proposed, "maximal_isr": list(r.maximal_isr or r.isr)}


def producers(cluster: Facade, clients: dict[str, str]) -> dict[str, dict[str, int]]:
    """The producer id and epoch of each named producer (``clients``: name -> kind)."""
    out: dict[str, dict[str, int]] = {}
    for e in cluster.trace.events:
        if e.kind in ("producer_id", "producer_epoch_bump"):
            out[e.data["producer"]] = {
                "producer_id": e.data["producer_id"],
                "producer_epoch": e.data["producer_epoch"],
            }
    for name, kind in clients.items():
        actor = cluster.sim.actors.get(name)
        if kind != "producer":
            continue
        if actor is not None:
            out[name] = {"producer_id": actor.producer_id, "producer_epoch": actor.producer_epoch}
        else:
            out.setdefault(name, {"producer_id": -1, "producer_epoch": -1})
    return {name: out[name] for name in sorted(out)}


def txn_states(cluster: Facade) -> dict[str, str]:
    """Each transactional id's state at its coordinator (as last written)."""
    states: dict[str, str] = {}
    for e in cluster.trace.events:
        if e.kind == "txn_state":
            states[e.data["transactional_id"]] = e.data["state"]
    return states


def lso(cluster: Facade) -> dict[str, int]:
    """The last stable offset of each data partition, at its leader."""
    out: dict[str, int] = {}
    for tp, st in cluster.partition_states().items():
        actor = cluster.sim.actors.get(st.leader)
        if tp.startswith("__") or actor is None:
            continue
        r = actor.partitions[tp]
        out[tp] = r.producers.last_stable_offset(r.log.hw)
    return out


class _Reading:
    """What one :func:`state` call reads from the cluster, each at most once."""

    def __init__(self, cluster: Facade) -> None:
        self.cluster = cluster
        self.states = cluster.partition_states()
        self.metrics = partition_metrics(self.states.values())
        self.views = cluster.replicas_view()
        self.in_flight = isr_in_flight(cluster, cluster.tp, self.states[cluster.tp])


def _replica_reader(get: Callable[[ReplicaView], Any]) -> Callable[[_Reading], Any]:
    return lambda r: {b: get(v) for b, v in r.views.items()}


def _metric_reader(key: str) -> Callable[[_Reading], Any]:
    return lambda r: r.metrics[key]


def _in_flight_reader(key: str) -> Callable[[_Reading], Any]:
    return lambda r: r.in_flight[key]


# Cluster.state(), in its order, but for the run's report (``Report.as_dict()``), which follows:
# the one declaration of what an expect block can name (kafkalab.sim.expect.STATE_KEYS).
STATE_READERS: dict[str, Callable[[_Reading], Any]] = {
    "time_ms": lambda r: r.cluster.now,
    "controller": lambda r: r.cluster.controller,
    "controller_epoch": lambda r: r.cluster.controller_epoch,
    **{key: _metric_reader(key) for key in ("offline_partitions", "under_replicated_partitions")},
    "partitions": lambda r: {
        tp: partition_summary(r.cluster, tp, st) for tp, st in r.states.items()
    },
    "leader": lambda r: r.cluster.leader,
    "leader_epoch": lambda r: r.cluster.leader_epoch,
    "isr": lambda r: r.cluster.isr,
    "metadata_isr": lambda r: r.cluster.metadata_isr,
    "running": lambda r: r.cluster.running(),
    **{key: _replica_reader(get) for key, get in PER_REPLICA.items()},
    **{key: _in_flight_reader(key) for key in ("pending_isr", "maximal_isr")},
    "producers": lambda r: r.cluster.producers(),
    "txn_states": lambda r: r.cluster.txn_states(),
    "lso": lambda r: r.cluster.lso(),
}


def state(cluster: Facade) -> dict[str, Any]:
    """Everything an expect block can check, as plain data (broker ids as keys)."""
    reading = _Reading(cluster)
    out = {key: read(reading) for key, read in STATE_READERS.items()}
    out.update(cluster.report().as_dict())
    return out
