"""The producer client: retries, in-flight requests, idempotence, and the properties of
KIP-98 under random message loss and leader failovers."""

from __future__ import annotations

from typing import Any

import pytest

from kafkalab import ActionError, Cluster, make_config
from kafkalab.sim.timed import Workload, random_faults, simulate

CLIENT = {"max.in.flight.requests.per.connection": 5, "request.timeout.ms": 3000}


def _sweep(idempotence: bool, seeds: range) -> tuple[int, int, int, list[str]]:
    config = make_config({"min.insync.replicas": 2, "enable.idempotence": idempotence})
    duplicates = out_of_order = acked = 0
    problems = []
    for seed in seeds:
        faults = random_faults(seed, 3, 30000, mean_interval_ms=6000)
        r = simulate(
            config,
            seed=seed,
            duration_ms=30000,
            settle_ms=60000,
            workload=Workload(client=CLIENT),
            loss_rate=0.01,
            faults=faults,
            check_invariants=idempotence,
        )
        duplicates += r.duplicates
        out_of_order += r.out_of_order
        acked += r.acked
        if not r.safe:
            problems.append(r.replay_hint())
    return duplicates, out_of_order, acked, problems


def test_idempotence_never_duplicates_or_reorders_under_loss_and_failovers() -> None:
    duplicates, out_of_order, acked, problems = _sweep(True, range(10))
    assert (duplicates, out_of_order, problems) == (0, 0, [])
    assert acked > 1000, "the sweep must acknowledge enough records to mean something"


def test_without_idempotence_retries_duplicate_and_reorder() -> None:
    duplicates, out_of_order, _, _ = _sweep(False, range(10))
    assert duplicates > 0 and out_of_order > 0


def test_the_client_gets_a_producer_id_and_numbers_its_records() -> None:
    c = Cluster(brokers=3, leader=1)
    c.producer("p")
    c.produce(values=["a", "b"], producer="p")
    c.produce("c", producer="p")
    (pid_event,) = c.trace.of_kind("producer_id")
    assert pid_event.data["producer_epoch"] == 0
    records = c.sim.actors[1].partitions[c.tp].log.records
    assert [(r.value, r.sequence, r.base_sequence) for r in records] == [
        ("a", 0, 0),
        ("b", 1, 0),
        ("c", 2, 2),
    ]
    assert {r.producer_id for r in records} == {pid_event.data["producer_id"]}


def test_a_client_retries_until_the_leader_is_back() -> None:
    c = Cluster(brokers=2, leader=1, config={"min.insync.replicas": 1})
    c.producer("p", **{"retry.backoff.ms": 500, "request.timeout.ms": 2000})
    c.crash(1)
    c.produce("m1", producer="p")
    c.advance(c.config.zookeeper_session_timeout_ms + 5000)  # broker 2 takes over
    assert c.leader == 2 and c.report().acked == ["m1"]
    retries = c.trace.of_kind("produce_retry")
    assert retries and {e.data["error"] for e in retries} <= {
        "REQUEST_TIMED_OUT",
        "NOT_LEADER_OR_FOLLOWER",
    }


def test_delivery_timeout_ends_the_retries() -> None:
    c = Cluster(brokers=1)
    c.producer("p", **{"delivery.timeout.ms": 5000, "request.timeout.ms": 1000})
    c.crash(1)
    c.produce("m1", producer="p")
    c.advance(10000)
    assert c.report().errors == {"m1": "DELIVERY_TIMEOUT"}


def test_an_unanswered_request_fails_at_its_delivery_timeout_not_after() -> None:
    """Sender.getExpiredInflightBatches: a batch still waiting for its answer when
    delivery.timeout.ms has passed fails then, with a timeout, instead of a request timeout
    later."""
    c = Cluster(brokers=3, replication="auto")
    c.producer("p", **{"delivery.timeout.ms": 3500, "request.timeout.ms": 1000})
    c.disconnect("client", 1)  # every attempt to the leader goes unanswered
    c.produce("x", producer="p")
    c.advance(5000)
    (result,) = c.trace.of_kind("produce_result")
    assert (result.time_ms, result.data["error"]) == (3500, "DELIVERY_TIMEOUT")
    assert [e.data["error"] for e in c.trace.of_kind("produce_retry")] == ["REQUEST_TIMED_OUT"] * 3


def test_producer_settings_are_checked() -> None:
    c = Cluster(brokers=1)
    with pytest.raises(ActionError, match="did you mean 'max.in.flight"):
        c.producer("p", **{"max.inflight.requests.per.connection": 5})
    with pytest.raises(ActionError, match="needs acks=all"):
        c.producer("q", acks=1, **{"enable.idempotence": True})
    c.producer("r")
    with pytest.raises(ActionError, match="own settings"):
        c.produce("m", producer="r", acks=1)
    with pytest.raises(ActionError, match="not allowed"):
        c.producer("r")


def test_a_client_whose_first_metadata_had_no_leader_asks_again_when_it_has_records() -> None:
    """A named producer made at time 0 learns the metadata before the first election, so it
    knows no leader. A batch sent later must make it ask again (Kafka 3.7's
    Sender.sendProducerData requests a metadata update for topics with an unknown leader),
    not wait forever."""
    c = Cluster(brokers=3, mode="timed", seed=1)
    c.producer("app", acks="all")
    c.at(1000, "produce", values=["p1"], producer="app")
    c.run(until_ms=5000)
    metadata = [
        e.time_ms
        for e in c.trace.of_kind("send")
        if e.node == "app" and type(e.data["msg"]).__name__ == "MetadataRequest"
    ]
    assert metadata[0] == 0 and any(t >= 1000 for t in metadata)
    results = c.trace.of_kind("produce_result")
    assert [(r.data["values"], r.data["error"]) for r in results] == [(["p1"], "NONE")]


# ---- enable.auto.commit: Kafka's default -------------------------------------------------------


def _commits(c: Cluster) -> list[dict[str, int]]:
    return [e.data["offsets"] for e in c.trace.of_kind("offset_commit")]


@pytest.mark.parametrize(("settings", "commits"), [({}, 1), ({"enable.auto.commit": False}, 0)])
def test_a_consumer_with_a_group_commits_by_itself_unless_told_not_to(
    settings: dict[str, Any], commits: int
) -> None:
    # ConsumerConfig: enable.auto.commit defaults to true; without a group.id the consumer cannot
    # commit, and unset means false (maybeOverrideEnableAutoCommit, KIP-289).
    c = Cluster(brokers=2, groups=["g"], replication="auto")
    c.produce("m1")
    c.consumer("app", group="g", **{"auto.offset.reset": "earliest", **settings})
    c.poll("app")
    c.advance(6_000)  # past auto.commit.interval.ms
    c.poll("app")
    assert len(_commits(c)) == commits


def test_a_consumer_without_a_group_does_not_auto_commit() -> None:
    c = Cluster(brokers=2, groups=["g"], replication="auto")
    c.consumer("reader", **{"auto.offset.reset": "earliest"})
    c.advance(6_000)
    c.poll("reader")
    assert _commits(c) == []
    with pytest.raises(ActionError, match="enable.auto.commit=true needs a group.id"):
        c.consumer("other", **{"enable.auto.commit": True})
    with pytest.raises(ActionError, match="enable.auto.commit='yes' is not allowed"):
        c.consumer("third", group="g", **{"enable.auto.commit": "yes"})
