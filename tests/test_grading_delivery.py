"""Grading checks for the producer, transaction and consumer exercises: the consumer loop
replayed with a crash after every call, and the hanging-transaction scenario."""

from __future__ import annotations

import itertools
import re

import pytest

from kafkalab import scenarios
from kafkalab.grading import Feedback, check_consumer_loop, check_scenario_text
from kafkalab.grading.delivery_checks import processed_after_crash


def test_commit_after_processing_is_at_least_once_in_every_rotation() -> None:
    for order in (["poll", "process", "commit"], ["process", "commit", "poll"]):
        check_consumer_loop(order, "at-least-once")
    with pytest.raises(Feedback, match="processed twice"):
        check_consumer_loop(["poll", "process", "commit"], "at-most-once")


def test_commit_before_processing_loses_records_at_the_crash_it_names() -> None:
    check_consumer_loop(["poll", "commit", "process"], "at-most-once")
    with pytest.raises(Feedback) as err:
        check_consumer_loop(["poll", "commit", "process"], "at-least-once")
    message = str(err.value)
    assert "crashes after call 2 of iteration 1" in message
    assert "['m1', 'm2'] are never processed" in message


def test_every_order_gives_exactly_one_of_the_two_guarantees() -> None:
    for order in itertools.permutations(["poll", "process", "commit"]):
        passed = []
        for semantics in ("at-least-once", "at-most-once"):
            try:
                check_consumer_loop(list(order), semantics)
                passed.append(semantics)
            except Feedback:
                pass
        assert len(passed) == 1, (order, passed)


def test_the_crash_replay_restarts_from_the_committed_position() -> None:
    written, processed = processed_after_crash(["poll", "process", "commit"], crash_after=2)
    assert written == ["m1", "m2", "m3", "m4"]
    assert processed == ["m1", "m2", "m1", "m2", "m3", "m4"]


def test_a_malformed_loop_gets_a_clear_message() -> None:
    with pytest.raises(Feedback, match="replace the"):
        check_consumer_loop(..., "at-least-once")
    with pytest.raises(Feedback, match="exactly once"):
        check_consumer_loop(["poll", "poll", "commit"], "at-least-once")
    with pytest.raises(Feedback, match="not a list"):
        check_consumer_loop("poll process commit", "at-least-once")


def test_the_catalog_hanging_transaction_is_one_and_its_fixes_are_not() -> None:
    s = scenarios.get("txn-hanging-transaction")
    check_scenario_text(s.source, "hanging-transaction")
    fixed = s.source.replace(
        "transaction.partition.verification.enable: false",
        "transaction.partition.verification.enable: true",
    )
    with pytest.raises(Feedback) as err:
        check_scenario_text(fixed, "hanging-transaction")
    assert "[ ] yet a data partition's LSO stays below its HW" in str(err.value)


def test_an_open_transaction_is_no_hanging_one() -> None:
    source = scenarios.get("txn-open-stalls-lso").source
    text = re.sub(r"  - advance: 30000\n    note: [^\n]*\n", "", source)  # time never passes
    assert text != source
    text = text.replace(
        "config: {min.insync.replicas: 2}",
        "config: {min.insync.replicas: 2, transaction.partition.verification.enable: false}",
    )
    with pytest.raises(Feedback) as err:
        check_scenario_text(text, "hanging-transaction")
    message = str(err.value)
    assert "[ ] at the end a transactional producer has run, and no transaction is open" in message
    assert "transaction states: {'tx-slow': 'Ongoing'}" in message
