"""Exercise 1's versions (kafkalab.grading.variants.ex01): every version answerable, the
answers spread over the versions, and the worked solutions' rules agreeing with the replay the
grader uses, in every version."""

from __future__ import annotations

import pytest

from kafkalab import scenarios
from kafkalab.grading import Feedback
from kafkalab.grading.variants import QUESTIONS, ex01, expected, params

FETCHES = QUESTIONS[("01-start-here", "predict_fetches")]
SCENARIO = QUESTIONS[("01-start-here", "first_scenario")]
IDS = [f"student-{n:03d}" for n in range(300)]


def _rule_fetches(p):
    """The worked solution: a fetch tells the leader the follower's LEO, then copies all."""
    produced = ["m1"]
    leo = {b: 0 for b in range(2, p["brokers"] + 1)}
    told = {b: 0 for b in leo}
    for i, follower in enumerate(p["fetches"]):
        if p["m2_after"] == i:
            produced.append("m2")
        told[follower] = leo[follower]
        leo[follower] = len(produced)
    if p["m2_after"] == len(p["fetches"]):
        produced.append("m2")
    return {"acked_after": produced[: min(told.values())], "leo_after": {1: len(produced), **leo}}


def _solution_scenario(p, lagging="mine"):
    """The worked solution's scenario (``lagging`` overrides the follower that must lag)."""
    lagging = p["lagging"] if lagging == "mine" else lagging
    followers = list(range(2, p["brokers"] + 1))
    on_time = [b for b in followers if b != lagging]
    rounds = followers + ([lagging] if lagging else []) + on_time + on_time
    hw = {b: 0 if b == lagging else 1 for b in range(1, p["brokers"] + 1)}
    steps = "\n".join(f"  - fetch: {b}" for b in rounds)
    return (
        f"name: mine\nbrokers: {p['brokers']}\nleader: 1\nsteps:\n"
        f"  - produce: {{value: {p['value']}, acks: all}}\n{steps}\n"
        f"expect:\n  acked: [{p['value']}]\n  hw: {hw}\n"
    )


@pytest.mark.parametrize("p", FETCHES.grid, ids=str)
def test_predict_fetches_rule_matches_the_replay(p) -> None:
    assert FETCHES.answers(p) == _rule_fetches(p)


def test_predict_fetches_versions_differ() -> None:
    answers = {str(FETCHES.answers(p)) for p in FETCHES.grid}
    assert len(answers) >= len(FETCHES.grid) // 3
    acked = {tuple(FETCHES.answers(p)["acked_after"]) for p in FETCHES.grid}
    assert acked == {(), ("m1",), ("m1", "m2")}
    # no version is Lesson 1's run (m1 alone): every version produces m2 on the way
    assert all(p["m2_after"] is not None for p in FETCHES.grid)


def test_expected_replays_the_learners_own_version() -> None:
    assert expected("01-start-here", "predict_fetches", "ada") == _rule_fetches(
        params("01-start-here", "predict_fetches", "ada")
    )
    text = FETCHES.show(params("01-start-here", "predict_fetches", "ada"))
    assert text.startswith("c = Cluster(brokers=") and "c.fetch(" in text


@pytest.mark.parametrize("p", SCENARIO.grid, ids=str)
def test_the_solution_scenario_reaches_every_version(p) -> None:
    s, _ = ex01.check_first_scenario(_solution_scenario(p), p)
    assert scenarios.run(s).ok


@pytest.mark.parametrize("p", [q for q in SCENARIO.grid if q["value"] == "m1"], ids=str)
def test_the_scenario_check_bites(p) -> None:
    """Another follower lagging (or none, or one more) is not the learner's situation."""
    others = [None, *range(2, p["brokers"] + 1)]
    for lagging in others:
        if lagging != p["lagging"]:
            with pytest.raises(Feedback, match="What was asked"):
                ex01.check_first_scenario(_solution_scenario(p, lagging), p)
    wrong_size = {**p, "brokers": {3: 4, 4: 5, 5: 3}[p["brokers"]], "lagging": None}
    with pytest.raises(Feedback, match=r"\[ \] the cluster has"):
        ex01.check_first_scenario(_solution_scenario(wrong_size), p)


def test_the_scenario_check_refuses_empty_and_broken_text() -> None:
    p = SCENARIO.grid[0]
    for text in (..., None, "", "..."):
        with pytest.raises(Feedback, match="the scenario is empty"):
            ex01.check_first_scenario(text, p)
    with pytest.raises(Feedback, match="does not run"):
        ex01.check_first_scenario("brokers: 3\nsteps:\n  - nonsense: 1\n", p)


def test_first_scenario_versions_spread() -> None:
    drawn = [params("01-start-here", "first_scenario", i) for i in IDS]
    assert {p["brokers"] for p in drawn} == {3, 4, 5}
    assert None in {p["lagging"] for p in drawn} and len({p["lagging"] for p in drawn}) == 5
