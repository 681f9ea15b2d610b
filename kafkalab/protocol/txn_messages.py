"""The messages of transactions (KIP-98, and KIP-890's verification and transaction version 2):
between a transactional producer and its transaction coordinator, from a partition leader to the
coordinator, and from the coordinator to partition leaders (markers). They are part of
:mod:`kafkalab.protocol.messages`, which re-exports them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "AddOffsetsToTxnRequest",
    "AddOffsetsToTxnResponse",
    "AddPartitionsToTxnRequest",
    "AddPartitionsToTxnResponse",
    "EndTxnRequest",
    "EndTxnResponse",
    "TxnOffsetCommitRequest",
    "TxnOffsetCommitResponse",
    "WriteTxnMarkersRequest",
    "WriteTxnMarkersResponse",
]


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnRequest:
    """Add partitions to the open transaction. A partition leader sends it too (KIP-890), with
    the produce request's producer id and epoch and its own correlation id: to ask whether they
    are already in it (``verify_only``, part 1), or to add its partition (transaction version
    2, part 2)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    tps: tuple[str, ...]
    verify_only: bool = False
    correlation_id: int = 0  # set by a partition leader only (a client has one call at a time)

    @property
    def from_leader(self) -> bool:
        return self.verify_only or self.correlation_id > 0


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnResponse:
    transactional_id: str
    correlation_id: int
    error: str
    tps: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AddOffsetsToTxnRequest:
    """sendOffsetsToTransaction, step one: add the group's __consumer_offsets partition."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    group: str


@dataclass(frozen=True, slots=True)
class AddOffsetsToTxnResponse:
    transactional_id: str
    error: str


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitRequest:
    """sendOffsetsToTransaction, step two: the offsets (KIP-98; no KIP-447 member or generation)."""

    group: str
    transactional_id: str
    producer_id: int
    producer_epoch: int
    offsets: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitResponse:
    group: str
    error: str


@dataclass(frozen=True, slots=True)
class EndTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool


@dataclass(frozen=True, slots=True)
class EndTxnResponse:
    transactional_id: str
    error: str
    producer_id: int = -1
    producer_epoch: int = -1  # the bumped epoch with transaction version 2 (KIP-890 part 2)


@dataclass(frozen=True, slots=True)
class WriteTxnMarkersRequest:
    """The coordinator asks a partition's leader to write a COMMIT or ABORT marker."""

    tp: str
    producer_id: int
    producer_epoch: int
    control: str
    coordinator_epoch: int
    transactional_id: str


@dataclass(frozen=True, slots=True)
class WriteTxnMarkersResponse:
    tp: str
    producer_id: int
    control: str
    error: str
    transactional_id: str
