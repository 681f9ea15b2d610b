"""The three control planes, through the facade: who the controller is and its epoch, what the
controller nodes are called, how a controller node crashes and restarts, and where each mode
keeps the partitions' committed state."""

from __future__ import annotations

import inspect

import pytest

from kafkalab.errors import ActionError
from kafkalab.sim import cluster as cluster_module
from kafkalab.sim.cluster import Cluster, ReplicaView
from kafkalab.sim.control import (
    CONTROLLER_NODES,
    DedicatedControlPlane,
    KRaftControlPlane,
    ZooKeeperControlPlane,
)
from kafkalab.sim.views import ReplicaView as ViewsReplicaView

MODES = {
    "dedicated": DedicatedControlPlane,
    "zk": ZooKeeperControlPlane,
    "kraft": KRaftControlPlane,
}


def _cluster(mode: str, **kwargs: object) -> Cluster:
    return Cluster(3, config={"controller_mode": mode}, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_cluster_picks_the_control_plane_its_mode_names(mode: str) -> None:
    assert type(_cluster(mode).control) is MODES[mode]


def test_the_facade_has_no_branch_on_the_controller_mode() -> None:
    source = inspect.getsource(cluster_module)
    assert "controller_mode" not in source
    assert ".kraft" not in source


def test_replica_view_is_one_class_whether_imported_from_the_facade_or_the_views() -> None:
    assert ReplicaView is ViewsReplicaView


# ---- controller identity and epoch -----------------------------------------------------------


def test_the_dedicated_controller_is_one_node_in_epoch_1() -> None:
    c = _cluster("dedicated")
    assert (c.controller, c.controller_epoch) == ("controller", 1)
    c.crash(1)
    c.advance(30000)
    assert (c.controller, c.controller_epoch) == ("controller", 1)


def test_in_zk_mode_a_broker_is_the_controller_and_a_failover_bumps_the_epoch() -> None:
    c = _cluster("zk")
    first = c.controller
    assert first in c.broker_ids and c.controller_epoch == 1
    c.crash(first)
    c.advance(30000)
    assert c.controller in c.broker_ids and c.controller != first
    assert c.controller_epoch == 2


def test_in_kraft_mode_a_quorum_node_is_the_active_controller() -> None:
    c = _cluster("kraft")
    assert c.controller in CONTROLLER_NODES
    assert c.controller_epoch >= 1
    assert c.state()["controller"] == c.controller


# ---- node names ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["dedicated", "zk"])
def test_active_names_a_kraft_controller_only(mode: str) -> None:
    c = _cluster(mode)
    with pytest.raises(ActionError, match=f"has controller_mode {mode}"):
        c.crash("active")
    with pytest.raises(ActionError, match="does not exist: use a broker id \\(1..3\\), zk or"):
        c.pause("c1")


@pytest.mark.parametrize("mode", ["dedicated", "zk"])
def test_zk_and_controller_name_the_zookeeper_host(mode: str) -> None:
    c = _cluster(mode)
    c.disconnect(1, "controller")
    links = [e.data for e in c.trace.of_kind("link")]
    assert links == [{"a": 1, "b": "zk", "up": False}]


def test_in_kraft_mode_zk_names_the_whole_quorum() -> None:
    c = _cluster("kraft")
    c.disconnect("zk", 2)
    links = [(e.data["a"], e.data["b"]) for e in c.trace.of_kind("link")]
    assert links == [(node, 2) for node in CONTROLLER_NODES]
    with pytest.raises(ActionError, match="use a broker id \\(1..3\\), c1, c2, c3 or client"):
        c.pause("c9")


def test_a_kraft_controller_node_can_be_paused_by_name() -> None:
    c = _cluster("kraft")
    c.pause("active")
    assert len(c.sim.paused) == 1 and next(iter(c.sim.paused)) in CONTROLLER_NODES


# ---- crash and restart of a controller node ---------------------------------------------------


def test_crashing_the_active_kraft_controller_moves_the_quorum_on() -> None:
    c = _cluster("kraft")
    first, epoch = c.controller, c.controller_epoch
    c.crash("active")
    assert list(c.control.stopped) == [first] and first not in c.sim.actors
    c.advance(5000)
    assert c.controller not in (None, first) and c.controller_epoch > epoch
    with pytest.raises(ActionError, match=f"stopped controller nodes are {first}"):
        c.restart("active")
    c.restart(first)
    assert first in c.sim.actors and not c.control.stopped
    restarts = [e.node for e in c.trace.of_kind("restart")]
    assert restarts == [first]


def test_a_controller_node_crashes_and_restarts_once() -> None:
    c = _cluster("kraft")
    standby = next(n for n in CONTROLLER_NODES if n != c.controller)
    with pytest.raises(ActionError, match=f"controller node {standby} is already running"):
        c.restart(standby)
    c.crash(standby)
    with pytest.raises(ActionError, match=f"controller node {standby} is not running"):
        c.crash(standby)


@pytest.mark.parametrize("mode", ["dedicated", "zk"])
def test_without_kraft_c1_is_no_node(mode: str) -> None:
    c = _cluster(mode)
    with pytest.raises(ActionError, match="broker 'c1' does not exist"):
        c.crash("c1")
    with pytest.raises(ActionError, match="broker 'c1' does not exist"):
        c.restart("c1")


@pytest.mark.parametrize("kind", ["producer", "consumer"])
@pytest.mark.parametrize("name", [*CONTROLLER_NODES, "active"])
def test_in_kraft_mode_a_client_may_not_take_a_controller_node_name(kind: str, name: str) -> None:
    """A KRaft controller node keeps its name while crashed (it restarts under it), so a client
    under that name is refused, crashed node or not, with the reason and the names to avoid."""
    c = _cluster("kraft")
    c.crash("c1")
    with pytest.raises(ActionError) as err:
        getattr(c, kind)(name)
    message = str(err.value)
    assert f"{kind} name {name!r} is not allowed" in message
    assert "name the KRaft controller nodes" in message
    assert "other than c1, c2, c3, active" in message
    c.restart("c1")


@pytest.mark.parametrize("mode", ["dedicated", "zk"])
def test_without_kraft_a_client_may_be_called_c1(mode: str) -> None:
    c = _cluster(mode)
    c.producer("c1")
    c.consumer("c2")
    assert {"c1", "c2"} <= set(c.sim.actors)


# ---- partition state -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", sorted(MODES))
def test_every_partition_starts_led_by_its_first_replica(mode: str) -> None:
    c = _cluster(mode, partitions=3)
    states = c.partition_states()
    assert sorted(states) == ["demo-0", "demo-1", "demo-2"]
    for tp, st in states.items():
        assert st.leader == c.assignment[tp][0] and st.leader_epoch == 0
        assert list(st.isr) == c.assignment[tp] == list(st.replicas)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_leader_crash_is_committed_as_a_new_leader_and_a_smaller_isr(mode: str) -> None:
    c = _cluster(mode, leader=1)
    c.crash(1)
    c.advance(30000)
    st = c.partition_state
    assert st.leader in (2, 3) and st.leader_epoch >= 1
    assert 1 not in st.isr
    assert c.state()["partitions"]["demo-0"]["leader"] == st.leader


def test_kraft_partition_state_survives_a_controller_failover() -> None:
    c = _cluster("kraft", leader=1)
    c.crash(1)
    c.advance(20000)
    before = c.partition_state
    c.crash("active")
    c.advance(5000)
    assert c.partition_state.leader == before.leader
    assert c.partition_state.leader_epoch == before.leader_epoch


def test_with_every_kraft_node_down_the_state_is_read_from_their_disks() -> None:
    c = _cluster("kraft")
    for node in CONTROLLER_NODES:
        c.crash(node)
    assert c.controller is None
    assert c.partition_state.leader == 1 and c.controller_epoch >= 1


def test_set_config_reaches_every_kraft_controller_node() -> None:
    c = _cluster("kraft")
    c.set_config({"unclean.leader.election.enable": True})
    for node in CONTROLLER_NODES:
        assert c.sim.actors[node].config.unclean_leader_election_enable
