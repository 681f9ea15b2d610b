"""How a KRaft controller changes a partition (PartitionChangeBuilder, Kafka 3.x/4.x).

In KRaft mode the controller records every partition change in the metadata log. This module
holds the rules that decide such a change, as pure functions a controller can call:

- :func:`partition_change` mirrors ``PartitionChangeBuilder.build``: a new target ISR, the
  leader election that follows (``electLeader``), the Eligible Leader Replicas of KIP-966 when
  they are on, and the epochs: the partition epoch grows with every change, the leader epoch
  when the leader changes, and before metadata version 3.6 when the ISR shrinks too
  (triggerLeaderEpochBumpIfNeeded; KAFKA-15021 dropped that bump).
- :func:`remove_from_isr` mirrors ``ReplicationControlManager.generateLeaderAndIsrUpdates``:
  what happens to the partitions of a broker that is fenced or shutting down.

The election order (``electAnyLeader``): keep the current leader while it is in the ISR and
acceptable; else the first replica in assignment order that is in the ISR and acceptable; with
the ISR empty and ELR on, the first acceptable ELR member; with ELR on and nothing else, the last
known leader if acceptable; finally, with unclean election on, any acceptable replica (its ISR is
then itself). "Acceptable" means registered, not fenced and not shutting down (KIP-841).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from kafkalab.protocol import messages as m

__all__ = [
    "BrokerInfo",
    "BrokerStateRecord",
    "ElectionRules",
    "PartitionChangeRecord",
    "PartitionRegistration",
    "RegisterBrokerRecord",
    "has_preferred_leader",
    "partition_change",
    "preferred_election",
    "remove_from_isr",
    "requested_election",
    "without_elr_member",
]


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    """A partition as the KRaft metadata log describes it (PartitionRecord)."""

    replicas: tuple[int, ...]
    leader: int | None
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int = 0
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ElectionRules:
    """The settings an election follows: min.insync.replicas, whether Eligible Leader Replicas
    are tracked, whether unclean election is allowed, and which replicas came back from an
    unclean shutdown (they may have lost records, so they leave the ELR)."""

    min_isr: int = 1
    elr_enabled: bool = False
    unclean: bool = False
    unclean_shutdown: frozenset[int] = frozenset()
    bump_epoch_on_isr_shrink: bool = False  # before metadata version 3.6 (KAFKA-15021)


def partition_change(
    part: PartitionRegistration,
    *,
    target_isr: tuple[int, ...],
    acceptable: Callable[[int], bool],
    rules: ElectionRules,
) -> PartitionRegistration:
    """The partition after setting ``target_isr`` and electing a leader if the current one can
    no longer lead. Returns ``part`` itself when nothing changes."""
    isr = tuple(target_isr)
    elr, last_known = part.elr, part.last_known_elr
    if rules.elr_enabled:
        elr, last_known = _next_elr(part, isr, rules.min_isr, rules.unclean_shutdown)
    leader, isr, elr = _elect(
        part, isr, elr, last_known, acceptable, rules.elr_enabled, rules.unclean
    )
    new = replace(part, leader=leader, isr=isr, elr=elr, last_known_elr=last_known)
    if new == part:
        return part
    shrunk = not set(part.isr) <= set(isr)
    bump = leader != part.leader or (shrunk and rules.bump_epoch_on_isr_shrink)
    leader_epoch = part.leader_epoch + 1 if bump else part.leader_epoch
    return replace(new, leader_epoch=leader_epoch, partition_epoch=part.partition_epoch + 1)


def _next_elr(
    part: PartitionRegistration,
    isr: tuple[int, ...],
    min_isr: int,
    unclean_shutdown: frozenset[int],
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """KIP-966: while the ISR is below min ISR, replicas that leave it keep their claim (they
    hold everything up to the HW, which cannot have moved) unless they shut down uncleanly."""
    if len(isr) >= min_isr:
        return (), ()
    keep = [r for r in (*part.isr, *part.elr) if r not in isr and r not in unclean_shutdown]
    elr = tuple(dict.fromkeys(keep))
    last_known = (part.leader,) if part.leader is not None and not isr and not elr else ()
    return elr, last_known or part.last_known_elr


def _elect(
    part: PartitionRegistration,
    isr: tuple[int, ...],
    elr: tuple[int, ...],
    last_known: tuple[int, ...],
    acceptable: Callable[[int], bool],
    elr_enabled: bool,
    unclean: bool,
) -> tuple[int | None, tuple[int, ...], tuple[int, ...]]:
    if part.leader is not None and part.leader in isr and acceptable(part.leader):
        return part.leader, isr, elr
    for r in part.replicas:
        if r in isr and acceptable(r):
            return r, isr, elr
    if elr_enabled and not isr:
        for r in part.replicas:
            if r in elr and acceptable(r):
                return r, (r,), tuple(e for e in elr if e != r)
        for r in last_known:
            if acceptable(r):
                return r, (r,), elr
    if unclean:
        for r in part.replicas:
            if acceptable(r):
                return r, (r,), ()
    return None, isr, elr


def remove_from_isr(
    part: PartitionRegistration,
    broker: int,
    *,
    acceptable: Callable[[int], bool],
    rules: ElectionRules,
) -> PartitionRegistration:
    """A broker is fenced or shutting down: it leaves the ISR and any leadership moves away.
    Without ELR the ISR never becomes empty: the last member stays in it (and the partition has
    no leader until it returns, or an unclean election replaces it); with ELR it may empty, its
    members moving to the ELR."""
    if broker not in part.isr and part.leader != broker:
        return part
    target = tuple(r for r in part.isr if r != broker)
    if not target and not rules.elr_enabled:
        target = part.isr
    return partition_change(
        part, target_isr=target, acceptable=lambda r: r != broker and acceptable(r), rules=rules
    )


def preferred_election(
    part: PartitionRegistration, acceptable: Callable[[int], bool]
) -> PartitionRegistration:
    """PartitionChangeBuilder's preferred election: the preferred (first) replica leads again
    when it is in the ISR and acceptable. Returns ``part`` itself when nothing changes."""
    preferred = part.replicas[0]
    if part.leader == preferred or preferred not in part.isr or not acceptable(preferred):
        return part
    return replace(
        part,
        leader=preferred,
        leader_epoch=part.leader_epoch + 1,
        partition_epoch=part.partition_epoch + 1,
    )


def requested_election(
    part: PartitionRegistration,
    election_type: str,
    acceptable: Callable[[int], bool],
    rules: ElectionRules,
) -> tuple[PartitionRegistration, str]:
    """ReplicationControlManager.electLeader (3.1, KAFKA-13162): an operator's election of
    ``election_type`` and its answer. Nothing to do when the partition already has its preferred
    leader (preferred) or any leader (unclean): ELECTION_NOT_NEEDED. Else PartitionChangeBuilder
    with Election.PREFERRED, or Election.UNCLEAN, which falls back to any acceptable replica
    outside the ISR (electAnyLeader) whatever unclean.leader.election.enable says; no change
    found is PREFERRED_LEADER_NOT_AVAILABLE or ELIGIBLE_LEADERS_NOT_AVAILABLE."""
    if election_type == m.UNCLEAN:
        if part.leader is not None:
            return part, m.ELECTION_NOT_NEEDED
        unclean = replace(rules, unclean=True)
        new = partition_change(part, target_isr=part.isr, acceptable=acceptable, rules=unclean)
        return new, m.NONE if new != part else m.ELIGIBLE_LEADERS_NOT_AVAILABLE
    if has_preferred_leader(part):
        return part, m.ELECTION_NOT_NEEDED
    new = preferred_election(part, acceptable)
    return new, m.NONE if new != part else m.PREFERRED_LEADER_NOT_AVAILABLE


def has_preferred_leader(part: PartitionRegistration) -> bool:
    """PartitionRegistration.hasPreferredLeader."""
    return bool(part.replicas) and part.leader == part.replicas[0]


def without_elr_member(part: PartitionRegistration, broker: int) -> PartitionRegistration:
    """KAFKA-15586: ``broker`` leaves the ELR and the last known ELR (``part`` itself if it is in
    neither)."""
    if broker not in part.elr and broker not in part.last_known_elr:
        return part
    return replace(
        part,
        elr=tuple(r for r in part.elr if r != broker),
        last_known_elr=tuple(r for r in part.last_known_elr if r != broker),
        partition_epoch=part.partition_epoch + 1,
    )


# ---- the metadata records a KRaft controller writes -------------------------------------------


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    broker_epoch: int
    fenced: bool = True
    shutting_down: bool = False
    incarnation: int = 0  # which run of the broker registered (Kafka's incarnation id)


@dataclass(frozen=True, slots=True)
class RegisterBrokerRecord:
    broker: int
    broker_epoch: int
    incarnation: int = 0


@dataclass(frozen=True, slots=True)
class BrokerStateRecord:
    """BrokerRegistrationChangeRecord: fenced or not, in controlled shutdown or not."""

    broker: int
    fenced: bool
    shutting_down: bool


@dataclass(frozen=True, slots=True)
class PartitionChangeRecord:
    tp: str
    registration: PartitionRegistration
