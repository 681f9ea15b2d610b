"""One broker's replica of one partition (kafka.cluster.Partition's state, and the leader's view
of each follower), and the small pure helpers every part of the broker shares."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkalab.config import Config
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.internal_topics import INTERNAL_MIN_ISR, TRANSACTION_STATE_TOPIC
from kafkalab.protocol.log import RECORD_BYTES, UNDEFINED_EPOCH, UNDEFINED_OFFSET, Disk, Log
from kafkalab.protocol.producer_state import ProducerStateManager

__all__ = [
    "NEVER_MS",
    "UNKNOWN_LEO",
    "DelayedDeleteRecords",
    "DelayedFetch",
    "DelayedProduce",
    "Remote",
    "ReplicaState",
    "arm",
    "load_replica",
    "min_isr",
]

UNKNOWN_LEO = -1
NEVER_MS = -(2**62)  # "never caught up": Kafka uses 0 on a wall clock; simulated time starts at 0


@dataclass(slots=True)
class Remote:
    """The leader's view of one follower (kafka.cluster.Replica / ReplicaState)."""

    leo: int = UNKNOWN_LEO
    last_caught_up_ms: int = NEVER_MS
    last_fetch_leader_leo: int = UNKNOWN_LEO
    last_fetch_ms: int = NEVER_MS
    broker_epoch: int = -1  # carried by the follower's latest fetch (KRaft)
    last_sent_hw: int = -1  # the HW in the latest fetch response to this follower
    log_start_offset: int = -1  # carried by the follower's latest fetch (-1: none yet)


@dataclass(slots=True)
class DelayedProduce:
    src: int | str
    request: m.ProduceRequest | None  # None: the broker's own write (a coordinator, a marker)
    base_offset: int
    required_offset: int  # HW that acknowledges the batch: its last offset + 1
    deadline_ms: int
    reply: Callable[[Context, str], None] | None = None  # called instead of a response


@dataclass(slots=True)
class DelayedDeleteRecords:
    src: int | str
    tp: str
    offset: int  # the log start offset every live replica must reach
    low_watermark: int  # when the request arrived: the answer's after a timeout
    deadline_ms: int


@dataclass(slots=True)
class DelayedFetch:
    src: int | str
    request: m.FetchRequest
    deadline_ms: int


@dataclass(slots=True)
class ReplicaState:
    """One broker's replica of one partition, with its leader-side and follower-side state."""

    tp: str
    log: Log
    role: str | None = None  # "leader", "follower" or None (no LeaderAndIsr yet, or offline)
    leader: int | None = None
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    partition_epoch: int = -1
    replicas: tuple[int, ...] = ()
    remotes: dict[int, Remote] = field(default_factory=dict)
    delayed_produces: deque[DelayedProduce] = field(default_factory=deque)
    delayed_fetches: list[DelayedFetch] = field(default_factory=list)
    delayed_deletes: list[DelayedDeleteRecords] = field(default_factory=list)
    alter_isr_pending: bool = False
    alter_isr_inflight: tuple[int, ...] | None = None  # the ISR sent, until its answer comes
    alter_isr_target: Any = None  # where it went
    maximal_isr: tuple[int, ...] = ()  # the ISR plus a member whose join is not yet committed
    # The follower has not yet learned from its leader where their logs agree: it asks with
    # OffsetsForLeaderEpoch before fetching (0.11 to 2.7), or since 2.8 waits for a fetch
    # answer without a diverging epoch.
    truncating: bool = False
    # Partition.leaderEpochStartOffsetOpt when it is not where the epoch cache starts the leader
    # epoch: before 3.3 a KRaft leader moved it to its LEO on every change of the partition.
    epoch_start_override: int | None = None
    producers: ProducerStateManager = field(default_factory=ProducerStateManager)
    inflight: int | None = None  # correlation id of the follower's outstanding request
    fetch_deadline_ms: int = 0  # when the outstanding request times out (timed mode)
    fetch_sent_ms: int = 0  # when it was sent
    armed: dict[str, int] = field(default_factory=dict)  # timer name -> when it fires


def load_replica(tp: str, disk: Disk, *, hw_floor_at_log_start: bool = True) -> ReplicaState:
    """A replica as a starting broker loads it: its log, and the producer state rebuilt from
    that log."""
    log = Log(disk, hw_floor_at_log_start=hw_floor_at_log_start)
    return ReplicaState(tp, log, producers=ProducerStateManager.rebuild(log.records))


def min_isr(config: Config, r: ReplicaState) -> int:
    """min.insync.replicas for this partition: __transaction_state uses its own, 2
    (transaction.state.log.min.isr, TransactionStateManager.transactionTopicConfigs),
    capped by its replication factor; __consumer_offsets has no such override
    (GroupMetadataManager.offsetsTopicConfigs), so it uses the broker's. Since 3.7
    (KAFKA-15583, Partition.effectiveMinIsr) it never counts as more than the replication
    factor; before, a larger one refused every acks=all write."""
    if r.tp.startswith(TRANSACTION_STATE_TOPIC):
        return min(INTERNAL_MIN_ISR, len(r.replicas))
    if config.hw_freeze_under_min_isr:
        return min(config.min_insync_replicas, len(r.replicas))
    return config.min_insync_replicas


def arm(ctx: Context, r: ReplicaState, name: str, due_ms: int) -> None:
    """One timer per purpose instead of one per request: a timer already armed for an
    earlier time re-arms itself for what is still waiting when it fires."""
    armed = r.armed.get(name)
    if armed is not None and armed <= due_ms:
        return
    r.armed[name] = due_ms
    ctx.set_timer(due_ms - ctx.now, name, r.tp)


def set_hw(ctx: Context, broker_id: int, r: ReplicaState, hw: int) -> None:
    ctx.emit("hw", broker=broker_id, tp=r.tp, old=r.log.hw, new=hw)
    r.log.hw = hw


def read(r: ReplicaState, req: m.FetchRequest) -> tuple[Any, ...]:
    """UnifiedLog.read(maxLength, minOneMessage = true): the records from the fetch offset that
    fit in the request's byte budget, and always at least one, so a follower makes progress
    whatever the limits (every record weighs RECORD_BYTES). ReplicaManager.readFromLocalLog caps
    each partition's replica.fetch.max.bytes by what is left of the whole response's
    replica.fetch.response.max.bytes (KIP-74); a fetch here asks for one partition, so the
    smaller of the two applies."""
    count = max(1, min(req.max_bytes, req.response_max_bytes) // RECORD_BYTES)
    return tuple(r.log.records[req.fetch_offset : req.fetch_offset + count])


def diverging_epoch(
    r: ReplicaState,
    req: m.FetchRequest,
    end_offset_for: Callable[[tuple[tuple[int, int], ...], int, int], tuple[int, int]],
) -> tuple[str | None, tuple[int, int] | None]:
    """Partition.readRecords for a fetch naming the follower's last fetched epoch (KAFKA-10435,
    2.7.0; followers send it since 2.8): the leader looks that epoch up as it answers
    OffsetsForLeaderEpoch (``end_offset_for``). An epoch it cannot place is OFFSET_OUT_OF_RANGE
    ("Could not determine the end offset of the last fetched epoch"); if its own copy of the
    epoch is older or ends before the fetch offset, the logs diverge, and the answer is that
    (epoch, end offset) instead of records. Returns (error, diverging epoch)."""
    epoch, end_offset = end_offset_for(tuple(r.log.epochs), r.log.leo, req.last_fetched_epoch)
    if epoch == UNDEFINED_EPOCH or end_offset == UNDEFINED_OFFSET:
        return m.OFFSET_OUT_OF_RANGE, None
    if epoch < req.last_fetched_epoch or end_offset < req.fetch_offset:
        return None, (epoch, end_offset)
    return None, None


def fetch_response(
    r: ReplicaState,
    req: m.FetchRequest,
    records: tuple[Any, ...],
    hw: int,
    diverging: tuple[int, int] | None = None,
) -> m.FetchResponse:
    """A successful fetch response: the records, the HW, and the leader's log start offset,
    which the follower follows (ReplicaFetcherThread.processPartitionData); or, for a follower
    whose log diverges, no records and the ``diverging`` (epoch, end offset)."""
    log = r.log
    return m.FetchResponse(
        r.tp, req.correlation_id, m.NONE, records, hw, log.leo, log.log_start_offset, diverging
    )
