"""Exercise 10's versions (kafkalab.grading.variants.ex10): the learner's groups and partition
count against Kafka's rule, the hidden cases drawn per learner, and every loop-and-crash version
answerable, with the worked solution's model agreeing with the replay."""

from __future__ import annotations

from collections import Counter
from typing import Any

import nbformat
import pytest

from kafkalab.grading import Feedback, check_consumer_loop
from kafkalab.grading.assignments import assign
from kafkalab.grading.variants import QUESTIONS, expected, params
from kafkalab.grading.variants import ex10 as _ex10  # noqa: F401  (registers the questions)
from kafkalab.grading.variants.ex10 import MIN_VALUE_GROUP, hidden_group_cases
from kafkalab.protocol.groups import group_partition, java_string_hash_code
from tests.conftest import ROOT

GROUPS = QUESTIONS[("10-consumer-offsets", "group_partition")]
LOOPS = QUESTIONS[("10-consumer-offsets", "commit_placement")]
IDS = [f"student-{n:03d}" for n in range(300)]


# ---- group_partition ---------------------------------------------------------------------------


def _solution(group_id: str, partitions: int) -> int:
    """The worked solution's rule."""
    h = 0
    for ch in group_id:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    if h >= 2**31:
        h -= 2**32
    return (0 if h == -(2**31) else abs(h)) % partitions


def _naive(group_id: str, partitions: int) -> int:
    """A rule with Python's abs, which maps -2147483648 to 2147483648."""
    return abs(java_string_hash_code(group_id)) % partitions


@pytest.mark.parametrize("p", GROUPS.grid, ids=str)
def test_every_group_version_is_not_the_lessons_and_the_solution_meets_it(p) -> None:
    assert p["partitions"] != 50  # the lesson's count
    lesson = {"orders", "billing", "console-consumer-1", "console-consumer-49366"}
    assert not lesson & set(p["groups"])
    answers = [group_partition(g, p["partitions"]) for g in p["groups"]]
    assert answers == [_solution(g, p["partitions"]) for g in p["groups"]]
    # the count matters: with 50 partitions at least one group lands elsewhere
    assert answers != [group_partition(g, 50) for g in p["groups"]]


def test_hidden_group_cases_are_drawn_per_learner_and_catch_the_abs_trap() -> None:
    drawn = [tuple(hidden_group_cases(i)) for i in IDS[:100]]
    assert len(set(drawn)) > 50
    assert hidden_group_cases("ada") == hidden_group_cases(" ada ")
    assert java_string_hash_code(MIN_VALUE_GROUP) == -(2**31)
    for learner in IDS[:100]:
        cases = hidden_group_cases(learner)
        mine = params("10-consumer-offsets", "group_partition", learner)["partitions"]
        assert len(cases) == 7 and cases[0][1] == mine
        assert len({n for _, n in cases}) >= 2 or mine == 50
        for g, n in cases:
            assert all(ord(ch) < 0x10000 for ch in g)
            assert _solution(g, n) == group_partition(g, n)
        # Python's abs gives another partition for the MIN_VALUE group: the trap is tested
        g, n = cases[-1]
        assert g == MIN_VALUE_GROUP and _naive(g, n) != group_partition(g, n) == 0


# ---- commit_placement --------------------------------------------------------------------------


def _model(p: dict[str, Any]) -> list[str]:
    """The worked solution's model of the consumer."""
    log: list[str] = []
    state = {"position": 0, "committed": 0}
    polled: list[str] = []
    done: list[str] = []

    def call(name: str) -> None:
        nonlocal polled
        if name == "poll":
            polled += log[state["position"] :]
            state["position"] = len(log)
        elif name == "process":
            done.extend(polled)
            polled = []
        else:
            state["committed"] = state["position"]

    calls = 0
    for _ in range(3):
        log += [f"m{len(log) + i + 1}" for i in range(p["per_poll"])]
        for name in p["loop"]:
            call(name)
            calls += 1
            if calls == p["crash_after"]:
                polled, state["position"] = [], state["committed"]
    for _ in range(2):
        for name in p["loop"]:
            call(name)
    return done


@pytest.mark.parametrize("p", LOOPS.grid, ids=str)
def test_the_models_processed_records_match_the_replay(p) -> None:
    assert LOOPS.answers(p)["processed"] == _model(dict(p))


def test_loop_versions_differ_and_most_crashes_cost_something() -> None:
    answers = [LOOPS.answers(p) for p in LOOPS.grid]
    assert len({tuple(a["processed"]) for a in answers}) >= 10
    harmed = [a for a in answers if sorted(a["processed"]) != a["written"]]
    assert len(harmed) >= 0.6 * len(answers)
    assert any(len(a["processed"]) > len(a["written"]) for a in answers)  # repeats
    assert any(len(set(a["processed"])) < len(a["written"]) for a in answers)  # skips
    assert Counter(p["guarantee"] for p in LOOPS.grid) == {
        "at-least-once": len(LOOPS.grid) // 2,
        "at-most-once": len(LOOPS.grid) // 2,
    }
    for learner in ("ada", "grace"):
        p = params("10-consumer-offsets", "commit_placement", learner)
        assert expected("10-consumer-offsets", "commit_placement", learner) == LOOPS.answers(p)


@pytest.mark.parametrize("guarantee", ["at-least-once", "at-most-once"])
def test_the_solutions_loop_gives_the_guarantee_and_the_other_does_not(guarantee) -> None:
    loops = {
        "at-least-once": ["poll", "process", "commit"],
        "at-most-once": ["poll", "commit", "process"],
    }
    check_consumer_loop(loops[guarantee], guarantee)
    other = next(g for g in loops if g != guarantee)
    with pytest.raises(Feedback):
        check_consumer_loop(loops[other], guarantee)


# ---- the notebook ------------------------------------------------------------------------------


def test_the_student_notebook_hides_the_solution_learner_id_and_rule(tmp_path) -> None:
    made = assign(ROOT / "exercises" / "source" / "10-consumer-offsets.ipynb", tmp_path)
    student = nbformat.read(made.student, as_version=4)
    setup = [c.source for c in student.cells if "learner_id =" in c.source]
    assert setup and "learner_id = ...\n" in setup[0]
    text = made.student.read_text()
    assert "ada.lovelace" not in text and "0xFFFFFFFF" not in text
    assert "my_loop = ...\\n" in text or 'my_loop = ..."' in text
