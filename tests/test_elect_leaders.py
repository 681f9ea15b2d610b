"""An operator's ElectLeaders request (`elect_leaders`), by release and controller mode.

Kafka's code: KIP-460 (KAFKA-8286, 121308cc7a2, 2.4.0) gave ElectLeaders an election type,
handled by KafkaController.processReplicaLeaderElection and onReplicaElection; a KRaft broker
answered it UNSUPPORTED_VERSION in 2.8.0 and 3.0.0 (KafkaApis.handleElectReplicaLeader,
requireZkOrThrow) and forwards it from 3.1.0 to ReplicationControlManager.electLeader
(KAFKA-13162, 7de8a93c7e1). KRaft read unclean.leader.election.enable only from 3.9
(KAFKA-12670, ConfigurationControlManager.uncleanLeaderElectionEnabledForTopic).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pytest

from kafkalab import scenarios
from kafkalab.config import make_config
from kafkalab.errors import ActionError, KafkalabError, ScenarioError
from kafkalab.protocol import messages as m
from kafkalab.sim.cluster import Cluster
from kafkalab.sim.timed import Fault, simulate


def _leaderless(mode: str, preset: str, **config: Any) -> Cluster:
    return leaderless({"controller_mode": mode, "preset": preset, **config})


def leaderless(settings: Mapping[str, Any]) -> Cluster:
    """Broker 1 leads alone (ISR [1]) with a record brokers 2 and 3 lack, then dies; broker 2
    comes back: the partition has no leader, and a live replica outside its ISR."""
    c = Cluster(3, config=settings)
    c.crash(2)
    c.crash(3)
    c.advance(40000)
    c.produce("m1")
    c.crash(1)
    c.restart(2)
    c.advance(20000)
    assert c.leader is None and c.isr == [1]
    return c


def _answers(c: Cluster) -> list[dict[str, str]]:
    return [e.data["results"] for e in c.trace.of_kind("elect_leaders_result")]


# ---- KRaft: refused before 3.1, run from 3.1 ------------------------------------------------


@pytest.mark.parametrize("kind", ["unclean", "preferred"])
def test_kraft_3_0_answers_unsupported_version_and_elects_nothing(kind: str) -> None:
    """KafkaApis.handleElectReplicaLeader (3.0.0) begins with
    metadataSupport.requireZkOrThrow(notYetSupported): a KRaft broker answers every ElectLeaders
    UNSUPPORTED_VERSION and forwards nothing, whatever its election type."""
    c = _leaderless("kraft", "3.0")
    c.elect_leaders(kind, partition=0)
    c.advance(1000)
    assert _answers(c) == [{"demo-0": m.UNSUPPORTED_VERSION}]
    assert c.leader is None and c.isr == [1]


def test_kraft_3_3_runs_an_unclean_request_with_the_setting_off() -> None:
    """ReplicationControlManager.electLeader (3.3.0) builds the change with
    PartitionChangeBuilder.Election.UNCLEAN for ElectionType.UNCLEAN: electAnyLeader picks the
    first acceptable replica outside the ISR, though unclean.leader.election.enable is false
    (and before 3.9 is not even read)."""
    c = _leaderless("kraft", "3.3")
    assert not c.config.unclean_leader_election_enable
    c.elect_leaders("unclean")
    c.advance(1000)
    assert _answers(c) == [{"demo-0": m.NONE}]
    assert (c.leader, c.isr) == (2, [2])
    changes = [e.data for e in c.trace.of_kind("partition_state") if e.data["leader"] == 2]
    assert changes and changes[0]["unclean"]


@pytest.mark.parametrize("preset", ["3.7", "4.0"])
def test_around_3_9_the_setting_alone_elects_only_from_3_9(preset: str) -> None:
    """KAFKA-12670 (3.9): before, ConfigurationControlManager.uncleanLeaderElectionEnabledForTopic
    returned false, so turning unclean.leader.election.enable on left the partition offline
    (3.7); from 3.9 maybeElectUncleanLeaders elects at its periodic check (4.0). In 3.7 an
    operator's unclean ElectLeaders still elects (ReplicationControlManager.electLeader, 3.7.0)."""
    c = _leaderless("kraft", preset)
    c.set_config({"unclean.leader.election.enable": True})
    c.advance(c.config.unclean_leader_election_interval_ms + 1000)
    if preset == "3.7":
        assert c.leader is None
        c.elect_leaders("unclean", partition=0)
        c.advance(1000)
        assert _answers(c) == [{"demo-0": m.NONE}]
    assert (c.leader, c.isr) == (2, [2])


# ---- the answers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "preset"), [("kraft", "3.3"), ("zk", "2.4"), ("dedicated", "3.7")]
)
def test_a_partition_with_a_live_leader_needs_no_unclean_election(mode: str, preset: str) -> None:
    """ELECTION_NOT_NEEDED: KRaft's electLeader when partition.hasLeader() (3.3.0); the
    ZooKeeper-era processReplicaLeaderElection (2.4.0) when the leader is alive. Asked for every
    partition, such partitions are left out of the answer (KafkaApis, electLeaders)."""
    c = Cluster(3, config={"controller_mode": mode, "preset": preset})
    c.elect_leaders("unclean", partition=0)
    c.elect_leaders("unclean")
    c.elect_leaders("preferred", partition=0)
    c.advance(1000)
    not_needed = {"demo-0": m.ELECTION_NOT_NEEDED}
    assert _answers(c) == [not_needed, {}, not_needed]
    assert c.leader == 1 and c.leader_epoch == 0


@pytest.mark.parametrize(("mode", "preset"), [("kraft", "3.3"), ("dedicated", "2.4")])
def test_no_live_replica_is_eligible_leaders_not_available(mode: str, preset: str) -> None:
    """ELIGIBLE_LEADERS_NOT_AVAILABLE: KRaft's electLeader when PartitionChangeBuilder finds no
    change (3.3.0); the ZooKeeper-era controller when onReplicaElection fails with
    StateChangeFailedException (2.4.0). The preferred replica down:
    PREFERRED_LEADER_NOT_AVAILABLE."""
    c = _leaderless(mode, preset)
    c.crash(2)
    c.advance(20000)
    c.elect_leaders("unclean", partition=0)
    c.elect_leaders("preferred", partition=0)
    c.advance(1000)
    assert _answers(c) == [
        {"demo-0": m.ELIGIBLE_LEADERS_NOT_AVAILABLE},
        {"demo-0": m.PREFERRED_LEADER_NOT_AVAILABLE},
    ]
    assert c.leader is None


# ---- ZooKeeper era: KIP-460 ----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["zk", "dedicated"])
def test_zk_2_4_elects_outside_the_isr_on_request_and_2_3_refuses_the_type(mode: str) -> None:
    """KIP-460 (2.4.0): onReplicaElection runs an unclean request with
    OfflinePartitionLeaderElectionStrategy(allowUnclean = true), whatever
    unclean.leader.election.enable says; 2.3 had no election type, so the step is refused."""
    old = _leaderless(mode, "2.3", unclean_leader_election_enable=False)
    with pytest.raises(
        ActionError, match=re.escape("election_type='unclean' is not allowed with preset '2.3'")
    ):
        old.elect_leaders("unclean")
    assert old.leader is None
    new = _leaderless(mode, "2.4", unclean_leader_election_enable=False)
    new.elect_leaders("unclean")
    assert _answers(new) == [{"demo-0": m.NONE}]
    assert (new.leader, new.isr) == (2, [2])


# ---- a learner's bad step, scenarios and timed schedules -------------------------------------


def test_an_unknown_election_type_names_the_value_and_what_is_allowed() -> None:
    c = Cluster(3)
    with pytest.raises(
        ActionError,
        match=re.escape("election_type='dirty' is not allowed: use preferred or unclean"),
    ):
        c.elect_leaders("dirty")
    text = "name: t\nbrokers: 3\nleader: 1\nsteps:\n  - elect_leaders: dirty\n"
    with pytest.raises(ScenarioError, match="election_type='dirty' is not allowed"):
        scenarios.parse(text, "bad.yaml")


def test_a_scenario_step_elects_uncleanly_in_kraft_3_3() -> None:
    """The `elect_leaders` step as a scenario writes it, upper case as kafka-leader-election.sh's
    --election-type UNCLEAN."""
    steps = [
        "crash: 2",
        "crash: 3",
        "advance: 40000",
        "produce: m1",
        "crash: 1",
        "restart: 2",
        "advance: 20000",
        "check: {leader: null}",
        "elect_leaders: UNCLEAN",
        "advance: 1000",
    ]
    text = "name: t\nbrokers: 3\nleader: 1\nconfig: {controller_mode: kraft, preset: '3.3'}\n"
    text += "steps:\n" + "".join(f"  - {s}\n" for s in steps)
    text += "expect: {leader: 2, isr: [2], unclean_elections: 1}\n"
    assert scenarios.run(scenarios.parse(text)).ok


@pytest.mark.parametrize(("preset", "elected"), [("3.0", 0), ("3.3", 1)])
def test_a_timed_schedule_may_ask_for_an_unclean_election(preset: str, elected: int) -> None:
    """A Fault of action elect_leaders: the leader and its followers crash, one follower comes
    back, and the operator's request elects it from 3.1 (KAFKA-13162), not in 3.0."""
    config = make_config({"controller_mode": "kraft", "preset": preset})
    faults = [
        Fault(2000, "crash", (2,)),
        Fault(2000, "crash", (3,)),
        Fault(40000, "crash", (1,)),
        Fault(41000, "restart", (2,)),
        Fault(70000, "elect_leaders", ("unclean",)),
    ]
    result = simulate(config, seed=1, brokers=3, duration_ms=80000, settle_ms=5000, faults=faults)
    assert result.unclean_elections == elected


def unclean_request(settings: Mapping[str, Any]) -> object:
    """An operator asks for an unclean election of the leaderless partition: the answers, the
    leader and the ISR after a second, or the refusal of the step."""
    c = leaderless(settings)
    try:
        c.elect_leaders("unclean")
    except KafkalabError as err:
        return f"refused: {err}"
    c.advance(1000)
    return _answers(c), c.leader, c.isr
