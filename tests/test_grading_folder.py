"""Grading a folder of submissions into a CSV, without Docker: full marks, zeros for what is
unanswered, and a submission that raises or loops forever is graded, not hung."""

from __future__ import annotations

import csv
from pathlib import Path

import nbformat
import pytest

from kafkalab.cli import main
from kafkalab.grading import assignments
from tests.conftest import ROOT

NAME = "03-hw-leo"
CORRECT_LEADER_HW = (
    "def leader_hw(hw, leader_leo, isr, remote_leos):\n"
    "    return max(hw, min([leader_leo] + [v for r, v in remote_leos.items() if r in isr]))"
)
# the student notebook's "Your own version" cell, with a learner id written in
SETUP = "from kafkalab.grading.variants import Exercise"
WITH_ID = f'{SETUP}\n\nlearner_id = "ada.lovelace"\nmine = Exercise("{NAME}", learner_id)'


def _variant(target: Path, answers: dict[str, str]) -> None:
    """The student notebook with some answer cells replaced (by their first line)."""
    nb = nbformat.read(ROOT / "exercises" / f"{NAME}.ipynb", as_version=4)
    for cell in nb.cells:
        for start, source in answers.items():
            if cell.source.startswith(start):
                cell.source = source
    nbformat.write(nb, target)


@pytest.fixture(scope="module")
def submissions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from kafkalab.grading.variants import expected

    folder = tmp_path_factory.mktemp("submissions")
    hws = expected(NAME, "predict_hw", "ada.lovelace")["predicted_hw"]
    (folder / "full.ipynb").write_bytes((ROOT / "solutions" / f"{NAME}.ipynb").read_bytes())
    (folder / "blank.ipynb").write_bytes((ROOT / "exercises" / f"{NAME}.ipynb").read_bytes())
    _variant(
        folder / "raises.ipynb",
        {
            SETUP: WITH_ID,
            "def follower_hw": "def follower_hw(leader_hw, follower_leo):\n    return 1 / 0",
            "predicted_hw": f"predicted_hw = {hws!r}",
        },
    )
    _variant(
        folder / "loops.ipynb",
        {
            SETUP: WITH_ID,
            "def follower_hw": "def follower_hw(leader_hw, follower_leo):\n    while True:\n"
            "        pass",
            "def leader_hw": CORRECT_LEADER_HW,
            "predicted_hw": "while True:\n    pass",  # a cell that never ends
        },
    )
    other = nbformat.read(ROOT / "exercises" / "04-isr.ipynb", as_version=4)
    nbformat.write(other, folder / "wrong-assignment.ipynb")
    return folder


def test_grade_a_folder_into_a_csv(submissions: Path, tmp_path: Path) -> None:
    out = tmp_path / "grades.csv"
    code = main(
        [
            "grade",
            str(submissions),
            "--assignment",
            NAME,
            "--out",
            str(out),
            "--cell-timeout",
            "8",
            "--time-limit",
            "2",
        ]
    )
    assert code == 1  # the wrong assignment could not be graded
    rows = {r["submission"]: r for r in csv.DictReader(out.open())}
    header = ["submission", "learner_id", "follower_hw", "leader_hw", "predict_hw", "total"]
    assert list(next(iter(rows.values())))[:6] == header
    got = {
        name: (r["follower_hw"], r["leader_hw"], r["predict_hw"], r["total"], r["status"])
        for name, r in rows.items()
    }
    assert got["full.ipynb"] == ("4", "5", "3", "12", "graded")
    assert got["blank.ipynb"] == ("0", "0", "0", "0", "graded")
    assert got["raises.ipynb"] == ("0", "0", "3", "3", "graded")
    assert got["loops.ipynb"][:4] == ("0", "5", "0", "5")
    assert got["loops.ipynb"][4].startswith("timed out: cell ")  # the cell that never ends
    assert "ran past 8 s" in got["loops.ipynb"][4]
    assert got["wrong-assignment.ipynb"][:4] == ("0", "0", "0", "0")
    assert got["wrong-assignment.ipynb"][4] == (
        "wrong assignment: a notebook of '04-isr', not '03-hw-leo'"
    )
    assert {r["possible"] for r in rows.values()} == {"12"}


def test_a_submission_over_its_time_budget_scores_zero(submissions: Path, tmp_path: Path) -> None:
    one = tmp_path / "one"
    one.mkdir()
    (one / "full.ipynb").write_bytes((submissions / "full.ipynb").read_bytes())
    rows = assignments.grade_folder(one, NAME, tmp_path / "g.csv", submission_timeout_s=1)
    assert [(r.submission, r.total, r.status) for r in rows] == [
        ("full.ipynb", 0, "timed out after 1 s")
    ]


def test_bad_grade_arguments_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["grade", str(tmp_path), "--assignment", "99-nope", "--out", "g.csv"]) == 2
    err = capsys.readouterr().err
    assert "assignment '99-nope' does not exist: use one of " in err
    assert f" {NAME}, " in err  # the message lists the assignments there are
    assert main(["grade", str(tmp_path / "x"), "--assignment", NAME, "--out", "g.csv"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["grade", str(tmp_path), "--assignment", NAME, "--out", "g.csv"]) == 2
    assert "holds no .ipynb or .zip submissions" in capsys.readouterr().err


def test_an_interrupted_grading_run_leaves_nothing_behind(
    submissions: Path, tmp_path: Path
) -> None:
    """SIGTERM (or Ctrl-C) on kafkalab grade stops every judge and worker and removes the
    temporary folder with the hidden tests."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import psutil

    # its own temporary folder, so that gradings running beside it (pytest-xdist) do not count
    own_tmp = tmp_path / "tmp"
    own_tmp.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafkalab.cli", "grade", str(submissions), "--assignment", NAME]
        + ["--out", str(tmp_path / "g.csv")],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(own_tmp)},
    )
    deadline = time.monotonic() + 120
    judges: list[psutil.Process] = []
    while not judges and time.monotonic() < deadline:
        time.sleep(0.2)
        judges = [
            p
            for p in psutil.Process(proc.pid).children(recursive=True)
            if "kafkalab.grading.judge" in " ".join(p.cmdline())
        ]
    assert judges, "no judge started"
    assert list(own_tmp.glob("kafkalab-grade-*")), "the run's folder is where the test looks"
    family = psutil.Process(proc.pid).children(recursive=True)
    os.kill(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "kafkalab: interrupted" in err
    time.sleep(1)
    alive = []
    for p in family:
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p.cmdline())
        except psutil.NoSuchProcess:
            pass
    assert not alive
    assert not list(own_tmp.glob("kafkalab-grade-*"))
    assert not (tmp_path / "g.csv").exists()
