"""Each learner's own version of an exercise question.

A question with variants holds a finite list of situations (other numbers, another broker
failing, another config) that the lessons never show. Which one a learner gets is drawn from the
``learner_id`` written at the top of their notebook (their name or student id, as the
instructor's list has it): the same id always gives the same situation, and the grader draws it
again from the hand-in, so two learners rarely share an answer and nobody can copy a lesson's
output. The grade sheet shows each hand-in's ``learner_id`` next to its points.

In a notebook::

    learner_id = "ada.lovelace"
    mine = Exercise("04-isr", learner_id)
    mine.show("predict_isr")       # prints this learner's situation
    mine.params("predict_isr")     # the same, as a dict

A test asks for the expected answers of the learner's situation, computed by replaying it in the
simulator (:func:`expected`), or checks what the learner built against it (:func:`params`).
"""

from kafkalab.grading.variants import (
    ex01,
    ex02,
    ex03,
    ex04,
    ex05,
    ex06,
    ex07,
    ex08,
    ex09,
    ex10,
    ex11,
    ex12,
)
from kafkalab.grading.variants.base import (
    LEARNER_ID_MAX,
    QUESTIONS,
    Exercise,
    QuestionVariants,
    check_learner_id,
    expected,
    params,
    register,
    variant_count,
)

# Each assignment's versions live in a module of this package named after it (ex04.py for
# 04-isr), which registers its questions when imported.
ASSIGNMENT_MODULES = (ex01, ex02, ex03, ex04, ex05, ex06, ex07, ex08, ex09, ex10, ex11, ex12)

__all__ = [
    "ASSIGNMENT_MODULES",
    "LEARNER_ID_MAX",
    "QUESTIONS",
    "Exercise",
    "QuestionVariants",
    "check_learner_id",
    "expected",
    "params",
    "register",
    "variant_count",
]
