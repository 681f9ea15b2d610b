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
    assert "m1" in c.replicas_view()[c.leader].values
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
