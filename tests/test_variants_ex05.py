"""Exercise 5's versions (kafkalab.grading.variants.ex05): every version answerable and different
from the lessons, the worked solutions of the source notebook agreeing with the replay in every
version, and the scenario check refusing the catalog's zombie and other learners' scenarios."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kafkalab import scenarios
from kafkalab.grading import Feedback
from kafkalab.grading.variants import QUESTIONS, ex05, params
from tests.conftest import ROOT
from tests.worked_solutions import run_solution

ASSIGNMENT = "05-controller"
SOURCE = ROOT / "exercises" / "source" / "05-controller.ipynb"
IDS = [f"student-{n:03d}" for n in range(300)]


def _grid(question: str) -> tuple[Mapping[str, Any], ...]:
    return QUESTIONS[(ASSIGNMENT, question)].grid


def _answers(question: str, p: Mapping[str, Any]) -> dict[str, Any]:
    answers = QUESTIONS[(ASSIGNMENT, question)].answers
    assert answers is not None
    return answers(p)


def _solve(question: str, p: Mapping[str, Any]) -> dict[str, Any]:
    """Run the source notebook's worked solution of ``question`` in version ``p``."""
    return run_solution(SOURCE, f'mine.params("{question}")', p)


# ---- 1. predict_election ---------------------------------------------------------------------


@pytest.mark.parametrize("p", _grid("predict_election"), ids=str)
def test_the_worked_election_rule_matches_the_replay(p) -> None:
    got = _solve("predict_election", p)
    want = _answers("predict_election", p)
    assert {k: got[k] for k in want} == want


def test_election_versions_differ_and_none_is_a_lesson_run() -> None:
    grid = _grid("predict_election")
    answers = [_answers("predict_election", p) for p in grid]
    assert len({a["new_leader"] for a in answers}) >= 4
    assert {a["new_leader_epoch"] for a in answers} == {1, 2}
    assert len({a["changed_at_ms"] for a in answers}) >= 4
    assert len({tuple(a["new_isr"]) for a in answers}) >= 10
    # Lesson 5b elects in [4, 2, 3]; np-leader-cut-from-zk and controller-zombie use [2, 3, 4]
    assert not {p["replicas"] for p in grid} & {(4, 2, 3), (2, 3, 4)}


# ---- 2. zombie_outcome -----------------------------------------------------------------------


@pytest.mark.parametrize("p", _grid("zombie_outcome"), ids=str)
def test_the_worked_zombie_outcome_matches_the_replay(p) -> None:
    got = _solve("zombie_outcome", p)
    want = _answers("zombie_outcome", p)
    assert {k: got[k] for k in want} == want


def test_zombie_outcomes_differ() -> None:
    answers = [_answers("zombie_outcome", p) for p in _grid("zombie_outcome")]
    assert {bool(a["lost"]) for a in answers} == {True, False}
    assert {bool(a["zombie_acked"]) for a in answers} == {True, False}
    # an acknowledged zombie record that survives: the old leader was the ISR's last member
    assert any(a["zombie_acked"] and not a["lost"] for a in answers)
    assert len({a["final_leader"] for a in answers}) >= 3


# ---- 3. zombie_controller --------------------------------------------------------------------


def _scenario_for(p: Mapping[str, Any]) -> str:
    return _solve("zombie_controller", p)["zombie_scenario"]


@pytest.mark.parametrize("p", _grid("zombie_controller"), ids=str)
def test_every_zombie_controller_version_has_a_scenario_and_the_solution_writes_it(p) -> None:
    text = _scenario_for(p)
    ex05.check_zombie_controller(text, p)
    result = scenarios.run(scenarios.parse(text))
    assert result.ok, result.mismatches


@pytest.mark.parametrize("p", _grid("zombie_controller"), ids=str)
def test_the_catalog_zombie_passes_no_version(p) -> None:
    with pytest.raises(Feedback, match=r"\[ \]"):
        ex05.check_zombie_controller(scenarios.get("controller-zombie").source, p)


def test_another_learners_scenario_fails_most_versions() -> None:
    grid = _grid("zombie_controller")
    text = _scenario_for(grid[0])
    passed = []
    for p in grid:
        try:
            ex05.check_zombie_controller(text, p)
        except Feedback:
            continue
        passed.append(p)
    assert passed == [grid[0]]


def test_zombie_controller_feedback_names_what_is_missing() -> None:
    p = {"brokers": 5, "zombie": 2, "successor": 4, "refused_by": "broker"}
    assert p in _grid("zombie_controller")
    with pytest.raises(Feedback) as err:
        ex05.check_zombie_controller(_scenario_for({**p, "successor": 3}), p)
    text = str(err.value)
    assert "[ ] at the end broker 4 is the controller" in text
    assert "[x] the cluster has 5 brokers" in text


def test_zombie_controller_versions_spread() -> None:
    grid = _grid("zombie_controller")
    # a broker refuses: an expired controller reads nothing (processBrokerChange), never writes
    assert {p["refused_by"] for p in grid} == {"broker"}
    assert {p["zombie"] for p in grid} == {1, 2}
    assert {p["brokers"] for p in grid} == {3, 4, 5}
    drawn = {tuple(sorted(params(ASSIGNMENT, "zombie_controller", i).items())) for i in IDS}
    assert len(drawn) >= 0.8 * len(grid)


@pytest.mark.parametrize("question", ["predict_election", "zombie_outcome"])
def test_the_shown_steps_are_the_replayed_ones(question) -> None:
    from kafkalab import Cluster

    replay = {"predict_election": ex05._election_cluster, "zombie_outcome": ex05._zombie_cluster}
    for p in _grid(question)[::7]:
        namespace: dict[str, Any] = {"Cluster": Cluster}
        exec(QUESTIONS[(ASSIGNMENT, question)].show(p), namespace)  # noqa: S102
        replayed = replay[question](p)
        replayed = replayed[0] if isinstance(replayed, tuple) else replayed
        shown = namespace["c"]
        assert shown.trace.of_kind("partition_state") == replayed.trace.of_kind("partition_state")
        assert shown.logs() == replayed.logs()
