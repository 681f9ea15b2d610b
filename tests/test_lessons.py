"""Every numbered lesson has the parts a learner relies on: an estimated time, learning goals,
predict-then-run moments, a picture, the Kafka settings and metrics involved, a summary, a link
to the glossary and a tagged parameters cell (papermill runs lessons with small parameters). A
lesson split into parts (05a, 05b, ...) has all of them in every part, and no lesson or part
runs over an hour."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from kafkalab.pacing import lesson_paths
from tests.conftest import ROOT

LESSONS = lesson_paths(ROOT)  # NN-topic.ipynb, or a lesson's parts NNa-topic.ipynb, NNb-...


def _markdown(nb: nbformat.NotebookNode) -> str:
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_lesson_has_every_part(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    text = _markdown(nb)
    first = next(c for c in nb.cells if c.cell_type == "markdown").source
    label = path.name.split("-")[0]  # "05", or "05a" for a part
    title = f"# Lesson {int(label[:2])}{label[2:]}: "
    assert first.startswith(title), f"the first cell is the title: {title!r}..."
    assert "Estimated time:" in first, "the title cell gives an estimated time"
    for heading in ("## Learning goals", "## Settings and metrics", "## Summary"):
        assert heading in text, f"missing section {heading!r}"
    assert text.count("**Predict**") >= 2, "at least two predict-then-run moments"
    assert "../docs/glossary.md" in text, "a link to the glossary"
    tagged = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1 and tagged[0].cell_type == "code", "one tagged parameters cell"
    pictures = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if {"image/png", "image/svg+xml"} & set(o.get("data", {}))
    ]
    assert pictures, "at least one stored picture"


def test_lessons_are_numbered_without_gaps() -> None:
    numbers = sorted({int(p.name[:2]) for p in LESSONS})
    assert numbers == list(range(1, len(numbers) + 1)) or not numbers
    for number in numbers:
        names = [p.name for p in LESSONS if int(p.name[:2]) == number]
        parts = [name[2] for name in names if name[2] != "-"]
        assert not parts or len(parts) == len(names), f"lesson {number} is whole or in parts"
        assert parts == list("abcdefghij"[: len(parts)]), f"{names}: parts a, b, c, ... in order"
        assert len(parts) != 1, f"{names}: a lesson in one part is a whole lesson (no letter)"


# ---- pacing -------------------------------------------------------------------------------------


def test_pacing_counts_what_a_notebook_asks(tmp_path: Path) -> None:
    import json

    from kafkalab.pacing import MINUTES_PER_QUESTION, READING_WPM, measure

    cells = [
        {"cell_type": "markdown", "source": ["word " * 300, "\n**Predict**: what happens?"]},
        {"cell_type": "code", "source": ["x = 1"]},
        {"cell_type": "raw", "source": ["# BEGIN QUESTION\nname: q1"]},
        {"cell_type": "code", "source": ["y = 2"]},
    ]
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells}))
    pace = measure(path)
    assert (pace.words, pace.code_cells, pace.predictions, pace.questions) == (303, 2, 1, 1)
    assert pace.minutes == 303 / READING_WPM + 2 + 1 + MINUTES_PER_QUESTION


def test_no_lesson_or_part_runs_over_an_hour() -> None:
    from kafkalab.pacing import LONGEST_LESSON_MIN, course

    long = [
        f"{name} ({pace.minutes:.0f} min)"
        for name, pace, _ in course()
        if pace.minutes > LONGEST_LESSON_MIN
    ]
    assert not long, f"split into parts (05a-..., 05b-...): {', '.join(long)}"


def test_each_lesson_and_the_readme_print_the_measured_times() -> None:
    from kafkalab.pacing import course

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name, pace, exercise in course():
        text = (ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8")
        assert f"Estimated time: {pace.rounded} minutes" in text, (
            f"{name}: measured {pace.minutes:.0f} min; update its Estimated time line "
            "(python -m kafkalab.pacing)"
        )
        label = name.split("-")[0]  # "05", or "05a" for a part
        row = next(line for line in readme.splitlines() if line.startswith(f"| {label} |"))
        # the exercise counts after a lesson's last part: the other parts show their own minutes
        minutes = f"{pace.rounded} + {exercise.rounded}" if exercise else f"{pace.rounded}"
        assert row.endswith(f"| {minutes} |"), row


def test_every_lesson_has_an_exercise_after_its_last_part() -> None:
    from kafkalab.pacing import course

    lessons = course()
    numbers = {name[:2] for name, _, _ in lessons}
    assert numbers == {name[:2] for name, _, exercise in lessons if exercise is not None}
    for name, _, exercise in lessons:
        if exercise is not None:
            later = [other for other, _, _ in lessons if other[:2] == name[:2] and other > name]
            assert not later, f"{name}: its exercise counts after its last part, {later[-1]}"
