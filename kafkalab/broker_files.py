"""What a real Kafka broker writes down about a replica, rendered from the simulator's state, so
that a learner knows what to look for on a broker's disk and in its log when troubleshooting.

- ``leader-epoch-checkpoint`` (one per partition directory): the epoch cache, written by
  ``LeaderEpochCheckpointFile`` as a version line (0), the number of entries, then one
  ``epoch start_offset`` line per entry.
- ``replication-offset-checkpoint`` (one per log directory, ``ReplicaManager``'s
  ``HighWatermarkFilename``): each partition's checkpointed HW, written by
  ``OffsetCheckpointFile`` as a version line (0), the number of entries, then one
  ``topic partition offset`` line per partition.
- The INFO lines a truncation logs (Kafka 3.7): the replica fetcher's ``Truncating partition ...
  due to leader epoch and offset ...`` (the KIP-101 path) or ``... due to local high watermark
  ...`` (the path without usable epochs), then the log's own ``Truncating to offset N``
  (``AbstractFetcherThread``, ``UnifiedLog.truncateTo``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafkalab.sim.trace import Event

__all__ = ["leader_epoch_checkpoint", "replication_offset_checkpoint", "truncation_lines"]

CHECKPOINT_VERSION = 0  # LeaderEpochCheckpointFile.CURRENT_VERSION, OffsetCheckpointFile's too


def leader_epoch_checkpoint(epoch_cache: Iterable[tuple[int, int]]) -> str:
    """The text of a replica's ``leader-epoch-checkpoint`` file for its epoch cache, a sequence
    of (leader epoch, start offset) pairs (``ReplicaView.epoch_cache``)."""
    entries = [f"{epoch} {start}" for epoch, start in epoch_cache]
    return "\n".join([str(CHECKPOINT_VERSION), str(len(entries)), *entries]) + "\n"


def replication_offset_checkpoint(hw_checkpoints: dict[str, int]) -> str:
    """The text of a broker's ``replication-offset-checkpoint`` file: each partition (named
    ``topic-partition``, as the simulator names them) with its checkpointed HW."""
    entries = []
    for tp, hw in sorted(hw_checkpoints.items()):
        topic, _, partition = tp.rpartition("-")
        entries.append(f"{topic} {partition} {hw}")
    return "\n".join([str(CHECKPOINT_VERSION), str(len(entries)), *entries]) + "\n"


_WHY = {
    "leader_epoch": "due to leader epoch and offset EpochEndOffset(...)",
    "diverging_epoch": "due to leader epoch and offset EpochEndOffset(...)",  # since 2.8
    "truncate_to_hw": "due to local high watermark {to}",
}


def truncation_lines(trace: Iterable[Event]) -> list[str]:
    """For each truncation in ``trace``, the INFO lines a Kafka 3.7 broker logs, prefixed by
    the simulated time (the leader's answer to OffsetsForLeaderEpoch, which the real line
    prints in full, is left as ``...``, and so is the log directory). A follower that fell off
    the start of the leader's log is reset rather than truncated: only the log's own line."""
    leaders: dict[tuple[int, str], Any] = {}  # (broker, partition) -> the leader it follows
    lines = []
    for e in trace:
        d: dict[str, Any] = e.data
        if e.kind == "became_follower":
            leaders[(d["broker"], d["tp"])] = d["leader"]
        if e.kind != "truncate":
            continue
        at = f"{e.time_ms / 1000:7.3f} s"
        why = _WHY.get(str(d.get("reason")))
        if why is not None:
            fetcher = (
                f"[ReplicaFetcher replicaId={d['broker']}, "
                f"leaderId={leaders.get((d['broker'], d['tp']))}, fetcherId=0]"
            )
            state = f"TruncationState(offset={d['to']}, completed=true)"
            lines.append(
                f"{at} {fetcher} Truncating partition {d['tp']} with {state} "
                f"{why.format(to=d['to'])}"
            )
        lines.append(
            f"{at} [UnifiedLog partition={d['tp']}, dir=...] Truncating to offset {d['to']}"
        )
    return lines
