"""The messages actors send one another. Requests and responses are separate messages, so a
response can be delayed or lost on its own.

Messages are read-only by convention. The four that carry the steady produce/fetch traffic are
plain slots dataclasses rather than frozen ones, which cost three times as much to build."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkalab.protocol.kraft_messages import (
    BrokerHeartbeat,
    BrokerHeartbeatResponse,
    BrokerRegistration,
    BrokerRegistrationResponse,
    NotController,
)
from kafkalab.protocol.log import RECORD_BYTES, Record
from kafkalab.protocol.txn_messages import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from kafkalab.protocol.zk_messages import (
    BrokerChange,
    IsrChangeNotification,
    ZkBrokers,
    ZkClose,
    ZkControllerChange,
    ZkElect,
    ZkElected,
    ZkGetBrokers,
    ZkHeartbeat,
    ZkPartitionState,
    ZkRegister,
    ZkRegistered,
    ZkRegistrationRefused,
    ZkSessionExpired,
    ZkWrite,
    ZkWriteResult,
)

__all__ = [
    "AddOffsetsToTxnRequest",
    "AddOffsetsToTxnResponse",
    "AddPartitionsToTxnRequest",
    "AddPartitionsToTxnResponse",
    "AlterIsr",
    "AlterIsrResponse",
    "BrokerChange",
    "BrokerHeartbeat",
    "BrokerHeartbeatResponse",
    "BrokerRegistration",
    "BrokerRegistrationResponse",
    "ConsumerFetchRequest",
    "ConsumerFetchResponse",
    "ControlledShutdownRequest",
    "ControlledShutdownResponse",
    "DeleteRecordsRequest",
    "DeleteRecordsResponse",
    "ElectLeaders",
    "EndTxnRequest",
    "EndTxnResponse",
    "FetchRequest",
    "FetchResponse",
    "InitProducerIdRequest",
    "InitProducerIdResponse",
    "IsrChangeNotification",
    "ListOffsetsRequest",
    "ListOffsetsResponse",
    "LeaderAndIsr",
    "MetadataRequest",
    "MetadataResponse",
    "NotController",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetFetchRequest",
    "OffsetFetchResponse",
    "OffsetsForLeaderEpochRequest",
    "OffsetsForLeaderEpochResponse",
    "ProduceRequest",
    "ProduceResponse",
    "TxnOffsetCommitRequest",
    "TxnOffsetCommitResponse",
    "ReconfigureRequest",
    "UpdateMetadata",
    "WriteTxnMarkersRequest",
    "WriteTxnMarkersResponse",
    "ZkBrokers",
    "ZkClose",
    "ZkControllerChange",
    "ZkElect",
    "ZkElected",
    "ZkGetBrokers",
    "ZkHeartbeat",
    "ZkPartitionState",
    "ZkRegister",
    "ZkRegistered",
    "ZkRegistrationRefused",
    "ZkSessionExpired",
    "ZkWrite",
    "ZkWriteResult",
]

# Kafka's error codes, by name.
NONE = "NONE"
NOT_LEADER_OR_FOLLOWER = "NOT_LEADER_OR_FOLLOWER"
NOT_ENOUGH_REPLICAS = "NOT_ENOUGH_REPLICAS"
NOT_ENOUGH_REPLICAS_AFTER_APPEND = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
REQUEST_TIMED_OUT = "REQUEST_TIMED_OUT"
OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"
FENCED_LEADER_EPOCH = "FENCED_LEADER_EPOCH"
UNKNOWN_LEADER_EPOCH = "UNKNOWN_LEADER_EPOCH"
LEADER_NOT_AVAILABLE = "LEADER_NOT_AVAILABLE"
INVALID_UPDATE_VERSION = "INVALID_UPDATE_VERSION"
NOT_CONTROLLER = "NOT_CONTROLLER"
STALE_BROKER_EPOCH = "STALE_BROKER_EPOCH"
BROKER_NOT_AVAILABLE = "BROKER_NOT_AVAILABLE"
INELIGIBLE_REPLICA = "INELIGIBLE_REPLICA"
DUPLICATE_BROKER_REGISTRATION = "DUPLICATE_BROKER_REGISTRATION"
OPERATION_NOT_ATTEMPTED = "OPERATION_NOT_ATTEMPTED"
NEW_LEADER_ELECTED = "NEW_LEADER_ELECTED"
UNKNOWN_TOPIC_OR_PARTITION = "UNKNOWN_TOPIC_OR_PARTITION"
INVALID_REQUEST = "INVALID_REQUEST"
UNKNOWN_SERVER_ERROR = "UNKNOWN_SERVER_ERROR"
OUT_OF_ORDER_SEQUENCE_NUMBER = "OUT_OF_ORDER_SEQUENCE_NUMBER"
UNKNOWN_PRODUCER_ID = "UNKNOWN_PRODUCER_ID"
INVALID_PRODUCER_EPOCH = "INVALID_PRODUCER_EPOCH"
STALE_CONTROLLER_EPOCH = "STALE_CONTROLLER_EPOCH"
NOT_COORDINATOR = "NOT_COORDINATOR"
COORDINATOR_LOAD_IN_PROGRESS = "COORDINATOR_LOAD_IN_PROGRESS"
COORDINATOR_NOT_AVAILABLE = "COORDINATOR_NOT_AVAILABLE"
CONCURRENT_TRANSACTIONS = "CONCURRENT_TRANSACTIONS"
PRODUCER_FENCED = "PRODUCER_FENCED"
TRANSACTION_COORDINATOR_FENCED = "TRANSACTION_COORDINATOR_FENCED"
INVALID_TXN_STATE = "INVALID_TXN_STATE"
NETWORK_EXCEPTION = "NETWORK_EXCEPTION"  # a client's broken connection; no broker sends it
INVALID_PRODUCER_ID_MAPPING = "INVALID_PRODUCER_ID_MAPPING"
UNSTABLE_OFFSET_COMMIT = "UNSTABLE_OFFSET_COMMIT"  # KIP-447 (2.5): offsets pending
# ElectLeaders' answers for a partition (KIP-460): its leader is already what the election type
# asks for; the preferred replica cannot lead; no replica can lead; the broker cannot do it.
ELECTION_NOT_NEEDED = "ELECTION_NOT_NEEDED"
PREFERRED_LEADER_NOT_AVAILABLE = "PREFERRED_LEADER_NOT_AVAILABLE"
ELIGIBLE_LEADERS_NOT_AVAILABLE = "ELIGIBLE_LEADERS_NOT_AVAILABLE"
UNSUPPORTED_VERSION = "UNSUPPORTED_VERSION"


# The four produce and fetch messages write __init__ out (init=False): compiled, far faster.


@dataclass(slots=True, init=False)
class ProduceRequest:
    tp: str
    correlation_id: int
    values: tuple[str, ...]
    acks: int
    timeout_ms: int
    producer_id: int = -1  # an idempotent producer's PID, epoch and first sequence
    producer_epoch: int = -1
    base_sequence: int = -1
    transactional_id: str = ""  # set for a transactional producer's batch

    def __init__(
        self,
        tp: str,
        correlation_id: int,
        values: tuple[str, ...],
        acks: int,
        timeout_ms: int,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        transactional_id: str = "",
    ) -> None:
        self.tp = tp
        self.correlation_id = correlation_id
        self.values = values
        self.acks = acks
        self.timeout_ms = timeout_ms
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.transactional_id = transactional_id

    @property
    def wire_bytes(self) -> int:
        return len(self.values) * RECORD_BYTES


@dataclass(slots=True, init=False)
class ProduceResponse:
    tp: str
    correlation_id: int
    error: str
    base_offset: int = -1

    def __init__(self, tp: str, correlation_id: int, error: str, base_offset: int = -1) -> None:
        self.tp = tp
        self.correlation_id = correlation_id
        self.error = error
        self.base_offset = base_offset


@dataclass(slots=True, init=False)
class FetchRequest:
    tp: str
    replica_id: int
    fetch_offset: int
    current_leader_epoch: int | None  # None before KIP-320
    max_wait_ms: int
    correlation_id: int
    max_bytes: int = 1048576  # replica.fetch.max.bytes: the partition's share of the response
    broker_epoch: int = -1  # the follower's broker epoch (KRaft, KIP-903); -1: not checked
    response_max_bytes: int = 10485760  # replica.fetch.response.max.bytes: the whole response
    log_start_offset: int = -1  # the follower's (Fetch v5, KIP-107, 0.11): the low watermark
    last_fetched_epoch: int = -1  # the follower's latest epoch (Fetch v12, KAFKA-10554); -1: none

    def __init__(
        self,
        tp: str,
        replica_id: int,
        fetch_offset: int,
        current_leader_epoch: int | None,
        max_wait_ms: int,
        correlation_id: int,
        max_bytes: int = 1048576,
        broker_epoch: int = -1,
        response_max_bytes: int = 10485760,
        log_start_offset: int = -1,
        last_fetched_epoch: int = -1,
    ) -> None:
        self.tp = tp
        self.replica_id = replica_id
        self.fetch_offset = fetch_offset
        self.current_leader_epoch = current_leader_epoch
        self.max_wait_ms = max_wait_ms
        self.correlation_id = correlation_id
        self.max_bytes = max_bytes
        self.broker_epoch = broker_epoch
        self.response_max_bytes = response_max_bytes
        self.log_start_offset = log_start_offset
        self.last_fetched_epoch = last_fetched_epoch


@dataclass(slots=True, init=False)
class FetchResponse:
    tp: str
    correlation_id: int
    error: str
    records: tuple[Record, ...] = ()
    hw: int = -1
    leader_leo: int = -1
    log_start_offset: int = 0  # the leader's; the follower follows it (DeleteRecords, KIP-107)
    # (epoch, end offset) where the follower's last fetched epoch ends on the leader, when the
    # logs diverge (Fetch v12, KAFKA-10435); None: they do not
    diverging_epoch: tuple[int, int] | None = None

    def __init__(
        self,
        tp: str,
        correlation_id: int,
        error: str,
        records: tuple[Record, ...] = (),
        hw: int = -1,
        leader_leo: int = -1,
        log_start_offset: int = 0,
        diverging_epoch: tuple[int, int] | None = None,
    ) -> None:
        self.tp = tp
        self.correlation_id = correlation_id
        self.error = error
        self.records = records
        self.hw = hw
        self.leader_leo = leader_leo
        self.log_start_offset = log_start_offset
        self.diverging_epoch = diverging_epoch

    @property
    def wire_bytes(self) -> int:
        """What the response weighs on a link whose bandwidth is limited."""
        return len(self.records) * RECORD_BYTES


@dataclass(frozen=True, slots=True)
class OffsetsForLeaderEpochRequest:
    tp: str
    replica_id: int
    leader_epoch: int
    current_leader_epoch: int | None
    correlation_id: int


@dataclass(frozen=True, slots=True)
class OffsetsForLeaderEpochResponse:
    tp: str
    correlation_id: int
    error: str
    leader_epoch: int  # UNDEFINED_EPOCH before KIP-279
    end_offset: int


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    tp: str
    controller_epoch: int
    leader: int | None
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    replicas: tuple[int, ...]
    broker_epoch: int = -1  # the target broker's epoch as the controller knows it (KIP-380)
    metadata_offset: int = -1  # KRaft: how far the metadata log is committed


@dataclass(frozen=True, slots=True)
class UpdateMetadata:
    controller_epoch: int
    live_brokers: tuple[int, ...]
    controller: Any = None
    broker_epoch: int = -1
    # KRaft's metadata image: brokers in controlled shutdown, and each live broker's epoch.
    shutting_down: tuple[int, ...] = ()
    live_broker_epochs: tuple[tuple[int, int], ...] = ()
    metadata_offset: int = -1  # KRaft: how far the metadata log is committed
    # ZooKeeper mode: the partition states the controller publishes, (tp, leader, leader
    # epoch, isr) each; the only thing that changes a broker's metadata cache, which clients read
    # (KafkaApis.handleUpdateMetadataRequest -> ReplicaManager.maybeUpdateMetadataCache).
    partitions: tuple[tuple[str, Any, int, tuple[int, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class AlterIsr:
    """A leader asks the controller to commit a new ISR (AlterPartition since 2.7; before that a
    conditional write of the partition's znode: either way the change is checked against the
    leader epoch and partition epoch it was based on)."""

    tp: str
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class AlterIsrResponse:
    tp: str
    error: str
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ControlledShutdownRequest:
    broker: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class ControlledShutdownResponse:
    error: str
    remaining: tuple[str, ...]  # partitions still led by the broker


# ElectLeaders' election types (KIP-460, 2.4; kafka-leader-election.sh --election-type).
PREFERRED = "preferred"  # leadership back to the first assigned replica
UNCLEAN = "unclean"  # a leaderless partition gets a leader, from outside the ISR if need be
ELECTION_TYPES = (PREFERRED, UNCLEAN)


@dataclass(frozen=True, slots=True)
class ElectLeaders:
    """An operator asks the controller for leader elections (ElectLeaders; before KIP-460 only
    preferred ones, as ElectPreferredLeaders or the ZooKeeper path)."""

    tp: str | None = None  # None: every partition
    election_type: str = PREFERRED


@dataclass(frozen=True, slots=True)
class ReconfigureRequest:
    """An operator changed a setting (IncrementalAlterConfigs, KIP-339): the controller applies
    its new config and retries the election of leaderless partitions, as the ZooKeeper-era
    controller does when unclean.leader.election.enable is turned on (KAFKA-6835, 2.1). The
    KRaft controller (KAFKA-12670, 3.9) finds them with a periodic check (every 5 minutes);
    the simulator runs that check at once."""

    config: Any  # the controller's new Config


@dataclass(frozen=True, slots=True)
class InitProducerIdRequest:
    """An idempotent producer asks any broker for its producer id (KIP-98); a transactional
    one asks its transaction coordinator, which bumps the epoch of its transactional.id."""

    transactional_id: str = ""
    transaction_timeout_ms: int = 60000


@dataclass(frozen=True, slots=True)
class InitProducerIdResponse:
    producer_id: int
    producer_epoch: int
    error: str = NONE


# ---- consumers --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerFetchRequest:
    tp: str
    correlation_id: int
    fetch_offset: int
    isolation: str  # "read_uncommitted" or "read_committed"


@dataclass(frozen=True, slots=True)
class ConsumerFetchResponse:
    tp: str
    correlation_id: int
    error: str
    records: tuple[Record, ...] = ()
    hw: int = -1
    lso: int = -1
    aborted: tuple[Any, ...] = ()  # AbortedTxn entries overlapping the records

    @property
    def wire_bytes(self) -> int:
        return len(self.records) * RECORD_BYTES


@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    group: str
    offsets: tuple[tuple[str, int], ...]
    correlation_id: int = 0


@dataclass(frozen=True, slots=True)
class OffsetCommitResponse:
    group: str
    correlation_id: int
    error: str


@dataclass(frozen=True, slots=True)
class OffsetFetchRequest:
    """A consumer asks for its group's committed offsets. ``require_stable`` (KIP-447, 2.5):
    a partition whose offsets are pending is answered UNSTABLE_OFFSET_COMMIT, not with the
    last stable offset."""

    group: str
    tps: tuple[str, ...]
    require_stable: bool = False


@dataclass(frozen=True, slots=True)
class OffsetFetchResponse:
    """``unstable``: the partitions answered UNSTABLE_OFFSET_COMMIT."""

    group: str
    error: str
    offsets: tuple[tuple[str, int], ...] = ()
    unstable: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MetadataRequest:
    """A client asks a broker which replica leads each partition (from its metadata cache)."""


@dataclass(frozen=True, slots=True)
class MetadataResponse:
    leaders: tuple[tuple[str, Any], ...]


# ---- offsets and deletion (clients) -----------------------------------------------------------

EARLIEST = "earliest"
LATEST = "latest"
NO_OFFSET_FOR_PARTITION = "NO_OFFSET_FOR_PARTITION"  # the client's NoOffsetForPartitionException


@dataclass(frozen=True, slots=True)
class ListOffsetsRequest:
    """ListOffsets for the earliest (log start offset) or latest offset: what a consumer asks
    when auto.offset.reset applies (OffsetFetcher.resetPositionsIfNeeded)."""

    tp: str
    correlation_id: int
    timestamp: str  # EARLIEST or LATEST
    isolation: str  # the latest offset is the HW, or the LSO for read_committed


@dataclass(frozen=True, slots=True)
class ListOffsetsResponse:
    tp: str
    correlation_id: int
    error: str
    offset: int = -1


@dataclass(frozen=True, slots=True)
class DeleteRecordsRequest:
    """DeleteRecords (KIP-107, 0.11): the leader moves the partition's log start offset to
    ``offset`` (-1: the HW), and answers once every live replica has moved its own there, or
    after ``timeout_ms`` (the admin client's default.api.timeout.ms, 60000 in 3.7)."""

    tp: str
    offset: int
    timeout_ms: int = 60000


@dataclass(frozen=True, slots=True)
class DeleteRecordsResponse:
    """The answer: ``low_watermark`` is the smallest log start offset among the leader and its
    live followers (Partition.lowWatermarkIfLeader); -1 with an error that has none."""

    tp: str
    error: str
    low_watermark: int = -1
