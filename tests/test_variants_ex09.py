"""Exercise 9's versions (kafkalab.grading.variants.ex09): every interleaving answerable and the
worked solution's rule agreeing with the replay in each, and every hanging-transaction version
buildable, checked on its own partition and offset."""

from __future__ import annotations

from typing import Any

import nbformat
import pytest

from kafkalab.grading import Feedback
from kafkalab.grading.assignments import assign
from kafkalab.grading.variants import QUESTIONS, expected, params
from kafkalab.grading.variants import ex09 as _ex09  # noqa: F401  (registers the questions)
from kafkalab.grading.variants.ex09 import (
    check_hanging_on_partition,
    check_verification_prevents_it,
)
from tests.conftest import ROOT

ISOLATION = QUESTIONS[("09-transactions", "isolation_reads")]
HANGING = QUESTIONS[("09-transactions", "hanging_scenario")]
IDS = [f"student-{n:03d}" for n in range(300)]


# ---- isolation_reads ---------------------------------------------------------------------------


def _rule(p: dict[str, Any]) -> dict[str, Any]:
    """The worked solution's rule: write the log as the steps run, then read it."""
    log: list[str] = []
    first: dict[str, int] = {}
    offsets: dict[str, list[int]] = {}
    aborted: set[int] = set()
    for step in p["steps"]:
        op, who = step[0], step[1]
        if op == "write":
            if who is not None:
                first.setdefault(who, len(log))
                offsets.setdefault(who, []).append(len(log))
            log.append(step[2])
        elif op in ("commit", "abort"):
            if op == "abort":
                aborted.update(offsets.get(who, []))
            first.pop(who, None)
            offsets.pop(who, None)
            log.append(op.upper())
    data = [(o, v) for o, v in enumerate(log) if v not in ("COMMIT", "ABORT")]
    lso = min(first.values(), default=len(log))
    return {
        "committed_reads": [v for o, v in data if o < lso and o not in aborted],
        "uncommitted_reads": [v for _, v in data],
        "lso": lso,
        "log": log,
    }


@pytest.mark.parametrize("p", ISOLATION.grid, ids=str)
def test_isolation_rule_matches_the_replay(p) -> None:
    assert ISOLATION.answers(p) == _rule(dict(p)), p


def test_isolation_versions_differ_in_what_they_ask() -> None:
    answers = [ISOLATION.answers(p) for p in ISOLATION.grid]
    assert 30 <= len(ISOLATION.grid) <= 60
    assert len({tuple(a["committed_reads"]) for a in answers}) >= 10
    assert len({a["lso"] for a in answers}) >= 4
    assert len({tuple(a["uncommitted_reads"]) for a in answers}) >= 4
    # some versions stall at an open transaction, some read everything written
    assert any(a["lso"] < len(a["log"]) for a in answers)
    assert any(a["committed_reads"] == a["uncommitted_reads"] for a in answers)
    # none is the lesson's sequential abort-then-commit or its one open transaction alone
    for p in ISOLATION.grid:
        assert {s[1] for s in p["steps"] if s[0] == "write"} == {"t1", "t2", None}


def test_the_learners_expected_reads_are_the_replay_of_their_version() -> None:
    for learner in ("ada", "grace"):
        p = params("09-transactions", "isolation_reads", learner)
        assert expected("09-transactions", "isolation_reads", learner) == ISOLATION.answers(p)
    drawn = {params("09-transactions", "isolation_reads", i)["steps"] for i in IDS}
    assert len(drawn) >= 0.8 * len(ISOLATION.grid)


# ---- hanging_scenario --------------------------------------------------------------------------


def _coordinator_elsewhere(txn_id: str, p: dict[str, Any]) -> bool:
    """The id's coordinator is not the leader of the learner's partition."""
    from kafkalab import Cluster
    from kafkalab.protocol.transactions import txn_partition

    c = Cluster(brokers=3, partitions=p["partitions"], transactional_ids=[txn_id])
    states = c.partition_states()
    return states[txn_partition(txn_id)].leader != states[f"demo-{p['partition']}"].leader


def solution_scenario(p: dict[str, Any]) -> str:
    """The worked solution: lso - 1 plain records in the partition, then the lesson's late
    write (its ABORT marker lands before it), from a transactional id whose coordinator is
    another broker than the partition's leader."""
    k = p["partition"]
    txn_id = next(f"tx-{n}" for n in range(100) if _coordinator_elsewhere(f"tx-{n}", p))
    plain = "".join(f"  - produce: {{value: x{i}, partition: {k}}}\n" for i in range(1, p["lso"]))
    return (
        "name: late-write\n"
        "description: A transactional write arrives after its transaction was aborted.\n"
        "brokers: 3\n"
        f"partitions: {p['partitions']}\n"
        "replication: auto\n"
        "config: {min.insync.replicas: 2, transaction.partition.verification.enable: false}\n"
        "steps:\n" + plain + f"  - producer: {{name: p1, transactional.id: {txn_id}, "
        "delivery.timeout.ms: 30000}\n"
        "  - begin: p1\n"
        f"  - produce: {{value: a, producer: p1, partition: {k}, request: delayed, "
        "delay_ms: 40000}\n"
        "  - abort: p1\n"
        "  - advance: 15000\n"
        f"  - produce: {{value: z, partition: {k}}}\n"
    )


@pytest.mark.parametrize("p", HANGING.grid, ids=str)
def test_every_hanging_version_is_buildable_and_the_solution_builds_it(p) -> None:
    text = solution_scenario(dict(p))
    c = check_hanging_on_partition(text, **p)
    assert c.lso()[f"demo-{p['partition']}"] == p["lso"]
    check_verification_prevents_it(text)


def test_a_scenario_for_another_version_fails_with_what_to_change() -> None:
    p = {"partitions": 3, "partition": 1, "lso": 3}
    other_partition = solution_scenario({**p, "partition": 2})
    with pytest.raises(Feedback, match="only demo-1 must be stalled"):
        check_hanging_on_partition(other_partition, **p)
    other_count = solution_scenario({**p, "partitions": 2})
    with pytest.raises(Feedback, match="yours must have 3"):
        check_hanging_on_partition(other_count, **p)
    other_offset = solution_scenario({**p, "lso": 2})
    check_hanging_on_partition(other_offset, partitions=3, partition=1)  # the public check
    with pytest.raises(Feedback, match="LSO is stuck at 2, not at 3"):
        check_hanging_on_partition(other_offset, **p)  # the hidden one


def test_the_lessons_scenario_meets_no_version() -> None:
    text = (
        ROOT / "kafkalab" / "scenarios" / "catalog" / "txn-hanging-transaction.yaml"
    ).read_text()
    for p in HANGING.grid:
        with pytest.raises(Feedback):
            check_hanging_on_partition(text, **p)


def test_a_coordinator_on_the_partitions_leader_is_explained() -> None:
    p = {"partitions": 2, "partition": 1, "lso": 3}
    text = solution_scenario(p)
    same = text.replace(f"transactional.id: {_txn_id(text)}", "transactional.id: tx-late")
    assert not _coordinator_elsewhere("tx-late", p)
    with pytest.raises(Feedback, match="also the coordinator of 'tx-late'"):
        check_hanging_on_partition(same, **p)


def _txn_id(text: str) -> str:
    return text.split("transactional.id: ")[1].split(",")[0]


def test_a_scenario_that_hangs_with_verification_on_too_is_refused() -> None:
    # an open transaction that is never ended hangs with or without KIP-890 (and its
    # coordinator still has it open, so the public check refuses it already)
    text = (
        "name: open\ndescription: x\nbrokers: 3\npartitions: 2\nreplication: auto\n"
        "config: {min.insync.replicas: 2, transaction.partition.verification.enable: false}\n"
        "steps:\n"
        "  - producer: {name: p1, transactional.id: tx-open}\n"
        "  - begin: p1\n"
        "  - produce: {value: a, producer: p1, partition: 1}\n"
        "  - produce: {value: z, partition: 1}\n"
    )
    with pytest.raises(Feedback, match="no transaction is open"):
        check_hanging_on_partition(text, partitions=2, partition=1)
    with pytest.raises(Feedback, match="with verification on"):
        check_verification_prevents_it(text)


# ---- the notebook ------------------------------------------------------------------------------


def test_the_student_notebook_hides_the_solution_learner_id_and_scenario(tmp_path) -> None:
    made = assign(ROOT / "exercises" / "source" / "09-transactions.ipynb", tmp_path)
    student = nbformat.read(made.student, as_version=4)
    setup = [c.source for c in student.cells if "learner_id =" in c.source]
    assert setup and "learner_id = ...\n" in setup[0]
    text = made.student.read_text()
    assert "ada.lovelace" not in text and "delay_ms: 40000" not in text
