"""How a transaction ends: the client sends EndTxn only for a transaction that holds something
(TransactionManager.nextRequest), and the coordinator answers each state as
TransactionCoordinator.endTransaction does (3.6.0)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kafkalab import Cluster
from kafkalab.protocol import messages as m
from kafkalab.protocol.transactions import txn_partition


def _cluster() -> Cluster:
    return Cluster(
        brokers=3, replication="auto", transactional_ids=["tx"], config={"min.insync.replicas": 2}
    )


def _sent(c: Cluster, kind: type) -> list[Any]:
    return [e.data["msg"] for e in c.trace.of_kind("send") if isinstance(e.data["msg"], kind)]


def _answers(c: Cluster, kind: type) -> list[str]:
    return [
        e.data["msg"].error for e in c.trace.of_kind("deliver") if isinstance(e.data["msg"], kind)
    ]


def _ask(c: Cluster, producer: str, msg: Any, txn_id: str) -> None:
    """Send ``msg`` to the coordinator as if ``producer`` had sent it; the answer is in the
    trace (the producer itself ignores it: it is waiting for nothing)."""
    coordinator = c.partition_states()[txn_partition(txn_id)].leader
    c.sim.send(producer, coordinator, msg)
    c.advance(100)


@pytest.mark.parametrize("op", ["commit", "abort"])
def test_an_end_with_nothing_added_sends_no_end_txn(op: str) -> None:
    """Before, an abort with nothing added sent EndTxn, which the coordinator answered NONE in
    Empty; Kafka's client completes the transaction without a request."""
    c = _cluster()
    c.producer("p", transactional_id="tx")
    c.begin("p")
    getattr(c, op)("p")
    assert _sent(c, m.EndTxnRequest) == []
    results = [(e.data["op"], e.data["error"]) for e in c.trace.of_kind("txn_client")]
    assert results == [("begin", m.NONE), (op, m.NONE)]
    assert c.txn_states() == {"tx": "Empty"}
    c.begin("p")  # ready for the next transaction
    c.produce("a", producer="p")
    c.commit("p")
    assert c.txn_states() == {"tx": "CompleteCommit"}
    assert len(_sent(c, m.EndTxnRequest)) == 1


def test_end_txn_in_empty_and_after_a_commit() -> None:
    """Empty: INVALID_TXN_STATE (it was NONE). CompleteCommit: a retried commit is NONE, an
    abort INVALID_TXN_STATE."""
    c = _cluster()
    c.producer("p", transactional_id="tx")
    p = c.sim.actors["p"]
    _ask(c, "p", m.EndTxnRequest("tx", p.producer_id, p.producer_epoch, False), "tx")
    assert _answers(c, m.EndTxnResponse) == [m.INVALID_TXN_STATE]
    c.begin("p")
    c.produce("a", producer="p")
    c.commit("p")
    for commit in (True, False):
        _ask(c, "p", m.EndTxnRequest("tx", p.producer_id, p.producer_epoch, commit), "tx")
    assert _answers(c, m.EndTxnResponse) == [
        m.INVALID_TXN_STATE,
        m.NONE,  # the producer's own commit
        m.NONE,
        m.INVALID_TXN_STATE,
    ]


def _prepare_commit() -> tuple[Cluster, Any]:
    """tx-ledger in PrepareCommit: its data partition's leader is paused, so the COMMIT marker
    waits (the txn-coordinator-failover scenario, before its crash)."""
    c = Cluster(
        brokers=4,
        leader=1,
        replicas=[1, 2, 3],
        replication="auto",
        transactional_ids=["tx-ledger"],
        config={"min.insync.replicas": 2},
    )
    c.producer("p1", transactional_id="tx-ledger")
    c.begin("p1")
    c.produce(values=["debit", "credit"], producer="p1")
    c.pause(1)
    c.commit("p1")
    assert c.txn_states() == {"tx-ledger": "PrepareCommit"}
    return c, c.sim.actors["p1"]


def test_end_txn_while_the_markers_are_written() -> None:
    """PrepareCommit: a retried commit is CONCURRENT_TRANSACTIONS, an abort INVALID_TXN_STATE
    (it was CONCURRENT_TRANSACTIONS, as if the abort could follow)."""
    c, p = _prepare_commit()
    for commit in (True, False):
        msg = m.EndTxnRequest("tx-ledger", p.producer_id, p.producer_epoch, commit)
        _ask(c, "p1", msg, "tx-ledger")
    assert _answers(c, m.EndTxnResponse) == [
        m.NONE,  # the producer's commit
        m.CONCURRENT_TRANSACTIONS,
        m.INVALID_TXN_STATE,
    ]


def test_verification_while_the_markers_are_written() -> None:
    """handleVerifyPartitionsInTransaction: CONCURRENT_TRANSACTIONS in PrepareCommit (it was
    INVALID_TXN_STATE)."""
    c, p = _prepare_commit()
    tp = c.partition_name(0)
    msg = m.AddPartitionsToTxnRequest(
        "tx-ledger", p.producer_id, p.producer_epoch, (tp,), verify_only=True
    )
    _ask(c, "p1", msg, "tx-ledger")
    verified = [e.data["error"] for e in c.trace.of_kind("txn_verify")]
    assert verified[-1] == m.CONCURRENT_TRANSACTIONS


@pytest.mark.parametrize("kind", ["add", "end"])
def test_a_newer_epoch_than_the_coordinators_is_fenced(kind: str) -> None:
    """handleAddPartitionsToTransaction, and EndTxn from a client since 2.6 (KAFKA-9600), need
    exactly the coordinator's epoch; a newer one was accepted."""
    c = _cluster()
    c.producer("p", transactional_id="tx")
    c.begin("p")
    c.produce("a", producer="p")
    p = c.sim.actors["p"]
    epoch = p.producer_epoch + 1
    if kind == "add":
        msg: Any = m.AddPartitionsToTxnRequest("tx", p.producer_id, epoch, ("other-0",))
        _ask(c, "p", msg, "tx")
        assert _answers(c, m.AddPartitionsToTxnResponse)[-1] == m.PRODUCER_FENCED
    else:
        _ask(c, "p", m.EndTxnRequest("tx", p.producer_id, epoch, True), "tx")
        assert _answers(c, m.EndTxnResponse) == [m.PRODUCER_FENCED]
    assert c.txn_states() == {"tx": "Ongoing"}


# ---- the client's answer to the coordinator's refusals ----------------------------------------


def _coordinator_forgets(c: Cluster, txn_id: str, **changes: Any) -> None:
    """The coordinator loses ``txn_id``'s state (``changes`` empty), or holds another one: what
    a lost __transaction_state record leaves behind."""
    coordinator = c.sim.actors[c.partition_states()[txn_partition(txn_id)].leader]
    part = coordinator.txn_coordinator.led[txn_partition(txn_id)]
    if changes:
        part.txns[txn_id] = replace(part.txns[txn_id], **changes)
    else:
        del part.txns[txn_id]


def _preset_cluster(preset: str) -> Cluster:
    return Cluster(
        brokers=3,
        replication="auto",
        transactional_ids=["tx"],
        config={"preset": preset, "min.insync.replicas": 2},
    )


def _calls(c: Cluster) -> list[tuple[str, str]]:
    return [(e.data["op"], e.data["error"]) for e in c.trace.of_kind("txn_client")]


@pytest.mark.parametrize("preset", ["0.11", "2.4", "2.5", "3.6"])
def test_an_unknown_producer_id_is_fatal_until_2_4_and_abortable_since_2_5(preset: str) -> None:
    """TransactionCoordinator.endTransaction answers INVALID_PRODUCER_ID_MAPPING when it has
    no state for the transactional id (since 0.11.0.0). EndTxnHandler made it fatal (0.11.0.0:
    an unhandled error) until KAFKA-8805 (5a073fca4cc, 2.5.0) made it abortable
    (abortableErrorIfPossible); the abort then skips EndTxn and sends InitProducerId
    (beginCompletingTransaction), which gets a new producer id."""
    c = _preset_cluster(preset)
    c.producer("p", transactional_id="tx")
    c.begin("p")
    c.produce("a", producer="p")
    first_id = c.sim.actors["p"].producer_id
    _coordinator_forgets(c, "tx")
    c.commit("p")
    assert _answers(c, m.EndTxnResponse) == [m.INVALID_PRODUCER_ID_MAPPING]
    c.abort("p")
    if preset in ("0.11", "2.4"):
        assert _calls(c)[1:] == [
            ("fatal", m.INVALID_PRODUCER_ID_MAPPING),
            ("abort", m.INVALID_PRODUCER_ID_MAPPING),
        ]
        return
    assert _calls(c)[1:] == [("end", m.INVALID_PRODUCER_ID_MAPPING), ("abort", m.NONE)]
    assert len(_sent(c, m.EndTxnRequest)) == 1  # the abort sent InitProducerId instead
    assert c.sim.actors["p"].producer_id != first_id
    c.begin("p")
    c.produce("b", producer="p")
    c.commit("p")
    assert _calls(c)[-1] == ("commit", m.NONE)


def test_invalid_txn_state_from_the_coordinator_is_fatal() -> None:
    """EndTxnHandler (and AddPartitionsToTxnHandler, AddOffsetsToTxnHandler) call fatalError
    on INVALID_TXN_STATE (0.11.0.0 to 3.9): the producer can only be closed. Here the
    coordinator holds the transaction as Empty, as if its Ongoing record were lost."""
    c = _cluster()
    c.producer("p", transactional_id="tx")
    c.begin("p")
    c.produce("a", producer="p")
    _coordinator_forgets(c, "tx", state="Empty")
    c.commit("p")
    assert _answers(c, m.EndTxnResponse) == [m.INVALID_TXN_STATE]
    assert _calls(c)[-1] == ("fatal", m.INVALID_TXN_STATE)
    c.abort("p")
    c.produce("b", producer="p")
    assert _calls(c)[-1] == ("abort", m.INVALID_TXN_STATE)
    assert c.report().errors == {"b": m.INVALID_TXN_STATE}
    assert len(_sent(c, m.EndTxnRequest)) == 1
