"""Exercise 8 (the idempotent producer): each learner's own streams of batches, with retries,
gaps, overlapping batches, new epochs and zombies, for the rule they write and for the log they
predict."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kafkalab.grading.checks import Feedback, time_limit
from kafkalab.grading.variants.base import QuestionVariants, register

ASSIGNMENT = "08-idempotence"
PRODUCER_ID = 7

# What happens in a stream besides fresh batches, in the order the learner's version gives:
EVENTS = {
    "retry": "a retry of a batch the leader stored two batches ago (its answer was lost)",
    "gap": "a batch sent ahead of the one before it, then both in turn",
    "overlap": "two stored batches sent again as one batch (the client re-batched a retry)",
    "bad_epoch": "a new epoch that goes on numbering, then the same batch from sequence 0",
    "zombie": "a new epoch, then a batch of the old one (a zombie)",
    "forgotten": "enough fresh batches to push the first of this epoch out of the five "
    "remembered, then a retry of it",
}

Batch = tuple[tuple[str, ...], int, int]  # (records, producer epoch, first sequence)


def build_stream(events: Sequence[str], start_seq: int = 0, sizes: Sequence[int] = (1,)) -> tuple:
    """The batches of one producer (id 7) as its client sends them: three fresh batches from
    ``start_seq``, then each event followed by a fresh batch. Fresh batches take their sizes from
    ``sizes`` in turn; their records are named a, b, c, ..."""
    out: list[Batch] = []
    names = (f"{chr(97 + i % 26)}{i // 26 or ''}" for i in itertools.count())
    size = itertools.cycle(sizes)
    state = {"epoch": 0, "seq": start_seq}
    sent: list[Batch] = []  # the fresh batches of the current epoch, in order

    def fresh(n: int | None = None) -> Batch:
        n = n or next(size)
        batch = (tuple(next(names) for _ in range(n)), state["epoch"], state["seq"])
        state["seq"] += n
        sent.append(batch)
        return batch

    def bump() -> Batch:
        state["epoch"] += 1
        sent.clear()
        state["seq"] = 0
        return fresh()

    for _ in range(3):
        out.append(fresh())
    for event in events:
        if event == "retry":
            out.append(sent[-2] if len(sent) >= 2 else sent[-1])
        elif event == "gap":
            first, second = fresh(), fresh()
            out += [second, first, second]
        elif event == "overlap":
            while len(sent) < 2:
                out.append(fresh())
            a, b = sent[-2], sent[-1]
            out.append((a[0] + b[0], a[1], a[2]))
        elif event == "bad_epoch":
            records = tuple(next(names) for _ in range(next(size)))
            out.append((records, state["epoch"] + 1, state["seq"]))
            state["epoch"] += 1
            sent.clear()
            state["seq"] = 0
            out.append(_resend(records, state, sent))
        elif event == "zombie":
            old_epoch, old_seq = state["epoch"], state["seq"]
            out.append(bump())
            out.append((tuple(next(names) for _ in range(next(size))), old_epoch, old_seq))
        elif event == "forgotten":
            first_of_epoch = sent[0]
            while len(sent) < 6:
                out.append(fresh())
            out.append(first_of_epoch)
        else:
            raise ValueError(f"unknown event {event!r}")
        out.append(fresh())
    return tuple(out)


def _resend(records: tuple[str, ...], state: dict[str, int], sent: list[Batch]) -> Batch:
    batch = (records, state["epoch"], state["seq"])
    state["seq"] += len(records)
    sent.append(batch)
    return batch


def stream_text(stream: Sequence[Batch]) -> str:
    """The batches as a table the learner reads."""
    lines = ["| # | records | epoch | seq |", "|---|---|---|---|"]
    for number, (records, epoch, first) in enumerate(stream, 1):
        seq = f"{first}" if len(records) == 1 else f"{first}..{first + len(records) - 1}"
        lines.append(f"| {number} | {', '.join(records)} | {epoch} | {seq} |")
    return "\n".join(lines)


def replay_stream(stream: Sequence[Batch], rules: Any = None) -> tuple[Any, list[str]]:
    """Send the batches to a single broker (acks=1) one by one; the cluster, and what became of
    each batch: "APPEND", "DUPLICATE" or the error it was refused with."""
    from kafkalab import Cluster

    c = Cluster(brokers=1, config={"acks": "1"}, rules=rules)
    outcomes = []
    for records, epoch, first in stream:
        duplicates = len(c.trace.of_kind("duplicate"))
        c.produce(
            values=list(records), producer_id=PRODUCER_ID, producer_epoch=epoch, sequence=first
        )
        error = c.trace.of_kind("produce_result")[-1].data["error"]
        if error != "NONE":
            outcomes.append(error)
        elif len(c.trace.of_kind("duplicate")) > duplicates:
            outcomes.append("DUPLICATE")
        else:
            outcomes.append("APPEND")
    return c, outcomes


# ---- 1. sequence_verdict: the learner's rule on their own streams ----------------------------

_RULE_EVENTS = ("retry", "gap", "overlap", "bad_epoch", "zombie", "forgotten")


def _rule_grid() -> tuple[dict[str, Any], ...]:
    hidden = list(itertools.combinations(_RULE_EVENTS, 4))  # 15
    shown = list(itertools.combinations(_RULE_EVENTS[:5], 2))  # 10
    grid: list[dict[str, Any]] = []
    for i, events in enumerate(hidden):
        for order, start in ((events, 0), (tuple(reversed(events)), 3 + i)):
            grid.append(
                {
                    "shown": shown[(3 * len(grid)) % len(shown)],
                    "hidden": order,
                    "hidden_start_seq": start,
                }
            )
    return tuple(grid)


def _rule_show(p: Mapping[str, Any]) -> str:
    stream = build_stream(p["shown"], 0, (1, 2))
    return (
        "The public test sends these batches of producer 7 to one broker, with your "
        "sequence_verdict in place of Kafka's:\n"
        + stream_text(stream)
        + "\nThe hidden test sends another stream drawn for you, with: "
        + "; ".join(EVENTS[e] for e in p["hidden"])
        + "."
    )


register(QuestionVariants(ASSIGNMENT, "sequence_verdict", _rule_grid(), _rule_show))


def shown_stream(p: Mapping[str, Any]) -> tuple:
    return build_stream(p["shown"], 0, (1, 2))


def hidden_stream(p: Mapping[str, Any]) -> tuple:
    return build_stream(p["hidden"], p["hidden_start_seq"], (2, 1, 1))


def check_rule_on_stream(fn: Callable[..., Any], stream: Sequence[Batch], label: str) -> None:
    """Send ``stream`` with Kafka's sequence_verdict and with ``fn`` in its place; the first batch
    whose outcome or log differs raises :class:`Feedback`, with the call of ``fn`` that answered
    differently from Kafka's rule."""
    from kafkalab import Rules
    from kafkalab.grading.checks import _fail_if_looped, _Recorder, _show_call
    from kafkalab.protocol.rules import DEFAULT_RULES

    if not callable(fn):
        raise Feedback(f"sequence_verdict is {fn!r}, not a function: run the cell that defines it")
    _fail_if_looped(fn, "your sequence_verdict")
    kafka, want = replay_stream(stream)
    recorder = _Recorder("sequence_verdict", fn)
    with time_limit(None, f"your sequence_verdict on {label}", culprit=fn):
        try:
            mine, got = replay_stream(stream, Rules(sequence_verdict=recorder))
        except Feedback:
            raise
        except Exception as err:  # a verdict the broker does not know
            raise Feedback(
                f"{label}: with your sequence_verdict the broker failed: {err}"
            ) from None
    wrong = [
        (args, result)
        for args, result in recorder.calls
        if result != DEFAULT_RULES.sequence_verdict(*args)
    ]
    for number, (w, g) in enumerate(zip(want, got, strict=True), 1):
        if w != g:
            lines = [
                f"{label}, batch #{number} {stream[number - 1]}: Kafka's rule gives {w}, yours "
                f"{g}.",
                f"  the log with Kafka's rule: {kafka.logs()[1]}",
                f"  the log with yours:        {mine.logs()[1]}",
            ]
            for args, result in wrong[:1]:
                right = DEFAULT_RULES.sequence_verdict(*args)
                lines.append(
                    f"The first call that differs: {_show_call('sequence_verdict', args)} returned "
                    f"{result!r}; Kafka's rule returns {right!r}."
                )
            raise Feedback("\n".join(lines))
    if kafka.logs() != mine.logs():
        raise Feedback(f"{label}: the logs differ: {kafka.logs()[1]} against {mine.logs()[1]}")


# ---- 2. predict_batches: the learner's stream, replayed --------------------------------------

_PREDICT_EVENTS = ("retry", "gap", "overlap", "bad_epoch", "zombie")


def _predict_grid() -> tuple[dict[str, Any], ...]:
    grid = []
    for i, events in enumerate(itertools.permutations(_PREDICT_EVENTS, 3)):
        grid.append(
            {"events": events, "start_seq": (0, 0, 4)[i % 3], "sizes": ((1,), (1, 2))[i % 2]}
        )
    return tuple(grid)


def predict_stream(p: Mapping[str, Any]) -> tuple:
    return build_stream(p["events"], p["start_seq"], p["sizes"])


def _predict_show(p: Mapping[str, Any]) -> str:
    start = (
        "The broker has never seen producer 7 before batch #1."
        if p["start_seq"] == 0
        else "The broker has no state for producer 7 before batch #1 (it was removed with old "
        "segments), so the producer goes on at the sequence it had reached."
    )
    return f"{start}\n{stream_text(predict_stream(p))}"


def _predict_answers(p: Mapping[str, Any]) -> dict[str, Any]:
    cluster, outcomes = replay_stream(predict_stream(p))
    refused = [n for n, o in enumerate(outcomes, 1) if o not in ("APPEND", "DUPLICATE")]
    return {"predicted_log": cluster.logs()[1], "refused": refused, "outcomes": outcomes}


register(
    QuestionVariants(
        ASSIGNMENT, "predict_batches", _predict_grid(), _predict_show, _predict_answers
    )
)
