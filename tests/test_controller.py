"""The controller: election, epochs, fencing of zombies, controlled shutdown, preferred leaders,
pauses and several partitions, with properties over random schedules in ZooKeeper mode."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalab import Cluster, make_config, scenarios
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.broker import Broker
from kafkalab.protocol.controller import AUTO_REBALANCE_TIMER, Controller, PartitionState
from kafkalab.protocol.log import Disk
from kafkalab.sim.timed import Fault, RunResult, random_faults, simulate
from tests.schedules import checked_run, fault_schedules

ZK_SAFE = make_config({"min.insync.replicas": 2, "controller_mode": "zk"})
DURATION_MS = 30000


def _run(seed: int, faults: list[Fault]) -> tuple[RunResult, Cluster]:
    return checked_run(ZK_SAFE, seed, faults, duration_ms=DURATION_MS, settle_ms=DURATION_MS)


def test_zk_mode_survives_crashes_cuts_and_pauses() -> None:
    """Every invariant holds after every state change (including: controller epochs strictly
    increase, no broker acts on an older controller epoch, one leader per partition epoch)."""
    elections = fenced = 0
    for seed in range(12):
        kinds = ("crash", "disconnect", "pause")
        faults = random_faults(seed, 3, DURATION_MS, mean_interval_ms=3000, kinds=kinds)
        result, cluster = _run(seed, faults)
        assert result.safe, f"seed {seed}: {result}\n{result.replay_hint()}"
        epochs = cluster.monitor.controller_epochs
        assert epochs == sorted(set(epochs)), f"seed {seed}: controller epochs {epochs}"
        elections += len(epochs)
        fenced += len(cluster.trace.of_kind("zk_write_rejected", "controller_resigned"))
    assert elections > 12, "the sweep must include controller failovers"
    assert fenced > 0, "the sweep must include a fenced zombie controller"


@settings(
    max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    faults=fault_schedules(duration_ms=DURATION_MS, kinds=("crash", "pause", "disconnect")),
    seed=st.integers(0, 2**16),
)
def test_zk_mode_survives_any_schedule(faults: list[Fault], seed: int) -> None:
    result, _ = _run(seed, faults)
    assert result.safe, f"{result}\nfaults={faults!r}\n{result.replay_hint()}"


def test_a_zombie_controllers_decisions_change_nothing() -> None:
    """KafkaController.processBrokerChange (3.7) first reads /brokers/ids
    (getAllBrokerAndEpochsInCluster); through an expired session that read fails
    (ZooKeeperClient.waitUntilConnected), the controller learns of the expiry and resigns, so
    the queued news of broker 4's death leads to no write and no request at all."""
    s = scenarios.get("controller-zombie")
    cluster = s.cluster()
    resume = next(step for step in s.steps if step.kind == "resume")
    for step in s.steps[: resume.index - 1]:
        scenarios.apply_step(cluster, step)
    before = cluster.partition_states()
    mark = len(cluster.trace)
    scenarios.apply_step(cluster, resume)
    after = cluster.partition_states()
    assert after == before
    since = cluster.trace.events[mark:]
    kinds = [e.kind for e in since]
    assert "controller_resigned" in kinds
    assert "zk_write_rejected" not in kinds, "the read failed first: no write was attempted"
    assert "stale_controller_request" not in kinds, "the zombie sent nothing"
    assert not [e for e in since if e.kind == "partition_state"], "nothing was committed"
    assert all(
        e.data["controller_epoch"] == 2
        for e in since
        if e.kind in ("became_leader", "became_follower")
    )


def test_brokers_ignore_requests_from_an_older_controller_epoch() -> None:
    b = Broker(1, make_config({"controller_mode": "zk"}), {"t-0": Disk()}, auto_fetch=False)
    newer = m.LeaderAndIsr("t-0", 2, 1, 3, (1,), 3, (1, 2))
    older = m.LeaderAndIsr("t-0", 1, 2, 4, (2,), 4, (1, 2))
    ctx = Context(0, 1)
    b.handle(ctx, 2, newer)
    assert b.partitions["t-0"].role == "leader"
    ctx = Context(1, 1)
    b.handle(ctx, 3, older)
    assert b.partitions["t-0"].role == "leader" and b.partitions["t-0"].leader_epoch == 3
    assert [k for k, _ in ctx.events] == ["stale_controller_request"]
    ctx = Context(2, 1)
    b.handle(ctx, 3, m.UpdateMetadata(1, (1,), 3))
    assert b.live_brokers == frozenset() and b.controller_address is None


def test_controller_epochs_strictly_increase_over_many_failovers() -> None:
    c = Cluster(brokers=3, config={"controller_mode": "zk"})
    for _ in range(4):
        controller = c.controller
        c.crash(controller)
        c.advance(18000)
        c.restart(controller)
    epochs = [e.data["controller_epoch"] for e in c.trace.of_kind("controller_elected")]
    assert epochs == [1, 2, 3, 4, 5]
    assert c.controller_epoch == 5


def test_controlled_shutdown_keeps_the_partition_available_and_a_crash_does_not() -> None:
    stopped = Cluster(brokers=3, config={"controller_mode": "zk"})
    stopped.stop(1)
    assert stopped.leader == 2 and stopped.now == 0
    crashed = Cluster(brokers=3, config={"controller_mode": "zk"})
    crashed.crash(1)
    crashed.produce("m1")
    crashed.advance(crashed.config.request_timeout_ms + 1)
    assert crashed.report().errors == {"m1": "REQUEST_TIMED_OUT"}
    assert crashed.leader == 2  # elected only once broker 1's session expired


def test_a_paused_broker_handles_what_waited_when_it_resumes() -> None:
    c = Cluster(brokers=2, leader=1)
    c.pause(1)
    c.produce("m1", acks=1)
    assert c.replica(1).values == [] and c.report().acked == []
    c.resume(1)
    assert c.replica(1).values == ["m1"] and c.report().acked == ["m1"]


def test_pause_errors_name_the_node() -> None:
    import pytest

    from kafkalab import ActionError

    c = Cluster(brokers=2)
    with pytest.raises(ActionError, match="'zk' is not paused"):
        c.resume("zk")
    c.pause(2)
    with pytest.raises(ActionError, match="already paused"):
        c.pause(2)
    with pytest.raises(ActionError, match="broker 2 is paused"):
        c.fetch(2)


def test_rack_aware_placement_spreads_every_partition_over_racks() -> None:
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    c = Cluster(brokers=6, partitions=12, racks=racks, config={"replication.factor": 3})
    for tp, replicas in c.assignment.items():
        assert len({racks[b] for b in replicas}) == 3, (tp, replicas)
    leaders = [r[0] for r in c.assignment.values()]
    assert sorted(leaders.count(b) for b in racks) == [2] * 6


def test_metrics_follow_offline_and_under_replicated_partitions() -> None:
    c = Cluster(brokers=2, partitions=2, config={"unclean.leader.election.enable": False})
    c.crash(1)
    c.crash(2)
    c.advance(18000)
    metrics = c.trace.of_kind("metrics")[-1].data
    assert metrics == {"offline_partitions": 2, "under_replicated_partitions": 2}
    assert c.state()["offline_partitions"] == 2


# ---- KRaft ---------------------------------------------------------------------------------

KRAFT_SAFE = make_config({"min.insync.replicas": 2, "controller_mode": "kraft"})


def test_kraft_mode_survives_crashes_cuts_and_pauses_of_brokers_and_controllers() -> None:
    activations = resigned = 0
    for seed in range(12):
        faults = random_faults(
            seed,
            3,
            DURATION_MS,
            mean_interval_ms=2500,
            kinds=("crash", "disconnect", "pause"),
            controllers=("c1", "c2", "c3"),
        )
        out = simulate(
            KRAFT_SAFE,
            seed=seed,
            duration_ms=DURATION_MS,
            settle_ms=40000,
            faults=faults,
            check_invariants=True,
            keep_cluster=True,
        )
        assert isinstance(out, tuple)
        result, cluster = out
        assert result.safe, f"seed {seed}: {result}\n{result.replay_hint()}"
        epochs = cluster.monitor.controller_epochs
        assert epochs == sorted(set(epochs)), f"seed {seed}: controller epochs {epochs}"
        activations += len(epochs)
        resigned += len(cluster.trace.of_kind("controller_resigned"))
    assert activations > 12 and resigned > 0, "the sweep must move the active controller"


def test_kraft_fences_a_silent_broker_after_the_session_timeout() -> None:
    c = Cluster(brokers=3, config={"controller_mode": "kraft"})
    start = c.now
    c.crash(2)
    c.advance(c.config.broker_session_timeout_ms - 1000)
    assert 2 in c.isr
    c.advance(3000)
    fenced = c.trace.of_kind("broker_fenced")
    assert [e.data["broker"] for e in fenced] == [2]
    assert start + c.config.broker_session_timeout_ms < fenced[0].time_ms <= c.now
    assert 2 not in c.isr and c.leader_epoch == 0  # an ISR shrink keeps the leader epoch


def test_kraft_controller_failover_keeps_the_partition_state() -> None:
    c = Cluster(brokers=3, config={"controller_mode": "kraft"})
    first, epoch = c.controller, c.controller_epoch
    before = c.partition_states()
    c.crash(first)
    c.advance(6000)
    assert c.controller not in (None, first) and c.controller_epoch > epoch
    assert c.partition_states() == before
    c.restart(first)
    c.advance(6000)
    assert c.controller != first, "the old controller rejoins as a follower of the quorum"


def test_kraft_unclean_shutdown_leaves_the_elr_and_a_clean_one_keeps_its_place() -> None:
    s = scenarios.get("kraft-elr-recovery")
    clean = scenarios.run(s).cluster
    assert clean.leader == 2
    text = s.source.replace("  - stop: 2\n", "  - crash: 2\n")
    unclean = scenarios.run(scenarios.parse(text)).cluster
    assert unclean.leader is None, "a broker back from a crash may have lost records"


# ---- controlled shutdown: retries (ZooKeeper mode) and the heartbeat protocol (KRaft) ------


def _stop_while_alone_in_the_isr(**settings: Any) -> tuple[Cluster, int]:
    """Broker 1 leads with the ISR [1] (its followers were paused past the lag time); they
    resume and catch up while broker 1 stops."""
    c = Cluster(brokers=3, config={"acks": "1", **settings}, mode="timed")
    c.produce("m1")
    c.advance(1000)
    c.pause(2)
    c.pause(3)
    c.produce("m2")
    c.advance(46000)
    assert (c.leader, c.isr) == (1, [1])
    c.resume(2)
    c.resume(3)
    start = c.now
    c.stop(1)
    c.advance(20000)
    return c, start


def test_a_refused_controlled_shutdown_is_tried_again_after_the_back_off() -> None:
    """KafkaServer.controlledShutdown: an answer that still lists partitions is a failed
    attempt; 5 s later the broker asks again, and by then its followers are back in the ISR, so
    the leadership moves. Stopping at the first answer (one attempt, as kafkalab did for every
    answer) leaves the partition offline."""
    retried, start = _stop_while_alone_in_the_isr()
    failed = retried.trace.of_kind("controlled_shutdown_failed")
    assert [(e.data["attempt"], e.data["remaining"]) for e in failed] == [(1, ["demo-0"])]
    assert retried.leader == 2 and 1 not in retried.running()
    (stopped,) = retried.trace.of_kind("stopped")
    assert stopped.data["reason"] == "controlled shutdown done"
    assert stopped.time_ms - start >= retried.config.controlled_shutdown_retry_backoff_ms
    once, _ = _stop_while_alone_in_the_isr(controlled_shutdown_max_retries=1)
    assert once.leader is None and once.isr == [1]
    (stopped,) = once.trace.of_kind("stopped")
    assert stopped.data["reason"] == "controlled shutdown failed: stopping anyway"


@pytest.mark.parametrize(("preset", "waits"), [("3.6", 2), ("3.0", 3)])
def test_after_the_last_failed_attempt_only_releases_before_3_1_back_off(
    preset: str, waits: int
) -> None:
    """Every attempt is refused (the only other ISR member is down): three attempts, with a
    back-off between them, and before 3.1 one more after the last (d30b4e51513)."""
    c, waited = refused_shutdown_waits(preset=preset)
    attempts = [e.data["attempt"] for e in c.trace.of_kind("controlled_shutdown_failed")]
    assert attempts == [1, 2, 3]
    assert waited == waits * c.config.controlled_shutdown_retry_backoff_ms


def refused_shutdown_waits(**settings: Any) -> tuple[Cluster, int]:
    """ZooKeeper mode: broker 1 stops while it is alone in the ISR (broker 2 crashed), so
    every controlled shutdown attempt is refused; how long it took to stop."""
    c = Cluster(brokers=2, config={**settings, "controller_mode": "zk"})
    c.produce("m1")
    c.crash(2)
    c.advance(c.config.zookeeper_session_timeout_ms + 1000)
    assert c.isr == [1]
    start = c.now
    c.stop(1)
    return c, c.now - start


def test_an_unanswered_controlled_shutdown_times_out_each_attempt() -> None:
    """No answer within request.timeout.ms fails an attempt as an error does; after the last,
    the broker stops without the controller."""
    c = Cluster(brokers=3)
    c.disconnect(1, "controller")
    c.stop(1)
    failed = c.trace.of_kind("controlled_shutdown_failed")
    assert [(e.data["cause"], e.data["error"]) for e in failed] == [
        ("no answer", "REQUEST_TIMED_OUT")
    ] * 3
    cfg = c.config
    assert c.now == 3 * cfg.request_timeout_ms + 2 * cfg.controlled_shutdown_retry_backoff_ms
    assert 1 not in c.running()


def test_single_replica_partitions_do_not_hold_up_a_controlled_shutdown() -> None:
    """doControlledShutdown acts on, and lists, only partitions with more than one replica:
    nothing can take over a single replica, so the broker stops at the first answer."""
    c = Cluster(brokers=2, replicas=[1])
    c.stop(1)
    assert not c.trace.of_kind("controlled_shutdown_failed")
    assert c.now == 0 and 1 not in c.running()


def _kraft_node(c: Cluster) -> Any:
    node = c.control.active_node()
    assert node is not None
    return node


def test_kraft_controlled_shutdown_answers_not_yet_then_lets_the_broker_go_and_fences_it() -> None:
    """BrokerHeartbeatManager: the first heartbeat of a leader asking to stop puts it in
    controlled shutdown (its leadership moves) and is answered "not yet"; the next, 50 ms later
    (BrokerLifecycleManager), finds it leading nothing, but brokers 2 and 3 have not yet said
    in a heartbeat that they applied the records that moved it (lowestActiveOffset). They do an
    interval later, and broker 1's next heartbeat may stop: it is fenced at once instead of a
    session timeout later."""
    c = Cluster(brokers=3, config={"controller_mode": "kraft"})
    start, mark = c.now, len(c.trace.events)
    c.stop(1)
    answers = [
        e.data["msg"].shutdown_ready
        for e in c.trace.events[mark:]
        if e.kind == "deliver" and e.node == "1"
        if isinstance(e.data["msg"], m.BrokerHeartbeatResponse)
    ]
    assert answers == [False, False, True]
    (stopped,) = c.trace.of_kind("stopped")
    interval = c.config.broker_heartbeat_interval_ms
    assert stopped.time_ms - start == 50 + interval
    assert c.leader == 2
    assert _kraft_node(c).brokers[1].fenced


def test_kraft_a_silent_broker_holds_up_a_controlled_shutdown_until_it_is_fenced() -> None:
    """BrokerHeartbeatManager.lowestActiveOffset counts every unfenced broker: broker 3, paused,
    reports nothing past the shutdown's records until the controller fences it
    (broker.session.timeout.ms after its last heartbeat)."""
    c = Cluster(brokers=3, config={"controller_mode": "kraft"})
    c.pause(3)
    start = c.now
    c.stop(1)
    c.advance(20000)
    (stopped,) = c.trace.of_kind("stopped")
    (fenced,) = [e for e in c.trace.of_kind("broker_fenced") if e.data["broker"] == 3]
    assert stopped.time_ms > fenced.time_ms
    assert stopped.time_ms - start > c.config.broker_session_timeout_ms - 2000


def test_kraft_heartbeats_go_an_interval_after_each_answer() -> None:
    """BrokerLifecycleManager.scheduleNextCommunicationAfterSuccess: the period is the interval
    plus the round trip, not a fixed clock."""
    c = Cluster(brokers=3, config={"controller_mode": "kraft"}, latency_ms=(5, 5), mode="timed")
    c.advance(10000)
    sent_ms = [
        e.time_ms
        for e in c.trace.of_kind("send")
        if e.node == "2" and isinstance(e.data["msg"], m.BrokerHeartbeat)
    ]
    gaps = {b - a for a, b in zip(sent_ms[-4:], sent_ms[-3:], strict=False)}
    assert gaps == {c.config.broker_heartbeat_interval_ms + 10}


def test_kraft_an_unanswered_heartbeat_is_sent_again_after_the_channel_timeout() -> None:
    """The heartbeat channel gives up after broker.session.timeout.ms / 2 (KAFKA-14392); the
    next heartbeat follows 100 ms later (resendExponentialBackoff)."""
    c = Cluster(brokers=3, config={"controller_mode": "kraft"})
    c.disconnect(2, "zk")
    start = c.now
    c.advance(8000)
    sent_ms = [  # lost on the cut links
        e.time_ms
        for e in c.trace.of_kind("drop")
        if e.node == "2" and isinstance(e.data["msg"], m.BrokerHeartbeat) and e.time_ms > start
    ]
    assert sent_ms[1] - sent_ms[0] == c.config.broker_session_timeout_ms // 2 + 100


def test_kraft_a_broker_that_leads_nothing_may_stop_at_its_first_heartbeat() -> None:
    c = Cluster(brokers=3, config={"controller_mode": "kraft"})
    start = c.now
    c.stop(3)
    (stopped,) = c.trace.of_kind("stopped")
    assert stopped.time_ms - start < 50
    assert _kraft_node(c).brokers[3].fenced and 3 not in c.isr


# ---- leader balancing in KRaft -------------------------------------------------------------


def test_kraft_balances_leaders_without_the_per_broker_share() -> None:
    """ReplicationControlManager.maybeBalancePartitionLeaders elects the preferred replica of
    every imbalanced partition; leader.imbalance.per.broker.percentage is not read in KRaft
    mode. At 100 % the ZooKeeper-era controller never moves a leader back."""
    leaders = {}
    for mode in ("zk", "kraft"):
        s = scenarios.get("preferred-leader-rebalance")
        config = {
            **s.config,
            "controller_mode": mode,
            "leader.imbalance.per.broker.percentage": 100,
        }
        text = s.source.replace("config: {auto.leader.rebalance.enable: true}", f"config: {config}")
        c = scenarios.run(scenarios.parse(text)).cluster
        c.advance(20000)
        leaders[mode] = c.leader
    assert leaders == {"zk": 2, "kraft": 1}


def test_kraft_schedules_the_balance_one_interval_after_the_change() -> None:
    """QuorumController.maybeScheduleNextBalancePartitionLeaders: the interval counts from the
    write that left a partition off its preferred leader (here broker 1's fencing), not from a
    fixed clock started when the controller became active."""
    s = scenarios.get("preferred-leader-rebalance")
    (kraft,) = [v for v in s.variants if v.name == "kraft"]
    c = scenarios.run(s, variant=kraft).cluster
    assert c.leader == 2
    (fenced,) = c.trace.of_kind("broker_fenced")
    c.advance(20000)
    moved = [e for e in c.trace.of_kind("partition_state") if e.data["leader"] == 1]
    interval = c.config.leader_imbalance_check_interval_ms
    assert [e.time_ms for e in moved] == [fenced.time_ms + interval]


@pytest.mark.parametrize(("cap", "runs"), [(1000, 1), (1, 2)])
def test_kraft_balancing_stops_at_its_cap_and_runs_again_soon(cap: int, runs: int) -> None:
    """maybeBalancePartitionLeaders makes at most maxElectionsPerImbalance (1000) changes; the
    rest wait for a run scheduled 10 ms later. Two partitions led elsewhere: one run, or, with
    a cap of one, two runs and two commits."""
    config = {"controller_mode": "kraft", "leader_imbalance_check_interval_ms": 20000}
    c = Cluster(brokers=3, partitions=2, replicas={0: [1, 2, 3], 1: [1, 3, 2]}, config=config)
    for node in ("c1", "c2", "c3"):
        c.sim.actors[node].max_elections_per_imbalance = cap
    c.crash(1)
    c.advance(12000)
    c.restart(1)
    for tp in (0, 1):
        c.fetch(1, partition=tp)
        c.fetch(1, partition=tp)
    c.advance(20000)
    back = {e.time_ms for e in c.trace.of_kind("partition_state") if e.data["leader"] == 1}
    assert len(back) == runs
    assert {c.partition_states()[tp].leader for tp in c.partitions()} == {1}


# ---- leader balancing in ZooKeeper mode ----------------------------------------------------


def _preferred_leader_back(mode: str, interval_ms: int) -> tuple[Cluster, list[int]]:
    """Broker 1, the preferred leader, crashes at 0 and returns at 19 s caught up; the times
    at which the controller's imbalance checks move leadership back to it."""
    config = {"controller_mode": mode, "leader_imbalance_check_interval_ms": interval_ms}
    c = Cluster(brokers=3, config=config)
    c.produce("m1")
    for follower in (2, 3, 2, 3):
        c.fetch(follower)
    c.crash(1)
    c.advance(19000)
    c.restart(1)
    for _ in range(3):
        c.fetch(1)
    assert (c.leader, c.isr) == (2, [2, 3, 1])
    c.advance(100000)
    moved = c.trace.of_kind("partition_state")
    return c, [e.time_ms for e in moved if e.data["reason"] == "auto_leader_rebalance"]


def test_zk_controller_checks_the_imbalance_5_s_after_its_failover() -> None:
    """KafkaController.onControllerFailover schedules the first check 5 s after the failover
    (scheduleAutoLeaderRebalanceTask), whatever leader.imbalance.check.interval.seconds says.
    Broker 2 took over as controller when broker 1's session expired, at 18 s."""
    c, moved = _preferred_leader_back("zk", 60000)
    (failover,) = [e for e in c.trace.of_kind("controller_failover") if e.data["controller"] == 2]
    assert moved == [failover.time_ms + 5000]


def test_dedicated_controller_checks_at_5_s_then_every_interval() -> None:
    """The dedicated controller takes over at 0: checks at 5 s, 25 s, 45 s ...; broker 1 is
    back and caught up at 19 s, so the check at 25 s moves leadership back."""
    _, moved = _preferred_leader_back("dedicated", 20000)
    assert moved == [25000]


def test_a_controllers_rebalance_timer_is_its_own_epochs() -> None:
    """The first check is set 5 s ahead and carries the controller epoch; a timer left by an
    earlier term of the same broker (an older epoch) runs nothing and sets nothing, as Kafka
    shuts the scheduler down when a controller resigns."""
    state = PartitionState((1, 2), 2, 1, (1, 2))
    ctl = Controller(make_config(), {"t-0": state}, 3, live={1: 1, 2: 2})
    ctx = Context(0, "controller")
    ctl.start(ctx)
    assert ctx.timers == [(5000, AUTO_REBALANCE_TIMER, 3)]
    stale = Context(5000, "controller")
    ctl.on_timer(stale, AUTO_REBALANCE_TIMER, 2)
    assert (stale.timers, ctl.partitions["t-0"].leader) == ([], 2)
    current = Context(5000, "controller")
    ctl.on_timer(current, AUTO_REBALANCE_TIMER, 3)
    assert current.timers == [(300000, AUTO_REBALANCE_TIMER, 3)]
    assert ctl.partitions["t-0"].leader == 1  # broker 1 prefers it and leads none: moved back
