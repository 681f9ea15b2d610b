"""What the exhaustive search finds from bare configs alone: the searches that take tens of
seconds each (a file of their own, so that make test runs them beside the rest).

Lesson 6b runs KIP-101's loss (with leader epochs on and off) and the divergence searches of 0.11
and 2.0, and Lesson 7 the acks=1 and unclean-election searches; nbval compares their stored
outputs, schedules and state counts included, on every make test."""

from __future__ import annotations

from typing import Any

import pytest

from kafkalab.errors import ConfigError
from kafkalab.explore import EXAMPLES, explore

SAFE = EXAMPLES["safe"]
DIVERGE: dict[str, Any] = dict(
    brokers=2,
    records=2,
    crashes=2,
    actions=("produce", "crash", "restart", "checkpoint", "elect"),
    invariants=["logs_agree_below_hw"],
)


def _kinds(steps: list[dict[str, Any]]) -> list[str]:
    return [next(iter(s)) for s in steps]


def test_kafka_0_10_as_shipped_diverges_after_two_process_crashes() -> None:
    """Unclean election on and no leader epochs (0.10's defaults): broker 2 leads after broker 1
    crashes and writes r2 where broker 1 holds r1; then broker 2 crashes, broker 1 returns and
    is elected from outside the ISR, and broker 2, back as a follower, truncates only to its HW
    and keeps r2. Breadth first, so no schedule of 8 steps or fewer diverges."""
    found = explore({"preset": "0.10"}, **DIVERGE, depth=9)
    v = found.violation
    assert v is not None and v.invariant == "logs_agree_below_hw" and len(v.steps) == 9
    assert v.report["divergent"] and v.report["unclean_elections"] == 1
    assert not any(isinstance(s.get("crash"), dict) for s in v.steps)  # no power loss
    assert found.complete and v.report["logs"] == {"1": ["r1"], "2": ["r2"]}


def test_the_safe_config_loses_a_record_only_when_every_replica_loses_power() -> None:
    """acks=all, min.insync.replicas=2, three brokers: Kafka acknowledges once the ISR holds a
    record in its page cache, before any fsync. Three power losses (every replica) lose it;
    with two, some replica still holds it."""
    alphabet = ("produce", "fetch", "power_loss")
    three = explore(SAFE, brokers=3, depth=8, records=1, crashes=3, actions=alphabet)
    v = three.violation
    assert v is not None and v.invariant == "no_acked_loss"
    assert _kinds(v.steps).count("crash") == 3
    assert all(s["crash"]["lose_unflushed"] for s in v.steps if "crash" in s)
    two = explore(SAFE, brokers=3, depth=8, records=1, crashes=2, actions=alphabet)
    assert two.violation is None and two.complete


def test_the_0_11_divergence_needs_kip_279_and_kafka_7415_together() -> None:
    """The 10-step schedule Lesson 6b's search finds for 0.11 with unclean election: broker 1,
    elected uncleanly with r1 from epoch 0, has recorded no epoch 2 (before KAFKA-7415) and
    answers "undefined" for epoch 1, so broker 2 keeps r2. KIP-279 alone (an answer naming its
    epoch) or KAFKA-7415 alone (the new leader records its epoch at once) leaves the logs
    divergent; both together, as in 2.0.1 and 2.1, truncate r2."""
    from kafkalab.config import make_config
    from kafkalab.explore import Replayer

    steps = [
        {"produce": "r1"},
        {"crash": 1},
        {"advance": 6000},
        {"produce": "r2"},
        {"restart": 1},
        {"checkpoint": 2},
        {"crash": 2},
        {"advance": 6000},
        {"restart": 2},
        {"sync": None},
    ]
    base = {"preset": "0.11", "unclean.leader.election.enable": True}
    for fixes, agree in (
        ({}, False),
        ({"kip279": True}, False),
        ({"leader_epoch_on_election": True}, False),
        ({"kip279": True, "leader_epoch_on_election": True}, True),
    ):
        cluster = Replayer(make_config({**base, **fixes}), 2, None).build(steps)
        broken = cluster.monitor.first_violation(["logs_agree_below_hw"])
        assert (broken is None) == agree, fixes
        assert cluster.logs() == ({1: ["r1"], 2: ["r1"]} if agree else {1: ["r1"], 2: ["r2"]})


def test_lesson_7s_unclean_election_loss_needs_two_session_timeouts() -> None:
    """Lesson 7, section 7: acks=all, min.insync.replicas 1, unclean election on. A broker
    restarted inside its previous session cannot register (KafkaZkClient.registerBroker,
    NODEEXISTS, 3.7.0), so no crash is undone at once: broker 2's session expires (the ISR
    shrinks to broker 1 and r1 is acknowledged), broker 1 crashes, broker 2 registers again, and
    at broker 1's expiry the controller elects broker 2 uncleanly (PartitionLeaderElection-
    Algorithms.offlinePartitionLeaderElection, 3.7.0)."""
    found = explore(
        {"acks": "all", "min.insync.replicas": 1, "unclean.leader.election.enable": True},
        brokers=2,
        depth=6,
        records=1,
        crashes=2,
        actions=("produce", "fetch", "crash", "restart", "expire"),
    )
    v = found.violation
    assert v is not None and v.invariant == "no_acked_loss"
    assert v.steps == [
        {"produce": "r1"},
        {"crash": 2},
        {"advance": 18000},
        {"crash": 1},
        {"restart": 2},
        {"advance": 18000},
    ]
    assert v.report["unclean_elections"] == 1 and found.states == 1434


def test_kip101_search_with_restarts_that_replace_the_session() -> None:
    """Lesson 6b's search takes KIP-101's liberty (a restarted broker registers at once beside the
    dedicated controller, where Kafka's KafkaZkClient.registerBroker would refuse it while the
    old session lives): it finds the seven-step loss, and the scenario it writes carries the
    liberty, so `kafkalab scenario run` replays it."""
    import yaml

    found = explore(
        {
            "preset": "0.10",
            "acks": "all",
            "min.insync.replicas": 1,
            "leader_epochs": False,
            "unclean.leader.election.enable": False,
        },
        brokers=2,
        depth=7,
        records=1,
        crashes=2,
        actions=("produce", "fetch", "crash", "restart", "expire"),
        restart_replaces_session=True,
        workers=1,
    )
    v = found.violation
    assert v is not None and v.invariant == "no_acked_loss" and len(v.steps) == 7
    assert {"restart": 2} in v.steps
    assert yaml.safe_load(v.scenario_yaml)["restart_replaces_session"] is True
    with pytest.raises(ConfigError, match="restart_replaces_session='yes' is not allowed"):
        explore({}, depth=1, restart_replaces_session="yes")  # type: ignore[arg-type]
