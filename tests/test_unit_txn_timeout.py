"""The coordinator aborts a transaction open longer than transaction.timeout.ms at its next
sweep, every transaction.abort.timed.out.transaction.cleanup.interval.ms."""

from __future__ import annotations

import pytest

from kafkalab import Cluster, ConfigError, make_config


def _states_after(interval_ms: int | None, steps_ms: list[int]) -> list[str]:
    config: dict[str, object] = {"min.insync.replicas": 2}
    if interval_ms is not None:
        config["transaction.abort.timed.out.transaction.cleanup.interval.ms"] = interval_ms
    c = Cluster(brokers=3, replication="auto", transactional_ids=["tx"], config=config)
    c.producer("p", transactional_id="tx", transaction_timeout_ms=100)
    c.begin("p")
    c.produce("a", producer="p")
    states = []
    for ms in steps_ms:
        c.advance(ms)
        states.append(c.txn_states()["tx"])
    return states


def test_an_expired_transaction_is_aborted_at_the_next_sweep() -> None:
    assert _states_after(200, [100, 100]) == ["Ongoing", "CompleteAbort"]


def test_the_default_sweep_runs_every_ten_seconds() -> None:
    assert make_config({}).transaction_abort_timed_out_transaction_cleanup_interval_ms == 10000
    assert _states_after(None, [9000, 1000]) == ["Ongoing", "CompleteAbort"]


def test_a_bad_interval_names_the_setting() -> None:
    key = "transaction.abort.timed.out.transaction.cleanup.interval.ms"
    with pytest.raises(ConfigError, match=rf"{key}=0 is not allowed"):
        make_config({key: 0})


@pytest.mark.parametrize(("preset", "first_sweep_ms"), [("2.4", 60000), ("2.5", 10000)])
def test_the_sweep_ran_every_minute_before_2_5(preset: str, first_sweep_ms: int) -> None:
    # TransactionStateManager.DefaultAbortTimedOutTransactionsIntervalMs: 1 min from 0.11.0.0 to
    # 2.4, 10 s since 2.5.0 (KAFKA-9417).
    config = make_config({"preset": preset})
    assert config.transaction_abort_timed_out_transaction_cleanup_interval_ms == first_sweep_ms
    c = Cluster(
        brokers=3,
        replication="auto",
        transactional_ids=["tx"],
        config={
            "preset": preset,
            "min.insync.replicas": 2,
            "acks": "all",
            "enable.idempotence": True,
        },
    )
    c.producer("p", transactional_id="tx", transaction_timeout_ms=100)
    c.begin("p")
    c.produce("a", producer="p")
    c.advance(first_sweep_ms - 1000)
    assert c.txn_states()["tx"] == "Ongoing"
    c.advance(1000)
    assert c.txn_states()["tx"] == "CompleteAbort"
