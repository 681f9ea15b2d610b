"""Exercise 2's versions (kafkalab.grading.variants.ex02): every version answerable, the
answers spread over the versions, the worked solutions agreeing with the simulator in every
version, and the hidden topics catching the usual mistakes."""

from __future__ import annotations

import pytest

from kafkalab.grading import Feedback
from kafkalab.grading.checks import Case, check_function
from kafkalab.grading.variants import QUESTIONS, ex02, expected, params

ASSIGN = QUESTIONS[("02-replication-basics", "assign")]
LEADERS = QUESTIONS[("02-replication-basics", "predict_leaders")]
IDS = [f"student-{n:03d}" for n in range(300)]


def solution(brokers, partitions, replication_factor, start_index, shift):
    """The worked solution's assign."""
    n = len(brokers)
    result = {}
    for p in range(partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start_index) % n
        replicas = [brokers[first]]
        for j in range(replication_factor - 1):
            replicas.append(brokers[(first + 1 + (shift + j) % (n - 1)) % n])
        result[p] = replicas
    return result


def no_lap_shift(brokers, partitions, rf, start, shift):
    """The shift never grows."""
    return solution(brokers, 1, rf, start, shift) | {
        p: solution(brokers, p + 1, rf, start, shift - p // len(brokers))[p]
        for p in range(partitions)
    }


def ids_not_positions(brokers, partitions, rf, start, shift):
    """Broker ids used as positions: right only for brokers 0..n-1."""
    n = len(brokers)
    return {
        p: [brokers[(p + start) % n]]
        + [
            (brokers[(p + start) % n] + 1 + (shift + p // n + j) % (n - 1)) % n
            for j in range(rf - 1)
        ]
        for p in range(partitions)
    }


def contiguous_followers(brokers, partitions, rf, start, shift):
    """Followers right after the leader, ignoring the shift."""
    n = len(brokers)
    return {p: [brokers[(p + start + j) % n] for j in range(rf)] for p in range(partitions)}


def _cases(p, which):
    situations = [p["shown"]] if which == "shown" else list(p["hidden"])
    return [Case((list(s[0]), *s[1:]), ex02.kafka_assignment(s), "") for s in situations]


@pytest.mark.parametrize("p", ASSIGN.grid, ids=str)
def test_the_solution_assigns_as_kafka_in_every_version(p) -> None:
    check_function(solution, "assign", _cases(p, "shown") + _cases(p, "hidden"))


@pytest.mark.parametrize("wrong", [no_lap_shift, ids_not_positions, contiguous_followers])
@pytest.mark.parametrize("p", ASSIGN.grid, ids=str)
def test_the_hidden_topics_catch_the_usual_mistakes(p, wrong) -> None:
    with pytest.raises(Feedback, match="Kafka's rule gives"):
        check_function(wrong, "assign", _cases(p, "hidden"))


def test_assign_versions_differ_and_show_the_call() -> None:
    shown = {p["shown"] for p in ASSIGN.grid}
    assert len(shown) == len(ASSIGN.grid)
    assert len({str(ex02.kafka_assignment(s)) for s in shown}) == len(shown)
    assert ((0, 1, 2, 3, 4), 10, 3, 0, 0) not in shown  # Lesson 2's example
    drawn = params("02-replication-basics", "assign", "ada")
    assert f"assign({list(drawn['shown'][0])}, " in ASSIGN.show(drawn)
    assert len({params("02-replication-basics", "assign", i)["hidden"] for i in IDS}) == 3


def _leaders_rule(p):
    """The worked solution: the first live replica leads; the election restores the first."""
    replicas = solution(
        list(range(1, p["brokers"] + 1)), p["partitions"], p["rf"], *[p["start"]] * 2
    )
    moved = {t: next(b for b in r if b != p["crash"]) for t, r in replicas.items()}
    return moved, moved, {t: r[0] for t, r in replicas.items()}


@pytest.mark.parametrize("p", LEADERS.grid, ids=str)
def test_predict_leaders_rule_matches_the_replay(p) -> None:
    seen = LEADERS.answers(p)
    crash, back, election = _leaders_rule(p)
    assert seen["leaders_after_crash"] == crash
    assert seen["leaders_after_return"] == back
    assert seen["leaders_after_election"] == election
    replicas = ex02._leaders_replicas(p)
    # the returning broker has rejoined every ISR before the election
    assert seen["isr_after_return"] == {t: sorted(r) for t, r in replicas.items()}


def test_predict_leaders_versions_differ() -> None:
    answers = {
        str((a["leaders_after_crash"], a["leaders_after_election"]))
        for a in map(LEADERS.answers, LEADERS.grid)
    }
    assert len(answers) >= len(LEADERS.grid) // 3
    moved = [
        a["leaders_after_crash"] != a["leaders_after_election"]
        for a in map(LEADERS.answers, LEADERS.grid)
    ]
    assert all(moved)  # the failing broker always led something
    assert expected("02-replication-basics", "predict_leaders", "ada") == LEADERS.answers(
        params("02-replication-basics", "predict_leaders", "ada")
    )
