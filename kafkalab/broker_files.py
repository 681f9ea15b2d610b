"""What a real Kafka broker writes down about a replica, rendered from the simulator's state, so
that a learner knows what to look for on a broker's disk and in its log when troubleshooting.

- ``leader-epoch-checkpoint`` (one per partition directory): the epoch cache, written by
  ``LeaderEpochCheckpointFile`` as a version line (0), the number of entries, then one
  ``epoch start_offset`` line per entry.
- ``replication-offset-checkpoint`` (one per log directory, ``ReplicaManager``'s
  ``HighWatermarkFilename``): each partition's checkpointed HW, written by
  ``OffsetCheckpointFile`` as a version line (0), the number of entries, then one
  ``topic partition offset`` line per partition.
- The INFO lines a truncation logs, in one release's wording. Kafka 3.7: the replica
  fetcher's ``Truncating partition ... due to leader epoch and offset ...`` (the KIP-101 path)
  or ``... due to local high watermark ...`` (the path without usable epochs), then the log's
  own ``Truncating to offset N``, or ``Truncating to N has no effect as the largest offset in
  the log is M`` when nothing is removed (``AbstractFetcherThread``, ``UnifiedLog.truncateTo``).
  Kafka 0.10: only the log's ``Truncating log demo-0 to offset N.``, logged before anything is
  checked, so also when nothing is removed, plus ``... has no effect ...`` past the LEO
  (``Log.truncateTo``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafkalab.sim.trace import Event

__all__ = ["leader_epoch_checkpoint", "replication_offset_checkpoint", "truncation_lines"]

WORDINGS = ("3.7", "0.10")  # the releases whose truncation lines truncation_lines renders
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


def truncation_lines(trace: Iterable[Event], release: str = "3.7") -> list[str]:
    """For each truncation in ``trace``, also one that removed nothing, the INFO lines a Kafka
    broker of ``release`` ("3.7" or "0.10") logs, prefixed by the simulated time (the leader's
    answer to OffsetsForLeaderEpoch, which the real line prints in full, is left as ``...``,
    and so is the log directory). A follower that fell off the start of the leader's log is
    reset rather than truncated: only the log's own line."""
    if release not in WORDINGS:
        raise ValueError(f"release={release!r} is not allowed: use {' or '.join(WORDINGS)}")
    leaders: dict[tuple[int, str], Any] = {}  # (broker, partition) -> the leader it follows
    lines = []
    for e in trace:
        d: dict[str, Any] = e.data
        if e.kind == "became_follower":
            leaders[(d["broker"], d["tp"])] = d["leader"]
        if e.kind not in ("truncate", "truncate_no_effect"):
            continue
        at = f"{e.time_ms / 1000:7.3f} s"
        leo = d.get("leo")  # only a truncation that removed nothing has it
        if release == "0.10":
            lines += [f"{at} {line}" for line in _log_lines_0_10(d["tp"], d["to"], leo)]
            continue
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
        what = f"Truncating to offset {d['to']}"
        if leo is not None:
            what = f"Truncating to {d['to']} has no effect as the largest offset in the log is "
            what += str(leo - 1)
        lines.append(f"{at} [UnifiedLog partition={d['tp']}, dir=...] {what}")
    return lines


def _log_lines_0_10(tp: str, to: int, leo: int | None) -> list[str]:
    """Log.truncateTo (0.10.2.2): its first line comes before any check; a target past the LEO
    (not one at it) adds that the truncation has no effect."""
    lines = [f"Truncating log {tp} to offset {to}."]
    if leo is not None and to > leo:
        lines.append(
            f"Truncating {tp} to {to} has no effect as the largest offset in the log is {leo - 1}."
        )
    return lines
