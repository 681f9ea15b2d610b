"""Where a consumer group's offsets live (GroupMetadataManager.partitionFor).

Committed offsets are records in __consumer_offsets (offsets.topic.num.partitions = 50); a
group's partition is ``abs(group.id.hashCode()) % 50``, with Java's String.hashCode. The
coordinator of the group is the leader of that partition.
"""

from __future__ import annotations

__all__ = ["OFFSETS_TOPIC_PARTITIONS", "group_partition", "java_string_hash_code"]

OFFSETS_TOPIC_PARTITIONS = 50


def java_string_hash_code(text: str) -> int:
    """Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1], in 32-bit signed arithmetic
    over UTF-16 code units."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def group_partition(group_id: str, partitions: int = OFFSETS_TOPIC_PARTITIONS) -> int:
    """The __consumer_offsets partition holding ``group_id``'s offsets. Kafka's Utils.abs maps
    Integer.MIN_VALUE to 0."""
    h = java_string_hash_code(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions
