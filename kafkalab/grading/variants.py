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

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkalab.grading.checks import Feedback

__all__ = [
    "LEARNER_ID_MAX",
    "QUESTIONS",
    "Exercise",
    "QuestionVariants",
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


@dataclass(frozen=True)
class QuestionVariants:
    """The situations of one question: ``grid`` lists them, ``show`` writes one for the
    learner, ``answers`` replays one and returns what a correct prediction holds (None for a
    question whose answer is built, not predicted)."""

    assignment: str
    question: str
    grid: tuple[Mapping[str, Any], ...]
    show: Callable[[Mapping[str, Any]], str]
    answers: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None

    def pick(self, learner_id: Any) -> Mapping[str, Any]:
        text = check_learner_id(learner_id)
        key = f"{self.assignment}/{self.question}/{text}".encode()
        index = int.from_bytes(hashlib.sha256(key).digest()[:8], "big") % len(self.grid)
        return self.grid[index]


QUESTIONS: dict[tuple[str, str], QuestionVariants] = {}


def _register(variants: QuestionVariants) -> None:
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


# ---- 04-isr --------------------------------------------------------------------------------


def _followers(brokers: int) -> list[int]:
    return list(range(2, brokers + 1))


def _stuck_follower_steps(p: Mapping[str, Any]) -> list[str]:
    """The stuck-follower situation as the lines of a cell the learner could run."""
    others = [f for f in _followers(p["brokers"]) if f != p["stuck"]]
    lines = [
        f'c = Cluster(brokers={p["brokers"]}, config={{"replica.lag.time.max.ms": {p["lag_ms"]}}})',
        'c.produce("m1")',
        f"for follower in {_followers(p['brokers']) * 2}:",
        "    c.fetch(follower)      # at 0 ms every follower holds m1: all caught up",
    ]
    if p["last_fetch_ms"]:
        lines += [
            f"c.advance({p['last_fetch_ms']})        # now {p['last_fetch_ms']} ms",
            f"for follower in {_followers(p['brokers'])}:",
            "    c.fetch(follower)      # nothing new to copy",
        ]
    lines += ['c.produce("m2")']
    for f in others:
        lines += [f"c.fetch({f}); c.fetch({f})        # follower {f} holds m2"]
    lines += [f"# follower {p['stuck']} never fetches again; time passes: c.advance(...)"]
    return lines


def _stuck_follower_cluster(p: Mapping[str, Any]) -> Any:
    from kafkalab import Cluster

    c = Cluster(brokers=p["brokers"], config={"replica.lag.time.max.ms": p["lag_ms"]})
    c.produce("m1")
    for follower in _followers(p["brokers"]) * 2:
        c.fetch(follower)
    if p["last_fetch_ms"]:
        c.advance(p["last_fetch_ms"])
        for follower in _followers(p["brokers"]):
            c.fetch(follower)
    c.produce("m2")
    for f in _followers(p["brokers"]):
        if f != p["stuck"]:
            c.fetch(f)
            c.fetch(f)
    return c


def _predict_isr_answers(p: Mapping[str, Any]) -> dict[str, Any]:
    c = _stuck_follower_cluster(p)
    c.advance(3 * p["lag_ms"])
    removed = [
        e.time_ms
        for e in c.trace.events
        if e.kind == "partition_state" and p["stuck"] not in e.data["isr"]
    ]
    return {"removed_at_ms": removed[0] if removed else None}


_register(
    QuestionVariants(
        "04-isr",
        "predict_isr",
        tuple(
            {"brokers": n, "lag_ms": lag, "stuck": stuck, "last_fetch_ms": last}
            for n, lag, last in itertools.product((3, 4), (6000, 8000, 12000), (0, 1500, 3500))
            for stuck in _followers(n)
        ),
        lambda p: "\n".join(_stuck_follower_steps(p)),
        _predict_isr_answers,
    )
)


def _lag_time_show(p: Mapping[str, Any]) -> str:
    return (
        f"Your followers stall for up to {p['pause_ms']} ms in a garbage-collection pause; such "
        f"a follower must stay in the ISR.\nA follower cut off from its leader must leave the "
        f"ISR within {p['leave_within_ms']} ms."
    )


_register(
    QuestionVariants(
        "04-isr",
        "lag_time",
        tuple(
            {"pause_ms": pause, "leave_within_ms": pause * 2 + extra}
            for pause, extra in itertools.product((4000, 6000, 8000, 10000), (3000, 9000))
        ),
        _lag_time_show,
    )
)


def _legacy_show(p: Mapping[str, Any]) -> str:
    return (
        f"Three brokers running the 0.8 rules with replica.lag.max.messages = "
        f"{p['lag_max_messages']} get one burst of {p['burst']} records; then 10 seconds pass "
        "before the followers fetch again.\n"
        "(The catalog scenario isr-flapping-legacy is this situation with 5000 and 4000.)"
    )


def _legacy_isr(burst: int, lag_max_messages: int | None) -> list[int]:
    """The ISR after the situation: the first two steps of isr-flapping-legacy (both
    followers fetch), a burst of ``burst`` records, 10 s without fetches."""
    from kafkalab import scenarios

    s = scenarios.get("isr-flapping-legacy")
    c = s.cluster({"replica.lag.max.messages": lag_max_messages})
    for step in s.steps[:2]:
        scenarios.apply_step(c, step)
    c.produce("burst", count=burst)
    c.advance(10000)
    return list(c.isr)


def _smallest_dropping_burst(lag_max_messages: int) -> int:
    """The smallest burst after which the 0.8 leader drops its followers, found by replaying
    bursts (a bisection between a burst that keeps them and one that drops them)."""
    keeps, drops = 1, 2 * lag_max_messages + 2
    assert len(_legacy_isr(keeps, lag_max_messages)) == 3
    assert _legacy_isr(drops, lag_max_messages) == [1]
    while drops - keeps > 1:
        middle = (keeps + drops) // 2
        if _legacy_isr(middle, lag_max_messages) == [1]:
            drops = middle
        else:
            keeps = middle
    return drops


def _legacy_answers(p: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "legacy_isr_after_burst": _legacy_isr(p["burst"], p["lag_max_messages"]),
        "time_rule_isr_after_burst": _legacy_isr(p["burst"], None),
        "smallest_dropping_burst": _smallest_dropping_burst(p["lag_max_messages"]),
    }


_register(
    QuestionVariants(
        "04-isr",
        "legacy_rule",
        tuple(
            {"burst": burst, "lag_max_messages": lag_max}
            for burst, lag_max in itertools.product((2500, 3500, 6000, 9000), (3000, 4000, 7000))
        ),
        _legacy_show,
        _legacy_answers,
    )
)
