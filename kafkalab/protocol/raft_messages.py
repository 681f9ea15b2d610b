"""The records, the durable state and the messages of KRaft's controller quorum
(:mod:`kafkalab.protocol.raft`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "BeginQuorumEpoch",
    "FetchMetadata",
    "FetchMetadataResponse",
    "LeaderChange",
    "MetadataRecord",
    "QuorumStore",
    "RAFT_TYPES",
    "VoteRequest",
    "VoteResponse",
]


# ---- records and durable state ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LeaderChange:
    """The control record a new leader writes first in its epoch (LeaderChangeMessage)."""

    leader: str
    voters: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MetadataRecord:
    """One record of the metadata log: its offset, the epoch of the leader that wrote it, and
    its payload (a metadata change, or a :class:`LeaderChange` control record)."""

    offset: int
    epoch: int
    payload: Any

    @property
    def is_control(self) -> bool:
        """True for the leader-change marker, which a state machine skips."""
        return isinstance(self.payload, LeaderChange)


@dataclass(frozen=True, slots=True)
class QuorumStore:
    """What a controller finds on disk after a restart: the quorum-state file (epoch, vote and
    leader; Kafka's ``ElectionState`` in ``FileQuorumStateStore``) and the metadata log, which a
    controller flushes on every append. The HW is not stored: it is learned again."""

    epoch: int = 0
    voted_for: str | None = None
    leader: str | None = None
    records: tuple[MetadataRecord, ...] = ()


# ---- messages ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VoteRequest:
    """A candidate asks for a vote in ``epoch``, showing the end of its log (last record's
    epoch, log end offset) so voters can refuse a candidate that is behind them."""

    epoch: int
    candidate: str
    last_epoch: int
    last_offset: int


@dataclass(frozen=True, slots=True)
class VoteResponse:
    """The voter's answer, with the voter's epoch and the leader it knows in that epoch, if any
    (a higher epoch makes the candidate step down; a leader of its own epoch makes it follow)."""

    epoch: int
    granted: bool
    voter: str
    leader: str | None = None


@dataclass(frozen=True, slots=True)
class BeginQuorumEpoch:
    """A new leader announces itself to the other voters."""

    epoch: int
    leader: str


@dataclass(frozen=True, slots=True)
class FetchMetadata:
    """A follower asks the leader for the records from ``fetch_offset`` (its log end offset);
    ``last_fetched_epoch`` is the epoch of its last record, which the leader checks."""

    epoch: int
    replica: str
    fetch_offset: int
    last_fetched_epoch: int


@dataclass(frozen=True, slots=True)
class FetchMetadataResponse:
    """The answer: the responder's epoch and the leader it knows (None if unknown or if it is
    not leading), records after the fetch offset, the HW, or ``diverging`` = (epoch, end offset)
    telling the follower where to truncate."""

    epoch: int
    leader: str | None
    records: tuple[MetadataRecord, ...]
    hw: int
    diverging: tuple[int, int] | None


# Everything a controller node hands to its Raft client rather than handling itself.
RAFT_TYPES = frozenset(
    {
        LeaderChange,
        MetadataRecord,
        QuorumStore,
        VoteRequest,
        VoteResponse,
        BeginQuorumEpoch,
        FetchMetadata,
        FetchMetadataResponse,
    }
)
