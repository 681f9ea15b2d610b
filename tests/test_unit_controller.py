"""Unit tests of ZooKeeper sessions and the ZooKeeper-era controller, driven through a Context."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kafkalab.config import make_config
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.controller import Controller, PartitionState, ZooKeeper
from kafkalab.sim.cluster import Cluster

TP = "demo-0"


def deliver(actor: Any, msg: Any, *, src: Any = "zk", now: int = 0, node: Any = "x") -> Context:
    ctx = Context(now, node)
    actor.handle(ctx, src, msg)
    return ctx


def fire(actor: Any, name: str, data: Any, *, now: int) -> Context:
    ctx = Context(now, "zk")
    actor.on_timer(ctx, name, data)
    return ctx


def sent(ctx: Context, kind: type, dst: Any = None) -> list[Any]:
    return [msg for d, msg, *_ in ctx.sends if isinstance(msg, kind) and (dst is None or d == dst)]


def sent_to(ctx: Context, kind: type) -> list[Any]:
    return sorted(d for d, msg, *_ in ctx.sends if isinstance(msg, kind))


def events(ctx: Context, kind: str) -> list[dict[str, Any]]:
    return [data for k, data in ctx.events if k == kind]


# ---- ZooKeeper sessions --------------------------------------------------------------------


def zookeeper(timeout_ms: int = 6000) -> ZooKeeper:
    return ZooKeeper(make_config({"zookeeper.session.timeout.ms": timeout_ms}))


def test_registration_creates_a_session_and_notifies_the_controller():
    zk = zookeeper()
    ctx = deliver(zk, m.ZkRegister(1), src=1)
    assert sent(ctx, m.ZkRegistered, 1) == [m.ZkRegistered(1, "controller", 0)]
    assert sent(ctx, m.BrokerChange, "controller") == [m.BrokerChange(((1, 1),))]
    assert ctx.timers == [(6000, "expire", (1, 1))]

    ctx = deliver(zk, m.ZkRegister(2), src=2, now=5)
    assert sent(ctx, m.ZkRegistered, 2) == [m.ZkRegistered(2, "controller", 0)]  # a new zxid
    assert sent(ctx, m.BrokerChange) == [m.BrokerChange(((1, 1), (2, 2)))]


def test_a_session_expires_after_the_timeout_without_heartbeats():
    zk = zookeeper(6000)
    deliver(zk, m.ZkRegister(1), src=1, now=0)
    deliver(zk, m.ZkRegister(2), src=2, now=0)

    ctx = fire(zk, "expire", (1, 1), now=6000)

    assert 1 not in zk.sessions
    assert events(ctx, "zk_session_expired") == [{"broker": 1, "session": 1}]
    assert sent(ctx, m.BrokerChange, "controller") == [m.BrokerChange(((2, 2),))]


def test_heartbeats_keep_a_session_alive_until_they_stop():
    zk = zookeeper(6000)
    deliver(zk, m.ZkRegister(1), src=1, now=0)
    deliver(zk, m.ZkHeartbeat(1, 1), src=1, now=4000)

    ctx = fire(zk, "expire", (1, 1), now=6000)
    assert 1 in zk.sessions
    assert sent(ctx, m.BrokerChange) == []
    assert ctx.timers == [(4000, "expire", (1, 1))]  # due 6000 ms after the last heartbeat

    ctx = fire(zk, "expire", (1, 1), now=9999)
    assert 1 in zk.sessions
    ctx = fire(zk, "expire", (1, 1), now=10000)
    assert 1 not in zk.sessions
    assert sent(ctx, m.BrokerChange) == [m.BrokerChange(())]


def test_an_old_sessions_timer_does_not_expire_a_new_session():
    zk = zookeeper(6000)
    deliver(zk, m.ZkRegister(1), src=1, now=0)
    deliver(zk, m.ZkClose(1, 1), src=1, now=50)  # a clean stop closes session 1 at once
    deliver(zk, m.ZkRegister(1, incarnation=1), src=1, now=100)  # the next run: session 2
    ctx = fire(zk, "expire", (1, 1), now=6000)
    assert zk.sessions[1][0] == 2
    assert ctx.sends == [] and ctx.events == []


def test_a_heartbeat_with_a_stale_session_gets_session_expired():
    zk = zookeeper()
    deliver(zk, m.ZkRegister(1), src=1, now=0)
    deliver(zk, m.ZkClose(1, 1), src=1, now=5)
    deliver(zk, m.ZkRegister(1, incarnation=1), src=1, now=10)  # now session 2
    ctx = deliver(zk, m.ZkHeartbeat(1, 1), src=1, now=20)
    assert sent(ctx, m.ZkSessionExpired, 1) == [m.ZkSessionExpired(1)]
    assert zk.sessions[1] == (2, 10)  # the live session is not refreshed


def test_a_heartbeat_after_expiry_gets_session_expired():
    zk = zookeeper(6000)
    deliver(zk, m.ZkRegister(1), src=1, now=0)
    fire(zk, "expire", (1, 1), now=6000)
    ctx = deliver(zk, m.ZkHeartbeat(1, 1), src=1, now=6001)
    assert sent(ctx, m.ZkSessionExpired, 1) == [m.ZkSessionExpired(1)]


def test_cluster_broker_cut_from_zookeeper_loses_its_session_then_registers_again():
    c = Cluster(brokers=3, leader=1, config={"zookeeper.session.timeout.ms": 6000})
    c.disconnect(3, "zk")
    c.advance(5999)
    assert c.isr == [1, 2, 3]
    c.advance(1)
    assert c.isr == [1, 2]
    assert c.trace.of_kind("zk_session_expired")[-1].data["broker"] == 3
    c.reconnect(3, "zk")
    c.advance(2000)  # the next heartbeat learns the session is gone
    assert [e.data["broker"] for e in c.trace.of_kind("zk_reregister")] == [3]
    assert c.sim.actors["zk"].sessions[3][0] > 3


# ---- controller ----------------------------------------------------------------------------


def controller(
    replicas: tuple[int, ...] = (1, 2, 3),
    leader: int | None = 1,
    isr: tuple[int, ...] | None = None,
    *,
    leader_epoch: int = 0,
    live: tuple[int, ...] | None = None,
    **config: Any,
) -> Controller:
    """A controller whose partition state is given and which has seen ``live`` (broker ids,
    broker epoch = id) register."""
    state = PartitionState(replicas, leader, leader_epoch, isr or replicas)
    c = Controller(make_config(config), {TP: state})
    live = live or replicas
    deliver(c, m.BrokerChange(tuple((b, b) for b in sorted(live))))
    assert c.partitions[TP] == state  # a startup of the existing leader changes nothing
    return c


def broker_change(c: Controller, live: dict[int, int]) -> Context:
    return deliver(c, m.BrokerChange(tuple(sorted(live.items()))))


def test_startup_tells_started_brokers_their_partition_state():
    state = PartitionState((1, 2, 3), 1, 0, (1, 2, 3))
    c = Controller(make_config(), {TP: state})
    ctx = broker_change(c, {1: 1, 2: 2})
    assert sent_to(ctx, m.LeaderAndIsr) == [1, 2]
    assert sent(ctx, m.LeaderAndIsr, 1)[0] == m.LeaderAndIsr(
        TP, 1, 1, 0, (1, 2, 3), 0, (1, 2, 3), 1
    )
    # KafkaController.onBrokerStartup: UpdateMetadata carries every partition's state to the
    # started brokers' metadata caches (sendUpdateMetadataRequest with partitionsWithLeaders)
    partitions = ((TP, 1, 0, (1, 2, 3)),)
    assert sent(ctx, m.UpdateMetadata, 2) == [
        m.UpdateMetadata(1, (1, 2), "controller", 2, partitions=partitions)
    ]


def test_election_picks_the_first_live_isr_replica_in_assignment_order():
    c = controller(replicas=(3, 1, 2), leader=3, isr=(3, 2, 1))

    ctx = broker_change(c, {1: 1, 2: 2})

    state = c.partitions[TP]
    assert state.leader == 1  # assignment order 3, 1, 2; not ISR order 3, 2, 1
    assert state.isr == (2, 1)  # the live ISR members
    assert state.leader_epoch == 1
    assert state.partition_epoch == 1
    assert sent_to(ctx, m.LeaderAndIsr) == [1, 2]
    assert sent(ctx, m.LeaderAndIsr, 2)[0] == m.LeaderAndIsr(TP, 1, 1, 1, (2, 1), 1, (3, 1, 2), 2)
    assert events(ctx, "broker_failure") == [{"brokers": [3]}]
    (change,) = events(ctx, "partition_state")
    assert (change["leader"], change["unclean"], change["reason"]) == (1, False, "broker_failure")


def test_election_skips_a_live_replica_outside_the_isr():
    c = controller(replicas=(1, 2, 3), leader=1, isr=(1, 3))
    broker_change(c, {2: 2, 3: 3})
    assert (c.partitions[TP].leader, c.partitions[TP].isr) == (3, (3,))


def test_unclean_election_picks_the_first_live_replica_with_an_isr_of_itself():
    c = controller(isr=(1,), unclean_leader_election_enable=True)
    ctx = broker_change(c, {2: 2, 3: 3})
    state = c.partitions[TP]
    assert (state.leader, state.isr, state.leader_epoch) == (2, (2,), 1)
    assert events(ctx, "partition_state")[0]["unclean"] is True


def test_without_unclean_election_the_partition_goes_offline():
    c = controller(isr=(1,), unclean_leader_election_enable=False)
    ctx = broker_change(c, {2: 2, 3: 3})
    state = c.partitions[TP]
    assert state.leader is None
    assert state.isr == (1,)  # the last ISR member stays
    assert state.leader_epoch == 1
    assert [msg.leader for msg in sent(ctx, m.LeaderAndIsr)] == [None, None]

    ctx = broker_change(c, {1: 7, 2: 2, 3: 3})  # the last ISR member returns and leads again
    state = c.partitions[TP]
    assert (state.leader, state.isr, state.leader_epoch) == (1, (1,), 2)
    assert events(ctx, "broker_startup") == [{"brokers": [1]}]


def test_removing_dead_followers_bumps_the_leader_epoch_per_removal_and_keeps_the_last():
    c = controller(isr=(1, 2, 3))
    ctx = broker_change(c, {1: 1})  # followers 2 and 3 die at once
    state = c.partitions[TP]
    assert (state.leader, state.isr) == (1, (1,))
    assert state.leader_epoch == 2  # one bump per removed replica
    assert state.partition_epoch == 1  # one committed change
    assert sent_to(ctx, m.LeaderAndIsr) == [1]

    broker_change(c, {})  # the leader, the last ISR member, dies too
    state = c.partitions[TP]
    assert (state.leader, state.isr, state.leader_epoch) == (None, (1,), 3)


def test_a_dead_replica_outside_the_isr_changes_nothing():
    c = controller(isr=(1, 2))
    ctx = broker_change(c, {1: 1, 2: 2})
    assert c.partitions[TP] == PartitionState((1, 2, 3), 1, 0, (1, 2))
    assert events(ctx, "partition_state") == []


def test_kip380_a_bounced_broker_is_a_failure_followed_by_a_startup():
    c = controller(isr=(1, 2, 3), broker_epoch=True)
    ctx = broker_change(c, {1: 1, 2: 20, 3: 3})  # broker 2 registered again: new epoch
    state = c.partitions[TP]
    assert (state.leader, state.isr, state.leader_epoch) == (1, (1, 3), 1)
    assert events(ctx, "broker_failure") == [{"brokers": [2]}]
    assert events(ctx, "broker_startup") == [{"brokers": [2]}]
    assert c.live == {1: 1, 2: 20, 3: 3}


def test_kip380_a_bounced_leader_loses_leadership():
    c = controller(isr=(1, 2, 3), broker_epoch=True)
    broker_change(c, {1: 10, 2: 2, 3: 3})
    state = c.partitions[TP]
    assert (state.leader, state.isr, state.leader_epoch) == (2, (2, 3), 1)


def test_before_kip380_a_bounced_broker_gets_nothing():
    """2.1.1 KafkaController.BrokerChange.process compares broker ids only: a broker that
    registered again before the controller handled its going is neither new nor dead, so it
    gets no LeaderAndIsr (and leads or follows nothing until one comes) and keeps its ISR
    membership."""
    c = controller(isr=(1, 2, 3), broker_epoch=False)
    ctx = broker_change(c, {1: 1, 2: 20, 3: 3})
    assert c.partitions[TP] == PartitionState((1, 2, 3), 1, 0, (1, 2, 3))
    assert events(ctx, "broker_failure") == []
    assert events(ctx, "broker_startup") == []
    assert events(ctx, "partition_state") == []
    assert sent(ctx, m.LeaderAndIsr) == []
    assert c.live[2] == 20


def test_a_restart_that_replaced_its_session_still_gets_its_state_before_kip380():
    """Only where ZooKeeper lets a restarted broker replace its live session
    (restart_replaces_session, KIP-101's stepped stories; no Kafka release) does the pre-2.2
    controller send the bounced broker its role."""
    c = controller(isr=(1, 2, 3), broker_epoch=False)
    c.restart_replaces_session = True
    ctx = broker_change(c, {1: 1, 2: 20, 3: 3})
    assert c.partitions[TP] == PartitionState((1, 2, 3), 1, 0, (1, 2, 3))
    expected = m.LeaderAndIsr(TP, 1, 1, 0, (1, 2, 3), 0, (1, 2, 3), 20)
    assert sent(ctx, m.LeaderAndIsr, 2) == [expected]


@pytest.mark.parametrize(("broker_epoch", "isr_after"), [(True, [1, 3]), (False, [1, 2, 3])])
def test_cluster_fast_bounce_of_a_follower(broker_epoch: bool, isr_after: list[int]):
    assert isr_after_a_fast_bounce({"broker_epoch": broker_epoch}) == isr_after


def isr_after_a_fast_bounce(settings: Mapping[str, Any]) -> list[int]:
    """Follower 2 crashes and is back before its old session expired, on a cluster whose
    ZooKeeper lets the new session replace the old one (restart_replaces_session, as in
    KIP-101's stepped scenarios; Kafka would refuse the registration)."""
    c = Cluster(brokers=3, leader=1, config=settings, restart_replaces_session=True)
    c.crash(2)
    c.restart(2)
    return c.isr


@pytest.mark.parametrize("mode", ["zk", "dedicated"])
@pytest.mark.parametrize("preset", ["2.1", "2.2"])
def test_cluster_restart_inside_the_old_session_is_refused(preset: str, mode: str):
    """KafkaZkClient.registerBroker (2.0 to 3.9; ZkUtils.registerBrokerInZk since 0.9): the
    restarted broker's /brokers/ids znode still belongs to its old, live session, so start-up
    fails and KafkaServer shuts down; the controller saw nothing, with or without KIP-380.
    Every broker registers through ZooKeeper, so the same beside the dedicated controller."""
    c = Cluster(brokers=3, leader=1, config={"preset": preset, "controller_mode": mode})
    c.crash(2)
    c.restart(2)  # back before its old session expired
    assert 2 not in c.running()
    (refused,) = c.trace.of_kind("zk_registration_refused")
    assert refused.data["broker"] == 2 and refused.data["next"] == "shutdown"
    assert c.isr == [1, 2, 3]


# ---- AlterIsr ------------------------------------------------------------------------------


def alter(c: Controller, leader_epoch: int, partition_epoch: int, isr: tuple[int, ...], leader=1):
    ctx = deliver(c, m.AlterIsr(TP, leader, leader_epoch, partition_epoch, isr), src=leader)
    (resp,) = sent(ctx, m.AlterIsrResponse, leader)
    return ctx, resp


def test_alter_isr_is_committed_without_a_leader_epoch_bump():
    c = controller(isr=(1, 2, 3))
    ctx, resp = alter(c, 0, 0, (1, 2))
    assert resp == m.AlterIsrResponse(TP, m.NONE, 0, 1, (1, 2))
    assert c.partitions[TP] == PartitionState((1, 2, 3), 1, 0, (1, 2), 1)
    assert events(ctx, "partition_state")[0]["reason"] == "shrink"
    assert sent(ctx, m.LeaderAndIsr) == []  # the leader learns from the response

    _, resp = alter(c, 0, 1, (1, 2, 3))
    assert resp.error == m.NONE
    assert c.partitions[TP].isr == (1, 2, 3)
    assert c.partitions[TP].partition_epoch == 2


def test_alter_isr_with_a_stale_leader_epoch_is_rejected():
    c = controller(isr=(1, 2, 3), leader_epoch=3)
    before = c.partitions[TP]
    ctx, resp = alter(c, 2, 0, (1, 2))
    assert resp == m.AlterIsrResponse(TP, m.FENCED_LEADER_EPOCH, 3, 0, (1, 2, 3))
    assert c.partitions[TP] == before
    assert events(ctx, "partition_state") == []


def test_alter_isr_from_a_broker_that_no_longer_leads_is_rejected():
    c = controller(isr=(1, 2, 3))
    _, resp = alter(c, 0, 0, (2,), leader=2)
    assert resp.error == m.FENCED_LEADER_EPOCH
    assert c.partitions[TP].isr == (1, 2, 3)


def test_alter_isr_with_a_stale_partition_epoch_is_rejected():
    c = controller(isr=(1, 2, 3))
    alter(c, 0, 0, (1, 2))  # partition epoch is now 1
    _, resp = alter(c, 0, 0, (1,))
    assert resp == m.AlterIsrResponse(TP, m.INVALID_UPDATE_VERSION, 0, 1, (1, 2))
    assert c.partitions[TP].isr == (1, 2)
