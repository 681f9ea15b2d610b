"""KIP-447 (2.5): a consumer asks for stable committed offsets, so offsets an open transaction
has sent (sendOffsetsToTransaction, TxnOffsetCommit) are not handed to a new member of the
group before the transaction ends.

Kafka: ConsumerCoordinator.sendOffsetFetchRequest sets require_stable (OffsetFetch v7) and
fetchCommittedOffsets retries UnstableOffsetCommitException after retry.backoff.ms;
GroupMetadataManager.getOffsets answers UNSTABLE_OFFSET_COMMIT while
GroupMetadata.hasPendingOffsetCommitsForTopicPartition holds (KAFKA-9346, 6da70f9b95d, 2.5.0).
Before 2.5 getOffsets answered with the last stable committed offset (2.4.0).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kafkalab import Cluster
from kafkalab.protocol.log import Record
from kafkalab.protocol.offsets import pending_offset_commits

CONSUMER = {"auto.offset.reset": "earliest", "enable.auto.commit": False}


def _open_transaction_with_offsets(preset: str) -> Cluster:
    return open_transaction_with_offsets({"preset": preset})


def open_transaction_with_offsets(settings: Mapping[str, Any]) -> Cluster:
    """Group app has committed offset 2 for demo-0; transactional producer p then sends offset 3
    for it in a transaction it does not end yet, and a new member of app starts."""
    c = Cluster(
        brokers=3,
        partitions=2,
        groups=["app"],
        transactional_ids=["tx"],
        replication="auto",
        config={**settings, "min.insync.replicas": 2},
    )
    c.produce(values=["o1", "o2"], partition=0)
    c.consumer("first", group="app", partitions=[0], **CONSUMER)
    c.poll("first")
    c.commit_offsets("first")
    c.produce("o3", partition=0)
    c.producer("p", **{"transactional.id": "tx", "transaction.timeout.ms": 120_000})
    c.begin("p")
    c.send_offsets("p", group="app", offsets={0: 3})
    c.consumer("second", group="app", partitions=[0], **CONSUMER)
    return c


def _start(c: Cluster, consumer: str) -> dict[str, int] | None:
    """Where ``consumer`` learned to start (its committed offsets), or None while it waits."""
    events = [e for e in c.trace.of_kind("consumer_position") if e.data["consumer"] == consumer]
    return events[-1].data["positions"] if events else None


def test_before_2_5_a_new_member_starts_at_the_last_stable_offset() -> None:
    """2.4: OffsetFetch has no require_stable; getOffsets answers from the offset cache, which
    holds only completed commits, so the new member starts at 2 while the transaction is
    open."""
    c = _open_transaction_with_offsets("2.4")
    assert _start(c, "second") == {"demo-0": 2}
    assert c.report().consumer_errors == {}


def test_since_2_5_a_new_member_waits_while_a_transaction_holds_offsets() -> None:
    """2.5: the coordinator answers UNSTABLE_OFFSET_COMMIT and the consumer keeps asking every
    retry.backoff.ms; it starts nowhere and reads nothing while the transaction is open."""
    c = _open_transaction_with_offsets("2.5")
    assert _start(c, "second") is None
    assert c.report().consumer_errors == {"second": ["demo-0: UNSTABLE_OFFSET_COMMIT"]}
    c.poll("second")
    assert c.report().consumed.get("second", []) == []


@pytest.mark.parametrize(
    ("preset", "end", "offset", "read"),
    [
        ("2.4", "commit", 2, ["o3"]),  # it had started at 2 before the commit
        ("2.4", "abort", 2, ["o3"]),
        ("2.5", "commit", 3, []),  # it waited, then started at the committed 3
        ("2.5", "abort", 2, ["o3"]),  # the aborted offset is dropped: the old one stands
    ],
)
def test_once_the_transaction_ends_the_new_member_starts(
    preset: str, end: str, offset: int, read: list[str]
) -> None:
    """After COMMIT the transaction's offset is the committed one; after ABORT the offset
    before it (GroupMetadata.completePendingTxnOffsetCommit, 2.5.0)."""
    c = _open_transaction_with_offsets(preset)
    getattr(c, end)("p")
    c.advance(1_000)
    assert _start(c, "second") == {"demo-0": offset}
    c.poll("second")
    assert c.report().consumed.get("second", []) == read


def test_pending_offsets_are_open_transactions_and_unreplicated_commits() -> None:
    """GroupMetadata.hasPendingOffsetCommitsForTopicPartition (2.5.0): a transaction's offsets
    until its marker is written (pendingTransactionalOffsetCommits), and a plain commit until
    it is replicated (pendingOffsetCommits)."""
    txn = Record(0, "g:t-0=5", 0, producer_id=7, transactional=True)
    other = Record(1, "h:t-1=9", 0)
    plain = Record(2, "g:t-2=4", 0)
    marker = Record(3, "", 0, producer_id=7, control="COMMIT")
    assert pending_offset_commits([txn, other, plain], hw=3, group="g") == {"t-0"}
    assert pending_offset_commits([txn, other, plain], hw=2, group="g") == {"t-0", "t-2"}
    assert pending_offset_commits([txn, other, plain, marker], hw=3, group="g") == {"t-0"}
    assert pending_offset_commits([txn, other, plain, marker], hw=4, group="g") == set()
