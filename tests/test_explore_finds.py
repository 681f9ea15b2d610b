"""What the exhaustive search finds from bare configs alone: the searches that take tens of
seconds each (a file of their own, so that make test runs them beside the rest)."""

from __future__ import annotations

from typing import Any

from kafkalab.explore import CRASH_ACTIONS, EXAMPLES, explore

KIP_101 = EXAMPLES["kip101"]
CRASHES = CRASH_ACTIONS
SAFE = EXAMPLES["safe"]


def _kinds(steps: list[dict[str, Any]]) -> list[str]:
    return [next(iter(s)) for s in steps]


def test_kip_101_loss_is_found_from_the_config_and_leader_epochs_fix_it() -> None:
    """Without leader epochs a restarted follower truncates to its HW and drops a record the
    leader already acknowledged; it then becomes leader. Leader epochs close it: the same
    search, complete to the same depth, finds nothing."""
    old = explore(KIP_101, brokers=2, depth=7, records=1, crashes=2, actions=CRASHES)
    v = old.violation
    assert v is not None and v.invariant == "no_acked_loss"
    assert len(v.steps) == 7
    assert {"restart": 2} in v.steps and _kinds(v.steps).count("crash") == 2
    fixed = explore(
        {**KIP_101, "leader_epochs": True},
        brokers=2,
        depth=7,
        records=1,
        crashes=2,
        actions=CRASHES,
    )
    assert fixed.violation is None and fixed.complete


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
