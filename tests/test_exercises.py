"""The graded exercises: each source notebook generates the committed student and solution
notebooks; a fresh student notebook shows every question failing; every solution passes every
public and hidden test (its stored check outputs say so, and ``make test`` re-runs it under
nbval to compare)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat
import pytest

from kafkalab.grading import assignments
from kafkalab.pacing import lesson_paths
from tests.conftest import ROOT, execute_notebook, starts_spark

SOURCES = assignments.source_notebooks(ROOT)
UNSTABLE = re.compile(r"\bat 0x[0-9a-f]+|(?<![\w.])/(?:home|root|tmp|work|Users|usr)/")


def _checks(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("grader.check(")]


def _question(cell: nbformat.NotebookNode) -> str:
    return cell.source.split('"')[1]


def _plain(cell: nbformat.NotebookNode) -> str:
    return "".join(
        o.get("data", {}).get("text/plain", "") + o.get("text", "") for o in cell.outputs
    )


def test_every_lesson_with_simulator_features_has_an_assignment() -> None:
    """Lessons 1 to 10 each have an assignment, named by the lesson's number: a lesson in parts
    (05a to 05c, 06a and 06b) has one, 05-controller, 06-leader-epoch."""
    lessons = {p.name[:2] for p in lesson_paths(ROOT) if int(p.name[:2]) <= 10}
    assert lessons == {f"{n:02}" for n in range(1, 11)}
    assert lessons <= {name[:2] for name in SOURCES}
    assert {"05-controller", "06-leader-epoch", "07-acks-min-isr"} <= set(SOURCES)


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_source_has_questions_with_public_and_hidden_tests(name: str) -> None:
    solution = nbformat.read(ROOT / "solutions" / f"{name}.ipynb", as_version=4)
    tests = solution.metadata["otter"]["tests"]
    assert len(tests) >= 2, f"{name}: at least two questions"
    for question, code in tests.items():
        assert "hidden=False" in code, f"{name}/{question}: a public test gives feedback"
        assert "points=" in code and "points=None" not in code, f"{name}/{question}: points"
    assert any("hidden=True" in code for code in tests.values()), f"{name}: hidden tests"


def test_committed_notebooks_are_what_the_sources_generate() -> None:
    problems = assignments.out_of_sync(ROOT)
    assert not problems, "\n".join(problems)


def test_out_of_sync_names_an_edited_or_missing_notebook(tmp_path: Path) -> None:
    name = next(iter(SOURCES))
    for folder in ("exercises/source", "exercises", "solutions"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    shutil.copy(SOURCES[name], tmp_path / "exercises" / "source")
    shutil.copy(ROOT / "exercises" / f"{name}.ipynb", tmp_path / "exercises")
    edited = nbformat.read(ROOT / "solutions" / f"{name}.ipynb", as_version=4)
    edited.cells[1].source += "\nan edit made by hand"
    nbformat.write(edited, tmp_path / "solutions" / f"{name}.ipynb")
    assert assignments.out_of_sync(tmp_path) == [
        f"solutions/{name}.ipynb differs from exercises/source/{name}.ipynb: run make exercises"
    ]
    (tmp_path / "exercises" / f"{name}.ipynb").unlink()
    assert f"exercises/{name}.ipynb is missing: run make exercises" in assignments.out_of_sync(
        tmp_path
    )


def test_assign_is_deterministic(tmp_path: Path) -> None:
    name = next(iter(SOURCES))
    first = assignments.assign(SOURCES[name], tmp_path / "a")
    second = assignments.assign(SOURCES[name], tmp_path / "b")
    assert first.student.read_bytes() == second.student.read_bytes()
    assert first.solution.read_bytes() == second.solution.read_bytes()


def _student(name: str) -> Path:
    return ROOT / "exercises" / f"{name}.ipynb"


@pytest.mark.notebooks
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=[pytest.mark.spark] if starts_spark(_student(name)) else [])
        for name in sorted(SOURCES)
    ],
)
def test_student_notebook_runs_and_shows_every_question_failing(name: str, tmp_path: Path) -> None:
    path = _student(name)
    student = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") for c in student.cells if c.cell_type == "code"), (
        f"{name}: the student notebook is handed out without outputs"
    )
    # One at a time: papermill runs a kernel in its notebook's folder by changing this
    # process's working directory, so two runs in threads could start a kernel in the wrong
    # folder. make test spreads the test files over the cores instead (pytest-xdist).
    executed = execute_notebook(path, tmp_path / path.name)
    outputs = [o for c in executed.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"], f"{name}: a cell raised"
    checks = _checks(executed)
    solution = nbformat.read(ROOT / "solutions" / path.name, as_version=4)
    assert {_question(c) for c in checks} == set(solution.metadata["otter"]["tests"])
    for cell in checks:
        text = _plain(cell)
        assert "Test case failed" in text, f"{name}/{_question(cell)} should fail unanswered"
        assert "Feedback: " in text, f"{name}/{_question(cell)}: the failure explains itself"


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_solution_is_stored_passing_every_public_and_hidden_test(name: str) -> None:
    solution = nbformat.read(ROOT / "solutions" / f"{name}.ipynb", as_version=4)
    questions = set(solution.metadata["otter"]["tests"])
    checks = _checks(solution)
    assert {_question(c) for c in checks} == questions
    for cell in checks:
        assert cell.execution_count is not None, f"{name}: run make exercises to store outputs"
        assert "All test cases passed!" in _plain(cell), f"{name}/{_question(cell)} fails"
    for cell in solution.cells:
        for output in cell.get("outputs", []):
            text = _plain(cell)
            found = UNSTABLE.search(text)
            assert found is None, f"{name} stores an unstable output: {found.group(0)!r}"
            assert output.output_type != "error", f"{name} stores an error"


def test_the_question_table_lists_every_question_with_its_versions() -> None:
    """exercises/README.md's table of every question: one row per question of every source,
    and each row's version count is the size of the question's grid of situations."""
    from kafkalab.grading.variants import QUESTIONS

    text = (ROOT / "exercises" / "README.md").read_text(encoding="utf-8")
    rows = [line.split(" | ") for line in text.splitlines() if re.match(r"\| \d\d \| \w", line)]
    table = {(row[0].strip("| "), row[1]): row[-1].strip(" |") for row in rows}
    by_number = {name[:2]: name for name in SOURCES}
    questions = {
        (name[:2], q)
        for name in SOURCES
        for q in nbformat.read(ROOT / "solutions" / f"{name}.ipynb", as_version=4).metadata[
            "otter"
        ]["tests"]
    }
    assert set(table) == questions
    for (number, question), versions in table.items():
        grid = QUESTIONS.get((by_number[number], question))
        assert int(versions) == (len(grid.grid) if grid else 1), (number, question)
    every = [number for number, _ in questions]
    # every exercise has versions: no question repeats the lesson for everyone alike
    assert {number for (number, q) in table if (by_number[number], q) in QUESTIONS} == set(every)


def test_each_exercise_states_its_measured_time() -> None:
    """An exercise's intro says the minutes the README's lesson table shows for it."""
    from kafkalab.pacing import course

    for name, _, exercise in course():
        if exercise is None:
            continue
        source = next((ROOT / "exercises" / "source").glob(f"{name[:2]}-*.ipynb"))
        text = source.read_text(encoding="utf-8")
        assert f"**Time:** about {exercise.rounded} minutes" in text, source.name
