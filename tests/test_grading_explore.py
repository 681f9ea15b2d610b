"""The checks of the exercise that lets the exhaustive search judge a config: a config the
search cannot break passes and one it breaks fails with the schedule it found; a learner's
counterexample must be a schedule of the search's alphabet within its bounds that ends with an
acknowledged record lost, and the learner's reading of it (when acknowledged, when lost) is
checked by replay. Hostile answers get feedback, never a traceback."""

from __future__ import annotations

from typing import Any

import pytest

from kafkalab.grading import Feedback
from kafkalab.grading.explore_checks import BOUNDS, check_counterexample, check_unbreakable, walk

SAFE = {"acks": "all", "min.insync.replicas": 2, "unclean.leader.election.enable": False}
ACKS_1 = {**SAFE, "acks": "1"}
MIN_ISR_1 = {**SAFE, "min.insync.replicas": 1}
POWER_LOSS_1 = {"crash": {"broker": 1, "lose_unflushed": True}}
ACKS_1_LOSS = [{"produce": "r1"}, POWER_LOSS_1]
MIN_ISR_1_LOSS = [
    {"advance": 18000},
    {"produce": "r1"},
    {"advance": 18000},
    {"advance": 18000},
    POWER_LOSS_1,
]


def test_the_safe_config_is_unbreakable_and_a_weaker_one_is_not() -> None:
    result = check_unbreakable(SAFE)
    assert result.violation is None and result.complete and result.depth == BOUNDS.depth
    with pytest.raises(Feedback, match=r"breaks .* in 2 steps:\n  1. \{'produce': 'r1'\}"):
        check_unbreakable(ACKS_1)


def test_a_counterexample_is_replayed_and_read() -> None:
    found = check_counterexample(MIN_ISR_1, MIN_ISR_1_LOSS, acked_at=4, lost_at=5)
    assert (found.acked_at, found.lost_at) == (4, 5)
    assert found.cluster.report().lost_acked == ["r1"]
    assert check_counterexample(ACKS_1, ACKS_1_LOSS).acked_at == 1
    with pytest.raises(Feedback, match="acked_at=3 .* first acknowledged after step 4"):
        check_counterexample(MIN_ISR_1, MIN_ISR_1_LOSS, acked_at=3)
    with pytest.raises(Feedback, match="lost_at=4 .* lost after step 5"):
        check_counterexample(MIN_ISR_1, MIN_ISR_1_LOSS, lost_at=4)


def test_a_schedule_that_loses_nothing_with_the_safe_config_fails() -> None:
    with pytest.raises(Feedback, match=r"loses no acknowledged record .* no record was ack"):
        check_counterexample(SAFE, ACKS_1_LOSS)
    with pytest.raises(Feedback, match=r"loses no acknowledged record .* \['r1'\] was ack"):
        check_counterexample(ACKS_1, [{"produce": "r1"}, {"fetch": 2}])


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        (..., "must be a list of steps: replace the ..."),
        ([...], "still holds a ...: replace the ..."),
        ("produce r1", "must be a list of steps"),
        ([], "is empty"),
        ([{"produce": "r1"}] * 7, "has 7 steps; the search goes 6 deep"),
        ([{"produce": "r1"}, {"produce": "r2"}], r"step 2: \{'produce': 'r2'\} is not a step"),
        ([{"produce": "x"}], r"step 1: \{'produce': 'x'\} is not a step the search tries here"),
        ([{"advance": 5000}], r"step 1: \{'advance': 5000\} is not a step"),
        ([{"flush": 1}], "is not a step the search tries here"),
        ([{"restart": 1}], "is not a step the search tries here"),
        ([{"crash": 1}, {"crash": 2}], r"step 2: \{'crash': 2\} is not a step"),
        (
            [{"produce": "r1"}, POWER_LOSS_1, {"restart": 1}],
            "already loses the record after step 2",
        ),
        ([{"produce": "r1"}, 3], "step 2: 3 is not a step"),
        ([{"produce": "r1", "fetch": 2}], "is not a step the search tries here"),
        ([{"fetch": "__import__('os')"}], "is not a step the search tries here"),
    ],
)
def test_hostile_or_wrong_schedules_get_feedback(steps: Any, message: str) -> None:
    with pytest.raises(Feedback, match=message):
        check_counterexample(ACKS_1, steps)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (..., "must be a dict of Kafka settings"),
        ({"acks": ...}, "no value for acks"),
        ({"acks": "2"}, "is not allowed: acks"),
        ({"min.insync.replicas": 0}, "is not allowed"),
        ({"no.such.setting": 1}, "is not allowed"),
        ([("acks", "all")], "must be a dict"),
    ],
)
def test_bad_configs_get_feedback(settings: Any, message: str) -> None:
    with pytest.raises(Feedback, match=message):
        check_unbreakable(settings)
    with pytest.raises(Feedback, match=message):
        check_counterexample(settings, ACKS_1_LOSS)


def test_a_reading_that_is_not_a_step_number_gets_feedback() -> None:
    for bad in (..., "4", 4.0, True):
        with pytest.raises(Feedback, match="must be a step number"):
            check_counterexample(MIN_ISR_1, MIN_ISR_1_LOSS, acked_at=bad)


def test_walk_prints_each_step(capsys: pytest.CaptureFixture[str]) -> None:
    walk(MIN_ISR_1, MIN_ISR_1_LOSS)
    out = capsys.readouterr().out
    assert "4. {'advance': 18000}\n   leader 1, ISR [1]" in out
    assert out.rstrip().endswith(
        "acknowledged ['r1']; LOST: acknowledged ['r1'] missing from their leader's log"
    )
