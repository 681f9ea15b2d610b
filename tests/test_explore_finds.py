"""What the exhaustive search finds from bare configs alone: the searches that take tens of
seconds each (a file of their own, so that make test runs them beside the rest).

Lesson 6 runs KIP-101's loss (with leader epochs on and off) and the divergence searches of 0.11
and 2.0, and Lesson 7 the acks=1 and unclean-election searches; nbval compares their stored
outputs, schedules and state counts included, on every make test."""

from __future__ import annotations

from typing import Any

from kafkalab.explore import EXAMPLES, explore

SAFE = EXAMPLES["safe"]
DIVERGE: dict[str, Any] = dict(
    brokers=2,
    records=2,
    crashes=2,
    actions=("produce", "crash", "restart", "flush", "elect"),
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
