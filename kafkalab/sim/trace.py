"""The trace: one typed journal of everything that happened in a run.

Plots, widgets, graders, invariant checks and datasets read the trace; none reaches into actors.
Each :class:`Event` has a ``kind`` (see :data:`EVENT_KINDS`), the node it happened at and its
fields. ``Trace.to_jsonl()`` is the canonical byte-for-byte form: the same config, seed and fault
schedule always give the same bytes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["EVENT_KINDS", "Event", "Trace"]

EVENT_KINDS: dict[str, str] = {
    "step": "a scenario step or Python call began (fields: index, action, args)",
    "send": "a message left a node (dst, msg)",
    "deliver": "a message reached its node (src, msg)",
    "drop": "a message was lost (src, dst, msg, reason)",
    "hold": "a retried message waits for a cut link to heal (dst, msg)",
    "pause": "a node stalled (node)",
    "resume": "a paused node runs again (node)",
    "stopped": "a broker stopped cleanly after a controlled shutdown, or shut down because its "
    "start-up failed (reason)",
    "controller_elected": "a broker created /controller (broker, controller_epoch)",
    "controller_failover": "a new controller took over (controller, controller_epoch, live)",
    "controller_resigned": "a controller learned it was replaced (controller_epoch, "
    "current_epoch), or that its session expired (current_epoch None)",
    "controller_znode_deleted": "/controller went with its owner's session",
    "controlled_shutdown": "the controller moved leaderships off a stopping broker",
    "controlled_shutdown_failed": "a stopping broker's controlled shutdown attempt failed "
    "(attempt, cause, error, remaining, attempts_left): ZooKeeper mode tries again after "
    "controlled.shutdown.retry.backoff.ms, or stops anyway after the last attempt",
    "stale_controller_request": "a broker ignored a request from an older controller epoch",
    "stale_broker_epoch": "a broker ignored a request meant for its previous incarnation",
    "config_change": "an operator changed settings during the run (settings, broker or topic)",
    "reconfigured": "a broker applied changed settings",
    "delete_records": "a leader answered DeleteRecords (tp, offset, error, low_watermark)",
    "log_start_offset": "a replica moved its log start offset (tp, offset)",
    "zk_write_rejected": "ZooKeeper refused a write from an older controller epoch",
    "zk_session_closed": "a cleanly stopping broker closed its session",
    "metrics": "OfflinePartitionsCount and UnderReplicatedPartitions after a change",
    "crash": "a broker stopped (lose_unflushed, or halted with a reason)",
    "restart": "a broker started again from what its disk holds (leo, hw)",
    "flush": "a broker fsynced its log (a flush writes no HW checkpoint)",
    "hw_checkpoint": "a broker's periodic task wrote every HW to replication-offset-checkpoint",
    "link": "a network link was cut or healed (a, b, up)",
    "throttle": "a network link was slowed, or given back its full speed (a, b, mb_per_s: None)",
    "append": "a leader appended records (first, last, leader_epoch)",
    "replicate": "a follower appended fetched records (first, last)",
    "truncate": "a replica removed records (to, old_leo, old_hw, removed, reason)",
    "truncate_no_effect": "a replica truncated at or past its LEO, removing nothing (to, leo, "
    "reason): Kafka logs it all the same",
    "hw": "a replica's high watermark changed (old, new)",
    "alter_isr": "a leader asked the controller to change the ISR (isr, reason)",
    "isr_applied": "a leader applied an ISR change the controller committed (isr)",
    "isr_change_notification": "0.9 to 2.6: a broker told the controller, through "
    "/isr_change_notification, of the ISR changes it wrote to ZooKeeper (tps)",
    "metadata_isr": "0.9 to 2.6: the controller published a leader-written ISR to the brokers' "
    "metadata caches, which clients read (tp, isr, leader_epoch, notified_by)",
    "became_leader": "a broker took leadership in an epoch (leader_epoch, isr, leo, hw)",
    "became_follower": "a broker follows a leader in an epoch (leader, leader_epoch)",
    "stale_leader_and_isr": "a broker ignored a LeaderAndIsr with an older leader epoch",
    "fetch_error": "a follower's request came back with an error (error)",
    "fetch_fenced": "since 2.1: a follower fenced by its leader stops fetching until its next "
    "LeaderAndIsr (leader_epoch)",
    "partition_state": "the controller committed leader/ISR (leader, leader_epoch, isr, reason)",
    "elect_leaders_result": "the controller answered an operator's ElectLeaders (election_type, "
    "results: each partition's error, NONE when elected)",
    "broker_failure": "the controller handled failed brokers (brokers)",
    "broker_startup": "the controller handled started brokers (brokers)",
    "zk_session": "ZooKeeper created a broker session (broker, session)",
    "zk_session_expired": "ZooKeeper expired a broker session (broker, session)",
    "zk_reregister": "a broker learned its session expired and registers again",
    "zk_registration_refused": "a restarted broker could not create /brokers/ids/N: its "
    "previous run's session (old_session) still lives; next: retry after retry_ms (0.8) or "
    "shutdown, start-up aborted (since 0.9)",
    "produce": "a producer sent records (values, acks)",
    "produce_result": "a producer learned the outcome of records (values, error, base_offset)",
    "invariant": "a named invariant was violated (name, message)",
    "duplicate": "a leader recognised an idempotent batch it already has (producer_id, first)",
    "produce_rejected": "a leader refused an idempotent batch (error, producer_id, sequence)",
    "produce_retry": "a producer client will send a batch again (error, attempt)",
    "client_disconnect": (
        "a producer client closed its connection to a broker (request timeout, a reset), or gave "
        "up setting one up (node)"
    ),
    "marker_rejected": "a leader refused a transaction marker (error: a stale producer or "
    "coordinator epoch)",
    "alter_isr_failed": "the controller refused a leader's ISR change (error)",
    "producer_epoch_bump": (
        "an idempotent producer bumped its epoch after a sequence gap (KIP-360)"
    ),
    "producer_id": "a producer client got its producer id (producer_id, producer_epoch)",
    "broker_fenced": "the KRaft controller fenced a broker that stopped heartbeating",
    "raft_state": "a KRaft controller node changed Raft state (state, epoch, leader)",
    "raft_vote": "a controller node answered a vote request (candidate, epoch, granted)",
    "raft_backoff": "a candidate's election timed out or a majority refused it: it waits "
    "backoff_ms before it campaigns again (epoch)",
    "raft_commit": "a controller node's metadata HW moved (hw)",
    "raft_truncate": "a controller node cut its metadata log where it diverged (offset)",
    "txn_coordinator": "a broker became transaction coordinator for a __transaction_state "
    "partition and loaded it (tp, loaded)",
    "txn_state": "a transaction moved between states at its coordinator (transactional_id, "
    "source, trigger, state, producer_id, producer_epoch, partitions)",
    "txn_verify": "a coordinator answered a partition leader's check of a first transactional "
    "write, or (transaction version 2) its adding of the partition to the transaction "
    "(KIP-890: transactional_id, tps, error)",
    "txn_client": "a transactional producer's call finished (producer, op, error, epoch)",
    "marker": "a partition leader wrote a COMMIT or ABORT marker (tp, control, producer_id, "
    "offset, first_offset of the transaction)",
    "offset_commit": "a group coordinator committed offsets (group, offsets)",
    "consumer_position": "a consumer learned where to start (its committed offsets)",
    "consumer_records": "a poll handed records to the application (consumer, tp, isolation, "
    "records as [offset, value, producer id], position, lso, hw)",
    "consumer_processed": "the application processed records (consumer, records)",
    "consumer_commit_sent": "a consumer sent its position to the group coordinator",
    "consumer_commit": "a consumer's offset commit was answered (group, error)",
    "consumer_error": "a consumer's fetch failed, or its offset fetch found the offsets "
    "pending (UNSTABLE_OFFSET_COMMIT, KIP-447) (tp, error)",
}


@dataclass(slots=True, init=False)
class Event:
    """One entry of the trace (treat it as read-only: it is not frozen, and its ``__init__`` is
    written out, because a run builds one per state change and the compiled core builds this
    class several times faster than a frozen dataclass)."""

    seq: int
    time_ms: int
    kind: str
    node: str
    data: dict[str, Any]

    def __init__(self, seq: int, time_ms: int, kind: str, node: str, data: dict[str, Any]) -> None:
        self.seq = seq
        self.time_ms = time_ms
        self.kind = kind
        self.node = node
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "seq": self.seq,
            "time_ms": self.time_ms,
            "kind": self.kind,
            "node": self.node,
        }
        for k, v in self.data.items():
            out[k] = v if type(v) in _SCALARS else _plain(v)
        return out


_SCALARS = frozenset((str, int, float, bool, type(None)))
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _plain(value: Any) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    names = _FIELD_NAMES.get(kind)
    if names is None:
        if not dataclasses.is_dataclass(value):
            return value
        names = _FIELD_NAMES[kind] = tuple(f.name for f in dataclasses.fields(value))
    return {"type": kind.__name__, **{n: _plain(getattr(value, n)) for n in names}}


_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode


class Trace:
    """The events of one run, in the order they happened."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def __getitem__(self, index: int) -> Event:
        return self.events[index]

    def of_kind(self, *kinds: str) -> list[Event]:
        """The events of the given kinds, in order."""
        return [e for e in self.events if e.kind in kinds]

    def to_jsonl(self) -> str:
        """One JSON object per line: the canonical, byte-for-byte reproducible form."""
        return "".join([_ENCODE(e.to_dict()) + "\n" for e in self.events])

    def digest(self) -> str:
        """SHA-256 of :meth:`to_jsonl`, to compare runs."""
        return hashlib.sha256(self.to_jsonl().encode()).hexdigest()
