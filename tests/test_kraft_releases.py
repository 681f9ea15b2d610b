"""KRaft controller behaviour that changed between releases, run at the presets on either side
of each change: unclean election (3.9), check-quorum (3.7), leader balancing (3.2), KIP-841's
AlterPartition checks (3.3); and what has held since 2.8: fencing when a session runs out, and a
restarted broker refused while its old session is valid."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest

from kafkalab import Cluster, scenarios
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.kraft import BrokerInfo, PartitionRegistration
from kafkalab.protocol.kraft_node import KRaftNode
from kafkalab.sim.cluster import Cluster as ClusterType

CONTROLLERS = ("c1", "c2", "c3")


def _variant(name: str, variant: str) -> Cluster:
    s = scenarios.get(name)
    (v,) = [v for v in s.variants if v.name == variant]
    return scenarios.run(s, variant=v).cluster


def _node(c: ClusterType, name: str) -> KRaftNode:
    node = c.sim.actors[name]
    assert isinstance(node, KRaftNode)
    return node


# ---- unclean leader election (KAFKA-12670, 3.9) --------------------------------------------


def test_a_kraft_controller_elects_uncleanly_only_from_3_9() -> None:
    """ConfigurationControlManager.uncleanLeaderElectionEnabledForTopic returned false from 2.8
    to 3.8: the partition stays offline until broker 1 returns, and m2 survives."""
    newest = _variant("unclean-election-loss", "kraft")
    assert (newest.leader, newest.state()["lost_acked"]) == (2, ["m2"])
    before = _variant("unclean-election-loss", "kraft-before-3.9")
    assert (before.leader, before.state()["lost_acked"]) == (1, [])
    assert before.trace.of_kind("partition_state")[-1].data["unclean"] is False


def _leaderless(preset: str | None) -> tuple[Cluster, int]:
    """Broker 2 falls out of the ISR, then leader 1 crashes and is fenced with unclean election
    off: the partition has no leader. Returns the cluster and when broker 1 was fenced."""
    config: dict[str, Any] = {"controller_mode": "kraft", "min.insync.replicas": 1}
    if preset is not None:
        config["preset"] = preset
    c = Cluster(brokers=2, config=config)
    c.produce("m1")
    c.fetch(2)
    c.fetch(2)
    c.disconnect(1, 2)
    c.advance(20000)
    c.produce("m2")
    c.advance(25000)
    assert c.isr == [1]
    c.crash(1)
    c.advance(15000)
    c.reconnect(1, 2)
    (fenced,) = [e for e in c.trace.of_kind("broker_fenced") if e.data["broker"] == 1]
    assert c.leader is None
    return c, fenced.time_ms


def test_unclean_election_turned_on_later_waits_for_the_periodic_check() -> None:
    """QuorumController.maybeScheduleNextElectUncleanLeaders: the write that left the partition
    without a leader (the fencing) schedules a check unclean.leader.election.interval.ms (5 min)
    later; turning the setting on elects nothing by itself."""
    c, fenced_ms = _leaderless(None)
    c.set_config({"unclean.leader.election.enable": True})
    c.advance(fenced_ms + c.config.unclean_leader_election_interval_ms - 1 - c.now)
    assert c.leader is None
    c.advance(1)
    assert c.leader == 2
    (elected,) = [e for e in c.trace.of_kind("partition_state") if e.data["leader"] == 2]
    assert elected.data["unclean"] and elected.time_ms == fenced_ms + 300000


def test_before_3_9_unclean_election_turned_on_later_changes_nothing_in_kraft() -> None:
    c, _ = _leaderless("3.7")
    c.set_config({"unclean.leader.election.enable": True})
    c.advance(700000)
    assert c.leader is None


# ---- check-quorum (KAFKA-15489, 3.7) -------------------------------------------------------


@pytest.mark.parametrize(("preset", "resigns"), [("3.6", False), ("3.7", True)])
def test_a_cut_off_active_controller_resigns_only_from_3_7(preset: str, resigns: bool) -> None:
    """LeaderState's check-quorum timer (1.5 x controller.quorum.fetch.timeout.ms) came in 3.7;
    before, the cut-off leader stayed active beside the one the others elected."""
    c, old = cut_off_active_controller({"preset": preset})
    others = [n for n in CONTROLLERS if n != old]
    assert any(_node(c, n).active for n in others)
    assert _node(c, old).active is not resigns
    resigned = [e for e in c.trace.of_kind("controller_resigned") if e.data["controller"] == old]
    assert bool(resigned) is resigns


def cut_off_active_controller(settings: Mapping[str, Any]) -> tuple[Cluster, str]:
    """The active KRaft controller is cut off from the two others for 10 s."""
    c = Cluster(brokers=3, config={**settings, "controller_mode": "kraft"})
    old = c.controller
    for other in CONTROLLERS:
        if other != old:
            c.disconnect(old, other)
    c.advance(10000)
    return c, old


# ---- automatic leader balancing (KAFKA-13682, 3.2) -----------------------------------------


@pytest.mark.parametrize(("preset", "back"), [("3.0", False), ("3.3", True)])
def test_a_kraft_controller_balances_leaders_only_from_3_2(preset: str, back: bool) -> None:
    """QuorumController.maybeScheduleNextBalancePartitionLeaders came in 3.2: in 3.0 and 3.1
    broker 1, back in the ISR, never leads again by itself."""
    source = scenarios.get("preferred-leader-rebalance").source
    kraft = f'set: {{controller_mode: kraft, preset: "{preset}"}}'
    s = scenarios.parse(source.replace("set: {controller_mode: kraft}", kraft))
    (variant,) = [v for v in s.variants if v.name == "kraft"]
    c = scenarios.run(s, variant=variant).cluster
    assert c.config.preset == preset
    assert c.leader == 2
    c.advance(20000)
    assert (c.leader == 1) is back


# ---- KIP-841 (KAFKA-13916, 3.3) ------------------------------------------------------------


def _standalone_node() -> KRaftNode:
    """An active controller node outside any cluster, for what it answers at once."""
    c = Cluster(brokers=3, config={"controller_mode": "kraft"})
    part = PartitionRegistration((1, 2, 3), 1, 0, (1, 2))
    node = KRaftNode(
        "c1", CONTROLLERS, c.config, {"t-0": part}, election_draws=[0], backoff_draws=[0]
    )
    node.brokers = {1: BrokerInfo(1, False), 2: BrokerInfo(2, False), 3: BrokerInfo(3, False, True)}
    node.active = True
    return node


def _active_node(
    c: ClusterType, isr_join_only_eligible: bool
) -> tuple[KRaftNode, PartitionRegistration]:
    """The active controller of ``c``, settled, after broker 3 left demo-0's ISR and while it
    is shutting down."""
    c.advance(5000)
    node = _node(c, c.controller)
    node.config = node.config.replace(isr_join_only_eligible=isr_join_only_eligible)
    reg = node.partitions["demo-0"]
    shrunk = replace(reg, isr=(1, 2), partition_epoch=reg.partition_epoch + 1)
    node.partitions["demo-0"] = shrunk
    node.brokers[3] = replace(node.brokers[3], shutting_down=True)
    return node, shrunk


@pytest.mark.parametrize(("eligible_only", "error"), [(False, None), (True, m.INELIGIBLE_REPLICA)])
def test_a_shutting_down_replica_is_refused_in_the_isr_only_from_3_3(
    eligible_only: bool, error: str | None
) -> None:
    """ReplicationControlManager.validateAlterPartitionData: 3.3.2 refuses an ISR holding a
    fenced or shutting-down replica (ineligibleReplicasForIsr); 3.2.3 checked nothing, and a
    shutting-down broker was still acceptable as leader (clusterControl.unfenced)."""
    c = Cluster(brokers=3, config={"controller_mode": "kraft"})
    node, reg = _active_node(c, eligible_only)
    assert node._acceptable(3) is not eligible_only
    ctx = Context(5000, node.id)
    request = m.AlterIsr("demo-0", 1, reg.leader_epoch, reg.partition_epoch, (1, 2, 3))
    node.handle(ctx, 1, request)
    replies = [msg for _, msg, _ in ctx.sends if isinstance(msg, m.AlterIsrResponse)]
    if error is None:  # accepted: the change waits in the metadata log for the quorum
        assert replies == [] and node._current("demo-0").isr == (1, 2, 3)
    else:
        assert [r.error for r in replies] == [error] and node._current("demo-0").isr == (1, 2)


# ---- fencing and registration (since 2.8) --------------------------------------------------


def test_a_silent_broker_is_fenced_when_its_session_runs_out() -> None:
    """QuorumController.rescheduleMaybeFenceStaleBrokers: the fence check is scheduled at the
    earliest last contact plus broker.session.timeout.ms, not polled every second."""
    c = Cluster(brokers=3, config={"controller_mode": "kraft"})
    c.advance(5000)
    node = _node(c, c.controller)
    c.crash(2)
    last = node.last_contact[2]
    c.advance(15000)
    (fenced,) = c.trace.of_kind("broker_fenced")
    assert fenced.time_ms == last + c.config.broker_session_timeout_ms + 1


def test_a_restarted_broker_is_refused_while_its_old_session_is_valid() -> None:
    """ClusterControlManager.registerBroker: another incarnation of a broker with a valid
    session gets DUPLICATE_BROKER_REGISTRATION; the broker tries again (100 ms, doubling) and
    is registered once the old session ran out and was fenced. Leadership moves then, not at
    the restart."""
    c = Cluster(brokers=3, config={"controller_mode": "kraft"})
    c.advance(5000)
    node = _node(c, c.controller)
    c.crash(1)
    last = node.last_contact[1]
    c.advance(1000)
    c.restart(1)
    c.advance(2000)
    assert c.leader == 1 and node.brokers[1].incarnation == 0
    c.advance(10000)
    (fenced,) = c.trace.of_kind("broker_fenced")
    assert fenced.time_ms == last + c.config.broker_session_timeout_ms + 1
    assert c.leader == 2 and node.brokers[1].incarnation == 0
    c.advance(10000)  # the retries go 0.1, 0.2, 0.4 ... 6.4 s apart
    assert node.brokers[1].incarnation == 1 and not node.brokers[1].fenced


def test_a_fenced_broker_stays_fenced_until_it_has_applied_its_registration_record() -> None:
    """BrokerHeartbeatManager.calculateNextBrokerState: a fenced broker is unfenced only by a
    heartbeat whose currentMetadataOffset reaches its registration record (its broker epoch)."""
    node = _standalone_node()
    node.brokers[2] = BrokerInfo(5, fenced=True)
    ctx = Context(0, "c1")
    node.handle(ctx, 2, m.BrokerHeartbeat(2, 5, False, 4))
    (reply,) = [msg for _, msg, _ in ctx.sends if isinstance(msg, m.BrokerHeartbeatResponse)]
    assert reply.fenced and node.brokers[2].fenced
