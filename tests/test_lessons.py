"""Every numbered lesson has the parts a learner relies on: an estimated time, learning goals,
predict-then-run moments, a picture, the Kafka settings and metrics involved, a summary, a link
to the glossary and a tagged parameters cell (papermill runs lessons with small parameters)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from tests.conftest import ROOT

LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))


def _markdown(nb: nbformat.NotebookNode) -> str:
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_lesson_has_every_part(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    text = _markdown(nb)
    first = next(c for c in nb.cells if c.cell_type == "markdown").source
    assert first.startswith("# Lesson "), "the first cell is the title: '# Lesson N: ...'"
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
    numbers = sorted(int(p.name[:2]) for p in LESSONS)
    assert numbers == list(range(1, len(numbers) + 1)) or not numbers
