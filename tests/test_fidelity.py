"""Regression tests for rules where the simulator once disagreed with Kafka's code.

Each test names the Kafka function it checks against (apache/kafka; docs/sources.md has the
commit and first release of every rule) and, where a switch keeps the older behaviour, runs the
rule with that switch on and off.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kafkalab import Cluster, Rules, make_config, scenarios
from kafkalab.config import Config
from kafkalab.errors import ActionError
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.broker import NEVER_MS, Broker
from kafkalab.protocol.controller import PartitionState, ZooKeeper
from kafkalab.protocol.kraft import ElectionRules, PartitionRegistration, partition_change
from kafkalab.protocol.log import UNDEFINED_OFFSET, Disk, Record
from kafkalab.protocol.producer_state import ProducerStateManager
from kafkalab.protocol.rules import sequence_verdict

TP = "demo-0"
T0 = 100_000


def deliver(b: Any, msg: Any, *, src: Any = "controller", now: int = T0) -> Context:
    ctx = Context(now, getattr(b, "id", "zk"))
    b.handle(ctx, src, msg)
    return ctx


def sent(ctx: Context, kind: type) -> list[Any]:
    return [msg for _, msg, *_ in ctx.sends if isinstance(msg, kind)]


def events(ctx: Context, kind: str) -> list[dict[str, Any]]:
    return [data for k, data in ctx.events if k == kind]


def leader(
    config: Config,
    *,
    isr: tuple[int, ...] = (1, 2),
    replicas: tuple[int, ...] = (1, 2, 3),
    metadata: m.UpdateMetadata | None = None,
    disk: Disk | None = None,
) -> Broker:
    b = Broker(1, config, {TP: disk or Disk()}, auto_fetch=False)
    deliver(b, metadata or m.UpdateMetadata(1, replicas))
    deliver(b, m.LeaderAndIsr(TP, 1, 1, 0, isr, 0, replicas))
    return b


def produce(b: Broker, value: str, now: int = T0) -> None:
    deliver(b, m.ProduceRequest(TP, 1, (value,), 1, 30000), src="p", now=now)


def fetch(b: Broker, follower: int, offset: int, now: int = T0, epoch: int = -1) -> Context:
    req = m.FetchRequest(TP, follower, offset, None, 0, 7, 1048576, epoch)
    return deliver(b, req, src=follower, now=now)


# ---- fetch: the purgatory and the order of read and update ------------------------------------


@pytest.mark.parametrize(
    ("read_first", "wait_ms", "follower_hw"),
    [(True, None, 1), (True, 0, 0), (False, 0, 1)],
    ids=["parked: DelayedFetch re-reads", "answered at once", "0.8.0: update, then read"],
)
def test_a_fetch_at_the_leo_carries_the_hw_it_raised_unless_answered_at_once(
    read_first: bool, wait_ms: int | None, follower_hw: int
) -> None:
    """ReplicaManager.fetchMessages and DelayedFetch.onComplete; KAFKA-1430 (0.8.2)."""
    c = Cluster(brokers=2, leader=2, config={"hw_read_before_fetch_update": read_first})
    c.produce("m1")
    c.fetch(1)
    c.fetch(1, max_wait_ms=wait_ms)
    assert (c.replica(2).hw, c.replica(1).hw) == (1, follower_hw)


def test_a_fetch_with_new_records_is_answered_at_once_with_the_older_hw() -> None:
    c = Cluster(brokers=2, leader=2)
    c.produce("m1")
    c.fetch(1)
    c.produce("m2", acks=1)
    c.fetch(1)  # brings m2: answered at once, with the HW from before this fetch
    assert (c.replica(2).hw, c.replica(1).hw) == (1, 0)


def test_a_negative_max_wait_is_refused_with_what_is_allowed() -> None:
    c = Cluster(brokers=2, leader=2)
    with pytest.raises(Exception, match=r"max_wait_ms=-1 is not allowed: use a whole number"):
        c.fetch(1, max_wait_ms=-1)


# ---- the leader's HW: which followers it waits for ---------------------------------------------


def _kraft_leader(kafka_15021: bool, *, shutting_down: tuple[int, ...], epoch3: int) -> Broker:
    config = make_config({"controller_mode": "kraft", "kafka_15021": kafka_15021})
    metadata = m.UpdateMetadata(
        1, (1, 2, 3), shutting_down=shutting_down, live_broker_epochs=((1, 5), (2, 5), (3, 5))
    )
    b = Broker(1, config, {TP: Disk()}, auto_fetch=False, controller_nodes=("c1",))
    b.session = 5
    deliver(b, metadata)
    deliver(b, m.LeaderAndIsr(TP, 1, 1, 0, (1, 2), 0, (1, 2, 3)))
    produce(b, "m1")
    fetch(b, 3, 0, epoch=epoch3)
    fetch(b, 3, 1, epoch=epoch3)  # broker 3 reaches the LEO: caught up, outside the ISR
    produce(b, "m2")
    fetch(b, 2, 0)
    fetch(b, 2, 2)  # the ISR holds m1 and m2; broker 3 has only m1
    return b


@pytest.mark.parametrize(
    ("shutting_down", "epoch3", "eligible"),
    [((), 5, True), ((3,), 5, False), ((), 4, False), ((), -1, True)],
    ids=["eligible", "shutting down", "stale broker epoch", "no epoch sent"],
)
def test_a_caught_up_follower_outside_the_isr_holds_the_hw_only_if_eligible(
    shutting_down: tuple[int, ...], epoch3: int, eligible: bool
) -> None:
    """Partition.maybeIncrementLeaderHW with isReplicaIsrEligible (KAFKA-15021, 3.6)."""
    b = _kraft_leader(True, shutting_down=shutting_down, epoch3=epoch3)
    assert b.partitions[TP].log.hw == (1 if eligible else 2)
    old = _kraft_leader(False, shutting_down=shutting_down, epoch3=epoch3)
    assert old.partitions[TP].log.hw == 1, "before 3.6 every caught-up follower held it back"


@pytest.mark.parametrize(("includes", "hw"), [(True, 1), (False, 2)])
def test_before_kafka_4485_a_follower_outside_the_isr_never_holds_the_hw(
    includes: bool, hw: int
) -> None:
    """Broker 3 is not live, so it cannot join the ISR; before 3.6 nothing checked that."""
    settings = {"hw_includes_caught_up_followers": includes, "kafka_15021": False}
    assert hw_with_a_dead_caught_up_follower(settings) == hw


def hw_with_a_dead_caught_up_follower(settings: Mapping[str, Any]) -> int:
    """Broker 3, not live, catches up with m1 outside the ISR; the ISR holds m1 and m2."""
    b = leader(make_config(settings), metadata=m.UpdateMetadata(1, (1, 2)))
    produce(b, "m1")
    fetch(b, 3, 0)
    fetch(b, 3, 1)
    produce(b, "m2")
    fetch(b, 2, 0)
    fetch(b, 2, 2)
    return b.partitions[TP].log.hw


def test_every_new_leader_epoch_resets_the_view_of_each_follower() -> None:
    """Partition.makeLeader -> Replica.resetReplicaState, on a new epoch of the same leader."""
    b = leader(make_config(), isr=(1, 2, 3))
    produce(b, "m1")
    fetch(b, 2, 1, now=T0 + 10)
    fetch(b, 3, 1, now=T0 + 10)
    deliver(b, m.LeaderAndIsr(TP, 1, 1, 1, (1, 2), 1, (1, 2, 3)), now=T0 + 500)
    remotes = b.partitions[TP].remotes
    assert remotes[2].last_caught_up_ms == T0 + 500, "in the new ISR: a fresh lag window"
    assert remotes[3].last_caught_up_ms == NEVER_MS, "outside it: never caught up"
    assert remotes[3].leo == 1, "a re-elected leader keeps what it knows of the LEOs"


def _isr_check_after_taking_over(
    preset: str | Mapping[str, Any], *, follower_3_fetches: bool
) -> list[int] | None:
    """Broker 1 follows broker 2 from T0, leads from T0 + 20 s (broker 2 died), and runs its
    ISR check before broker 3 has fetched from it (or, with
    ``follower_3_fetches``, right after broker 3's first fetch). The ISR it asks for, if any.
    ``preset``: a preset's name, or settings."""
    settings = {"preset": preset} if isinstance(preset, str) else preset
    b = Broker(1, make_config(settings), {TP: Disk()}, auto_fetch=False)
    deliver(b, m.UpdateMetadata(1, (1, 2, 3)))
    deliver(b, m.LeaderAndIsr(TP, 1, 2, 0, (1, 2, 3), 0, (1, 2, 3)))
    takeover = T0 + 20_000
    deliver(b, m.LeaderAndIsr(TP, 1, 1, 1, (1, 3), 1, (1, 2, 3)), now=takeover)
    if follower_3_fetches:
        fetch(b, 3, 0, now=takeover + 5)
    ctx = Context(takeover + 10, 1)
    b.on_timer(ctx, "isr_expiration", None)
    alters = sent(ctx, m.AlterIsr)
    return list(alters[0].isr) if alters else None


@pytest.mark.parametrize(("preset", "isr"), [("0.9", [1]), ("0.10", None)])
def test_before_0_10_2_a_new_leader_drops_a_follower_at_its_first_check(
    preset: str, isr: list[int] | None
) -> None:
    """Partition.makeLeader: 0.9.0 to 0.10.1 only forgot the followers' LEOs, so broker 3's
    last caught-up time was still when broker 1 first heard of the partition, 20 s before;
    0.10.2 (KAFKA-4485, Replica.resetLastCaughtUpTime) gives an ISR member a fresh window."""
    assert _isr_check_after_taking_over(preset, follower_3_fetches=False) == isr
    assert _isr_check_after_taking_over(preset, follower_3_fetches=True) is None, (
        "a fetch at the new leader's LEO catches it up in every release"
    )


@pytest.mark.parametrize(("preset", "hw"), [("0.8", 0), ("0.9", 1)])
def test_until_0_9_a_re_elected_leader_forgot_its_followers_leos(preset: str, hw: int) -> None:
    """Partition.makeLeader reset the remote LEOs on every new leader epoch in 0.8; since
    KAFKA-2721 (0.9.0.0) only when the broker newly leads. Broker 3, which held the HW back,
    leaves the ISR: a 0.9 leader advances the HW to broker 2's LEO at once, a 0.8 leader waits
    for broker 2's next fetch."""
    b = reelected_without_a_follower({"preset": preset})
    assert b.partitions[TP].log.hw == hw
    fetch(b, 2, 1, now=T0 + 600)
    assert b.partitions[TP].log.hw == 1


def reelected_without_a_follower(settings: Mapping[str, Any]) -> Broker:
    """Broker 2 has m1, broker 3 not; the leader is re-elected with the ISR 1, 2."""
    b = leader(make_config(settings), isr=(1, 2, 3))
    produce(b, "m1")
    fetch(b, 2, 0)
    fetch(b, 2, 1)
    assert b.partitions[TP].log.hw == 0, "broker 3 has not fetched m1"
    deliver(b, m.LeaderAndIsr(TP, 1, 1, 1, (1, 2), 1, (1, 2, 3)), now=T0 + 500)
    return b


def _kraft_isr_growth(preset: str | Mapping[str, Any]) -> list[int] | None:
    """A KRaft leader (epoch 0, ISR 1, 2) hears from broker 2 last at T0, before m1; broker 3
    joins the ISR at T0 + 20 s (same leader epoch, next partition epoch). The ISR its check at
    T0 + 35 s asks for, if any (replica.lag.time.max.ms 30 s). ``preset``: a preset's name, or
    settings."""
    settings = {"preset": preset} if isinstance(preset, str) else preset
    config = make_config({**settings, "controller_mode": "kraft"})
    b = Broker(1, config, {TP: Disk()}, auto_fetch=False, controller_nodes=("c1",))
    deliver(b, m.UpdateMetadata(1, (1, 2, 3)))
    deliver(b, m.LeaderAndIsr(TP, 1, 1, 0, (1, 2), 0, (1, 2, 3)))
    fetch(b, 2, 0)
    produce(b, "m1", now=T0 + 1)
    fetch(b, 3, 1, now=T0 + 20_000)  # broker 3 has caught up: AlterPartition adds it
    joined = m.AlterIsrResponse(TP, m.NONE, 0, 1, (1, 2, 3))
    deliver(b, joined, src="c1", now=T0 + 20_000)
    # then the committed record (its LeaderAndIsr stand-in), of the same partition epoch
    deliver(b, m.LeaderAndIsr(TP, 1, 1, 0, (1, 2, 3), 1, (1, 2, 3)), now=T0 + 20_000)
    ctx = Context(T0 + 35_000, 1)
    b.on_timer(ctx, "isr_expiration", None)
    alters = sent(ctx, m.AlterIsr)
    return list(alters[0].isr) if alters else None


def test_before_3_3_a_kraft_isr_expansion_gave_every_isr_member_a_fresh_lag_window() -> None:
    """ReplicaManager.applyLocalLeadersDelta ran Partition.makeLeader for every change of a
    partition this broker led; KAFKA-13790 (3.3.0) resets the followers only on a new leader
    epoch. Broker 2 stopped fetching at T0: 35 s later it is out, unless broker 3's join at
    T0 + 20 s restarted its window."""
    assert _kraft_isr_growth("3.3") == [1, 3]
    assert _kraft_isr_growth("3.0") is None


def _joins_after_a_same_epoch_change(preset: str) -> bool:
    """Broker 3 reaches the HW (1) but not the LEO (2) after a partition change of the leader's
    own epoch that kept the ISR."""
    config = make_config({"preset": preset, "controller_mode": "kraft"})
    b = Broker(1, config, {TP: Disk()}, auto_fetch=False, controller_nodes=("c1",))
    deliver(b, m.UpdateMetadata(1, (1, 2, 3)))
    deliver(b, m.LeaderAndIsr(TP, 1, 1, 0, (1, 2), 0, (1, 2, 3)))
    produce(b, "m1")
    fetch(b, 2, 0)
    fetch(b, 2, 1)
    produce(b, "m2")
    deliver(b, m.LeaderAndIsr(TP, 1, 1, 0, (1, 2), 1, (1, 2, 3)), now=T0 + 1000)
    ctx = fetch(b, 3, 1, now=T0 + 2000)
    return bool(sent(ctx, m.AlterIsr))


def test_before_3_3_a_kraft_partition_change_moved_the_epoch_start_a_joiner_must_reach() -> None:
    """Partition.makeLeader set leaderEpochStartOffsetOpt to the LEO on every change before
    3.3 (KAFKA-13790); Partition.isFollowerInSync requires it (KAFKA-7128)."""
    assert _joins_after_a_same_epoch_change("3.3")
    assert not _joins_after_a_same_epoch_change("3.0")


def test_a_zookeeper_era_broker_ignores_a_leader_and_isr_of_its_own_epoch() -> None:
    """ReplicaManager.becomeLeaderOrFollower: the same leader epoch is answered
    STALE_CONTROLLER_EPOCH, nothing reset, before 3.3 as after."""
    b = leader(make_config({"preset": "3.0"}), isr=(1, 2))
    fetch(b, 2, 0)
    deliver(b, m.LeaderAndIsr(TP, 1, 1, 0, (1, 2), 1, (1, 2, 3)), now=T0 + 20_000)
    assert b.partitions[TP].remotes[2].last_caught_up_ms == T0


# ---- the ISR rules by release -------------------------------------------------------------------


@pytest.mark.parametrize(("preset", "period"), [("0.8", 10000), ("0.9", 10000), ("0.10", 5000)])
def test_the_isr_check_runs_every_lag_time_before_0_10_2_and_every_half_since(
    preset: str, period: int
) -> None:
    """ReplicaManager.startup's "isr-expiration" task (KAFKA-4485)."""
    b = Broker(1, make_config({"preset": preset}), {TP: Disk()}, auto_fetch=False)
    ctx = Context(0, 1)
    b.start(ctx)
    assert (period, "isr_expiration", None) in ctx.timers


def _slow_follower(config: Config) -> list[int]:
    """Follower 2 fetches every second but makes no progress (a slow disk); 3 stops."""
    b = leader(config, isr=(1, 2, 3))
    for second in range(12):
        now = T0 + second * 1000
        produce(b, f"m{second}", now=now)
        fetch(b, 2, 0, now=now)
    ctx = Context(T0 + 11_500, 1)
    b.on_timer(ctx, "isr_expiration", None)
    (alter,) = sent(ctx, m.AlterIsr)
    return list(alter.isr)


def test_before_0_9_the_lag_time_counted_from_the_last_fetch() -> None:
    """Partition.getOutOfSyncReplicas (0.8: "stuck" = no fetch for the lag time) against
    Replica.isCaughtUp (0.9, KAFKA-1546: not caught up with the leader for the lag time)."""
    legacy = make_config({"replica.lag.time.max.ms": 10000, "lag_time_from_caught_up": False})
    assert _slow_follower(legacy) == [1, 2], "fetching keeps it in, however far behind"
    modern = make_config({"replica.lag.time.max.ms": 10000})
    assert _slow_follower(modern) == [1], "it never reaches the leader's LEO: out"


def test_the_message_count_rule_skips_a_follower_not_heard_from() -> None:
    config = make_config({"preset": "0.8", "replica.lag.max.messages": 1})
    b = leader(config, isr=(1, 2))
    produce(b, "m1")
    produce(b, "m2")
    remote = b.partitions[TP].remotes[2]
    assert remote.leo == -1
    assert b._caught_up(b.partitions[TP], remote, T0)


# ---- the controller -----------------------------------------------------------------------------


def test_controller_failover_bumps_the_epoch_twice_since_kafka_3143() -> None:
    """KafkaController.onControllerFailover: replicaStateMachine.startup, then
    partitionStateMachine.startup (2.3.0)."""

    def run(offline_first: bool) -> list[tuple[str, int]]:
        c = Cluster(
            brokers=3,
            config={
                "controller_mode": "zk",
                "controller_failover_offlines_replicas": offline_first,
            },
        )
        c.crash(1)
        c.advance(18000)
        states = c.trace.of_kind("partition_state")
        return [(e.data["reason"], e.data["leader_epoch"]) for e in states if e.time_ms > 0]

    assert run(True) == [("controller_failover_offline_replicas", 1), ("controller_failover", 2)]
    assert run(False) == [("controller_failover", 1)]


def _zombie_write(fenced: bool) -> bool:
    zk = ZooKeeper(make_config({"zk_writes_fenced_by_controller_epoch": fenced}), elected=True)
    zk.controller_epoch = 2  # another controller won after the zombie (epoch 1) read the state
    zk.controller = (2, 7)
    zk.partitions[TP] = PartitionState((1, 2, 3), 1, 0, (1, 2, 3), 4)
    state = PartitionState((1, 2, 3), 2, 1, (2, 3), 5)
    write = m.ZkWrite(1, 1, ((TP, state),), ((TP, 4),))
    ctx = deliver(zk, write, src=1)
    (result,) = sent(ctx, m.ZkWriteResult)
    return result.ok


def test_a_zombie_controllers_write_is_refused_by_controller_epoch_since_2_1() -> None:
    """KafkaZkClient's conditional multi-op on /controller_epoch (KAFKA-6082, 2.1)."""
    assert not _zombie_write(True)
    assert _zombie_write(False), "before 2.1 only the znode version was checked"


def test_a_stale_controlled_shutdown_gets_stale_broker_epoch() -> None:
    """KafkaController.doControlledShutdown checks the broker epoch (KIP-380, 2.2)."""
    c = Cluster(brokers=3, config={"controller_mode": "zk"})
    controller = c.sim.actors[c.controller].controller
    ctx = Context(0, c.controller)
    controller.handle(ctx, 2, m.ControlledShutdownRequest(2, 0))
    controller._flush(ctx)
    (resp,) = sent(ctx, m.ControlledShutdownResponse)
    assert resp.error == m.STALE_BROKER_EPOCH


def test_a_kraft_isr_shrink_bumps_the_leader_epoch_only_before_3_6() -> None:
    """PartitionChangeBuilder.triggerLeaderEpochBumpIfNeeded (KAFKA-15021 removed the bump)."""
    part = PartitionRegistration((1, 2, 3), 1, 4, (1, 2, 3))

    def shrink(bump: bool) -> int:
        rules = ElectionRules(bump_epoch_on_isr_shrink=bump)
        return partition_change(part, target_isr=(1, 2), acceptable=bool, rules=rules).leader_epoch

    assert (shrink(False), shrink(True)) == (4, 5)


# ---- leader epochs ------------------------------------------------------------------------------


def test_before_2_0_1_a_new_leader_records_its_epoch_with_its_first_append() -> None:
    """Partition.makeLeader's epoch cache entry (KAFKA-7415)."""
    old = elected_in_epoch_3({"leader_epoch_on_election": False})
    assert old.partitions[TP].log.epochs == [(0, 0)]
    produce(old, "m1")
    assert old.partitions[TP].log.epochs == [(0, 0), (3, 1)]
    new = elected_in_epoch_3({})
    assert new.partitions[TP].log.epochs == [(0, 0), (3, 1)]


def elected_in_epoch_3(settings: Mapping[str, Any]) -> Broker:
    """A leader of epoch 0 holding m0, elected again in epoch 3."""
    disk = Disk((Record(0, "m0", 0),), 0, ((0, 0),))
    b = leader(make_config(settings), disk=disk)
    assert b.partitions[TP].log.epochs == [(0, 0)]
    deliver(b, m.LeaderAndIsr(TP, 1, 1, 3, (1, 2), 1, (1, 2, 3)))
    return b


def test_before_2_0_1_an_epoch_older_than_the_cache_is_undefined() -> None:
    disk = Disk((Record(0, "m0", 2),), 0, ((2, 0),))
    for on_election, answer in ((False, UNDEFINED_OFFSET), (True, 0)):
        b = leader(make_config({"leader_epoch_on_election": on_election}), disk=disk)
        req = m.OffsetsForLeaderEpochRequest(TP, 2, 1, None, 9)
        (resp,) = sent(deliver(b, req, src=2), m.OffsetsForLeaderEpochResponse)
        assert resp.end_offset == answer


@pytest.mark.parametrize(("halts", "running"), [(True, [1]), (False, [1, 2])])
def test_a_follower_ahead_of_the_leader_halted_from_0_8_2_to_2_0_0(
    halts: bool, running: list[int]
) -> None:
    """ReplicaFetcherThread.handleOffsetOutOfRange (KAFKA-1028; KAFKA-7414 removed the halt in
    2.0.1): KIP-101's first scenario, where B comes back ahead of the new leader A."""
    settings = {"unclean.leader.election.enable": False, "out_of_range_halts": halts}
    result = scenarios.run(scenarios.get("kip101-loss"), settings)
    assert result.cluster.running() == running


# ---- idempotent and transactional producers ------------------------------------------------------


@pytest.mark.parametrize(("kip360", "error"), [(True, None), (False, m.UNKNOWN_PRODUCER_ID)])
def test_an_unknown_producer_may_start_at_any_sequence_since_2_5(
    kip360: bool, error: str | None
) -> None:
    """ProducerAppendInfo.checkSequence (KIP-360)."""
    b = leader(make_config({"kip360": kip360}))
    req = m.ProduceRequest(TP, 1, ("x",), 1, 30000, 9, 0, 4)
    ctx = deliver(b, req, src="p")
    rejected = [e["error"] for e in events(ctx, "produce_rejected")]
    assert rejected == ([] if error is None else [error])


def test_sequence_numbers_wrap_around() -> None:
    top = 2**31 - 1
    assert sequence_verdict(0, [(top - 1, top)], 0, 0, 0) == "APPEND"
    assert sequence_verdict(0, [(top - 1, top)], 0, 1, 1) == "OUT_OF_ORDER_SEQUENCE_NUMBER"


def _gap_once() -> Any:
    """A sequence rule that reports a gap for the first batch it sees."""
    calls = []

    def verdict(*args: Any) -> str:
        calls.append(args)
        return "OUT_OF_ORDER_SEQUENCE_NUMBER" if len(calls) == 1 else sequence_verdict(*args)

    return verdict


def test_a_real_gap_bumps_an_idempotent_producers_epoch() -> None:
    """TransactionManager.canRetry: the next expected batch refused as out of order."""
    c = Cluster(brokers=1, rules=Rules(sequence_verdict=_gap_once()))
    c.producer("p")
    c.produce("A", producer="p")
    c.advance(1000)  # the retry waits retry.backoff.ms
    bumps = c.trace.of_kind("producer_epoch_bump")
    assert [b.data["producer_epoch"] for b in bumps] == [1]
    assert c.report().acked == ["A"]


@pytest.mark.parametrize("kip360", [True, False])
def test_before_2_5_a_real_gap_fails_the_batch_and_resets_the_producer_id(kip360: bool) -> None:
    """KIP-360's client side (KAFKA-8805, 2.5.0) bumps the epoch and retries; from 1.0.0 to
    2.4 canRetry refused the batch and Sender.failBatch / handleFailedBatch called
    resetProducerId: a new producer id, every sequence from 0 again."""
    c = Cluster(brokers=1, rules=Rules(sequence_verdict=_gap_once()), config={"kip360": kip360})
    c.producer("p")
    c.produce("A", producer="p")
    c.advance(1000)
    c.produce("B", producer="p")
    c.advance(1000)
    ids = [
        (e.data["producer_id"], e.data["producer_epoch"]) for e in c.trace.of_kind("producer_id")
    ]
    sends = [(e.data["values"], e.data["sequence"]) for e in c.trace.of_kind("produce")]
    if kip360:
        assert c.report().acked == ["A", "B"] and len(ids) == 1
        assert sends == [(["A"], 0), (["A"], 0), (["B"], 1)]
        assert len(c.trace.of_kind("producer_epoch_bump")) == 1
    else:
        assert c.report().errors == {"A": m.OUT_OF_ORDER_SEQUENCE_NUMBER}
        assert c.report().acked == ["B"]
        assert len(ids) == 2 and ids[0][0] != ids[1][0]  # a new producer id, epoch 0
        assert sends == [(["A"], 0), (["B"], 0)]
        assert c.trace.of_kind("producer_epoch_bump") == []


def test_the_2_4_preset_resets_and_the_2_5_preset_bumps() -> None:
    """The presets carry the client side of KIP-360 with its broker side (``kip360``)."""
    for preset, bumps in (("2.4", 0), ("2.5", 1)):
        c = Cluster(brokers=1, rules=Rules(sequence_verdict=_gap_once()), config={"preset": preset})
        c.producer("p", acks="all", enable_idempotence=True)
        c.produce("A", producer="p")
        c.advance(1000)
        assert len(c.trace.of_kind("producer_epoch_bump")) == bumps
        assert len(c.trace.of_kind("producer_id")) == 2 - bumps


def test_a_real_gap_fails_a_transactional_send() -> None:
    c = Cluster(
        brokers=3,
        transactional_ids=["tx"],
        replication="auto",
        rules=Rules(sequence_verdict=_gap_once()),
        config={"transaction.partition.verification.enable": False},
    )
    c.producer("p", transactional_id="tx")
    c.begin("p")
    c.produce("A", producer="p")
    c.advance(1000)
    c.commit("p")
    assert c.report().errors == {"A": m.OUT_OF_ORDER_SEQUENCE_NUMBER}
    assert c.trace.of_kind("producer_epoch_bump") == []


def test_verification_asks_only_the_coordinator() -> None:
    """AddPartitionsToTxnManager sends to the leader of the id's __transaction_state
    partition (KIP-890 part 1)."""
    c = Cluster(brokers=3, transactional_ids=["tx"], replication="auto")
    c.producer("p", transactional_id="tx")
    c.begin("p")
    c.produce("a", producer="p")
    checks = [
        e
        for e in c.trace.of_kind("send")
        if type(e.data["msg"]).__name__ == "AddPartitionsToTxnRequest" and e.node != "p"
    ]
    assert len(checks) == 1


def test_a_marker_from_an_older_coordinator_epoch_is_refused() -> None:
    """ProducerAppendInfo.appendEndTxnMarker -> checkCoordinatorEpoch (KIP-98)."""
    state = ProducerStateManager()
    state.observe([Record(0, "COMMIT", 0, 9, 0, control="COMMIT", coordinator_epoch=3)])
    assert state.check_marker(9, 0, 2) == m.TRANSACTION_COORDINATOR_FENCED
    assert state.check_marker(9, 0, 3) is None
    assert state.check_marker(9, -1, 3) == m.INVALID_PRODUCER_EPOCH


def test_the_offsets_topic_uses_the_brokers_min_isr() -> None:
    """GroupMetadataManager.offsetsTopicConfigs has no min ISR override; only
    __transaction_state has transaction.state.log.min.isr = 2."""
    c = Cluster(brokers=3, groups=["g"], transactional_ids=["tx"])
    b = c.sim.actors[1]
    by_topic = {tp.split("-")[0]: b._min_isr(r) for tp, r in b.partitions.items()}
    assert by_topic == {"demo": 1, "__consumer_offsets": 1, "__transaction_state": 2}


@pytest.mark.parametrize(("explicit", "ok"), [(False, True), (True, False)])
def test_idempotence_defaults_off_where_the_settings_forbid_it(explicit: bool, ok: bool) -> None:
    """ProducerConfig.postProcessAndValidateIdempotenceConfigs (KAFKA-13598)."""
    c = Cluster(brokers=1)
    settings: dict[str, Any] = {"acks": 1}
    if explicit:
        settings["enable.idempotence"] = True
    if ok:
        c.producer("p", **settings)
        c.produce("a", producer="p")
        assert c.report().acked == ["a"]
    else:
        with pytest.raises(Exception, match="enable.idempotence=true needs acks=all"):
            c.producer("p", **settings)


@pytest.mark.parametrize(("on", "answered"), [(True, True), (False, False)])
def test_from_2_4_to_2_5_a_waiting_follower_fetch_completes_when_the_hw_moves(
    on: bool, answered: bool
) -> None:
    """ReplicaManager followerNeedsHwUpdate and DelayedFetch case H (KAFKA-8443, 2.4; removed
    by KAFKA-9731 in 2.6)."""
    config = make_config({"follower_fetch_completes_on_hw_change": on})
    b = Broker(1, config, {TP: Disk()}, auto_fetch=True)
    deliver(b, m.UpdateMetadata(1, (1, 2, 3)))
    deliver(b, m.LeaderAndIsr(TP, 1, 1, 0, (1, 2, 3), 0, (1, 2, 3)))
    produce(b, "m1")
    wait = m.FetchRequest(TP, 2, 0, None, 500, 1, 1048576)
    deliver(b, wait, src=2)  # copies m1 at once
    deliver(b, m.FetchRequest(TP, 3, 0, None, 500, 1, 1048576), src=3)
    deliver(b, m.FetchRequest(TP, 2, 1, None, 500, 2, 1048576), src=2, now=T0 + 1)  # waits
    assert len(b.partitions[TP].delayed_fetches) == 1
    ctx = deliver(b, m.FetchRequest(TP, 3, 1, None, 500, 2, 1048576), src=3, now=T0 + 2)
    to_2 = [msg for dst, msg, *_ in ctx.sends if dst == 2 and isinstance(msg, m.FetchResponse)]
    assert bool(to_2) == answered
    if answered:
        assert to_2[0].hw == 1


@pytest.mark.parametrize(("alter_isr", "isr"), [(True, [2, 3, 4]), (False, [2, 4])])
def test_before_2_7_a_leader_wrote_the_isr_through_zookeeper(
    alter_isr: bool, isr: list[int]
) -> None:
    """Partition.updateIsr -> ReplicationUtils.updateLeaderAndIsr before KIP-497 (2.7): a
    leader cut from the controller could still shrink the ISR; with AlterIsr it cannot."""
    c = Cluster(
        brokers=4,
        replicas=[2, 3, 4],
        leader=2,
        config={"controller_mode": "zk", "alter_isr": alter_isr, "acks": 1},
    )
    assert c.controller == 1
    c.produce("m1")
    c.fetch(4)
    c.disconnect(1, 2)
    c.advance(46000)  # broker 3 never fetches: out after the lag time, if the write can happen
    c.fetch(4)
    leader = c.sim.actors[2].partitions[c.partitions()[0]]
    assert list(leader.isr) == isr
    if not alter_isr:
        assert c.sim.actors[1].controller.partitions[c.partitions()[0]].isr == (2, 4)


def test_a_timer_that_fires_late_after_a_pause_can_be_armed_again() -> None:
    """A leader paused past a fetch's max wait answers it late; the next waiting fetch must
    still get its own timer (DelayedFetch expiry), or followers wait for request.timeout.ms."""
    b = Broker(1, make_config(), {TP: Disk()}, auto_fetch=True)
    deliver(b, m.UpdateMetadata(1, (1, 2)))
    deliver(b, m.LeaderAndIsr(TP, 1, 1, 0, (1, 2), 0, (1, 2)))
    deliver(b, m.FetchRequest(TP, 2, 0, None, 500, 1, 1048576), src=2)
    late = Context(T0 + 3000, 1)
    b.on_timer(late, "fetch_wait", TP)  # due at T0 + 500, run at T0 + 3000
    assert sent(late, m.FetchResponse)
    ctx = deliver(b, m.FetchRequest(TP, 2, 0, None, 500, 2, 1048576), src=2, now=T0 + 3100)
    assert (500, "fetch_wait", TP) in ctx.timers


# ---- size retention -----------------------------------------------------------------------------


def _retained(**settings: Any) -> Cluster:
    config = {"retention.bytes": 1000, "segment.bytes": 500, **settings}
    c = Cluster(brokers=3, config={**config, "log.retention.check.interval.ms": 1000})
    c.produce(values=[f"v{i}" for i in range(23)], acks=1)
    for follower in (2, 3, 2, 3):
        c.fetch(follower)
    return c


def test_size_retention_deletes_whole_segments_down_to_the_limit() -> None:
    """LogManager.cleanupLogs -> UnifiedLog.deleteRetentionSizeBreachedSegments: 23 records of
    100 bytes in segments of 5; deleting [0, 5) and [5, 10) leaves 1300 bytes >= 1000, and one
    more segment would leave 800."""
    c = _retained()
    c.advance(999)
    assert c.state()["log_start_offset"][1] == 0, "not before the retention check"
    c.advance(1)
    starts = c.state()["log_start_offset"]
    assert starts[1] == 10 and starts[3] == 10
    assert starts[2] == 0, "a replica never deletes past its own HW (KAFKA-5634): broker 2's is 0"


def test_without_a_size_limit_nothing_is_deleted_and_no_task_runs() -> None:
    c = _retained(**{"retention.bytes": -1})
    c.advance(5000)
    assert set(c.state()["log_start_offset"].values()) == {0}
    for limit, scheduled in ((-1, False), (0, True)):
        ctx = Context(0, 1)
        Broker(1, make_config({"retention.bytes": limit}), {TP: Disk()}, auto_fetch=True).start(ctx)
        assert any(name == "log_retention" for _, name, _ in ctx.timers) == scheduled


def test_retention_keeps_the_active_segment_until_the_hw_reaches_the_leo() -> None:
    from kafkalab.protocol.log import Disk, Log

    log = Log(Disk(tuple(Record(o, f"v{o}", 0) for o in range(10)), 0, ((0, 0),)))
    log.hw = 9
    assert log.retention_start(0, 500) == 5, "[5, 10) reaches past the HW: it stays"
    log.hw = 10
    assert log.retention_start(0, 500) == 10, "Log.deletableSegments: the LEO bounds the last"


def test_retention_settings_are_validated() -> None:
    with pytest.raises(Exception, match=r"retention.bytes=-5 is not allowed: use -1"):
        make_config({"retention.bytes": -5})
    with pytest.raises(Exception, match=r"segment.bytes=10 is not allowed: use at least 100"):
        make_config({"segment.bytes": 10})


# ---- the replica fetcher and a leader that dies ---------------------------------------------


def _fetch_errors_while_the_leader_is_down(lose_unflushed: bool) -> list[tuple[int, str]]:
    """Leader 1 (ZooKeeper mode, 3.7) crashes at 5 s and stays down for 10 s, well inside its
    18 s session, so nobody replaces it meanwhile: when broker 2's fetcher saw which errors."""
    c = Cluster(brokers=3, mode="timed", config={"controller_mode": "zk"}, leader=1)
    c.advance(5000)
    c.crash(1, lose_unflushed=lose_unflushed)
    c.advance(10000)
    assert c.leader == 1
    return [(e.time_ms, e.data["error"]) for e in c.trace.of_kind("fetch_error") if e.node == "2"]


def test_a_follower_learns_at_once_that_its_leaders_process_died() -> None:
    """NetworkClient fails a request whose connection broke, and a new connection to a dead
    process is refused; the fetcher backs off replica.fetch.backoff.ms and tries again
    (AbstractFetcherThread.processFetchRequest). Only a power loss, whose host sends nothing,
    leaves the follower waiting for its request timeout (30 s)."""
    errors = _fetch_errors_while_the_leader_is_down(False)
    assert [e for _, e in errors[:3]] == [m.NETWORK_EXCEPTION] * 3, "at the crash, then 1/s"
    assert errors[2][0] - errors[0][0] < 3000
    assert _fetch_errors_while_the_leader_is_down(True) == []


# ---- the producer's errors by release --------------------------------------------------------


def _fenced_while_paused(preset: str) -> Cluster:
    """p1 writes in a transaction and pauses; p2 starts with the same transactional.id."""
    c = Cluster(
        brokers=3,
        transactional_ids=["tx"],
        replication="auto",
        config={"preset": preset, "min.insync.replicas": 2},
    )
    settings = {"transactional_id": "tx", "acks": "all", "enable_idempotence": True}
    c.producer("p1", **settings)
    c.begin("p1")
    c.produce("a", producer="p1")
    c.pause("p1")
    c.producer("p2", **settings)
    c.advance(500)
    return c


def _zombie(preset: str) -> Cluster:
    """p1 is fenced by p2 (same transactional.id) while paused; then it writes and aborts."""
    c = _fenced_while_paused(preset)
    c.begin("p2")
    c.produce("b", producer="p2")
    c.commit("p2")
    c.resume("p1")
    c.produce("a2", producer="p1")
    c.abort("p1")
    return c


@pytest.mark.parametrize(
    ("preset", "calls"),
    [
        ("2.6", [("fenced", "INVALID_PRODUCER_EPOCH"), ("abort", "INVALID_PRODUCER_EPOCH")]),
        ("2.7", [("fenced", "PRODUCER_FENCED")]),
    ],
)
def test_before_2_7_a_produces_invalid_producer_epoch_was_fatal(
    preset: str, calls: list[tuple[str, str]]
) -> None:
    """Errors.INVALID_PRODUCER_EPOCH raised ProducerFencedException until KIP-588 (KAFKA-9911,
    2.7.0): Sender.failBatch made it fatal at once, so the zombie's abort fails without a
    request. Since 2.7 it only makes the transaction abortable, and the abort's EndTxn learns
    from the coordinator, which now answers PRODUCER_FENCED, that p1 was fenced."""
    c = _zombie(preset)
    assert c.report().errors == {"a2": m.INVALID_PRODUCER_EPOCH}
    got = [(e.data["op"], e.data["error"]) for e in c.trace.of_kind("txn_client")]
    assert [g for g in got if g[1] != "NONE"][: len(calls)] == calls
    end_requests = [
        e
        for e in c.trace.of_kind("send")
        if type(e.data["msg"]).__name__ == "EndTxnRequest" and e.node == "p1"
    ]
    assert len(end_requests) == (0 if preset == "2.6" else 1)


def _epoch_refused_once() -> Any:
    """A sequence rule that refuses the first batch it sees as from an old epoch."""
    calls = []

    def verdict(*args: Any) -> str:
        calls.append(args)
        return m.INVALID_PRODUCER_EPOCH if len(calls) == 1 else sequence_verdict(*args)

    return verdict


@pytest.mark.parametrize(("abortable", "acked"), [(True, ["B"]), (False, [])])
def test_before_2_7_an_idempotent_producer_could_not_recover_from_invalid_producer_epoch(
    abortable: bool, acked: list[str]
) -> None:
    """Before 2.7 any producer with a TransactionManager, idempotent ones too, went to the fatal
    state on INVALID_PRODUCER_EPOCH (ProducerFencedException), and the Sender failed every
    later batch with it (Sender.runOnce, maybeAbortBatches)."""
    c = Cluster(
        brokers=1,
        rules=Rules(sequence_verdict=_epoch_refused_once()),
        config={"invalid_producer_epoch_abortable": abortable},
    )
    c.producer("p")
    c.produce("A", producer="p")
    c.produce("B", producer="p")
    c.advance(1000)
    report = c.report()
    assert report.acked == acked
    assert report.errors["A"] == m.INVALID_PRODUCER_EPOCH
    assert ("B" in report.errors) is not abortable


@pytest.mark.parametrize(
    ("preset", "error"), [("2.6", m.INVALID_PRODUCER_EPOCH), ("2.7", m.PRODUCER_FENCED)]
)
def test_the_coordinator_answers_a_fenced_epoch_by_release(preset: str, error: str) -> None:
    """TransactionCoordinator.endTransaction: INVALID_PRODUCER_EPOCH until 2.6, PRODUCER_FENCED
    since 2.7 (KAFKA-9911, b937ec75677); the client is fenced either way."""
    c = _fenced_while_paused(preset)
    c.resume("p1")
    c.commit("p1")
    got = [(e.data["op"], e.data["error"]) for e in c.trace.of_kind("txn_client")]
    assert ("fenced", error) in got


def _idempotent_send(b: Broker, cid: int, value: str, seq: int, now: int = T0) -> Context:
    req = m.ProduceRequest(TP, cid, (value,), 1, 30000, 9, 0, seq)
    return deliver(b, req, src="p", now=now)


@pytest.mark.parametrize(("five", "answer"), [(True, "duplicate"), (False, "refused")])
def test_in_0_11_a_replica_remembered_only_a_producers_last_batch(five: bool, answer: str) -> None:
    """ProducerIdEntry (0.11.0.2) held one batch: a retry of an older batch was out of order.
    KAFKA-5494 (5d2422258cb, 1.0.0) keeps five and recognises it as a duplicate."""
    b = leader(make_config({"idempotence_five_in_flight": five}))
    _idempotent_send(b, 1, "A", 0)
    _idempotent_send(b, 2, "B", 1)
    ctx = _idempotent_send(b, 3, "A", 0)  # A again: its response was lost
    rejected = [e["error"] for e in events(ctx, "produce_rejected")]
    duplicates = events(ctx, "duplicate")
    if answer == "duplicate":
        assert rejected == [] and [d["first"] for d in duplicates] == [0]
    else:
        assert rejected == [m.OUT_OF_ORDER_SEQUENCE_NUMBER] and duplicates == []
    ctx = _idempotent_send(b, 4, "B", 1)  # the last batch is recognised in every release
    assert [d["first"] for d in events(ctx, "duplicate")] == [1]


@pytest.mark.parametrize(
    ("preset", "error"),
    [("0.11", m.OUT_OF_ORDER_SEQUENCE_NUMBER), ("1.0", m.UNKNOWN_PRODUCER_ID), ("2.5", None)],
)
def test_an_unknown_producer_not_starting_at_0_by_release(preset: str, error: str | None) -> None:
    """0.11's validateAppend treated a producer it had no entry for as one with a new epoch
    (OutOfOrderSequenceException); KAFKA-5793 (94692288bed, 1.0.0) answers UNKNOWN_PRODUCER_ID;
    KIP-360 (2.5.0) accepts it."""
    assert unknown_producer_at_sequence_4({"preset": preset}) == ([] if error is None else [error])


def unknown_producer_at_sequence_4(settings: Mapping[str, Any]) -> list[str]:
    """The errors a leader with no state for producer 1 answers its batch at sequence 4 with."""
    ctx = _idempotent_send(leader(make_config(settings)), 1, "x", 4)
    return [e["error"] for e in events(ctx, "produce_rejected")]


def test_the_0_11_producer_needs_one_request_in_flight_with_idempotence() -> None:
    """KafkaProducer.configureInflightRequests, 0.11.0.2: unset, it is 1 with idempotence;
    any other value is a ConfigException. 1.0.0 (KAFKA-5494) allows up to 5."""
    c = Cluster(brokers=1, transactional_ids=["tx"], config={"preset": "0.11"})
    message = r"max\.in\.flight\.requests\.per\.connection=5 is not allowed with.*use 1"
    with pytest.raises(ActionError, match=message):
        c.producer("p", enable_idempotence=True, max_in_flight_requests_per_connection=5)
    with pytest.raises(ActionError, match=message):
        c.producer("t", transactional_id="tx", max_in_flight_requests_per_connection=5)
    c.producer("q", enable_idempotence=True)
    settings = c.sim.actors["q"].settings
    assert (settings.max_in_flight_requests_per_connection, settings.acks) == (1, -1)
    c.producer("r", enable_idempotence=False, max_in_flight_requests_per_connection=5)
    newer = Cluster(brokers=1, config={"preset": "1.0"})
    newer.producer("p", enable_idempotence=True, max_in_flight_requests_per_connection=5)
    assert newer.sim.actors["p"].settings.max_in_flight_requests_per_connection == 5


@pytest.mark.parametrize("preset", ["0.11", "2.6"])
def test_a_transactional_id_turns_idempotence_on_with_acks_all(preset: str) -> None:
    """KafkaProducer.configureTransactionState and configureAcks (0.11.0.0 to 2.8): a producer
    with a transactional.id is idempotent, and acks left unset becomes all."""
    c = Cluster(brokers=1, transactional_ids=["tx"], config={"preset": preset})
    c.producer("p", transactional_id="tx")
    settings = c.sim.actors["p"].settings
    assert settings.enable_idempotence and settings.acks == -1


@pytest.mark.parametrize(("five", "retried"), [(True, True), (False, False)])
def test_0_11_never_retried_out_of_order_sequence_number(five: bool, retried: bool) -> None:
    """Sender.canRetry (0.11.0.2) retried RetriableExceptions only; TransactionManager.canRetry
    (KAFKA-5494, 1.0.0) retries OUT_OF_ORDER_SEQUENCE_NUMBER for a batch that is not the next
    one. A's request is lost and A expires, so B (sequence 1) reaches a partition that never
    saw the producer: 0.11 answers OUT_OF_ORDER_SEQUENCE_NUMBER."""
    config = {
        "preset": "0.11",
        "idempotence_five_in_flight": five,
        "request.timeout.ms": 30000,
    }
    c = Cluster(brokers=1, config=config)
    c.producer("p", enable_idempotence=True, delivery_timeout_ms=30000, retry_backoff_ms=100)
    c.produce("A", producer="p", request="lost")
    c.advance(10000)
    c.produce("B", producer="p")  # waits behind A: one request in flight
    c.advance(20000)  # A expires unanswered; B is sent
    c.advance(500)
    sends_of_b = [e for e in c.trace.of_kind("produce") if e.data["values"] == ["B"]]
    assert c.report().errors.get("A") == "DELIVERY_TIMEOUT"
    assert (len(sends_of_b) > 1) is retried
    if not retried:
        assert c.report().errors["B"] == m.OUT_OF_ORDER_SEQUENCE_NUMBER


def _a_lost_retried_batch(preset: str, **producer: Any) -> Cluster:
    """Z is acknowledged; every request of A is lost, so A is retried and expires after its
    delivery.timeout.ms (2.5 s) without an answer; B, sent after A, is refused as out of order
    until then; C comes once A has expired."""
    c = Cluster(brokers=1, transactional_ids=["tx"], config={"preset": preset})
    timeouts = {"request_timeout_ms": 1000, "delivery_timeout_ms": 2500, "retry_backoff_ms": 100}
    c.producer("p", acks="all", enable_idempotence=True, **timeouts, **producer)
    if "transactional_id" in producer:
        c.begin("p")
    c.produce("Z", producer="p")
    for _ in range(5):
        c.sim.add_rule("p", 1, (m.ProduceRequest,), None, match=lambda msg: msg.values == ("A",))
    c.produce("A", producer="p")
    c.advance(1500)
    c.produce("B", producer="p")
    c.advance(1100)
    if "transactional_id" not in producer:
        c.produce("C", producer="p")
        c.advance(3000)
    return c


@pytest.mark.parametrize(
    ("preset", "acked", "errors", "ids", "bumps"),
    [
        ("2.4", ["Z", "C"], {"B": m.OUT_OF_ORDER_SEQUENCE_NUMBER}, 2, 0),
        ("2.5", ["Z", "B", "C"], {}, 1, 1),
    ],
)
def test_an_expired_retried_batch_leaves_its_partition_unresolved(
    preset: str, acked: list[str], errors: dict[str, str], ids: int, bumps: int
) -> None:
    """Sender.sendProducerData marks the partition of an expired batch in retry unresolved
    (TransactionManager.markSequenceUnresolved, since 1.0.0): no new batch goes there, and
    OUT_OF_ORDER_SEQUENCE_NUMBER is no longer retried as "an earlier batch is unanswered".
    2.4 fails B and drops the producer id (Sender.failBatch, resetProducerId); 2.5 retries B
    and bumps the epoch, since B follows the expired batch (canRetry, KAFKA-8805). Before,
    B was retried until it expired too."""
    c = _a_lost_retried_batch(preset)
    report = c.report()
    assert report.acked == acked
    assert report.errors == {"A": "DELIVERY_TIMEOUT", **errors}
    assert len(c.trace.of_kind("producer_id")) == ids
    assert len(c.trace.of_kind("producer_epoch_bump")) == bumps


@pytest.mark.parametrize(
    ("preset", "calls"),
    [
        ("2.4", [("fatal", "UNRESOLVED_SEQUENCE"), ("abort", "UNRESOLVED_SEQUENCE")]),
        ("2.5", [("abort", m.NONE), ("begin", m.NONE), ("commit", m.NONE)]),
    ],
)
def test_a_transactional_producer_with_an_unresolved_partition(
    preset: str, calls: list[tuple[str, str]]
) -> None:
    """Until 2.4 an unresolved sequence made a transactional producer fatal at once
    (Sender.runOnce). Since 2.5 the transaction is abortable, and its abort bumps the epoch
    (EndTxn, then InitProducerId: epochBumpRequired, KAFKA-8805), so the next transaction's
    sequences start from 0 and it commits."""
    c = _a_lost_retried_batch(preset, transactional_id="tx")
    c.abort("p")
    # B, sent on the connection A's loss broke, is resent after its request timeout closes it
    c.advance(1500)
    c.begin("p")
    c.produce("C", producer="p")
    c.commit("p")
    c.advance(500)
    got = [(e.data["op"], e.data["error"]) for e in c.trace.of_kind("txn_client")]
    assert got[1 : 1 + len(calls)] == calls
    assert ("C" in c.report().acked) is (preset == "2.5")
    init_requests = [
        e
        for e in c.trace.of_kind("send")
        if type(e.data["msg"]).__name__ == "InitProducerIdRequest" and e.node == "p"
    ]
    assert (len(init_requests) > 1) is (preset == "2.5")  # the abort's epoch bump


def test_a_batch_that_expires_unsent_leaves_no_gap() -> None:
    """RecordAccumulator.drain numbers a batch when it is first sent: a batch that expires in
    the queue never had a sequence, and the next one takes it."""
    c = Cluster(brokers=2, replicas=[1], leader=1)
    c.crash(1)
    # Until its session expires, broker 2's metadata cache still names broker 1 as leader.
    c.advance(c.config.zookeeper_session_timeout_ms)
    c.producer("p", delivery_timeout_ms=2000, retry_backoff_ms=100)
    c.produce("A", producer="p")
    c.advance(2500)  # no leader: A waits in the queue and expires unsent
    c.restart(1)
    c.advance(1000)
    c.produce("B", producer="p")
    c.advance(1000)
    sends = [(e.data["values"], e.data["sequence"]) for e in c.trace.of_kind("produce")]
    assert sends == [(["B"], 0)]
    assert c.report().acked == ["B"] and c.report().errors == {"A": "DELIVERY_TIMEOUT"}
