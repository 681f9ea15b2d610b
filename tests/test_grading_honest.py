"""Honest grading results: a question never scores more than its points, and a hand-in that
could not be graded says why in words an instructor understands, and makes `kafkalab grade`
exit non-zero."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import nbformat
import pytest

from kafkalab.cli import main
from kafkalab.grading.assignments import honest_scores

QUESTIONS = {"follower_hw": 4.0, "leader_hw": 5.0}


@pytest.mark.parametrize(
    ("reported", "expected"),
    [
        ({"follower_hw": 200, "leader_hw": 5}, {"follower_hw": 4.0, "leader_hw": 5.0}),
        ({"follower_hw": -3, "leader_hw": 2.5}, {"follower_hw": 0.0, "leader_hw": 2.5}),
        ({"follower_hw": float("nan"), "leader_hw": float("inf")}, dict.fromkeys(QUESTIONS, 0.0)),
        ({"follower_hw": "4", "leader_hw": True, "extra": 9}, dict.fromkeys(QUESTIONS, 0.0)),
        ("not a dict", dict.fromkeys(QUESTIONS, 0.0)),
    ],
    ids=["inflated", "negative", "not finite", "not numbers", "not a mapping"],
)
def test_a_question_never_scores_more_than_its_points(reported: object, expected: dict) -> None:
    assert honest_scores(reported, QUESTIONS) == expected


def test_unusable_hand_ins_are_named_and_the_command_fails(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "handins"
    folder.mkdir()
    (folder / "garbage.ipynb").write_text("this is not JSON")
    (folder / "not-a-notebook.ipynb").write_text(json.dumps({"cells": "nope"}))
    nbformat.write(nbformat.v4.new_notebook(), folder / "empty.ipynb")
    out = tmp_path / "grades.csv"
    code = main(["grade", str(folder), "--assignment", "03-hw-leo", "--out", str(out)])
    assert code == 1
    assert "could not grade 2 of 3 hand-ins" in capsys.readouterr().err
    rows = {r["submission"]: r for r in csv.DictReader(out.open())}
    assert rows["empty.ipynb"]["status"] == "no answers"
    assert rows["empty.ipynb"]["total"] == "0"
    for name in ("garbage.ipynb", "not-a-notebook.ipynb"):
        assert rows[name]["status"].startswith("invalid notebook: "), rows[name]["status"]
        assert rows[name]["total"] == "0"
