"""Exercise 6's versions (kafkalab.grading.variants.ex06): the caches and situations drawn for
each learner, the source notebook's worked solutions against Kafka's rules and the replay in
every version, and the divergence check refusing the catalog's scenarios."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kafkalab import scenarios
from kafkalab.grading import Feedback, check_function
from kafkalab.grading.variants import QUESTIONS, ex06, params
from kafkalab.protocol.rules import end_offset_for, truncation_offset
from tests.conftest import ROOT
from tests.worked_solutions import run_solution

ASSIGNMENT = "06-leader-epoch"
SOURCE = ROOT / "exercises" / "source" / "06-leader-epoch.ipynb"
IDS = [f"student-{n:03d}" for n in range(300)]


def _grid(question: str) -> tuple[Mapping[str, Any], ...]:
    return QUESTIONS[(ASSIGNMENT, question)].grid


def _run_cell(marker: str, p: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return run_solution(SOURCE, marker, p)


# ---- 1 and 2: the rules, on the drawn caches -------------------------------------------------


def test_the_worked_rules_pass_every_learners_public_and_hidden_cases() -> None:
    mine_end = _run_cell("def end_offset_for(")["end_offset_for"]
    mine_trunc = _run_cell("def truncation_offset(")["truncation_offset"]
    for p in _grid("end_offset_for"):
        for hidden in (False, True):
            check_function(mine_end, "end_offset_for", ex06.end_offset_cases(p, hidden=hidden))
    for p in _grid("truncation_offset"):
        for hidden in (False, True):
            check_function(mine_trunc, "truncation_offset", ex06.truncation_cases(p, hidden=hidden))


def _lesson_shortcut(epochs, leo, epoch):  # the rule without the "older than every entry" case
    if not epochs or epoch > epochs[-1][0]:
        return (-1, -1)
    if epoch == epochs[-1][0]:
        return (epoch, leo)
    later = [(e, s) for e, s in epochs if e > epoch]
    earlier = [e for e, _ in epochs if e <= epoch]
    return (earlier[-1] if earlier else -1, later[0][1])


def _no_repeat(leader_epoch, leader_end_offset, epochs, leo, hw):  # KIP-101 without KIP-279
    if leader_end_offset == -1:
        return (hw, True)
    return (min(leader_end_offset, leo), True)


def test_the_hidden_cases_catch_a_rule_that_misses_a_case() -> None:
    for p in _grid("end_offset_for"):
        with pytest.raises(Feedback):
            check_function(
                _lesson_shortcut, "end_offset_for", ex06.end_offset_cases(p, hidden=True)
            )
    for p in _grid("truncation_offset"):
        with pytest.raises(Feedback):
            check_function(_no_repeat, "truncation_offset", ex06.truncation_cases(p, hidden=True))


def test_the_drawn_caches_are_kafka_like_and_varied() -> None:
    caches = {p["epochs"] for p in _grid("end_offset_for")}
    assert len(caches) == len(_grid("end_offset_for"))
    for epochs in caches:
        assert [e for e, _ in epochs] == sorted({e for e, _ in epochs})
        assert [s for _, s in epochs] == sorted({s for _, s in epochs})
    whys = {c.why for p in _grid("end_offset_for") for c in ex06.end_offset_cases(p, hidden=False)}
    assert len(whys) == 5
    answers = {
        truncation_offset(
            p["leader_epoch"], p["leader_end_offset"], list(p["epochs"]), p["leo"], p["hw"]
        )[1]
        for p in _grid("truncation_offset")
    }
    assert answers == {True, False}  # some learners' followers must ask again
    whys = {
        c.why for p in _grid("truncation_offset") for c in ex06.truncation_cases(p, hidden=True)
    }
    assert len(whys) == 4
    # the lessons' caches are not anyone's
    assert not caches & {((0, 0), (1, 2)), ((0, 0), (2, 4))}
    assert end_offset_for([(0, 0)], 1, 0) == (0, 1)


# ---- 3. predict_truncation -------------------------------------------------------------------


@pytest.mark.parametrize("p", _grid("predict_truncation"), ids=str)
def test_the_worked_truncation_prediction_matches_the_replay(p) -> None:
    got = _run_cell('mine.params("predict_truncation")', p)
    want = QUESTIONS[(ASSIGNMENT, "predict_truncation")].answers(p)
    assert {"follower_log": got["follower_log"], "divergent": got["divergent"]} == want


def test_the_shown_steps_are_the_replayed_ones() -> None:
    from kafkalab import Cluster

    for p in _grid("predict_truncation")[::5]:
        namespace: dict[str, Any] = {"Cluster": Cluster}
        exec(QUESTIONS[(ASSIGNMENT, "predict_truncation")].show(p), namespace)  # noqa: S102
        assert namespace["c"].logs()[2] == ex06._quick_answers(p)["follower_log"]


def test_truncation_predictions_differ() -> None:
    answers = [
        QUESTIONS[(ASSIGNMENT, "predict_truncation")].answers(p)
        for p in _grid("predict_truncation")
    ]
    assert {a["divergent"] for a in answers} == {True, False}
    assert len({tuple(a["follower_log"]) for a in answers}) >= 15


# ---- 4. divergence_scenario ------------------------------------------------------------------


def _scenario_for(p: Mapping[str, Any]) -> str:
    return _run_cell('mine.params("divergence_scenario")', p)["divergence_scenario"]


@pytest.mark.parametrize("p", _grid("divergence_scenario"), ids=str)
def test_every_divergence_version_has_a_scenario_and_the_solution_writes_it(p) -> None:
    text = _scenario_for(p)
    ex06.check_divergence(text, p)
    ex06.check_divergence_fixed(text, p)


@pytest.mark.parametrize("p", _grid("divergence_scenario"), ids=str)
def test_no_catalog_divergence_passes_a_version(p) -> None:
    for name in ("kip101-divergence", "kip279-divergence"):
        with pytest.raises(Feedback, match=r"\[ \]"):
            ex06.check_divergence(scenarios.get(name).source, p)


def test_another_learners_divergence_fails_the_other_versions() -> None:
    grid = _grid("divergence_scenario")
    for mine in grid:
        text = _scenario_for(mine)
        for other in grid:
            if other == mine:
                continue
            with pytest.raises(Feedback):
                ex06.check_divergence(text, other)


def test_divergence_versions_spread() -> None:
    grid = _grid("divergence_scenario")
    assert {p["release"] for p in grid} == {"0.10", "0.11"}
    assert {p["diverged"] for p in grid} == {1, 2}
    assert {p["lost"] for p in grid} == {1, 2, 3}
    drawn = {tuple(sorted(params(ASSIGNMENT, "divergence_scenario", i).items())) for i in IDS}
    assert len(drawn) == len(grid)
