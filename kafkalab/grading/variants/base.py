"""The machinery of per-learner versions: drawing a learner's version, and the registry of
every question's versions (see :mod:`kafkalab.grading.variants`)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkalab.grading.checks import Feedback

__all__ = [
    "LEARNER_ID_MAX",
    "QUESTIONS",
    "Exercise",
    "QuestionVariants",
    "register",
    "check_learner_id",
    "expected",
    "params",
    "variant_count",
]

LEARNER_ID_MAX = 80


def check_learner_id(learner_id: Any) -> str:
    """The learner id, stripped; a clear :class:`Feedback` for anything else."""
    if learner_id is Ellipsis or learner_id is None:
        raise Feedback(
            "learner_id: replace the ... at the top of the notebook with your name or student "
            'id, in quotes (for example learner_id = "ada.lovelace"): it chooses your own '
            "version of each question"
        )
    if not isinstance(learner_id, str) or not learner_id.strip():
        raise Feedback(
            f"learner_id={learner_id!r} is not allowed: use your name or student id, a "
            "non-empty text in quotes"
        )
    text = learner_id.strip()
    if len(text) > LEARNER_ID_MAX or not text.isprintable():
        raise Feedback(
            f"learner_id={text[:20]!r}... is not allowed: use at most {LEARNER_ID_MAX} "
            "printable characters (your name or student id)"
        )
    return text


@dataclass(frozen=True, repr=False)
class QuestionVariants:
    """The situations of one question: ``grid`` lists them, ``show`` writes one for the
    learner, ``answers`` replays one and returns what a correct prediction holds (None for a
    question whose answer is built, not predicted)."""

    assignment: str
    question: str
    grid: tuple[Mapping[str, Any], ...]
    show: Callable[[Mapping[str, Any]], str]
    answers: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None

    def __repr__(self) -> str:  # short and stable: test ids are built from it
        return f"QuestionVariants({self.assignment}/{self.question}, {len(self.grid)} versions)"

    def pick(self, learner_id: Any) -> Mapping[str, Any]:
        text = check_learner_id(learner_id)
        key = f"{self.assignment}/{self.question}/{text}".encode()
        index = int.from_bytes(hashlib.sha256(key).digest()[:8], "big") % len(self.grid)
        return self.grid[index]


QUESTIONS: dict[tuple[str, str], QuestionVariants] = {}


def register(variants: QuestionVariants) -> None:
    """Add a question's versions (each assignment's module calls it for its questions)."""
    QUESTIONS[(variants.assignment, variants.question)] = variants


def _lookup(assignment: str, question: str) -> QuestionVariants:
    found = QUESTIONS.get((assignment, question))
    if found is None:
        known = ", ".join(f"{a}/{q}" for a, q in sorted(QUESTIONS))
        raise KeyError(f"no variants for {assignment}/{question}: known are {known}")
    return found


def variant_count(assignment: str, question: str) -> int:
    """How many different situations the question has."""
    return len(_lookup(assignment, question).grid)


def params(assignment: str, question: str, learner_id: Any) -> dict[str, Any]:
    """The learner's situation for the question, as plain data."""
    return dict(_lookup(assignment, question).pick(learner_id))


def expected(assignment: str, question: str, learner_id: Any) -> dict[str, Any]:
    """What a correct prediction holds in the learner's situation, found by replaying it."""
    variants = _lookup(assignment, question)
    if variants.answers is None:
        raise KeyError(f"{assignment}/{question} asks to build something: it has no answers")
    return variants.answers(variants.pick(learner_id))


class Exercise:
    """One learner's versions of an assignment's questions."""

    def __init__(self, assignment: str, learner_id: Any) -> None:
        self.assignment = assignment
        self.learner_id = learner_id  # checked when a question is read

    def params(self, question: str) -> dict[str, Any]:
        """The learner's situation for ``question``, as a dict."""
        return params(self.assignment, question, self.learner_id)

    def text(self, question: str) -> str:
        variants = _lookup(self.assignment, question)
        return variants.show(variants.pick(self.learner_id))

    def show(self, question: str) -> None:
        """Print the learner's situation for ``question`` (or what to fix first)."""
        try:
            print(self.text(question))
        except Feedback as err:
            print(err)

    def __repr__(self) -> str:
        return f"Exercise({self.assignment!r}, {self.learner_id!r})"
