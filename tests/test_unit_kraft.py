"""KRaft partition changes (PartitionChangeBuilder) and Eligible Leader Replicas (KIP-966)."""

from __future__ import annotations

from kafkalab.protocol.kraft import (
    ElectionRules,
    PartitionRegistration,
    partition_change,
    remove_from_isr,
)

FULL = PartitionRegistration(replicas=(1, 2, 3), leader=1, leader_epoch=0, isr=(1, 2, 3))


def fence(
    part: PartitionRegistration, broker: int, fenced: set[int], **kw
) -> PartitionRegistration:
    fenced.add(broker)
    rules = ElectionRules(min_isr=2, **kw)
    return remove_from_isr(part, broker, acceptable=lambda r: r not in fenced, rules=rules)


def test_an_isr_expansion_bumps_only_the_partition_epoch() -> None:
    part = PartitionRegistration((1, 2, 3), 1, 4, (1, 2), partition_epoch=7)
    new = partition_change(
        part, target_isr=(1, 2, 3), acceptable=lambda r: True, rules=ElectionRules(2)
    )
    assert (new.isr, new.leader, new.leader_epoch, new.partition_epoch) == ((1, 2, 3), 1, 4, 8)


def test_a_shrink_that_keeps_the_leader_does_not_bump_the_leader_epoch() -> None:
    new = partition_change(
        FULL, target_isr=(1, 2), acceptable=lambda r: True, rules=ElectionRules(1)
    )
    assert (new.leader, new.leader_epoch, new.partition_epoch) == (1, 0, 1)


def test_no_change_returns_the_same_registration() -> None:
    same = partition_change(
        FULL, target_isr=(1, 2, 3), acceptable=lambda r: True, rules=ElectionRules(2)
    )
    assert same is FULL


def test_fencing_the_leader_elects_the_first_acceptable_isr_replica() -> None:
    fenced: set[int] = set()
    new = fence(FULL, 1, fenced)
    assert (new.leader, new.isr, new.leader_epoch, new.partition_epoch) == (2, (2, 3), 1, 1)


def test_without_elr_the_last_isr_member_stays_and_nobody_else_may_lead() -> None:
    fenced: set[int] = set()
    part = fence(fence(FULL, 3, fenced), 2, fenced)
    assert (part.leader, part.isr) == (1, (1,))
    part = fence(part, 1, fenced)
    assert (part.leader, part.isr) == (None, (1,)), "offline, the ISR keeps its last member"
    fenced.discard(2)  # broker 2 comes back, but it is not in the ISR
    part = partition_change(
        part, target_isr=part.isr, acceptable=lambda r: r not in fenced, rules=ElectionRules(2)
    )
    assert part.leader is None


def test_elr_lets_a_replica_that_left_below_min_isr_lead() -> None:
    """KIP-966: below min ISR the HW is frozen, so replicas that leave the ISR then still hold
    everything committed. When every ISR member is gone, one of them may lead."""
    fenced: set[int] = set()
    part = fence(FULL, 3, fenced, elr_enabled=True)
    assert (part.isr, part.elr) == ((1, 2), ()), "at min ISR nobody is tracked"
    part = fence(part, 2, fenced, elr_enabled=True)
    assert (part.isr, part.elr, part.leader) == ((1,), (2,), 1)
    part = fence(part, 1, fenced, elr_enabled=True)
    assert (part.isr, part.elr, part.leader) == ((), (1, 2), None)
    fenced.discard(2)
    part = partition_change(
        part,
        target_isr=part.isr,
        acceptable=lambda r: r not in fenced,
        rules=ElectionRules(2, True),
    )
    assert (part.leader, part.isr, part.elr) == (2, (2,), (1,))
    assert part.leader_epoch == FULL.leader_epoch + 2


def test_an_unclean_shutdown_removes_a_replica_from_the_elr() -> None:
    fenced: set[int] = set()
    part = fence(fence(FULL, 3, fenced, elr_enabled=True), 2, fenced, elr_enabled=True)
    part = fence(part, 1, fenced, elr_enabled=True, unclean_shutdown=frozenset({2}))
    assert part.elr == (1,)


def test_unclean_election_picks_any_acceptable_replica_with_an_isr_of_itself() -> None:
    part = PartitionRegistration((1, 2, 3), None, 5, (1,), partition_epoch=9)
    new = partition_change(
        part, target_isr=(1,), acceptable=lambda r: r == 3, rules=ElectionRules(2, unclean=True)
    )
    assert (new.leader, new.isr, new.leader_epoch, new.partition_epoch) == (3, (3,), 6, 10)
