"""Exercise 7's versions (kafkalab.grading.variants.ex07): every version answerable, the
worked solutions' rules agreeing with the replay or the check in every version, and the
targets biting."""

from __future__ import annotations

import math

import pytest

from kafkalab.grading import Feedback
from kafkalab.grading.explore_checks import check_counterexample
from kafkalab.grading.variants import QUESTIONS, ex07, expected, params
from kafkalab.grading.variants.ex07 import (
    check_durability_version,
    check_loss_scenario_version,
    search_settings,
)

A = "07-acks-min-isr"
IDS = [f"student-{n:03d}" for n in range(300)]


def grid(question: str) -> tuple:
    return QUESTIONS[(A, question)].grid


# ---- 1. durability_target ---------------------------------------------------------------------

_RUNS: dict = {}
_REAL_RUN = ex07.run_failure


def _reused_run(config, p, which, seed):
    """A timed run, once per cluster, failure, config and seed (versions share failure 2)."""
    key = (tuple(sorted(config.items())), p["brokers"], which, p["cut"] * (which == 1), seed)
    if key not in _RUNS:
        _RUNS[key] = _REAL_RUN(config, p, which, seed)
    return _RUNS[key]


@pytest.fixture(autouse=True)
def _reuse_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ex07, "run_failure", _reused_run)


def target_solution(p) -> dict:
    """The worked solution: acks=all and min ISR = copies; unclean election only where the
    ISR left after the cut is smaller than that (then only an unclean leader takes writes,
    and it holds every acknowledged record)."""
    return {
        "acks": "all",
        "min.insync.replicas": p["copies"],
        "unclean.leader.election.enable": p["copies"] > p["brokers"] - p["cut"],
    }


@pytest.mark.parametrize("p", grid("durability_target"), ids=str)
def test_the_durability_solution_meets_every_version(p) -> None:
    check_durability_version(target_solution(p), p, runs=1)


def test_the_tightest_durability_versions_pass_in_three_runs() -> None:
    for p in grid("durability_target"):
        if (p["brokers"], p["cut"], p["copies"]) == (5, 3, 4):  # 22% at the least, 20% asked
            check_durability_version(target_solution(p), p, runs=3)


def test_the_durability_targets_bite() -> None:
    by_key = {(p["brokers"], p["cut"], p["copies"]): p for p in grid("durability_target")}
    # Kafka's defaults (min ISR 1) miss the copies target in every version
    assert all(p["copies"] >= 2 for p in by_key.values())
    with pytest.raises(Feedback, match="Copies: with min.insync.replicas=1"):
        check_durability_version({"acks": "all"}, by_key[(4, 1, 2)], runs=1)
    # one copy too many stops the writes in failure 1
    with pytest.raises(Feedback, match="Availability"):
        check_durability_version(
            {**target_solution(by_key[(4, 1, 3)]), "min.insync.replicas": 4},
            by_key[(4, 1, 3)],
            runs=1,
        )
    # where the ISR left is too small, a clean-only config misses the target
    with pytest.raises(Feedback, match="Availability"):
        p = by_key[(3, 2, 2)]
        check_durability_version(
            {**target_solution(p), "unclean.leader.election.enable": False}, p, runs=1
        )
    # acks=1 loses records in failure 2
    with pytest.raises(Feedback, match="failure 2"):
        check_durability_version({"acks": "1"}, by_key[(5, 1, 2)], runs=1)
    assert {target_solution(p)["unclean.leader.election.enable"] for p in by_key.values()} == {
        True,
        False,
    }


# ---- 2. acked_loss_scenario -------------------------------------------------------------------


def loss_scenario(p) -> str:
    """The worked solution, for any cluster size and power-losing broker: that broker leads,
    every follower is cut off, the ISR shrinks to it, it acknowledges m2 and loses power."""
    b, f = p["brokers"], p["power_loss"]
    followers = [x for x in range(1, b + 1) if x != f]
    steps = ["  - produce: m1"]
    steps += [f"  - fetch: {x}" for x in followers * 2]
    steps += [f"  - flush: {f}"]
    steps += [f"  - disconnect: [{f}, {x}]" for x in followers]
    steps += ["  - advance: 20000", "  - produce: m2", "  - advance: 25000"]
    steps += [f"  - crash: {{broker: {f}, lose_unflushed: true}}", "  - heal"]
    steps += ["  - advance: 20000", f"  - restart: {f}", "  - advance: 20000"]  # after its session
    return "\n".join([f"name: loss-{b}-{f}", f"brokers: {b}", f"leader: {f}", "steps:", *steps])


@pytest.mark.parametrize("p", grid("acked_loss_scenario"), ids=str)
def test_the_loss_scenario_works_in_every_version(p) -> None:
    from kafkalab import scenarios

    check_loss_scenario_version(loss_scenario(p), p)
    s = scenarios.parse(loss_scenario(p), "solution")
    cluster, _ = scenarios.replay(s, {"min.insync.replicas": 2}, checks=False)
    assert cluster.report().lost_acked == []


def test_a_scenario_for_another_version_is_refused() -> None:
    mine, other = {"brokers": 4, "power_loss": 3}, {"brokers": 4, "power_loss": 2}
    with pytest.raises(Feedback, match="broker 2 lost power; in yours broker 3"):
        check_loss_scenario_version(loss_scenario(other), mine)
    with pytest.raises(Feedback, match="your scenario has 3 brokers; yours has 4"):
        check_loss_scenario_version(loss_scenario({"brokers": 3, "power_loss": 3}), mine)


# ---- 3. min_isr_error -------------------------------------------------------------------------


@pytest.mark.parametrize("p", grid("min_isr_error"), ids=str)
def test_min_isr_error_rule_matches_the_replay(p) -> None:
    left = p["brokers"] - p["cut"]
    if left >= p["min_isr"]:
        rule = {"m2_error": None, "m3_error": None}
    else:
        frozen = p["preset"] >= "3.7"
        rule = {
            "m2_error": "REQUEST_TIMED_OUT" if frozen else "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
            "m3_error": "NOT_ENOUGH_REPLICAS",
        }
    assert QUESTIONS[(A, "min_isr_error")].answers(p) == rule


def test_min_isr_error_answers_differ_and_learners_get_them() -> None:
    versions = {tuple(sorted(params(A, "min_isr_error", i).items())) for i in IDS}
    answers = QUESTIONS[(A, "min_isr_error")].answers
    drawn = {tuple(sorted(answers(dict(v)).items(), key=str)) for v in versions}
    assert len(drawn) == 3
    assert expected(A, "min_isr_error", "ada") == answers(params(A, "min_isr_error", "ada"))


# ---- 4. search_judges -------------------------------------------------------------------------


def min_isr_1_schedule(p) -> tuple[list, int, int]:
    """The worked solution: the ISR shrinks at the first check more than lag_ms after 0 ms
    (1.5 x lag_ms); enough 'expire' steps to reach it, with r1 sent late enough that its
    request (30 s) still waits then."""
    shrink = 3 * p["lag_ms"] // 2
    advances = math.ceil(shrink / p["session_ms"])
    before = (shrink - 30000) // p["session_ms"] + 1 if shrink >= 30000 else 0
    expire = {"advance": p["session_ms"]}
    power_loss = {"crash": {"broker": 1, "lose_unflushed": True}}
    steps = [expire] * before + [{"produce": "r1"}] + [expire] * (advances - before) + [power_loss]
    return steps, advances + 1, advances + 2


SAFE = {"acks": "all", "min.insync.replicas": 2, "unclean.leader.election.enable": False}


@pytest.mark.parametrize("p", grid("search_judges"), ids=str)
def test_the_counterexamples_work_in_every_version(p) -> None:
    settings = search_settings(p)
    steps, acked_at, lost_at = min_isr_1_schedule(p)
    assert len(steps) <= 6
    # (SAFE itself is searched in tests/test_grading_explore.py; each version's search runs
    # when a hand-in is graded)
    check_counterexample(
        {**settings, **SAFE, "min.insync.replicas": 1}, steps, acked_at=acked_at, lost_at=lost_at
    )
    check_counterexample({**settings, **SAFE, "acks": "1"}, [{"produce": "r1"}, steps[-1]])
    with pytest.raises(Feedback, match="loses no acknowledged record"):
        check_counterexample({**settings, **SAFE}, steps)


def test_search_versions_need_different_schedules() -> None:
    assert {"lag_ms": 30000, "session_ms": 18000} not in grid("search_judges")  # Lesson 7's
    assert len({min_isr_1_schedule(p)[1] for p in grid("search_judges")}) >= 3


def test_every_question_is_drawn() -> None:
    for q in ("durability_target", "acked_loss_scenario", "min_isr_error", "search_judges"):
        assert params(A, q, "ada") in grid(q)


def test_an_error_answer_may_be_none_but_not_left_out() -> None:
    from kafkalab.grading.variants.ex07 import check_error_answer

    check_error_answer(None, None, question="m3_error", why="")
    check_error_answer("NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS", question="m3_error", why="")
    with pytest.raises(Feedback, match="replace the ... with an error name"):
        check_error_answer(..., None, question="m3_error", why="")
    with pytest.raises(Feedback, match="'REQUEST_TIMED_OUT' is not what happens"):
        check_error_answer("REQUEST_TIMED_OUT", None, question="m2_error", why="")
