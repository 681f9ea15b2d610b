"""The replaceable rules: Kafka's versions as pure functions, and a cluster that applies a
learner's version instead."""

from __future__ import annotations

import pytest

from kafkalab import Cluster, ConfigError, Rules, scenarios
from kafkalab.protocol.rules import (
    DEFAULT_RULES,
    end_offset_for,
    follower_hw,
    leader_hw,
    sequence_verdict,
    truncate_before_fetch,
    truncation_offset,
)


def test_follower_hw_never_passes_the_followers_own_leo() -> None:
    assert follower_hw(3, 5) == 3
    assert follower_hw(5, 3) == 3  # a partial fetch: the follower holds less than is committed


def test_leader_hw_waits_for_the_isr_only_and_never_goes_back() -> None:
    assert leader_hw(0, 5, {1, 2, 3}, {2: 4, 3: 2}) == 2
    assert leader_hw(0, 5, {1, 2}, {2: 4, 3: 2}) == 4  # 3 is out of the ISR
    assert leader_hw(3, 5, {1, 2}, {2: -1}) == 3  # a new leader that knows no LEO yet
    assert leader_hw(0, 5, {1}, {}) == 5  # an ISR of one: the leader alone


def test_end_offset_for_answers_like_the_epoch_cache() -> None:
    epochs = [(0, 0), (2, 4), (5, 9)]
    assert end_offset_for(epochs, 12, 5) == (5, 12)  # latest epoch ends at the LEO
    assert end_offset_for(epochs, 12, 2) == (2, 9)
    assert end_offset_for(epochs, 12, 3) == (2, 9)  # unknown epoch: the largest one below it
    assert end_offset_for(epochs, 12, 6) == (-1, -1)
    assert end_offset_for([], 0, 0) == (-1, -1)


def test_truncation_offset_follows_kip101_and_kip279() -> None:
    assert truncation_offset(-1, -1, [(0, 0)], 3, 2) == (2, True)  # undefined: back to HW
    assert truncation_offset(-1, 1, [(0, 0)], 3, 2) == (1, True)  # KIP-101: the leader's end
    assert truncation_offset(-1, 5, [(0, 0)], 3, 2) == (3, True)  # never past the own LEO
    # KIP-279: this replica's epoch 1 ends at 4 and the leader's at 3: same epoch, min of ends.
    assert truncation_offset(1, 3, [(0, 0), (1, 2), (2, 4)], 6, 0) == (3, True)
    # The leader answers epoch 1, which this replica never saw: its own epochs up to 1 end at 4
    # (where its epoch 2 starts), so it truncates there and asks again with epoch 0.
    assert truncation_offset(1, 3, [(0, 0), (2, 4)], 6, 0) == (4, False)


def test_rules_must_be_functions() -> None:
    with pytest.raises(ConfigError, match="follower_hw=3 is not allowed"):
        Rules(follower_hw=3)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="rules='mine' is not allowed"):
        Cluster(brokers=2, rules="mine")  # type: ignore[arg-type]


def test_replaced_names_the_rules_that_differ() -> None:
    assert DEFAULT_RULES.replaced() == []
    assert Rules(follower_hw=min).replaced() == ["follower_hw"]


def test_a_cluster_applies_a_replaced_follower_rule() -> None:
    def eager(leader_hw: int, follower_leo: int) -> int:
        return follower_leo  # wrong on purpose: claims everything it holds is committed

    kafka, mine = Cluster(brokers=2, leader=1), Cluster(brokers=2, leader=1, rules=Rules(eager))
    for c in (kafka, mine):
        c.produce("m1")
        c.fetch(2)
    assert kafka.replica(2).hw == 0
    assert mine.replica(2).hw == 1


def test_a_cluster_applies_a_replaced_leader_rule() -> None:
    def leader_leo_only(hw: int, leader_leo: int, isr: object, remote_leos: object) -> int:
        return leader_leo  # wrong on purpose: waits for no follower

    c = Cluster(brokers=3, rules=Rules(leader_hw=leader_leo_only))
    c.produce("m1", acks="all")
    assert c.replica(1).hw == 1  # committed before any follower has fetched
    assert c.report().acked == ["m1"]


def test_kip101_divergence_comes_back_when_the_truncation_rule_falls_back_to_the_hw() -> None:
    def old_rule(epoch: int, end: int, epochs: object, leo: int, hw: int) -> tuple[int, bool]:
        return hw, True  # the pre-0.11 rule, even with leader epochs on

    s = scenarios.get("kip101-divergence")
    fixed = scenarios.run(s, {"leader_epochs": True})
    broken = scenarios.run(s, {"leader_epochs": True}, rules=Rules(truncation_offset=old_rule))
    assert fixed.ok and not fixed.cluster.report().divergent
    assert broken.cluster.report().divergent


def test_truncate_before_fetch_is_the_followers_own_hw() -> None:
    assert truncate_before_fetch(1, 2) == 1
    assert truncate_before_fetch(2, 2) == 2  # nothing above the HW: nothing removed


def _values(cluster: Cluster, broker: int) -> list[str]:
    return [value for _, value, _ in cluster.replica(broker).records]


def _waits_for_the_leader(hw: int, leo: int) -> int:
    return leo  # KIP-101's set-aside alternative: cut nothing before the leader answers


@pytest.mark.parametrize(
    ("rules", "lost", "divergent"),
    [(None, ["m2"], False), (Rules(truncate_before_fetch=_waits_for_the_leader), [], False)],
    ids=["kafka-0.10", "waits-for-the-leader"],
)
def test_waiting_for_the_leader_saves_kip101_scenario_1(
    rules: Rules | None, lost: list[str], divergent: bool
) -> None:
    run = scenarios.run(scenarios.get("kip101-loss"), rules=rules)
    report = run.cluster.report()
    assert (report.lost_acked, report.divergent) == (lost, divergent)
    kept = ["m1"] if lost else ["m1", "m2"]
    assert _values(run.cluster, 1) == _values(run.cluster, 2) == kept


@pytest.mark.parametrize(
    "rules", [None, Rules(truncate_before_fetch=_waits_for_the_leader)], ids=["kafka-0.10", "waits"]
)
def test_waiting_for_the_leader_leaves_kip101_scenario_2_divergent(rules: Rules | None) -> None:
    s = scenarios.get("kip101-divergence")
    run = scenarios.run(s, rules=rules)
    assert run.cluster.report().divergent
    assert _values(run.cluster, 1) == ["m1", "m2"]
    assert _values(run.cluster, 2) == ["m1", "m3"]
    # Only the leader epoch tells m2 from m3, with or without the replaced rule.
    fixed = scenarios.run(s, {"leader_epochs": True}, rules=rules)
    assert not fixed.cluster.report().divergent


def test_the_leader_answers_with_the_replaced_end_offset_rule() -> None:
    def nothing_known(epochs: object, leo: int, epoch: int) -> tuple[int, int]:
        return -1, -1  # the follower then falls back to its HW

    s = scenarios.get("kip101-divergence")
    broken = scenarios.run(s, {"leader_epochs": True}, rules=Rules(end_offset_for=nothing_known))
    assert broken.cluster.report().divergent


def test_sequence_verdict_dedups_fences_and_keeps_order() -> None:
    five = [(0, 0), (1, 2), (3, 3), (4, 4), (5, 6)]
    assert sequence_verdict(-1, [], 0, 0, 0) == "APPEND"  # a new producer
    assert sequence_verdict(-1, [], 0, 3, 3) == "APPEND"  # at any sequence since 2.5 (KIP-360)
    top = 2**31 - 1  # sequence numbers wrap around (ProducerAppendInfo.inSequence)
    assert sequence_verdict(0, [(top - 1, top)], 0, 0, 0) == "APPEND"
    assert sequence_verdict(0, five, 0, 7, 8) == "APPEND"  # right after the last batch
    assert sequence_verdict(0, five, 0, 1, 2) == "DUPLICATE"  # one of the last five
    assert sequence_verdict(0, five, 0, 1, 1) == "OUT_OF_ORDER_SEQUENCE_NUMBER"  # not a batch
    assert sequence_verdict(0, five, 0, 8, 8) == "OUT_OF_ORDER_SEQUENCE_NUMBER"  # a gap
    assert sequence_verdict(1, five, 0, 7, 7) == "INVALID_PRODUCER_EPOCH"  # a zombie
    assert sequence_verdict(0, five, 1, 0, 0) == "APPEND"  # a new epoch restarts at 0
    assert sequence_verdict(0, five, 1, 7, 7) == "OUT_OF_ORDER_SEQUENCE_NUMBER"


def test_a_broker_that_forgets_duplicates_writes_a_retry_twice() -> None:
    def no_memory(known: int, cached: object, epoch: int, first: int, last: int) -> str:
        verdict = sequence_verdict(known, cached, epoch, first, last)  # type: ignore[arg-type]
        return "APPEND" if verdict == "DUPLICATE" else verdict

    s = scenarios.get("retry-duplicate")
    broken = scenarios.run(s, rules=Rules(sequence_verdict=no_memory))
    assert not broken.ok and broken.cluster.report().duplicates == ["m1"]


def test_a_verdict_that_is_not_one_of_kafkas_is_refused() -> None:
    c = Cluster(brokers=1, rules=Rules(sequence_verdict=lambda *args: "OK"))
    with pytest.raises(ConfigError, match="sequence_verdict returned 'OK'.*APPEND, DUPLICATE"):
        c.produce("m1", producer_id=7, sequence=0)


def test_a_duplicate_verdict_without_a_cached_batch_appends_nothing() -> None:
    always = Rules(sequence_verdict=lambda *args: "DUPLICATE")
    c = Cluster(brokers=1, config={"acks": "1"}, rules=always)
    c.produce("m1", producer_id=7, sequence=0)
    assert c.logs()[1] == [] and c.report().errors == {"m1": "DUPLICATE"}
