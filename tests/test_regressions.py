"""Runs that once broke an invariant, kept as fixtures, and the rules their fixes added."""

from __future__ import annotations

import pytest

from kafkalab import Cluster, make_config
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.broker import Broker
from kafkalab.protocol.log import Disk
from kafkalab.sim.timed import Workload, random_faults, simulate

# (controller mode, seed): found by a 300-run sweep with crashes, cuts, pauses and 0.2 % loss.
FAILED_ONCE = [("zk", 135), ("zk", 174), ("zk", 197), ("kraft", 144)]


@pytest.mark.parametrize(("mode", "seed"), FAILED_ONCE, ids=[f"{m}-{s}" for m, s in FAILED_ONCE])
def test_seeds_that_once_failed_are_safe(mode: str, seed: int) -> None:
    config = make_config({"min.insync.replicas": 2, "controller_mode": mode})
    controllers = ("c1", "c2", "c3") if mode == "kraft" else ()
    faults = random_faults(
        seed,
        3,
        30000,
        mean_interval_ms=2500,
        kinds=("crash", "disconnect", "pause"),
        controllers=controllers,
    )
    result = simulate(
        config,
        seed=seed,
        duration_ms=30000,
        settle_ms=40000,
        faults=faults,
        check_invariants=True,
        loss_rate=0.002,
    )
    assert result.safe, result.replay_hint()


def _broker() -> Broker:
    return Broker(1, make_config({"controller_mode": "zk"}), {"t-0": Disk()}, auto_fetch=False)


def test_a_request_for_an_older_incarnation_is_ignored() -> None:
    b = _broker()
    b.handle(Context(0, 1), "zk", m.ZkRegistered(5, 2, 1))
    ctx = Context(1, 1)
    b.handle(ctx, 2, m.LeaderAndIsr("t-0", 1, 1, 0, (1,), 0, (1,), broker_epoch=4))
    assert b.partitions["t-0"].role is None
    assert [k for k, _ in ctx.events] == ["stale_broker_epoch"]


def test_a_request_before_registration_waits_for_it() -> None:
    b = _broker()
    b.handle(Context(0, 1), 2, m.LeaderAndIsr("t-0", 1, 1, 0, (1,), 0, (1,), broker_epoch=5))
    assert b.partitions["t-0"].role is None, "not registered yet: nothing is handled"
    b.handle(Context(1, 1), "zk", m.ZkRegistered(5, 2, 1))
    assert b.partitions["t-0"].role == "leader", "handled once the broker is registered"


def test_a_controller_restarted_inside_its_session_is_replaced_only_at_expiry() -> None:
    """KafkaZkClient.registerBroker (3.7): the restarted controller's /brokers/ids znode still
    belongs to its old session (NODEEXISTS), so its start-up fails; /controller goes only when
    that session expires, and then another broker takes over and the restart succeeds."""
    c = Cluster(brokers=3, config={"controller_mode": "zk"})
    assert c.controller == 1
    c.crash(1)
    c.restart(1)  # its old session has not expired: start-up aborted
    assert 1 not in c.running() and c.controller_epoch == 1
    c.advance(c.config.zookeeper_session_timeout_ms)
    assert c.controller not in (None, 1) and c.controller_epoch == 2
    assert c.sim.actors[c.controller].controller.active
    c.restart(1)
    assert 1 in c.running()


def test_a_paused_former_controller_is_not_taken_for_the_active_one() -> None:
    """kraft seed 340 with the idempotent client: a controller paused while active still
    believes it is; the cluster's view must follow the active node of the highest epoch."""
    config = make_config({"min.insync.replicas": 2, "controller_mode": "kraft"})
    workload = Workload(
        client={"max.in.flight.requests.per.connection": 5, "request.timeout.ms": 3000}
    )
    faults = random_faults(
        340,
        3,
        30000,
        mean_interval_ms=3000,
        kinds=("crash", "disconnect", "pause"),
        controllers=("c1", "c2", "c3"),
    )
    result = simulate(
        config,
        seed=340,
        duration_ms=30000,
        settle_ms=40000,
        faults=faults,
        check_invariants=True,
        loss_rate=0.005,
        workload=workload,
    )
    assert result.safe and result.duplicates == 0 and result.out_of_order == 0
