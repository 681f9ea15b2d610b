"""Clients learn leaders from the brokers' metadata caches, never from the controller's own
state. In ZooKeeper mode only the controller's UpdateMetadata changes a broker's cache; in KRaft
the cache follows the metadata log the broker applied."""

from __future__ import annotations

from typing import Any

from kafkalab import Cluster, scenarios
from kafkalab.protocol.broker import Broker


def _caches(c: Cluster) -> dict[Any, tuple[int | None, int]]:
    return {
        b: actor.metadata_cache[c.tp]
        for b, actor in sorted(c.sim.actors.items(), key=str)
        if isinstance(actor, Broker)
    }


def _controller_cut_and_leader_crashed(*, client_reaches_controller: bool) -> Cluster:
    """The steps of ``np-controller-cut-from-brokers`` up to the heal: broker 1, the controller
    (no replica), loses every broker; leader 2 crashes; 18 s later the controller elects 3."""
    s = scenarios.get("np-controller-cut-from-brokers")
    c = s.cluster()
    if not client_reaches_controller:
        c.disconnect("client", 1)
    for step in s.steps:
        if step.kind == "produce" and step.args.get("value") == "m2":
            break
        scenarios.apply_step(c, step)
    return c


def test_with_the_controller_cut_from_every_broker_a_producer_gets_timeouts() -> None:
    """KafkaApis.handleUpdateMetadataRequest -> ReplicaManager.maybeUpdateMetadataCache is the
    only path into a ZooKeeper-mode broker's metadata cache (Kafka 0.10.2.2 KafkaApis.scala line
    193 and ReplicaManager.scala line 627; 3.7.0 KafkaApis.scala line 358 and ReplicaManager.scala
    line 1978); LeaderAndIsr (becomeLeaderOrFollower) does not touch it, and Metadata requests are
    answered from it (handleTopicMetadataRequest). With the controller cut from every broker, the
    brokers a producer can reach still name the crashed leader 2, so the producer keeps sending
    there and times out: never NOT_LEADER_OR_FOLLOWER, though the controller elected broker 3."""
    c = _controller_cut_and_leader_crashed(client_reaches_controller=False)
    assert c.leader == 3  # the controller's committed state
    assert _caches(c) == {1: (3, 1), 3: (2, 0), 4: (2, 0)}
    c.produce("m2")
    c.advance(c.config.request_timeout_ms + 1)
    c.produce("m3")
    c.advance(c.config.request_timeout_ms + 1)
    assert c.report().errors == {"m2": "REQUEST_TIMED_OUT", "m3": "REQUEST_TIMED_OUT"}
    sent_to = {e.data["values"][0]: e.data["leader"] for e in c.trace.of_kind("produce_result")}
    assert sent_to == {"m1": 2, "m2": 2, "m3": 2}
    c.heal()  # the held LeaderAndIsr and UpdateMetadata requests arrive
    assert _caches(c) == {1: (3, 1), 3: (3, 1), 4: (3, 1)}
    c.produce("m4")
    for _ in range(3):
        c.fetch(4)
    assert "m4" in c.report().acked


def test_the_controllers_own_broker_names_the_new_leader() -> None:
    """The controller sends UpdateMetadata to every live broker, its own included
    (ControllerBrokerRequestBatch.addUpdateMetadataRequestForBrokers, Kafka 0.8.0 to 3.x;
    ControllerChannelManager.startup adds every live broker, 3.7.0 line 72). A producer that
    asks broker 1 is sent to broker 3, which has not heard that it leads: NOT_LEADER_OR_FOLLOWER
    (the catalog's np-controller-cut-from-brokers)."""
    c = _controller_cut_and_leader_crashed(client_reaches_controller=True)
    c.produce("m2")
    assert c.report().errors == {"m2": "NOT_LEADER_OR_FOLLOWER"}


def test_a_kraft_brokers_cache_follows_the_metadata_it_applied() -> None:
    """In KRaft every broker applies every committed partition record to its metadata image
    (BrokerMetadataPublisher, KRaftMetadataCache; Kafka 3.7.0), a broker without a replica
    too; one cut from the controller quorum keeps the old leader until it catches up."""
    c = Cluster(brokers=4, replicas=[2, 3, 4], leader=2, config={"controller_mode": "kraft"})
    assert set(_caches(c).values()) == {(2, 0)}
    for node in ("c1", "c2", "c3"):
        c.disconnect(4, node)
    c.crash(2)
    c.advance(c.config.broker_session_timeout_ms + 1000)
    assert c.leader == 3
    caches = _caches(c)
    assert caches[1] == caches[3] == (3, c.leader_epoch) and caches[4] == (2, 0)
