"""A late write of a finished transaction (the `txn-hanging-transaction` scenario of Lesson 9):
with KIP-890 the partition leader asks the transaction coordinator, and the refusal is the
coordinator's.

Kafka: ReplicaManager.appendRecords hands the first transactional write of a producer to
AddPartitionsToTxnManager, which sends AddPartitionsToTxn with the produce request's producer
id and epoch (verifyOnly with transaction version 1, 3.6.0, KAFKA-14561; adding the partition
with transaction version 2, 4.0); TransactionCoordinator answers an old epoch PRODUCER_FENCED,
and AddPartitionsToTxnManager hands the producer INVALID_PRODUCER_EPOCH (3.6.0).
"""

from __future__ import annotations

import pytest

from kafkalab import scenarios


@pytest.mark.parametrize("variant", ["kip890-verification", "transaction-version-2"])
def test_the_coordinator_refuses_the_late_write(variant: str) -> None:
    """The late `a` carries epoch 0; the abort's epoch bump (and, with transaction version 2,
    the EndTxn's) never reached demo-0, where no partition of that transaction was added. The
    leader cannot tell the epoch is old: the coordinator does, and the leader passes its
    answer on."""
    s = scenarios.get("txn-hanging-transaction")
    v = next(x for x in s.variants if x.name == variant)
    c = scenarios.run(s, variant=v).cluster
    late = [e for e in c.trace.events if e.kind in ("txn_verify", "produce_rejected")]
    assert [(e.kind, e.data["error"]) for e in late] == [
        ("txn_verify", "PRODUCER_FENCED"),
        ("produce_rejected", "INVALID_PRODUCER_EPOCH"),
    ]
    assert late[0].node == "3" and late[1].node == "1"  # the coordinator, then demo-0's leader
    assert c.logs()[1] == (["ABORT", "x"] if variant == "kip890-verification" else ["x"])
