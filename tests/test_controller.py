"""The controller: election, epochs, fencing of zombies, controlled shutdown, preferred leaders,
pauses and several partitions, with properties over random schedules in ZooKeeper mode."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalab import Cluster, make_config, scenarios
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.broker import Broker
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
    assert "zk_write_rejected" in kinds and "controller_resigned" in kinds
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
