"""The ISR rules that changed between releases, each with its switch on and off: who counts as
caught up (KAFKA-4485, 0.10.2; KAFKA-7152, 2.1), the last ISR member (KAFKA-5642, 1.1), the
ISR an acks=all write is checked against (KIP-497, 2.7) and min ISR above the replication
factor (KAFKA-15583, 3.7)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kafkalab import Cluster, make_config
from kafkalab.protocol import messages as m
from tests.test_unit_broker import (
    deliver,
    disk_of,
    fetch,
    leader,
    leader_and_isr,
    produce,
    produce_responses,
    replica,
)

T0 = 100_000


def _produce_result(c: Cluster) -> str:
    return str(c.trace.of_kind("produce_result")[-1].data["error"])


@pytest.mark.parametrize(("preset", "isr"), [("2.0", [1]), ("2.1", [1, 2, 3])])
def test_an_idle_follower_at_the_leaders_leo_stays_in_the_isr_since_2_1(
    preset: str, isr: list[int]
) -> None:
    # Partition.getOutOfSyncReplicas: from 2.1 (KAFKA-7152) a follower whose LEO equals the
    # leader's is never out of sync; in 2.0.1 the time since it last caught up alone decided.
    c = Cluster(brokers=3, config={"preset": preset})
    c.produce("m1")
    for follower in (2, 3, 2, 3):
        c.fetch(follower)
    c.advance(60_000)  # an idle partition: nobody fetches, nothing is written
    assert c.isr == isr


@pytest.mark.parametrize(("preset", "in_isr"), [("0.9", False), ("0.10", True)])
def test_a_follower_one_batch_behind_catches_up_by_its_previous_fetch_since_0_10_2(
    preset: str, in_isr: bool
) -> None:
    # Replica.updateLogReadResult: from 0.10.2 (KAFKA-4485) a fetch reaching the LEO the leader
    # had at the previous fetch makes the follower caught up as of that fetch; before, only a
    # fetch at the leader's current LEO did, so a follower always one batch behind fell out.
    c = one_batch_behind({"preset": preset})
    assert (3 in c.isr) is in_isr
    assert 2 in c.isr


def one_batch_behind(settings: Mapping[str, Any]) -> Cluster:
    """Broker 2 keeps up; broker 3 fetches once a round, always one record behind."""
    c = Cluster(brokers=3, config=settings)
    for i in range(12):
        c.produce(f"m{i}")
        c.fetch(2)
        c.fetch(2)
        c.fetch(3)
        c.advance(3_000)
    return c


@pytest.mark.parametrize(("preset", "isr", "unclean"), [("1.0", [], True), ("1.1", [1], False)])
def test_the_last_isr_member_stays_since_1_1(preset: str, isr: list[int], unclean: bool) -> None:
    # KafkaController.removeReplicaFromIsr: before 1.1 (KAFKA-5642) the last ISR member stayed
    # only with unclean election off; with it on the ISR became empty, and the member's return
    # was an unclean election.
    c = both_crashed({"preset": preset, "unclean.leader.election.enable": True})
    assert (c.leader, c.isr) == (None, isr)
    c.restart(1)
    c.advance(1_000)
    state = c.trace.of_kind("partition_state")[-1].data
    assert (c.leader, state["unclean"]) == (1, unclean)
    assert c.report().lost_acked == []


def both_crashed(settings: Mapping[str, Any]) -> Cluster:
    """Two brokers, m1 replicated; the follower crashes, then, 20 s later, the leader."""
    c = Cluster(brokers=2, leader=1, config=settings)
    c.produce("m1")
    c.fetch(2)
    c.fetch(2)
    c.crash(2)
    c.advance(20_000)
    c.crash(1)
    c.advance(20_000)
    return c


def test_the_last_isr_member_stays_without_unclean_election_before_1_1_too() -> None:
    c = Cluster(brokers=2, leader=1, config={"preset": "1.0"})
    c.crash(2)
    c.advance(20_000)
    c.crash(1)
    c.advance(20_000)
    assert c.isr == [1]


@pytest.mark.parametrize(
    ("preset", "error"), [("2.6", "NOT_ENOUGH_REPLICAS_AFTER_APPEND"), ("2.7", "NONE")]
)
def test_a_waiting_write_counts_the_maximal_isr_since_2_7(preset: str, error: str) -> None:
    # Partition.checkEnoughReplicasReachOffset: since 2.7 (KIP-497) the maximal ISR, with a
    # pending expansion already in it, is checked against min ISR; in 2.6 the ISR itself.
    config = make_config({"preset": preset, "min.insync.replicas": 2})
    b = leader(config=config, now=T0)
    produce(b, "m0", now=T0)
    r = replica(b)
    r.isr = (1,)  # the ISR shrank after the append ...
    if config.alter_isr:
        r.maximal_isr = (1, 3)  # ... and broker 3's return is proposed, not yet committed
    r.log.hw = 1  # the HW passed the write
    ctx = deliver(b, m.UpdateMetadata(1, (1, 2, 3)), src="controller", now=T0)
    b.purgatory.complete_produces(ctx, r)
    assert [resp.error for resp in produce_responses(ctx)] == [error]


@pytest.mark.parametrize(("preset", "result"), [("3.6", "NOT_ENOUGH_REPLICAS"), ("3.7", "NONE")])
def test_min_isr_above_the_replication_factor_counts_as_the_factor_since_3_7(
    preset: str, result: str
) -> None:
    # Partition.effectiveMinIsr (KAFKA-15583, 3.7): min(min.insync.replicas, replication
    # factor). Before, Kafka accepted the setting and refused every acks=all write.
    c = min_isr_above_the_replicas({"preset": preset})
    assert _produce_result(c) == result
    assert c.report().acked == (["m1"] if result == "NONE" else [])


def min_isr_above_the_replicas(settings: Mapping[str, Any]) -> Cluster:
    """Three replicas, min.insync.replicas 4: one acks=all write, fetched by both followers."""
    c = Cluster(brokers=3, config={**settings, "min.insync.replicas": 4, "acks": "all"})
    c.produce("m1")
    for follower in (2, 3, 2, 3):
        c.fetch(follower)
    return c


@pytest.mark.parametrize(("preset", "caught_up"), [("3.0", True), ("3.3", False)])
def test_a_re_elected_leader_restarts_the_fetch_clock_of_isr_followers_only_since_3_3(
    preset: str, caught_up: bool
) -> None:
    # Partition.makeLeader: before 3.3 (a5f7c82a867) Replica.resetLastCaughtUpTime gave every
    # follower the re-election as its last fetch, at the leader's LEO then; a follower outside
    # the ISR whose next fetch reached that LEO became caught up as of the re-election.
    assert caught_up_at_reelection({"preset": preset}) is caught_up


def caught_up_at_reelection(settings: Mapping[str, Any]) -> bool:
    """Broker 3, outside the ISR, fetches at the re-election LEO after the leader's
    re-election: whether it counts as caught up as of the re-election."""
    b = leader(config=make_config(settings), isr=(1, 2), now=T0)
    produce(b, "m0", acks=1, now=T0)
    reelected = T0 + 1_000
    deliver(b, leader_and_isr(1, 1, (1, 2)), src="controller", now=reelected)
    produce(b, "m1", acks=1, now=reelected)  # the LEO is 2; it was 1 at the re-election
    fetch(b, 3, 1, epoch=1, now=reelected + 500)  # broker 3, outside the ISR, fetches at 1
    return replica(b).remotes[3].last_caught_up_ms == reelected


def _joins(b: object) -> bool:
    r = replica(b)  # type: ignore[arg-type]
    return 3 in (r.maximal_isr or r.isr) or r.alter_isr_pending


@pytest.mark.parametrize(("preset", "joins"), [("1.1", True), ("2.0", False)])
def test_a_follower_joins_the_isr_only_past_the_epoch_start_since_2_0_1(
    preset: str, joins: bool
) -> None:
    # Partition.isFollowerInSync: since 2.0.1 (KAFKA-7128) the follower's LEO must also reach the
    # offset the leader's epoch started at; before, the HW was enough.
    assert joins_below_epoch_start({"preset": preset}) is joins


def joins_below_epoch_start(settings: Mapping[str, Any]) -> bool:
    """Broker 3 fetches at the HW (1), short of the leader's epoch start (3)."""
    disk = disk_of(0, 0, 0, hw_checkpoint=1)  # three records, only the first committed
    b = leader(config=make_config(settings), isr=(1, 2), epoch=1, disk=disk, now=T0)
    assert replica(b).log.hw == 1
    fetch(b, 3, 1, epoch=1, now=T0 + 100)
    return _joins(b)


@pytest.mark.parametrize(("preset", "joins"), [("3.0", True), ("3.3", False)])
def test_only_an_eligible_follower_joins_the_isr_since_3_3(preset: str, joins: bool) -> None:
    # Partition.isReplicaIsrEligible (KAFKA-13916, 3.3): a follower on a broker the metadata
    # holds for dead does not join; before, any fetching follower did.
    assert dead_follower_joins({"preset": preset}) is joins


def dead_follower_joins(settings: Mapping[str, Any]) -> bool:
    """Broker 3, dead to the metadata, fetches at the leader's LEO."""
    b = leader(config=make_config(settings), isr=(1, 2), live=(1, 2), now=T0)
    produce(b, "m0", acks=1, now=T0)
    fetch(b, 3, 1, now=T0 + 100)
    return _joins(b)
