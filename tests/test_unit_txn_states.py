"""The transaction state table agrees with Kafka's validPreviousStates."""

from kafkalab.protocol.txn_states import TXN_STATES, TXN_TRANSITIONS, allowed, transitions_from

# Kafka's TransactionState.validPreviousStates, state by state.
KAFKA_VALID_PREVIOUS = {
    "Empty": {"Empty", "CompleteCommit", "CompleteAbort"},
    "Ongoing": {"Ongoing", "Empty", "CompleteCommit", "CompleteAbort"},
    "PrepareCommit": {"Ongoing"},
    "PrepareAbort": {"Ongoing", "PrepareEpochFence"},
    "CompleteCommit": {"PrepareCommit"},
    "CompleteAbort": {"PrepareAbort"},
    "Dead": {"Empty", "CompleteAbort", "CompleteCommit"},
    "PrepareEpochFence": {"Ongoing"},
}


def test_table_matches_kafka_valid_previous_states():
    for target, sources in KAFKA_VALID_PREVIOUS.items():
        table_sources = {t.source for t in TXN_TRANSITIONS if t.target == target and not t.since}
        assert table_sources == sources, target
    assert set(TXN_STATES) == set(KAFKA_VALID_PREVIOUS)


def test_transaction_version_2_lets_an_idle_transaction_abort():
    later = {(t.source, t.target) for t in TXN_TRANSITIONS if t.since == "4.0"}
    assert later == {(s, "PrepareAbort") for s in ("Empty", "CompleteCommit", "CompleteAbort")}


def test_allowed_and_transitions_from():
    assert allowed("Ongoing", "PrepareCommit")
    assert not allowed("PrepareCommit", "PrepareAbort")
    assert not allowed("Empty", "PrepareCommit")
    assert [t.target for t in transitions_from("PrepareCommit")] == ["CompleteCommit"]
