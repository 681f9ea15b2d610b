"""How long a lesson takes, measured from its notebook rather than guessed.

A learner reads the prose at :data:`READING_WPM` words a minute (technical text, read to be
understood), spends :data:`MINUTES_PER_CELL` on each code cell (read it, run it, look at what it
prints or draws), :data:`MINUTES_PER_PREDICTION` on each **Predict** prompt, and in an exercise
:data:`MINUTES_PER_QUESTION` on each graded question besides reading and running it. A lesson's
"Estimated time" line and the README's lesson table print these figures, rounded to 5 minutes;
``tests/test_lessons.py`` checks that they still match the notebooks.

A lesson longer than :data:`LONGEST_LESSON_MIN` is split into parts, each a notebook of its own
named by the lesson's number and a letter (``05a-...``, ``05b-...``). The parts share the
lesson's one exercise (``exercises/source/05-*.ipynb``), which counts after the last part.

    python -m kafkalab.pacing        # the table, lesson by lesson
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "MINUTES_PER_CELL",
    "MINUTES_PER_PREDICTION",
    "MINUTES_PER_QUESTION",
    "READING_WPM",
    "Pace",
    "course",
    "lesson_paths",
    "measure",
]

READING_WPM = 150
MINUTES_PER_CELL = 1.0
MINUTES_PER_PREDICTION = 1.0
MINUTES_PER_QUESTION = 5.0
LONGEST_LESSON_MIN = 60  # a lesson longer than this should be split
LESSON_GLOBS = ("[0-9][0-9]-*.ipynb", "[0-9][0-9][a-z]-*.ipynb")  # a lesson, or a part of one

ROOT = Path(__file__).resolve().parent.parent
_WORD = re.compile(r"[A-Za-z0-9][\w'.-]*|[\u4e00-\u9fff]")


@dataclass(frozen=True)
class Pace:
    """What a notebook asks of a learner, and the minutes it takes."""

    words: int
    code_cells: int
    predictions: int
    questions: int

    @property
    def minutes(self) -> float:
        return (
            self.words / READING_WPM
            + self.code_cells * MINUTES_PER_CELL
            + self.predictions * MINUTES_PER_PREDICTION
            + self.questions * MINUTES_PER_QUESTION
        )

    @property
    def rounded(self) -> int:
        """The minutes rounded to a multiple of 5 (at least 5)."""
        return max(5, 5 * round(self.minutes / 5))


def measure(path: str | Path) -> Pace:
    """Count what the notebook at ``path`` asks: prose words, code cells, predictions and
    graded questions (otter's ``# BEGIN QUESTION`` cells)."""
    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    words = code = predictions = questions = 0
    for cell in cells:
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            words += len(_WORD.findall(text))
            predictions += text.count("**Predict")
        elif cell["cell_type"] == "code":
            code += 1
        elif text.startswith("# BEGIN QUESTION"):
            questions += 1
    return Pace(words, code, predictions, questions)


def lesson_paths(root: Path = ROOT) -> list[Path]:
    """The lesson notebooks in course order: ``NN-topic.ipynb``, or a lesson's parts
    ``NNa-topic.ipynb``, ``NNb-topic.ipynb``, ..."""
    folder = root / "notebooks"
    return sorted(path for pattern in LESSON_GLOBS for path in folder.glob(pattern))


def course(root: Path = ROOT) -> list[tuple[str, Pace, Pace | None]]:
    """Each lesson's (or part's) name, its pace, and its exercise's: the exercise of lesson NN
    is ``exercises/source/NN-*.ipynb``, counted on the lesson's last part (None on the other
    parts, and for a lesson without one)."""
    lessons = lesson_paths(root)
    last = {path.name[:2]: path for path in lessons}  # in course order: the last part wins
    out = []
    for lesson in lessons:
        number = lesson.name[:2]
        exercises = sorted((root / "exercises" / "source").glob(f"{number}-*.ipynb"))
        exercise = measure(exercises[0]) if exercises and last[number] == lesson else None
        out.append((lesson.stem, measure(lesson), exercise))
    return out


def main() -> int:
    print(f"{'lesson':28} {'words':>6} {'cells':>5} {'predict':>7} {'min':>4} {'exercise':>8}")
    for name, pace, exercise in course():
        extra = f"{exercise.rounded:>8}" if exercise else f"{'-':>8}"
        flag = "  over an hour: split it" if pace.minutes > LONGEST_LESSON_MIN else ""
        print(
            f"{name:28} {pace.words:>6} {pace.code_cells:>5} {pace.predictions:>7} "
            f"{pace.rounded:>4} {extra}{flag}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
