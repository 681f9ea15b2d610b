"""A broker restarted inside its previous run's ZooKeeper session cannot register, in every
release: 0.8 waits for the old znode to go, 0.9 to 3.9 abort start-up. And a controller whose
session expired handles no broker news (KafkaController.processBrokerChange)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Mapping
from typing import Any

import pytest

from kafkalab import Cluster
from kafkalab.lessons import play
from kafkalab.scenarios import parse
from kafkalab.sim.brokers import SUPERVISOR_RESTART_DELAY_MS
from kafkalab.sim.timed import Fault, RunResult, simulate
from kafkalab.sim.trace import Event

POWER_LOSS_MS = 3000  # broker 1 (leader and controller) loses power
RESTART_AFTER_MS = 2000  # and is started again 2 s later


def _power_cycled_leader(preset: str) -> Cluster:
    return power_cycled_leader({"preset": preset})


def power_cycled_leader(settings: Mapping[str, Any]) -> Cluster:
    """Three brokers in ZooKeeper mode, acks=all, min.insync.replicas 2; m1 acknowledged; the
    leader loses power and is started again 2 s later; then 30 s pass."""
    config = {
        **settings,
        "controller_mode": "zk",
        "acks": "all",
        "min.insync.replicas": 2,
    }
    c = Cluster(brokers=3, leader=1, mode="timed", config=config)
    c.run(until_ms=POWER_LOSS_MS - 500)
    c.produce("m1")
    c.run(until_ms=POWER_LOSS_MS)
    assert c.report().acked == ["m1"]
    c.crash(1, lose_unflushed=True)
    c.at(POWER_LOSS_MS + RESTART_AFTER_MS, "restart", 1)
    c.run(for_ms=RESTART_AFTER_MS + 30000)
    return c


def _of(c: Cluster, kind: str, broker: int = 1) -> list[Event]:
    return [e for e in c.trace.of_kind(kind) if e.data.get("broker") == broker]


@pytest.mark.parametrize(
    ("preset", "then"),
    [
        ("0.8", "retry"),
        ("0.10", "shutdown"),
        ("2.1", "shutdown"),
        ("2.2", "shutdown"),
        ("3.7", "shutdown"),
    ],
)
def test_a_power_cycled_leader_registers_only_after_its_old_session_expired(
    preset: str, then: str
) -> None:
    """0.8.2.2 ZkUtils.registerBrokerInZk -> createEphemeralPathExpectConflictHandleZKBug: the
    znode looks like the broker's own, so it sleeps zookeeper.session.timeout.ms and tries again.
    0.10.2.2 ZkUtils.registerBrokerInZk (ZKCheckedEphemeral, NODEEXISTS -> RuntimeException "...
    restarted it faster than the zookeeper timeout ...") and 2.1.1/2.2.0/3.7.0
    KafkaZkClient.registerBroker (checkedEphemeralCreate, NODEEXISTS): KafkaServer.startup logs
    a fatal error and shuts down; in timed runs a supervisor starts it again. Either way the
    controller fails the leader over only when its session expires, and m1 survives."""
    c = _power_cycled_leader(preset)
    refused = _of(c, "zk_registration_refused")
    assert refused and all(e.data["next"] == then for e in refused)
    assert refused[0].time_ms < POWER_LOSS_MS + RESTART_AFTER_MS + 100
    (expired,) = _of(c, "zk_session_expired")
    assert refused[0].data["old_session"] == expired.data["session"]
    sessions = [e for e in _of(c, "zk_session") if e.time_ms > POWER_LOSS_MS]
    assert sessions, "it registers in the end"
    assert sessions[0].time_ms > expired.time_ms
    assert all(e.time_ms < expired.time_ms for e in refused)
    assert c.report().lost_acked == []
    leader = c.leader
    assert leader is not None and "m1" in c.replicas_view()[leader].values
    if then == "shutdown":
        stops = [e for e in c.trace.of_kind("stopped") if e.node == "1"]
        assert len(stops) == len(refused), "every refused start-up shut the broker down"
        restarts = [e.time_ms for e in c.trace.of_kind("restart") if e.node == "1"]
        gaps = {b - a for a, b in zip(restarts, restarts[1:], strict=False)}
        assert {g - SUPERVISOR_RESTART_DELAY_MS for g in gaps} <= set(range(0, 20))
    else:
        assert not [e for e in c.trace.of_kind("stopped") if e.node == "1"]


def test_before_kip380_the_controller_sends_the_returning_broker_nothing_it_did_not_see_leave():
    """2.1.1 KafkaController.BrokerChange.process: only new and dead broker ids. The broker that
    registers after its session expired is new (it was seen dead): it gets its LeaderAndIsr."""
    c = _power_cycled_leader("2.1")
    startups = [e.data["brokers"] for e in c.trace.of_kind("broker_startup")]
    assert [1] in startups


def test_stepped_restart_inside_the_session_is_refused_and_said() -> None:
    """KafkaZkClient.registerBroker (3.7): the learner's restart is refused, the broker is down
    again, and the lesson helper says so."""
    text = """
name: fast-restart
brokers: 3
leader: 1
config: {controller_mode: zk, preset: "3.7"}
steps:
  - produce: m1
  - crash: 2
  - restart: 2
"""
    s = parse(text)
    c = s.cluster()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        play(c, s.steps)
    lines = out.getvalue().splitlines()
    assert any("broker 2 could not register" in line and "down again" in line for line in lines)
    assert 2 not in c.running()
    c.advance(c.config.zookeeper_session_timeout_ms)
    c.restart(2)
    assert 2 in c.running()
    assert len(_of(c, "zk_registration_refused", 2)) == 1


def test_a_broker_whose_own_session_expired_registers_again_at_once() -> None:
    """KAFKA-7165 (2.2, shouldReCreateEphemeralZNode) and the session-expiry listener of every
    release: the same run re-creates its znode once its own session is gone; nothing refuses."""
    c = Cluster(brokers=3, leader=1, config={"controller_mode": "zk"})
    c.disconnect(3, "zk")
    c.advance(c.config.zookeeper_session_timeout_ms)
    c.reconnect(3, "zk")
    c.advance(c.config.zookeeper_session_timeout_ms // 3)
    assert [e.data["broker"] for e in c.trace.of_kind("zk_reregister")] == [3]
    assert c.trace.of_kind("zk_registration_refused") == []
    assert 3 in c.running()


def test_an_expired_controller_handles_no_broker_news() -> None:
    """3.7.0 KafkaController.processBrokerChange starts with
    zkClient.getAllBrokerAndEpochsInCluster; once the session expired the ZooKeeper client
    refuses it (ZooKeeperClient.waitUntilConnected throws when CLOSED) and
    beforeInitializingSession drops the queued events (clearAndPut(Expire)). So the zombie sends
    no UpdateMetadata or LeaderAndIsr and attempts no write."""
    c = Cluster(
        brokers=4,
        replicas=[2, 3, 4],
        leader=2,
        config={"controller_mode": "zk"},
        trace_messages=True,
    )
    c.crash(4)
    c.advance(7000)
    c.pause(1)  # the controller stalls with broker 4's news still to come
    c.advance(23000)
    assert c.controller == 2
    mark = len(c.trace)
    c.resume(1)
    sent = [
        type(e.data["msg"]).__name__
        for e in c.trace.events[mark:]
        if e.kind == "send" and e.node == "1"
    ]
    assert "ZkGetBrokers" in sent
    assert not {"ZkWrite", "UpdateMetadata", "LeaderAndIsr"} & set(sent)
    assert c.trace.of_kind("zk_write_rejected", "stale_controller_request") == []
    assert [e.node for e in c.trace.of_kind("controller_resigned")] == ["1"]


def test_requests_sent_before_the_expiry_are_still_fenced_by_the_controller_epoch() -> None:
    """KAFKA-532 (0.8.0): a broker ignores a controller request of an older controller epoch;
    here the old controller's LeaderAndIsr and UpdateMetadata, held by a failed link, arrive
    after the new controller's."""
    c = Cluster(brokers=4, replicas=[2, 3, 4], leader=2, config={"controller_mode": "zk"})
    c.disconnect(1, 3)
    c.crash(4)
    c.advance(19000)
    c.pause(1)
    c.advance(20000)
    assert c.controller == 2
    c.reconnect(1, 3)
    refused = c.trace.of_kind("stale_controller_request")
    assert {(e.node, e.data["request"], e.data["controller_epoch"]) for e in refused} == {
        ("3", "UpdateMetadata", 1),
        ("3", "LeaderAndIsr", 1),
    }


def test_the_search_in_zookeeper_mode_cannot_bring_a_crashed_broker_straight_back() -> None:
    """KafkaZkClient.registerBroker (3.7): a `restart` step right after a `crash` is refused
    until the old session expires; the exhaustive search still runs to its depth."""
    from kafkalab.config import make_config
    from kafkalab.explore import Replayer, explore

    settings = {"acks": "all", "min.insync.replicas": 2, "controller_mode": "zk"}
    c = Replayer(make_config(settings), 3, None).build(
        [{"produce": "r1"}, {"crash": 1}, {"restart": 1}]
    )
    assert c.running() == [2, 3]
    assert [e.data["next"] for e in c.trace.of_kind("zk_registration_refused")] == ["shutdown"]
    result = explore(settings, brokers=3, depth=3, actions=("produce", "crash", "restart"))
    assert result.violation is None and result.complete


# ---- beside the dedicated controller ----------------------------------------------------------

TRIAL_SEED = 0


def _power_cycled_leader_in_a_trial(preset: str) -> tuple[RunResult, Cluster, int]:
    """A timed trial (kafkalab.sim.timed.simulate, as a campaign runs it) beside the dedicated
    controller: acks=all, min.insync.replicas 2, a record every 20 ms; the leader loses power
    at 3 s and the schedule starts it again at 5 s."""
    leader = Cluster(brokers=3, seed=TRIAL_SEED).leader
    assert leader is not None
    faults = [
        Fault(POWER_LOSS_MS, "crash", (leader,), lose_unflushed=True),
        Fault(POWER_LOSS_MS + RESTART_AFTER_MS, "restart", (leader,)),
    ]
    config = {"preset": preset, "acks": "all", "min.insync.replicas": 2}
    result, c = simulate(
        config,
        seed=TRIAL_SEED,
        duration_ms=40000,
        settle_ms=30000,
        faults=faults,
        keep_cluster=True,
    )
    assert c.config.controller_mode == "dedicated"
    return result, c, leader


@pytest.mark.parametrize(
    ("preset", "then"), [("0.8", "retry"), ("0.10", "shutdown"), ("3.7", "shutdown")]
)
def test_a_trial_beside_the_dedicated_controller_refuses_the_power_cycled_leader(
    preset: str, then: str
) -> None:
    """Every Kafka broker registers through ZooKeeper, whoever the controller is: 0.8.2.2
    ZkUtils.createEphemeralPathExpectConflictHandleZKBug waits the session timeout and tries
    again; 0.10.2.2 ZkUtils.registerBrokerInZk and 3.7.0 KafkaZkClient.registerBroker fail with
    NODEEXISTS and KafkaServer.startup shuts the broker down, and the trial's supervisor starts
    it again SUPERVISOR_RESTART_DELAY_MS later until the old session has expired. The
    controller fails the leader over at that expiry; no acknowledged record is lost."""
    result, c, leader = _power_cycled_leader_in_a_trial(preset)
    assert result.acked > 0 and result.lost_acked == []
    refused = _of(c, "zk_registration_refused", leader)
    assert refused and all(e.data["next"] == then for e in refused)
    assert refused[0].time_ms < POWER_LOSS_MS + RESTART_AFTER_MS + 100
    (expired,) = _of(c, "zk_session_expired", leader)
    assert all(e.time_ms < expired.time_ms for e in refused)
    (failure,) = c.trace.of_kind("broker_failure")
    assert failure.data["brokers"] == [leader] and failure.time_ms == expired.time_ms
    registered = [e for e in _of(c, "zk_session", leader) if e.time_ms > POWER_LOSS_MS]
    assert registered and registered[0].time_ms > expired.time_ms
    restarts = [e.time_ms for e in c.trace.of_kind("restart") if e.node == str(leader)]
    stops = [e for e in c.trace.of_kind("stopped") if e.node == str(leader)]
    if then == "retry":
        assert restarts == [POWER_LOSS_MS + RESTART_AFTER_MS] and stops == []
        return
    assert len(stops) == len(refused) == len(restarts) - 1
    gaps = [b - a for a, b in zip(restarts, restarts[1:], strict=False)]
    assert all(0 <= g - SUPERVISOR_RESTART_DELAY_MS < 20 for g in gaps)
    assert restarts[-1] > expired.time_ms > restarts[-2]


def test_the_session_timeout_decides_how_many_supervised_restarts_a_trial_sees() -> None:
    """0.10's session is 6 s, 3.7's 18 s (KIP-537, 2.5.0): one refused start-up against two."""
    counts = {}
    for preset in ("0.10", "3.7"):
        _, c, leader = _power_cycled_leader_in_a_trial(preset)
        counts[preset] = len(_of(c, "zk_registration_refused", leader))
    assert counts == {"0.10": 1, "3.7": 2}


def test_the_search_beside_the_dedicated_controller_cannot_bring_a_crashed_leader_straight_back():
    """KafkaZkClient.registerBroker (3.7.0): the search's `restart` step right after a `crash`
    is refused, so `produce r1, crash 1, restart 1` no longer loses r1; the shortest acks=1
    loss needs the session timeout to pass while the leader stays down."""
    from kafkalab.config import make_config
    from kafkalab.explore import Replayer, explore

    c = Replayer(make_config({"acks": "1"}), 2, None).build(
        [{"produce": "r1"}, {"crash": 1}, {"restart": 1}]
    )
    assert c.running() == [2] and c.leader == 1
    assert [e.data["next"] for e in c.trace.of_kind("zk_registration_refused")] == ["shutdown"]
    assert c.monitor.first_violation(None) is None
    found = explore(
        {"acks": "1"},
        brokers=2,
        depth=4,
        records=1,
        crashes=1,
        actions=("produce", "fetch", "crash", "restart", "expire"),
    )
    v = found.violation
    assert v is not None and v.invariant == "no_acked_loss"
    assert v.steps == [{"produce": "r1"}, {"crash": 1}, {"advance": 18000}]
    assert found.states == 32


def test_kip101_stepped_scenarios_name_their_immediate_restart() -> None:
    """KIP-101's stories restart a broker at once, which KafkaZkClient.registerBroker (3.7.0)
    and ZkUtils.registerBrokerInZk (0.10.2.2) refuse: the catalog scenarios that tell them say
    restart_replaces_session, and without it the same steps are refused as in Kafka."""
    from kafkalab import scenarios
    from kafkalab.errors import ScenarioError

    named = {n for n, s in scenarios.catalog().items() if s.restart_replaces_session}
    assert named == {"kip101-loss", "kip101-divergence"}
    s = scenarios.get("kip101-loss")
    assert scenarios.run(s).ok
    text = s.source.replace("restart_replaces_session: true\n", "")
    kafka = scenarios.parse(text)
    assert not kafka.restart_replaces_session
    c = kafka.cluster()
    for step in kafka.steps[:12]:
        scenarios.apply_step(c, step)
    assert 1 not in c.running()
    assert [e.data["broker"] for e in c.trace.of_kind("zk_registration_refused")] == [1]
    with pytest.raises(ScenarioError, match="restart_replaces_session='yes' is not allowed"):
        scenarios.parse(
            s.source.replace("restart_replaces_session: true", "restart_replaces_session: 'yes'")
        )
