"""Each learner's own version of a question (kafkalab.grading.variants): drawn from the learner
id alone, every version answerable, and the worked solution's rule agreeing with the replay the
grader uses, in every version."""

from __future__ import annotations

import nbformat
import pytest

from kafkalab.grading import Feedback, check_lag_time_target
from kafkalab.grading.assignments import _sheet_text, assign
from kafkalab.grading.judge import _learner_label
from kafkalab.grading.variants import (
    QUESTIONS,
    Exercise,
    check_learner_id,
    expected,
    params,
    variant_count,
)
from tests.conftest import ROOT

IDS = [f"student-{n:03d}" for n in range(300)]


@pytest.mark.parametrize("key", sorted(QUESTIONS), ids="/".join)
def test_a_learner_always_gets_the_same_version_and_learners_spread_over_them(key) -> None:
    assignment, question = key
    grid = QUESTIONS[key].grid
    assert len({tuple(sorted(p.items())) for p in grid}) == len(grid), "versions repeat"
    assert params(assignment, question, "ada") == params(assignment, question, " ada ")
    drawn = {tuple(sorted(params(assignment, question, i).items())) for i in IDS}
    # 300 ids reach (nearly) every version: at least 80% of them, or all of a small grid
    assert len(drawn) >= min(len(grid), int(0.8 * len(grid)))
    assert variant_count(assignment, question) == len(grid)


def test_questions_draw_their_versions_independently() -> None:
    firsts = {
        (params("04-isr", "predict_isr", i)["lag_ms"], params("04-isr", "lag_time", i)["pause_ms"])
        for i in IDS
    }
    assert len(firsts) > 6  # not one version of the second question per version of the first


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (..., "replace the ..."),
        (None, "replace the ..."),
        (7, "learner_id=7 is not allowed"),
        ("   ", "is not allowed"),
        ("x" * 81, "at most 80"),
        ("ada\x00", "printable"),
    ],
)
def test_a_bad_learner_id_is_refused_with_what_is_allowed(bad, says) -> None:
    with pytest.raises(Feedback, match=None) as err:
        check_learner_id(bad)
    assert says in str(err.value)
    assert _learner_label(bad) == ""


def test_the_notebook_object_prints_what_to_fix_instead_of_raising(capsys) -> None:
    Exercise("04-isr", ...).show("predict_isr")
    assert "replace the ... at the top of the notebook" in capsys.readouterr().out
    Exercise("04-isr", "ada").show("predict_isr")
    assert "c = Cluster(brokers=" in capsys.readouterr().out


def test_an_unknown_question_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="04-isr/predict_isr"):
        params("04-isr", "no_such_question", "ada")


# ---- 04-isr: the worked solution's rule against the replay, in every version -----------------


@pytest.mark.parametrize("p", QUESTIONS[("04-isr", "predict_isr")].grid, ids=str)
def test_predict_isr_rule_matches_the_replay(p) -> None:
    every = p["lag_ms"] // 2
    rule = ((p["last_fetch_ms"] + p["lag_ms"]) // every + 1) * every
    replayed = QUESTIONS[("04-isr", "predict_isr")].answers(p)["removed_at_ms"]
    assert replayed == rule, f"{p}: the replay removed the follower at {replayed}"


@pytest.mark.parametrize("p", QUESTIONS[("04-isr", "lag_time")].grid, ids=str)
def test_every_lag_time_version_has_an_answer_and_the_solution_finds_it(p) -> None:
    answer = (p["pause_ms"] + p["leave_within_ms"] * 2 // 3) // 2
    check_lag_time_target(answer, **p)
    check_lag_time_target(answer, **p, start_ms=7300)
    with pytest.raises(Feedback):  # and the targets bite: the default fails at least one
        check_lag_time_target(30000, **p)


@pytest.mark.parametrize("p", QUESTIONS[("04-isr", "legacy_rule")].grid, ids=str)
def test_legacy_rule_answers_match_the_rule(p) -> None:
    got = QUESTIONS[("04-isr", "legacy_rule")].answers(p)
    dropped = p["burst"] > p["lag_max_messages"]
    assert got["legacy_isr_after_burst"] == ([1] if dropped else [1, 2, 3])
    assert got["time_rule_isr_after_burst"] == [1, 2, 3]
    assert got["smallest_dropping_burst"] == p["lag_max_messages"] + 1


def test_legacy_versions_include_bursts_that_drop_and_bursts_that_do_not() -> None:
    grid = QUESTIONS[("04-isr", "legacy_rule")].grid
    assert {p["burst"] > p["lag_max_messages"] for p in grid} == {True, False}
    drawn = {
        (q["burst"], q["lag_max_messages"])
        for q in (params("04-isr", "legacy_rule", i) for i in IDS)
    }
    assert {burst > lag_max for burst, lag_max in drawn} == {True, False}
    assert expected("04-isr", "legacy_rule", "ada") == QUESTIONS[("04-isr", "legacy_rule")].answers(
        params("04-isr", "legacy_rule", "ada")
    )


# ---- the notebooks and the grade sheet -------------------------------------------------------


def test_the_student_notebook_hides_the_solution_learner_id(tmp_path) -> None:
    made = assign(ROOT / "exercises" / "source" / "04-isr.ipynb", tmp_path)
    student = nbformat.read(made.student, as_version=4)
    solution = nbformat.read(made.solution, as_version=4)
    setup = [c.source for c in student.cells if "learner_id =" in c.source]
    assert setup and "learner_id = ...\n" in setup[0] and "ada.lovelace" not in setup[0]
    assert any('learner_id = "ada.lovelace"' in c.source for c in solution.cells)
    assert "ada.lovelace" not in made.student.read_text()


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("ada", "ada"),
        ("=HYPERLINK(1)", "'=HYPERLINK(1)"),
        ("@cmd", "'@cmd"),
        ("a\tb\nc", "abc"),
        (["x"], ""),
        ("y" * 200, "y" * 80),
    ],
)
def test_a_learner_id_reaches_the_grade_sheet_as_plain_text(value, cell) -> None:
    assert _sheet_text(value) == cell
