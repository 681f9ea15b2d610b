"""Every catalog scenario, and every variant of it, replays with its expectations holding.

The lesson-shaped tests below name what each scenario shows, with the old behaviour switched on
and off, so a failure reads like the lesson it breaks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab import scenarios

CATALOG = scenarios.catalog()
CASES = [(name, None) for name in CATALOG] + [
    (name, v.name) for name, s in CATALOG.items() for v in s.variants
]


@pytest.mark.parametrize(("name", "variant"), CASES, ids=[f"{n}:{v or 'base'}" for n, v in CASES])
def test_catalog_expectations_hold(name: str, variant: str | None) -> None:
    s = CATALOG[name]
    v = next((x for x in s.variants if x.name == variant), None)
    result = scenarios.run(s, variant=v)
    assert result.ok, f"{name} ({variant or 'base'}):\n" + "\n".join(result.mismatches)


def test_catalog_covers_the_required_failures_and_fixes() -> None:
    required = {
        "happy-path-hw-lag",
        "kip101-loss",
        "kip101-divergence",
        "acks1-leader-crash-loss",
        "unclean-election-loss",
        "min-isr-not-enough-replicas",
        "isr-of-one-loss",
        "isr-flapping-legacy",
        "stuck-follower-leaves-isr",
        "follower-rejoins-isr",
        "kip279-divergence",
        "not-enough-replicas-after-append",
        # the controller, and the eight network partitions of the ZooKeeper era
        "controller-failover",
        "controller-zombie",
        "controlled-shutdown",
        "preferred-leader-rebalance",
        "broker-failure-moves-leaders",
        "np-follower-cut-from-leader",
        "np-follower-cut-from-zk",
        "np-leader-cut-from-followers",
        "np-leader-cut-from-zk",
        "np-follower-isolated",
        "np-leader-isolated",
        "np-controller-cut-from-brokers",
        "np-controller-cut-from-zk",
        # producers, transactions and consumers
        "retry-duplicate",
        "retry-reorder",
        "txn-zombie-fencing",
        "txn-read-committed-after-abort",
        "txn-open-stalls-lso",
        "txn-hanging-transaction",
        "txn-coordinator-failover",
        "consumer-at-least-once",
        "consumer-at-most-once",
        "consumer-auto-commit",
        "eos-consume-transform-produce",
    }
    assert required <= set(CATALOG)
    for name, s in CATALOG.items():
        assert s.expect, f"{name} has no expect block"
        assert s.description, f"{name} has no description"
        assert s.variants, f"{name} shows no switch: it needs a variant"


def run(name: str, **settings: object) -> scenarios.ScenarioResult:
    return scenarios.run(CATALOG[name], settings or None)


def test_kip101_scenario_1_loses_m2_without_leader_epochs_and_keeps_it_with() -> None:
    old = run("kip101-loss").cluster.report()
    assert old.lost_acked == ["m2"]
    assert old.hw_regressions[0]["reason"] == "offset_out_of_range"
    new = run("kip101-loss", leader_epochs=True).cluster
    assert new.report().lost_acked == []
    assert new.logs() == {1: ["m1", "m2"], 2: ["m1", "m2"]}


def test_kip101_scenario_2_diverges_without_leader_epochs_and_agrees_with() -> None:
    old = run("kip101-divergence").cluster
    assert old.report().divergent
    assert old.replica(1).records[1] == (1, "m2", 0)
    assert old.replica(2).records[1] == (1, "m3", 1)
    new = run("kip101-divergence", leader_epochs=True).cluster
    assert not new.report().divergent
    assert new.logs()[1] == new.logs()[2] == ["m1", "m3"]


def test_kip279_fixes_divergence_after_quick_leader_changes() -> None:
    assert run("kip279-divergence").cluster.report().divergent
    fixed = run("kip279-divergence", kip279=True).cluster
    assert not fixed.report().divergent
    assert fixed.logs()[2] == ["a", "x", "z"]


def test_unclean_election_loses_data_and_clean_election_waits() -> None:
    unclean = run("unclean-election-loss").cluster
    assert unclean.report().unclean_elections == 1 and unclean.report().lost_acked == ["m2"]
    clean = run("unclean-election-loss", unclean_leader_election_enable=False).cluster
    assert clean.report().unclean_elections == 0 and clean.report().lost_acked == []
    offline = [e for e in clean.trace.of_kind("partition_state") if e.data["leader"] is None]
    assert offline, "the partition went offline while its only ISR member was down"


def test_legacy_lag_rule_flaps_the_isr_and_the_time_rule_does_not() -> None:
    legacy = run("isr-flapping-legacy").cluster.report()
    assert (legacy.isr_shrinks, legacy.isr_expands) == (1, 2)
    timed = run(
        "isr-flapping-legacy", replica_lag_max_messages=None, lag_time_from_caught_up=True
    ).cluster.report()
    assert (timed.isr_shrinks, timed.isr_expands) == (0, 0)


def test_stuck_follower_leaves_between_one_and_one_and_a_half_lag_times() -> None:
    c = run("stuck-follower-leaves-isr").cluster
    shrink = [e for e in c.trace.of_kind("partition_state") if e.data["reason"] == "shrink"]
    assert len(shrink) == 1
    lag = c.config.replica_lag_time_max_ms
    assert lag < shrink[0].time_ms <= 1.5 * lag


def test_hw_freeze_turns_after_append_error_into_a_timeout() -> None:
    before = run("not-enough-replicas-after-append").cluster.report()
    assert before.errors == {"m1": "NOT_ENOUGH_REPLICAS_AFTER_APPEND"}
    after = run("not-enough-replicas-after-append", hw_freeze_under_min_isr=True).cluster
    assert after.report().errors == {"m1": "REQUEST_TIMED_OUT"}
    assert after.replica(1).hw == 0


def test_a_scenario_written_by_hand_from_the_kip101_text() -> None:
    """KIP-101's first example, written independently of the catalog: replicas A (1) and B (2),
    B leads; A fetched m1 and m2 and restarts before learning HW 2; B dies; A leads."""
    path = Path(__file__).parent / "scenarios" / "kip101-by-hand.yaml"
    s = scenarios.load(str(path))
    result = scenarios.run(s)
    assert result.ok, result.mismatches
    assert scenarios.run(s, {"leader_epochs": True}).cluster.report().lost_acked == []


def test_check_steps_report_the_step_they_follow() -> None:
    text = """
name: wrong-check
brokers: 2
steps:
  - produce: m1
  - check: {hw: {1: 1}}
"""
    result = scenarios.run(scenarios.parse(text))
    assert result.mismatches == ["after step 2: hw[1]: expected 1, got 0"]


def test_a_hanging_transaction_stalls_the_lso_without_kip890_and_not_with_it() -> None:
    old = run("txn-hanging-transaction").cluster
    assert old.lso() == {"demo-0": 1}
    assert old.logs()[1] == ["ABORT", "a", "x"]
    new = run("txn-hanging-transaction", transaction_partition_verification_enable=True).cluster
    assert new.logs()[1] == ["ABORT", "x"]
    assert new.report().consumed == {"reader": ["x"]}


def test_read_committed_skips_an_aborted_transaction_read_uncommitted_does_not() -> None:
    report = run("txn-read-committed-after-abort").cluster.report()
    assert report.consumed == {"committed": ["c"], "uncommitted": ["a", "b", "c"]}
    assert report.aborted_reads == []


def test_committing_after_processing_duplicates_and_before_loses() -> None:
    least = run("consumer-at-least-once").cluster.report().processed["app"]
    assert least.count("m3") == 2
    most = run("consumer-at-most-once").cluster.report().processed["app"]
    assert "m1" not in most and "m2" not in most
