"""Read-only snapshots of a running cluster: one replica's log and offsets, and everything an
expect block can check, as plain data. Plots and widgets import these without the facade."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalab.errors import ActionError
from kafkalab.protocol.controller import CommittedPartition, partition_metrics
from kafkalab.protocol.log import Log
from kafkalab.sim.facade import ReplicaView

if TYPE_CHECKING:
    from kafkalab.sim.facade import Facade

__all__ = ["ReplicaView"]


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


def _per_replica(views: dict[int, ReplicaView]) -> dict[str, Any]:
    return {
        "hw": {b: v.hw for b, v in views.items()},
        "leo": {b: v.leo for b, v in views.items()},
        "logs": {b: v.values for b, v in views.items()},
        "epoch_cache": {b: [list(e) for e in v.epoch_cache] for b, v in views.items()},
        "hw_checkpoint": {b: v.hw_checkpoint for b, v in views.items()},
        "log_start_offset": {b: v.log_start_offset for b, v in views.items()},
    }


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


def state(cluster: Facade) -> dict[str, Any]:
    """Everything an expect block can check, as plain data (broker ids as keys)."""
    views = cluster.replicas_view()
    report = cluster.report()
    states = cluster.partition_states()
    return {
        "time_ms": cluster.now,
        "controller": cluster.controller,
        "controller_epoch": cluster.controller_epoch,
        **partition_metrics(states.values()),
        "partitions": {tp: partition_summary(cluster, tp, st) for tp, st in states.items()},
        "leader": cluster.leader,
        "leader_epoch": cluster.leader_epoch,
        "isr": cluster.isr,
        "running": cluster.running(),
        **_per_replica(views),
        **isr_in_flight(cluster, cluster.tp, states[cluster.tp]),
        "producers": cluster.producers(),
        "txn_states": cluster.txn_states(),
        "lso": cluster.lso(),
        **report.as_dict(),
    }
