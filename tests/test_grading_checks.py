"""The checks behind the exercises: each wrong answer fails with an explanation of why."""

from __future__ import annotations

import pytest

from kafkalab import scenarios
from kafkalab.grading import (
    Case,
    Feedback,
    check_answer,
    check_durability_target,
    check_function,
    check_lag_time_target,
    check_rule_in_scenario,
    check_scenario_text,
    time_limit,
)
from kafkalab.protocol.rules import follower_hw as kafka_follower_hw


def test_a_wrong_answer_names_the_call_kafkas_answer_and_the_reason() -> None:
    def wrong(leader_hw: int, follower_leo: int) -> int:
        return leader_hw

    with pytest.raises(Feedback) as err:
        check_function(wrong, "follower_hw", [Case((5, 3), 3, "a partial fetch")])
    assert str(err.value) == "follower_hw(5, 3) returned 5, Kafka's rule gives 3: a partial fetch"


def test_an_unanswered_function_is_told_to_replace_the_ellipsis() -> None:
    def blank(leader_hw: int, follower_leo: int) -> None: ...

    with pytest.raises(Feedback, match=r"returned None: replace the \.\.\."):
        check_function(blank, "follower_hw", [Case((0, 1), 0, "")])


def test_an_exception_in_learners_code_becomes_feedback() -> None:
    def raises(leader_hw: int, follower_leo: int) -> int:
        return leader_hw // 0

    with pytest.raises(Feedback, match="follower_hw\\(1, 2\\) raised ZeroDivisionError"):
        check_function(raises, "follower_hw", [Case((1, 2), 1, "")])


def test_an_endless_loop_fails_within_the_time_limit_and_then_at_once() -> None:
    def loops(leader_hw: int, follower_leo: int) -> int:
        while True:
            pass

    with pytest.raises(Feedback, match="did not finish within 0.3 s"):
        check_function(loops, "follower_hw", [Case((1, 2), 1, "")], seconds=0.3)
    # The second check refuses the function before calling it: the learner is told at once
    # instead of after another time limit (the message says which check found the loop).
    with pytest.raises(Feedback, match="did not finish in an earlier check"):
        check_rule_in_scenario("follower_hw", loops, "happy-path-hw-lag", seconds=5)


def test_time_limit_leaves_quick_code_alone() -> None:
    with time_limit(5):
        total = sum(range(1000))
    assert total == 499500


def test_kafkas_own_rule_passes_in_every_kip_scenario() -> None:
    for scenario in ("happy-path-hw-lag", "kip101-loss", "kip101-divergence"):
        check_rule_in_scenario("follower_hw", kafka_follower_hw, scenario)


def test_a_wrong_rule_is_shown_at_the_step_where_the_replicas_differ() -> None:
    def eager(leader_hw: int, follower_leo: int) -> int:
        return follower_leo

    with pytest.raises(Feedback) as err:
        check_rule_in_scenario("follower_hw", eager, "kip101-loss")
    text = str(err.value)
    assert "step 2 (fetch 1)" in text
    assert "broker 1 HW" in text
    assert "follower_hw(0, 1) returned 1; Kafka's rule returns 0" in text
    assert "Replay it: scenarios.run(scenarios.get('kip101-loss')" in text


def test_a_wrong_leader_rule_is_caught_as_the_cluster_starts() -> None:
    def blank(hw: int, leader_leo: int, isr: object, remote_leos: object) -> None:
        return None

    with pytest.raises(Feedback, match="happy-path-hw-lag, as the cluster starts"):
        check_rule_in_scenario("leader_hw", blank, "happy-path-hw-lag")


def test_a_prediction_explains_without_giving_the_answer() -> None:
    check_answer([3, 1, 2], [1, 2, 3], question="the ISR", why="because")  # order is free
    with pytest.raises(Feedback) as err:
        check_answer([1], [1, 2, 3], question="the ISR", why="Which followers fetched?")
    assert str(err.value) == "the ISR: [1] is not what happens. Which followers fetched?"
    with pytest.raises(Feedback, match="replace the"):
        check_answer(..., 3, question="q", why="")


def test_a_scenario_producing_the_anomaly_passes() -> None:
    cluster = check_scenario_text(scenarios.get("kip101-divergence").source, "kip101-divergence")
    assert cluster.report().divergent


def test_a_scenario_that_misses_the_anomaly_says_what_happened_instead() -> None:
    text = scenarios.get("isr-of-one-loss").source  # a loss, but through an unclean election
    with pytest.raises(Feedback) as err:
        check_scenario_text(text, "acked-loss-with-acks-all")
    message = str(err.value)
    assert "[ ] unclean leader election is off" in message
    assert "[x] a record the producer saw acknowledged is missing" in message
    assert "acknowledged but lost: ['m2']" in message
    assert "unclean=True" in message  # the key events of the trace


def test_a_record_committed_everywhere_needs_a_third_round_for_the_first_follower() -> None:
    # Follower 2 asks at offset 1 before follower 3 has reported, so its answer still says HW 0;
    # only its third fetch tells it HW 1.
    happy = scenarios.get("happy-path-hw-lag").source
    check_scenario_text(happy, "committed-on-every-replica")
    two_rounds = happy.split("  - check: {hw: {1: 1")[0]  # stop before follower 2's round 3
    with pytest.raises(Feedback) as err:
        check_scenario_text(two_rounds, "committed-on-every-replica")
    message = str(err.value)
    assert "[x] the producer saw m1 acknowledged" in message
    assert "[ ] every replica holds m1 below its own HW" in message
    assert "broker 2 log: ['m1'], LEO 1, HW 0" in message  # what the learner must fix


def test_a_malformed_or_empty_scenario_gets_a_clear_message() -> None:
    with pytest.raises(Feedback, match="the scenario is empty"):
        check_scenario_text("\n...\n", "zombie-controller")
    with pytest.raises(Feedback, match="your scenario does not run: .*unknown key 'stepz'"):
        check_scenario_text("name: x\nstepz: []\n", "zombie-controller")


def test_lag_time_target_accepts_a_middle_value_and_explains_the_extremes() -> None:
    check_lag_time_target(12000)
    with pytest.raises(Feedback, match="healthy but slow follower is dropped"):
        check_lag_time_target(4000)
    with pytest.raises(Feedback, match="was still in the ISR 35000 ms later"):
        check_lag_time_target(30000)
    with pytest.raises(Feedback, match="whole number of ms"):
        check_lag_time_target("12000")


def test_durability_target_reports_loss_and_availability() -> None:
    check_durability_target(
        {"acks": "all", "unclean.leader.election.enable": False}, min_acked_fraction=0.4, runs=1
    )
    with pytest.raises(Feedback, match="Durability: run with seed 0 lost"):
        check_durability_target(
            {"acks": "1", "unclean.leader.election.enable": True}, min_acked_fraction=0.4, runs=1
        )
    with pytest.raises(Feedback, match="Availability: 6% .* NOT_ENOUGH_REPLICAS: 249"):
        check_durability_target(
            {"acks": "all", "min.insync.replicas": 2}, min_acked_fraction=0.4, runs=1
        )
    with pytest.raises(Feedback, match="your config is not allowed: .*acks"):
        check_durability_target({"acks": "most"}, min_acked_fraction=0.4, runs=1)


def test_a_rule_that_goes_wrong_as_the_cluster_starts_is_shown_there() -> None:
    def may_go_back(hw: int, leader_leo: int, isr: object, remote_leos: dict[int, int]) -> int:
        return min([leader_leo, *remote_leos.values()])

    with pytest.raises(Feedback) as err:
        check_rule_in_scenario("leader_hw", may_go_back, "safe-leader-failover")
    text = str(err.value)
    assert "part ways at safe-leader-failover, as the cluster starts" in text
    assert "In this step leader_hw(0, 0, {1, 2, 3}, {2: -1, 3: -1}) returned -1" in text


def test_a_wrong_sequence_rule_is_shown_at_the_retry_it_mishandles() -> None:
    from kafkalab.protocol.rules import sequence_verdict

    check_rule_in_scenario("sequence_verdict", sequence_verdict, "retry-reorder")

    def zombies_are_out_of_order(*args: object) -> str:
        verdict = sequence_verdict(*args)  # type: ignore[arg-type]
        return "OUT_OF_ORDER_SEQUENCE_NUMBER" if verdict == "INVALID_PRODUCER_EPOCH" else verdict

    settings = {"transaction.partition.verification.enable": False}
    with pytest.raises(Feedback) as err:
        check_rule_in_scenario(
            "sequence_verdict", zombies_are_out_of_order, "txn-zombie-fencing", settings=settings
        )
    text = str(err.value)
    assert "step 11 (produce {'producer': 'p1', 'value': 'a2'})" in text
    assert "client errors" in text and "INVALID_PRODUCER_EPOCH" in text
    wrong_call = "returned 'OUT_OF_ORDER_SEQUENCE_NUMBER'; Kafka's rule returns 'INVALID_PRODUCER"
    assert wrong_call in text


def test_a_rule_answer_the_broker_refuses_becomes_feedback() -> None:
    with pytest.raises(Feedback, match=r"step 1 .*sequence_verdict returned 'ok'"):
        check_rule_in_scenario("sequence_verdict", lambda *args: "ok", "retry-duplicate")
