"""The Spark lessons and exercises: Spark inside Jupyter stays out of the cells, the exercises'
answers are checked against DuckDB with feedback that explains, and grading a Spark exercise
fits the grader's time limits."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kafkalab.spark import session
from tests.conftest import ROOT


class _KernelStream:
    """What ipykernel puts in sys.stdout/sys.stderr: fds 1 and 2 are pipes into the cell, and
    ``_original_stdstream_copy`` is the terminal the kernel started with."""

    def __init__(self, fd: int) -> None:
        self._original_stdstream_copy = fd


def test_inside_jupyter_the_jvm_writes_to_the_terminal_not_the_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = tmp_path / "terminal"
    fd = os.open(terminal, os.O_WRONLY | os.O_CREAT)
    monkeypatch.setattr(sys, "stderr", _KernelStream(fd))
    child = [sys.executable, "-c", "import os; os.write(2, b'WARNING: from the JVM')"]
    with session._jvm_output_to_terminal():
        subprocess.run(child, check=True)
    os.close(fd)
    assert terminal.read_text() == "WARNING: from the JVM"
    cell = subprocess.run(child, check=True, stderr=subprocess.PIPE)  # fd 2 is back
    assert cell.stderr == b"WARNING: from the JVM"


def test_outside_jupyter_nothing_is_redirected(tmp_path: Path) -> None:
    before = os.fstat(2)
    with session._jvm_output_to_terminal():
        during = os.fstat(2)
    assert (before.st_ino, before.st_dev) == (during.st_ino, during.st_dev)


def test_a_local_session_runs_its_jvm_on_the_first_compiler_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KAFKALAB_SCRATCH_DIR", str(tmp_path))
    local = session._conf("local[2]", "1g", None, None)
    for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
        assert session.LOCAL_JIT in local[key].split(), local[key]
        assert "-Dlog4j2.configurationFile=" in local[key]
    # a cluster's JVMs run long jobs: they keep the optimising compiler
    remote = session._conf("spark://master:7077", "1g", None, None)
    assert session.LOCAL_JIT not in remote["spark.driver.extraJavaOptions"]
    assert "spark.executor.extraJavaOptions" not in remote
    # a caller's own options win
    own = session._conf("local[2]", "1g", None, {"spark.driver.extraJavaOptions": "-Xss4m"})
    assert own["spark.driver.extraJavaOptions"] == "-Xss4m"


# ---- the exercises' checks --------------------------------------------------------------------


class _Row(dict):  # type: ignore[type-arg]
    def asDict(self) -> dict[str, object]:  # noqa: N802 (pyspark's name)
        return dict(self)


class _Frame:
    """Just enough of a Spark DataFrame for check_dataframe: columns, select, collect."""

    def __init__(self, rows: list[dict[str, object]]) -> None:
        self.rows, self.columns = rows, list(rows[0]) if rows else []

    def select(self, *columns: str) -> _Frame:
        return _Frame([{c: r[c] for c in columns} for r in self.rows])

    def collect(self) -> list[_Row]:
        return [_Row(r) for r in self.rows]


EXPECTED = [
    {"fault_kind": "crash", "trials": 66, "lossy_trials": 6},
    {"fault_kind": "partition", "trials": 54, "lossy_trials": 12},
]


def test_a_dataframe_answer_matching_the_reference_passes() -> None:
    from kafkalab.grading.spark_checks import check_dataframe

    extra_column = [{**r, "share": 0.1} for r in reversed(EXPECTED)]
    check_dataframe(_Frame(extra_column), EXPECTED, key="fault_kind", question="q")


@pytest.mark.parametrize(
    ("answer", "only", "feedback"),
    [
        (..., None, "replace the ... with your answer"),
        ([1, 2], None, "answer with a Spark DataFrame"),
        (_Frame([{"fault_kind": "crash", "n": 1}]), None, "no column 'trials', 'lossy_trials'"),
        (_Frame(EXPECTED[:1]), None, "no row for fault_kind='partition'"),
        (_Frame(EXPECTED + EXPECTED[:1]), None, "two rows for fault_kind='crash'"),
        (
            _Frame([EXPECTED[0], {**EXPECTED[1], "lossy_trials": 11}]),
            None,
            "for fault_kind='partition', lossy_trials is 11, which is not",
        ),
        (_Frame(EXPECTED + [{**EXPECTED[0], "fault_kind": "x"}]), None, "should not be there"),
        (_Frame(EXPECTED[1:]), ["partition"], None),  # a public test checks one row only
    ],
)
def test_a_wrong_dataframe_answer_says_what_is_wrong(
    answer: Any, only: list[str] | None, feedback: str | None
) -> None:
    from kafkalab.grading import Feedback
    from kafkalab.grading.spark_checks import check_dataframe

    if feedback is None:
        check_dataframe(answer, EXPECTED, key="fault_kind", question="q", only=only)
        return
    with pytest.raises(Feedback, match="q: .*" + feedback.replace("(", r"\(")):
        check_dataframe(answer, EXPECTED, key="fault_kind", question="q", only=only)


def test_a_value_answer_is_compared_as_a_number_or_a_label() -> None:
    from kafkalab.grading import Feedback
    from kafkalab.grading.spark_checks import check_value

    check_value(0.1 + 0.2, 0.3, question="q", why="")
    check_value(None, None, question="q", why="")
    with pytest.raises(Feedback, match="q: 0.31 is not the answer. Divide the sums"):
        check_value(0.31, 0.3, question="q", why="Divide the sums.")
    with pytest.raises(Feedback, match="a Spark DataFrame, not a value"):
        check_value(_Frame(EXPECTED), 0.3, question="q", why="")
    with pytest.raises(Feedback, match="replace the ..."):
        check_value(..., "acks=1", question="q", why="")


def test_the_campaign_is_found_wherever_the_notebook_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kafkalab.campaign import CampaignError
    from kafkalab.grading.spark_checks import campaign_path, reference_value

    monkeypatch.chdir(tmp_path)  # a grader runs submissions in a temporary folder
    assert campaign_path() == ROOT / "datasets" / "small"
    assert reference_value("select count(*) from trials") == 384
    with pytest.raises(CampaignError, match="datasets/nope holds no complete campaign"):
        campaign_path("nope")


# ---- grading a Spark exercise -----------------------------------------------------------------


@pytest.mark.spark
def test_a_spark_exercise_is_graded_within_the_default_time_limits(tmp_path: Path) -> None:
    """The submission starts its own Spark (seconds) in a temporary folder, under the grader's
    default limits per cell and per check, and still earns every point, hidden tests included."""
    pytest.importorskip("pyspark")
    from kafkalab.grading import assignments
    from kafkalab.spark.session import find_java_home

    if find_java_home() is None:
        pytest.skip("Spark needs Java: apt-get install openjdk-17-jre-headless")
    name = "12-spark-analysis"
    folder = tmp_path / "submissions"
    folder.mkdir()
    (folder / "full.ipynb").write_bytes((ROOT / "solutions" / f"{name}.ipynb").read_bytes())
    rows = assignments.grade_folder(folder, name, tmp_path / "grades.csv", jobs=1)
    assert [(r.status, r.total) for r in rows] == [("graded", sum(rows[0].possible.values()))]
    assert rows[0].total == 12  # exercise 12: three questions, 12 points
