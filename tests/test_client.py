"""The producer client: retries, in-flight requests, idempotence, and the properties of
KIP-98 under random message loss and leader failovers."""

from __future__ import annotations

from typing import Any

import pytest

from kafkalab import ActionError, Cluster, make_config
from kafkalab.protocol.actor import ConnectionClosed, Context
from kafkalab.protocol.consumer import ConsumerSettings, KafkaConsumer, Poll
from kafkalab.protocol.internal_topics import offsets_partition, txn_partition
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
    # a broker reads one request of a connection at a time (SocketServer's mute), so an acks=all
    # request waiting for its followers holds the producer's next ones
    assert acked > 500, "the sweep must acknowledge enough records to mean something"


def test_without_idempotence_retries_duplicate_and_reorder() -> None:
    duplicates, out_of_order, _, _ = _sweep(False, range(10))
    assert duplicates > 0 and out_of_order > 0


def test_the_client_gets_a_producer_id_and_numbers_its_records() -> None:
    """The broker reads "c" once it has answered ["a", "b"] (SocketServer mutes the connection
    until the response is sent): the followers fetch, so that acks=all is answered."""
    c = Cluster(brokers=3, leader=1)
    c.producer("p")
    c.produce(values=["a", "b"], producer="p")
    c.produce("c", producer="p")
    for follower in (2, 3, 2, 3):
        c.fetch(follower)
    (pid_event,) = c.trace.of_kind("producer_id")
    assert pid_event.data["producer_epoch"] == 0
    records = c.sim.actors[1].partitions[c.tp].log.records
    assert [(r.value, r.sequence, r.base_sequence) for r in records] == [
        ("a", 0, 0),
        ("b", 1, 0),
        ("c", 2, 2),
    ]
    assert {r.producer_id for r in records} == {pid_event.data["producer_id"]}


def test_a_client_waits_until_the_leader_is_back() -> None:
    """Every connection to the crashed leader is refused, so nothing is sent to it and no attempt
    is used (Sender.sendProducerData drains nothing for a node that is not ready): the batch
    waits for the metadata to name broker 2, and lands at its first attempt."""
    c = Cluster(brokers=2, leader=1, config={"min.insync.replicas": 1})
    c.producer("p", **{"retry.backoff.ms": 500, "request.timeout.ms": 2000, "retries": 0})
    c.crash(1)
    c.produce("m1", producer="p")
    c.advance(c.config.zookeeper_session_timeout_ms + 5000)  # broker 2 takes over
    assert c.leader == 2 and c.report().acked == ["m1"]
    assert c.trace.of_kind("produce_retry") == []
    (result,) = c.trace.of_kind("produce_result")
    assert result.data["attempts"] == 1
    refused = [e for e in c.trace.of_kind("drop") if e.data["reason"] == "refused"]
    assert refused and {e.data["dst"] for e in refused} == {1}


def test_delivery_timeout_ends_the_retries() -> None:
    c = Cluster(brokers=1)
    c.producer("p", **{"delivery.timeout.ms": 5000, "request.timeout.ms": 1000})
    c.crash(1)
    c.produce("m1", producer="p")
    c.advance(10000)
    assert c.report().errors == {"m1": "DELIVERY_TIMEOUT"}


def test_an_unanswered_request_fails_at_its_delivery_timeout_not_after() -> None:
    """Sender.getExpiredInflightBatches: a batch waiting when delivery.timeout.ms has passed
    fails then, with a timeout. Its request timed out first, at 1 s, which closed the connection
    (NetworkClient.handleTimedOutRequests, 3.7.0); over the cut link the new connection stays
    CONNECTING for socket.connection.setup.timeout.ms (10 s, KIP-601), so x is sent once."""
    c = Cluster(brokers=3, replication="auto")
    c.producer("p", **{"delivery.timeout.ms": 3500, "request.timeout.ms": 1000})
    c.disconnect("client", 1)  # every attempt to the leader goes unanswered
    c.produce("x", producer="p")
    c.advance(5000)
    (result,) = c.trace.of_kind("produce_result")
    assert (result.time_ms, result.data["error"]) == (3500, "DELIVERY_TIMEOUT")
    assert [e.data["error"] for e in c.trace.of_kind("produce_retry")] == ["REQUEST_TIMED_OUT"]
    assert [e.time_ms for e in c.trace.of_kind("produce")] == [0]
    assert [(e.time_ms, e.data["node"]) for e in c.trace.of_kind("client_disconnect")] == [
        (1001, 1)
    ]


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


# ---- a broker whose process dies: the connection breaks --------------------------------------


def _leader_dies_with_a_write_in_flight(power_loss: bool, producer: str | None) -> Cluster:
    """Leader 1 (ZooKeeper mode) waits for its paused followers to acknowledge m1 when it dies
    at 2 s: its process (its host resets the connections) or its power (nobody is told)."""
    c = Cluster(
        brokers=3,
        mode="timed",
        leader=1,
        config={"min.insync.replicas": 2, "controller_mode": "zk"},
    )
    if producer is not None:
        c.producer(producer, acks="all")
    c.advance(1000)
    c.pause(2)
    c.pause(3)
    if producer is None:
        c.produce("m1", acks="all")
    else:
        c.produce("m1", producer=producer)
    c.advance(1000)
    c.crash(1, lose_unflushed=power_loss)
    c.resume(2)
    c.resume(3)
    c.advance(40000)
    return c


def test_a_producer_retries_at_once_when_its_leaders_process_dies() -> None:
    """NetworkClient fails the request in flight at once (handleDisconnections): Sender completes
    the batch as NETWORK_EXCEPTION, retriable (the same from 0.8.2.2 to 3.6.0). Its next attempt
    waits for a connection: the dead broker's host refuses every new one, and Sender drains
    nothing for a node that is not ready, so the retry goes to broker 2 once the metadata names
    it. After a power loss nothing breaks the connection: the retry waits for
    request.timeout.ms (30 s after the send at 1.1 s)."""
    c = _leader_dies_with_a_write_in_flight(False, "p")
    first = c.trace.of_kind("produce_retry")[0]
    assert (first.data["error"], first.time_ms) == ("NETWORK_EXCEPTION", 2005)
    second = [e for e in c.trace.of_kind("produce") if e.data["attempt"] == 2][0]
    sends = [e for e in c.trace.of_kind("send") if e.node == "p" and e.time_ms >= second.time_ms]
    assert type(sends[0].data["msg"]).__name__ == "ProduceRequest" and sends[0].data["dst"] == 2
    assert c.leader == 2 and c.report().acked == ["m1"]
    c = _leader_dies_with_a_write_in_flight(True, "p")
    first = c.trace.of_kind("produce_retry")[0]
    assert first.data["error"] == "REQUEST_TIMED_OUT" and first.time_ms > 31_000
    assert c.report().acked == ["m1"]


def test_the_bare_producer_hears_of_the_disconnection_at_once() -> None:
    """The bare producer has no retries: Kafka's callback gets NetworkException at the crash,
    not a timeout 30 s later (a power loss still times out)."""
    c = _leader_dies_with_a_write_in_flight(False, None)
    (result,) = c.trace.of_kind("produce_result")
    assert (result.data["error"], result.time_ms) == ("NETWORK_EXCEPTION", 2004)
    c = _leader_dies_with_a_write_in_flight(True, None)
    (result,) = c.trace.of_kind("produce_result")
    assert (result.data["error"], result.time_ms) == ("REQUEST_TIMED_OUT", 31001)


def _consumer_across_a_leader_crash(power_loss: bool) -> Cluster:
    c = Cluster(brokers=3, mode="timed", leader=1, config={"controller_mode": "zk"})
    c.consumer("c", **{"auto.offset.reset": "earliest"})
    c.advance(1000)
    c.produce("m1", acks="all")
    c.advance(1000)
    c.poll("c")
    c.advance(500)
    c.poll("c")  # its fetch is on the way when the leader dies
    c.crash(1, lose_unflushed=power_loss)
    c.advance(25000)  # broker 2 leads
    c.produce("m2", acks="all")
    c.advance(1000)
    for _ in range(3):
        c.poll("c")
        c.advance(500)
    return c


def test_a_consumer_learns_the_new_leader_when_its_leaders_process_dies() -> None:
    """The consumer's fetch fails at once (Fetcher's onFailure) and NetworkClient asks for a
    metadata update; a later fetch to the dead broker is refused the same way, so the consumer
    finds broker 2 and reads m2. After a power loss nothing tells it (kafkalab's consumer has no
    request timeout): it keeps asking broker 1."""
    c = _consumer_across_a_leader_crash(False)
    errors = [(e.time_ms, e.data["error"]) for e in c.trace.of_kind("consumer_error")]
    assert errors[0] == (2504, "NETWORK_EXCEPTION")
    read = [v for e in c.trace.of_kind("consumer_records") for _, v, _ in e.data["records"]]
    assert c.leader == 2 and read == ["m1", "m2"]
    c = _consumer_across_a_leader_crash(True)
    assert c.trace.of_kind("consumer_error") == []
    read = [v for e in c.trace.of_kind("consumer_records") for _, v, _ in e.data["records"]]
    assert read == ["m1"]


def _commit_across_a_coordinator_crash(power_loss: bool) -> list[tuple[int, Any]]:
    c = Cluster(
        brokers=3,
        mode="timed",
        replication="auto",
        transactional_ids=["tx"],
        config={"controller_mode": "zk", "min.insync.replicas": 2},
    )
    c.advance(1000)
    coordinator = c.partition_states()[txn_partition("tx")].leader
    c.producer("p", transactional_id="tx")
    c.advance(1000)
    c.begin("p")
    c.advance(100)
    c.produce("a", producer="p")
    c.advance(1000)
    c.commit("p")  # EndTxn is on the way when the coordinator dies
    c.crash(coordinator, lose_unflushed=power_loss)
    c.advance(60000)
    ends = [e for e in c.trace.of_kind("send") if type(e.data["msg"]).__name__ == "EndTxnRequest"]
    assert ends[0].data["dst"] == coordinator
    done = [e.time_ms for e in c.trace.of_kind("txn_client") if e.data["op"] == "commit"]
    return [(e.time_ms, e.data["dst"]) for e in ends[1:2]] + [(done[0], "committed")]


def test_a_transactional_call_is_retried_at_once_when_its_coordinators_process_dies() -> None:
    """TxnRequestHandler.onComplete: a disconnected EndTxn looks the coordinator up again and is
    sent after retry.backoff.ms, so the commit ends once a new coordinator is elected (the
    ZooKeeper session, 18 s), not a request timeout later; after a power loss the retry waits
    for request.timeout.ms."""
    (retry_ms, _), (committed_ms, _) = _commit_across_a_coordinator_crash(False)
    assert retry_ms < 3300 and committed_ms < 20_000
    (retry_ms, _), (committed_ms, _) = _commit_across_a_coordinator_crash(True)
    assert retry_ms > 33_000 and committed_ms > 33_000


def test_a_commit_fails_and_forgets_its_coordinator_when_the_coordinator_dies() -> None:
    """AbstractCoordinator's CoordinatorResponseHandler.onFailure: a DisconnectException marks
    the coordinator unknown (coordinatorDead until 1.1, markCoordinatorUnknown since)."""
    consumer = KafkaConsumer("c", ConsumerSettings(group_id="g"), (1, 2, 3), ("t-0",))
    group_tp = offsets_partition("g")
    consumer.leaders = {"t-0": 2, group_tp: 1}
    consumer._offsets_known = True
    consumer.positions = {"t-0": 4}
    ctx = Context(100, "c")
    consumer.handle(ctx, None, Poll("commit"))
    assert not consumer.idle and consumer.awaits_answer_from(1)
    ctx = Context(110, "c")
    consumer.handle(ctx, 1, ConnectionClosed(1, 105))
    assert consumer.idle and not consumer.awaits_answer_from(1)
    assert group_tp not in consumer.leaders
    assert ("consumer_commit", {"consumer": "c", "group": "g", "error": "NETWORK_EXCEPTION"}) in (
        ctx.events
    )
