"""Exercise 8's versions (kafkalab.grading.variants.ex08): the streams are well formed, Kafka's
rule passes every learner's streams and the usual wrong rules fail them, and the worked
solution's bookkeeping agrees with the replay in every version."""

from __future__ import annotations

import pytest

from kafkalab.grading import Feedback
from kafkalab.grading.variants import QUESTIONS, ex08, expected, params
from kafkalab.grading.variants.ex08 import (
    build_stream,
    check_rule_on_stream,
    hidden_stream,
    predict_stream,
    replay_stream,
    shown_stream,
)
from kafkalab.protocol.rules import sequence_verdict as kafka_rule

A = "08-idempotence"
IDS = [f"student-{n:03d}" for n in range(300)]


def grid(question: str) -> tuple:
    return QUESTIONS[(A, question)].grid


# ---- wrong rules a learner writes --------------------------------------------------------------


def forgetful(known_epoch, cached, epoch, first_seq, last_seq):
    verdict = kafka_rule(known_epoch, cached, epoch, first_seq, last_seq)
    return "APPEND" if verdict == "DUPLICATE" else verdict


def last_batch_only(known_epoch, cached, epoch, first_seq, last_seq):
    if epoch == known_epoch and cached and (first_seq, last_seq) in cached[:-1]:
        return "OUT_OF_ORDER_SEQUENCE_NUMBER"
    return kafka_rule(known_epoch, cached, epoch, first_seq, last_seq)


def first_seq_only(known_epoch, cached, epoch, first_seq, last_seq):
    if epoch == known_epoch and any(first_seq == c[0] for c in cached):
        return "DUPLICATE"
    return kafka_rule(known_epoch, cached, epoch, first_seq, last_seq)


def no_kip360(known_epoch, cached, epoch, first_seq, last_seq):
    if known_epoch == -1 and first_seq != 0:
        return "OUT_OF_ORDER_SEQUENCE_NUMBER"
    return kafka_rule(known_epoch, cached, epoch, first_seq, last_seq)


def any_new_epoch(known_epoch, cached, epoch, first_seq, last_seq):
    if epoch > known_epoch:
        return "APPEND"
    return kafka_rule(known_epoch, cached, epoch, first_seq, last_seq)


def epoch_blind(known_epoch, cached, epoch, first_seq, last_seq):
    return kafka_rule(known_epoch, cached, max(epoch, known_epoch), first_seq, last_seq)


def remembers_all(known_epoch, cached, epoch, first_seq, last_seq):
    # a retry older than the five cached batches taken for a duplicate
    if epoch == known_epoch and cached and first_seq < cached[0][0]:
        return "DUPLICATE"
    return kafka_rule(known_epoch, cached, epoch, first_seq, last_seq)


WRONG = [
    forgetful,
    last_batch_only,
    first_seq_only,
    no_kip360,
    any_new_epoch,
    epoch_blind,
    remembers_all,
]


def caught(rule, stream) -> bool:
    try:
        check_rule_on_stream(rule, stream, "stream")
    except Feedback:
        return True
    return False


# ---- 1. sequence_verdict ---------------------------------------------------------------------


@pytest.mark.parametrize("p", grid("sequence_verdict"), ids=str)
def test_kafkas_rule_passes_every_stream_and_wrong_ones_fail(p) -> None:
    for stream in (shown_stream(p), hidden_stream(p)):
        check_rule_on_stream(kafka_rule, stream, "stream")
    assert sum(caught(rule, hidden_stream(p)) for rule in WRONG) >= 3


def test_every_wrong_rule_is_caught_by_some_hidden_stream_and_most_shown_ones() -> None:
    for rule in WRONG:
        hidden = [caught(rule, hidden_stream(p)) for p in grid("sequence_verdict")]
        assert any(hidden), rule.__name__
    shown = {tuple(p["shown"]) for p in grid("sequence_verdict")}
    assert len(shown) >= 8


def test_the_feedback_shows_the_batch_and_the_call() -> None:
    stream = build_stream(("retry",), 0, (1,))
    with pytest.raises(Feedback) as err:
        check_rule_on_stream(forgetful, stream, "your stream")
    text = str(err.value)
    assert "your stream, batch #4" in text and "Kafka's rule gives DUPLICATE, yours APPEND" in text
    assert "returned 'APPEND'; Kafka's rule returns 'DUPLICATE'" in text
    with pytest.raises(Feedback, match="not a function"):
        check_rule_on_stream(..., stream, "your stream")
    with pytest.raises(Feedback, match="returned None"):
        check_rule_on_stream(lambda *a: None, stream, "your stream")
    with pytest.raises(Feedback, match="broker failed"):
        check_rule_on_stream(lambda *a: "MAYBE", stream, "your stream")


# ---- 2. predict_batches ------------------------------------------------------------------------


def worked_solution(stream) -> tuple[list[str], list[int]]:
    """The notebook's solution: keep the producer's state as the broker does, batch by batch,
    and let Kafka's rule decide."""
    known_epoch, cached, log, refused = -1, [], [], []
    for number, (records, epoch, first) in enumerate(stream, 1):
        last = first + len(records) - 1
        verdict = kafka_rule(known_epoch, cached, epoch, first, last)
        if verdict == "APPEND":
            if epoch != known_epoch:
                known_epoch, cached = epoch, []
            cached = [*cached, (first, last)][-5:]
            log += records
        elif verdict != "DUPLICATE":
            refused.append(number)
    return log, refused


@pytest.mark.parametrize("p", grid("predict_batches"), ids=str)
def test_the_worked_solution_matches_the_replay(p) -> None:
    got = QUESTIONS[(A, "predict_batches")].answers(p)
    log, refused = worked_solution(predict_stream(p))
    assert (got["predicted_log"], got["refused"]) == (log, refused)
    assert got["refused"], "every version refuses a batch"


def test_predict_versions_differ_and_learners_get_them() -> None:
    versions = {tuple(sorted(params(A, "predict_batches", i).items())) for i in IDS}
    answers = QUESTIONS[(A, "predict_batches")].answers
    drawn = {
        (tuple(answers(dict(v))["predicted_log"]), tuple(answers(dict(v))["refused"]))
        for v in versions
    }
    assert len(drawn) >= 40
    assert expected(A, "predict_batches", "ada") == answers(params(A, "predict_batches", "ada"))


def test_the_replay_names_each_outcome() -> None:
    cluster, outcomes = replay_stream(build_stream(("zombie", "gap"), 0, (1,)))
    assert "INVALID_PRODUCER_EPOCH" in outcomes and "OUT_OF_ORDER_SEQUENCE_NUMBER" in outcomes
    assert len(cluster.logs()[1]) == outcomes.count("APPEND")


def test_kip360_start_is_an_append() -> None:
    _, outcomes = replay_stream(build_stream((), 4, (1,)))
    assert outcomes == ["APPEND"] * 3
    assert ex08.EVENTS.keys() >= {"retry", "gap", "overlap", "bad_epoch", "zombie", "forgotten"}
