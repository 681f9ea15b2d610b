"""The transaction state table agrees with Kafka's validPreviousStates."""

from kafkalab.protocol.txn_states import TXN_STATES, TXN_TRANSITIONS, allowed, transitions_from

# Kafka's TransactionState.validPreviousStates, state by state (0.11.0.2 to 3.9).
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
        table_sources = {
            t.source for t in TXN_TRANSITIONS if t.target == target and t.since in ("", "0.11.0.2")
        }
        assert table_sources == sources, target
    assert set(TXN_STATES) == set(KAFKA_VALID_PREVIOUS)


def test_prepare_epoch_fence_came_with_kafka_6119():
    """0.11.0.0 and 0.11.0.1 had no PrepareEpochFence state (KAFKA-6119, 0.11.0.2 and 1.0.0)."""
    later = {(t.source, t.target) for t in TXN_TRANSITIONS if t.since == "0.11.0.2"}
    assert later == {
        ("Ongoing", "PrepareEpochFence"),
        ("PrepareEpochFence", "PrepareAbort"),
    }


def test_transaction_version_2_lets_an_idle_transaction_abort():
    later = {(t.source, t.target) for t in TXN_TRANSITIONS if t.since == "4.0"}
    assert later == {(s, "PrepareAbort") for s in ("Empty", "CompleteCommit", "CompleteAbort")}


def test_allowed_and_transitions_from():
    assert allowed("Ongoing", "PrepareCommit")
    assert not allowed("PrepareCommit", "PrepareAbort")
    assert not allowed("Empty", "PrepareCommit")
    assert [t.target for t in transitions_from("PrepareCommit")] == ["CompleteCommit"]
