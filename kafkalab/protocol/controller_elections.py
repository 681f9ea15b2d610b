"""The leader elections the ZooKeeper-era controller (KafkaController) holds besides those a
broker's failure or start-up calls for: an operator's ElectLeaders (KIP-460), preferred-leader
elections, and the automatic leader rebalance.

The functions take the controller they act for (:class:`ElectingController`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

from kafkalab.config import Config
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context

__all__ = [
    "ElectingController",
    "auto_rebalance",
    "elect_preferred",
    "elect_preferred_one",
    "elect_unclean",
    "on_elect_leaders",
]


class ElectingController(Protocol):
    """What these functions use of the controller (:class:`~kafkalab.protocol.controller.
    Controller`); its partition states are ``PartitionState``s."""

    config: Config
    partitions: dict[str, Any]
    live: dict[int, int]
    address: Any

    def _elect(
        self, state: Any, exclude: frozenset[int] = frozenset(), allow_unclean: bool = False
    ) -> Any: ...

    def _commit(self, ctx: Context, tp: str, old: Any, new: Any, reason: str) -> bool: ...

    def _emit(self, kind: str, **data: Any) -> None: ...


def on_elect_leaders(c: ElectingController, ctx: Context, req: m.ElectLeaders) -> None:
    """An operator's ElectLeaders (KafkaController.processReplicaLeaderElection, KIP-460,
    2.4): each partition is answered; asked for every partition, those that needed no
    election are left out of the answer (KafkaApis.handleElectReplicaLeader)."""
    results = {}
    for tp in [tp for tp in c.partitions if req.tp in (None, tp)]:
        if req.election_type == m.UNCLEAN:
            results[tp] = elect_unclean(c, ctx, tp)
        else:
            results[tp] = elect_preferred_one(c, ctx, tp, "preferred_election")
    if req.tp is None:
        results = {tp: e for tp, e in results.items() if e != m.ELECTION_NOT_NEEDED}
    c._emit(
        "elect_leaders_result",
        controller=c.address,
        election_type=req.election_type,
        results=results,
    )


def elect_unclean(c: ElectingController, ctx: Context, tp: str) -> str:
    """An unclean election on request: only for a partition whose leader is gone, with
    OfflinePartitionLeaderElectionStrategy(allowUnclean = true): a live ISR member if there
    is one, else any live replica, whatever unclean.leader.election.enable says."""
    state = c.partitions[tp]
    if state.leader is not None and state.leader in c.live:
        return m.ELECTION_NOT_NEEDED
    new = c._elect(state, allow_unclean=True)
    if new is None:
        return m.ELIGIBLE_LEADERS_NOT_AVAILABLE
    c._commit(ctx, tp, state, new, "unclean_election_request")
    return m.NONE


def elect_preferred(c: ElectingController, ctx: Context, only: str | None, reason: str) -> None:
    for tp in c.partitions:
        if only is None or tp == only:
            elect_preferred_one(c, ctx, tp, reason)


def elect_preferred_one(c: ElectingController, ctx: Context, tp: str, reason: str) -> str:
    """PreferredReplicaPartitionLeaderElection: the first assigned replica leads again when
    it is alive and in the ISR."""
    state = c.partitions[tp]
    preferred = state.replicas[0]
    if state.leader == preferred:
        return m.ELECTION_NOT_NEEDED
    if preferred not in c.live or preferred not in state.isr:
        return m.PREFERRED_LEADER_NOT_AVAILABLE
    new = replace(state, leader=preferred, leader_epoch=state.leader_epoch + 1)
    c._commit(ctx, tp, state, new, reason)
    return m.NONE


def auto_rebalance(c: ElectingController, ctx: Context) -> None:
    """checkAndTriggerAutoLeaderRebalance: for each broker, the share of the partitions it
    prefers that another broker leads; above leader.imbalance.per.broker.percentage, those
    partitions move back to it."""
    by_preferred: dict[int, list[str]] = {}
    for tp, state in c.partitions.items():
        by_preferred.setdefault(state.replicas[0], []).append(tp)
    for broker, tps in sorted(by_preferred.items()):
        if broker not in c.live:
            continue
        moved = [tp for tp in tps if c.partitions[tp].leader != broker]
        ratio = len(moved) / len(tps)
        if ratio * 100 > c.config.leader_imbalance_per_broker_percentage:
            for tp in moved:
                elect_preferred(c, ctx, tp, "auto_leader_rebalance")
