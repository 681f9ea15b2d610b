"""Kafka's two internal topics and where a group or a transactional id lives in them.

A consumer group's coordinator is the leader of its __consumer_offsets partition
(GroupMetadataManager.partitionFor); a transactional id's coordinator is the leader of its
__transaction_state partition (TransactionStateManager.partitionFor). Both hash the id with
Java's String.hashCode.
"""

from __future__ import annotations

from kafkalab.protocol.groups import group_partition, java_string_hash_code

__all__ = [
    "INTERNAL_MIN_ISR",
    "OFFSETS_TOPIC",
    "TRANSACTION_STATE_PARTITIONS",
    "TRANSACTION_STATE_TOPIC",
    "offsets_partition",
    "txn_partition",
]

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
TRANSACTION_STATE_PARTITIONS = 50  # transaction.state.log.num.partitions
INTERNAL_MIN_ISR = 2  # transaction.state.log.min.isr


def offsets_partition(group: str) -> str:
    """The __consumer_offsets partition of ``group`` (its coordinator is that partition's
    leader)."""
    return f"{OFFSETS_TOPIC}-{group_partition(group)}"


def txn_partition(transactional_id: str, partitions: int = TRANSACTION_STATE_PARTITIONS) -> str:
    """TransactionStateManager.partitionFor: the __transaction_state partition of an id."""
    h = java_string_hash_code(transactional_id)
    return f"{TRANSACTION_STATE_TOPIC}-{(0 if h == -(1 << 31) else abs(h)) % partitions}"
